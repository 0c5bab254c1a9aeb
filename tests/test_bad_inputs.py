"""A corpus of bad inputs and bad command lines through `fnin integrate`.

Every case must end with the right exit code (1: this input failed, 2: usage error),
exactly one line `error: <file>: <message>` on stderr that names the offending file
and says what to try, no traceback, no output file (and no temporary file) created,
and an existing output file left byte for byte as it was, even with --force.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

import numpy as np
import pytest

from fnin_cli import io
from fnin_cli.conventions import from_internal
from helpers_cli import assert_no_escape, invoke, run_fnin, scene, write_case

SENTINEL = b"existing output, must stay as it is\n"


def _normals_ps(seed=2):
    s = scene(seed)
    return s, from_internal(s.normals, "ps").astype(np.float32)


def _png_header_only(path, width, height):
    """A PNG whose header claims width x height (and a tiny, truncated IDAT)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)))


# Each builder returns (argv after 'integrate' without the output, exit code,
# the file the message must name, words the message must contain).

def case_missing_file(t):
    return [t / "nope.png"], 1, t / "nope.png", ["not found"]


def case_folder_without_normal_map(t):
    (t / "scan").mkdir()
    return [t / "scan"], 1, t / "scan", ["normal_map.png"]


def case_folder_with_jpeg_normal_map(t):
    # issue 51: the folder's normal_map.jpg is named, and why it is refused (lossy), and .tif offered
    (t / "scan").mkdir()
    (t / "scan" / "normal_map.jpg").write_bytes(b"\xff\xd8\xff\xe0 not read")
    return [t / "scan"], 1, t / "scan", ["normal_map.jpg", "lossy", ".tif"]


def case_folder_with_unread_normal_map(t):
    (t / "scan").mkdir()
    (t / "scan" / "normal_map.bmp").write_bytes(b"BM not read")
    return [t / "scan"], 1, t / "scan", ["normal_map.bmp", "does not read", ".tif"]


def case_random_bytes_png(t):
    (t / "n.png").write_bytes(np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8).tobytes())
    return [t / "n.png"], 1, t / "n.png", ["corrupt"]


def case_truncated_png(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    data = c["normals"].read_bytes()
    c["normals"].write_bytes(data[: len(data) * 2 // 3])
    return [c["normals"]], 1, c["normals"], ["truncated"]


def case_empty_file(t):
    (t / "n.exr").write_bytes(b"")
    return [t / "n.exr"], 1, t / "n.exr", ["corrupt"]


def case_corrupt_exr(t):
    (t / "n.exr").write_bytes(b"v/1\x01" + bytes(range(256)) * 4)
    return [t / "n.exr"], 1, t / "n.exr", ["corrupt"]


def case_corrupt_npy(t):
    (t / "n.npy").write_bytes(b"\x93NUMPY\x01\x00garbage" * 10)
    return [t / "n.npy"], 1, t / "n.npy", ["corrupt"]


def case_corrupt_tiff(t):
    (t / "n.tif").write_bytes(b"II*\x00" + b"\xff" * 500)
    return [t / "n.tif"], 1, t / "n.tif", ["corrupt"]


def case_unknown_extension(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    target = t / "n.jpg"
    c["normals"].rename(target)
    return [target], 1, target, ["unknown file type", "lossy", ".png"]


def case_one_channel_png(t):
    io.write_png(t / "grey.png", np.full((48, 48), 30000, np.uint16))
    return [t / "grey.png"], 1, t / "grey.png", ["3 channels", "1 channel"]


def case_2d_npy(t):
    np.save(t / "n.npy", np.zeros((48, 48), np.float32))
    return [t / "n.npy"], 1, t / "n.npy", ["3 channels"]


def case_2_channel_npy(t):
    np.save(t / "n.npy", np.zeros((48, 48, 2), np.float32))
    return [t / "n.npy"], 1, t / "n.npy", ["3 channels", "2 channels"]


def case_5_channel_npy(t):
    np.save(t / "n.npy", np.zeros((48, 48, 5), np.float32))
    return [t / "n.npy"], 1, t / "n.npy", ["3 channels"]


def case_4d_npy(t):
    np.save(t / "n.npy", np.zeros((2, 48, 48, 3), np.float32))
    return [t / "n.npy"], 1, t / "n.npy", ["(H, W, C)"]


def case_pickled_npy(t):
    np.save(t / "n.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    return [t / "n.npy"], 1, t / "n.npy", ["cannot read"]


def case_complex_npy(t):
    np.save(t / "n.npy", np.zeros((48, 48, 3), np.complex64))
    return [t / "n.npy"], 1, t / "n.npy", ["data type"]


def case_nan_normals(t):
    np.save(t / "n.npy", np.full((48, 48, 3), np.nan, np.float32))
    return [t / "n.npy"], 1, t / "n.npy", ["no pixel with a valid normal"]


def case_zero_normals(t):
    np.save(t / "n.npy", np.zeros((48, 48, 3), np.float32))
    return [t / "n.npy"], 1, t / "n.npy", ["no pixel with a valid normal"]


def case_facing_away(t):
    _, n = _normals_ps()
    np.save(t / "n.npy", n * np.array([1, 1, -1], np.float32))  # z away from the viewer
    # an explicit convention is strict (the default, auto, flips z back with a warning)
    return [t / "n.npy", "--convention", "ps"], 1, t / "n.npy", ["face away", "--convention"]


def case_mask_other_size(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    io.write_png(t / "m.png", np.full((40, 48), 255, np.uint8))
    return [c["normals"], "--mask", t / "m.png"], 1, t / "m.png", ["48x40", "48x48"]


def case_empty_mask(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    io.write_png(t / "m.png", np.zeros((48, 48), np.uint8))
    return [c["normals"], "--mask", t / "m.png"], 1, c["normals"], ["mask is empty"]


def case_isolated_pixels_mask(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    v, u = np.mgrid[0:48, 0:48]
    io.write_png(t / "m.png", (((u + v) % 2 == 0) * 255).astype(np.uint8))
    return [c["normals"], "--mask", t / "m.png"], 1, c["normals"], ["isolated"]


def case_single_pixel_map(t):
    np.save(t / "n.npy", np.array([[[0.0, 0.0, 1.0]]], np.float32))
    return [t / "n.npy"], 1, t / "n.npy", ["isolated"]


def case_corrupt_mask(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    (t / "m.png").write_bytes(b"\x89PNG\r\n\x1a\nbroken")
    return [c["normals"], "--mask", t / "m.png"], 1, t / "m.png", ["corrupt"]


def _K_case(t, text):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    (t / "K.txt").write_text(text)
    return [c["normals"], "--K", t / "K.txt"]


def case_K_not_3x3(t):
    return _K_case(t, "100 0 24\n0 100 24\n"), 1, t / "K.txt", ["3x3"]


def case_K_not_numbers(t):
    return _K_case(t, "fx fy\ncx cy\n"), 1, t / "K.txt", ["3 rows of 3 numbers"]


def case_K_zero_focal(t):
    return _K_case(t, "0 0 24\n0 100 24\n0 0 1\n"), 1, t / "K.txt", ["focal", "positive"]


def case_K_principal_point_far_away(t):
    return _K_case(t, "100 0 900\n0 100 24\n0 0 1\n"), 1, t / "K.txt", ["principal point", "outside"]


def case_K_transposed(t):
    return _K_case(t, "100 0 0\n0 100 0\n24 24 1\n"), 1, t / "K.txt", ["transposed"]


def case_K_infinite(t):
    return _K_case(t, "inf 0 24\n0 100 24\n0 0 1\n"), 1, t / "K.txt", ["finite"]


def case_too_many_pixels(t):
    _png_header_only(t / "huge.png", 10000, 8000)
    return [t / "huge.png"], 1, t / "huge.png", ["too large", "10000x8000", "downsample"]


def case_depth_at_outside_mask(t):
    c = write_case(t, seed=8, with_K=False)  # seed 8: small object, corner (0, 0) outside
    return [c["normals"], "--mask", c["mask"], "--depth-at", "0,0,1.5"], 1, c["normals"], ["--depth-at", "mask"]


def case_depth_at_negative_depth(t):
    c = write_case(t, seed=2)
    return ([c["normals"], "--mask", c["mask"], "--K", c["K"], "--depth-at", "24,24,-1"], 1, c["normals"],
            ["positive"])


# usage errors: nothing is read, nothing computed
def case_ortho_with_K(t):
    c = write_case(t, seed=2)
    return [c["normals"], "--ortho", "--K", c["K"]], 2, None, ["--ortho", "--K"]


def case_mask_option_missing(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    return [c["normals"], "--mask", t / "nomask.png"], 2, t / "nomask.png", ["not found"]


def case_K_option_missing(t):
    c = write_case(t, seed=2, with_mask=False, with_K=False)
    return [c["normals"], "--K", t / "noK.txt"], 2, t / "noK.txt", ["not found"]


# option values refused before any input is read: (case name, options, words in the message)
BAD_OPTIONS = [
    ("unknown_method", ["--method", "magic"], ["fnin, fnin-s, bini, wls"]),
    ("unknown_convention", ["--convention", "sideways"], ["opencv", "directx"]),
    ("unknown_device", ["--device", "tpu"], ["cuda", "mps"]),
    ("bad_depth_at", ["--depth-at", "12;3"], ["ROW,COL,DEPTH"]),
    ("depth_at_and_mean_depth", ["--depth-at", "1,1,1", "--mean-depth", "2"], ["one of them"]),
    ("negative_focal_option", ["--fx", "-50"], ["--fx", "positive"]),
    ("zero_pixel_size", ["--pixel-size", "0"], ["--pixel-size", "positive"]),
    ("jobs_zero", ["--jobs", "0"], ["--jobs"]),
    ("negative_refine", ["--refine", "-1"], ["--refine"]),
]


def _bad_option_case(options, words):
    def case(t):
        c = write_case(t, seed=2, with_mask=False, with_K=False)
        return [c["normals"], *options], 2, None, words
    return case


for _name, _options, _words in BAD_OPTIONS:
    globals()[f"case_{_name}"] = _bad_option_case(_options, _words)


def case_glob_matches_nothing(t):
    return [str(t / "scans" / "*" / "normal_map.png")], 2, None, ["no file or folder matches"]


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_corpus(tmp_path, name, existing):
    args, code, named, words = CASES[name](tmp_path)
    outdir = tmp_path / "out"
    outdir.mkdir()
    target = outdir / "result.npy"
    extra = []
    if existing:
        target.write_bytes(SENTINEL)
        extra = ["--force"]
    r = invoke(["integrate", "--method", "wls", "-o", target, *extra, *args])  # case options win
    assert_no_escape(r)
    assert r.exit_code == code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ")
    if named is not None:
        assert lines[0].startswith(f"error: {named}: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert r.stdout == ""
    if existing:
        assert sorted(os.listdir(outdir)) == ["result.npy"] and target.read_bytes() == SENTINEL
    else:
        assert os.listdir(outdir) == []


def test_bad_input_in_json_mode_is_a_record(tmp_path):
    """--json: a failed input is still one JSON object on stdout (status failed + error)."""
    args, code, named, words = case_facing_away(tmp_path)
    r = invoke(["integrate", *args, "-o", tmp_path / "d.npy", "--method", "wls", "--json"])
    assert r.exit_code == 1
    rec = json.loads(r.stdout)
    assert rec["status"] == "failed" and rec["error"].startswith(f"{named}: ") and "--convention" in rec["error"]


# ---------------------------------------------------------------- output paths (exit 2)

def _good(t):
    return write_case(t / "in", seed=2, with_mask=False, with_K=False)["normals"]


def test_output_folder_missing(tmp_path):
    r = invoke(["integrate", _good(tmp_path), "-o", tmp_path / "nowhere" / "m.ply", "--method", "wls"])
    assert_no_escape(r)
    assert r.exit_code == 2
    assert r.stderr.strip() == f"error: {tmp_path / 'nowhere'}: output folder does not exist; create it first"
    # --out-dir creates a missing folder, parents too, and says so (issue 32)
    r = invoke(["integrate", _good(tmp_path), "--out-dir", tmp_path / "nowhere" / "deep", "--method", "wls"])
    assert r.exit_code == 0 and "created the output folder" in r.stderr
    assert (tmp_path / "nowhere" / "deep" / "n.ply").is_file()


def test_output_folder_not_writable(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    # root may write anywhere, so make the folder look read-only to os.access as well
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if str(p) == str(ro) and mode & os.W_OK
                        else real_access(p, mode, *a, **k))
    os.chmod(ro, 0o555)
    try:
        r = invoke(["integrate", _good(tmp_path), "-o", ro / "m.ply", "--method", "wls"])
    finally:
        os.chmod(ro, 0o755)
    assert_no_escape(r)
    assert r.exit_code == 2
    assert r.stderr.strip() == f"error: {ro}: output folder is not writable"
    assert os.listdir(ro) == []


def test_output_exists_without_force(tmp_path):
    target = tmp_path / "w.exr"
    target.write_bytes(SENTINEL)
    extra = tmp_path / "d.npy"
    r = invoke(["integrate", _good(tmp_path), "-o", tmp_path / "new.ply", "--depth", extra, "--weights", target,
                "--method", "wls"])
    assert r.exit_code == 2
    assert r.stderr.strip() == f"error: {target}: output exists; pass --force to overwrite it"
    # checked before computing: none of the other outputs was written either
    assert target.read_bytes() == SENTINEL and not extra.exists() and not (tmp_path / "new.ply").exists()


def test_output_is_a_folder(tmp_path):
    (tmp_path / "m.ply").mkdir()
    r = invoke(["integrate", _good(tmp_path), "-o", tmp_path / "m.ply", "--force", "--method", "wls"])
    assert r.exit_code == 2 and "is a folder" in r.stderr


def test_output_over_an_input_is_refused_even_with_force(tmp_path):
    _, n = _normals_ps()
    np.save(tmp_path / "n.npy", n)
    before = (tmp_path / "n.npy").read_bytes()
    r = invoke(["integrate", tmp_path / "n.npy", "-o", tmp_path / "n.npy", "--force", "--method", "wls"])
    assert r.exit_code == 2 and "overwrite an input" in r.stderr
    assert (tmp_path / "n.npy").read_bytes() == before


@pytest.mark.parametrize("argv, words", [
    (["-o", "m.3mf"], ["-o needs a mesh"]),
    (["--preview", "p.jpg"], ["PNG"]),
    (["--depth", "d.ply"], ["--depth needs"]),
    (["--out-dir", ".", "-o", "x.ply"], ["-o and --out-dir"]),
    (["--out-dir", ".", "--format", "3mf"], ["unknown --format"]),
    (["-o", "x.npy", "--depth", "y.npy"], ["is already the depth map"]),
    (["--out-dir", ".", "--format", "exr", "--depth", ".npy"], ["is already the depth map"]),
    (["-o", "x.ply", "--depth", "x.ply"], ["--depth needs"]),
    (["-o", "x.npy", "--weights", "x.npy"], ["two outputs of the same input"]),
])
def test_bad_output_options(tmp_path, argv, words):
    r = invoke(["integrate", _good(tmp_path), *argv, "--method", "wls"], cwd=tmp_path)
    assert_no_escape(r)
    assert r.exit_code == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    for w in words:
        assert w in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["in"]


def test_several_inputs_need_out_dir_and_distinct_names(tmp_path):
    a = write_case(tmp_path / "a", seed=2, with_mask=False, with_K=False)["normals"]
    b = write_case(tmp_path / "b", seed=4, with_mask=False, with_K=False)["normals"]
    r = invoke(["integrate", a, b, "-o", tmp_path / "m.ply", "--method", "wls"])
    assert r.exit_code == 2 and "--out-dir" in r.stderr
    r = invoke(["integrate", a, b, "--method", "wls"])
    assert r.exit_code == 2 and "--out-dir" in r.stderr
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", a, b, "--out-dir", out, "--method", "wls"])  # both are n.png -> out/n.ply
    assert r.exit_code == 2 and "would both write" in r.stderr and str(a) in r.stderr
    r = invoke(["integrate", a, b, "--out-dir", out, "--depth", "d.npy", "--method", "wls"])
    assert r.exit_code == 2 and "template" in r.stderr
    assert os.listdir(out) == []


# ---------------------------------------------------------------- accepted with a warning

def test_8bit_map_warns_but_integrates(tmp_path):
    s = scene(4)
    io.write_normal_map(tmp_path / "n8.png", s.normals, bits=8)
    r = invoke(["integrate", tmp_path / "n8.png", "-o", tmp_path / "d.npy", "--method", "wls"])
    assert r.exit_code == 0, r.stderr
    warn = [x for x in r.stderr.splitlines() if x.startswith("warning: ")]
    assert len(warn) == 1 and "8-bit" in warn[0] and str(tmp_path / "n8.png") in warn[0]
    assert np.isfinite(np.load(tmp_path / "d.npy")).sum() > 1000


def test_every_8bit_input_warns_once_whatever_its_container(tmp_path):
    """Issue 43: the 8-bit warning came from the file's bit depth alone, so 8-bit data
    saved in a 16-bit PNG (values x 257) or a float file (c / 127.5 - 1) passed silently.
    Each input holding 8-bit codes warns once; true 16-bit and float maps do not."""
    import tifffile

    s = scene(4)
    ps = from_internal(np.nan_to_num(s.normals), "ps")
    code = np.clip(np.round((ps + 1) * 127.5), 0, 255).astype(np.uint8)
    code[~s.mask] = 255
    maps = tmp_path / "maps"
    maps.mkdir()
    io.write_png(maps / "png8.png", code)
    io.write_png(maps / "rgba8.png", np.dstack([code, np.full(code.shape[:2], 255, np.uint8)]))
    tifffile.imwrite(maps / "tif8.tif", code)
    np.save(maps / "npy8.npy", code)
    io.write_png(maps / "png16of8.png", code.astype(np.uint16) * 257)
    floats = np.where(s.mask[..., None], code / 127.5 - 1, np.nan).astype(np.float32)
    np.save(maps / "float_of8.npy", floats)
    io.write_array(maps / "exr_of8.exr", floats)
    io.write_normal_map(maps / "true16.png", s.normals)                       # 16 bits of the same map
    np.save(maps / "true_float.npy", np.where(s.mask[..., None], ps, np.nan).astype(np.float32))
    eight = ["png8.png", "rgba8.png", "tif8.tif", "npy8.npy", "png16of8.png", "float_of8.npy", "exr_of8.exr"]
    names = eight + ["true16.png", "true_float.npy"]
    r = invoke(["integrate", *[maps / n for n in names], "--K", write_case(tmp_path / "k", seed=4)["K"],
                "--out-dir", tmp_path / "out", "--method", "wls", "--json"])
    assert r.exit_code == 0, r.stderr
    recs = {os.path.basename(rec["input"]): rec for rec in map(json.loads, r.stdout.splitlines())}
    for n in names:
        said = [w for w in recs[n]["warnings"] if "8-bit" in w]
        assert len(said) == (n in eight), (n, recs[n]["warnings"])
        lines = [x for x in r.stderr.splitlines() if x.startswith(f"warning: {maps / n}: ") and "8-bit" in x]
        assert len(lines) == (n in eight), (n, r.stderr)
    assert "multiple of 257" in recs["png16of8.png"]["warnings"][0]
    # the half encoding's codes, (n + 1) / 2 = c / 255
    np.save(maps / "half_of8.npy", np.where(s.mask[..., None], code / 255.0, np.nan).astype(np.float32))
    r = invoke(["integrate", maps / "half_of8.npy", "--float-encoding", "half", "--K", tmp_path / "k" / "n_K.txt",
                "-o", tmp_path / "h.npy", "--method", "wls", "--json"])
    assert r.exit_code == 0 and sum("8-bit" in w for w in json.loads(r.stdout)["warnings"]) == 1, r.stderr


def test_rgba_map_uses_rgb(tmp_path):
    """A 4-channel map (e.g. an RGBA PNG from a renderer) is read as RGB; alpha is ignored."""
    s, ps = _normals_ps(4)
    rgba = np.concatenate([ps, np.ones(ps.shape[:2] + (1,), np.float32)], axis=-1)
    np.save(tmp_path / "rgb.npy", ps)
    np.save(tmp_path / "rgba.npy", rgba)
    for name in ("rgb", "rgba"):
        r = invoke(["integrate", tmp_path / f"{name}.npy", "-o", tmp_path / f"{name}_d.npy", "--method", "wls"])
        assert r.exit_code == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "rgba_d.npy"), np.load(tmp_path / "rgb_d.npy"), rtol=1e-5,
                               atol=1e-5)


# ---------------------------------------------------------------- resources, internal errors

def test_not_enough_memory_is_refused_up_front(tmp_path, monkeypatch):
    from fnin_cli.batch import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 2**19)  # 512 KiB
    good = _good(tmp_path)
    target = tmp_path / "m.ply"
    r = invoke(["integrate", good, "-o", target, "--method", "wls"])
    assert_no_escape(r)
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert line.startswith(f"error: {good}: a 48x48 map with ") and " masked pixels needs about " in line
    assert "GiB" in line and "free" in line
    assert not target.exists()


def test_unexpected_exception_is_one_line_and_batch_goes_on(tmp_path, monkeypatch):
    from fnin_cli.batch import runner

    real = runner.integrate

    def flaky(inp, *a, **k):
        if "boom" in inp.source:
            raise ValueError("something deep\nwent wrong")
        return real(inp, *a, **k)

    monkeypatch.setattr(runner, "integrate", flaky)
    boom = write_case(tmp_path, seed=2, name="boom", with_mask=False, with_K=False)["normals"]
    fine = write_case(tmp_path, seed=4, name="fine", with_mask=False, with_K=False)["normals"]
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", boom, fine, "--out-dir", out, "--method", "wls", "-q"])
    assert_no_escape(r)
    assert r.exit_code == 1
    assert r.stderr.strip() == (f"error: {boom}: internal error (ValueError: something deep); "
                                "run with --debug for the traceback and please report it")
    assert sorted(os.listdir(out)) == ["fine.ply"]
    r = invoke(["integrate", boom, "--out-dir", out, "--method", "wls", "--debug"])
    assert r.exit_code == 1 and "Traceback" in r.stderr and "flaky" in r.stderr


def test_real_process_prints_one_line_per_bad_file(tmp_path):
    """In a real process (library loggers and all), each corrupt file is exactly one line."""
    bad = {
        "a.png": b"\x89PNG\r\n\x1a\n" + b"\0" * 40,
        "b.tif": b"II*\x00" + b"\xff" * 500,
        "c.exr": b"v/1\x01" + bytes(range(256)),
        "d.npy": b"\x93NUMPY\x01\x00garbage",
    }
    for name, data in bad.items():
        (tmp_path / name).write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    r = run_fnin(["integrate", *[tmp_path / n for n in bad], "--out-dir", out, "--method", "wls", "-q"])
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert [ln.split(": ")[1] for ln in lines] == [str(tmp_path / n) for n in bad], r.stderr
    assert all(ln.startswith("error: ") and "corrupt" in ln for ln in lines)
    assert os.listdir(out) == []


def test_bug_outside_the_per_input_guard_is_one_line(tmp_path, monkeypatch):
    from fnin_cli.cli import integrate as integrate_cmd

    def broken(*a, **k):
        raise RuntimeError("planner exploded\nsecond line")

    monkeypatch.setattr(integrate_cmd, "plan_jobs", broken)
    r = invoke(["integrate", _good(tmp_path), "-o", tmp_path / "m.ply", "--method", "wls"])
    assert_no_escape(r)
    assert r.exit_code == 1
    assert r.stderr.strip() == ("error: internal error (RuntimeError: planner exploded); "
                                "run with --debug for the traceback")
    r = invoke(["integrate", _good(tmp_path), "-o", tmp_path / "m.ply", "--method", "wls", "--debug"])
    assert isinstance(r.exception, RuntimeError)


def test_unavailable_device_is_a_usage_error(tmp_path):
    import torch

    from helpers_cli import write_random_model

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    model = write_random_model(tmp_path / "net.safetensors")
    r = invoke(["integrate", _good(tmp_path), "-o", tmp_path / "m.ply", "--model", model, "--device", "cuda"])
    assert_no_escape(r)
    assert r.exit_code == 2
    assert r.stderr.strip().startswith("error: --device cuda: no CUDA") and "--device cpu" in r.stderr
    assert not (tmp_path / "m.ply").exists()
    # the classic methods do not use the device at all
    r = invoke(["integrate", _good(tmp_path), "-o", tmp_path / "m.ply", "--method", "wls", "--device", "cuda"])
    assert r.exit_code == 0, r.stderr
