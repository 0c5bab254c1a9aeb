"""The numpy mesh rasterizer and the real-mesh scene generator (fnin_cli.data)."""

import os
from pathlib import Path

import numpy as np
import pytest

from fnin_cli.data.mesh_scenes import (TRAIN_MESHES, VALIDATION_MESHES, MeshScene, bench_scenes,
                                       load_meshes, make_mesh_scene, split_names)
from fnin_cli.data.render import render
from fnin_cli.errors import FninError

MESH_DIR = Path(__file__).resolve().parents[1].parent / "shared/data/meshes"


def _need_meshes():
    if not (MESH_DIR / "koala.npz").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"mesh data missing at {MESH_DIR} (CI is set)")
        pytest.skip(f"mesh data not found at {MESH_DIR}")


def icosphere(level=5):
    """Unit icosphere, counter-clockwise = outward."""
    t = (1 + 5 ** 0.5) / 2
    V = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t),
         (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    F = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    V = np.array(V, float)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    F = np.array(F)
    for _ in range(level):
        e = np.sort(np.concatenate([F[:, [0, 1]], F[:, [1, 2]], F[:, [2, 0]]]), axis=1)
        uniq, inv = np.unique(e, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        mid = V[uniq[:, 0]] + V[uniq[:, 1]]
        mid /= np.linalg.norm(mid, axis=1, keepdims=True)
        m = len(V) + inv.reshape(3, -1).T          # midpoints of edges 01, 12, 20
        V = np.concatenate([V, mid])
        a, b, c = F.T
        F = np.concatenate([np.stack([a, m[:, 0], m[:, 2]], 1), np.stack([b, m[:, 1], m[:, 0]], 1),
                            np.stack([c, m[:, 2], m[:, 1]], 1), m])
    return V, F


def _angle_deg(a, b):
    return np.degrees(np.arccos(np.clip(np.sum(a * b, -1), -1, 1)))


def _sphere_truth(ray, c, R):
    """Analytic first hit of rays X = t * ray with the sphere (|X - c| = R)."""
    dd = np.sum(ray * ray, -1)
    dc = ray @ c
    disc = dc ** 2 - dd * (c @ c - R * R)
    t = (dc - np.sqrt(np.maximum(disc, 0))) / dd
    return t, disc / (dd * R * R)   # second value ~ cos^2 of the incidence angle


def test_sphere_perspective():
    V, F = icosphere(5)
    H = W = 96
    K = np.array([[150.0, 0, 47.3], [0, 150.0, 48.1], [0, 0, 1]])
    c, R = np.array([0.1, -0.05, 3.0]), 1.0
    r = render(V * R + c, F, (H, W), K=K)
    v, u = np.mgrid[0:H, 0:W].astype(float)
    ray = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1)
    t, cos2 = _sphere_truth(ray, c, R)
    inner = cos2 > 0.1                           # away from the silhouette
    assert r.mask[inner].all()
    assert not r.mask[cos2 < -0.05].any()        # nothing outside the silhouette
    assert np.nanmax(np.abs(r.depth[inner] - t[inner]) / t[inner]) < 1e-3
    # tessellation: inscribed triangles lie at most ~R(1-cos(edge/2)) inside the sphere
    assert np.all(r.depth[inner] >= t[inner] - 1e-9)
    n_true = (t[..., None] * ray - c) / R
    ang = _angle_deg(r.normals[inner].astype(float), n_true[inner])
    assert ang.max() < 1.0
    n = r.normals[r.mask].astype(float)
    assert np.allclose(np.linalg.norm(n, axis=-1), 1, atol=1e-5)
    assert np.all(np.sum(n * ray[r.mask], -1) < 0)
    assert r.normals.dtype == np.float32 and r.depth.dtype == np.float64
    assert np.isnan(r.depth[~r.mask]).all() and np.isnan(r.normals[~r.mask]).all()
    assert (r.object_id[r.mask] == 0).all() and (r.object_id[~r.mask] == -1).all()


def test_sphere_orthographic():
    V, F = icosphere(5)
    H, W, s = 80, 90, 0.5
    c, R = np.array([22.3, 19.7, 100.0]), 15.0
    r = render(V * R + c, F, (H, W), pixel_size=s)
    v, u = np.mgrid[0:H, 0:W].astype(float)
    d2 = (u * s - c[0]) ** 2 + (v * s - c[1]) ** 2
    inner = d2 < (0.95 * R) ** 2
    zt = c[2] - np.sqrt(np.maximum(R * R - d2, 0))
    assert r.mask[inner].all() and not r.mask[d2 > (1.01 * R) ** 2].any()
    assert np.max(np.abs(r.depth[inner] - zt[inner])) < 1e-3 * c[2]
    n_true = np.stack([u * s - c[0], v * s - c[1], zt - c[2]], -1) / R
    assert _angle_deg(r.normals[inner].astype(float), n_true[inner]).max() < 1.0
    assert np.all(r.normals[r.mask][:, 2] < 0)


@pytest.mark.parametrize("persp", [True, False])
def test_tilted_plane_exact(persp):
    H, W = 40, 50
    # plane z = 5 + 0.2 x - 0.1 y over a square bigger than the view
    a, b, z0 = 0.2, -0.1, 5.0
    xy = np.array([[-10, -10], [10, -10], [10, 10], [-10, 10]], float)
    if not persp:
        xy = xy * 10 + 25
    V = np.column_stack([xy, z0 + a * xy[:, 0] + b * xy[:, 1]])
    F = np.array([[0, 2, 1], [0, 3, 2]])   # counter-clockwise seen from the camera (y down)
    K = np.array([[60.0, 0, 24.5], [0, 55.0, 19.5], [0, 0, 1]]) if persp else None
    r = render(V, F, (H, W), K=K, smooth=False)
    assert r.mask.all()
    v, u = np.mgrid[0:H, 0:W].astype(float)
    n = np.array([a, b, -1.0]) / np.linalg.norm([a, b, -1.0])
    if persp:
        dx, dy = (u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1]
        zt = z0 / (1 - a * dx - b * dy)
    else:
        zt = z0 + a * u + b * v
    assert np.max(np.abs(r.depth - zt) / zt) < 1e-9
    assert np.max(np.abs(r.normals - n)) < 1e-6
    # flipped winding: the plane is seen from behind and dropped
    r2 = render(V, F[:, ::-1], (H, W), K=K)
    assert not r2.mask.any()


def test_zbuffer_and_object_ids():
    def square(x0, x1, y0, y1, z):
        return (np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]], float),
                np.array([[0, 2, 1], [0, 3, 2]]))
    K = np.array([[50.0, 0, 31.5], [0, 50.0, 31.5], [0, 0, 1]])
    big = square(-8, 8, -8, 8, 10.0)
    small = square(-0.5, 0.5, -0.5, 0.5, 5.0)
    for order in ([big, small], [small, big]):
        ids = [7, 3] if order[0] is big else [3, 7]
        r = render([m[0] for m in order], [m[1] for m in order], (64, 64), K=K, object_ids=ids)
        assert r.mask.all()
        assert r.object_id[31, 31] == 3 and r.depth[31, 31] == pytest.approx(5.0, rel=1e-12)
        assert r.object_id[2, 2] == 7 and r.depth[2, 2] == pytest.approx(10.0, rel=1e-12)
        # the small square covers |u - 31.5| <= 5 pixels
        assert (r.object_id == 3).sum() == 100
    # a merged mesh with per-face ids
    V = np.concatenate([big[0], small[0]])
    F = np.concatenate([big[1], small[1] + 4])
    r = render(V, F, (64, 64), K=K, object_ids=[0, 0, 1, 1])
    assert r.object_id[31, 31] == 1 and r.object_id[0, 0] == 0


def _sphere_meshes():
    return {"ball": icosphere(4)}


def test_scene_from_sphere_is_consistent():
    sc = make_mesh_scene(4, _sphere_meshes(), 96, 80, ortho_prob=0.0, noise=False,
                         max_objects=1, holes=False)
    assert sc.K is not None and sc.mask.shape == (96, 80)
    z, K = sc.depth, sc.K
    v, u = np.mgrid[0:96, 0:80].astype(float)
    X = z[..., None] * np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1)
    Xu = (X[1:-1, 2:] - X[1:-1, :-2])
    Xv = (X[2:, 1:-1] - X[:-2, 1:-1])
    n = np.cross(Xv, Xu)    # OpenCV frame: (dX/dv) x (dX/du) faces the camera
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    m = sc.mask
    inner = m[1:-1, 1:-1] & m[2:, 1:-1] & m[:-2, 1:-1] & m[1:-1, 2:] & m[1:-1, :-2]
    ang = _angle_deg(n[inner], sc.clean_normals[1:-1, 1:-1][inner].astype(float))
    assert inner.sum() > 200
    assert np.median(ang) < 2.0 and np.percentile(ang, 90) < 5.0
    assert np.array_equal(sc.normals[m], sc.clean_normals[m])     # noise=False


def test_scene_fields_and_determinism():
    meshes = _sphere_meshes()
    for seed in range(6):
        a = make_mesh_scene(seed, meshes, 48, 64)
        b = make_mesh_scene(seed, meshes, 48, 64)
        _check_scene(a, (48, 64))
        for f in ("normals", "mask", "depth", "clean_normals", "object_id"):
            assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=f not in ("mask", "object_id"))
        assert (a.K is None) == (b.K is None)
        if a.K is not None:
            assert np.array_equal(a.K, b.K)
    c = make_mesh_scene(1, meshes, 48, 64)
    d = make_mesh_scene(2, meshes, 48, 64)
    assert not np.array_equal(c.mask, d.mask)


def _check_scene(sc, shape):
    assert isinstance(sc, MeshScene)
    H, W = shape
    assert sc.normals.shape == (H, W, 3) and sc.normals.dtype == np.float32
    assert sc.clean_normals.shape == (H, W, 3) and sc.clean_normals.dtype == np.float32
    assert sc.mask.shape == (H, W) and sc.mask.dtype == bool
    assert sc.depth.shape == (H, W) and sc.depth.dtype == np.float64
    assert sc.object_id.shape == (H, W) and np.issubdtype(sc.object_id.dtype, np.integer)
    assert sc.K is None or (sc.K.shape == (3, 3) and sc.K.dtype == np.float64)
    m = sc.mask
    assert m.sum() >= 64
    assert np.isfinite(sc.depth[m]).all() and np.isnan(sc.depth[~m]).all()
    assert (sc.depth[m] > 0).all()
    assert np.isnan(sc.normals[~m]).all() and (sc.object_id[~m] == -1).all()
    assert (sc.object_id[m] >= 0).all()
    v, u = np.mgrid[0:H, 0:W].astype(float)
    if sc.K is not None:
        ray = np.stack([(u - sc.K[0, 2]) / sc.K[0, 0], (v - sc.K[1, 2]) / sc.K[1, 1], np.ones_like(u)], -1)
    else:
        ray = np.broadcast_to([0.0, 0.0, 1.0], (H, W, 3))
    for n in (sc.normals, sc.clean_normals):
        nm = n[m].astype(float)
        assert np.allclose(np.linalg.norm(nm, axis=-1), 1, atol=1e-5)
        assert np.all(np.sum(nm * ray[m], -1) < 0)
    np.testing.assert_allclose(sc.unknown[m], np.log(sc.depth[m]) if sc.K is not None else sc.depth[m])


def test_split_and_load_errors(tmp_path):
    assert len(set(TRAIN_MESHES) | set(VALIDATION_MESHES)) == 24
    assert not set(TRAIN_MESHES) & set(VALIDATION_MESHES)
    tr, va = split_names(list(TRAIN_MESHES) + list(VALIDATION_MESHES))
    assert set(va) == set(VALIDATION_MESHES)
    foreign = [f"obj{i}" for i in range(200)]
    tr, va = split_names(foreign)
    assert 0.1 < len(va) / 200 < 0.3 and split_names(foreign) == (tr, va)
    with pytest.raises(FninError):
        load_meshes(tmp_path / "missing")
    with pytest.raises(FninError):
        load_meshes(tmp_path)
    V, F = icosphere(1)
    np.savez(tmp_path / "ball.npz", vertices=V.astype(np.float32), faces=F.astype(np.int32))
    m = load_meshes(tmp_path)
    assert list(m) == ["ball"] and m["ball"][0].dtype == np.float64 and m["ball"][1].shape == F.shape


def test_real_meshes_scenes():
    _need_meshes()
    meshes = load_meshes(MESH_DIR)
    assert set(meshes) == set(TRAIN_MESHES) | set(VALIDATION_MESHES)
    train = {n: meshes[n] for n in TRAIN_MESHES}
    kinds = set()
    for seed in range(5):
        sc = make_mesh_scene(seed, train, 64, 80, ortho_prob=0.5)
        _check_scene(sc, (64, 80))
        kinds.add(sc.K is None)
    assert kinds == {True, False}


def test_bench_scenes():
    _need_meshes()
    cases = bench_scenes(MESH_DIR)
    assert len(cases) == 14 and len({c[0] for c in cases}) == 14
    shapes = [c[1].mask.shape for c in cases]
    assert shapes.count((512, 612)) == 12 and shapes.count((1536, 2048)) == 2
    assert sum(c[1].K is None for c in cases) == 4
    assert sum(len(np.unique(c[1].object_id[c[1].mask])) == 2 for c in cases) == 4
    for name, sc, px in cases:
        assert any(n in name for n in VALIDATION_MESHES)
        m = sc.mask
        assert m.mean() > 0.05
        assert np.array_equal(sc.normals[m], sc.clean_normals[m])
        assert 800 < np.nanmin(sc.depth) and np.nanmax(sc.depth) < 2500     # mm
        if sc.K is None:
            assert 0.01 < px < 2.0
        else:
            assert px == 1.0
