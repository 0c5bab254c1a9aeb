"""Start-up work that a single call no longer pays: the PNG fast path, PLY without trimesh."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import png
import pytest

from fnin_cli.io import read_array
from fnin_cli.io.png_fast import read_png_fast
from fnin_cli.mesh import build_mesh, mesh_arrays, write_mesh
from fnin_cli.pipeline import integrate, load_input

from helpers_cli import assert_run_leaves_out  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _encode(arr: np.ndarray, filters) -> bytes:
    """A PNG of ``arr`` (H, W, C) uint8/uint16 whose row r uses filter ``filters[r % len]``."""
    h, w, c = arr.shape
    bd = 16 if arr.dtype == np.uint16 else 8
    raw = arr.astype(">u2" if bd == 16 else np.uint8).tobytes()
    bpp, rb = c * bd // 8, w * c * bd // 8
    out, prev = bytearray(), bytes(rb)
    for r in range(h):
        line = raw[r * rb:(r + 1) * rb]
        f = filters[r % len(filters)]
        left = lambda i: line[i - bpp] if i >= bpp else 0                    # noqa: E731
        upleft = lambda i: prev[i - bpp] if i >= bpp else 0                  # noqa: E731
        pred = [0, lambda i: left(i), lambda i: prev[i], lambda i: (left(i) + prev[i]) // 2,
                lambda i: _paeth(left(i), prev[i], upleft(i))][f]
        out.append(f)
        out.extend((line[i] - (pred(i) if f else 0)) % 256 for i in range(rb))
        prev = line
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bd, colour, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(bytes(out))) + _chunk(b"IEND", b""))


@pytest.mark.parametrize("dtype,channels", [(np.uint16, 3), (np.uint8, 1), (np.uint16, 4), (np.uint8, 2)])
@pytest.mark.parametrize("filters,fast", [((0,), True), ((1,), True), ((2,), True), ((1, 2, 0, 2, 2), True),
                                          ((3,), False), ((4, 1), False)])
def test_png_fast_path_matches_pypng_and_declines_what_it_does_not_decode(tmp_path, dtype, channels, filters, fast):
    rng = np.random.default_rng(3)
    arr = rng.integers(0, np.iinfo(dtype).max + 1, size=(9, 7, channels)).astype(dtype)
    path = tmp_path / "a.png"
    path.write_bytes(_encode(arr, filters))
    w, h, rows, info = png.Reader(filename=str(path)).asDirect()         # the reference decoder
    ref = np.vstack([np.asarray(r) for r in rows]).reshape(h, w, channels).astype(dtype)
    got = read_png_fast(path)
    assert (got is not None) == fast
    arr_read, bitdepth = read_array(path)                                # either path
    expect = ref[..., 0] if channels == 1 else ref
    np.testing.assert_array_equal(arr_read, expect)
    assert arr_read.dtype == dtype and bitdepth == (16 if dtype == np.uint16 else 8)
    if fast:
        np.testing.assert_array_equal(got[0], expect)


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
