"""A new user's first hour (issue 32): layout files read whole, --out-dir created,
results on stdout, STL/GLB meshes, robust previews, messages for the caller, SIGTERM and a
full disk handled like the faults they are."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from fnin_cli import io
from fnin_cli.conventions import from_internal
from helpers_cli import PERSP_SEEDS, invoke, run_fnin, scene, write_folder

DILIGENT = Path(os.environ.get("FNIN_DILIGENT", "/work/shared/data/diligent"))


def _diligent():
    if not DILIGENT.is_dir():
        message = f"DiLiGenT data not found at {DILIGENT} (set FNIN_DILIGENT)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return DILIGENT


# ------------------------------------------------------------------ layout files

def _json_lines(stdout):
    return [json.loads(x) for x in stdout.splitlines() if x.strip()]


def test_layout_files_read_the_mask_and_K_beside_them(tmp_path):
    root = tmp_path / "scans"
    for i, seed in enumerate(PERSP_SEEDS[:2]):
        write_folder(root / f"s{i}", seed=seed)
    new = tmp_path / "new" / "dir"
    r = invoke(["integrate", str(root / "*" / "normal_map.png"), "--out-dir", new, "--method", "wls",
                "--depth", ".npy", "--json"])
    assert r.exit_code == 0, r.stderr
    assert f"created the output folder {new}" in r.stderr
    assert r.stderr.count("use the mask.png and K.txt beside them") == 1   # said once
    recs = _json_lines(r.stdout)
    assert [rec["camera"] for rec in recs] == ["perspective", "perspective"]
    assert [rec["mask_source"] for rec in recs] == [str(root / f"s{i}" / "mask.png") for i in range(2)]
    assert [rec["camera_source"] for rec in recs] == [str(root / f"s{i}" / "K.txt") for i in range(2)]
    folders = tmp_path / "folders"
    r = invoke(["integrate", root / "s0", root / "s1", "--out-dir", folders, "--method", "wls",
                "--depth", ".npy", "--json"])
    assert r.exit_code == 0, r.stderr
    assert "beside them" not in r.stderr      # the folder form needs no note
    for i in range(2):
        assert np.array_equal(np.load(new / f"s{i}_depth.npy"), np.load(folders / f"s{i}_depth.npy"),
                              equal_nan=True)
    # options still override: --ortho drops the K.txt, --mask replaces the mask
    r = invoke(["integrate", root / "s0" / "normal_map.png", "--ortho", "-o", tmp_path / "o.npy",
                "--method", "wls", "--json"])
    rec = json.loads(r.stdout)
    assert rec["camera"] == "orthographic" and rec["camera_source"] is None
    assert rec["mask_source"] == str(root / "s0" / "mask.png")


def test_a_glob_of_a_folder_fails_the_entries_that_hold_no_map_and_writes_the_others(tmp_path):
    """README "Batch use": 'DIR/*' takes every entry; a folder or file beside the maps that
    holds no normal map fails as its own input (exit 1), the maps are still written;
    'DIR/*/normal_map.*' takes only the maps."""
    root = tmp_path / "scans"
    for i, seed in enumerate(PERSP_SEEDS[:2]):
        write_folder(root / f"s{i}", seed=seed)
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("lighting: 12 LEDs")
    (root / "list.txt").write_text("s0 s1")
    out = tmp_path / "out"
    r = invoke(["integrate", str(root / "*"), "--out-dir", out, "--method", "wls", "--format", "npy"])
    assert r.exit_code == 1, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["s0.npy", "s1.npy"]
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2 and str(root / "list.txt") in errors[0] and str(root / "notes") in errors[1]
    r = invoke(["integrate", str(root / "*" / "normal_map.*"), "--out-dir", tmp_path / "only", "--method", "wls",
                "--format", "npy"])
    assert r.exit_code == 0 and sorted(p.name for p in (tmp_path / "only").iterdir()) == ["s0.npy", "s1.npy"]


def test_out_dir_refuses_to_nest_in_a_file(tmp_path):
    write_folder(tmp_path / "s0")
    (tmp_path / "file").write_text("x")
    r = invoke(["integrate", tmp_path / "s0", "--out-dir", tmp_path / "file" / "sub", "--method", "wls"])
    assert r.exit_code == 2 and "not a folder" in r.stderr
    # a usage error found after the folder was planned leaves no empty folder behind
    (tmp_path / "taken.png").write_text("x")
    r = invoke(["integrate", tmp_path / "s0", "--out-dir", tmp_path / "a" / "b", "--preview",
                tmp_path / "taken.png", "--method", "wls"])
    assert r.exit_code == 2 and "output exists" in r.stderr
    assert not (tmp_path / "a").exists()


def test_diligent_glob_of_files_matches_the_folders(tmp_path):
    data = _diligent()
    out_files, out_dirs = tmp_path / "new" / "files", tmp_path / "dirs"
    pattern = str(data / "*" / "normal_map.png")
    r = run_fnin(["integrate", pattern, "--out-dir", out_files, "--method", "wls",
                  "--format", "npy", "--json", "--jobs", "1"], timeout=300)
    assert r.returncode == 0, r.stderr
    recs = _json_lines(r.stdout)
    assert len(recs) == 9 and {rec["camera"] for rec in recs} == {"perspective"}
    assert out_files.is_dir() and "created the output folder" in r.stderr
    objects = [Path(rec["input"]).parent.name for rec in recs]
    r = run_fnin(["integrate", *[data / o for o in objects[:2]], "--out-dir", out_dirs, "--method", "wls",
                  "--format", "npy"], timeout=300)
    assert r.returncode == 0, r.stderr
    for o in objects[:2]:
        assert np.array_equal(np.load(out_files / f"{o}.npy"), np.load(out_dirs / f"{o}.npy"), equal_nan=True)


# ------------------------------------------------------------------ stdout / help / messages

def test_bench_table_goes_to_stdout(tmp_path, repo_root):
    r = run_fnin(["bench", repo_root / "samples", "--methods", "wls", "--no-warmup"], timeout=300)
    assert r.returncode == 0, r.stderr
    assert "dome" in r.stdout and "+: most accurate" in r.stdout and "*: fastest" in r.stdout
    assert "dome" not in r.stderr


def test_version_and_plain_flags_in_help():
    from fnin_cli import __version__

    r = invoke(["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"fnin {__version__}"
    text = invoke(["integrate", "--help"]).stdout
    assert "<bool>" not in text and "--colors / --no-colors" in text
    assert "rarely needed: fnin-s, fnin-stage1" in " ".join(text.split())
    bench = " ".join(invoke(["bench", "--help"]).stdout.split())
    assert "default: default,bini,wls" in bench


def test_python_messages_name_the_python_argument(tmp_path):
    from fnin_cli import integrate, load_input
    from fnin_cli.errors import FninError
    from fnin_cli.mesh import build_mesh, write_mesh

    folder = write_folder(tmp_path / "s")
    inp = load_input(folder)
    res = integrate(inp, method="wls")
    write_mesh(tmp_path / "m.ply", build_mesh(res.depth, res.camera, res.mask))
    with pytest.raises(FninError, match=r"pass force=True to overwrite it"):
        write_mesh(tmp_path / "m.ply", build_mesh(res.depth, res.camera, res.mask))


def test_rerunning_a_batch_suggests_skip_existing(tmp_path):
    for i in range(2):
        write_folder(tmp_path / f"s{i}", seed=PERSP_SEEDS[i])
    args = ["integrate", tmp_path / "s0", tmp_path / "s1", "--out-dir", tmp_path / "out", "--method", "wls"]
    assert invoke(args).exit_code == 0
    r = invoke(args)
    assert r.exit_code == 2 and "--force" in r.stderr and "--skip-existing" in r.stderr


def test_python_callers_get_warnings_for_decoding_changes(tmp_path):
    from fnin_cli import load_input
    from fnin_cli.errors import FninWarning

    s = scene(2, size=96)
    # OpenCV-frame normals read as the default ps: auto switches to opencv (a green-down
    # map of this scene, which has no object outline, could as well be a mirrored one:
    # refused naming both, tests/test_decoding_cli.py)
    cv = from_internal(s.normals, "opencv")
    np.save(tmp_path / "cv.npy", cv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inp = load_input(tmp_path / "cv.npy", mask=s.mask)
    assert inp.convention == "opencv"
    assert [str(w.message) for w in caught if issubclass(w.category, FninWarning)] == inp.warnings
    assert any("OpenCV frame" in w for w in inp.warnings)
    # in Python the message names the Python argument, on the command line the option
    assert any('convention="opencv"' in w for w in inp.warnings)
    assert not any("--convention" in w for w in inp.warnings)
    r = invoke(["integrate", tmp_path / "cv.npy", "-o", tmp_path / "cv.npy.ply", "--method", "wls", "--json"])
    assert "--convention opencv" in json.loads(r.stdout)["warnings"][0]


def test_python_names_of_options():
    from fnin_cli.errors import FninError, python_names

    assert python_names("pass --allow-invalid to go on") == "pass allow_invalid=True to go on"
    assert python_names("pass --channels N.X,N.Y,N.Z.") == 'pass channels="N.X,N.Y,N.Z".'
    assert python_names("--channels wants rgb") == "channels wants rgb"
    assert python_names("try --convention ps (x right)") == 'try convention="ps" (x right)'
    assert FninError("pass --force to overwrite it").message == "pass force=True to overwrite it"


def test_explicit_directx_on_a_green_up_map_says_green_up(tmp_path):
    s = scene(2, size=96)
    np.save(tmp_path / "up.npy", from_internal(s.normals, "ps"))
    io.write_png(tmp_path / "m.png", (s.mask * 255).astype(np.uint8))
    r = invoke(["integrate", tmp_path / "up.npy", "--mask", tmp_path / "m.png", "--convention", "directx",
                "-o", tmp_path / "d.npy", "--method", "wls"])
    assert r.exit_code == 1
    assert "green-up (y flipped)" in r.stderr and "green-down" not in r.stderr, r.stderr


# ------------------------------------------------------------------ meshes and previews

@pytest.mark.parametrize("suffix", [".stl", ".glb"])
def test_stl_and_glb_read_back_with_one_vertex_per_masked_pixel(tmp_path, suffix):
    import trimesh

    folder = write_folder(tmp_path / "s", seed=PERSP_SEEDS[3])
    out = tmp_path / f"m{suffix}"
    r = invoke(["integrate", folder, "-o", out, "--method", "wls", "--json"])
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout)
    ply = tmp_path / "m.ply"
    assert invoke(["integrate", folder, "-o", ply, "--method", "wls"]).exit_code == 0
    ref = trimesh.load(ply, process=False)
    mesh = trimesh.load(out, force="mesh")
    assert len(ref.vertices) == rec["pixels"]
    assert len(mesh.vertices) == rec["pixels"] and len(mesh.faces) == len(ref.faces)
    if suffix == ".glb":  # glTF's axes: y up, the viewer on +z
        assert np.allclose(np.sort(mesh.vertices[:, 2]), np.sort(-ref.vertices[:, 2]), rtol=1e-6)


def test_preview_clips_and_counts_depth_outliers():
    from fnin_cli.batch.preview import preview_image
    from fnin_cli.camera import Camera

    h, w = 60, 80
    mask = np.zeros((h, w), bool)
    mask[5:55, 5:75] = True
    depth = np.where(mask, np.linspace(0.0, 10.0, w)[None, :].repeat(h, 0), np.nan)
    normals = np.zeros((h, w, 3), np.float32)
    normals[..., 2] = -1
    spiked = depth.copy()
    spiked[10, 10:13] = 1000.0  # three outlier pixels
    calm = preview_image(normals, depth, None, Camera(), mask, title="t")
    loud = preview_image(normals, spiked, None, Camera(), mask, title="t")
    from fnin_cli.batch import preview

    body = slice(preview.TITLE_HEIGHT, -preview.LEGEND_HEIGHT)
    # the outliers leave the rest of the depth panel's grey ramp as it was (rank or min/max
    # scaling would change every pixel); the shaded panel changes around the spike only
    depth_panel = slice(2 * preview.MIN_PANEL_WIDTH + 8, None)
    diff = (calm[body, depth_panel] != loud[body, depth_panel]).any(-1)
    assert diff.sum() == 3
    assert not (calm[-preview.LEGEND_HEIGHT:] == loud[-preview.LEGEND_HEIGHT:]).all()  # counted in the legend


# ------------------------------------------------------------------ faults: SIGTERM, full disk

def _children(pid):
    """Processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    stat = fh.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_sigterm_stops_a_jobs_2_batch_like_ctrl_c(tmp_path):
    import trimesh

    inputs = []
    for i in range(12):   # enough work that the signal lands mid-batch
        p = tmp_path / "in" / f"s{i:02d}.npy"
        p.parent.mkdir(exist_ok=True)
        np.save(p, from_internal(scene(PERSP_SEEDS[i], size=128).normals, "ps"))
        inputs.append(p)
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "from fnin_cli.cli import main; main()", "integrate", *map(str, inputs),
           "--out-dir", str(out), "--method", "bini", "--jobs", "2", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline, kids = time.time() + 90, []
        # a worker is running: an output exists (the workers have started and work)
        while time.time() < deadline and not (out.is_dir() and any(n.endswith(".ply") for n in os.listdir(out))):
            time.sleep(0.05)
        kids = _children(proc.pid)       # the two workers and the resource tracker
        assert len(kids) >= 2, kids
        proc.send_signal(signal.SIGTERM)  # the parent alone, as `kill -TERM <pid>` does
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert "interrupted by SIGTERM" in stderr and "Traceback" not in stderr
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if _alive(k)], "worker or resource-tracker process left behind"
    recs = _json_lines(stdout)
    assert [r["input"] for r in recs] == [str(p) for p in inputs]   # one record per input
    assert {r["status"] for r in recs} <= {"ok", "interrupted", "not started"}
    assert recs[-1]["status"] == "not started"
    names = os.listdir(out)
    assert not [n for n in names if n.startswith(".") or ".part" in n]   # nothing partial
    assert {os.path.basename(r["outputs"]["mesh"]) for r in recs if r["outputs"]} == set(names)
    for n in names:
        assert len(trimesh.load(out / n, process=False).vertices) > 100


def test_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch):
    import builtins

    write_folder(tmp_path / "s")
    real_open = builtins.open

    def full_disk_open(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        if "w" in mode and ".part" in str(file):
            class Full:
                def __init__(self, f):
                    self._f = f

                def write(self, data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

                def __enter__(self):
                    return self

                def __exit__(self, *exc):
                    self._f.close()

                def __getattr__(self, name):
                    return getattr(self._f, name)
            return Full(fh)
        return fh

    monkeypatch.setattr(builtins, "open", full_disk_open)
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", tmp_path / "s", "-o", out / "s.ply", "--method", "wls"])
    monkeypatch.undo()
    assert r.exit_code == 1, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {out / 's.ply'}: cannot write: no space left on device"), r.stderr
    assert "internal error" not in r.stderr
    assert os.listdir(out) == []   # nothing partial


@pytest.mark.parametrize("error", [
    RuntimeError('Failed to write pixel data to image file "x.part.exr". No space left on device.'),  # OpenEXR
    OSError("49152 requested and 16352 written"),   # numpy/tifffile: a short write, no errno
])
def test_library_errors_of_a_full_disk_are_named_too(tmp_path, monkeypatch, error):
    """Seen on a 64 KiB tmpfs: OpenEXR raised a RuntimeError ("internal error") and numpy
    a short-write OSError without errno; both are the full disk they are."""
    from collections import namedtuple

    from fnin_cli.errors import FninError
    from fnin_cli.io import files

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage(1 << 16, 1 << 16, 0))
    with pytest.raises(FninError, match=r"cannot write: no space left on device") as e:
        with files.atomic_path(tmp_path / "d.exr") as tmp:
            Path(tmp).write_bytes(b"partial")
            raise error
    assert e.value.path == str(tmp_path / "d.exr")
    assert os.listdir(tmp_path) == []   # nothing partial
    # a library's error that is not about space stays what it is (a bug is not a full disk)
    monkeypatch.setattr(files.shutil, "disk_usage", lambda p: usage(1 << 40, 0, 1 << 40))
    with pytest.raises(RuntimeError):
        with files.atomic_path(tmp_path / "e.exr"):
            raise RuntimeError("some library bug")
    assert os.listdir(tmp_path) == []
