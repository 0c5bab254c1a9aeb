"""PLY/OBJ/STL/GLB writers: what trimesh writes, chunk by chunk, and the exact %.8f / %d text."""

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


_STL = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attributes", "<u2")])


@pytest.mark.parametrize("nf", [0, 1, 7, 9])
def test_stl_equals_trimesh_across_chunks(tmp_path, monkeypatch, nf):
    """The header and count bytes, every corner and attribute, and every normal as a number
    (a zero's sign may differ) are trimesh's; a degenerate triangle gets a zero normal."""
    monkeypatch.setattr(mesh_mod, "WRITE_CHUNK", 3)
    V, F, _ = _mesh(np.random.default_rng(nf + 100), 8, nf, False)
    if nf > 1:
        F[0] = [2, 2, 5]                                          # degenerate: two corners the same
    mesh_mod.write_stl(tmp_path / "a.stl", V, F)
    ours = (tmp_path / "a.stl").read_bytes()
    theirs = trimesh.Trimesh(vertices=V, faces=F, process=False).export(file_type="stl")
    assert len(ours) == len(theirs) == 84 + 50 * nf and ours[:84] == theirs[:84]
    a, b = np.frombuffer(ours, _STL, offset=84), np.frombuffer(theirs, _STL, offset=84)
    np.testing.assert_array_equal(a["corners"], b["corners"])
    np.testing.assert_array_equal(a["attributes"], b["attributes"])
    np.testing.assert_array_equal(a["normal"], b["normal"])
    if nf > 1:
        assert not a["normal"][0].any()
        length = np.linalg.norm(a["normal"].astype(np.float64), axis=1)
        distinct = (F[:, 0] != F[:, 1]) & (F[:, 1] != F[:, 2]) & (F[:, 0] != F[:, 2])
        assert distinct.any()
        np.testing.assert_allclose(length[distinct], 1.0, rtol=1e-6)


@pytest.mark.parametrize("nv,nf,colors", [(9, 9, True), (8, 5, False), (6, 0, True), (0, 0, False)])
def test_glb_reads_back_as_trimeshs_export(tmp_path, monkeypatch, nv, nf, colors):
    """The GLB loads back (trimesh's reader) with the vertices, faces and colours that
    trimesh's own export of the same mesh in glTF's axes gives; its chunks are 4-byte
    aligned and its lengths add up; no faces: a point cloud; nothing: an empty scene."""
    import json
    import struct

    monkeypatch.setattr(mesh_mod, "WRITE_CHUNK", 4)
    V, F, C = _mesh(np.random.default_rng(nv + nf), nv, nf, colors)
    mesh_mod.write_glb(tmp_path / "a.glb", V, F, C)
    data = (tmp_path / "a.glb").read_bytes()
    magic, version, length = struct.unpack("<III", data[:12])
    jlen, jtype = struct.unpack("<II", data[12:20])
    assert (magic, version, length, jtype) == (0x46546C67, 2, len(data), 0x4E4F534A) and jlen % 4 == 0
    doc = json.loads(data[20:20 + jlen])
    assert doc["asset"]["version"] == "2.0" and all(v != [] for v in doc.values())
    ours = list(trimesh.load(tmp_path / "a.glb").geometry.values())
    if not nv:
        assert ours == [] and len(data) == 20 + jlen
        return
    blen, btype = struct.unpack("<II", data[20 + jlen:28 + jlen])
    assert btype == 0x004E4942 and blen == doc["buffers"][0]["byteLength"] == len(data) - 28 - jlen
    assert len(ours) == 1
    np.testing.assert_array_equal(ours[0].vertices, (V * [1, -1, -1]).astype(np.float32))
    if not nf:      # one vertex per pixel as in .ply and .obj (trimesh's export writes none)
        assert type(ours[0]).__name__ == "PointCloud"
        return
    tm = trimesh.Trimesh(vertices=V @ mesh_mod.GLTF_FROM_CAMERA.T, faces=F, vertex_colors=C, process=False)
    (tmp_path / "b.glb").write_bytes(tm.export(file_type="glb"))
    theirs = list(trimesh.load(tmp_path / "b.glb").geometry.values())
    np.testing.assert_array_equal(ours[0].vertices, theirs[0].vertices)
    np.testing.assert_array_equal(ours[0].faces, theirs[0].faces)
    np.testing.assert_array_equal(ours[0].faces, F)
    if colors:
        np.testing.assert_array_equal(ours[0].visual.vertex_colors, theirs[0].visual.vertex_colors)


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


# ------------------------------------------------------------------ mesh axes (issue 43)

def _tilted_plane():
    """A perspective 6x8 depth map of a plane nearer at the bottom-right, its camera."""
    from fnin_cli.camera import Camera

    K = np.array([[10.0, 0, 3.5], [0, 10.0, 2.5], [0, 0, 1]])
    v, u = np.mgrid[0:6, 0:8].astype(np.float64)
    depth = 2.0 - 0.05 * u - 0.03 * v
    return depth, Camera(K), np.ones(depth.shape, bool)


def _read(path):
    m = trimesh.load(path, force="mesh", process=False)
    return np.asarray(m.vertices), np.asarray(m.faces)


def test_mesh_axes_map_vertices_as_documented(tmp_path):
    """README "Outputs": PLY/OBJ/STL in the camera frame (x right, y down, z forward) by
    default; axes="opengl" (--mesh-axes opengl) gives (x, -y, -z): x right, y up, z toward
    the viewer, the axes of GLB (always). Pixel (row r, column c) with depth d sits at
    d ((c - cx) / fx, (r - cy) / fy, 1); faces face the camera in both."""
    depth, cam, mask = _tilted_plane()
    m = mesh_mod.mesh_arrays(depth, cam, mask)
    K = cam.K
    r, c = np.nonzero(mask)
    d = depth[r, c]
    camera_frame = np.stack([d * (c - K[0, 2]) / K[0, 0], d * (r - K[1, 2]) / K[1, 1], d], axis=1)
    np.testing.assert_allclose(m.vertices, camera_frame, rtol=1e-12)     # one vertex per pixel, row-major
    opengl = camera_frame * [1.0, -1.0, -1.0]
    for suffix in (".ply", ".obj", ".stl"):
        for axes, want in ((None, camera_frame), ("opencv", camera_frame), ("opengl", opengl)):
            path = mesh_mod.write_mesh(tmp_path / f"{axes}{suffix}", m, axes=axes)
            V, F = _read(path)
            if suffix == ".stl":        # STL: triangle corners, merged back by trimesh; compare as sets
                V = np.unique(np.round(V, 5), axis=0)
                want = np.unique(np.round(want, 5), axis=0)
            np.testing.assert_allclose(V, want, rtol=1e-6, atol=1e-6, err_msg=f"{suffix} {axes}")
            # the top-left pixel is above (opengl: larger y) and farther (opengl: smaller z) than the bottom-right
            if suffix != ".stl":
                top, bottom = V[0], V[-1]
                assert (top[1] < bottom[1]) == (axes != "opengl") and (top[2] > bottom[2]) == (axes != "opengl")
                # faces wound toward the camera at the origin: normal . vertex < 0
                n = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
                assert (np.einsum("ij,ij->i", n, V[F[:, 0]]) < 0).all(), (suffix, axes)
    for axes in (None, "opengl"):
        V, _ = _read(mesh_mod.write_mesh(tmp_path / f"{axes}.glb", m, axes=axes))
        np.testing.assert_allclose(V, opengl, rtol=1e-6)                 # glTF's axes, always
    with pytest.raises(mesh_mod.FninError, match="glTF fixes its axes"):
        mesh_mod.write_mesh(tmp_path / "x.glb", m, axes="opencv")
    with pytest.raises(mesh_mod.FninError, match="unknown mesh axes"):
        mesh_mod.write_mesh(tmp_path / "x.ply", m, axes="y-up")
    assert not (tmp_path / "x.glb").exists() and not (tmp_path / "x.ply").exists()


def test_mesh_axes_option_of_the_command_line(tmp_path):
    from helpers_cli import invoke, write_case

    c = write_case(tmp_path / "in", seed=2)
    base = ["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls"]
    assert invoke(base + ["-o", tmp_path / "cv.ply"]).exit_code == 0
    r = invoke(base + ["-o", tmp_path / "gl.ply", "--mesh-axes", "opengl"])
    assert r.exit_code == 0, r.stderr
    cv, gl = _read(tmp_path / "cv.ply")[0], _read(tmp_path / "gl.ply")[0]
    np.testing.assert_array_equal(gl, cv * [1.0, -1.0, -1.0])
    for args, message in (([tmp_path / "x.glb", "--mesh-axes", "opencv"], "glTF fixes its axes"),
                          ([tmp_path / "x.ply", "--mesh-axes", "up"], "unknown --mesh-axes 'up'")):
        r = invoke(base + ["-o", *args])
        assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not args[0].exists()
