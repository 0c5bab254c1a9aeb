"""Start-up work that a single call no longer pays: PLY without trimesh (the PNG reader: test_read_formats)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


from fnin_cli.mesh import build_mesh, mesh_arrays, write_mesh
from fnin_cli.pipeline import integrate, load_input

from helpers_cli import assert_run_leaves_out  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def test_ply_is_written_byte_identical_to_trimesh(tmp_path):
    inp = load_input(SAMPLES / "dome")
    res = integrate(inp, "wls")
    for colors in (True, False):
        arrays = mesh_arrays(res.depth, res.camera, res.mask, normals=inp.normals, colors=colors)
        tm = build_mesh(res.depth, res.camera, res.mask, normals=inp.normals, colors=colors)
        ref = tm.export(file_type="ply", encoding="binary")
        for name, mesh in (("arrays", arrays), ("trimesh", tm)):
            path = write_mesh(tmp_path / f"{name}{colors}.ply", mesh)
            assert path.read_bytes() == ref, (name, colors)


def test_help_does_not_import_torch_or_scipy():
    """`fnin --help` answers without loading torch or scipy (0.46 -> 0.34 s: the solvers
    import scipy.sparse where they first need it)."""
    code = ("import sys\nfrom fnin_cli.cli import app\nsys.argv = ['fnin', '--help']\n"
            "try:\n    app()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "bad = [m for m in ('torch', 'scipy', 'scipy.sparse') if m in sys.modules]\n"
            "assert not bad, bad\nprint('left out')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "left out" in r.stdout, r.stderr[-2000:]


def test_a_ply_run_does_not_import_trimesh(tmp_path):
    out = tmp_path / "m.ply"
    assert_run_leaves_out("trimesh", [SAMPLES / "dome", "-o", out, "--method", "wls", "--quiet"], out)


def test_integrate_leaves_quickly_with_its_exit_codes_and_flushed_output(tmp_path):
    """`fnin integrate` ends with os._exit after flushing: exit codes 0 / 1 / 2 and the
    --json lines on stdout are what the normal exit gave."""
    import json

    def fnin(*args):
        return subprocess.run([sys.executable, "-m", "fnin_cli.cli", "integrate", *args], capture_output=True,
                              text=True, timeout=120)

    ok = fnin(str(SAMPLES / "dome"), str(SAMPLES / "hill"), "--out-dir", str(tmp_path), "--method", "wls", "--json")
    assert ok.returncode == 0, ok.stderr[-1000:]
    records = [json.loads(line) for line in ok.stdout.splitlines()]
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert all(Path(r["outputs"]["mesh"]).stat().st_size > 1000 for r in records)
    bad = fnin(str(tmp_path / "missing.png"), "-o", str(tmp_path / "m.ply"), "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["status"] == "failed"
    assert bad.stderr.strip().splitlines()[-1].startswith("error:")
    usage = fnin(str(SAMPLES / "dome"), "--method", "nope")
    assert usage.returncode == 2 and "error:" in usage.stderr


def test_an_integrate_run_does_not_import_the_bench_package(tmp_path):
    out = tmp_path / "m.ply"
    assert_run_leaves_out("fnin_cli.bench", [SAMPLES / "dome", "-o", out, "--method", "wls", "--quiet"], out)
