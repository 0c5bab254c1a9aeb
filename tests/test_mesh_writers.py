"""PLY/OBJ writers: the bytes trimesh writes, chunk by chunk, and the exact %.8f / %d text."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from fnin_cli import mesh as mesh_mod
from fnin_cli.io.numtext import format_rows


def _mesh(rng, nv, nf, colors):
    V = rng.normal(size=(nv, 3)) * rng.choice([1e-9, 1.0, 1e4, 1e9], size=(nv, 3))
    if nv:
        V[0, 0], V[-1, 1], V[-1, 2] = -0.0, 0.001953125, -1e-12    # negative zero, an exact tie, -0.00000000
    F = rng.integers(0, max(nv, 1), (nf, 3))
    C = rng.integers(0, 256, (nv, 4)).astype(np.uint8) if colors else None
    return V, F, C


@pytest.mark.parametrize("nv,nf", [(5, 2), (7, 6), (6, 0), (0, 0), (9, 9)])
@pytest.mark.parametrize("colors", [False, True])
def test_obj_and_ply_bytes_equal_trimesh_across_chunks(tmp_path, monkeypatch, nv, nf, colors):
    monkeypatch.setattr(mesh_mod, "WRITE_CHUNK", 3)              # several chunks, one ending exactly
    V, F, C = _mesh(np.random.default_rng(nv * 10 + nf), nv, nf, colors)
    tm = trimesh.Trimesh(vertices=V, faces=F, vertex_colors=C, process=False)
    mesh_mod.write_obj(tmp_path / "a.obj", V, F, C)
    assert (tmp_path / "a.obj").read_text() == tm.export(file_type="obj", include_normals=False,
                                                           include_texture=False)
    if nv:
        mesh_mod.write_ply(tmp_path / "a.ply", V, F, C)
        assert (tmp_path / "a.ply").read_bytes() == tm.export(file_type="ply", encoding="binary")


@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e3, 1e6, 1e8, 1e10])
def test_fixed_point_text_is_pythons(scale):
    rng = np.random.default_rng(int(np.log10(scale)) + 7)
    x = rng.normal(size=(20000, 3)) * scale
    x[::7] = np.round(x[::7] * 2**9) / 2**9                     # exact ties (dyadic)
    x[::11] = np.round(x[::11] * 1e8) / 1e8 + 0.5e-8            # near ties
    x[0] = [0.0, -0.0, np.float64(2.0**-9)]
    got = format_rows(b"v ", [x, np.abs(x[:, :1])], ["f8", "f8"]).decode()
    assert got == "".join("v %.8f %.8f %.8f %.8f\n" % (a, b, c, abs(a)) for a, b, c in x.tolist())


def test_integer_text_is_pythons():
    q = np.random.default_rng(0).integers(-10**15, 10**15, (5000, 3))
    q[0] = [0, -1, 10]
    assert format_rows(b"f ", [q], ["d"]).decode() == "".join("f %d %d %d\n" % tuple(r) for r in q.tolist())
