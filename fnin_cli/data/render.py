"""A z-buffer triangle rasterizer in pure numpy (depth, normals, mask, object ids).

Conventions (docs/methods.md#conventions): camera frame = OpenCV (x right = columns, y down = rows, z forward);
pixel centres at integer (u, v) = (column, row).  Perspective: a pixel's ray is
d = K^-1 (u, v, 1) = ((u - cx)/fx, (v - cy)/fy, 1) and a point is X = z d.
Orthographic (``K=None``): X = (u s, v s, z) with pixel size ``s``.

Vertices are given in camera coordinates.  Triangles wind counter-clockwise around
their outward normal (n = (p1 - p0) x (p2 - p0)), as in ``shared/data/meshes``.

Algorithm (vectorised, no per-triangle Python loop):

1. project the vertices; each triangle's bounding box of integer pixel centres is
   enumerated with ``np.repeat`` (triangles are processed in chunks of about a million
   candidate pixels);
2. screen-space barycentrics decide coverage (inclusive edges with a 1e-9 tolerance,
   so shared edges leave no cracks);
3. depth is the exact intersection of the pixel's ray with the triangle's plane
   (1/z is affine in (u, v) for a pinhole camera, z is affine for orthographic);
4. the nearest candidate per pixel wins (``np.minimum.at`` into the z-buffer);
5. one final pass per covered pixel recomputes depth and the perspective-correct
   barycentrics (b_i / z_i, renormalised) of the winning triangle and interpolates the
   area-weighted vertex normals (``smooth=True``) or takes the face normal.

Normals face the camera: pixels whose winning triangle's face normal n satisfies
n . r >= -grazing (r the unit ray; back faces seen through open meshes and edge-on
faces) are dropped from the mask; an interpolated normal that faces away
(n_s . r >= -grazing, near silhouettes) is replaced by the face normal.
Triangles with a vertex at z <= 0 (perspective) are skipped (there is no near-plane
clipping).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FninError

CHUNK = 1 << 20        # candidate pixels per chunk (about 10 float64 arrays of this size)
_TOL = 1e-9            # barycentric edge tolerance


@dataclass
class Render:
    depth: np.ndarray       # (H, W) float64 z along the optical axis, NaN on background
    normals: np.ndarray     # (H, W, 3) float32 unit, camera-facing, NaN on background
    mask: np.ndarray        # (H, W) bool
    object_id: np.ndarray   # (H, W) int64, -1 on background
    face: np.ndarray        # (H, W) int64 index of the visible face (merged mesh), -1 on background


def _merge(vertices, faces, object_ids):
    if isinstance(vertices, np.ndarray) and vertices.ndim == 2:
        V = np.asarray(vertices, np.float64)
        F = np.asarray(faces, np.int64)
        if object_ids is None:
            oid = np.zeros(len(F), np.int64)
        else:
            oid = np.asarray(object_ids, np.int64).reshape(-1)
            if oid.shape != (len(F),):
                raise FninError(f"object_ids must have one entry per face ({len(F)}), got {oid.shape}")
        return V, F, oid
    vs, fs, ids, off = [], [], [], 0
    if len(vertices) != len(faces):
        raise FninError("vertices and faces lists must have the same length")
    for i, (v, f) in enumerate(zip(vertices, faces)):
        v = np.asarray(v, np.float64)
        f = np.asarray(f, np.int64)
        vs.append(v)
        fs.append(f + off)
        ids.append(np.full(len(f), i if object_ids is None else int(object_ids[i]), np.int64))
        off += len(v)
    if not vs:
        return np.zeros((0, 3)), np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    return np.concatenate(vs), np.concatenate(fs), np.concatenate(ids)


def vertex_normals(V: np.ndarray, F: np.ndarray) -> np.ndarray:
    """Area-weighted vertex normals (sum of the incident faces' cross products), unit."""
    fn = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    vn = np.zeros_like(V)
    for k in range(3):
        vn[:, k] = np.bincount(F.ravel(), weights=np.repeat(fn[:, k], 3), minlength=len(V))
    nrm = np.linalg.norm(vn, axis=1, keepdims=True)
    return vn / np.where(nrm > 0, nrm, 1.0)


def render(vertices, faces, shape, K=None, pixel_size: float = 1.0, object_ids=None,
           smooth: bool = True, grazing: float = 1e-3) -> Render:
    """Rasterize triangle meshes given in camera coordinates.

    ``vertices``/``faces``: one mesh ((V,3), (F,3)) or lists of meshes (object id =
    list index unless ``object_ids`` gives one id per mesh); for a single merged mesh
    ``object_ids`` may give one id per face.  ``shape`` = (H, W).  ``K`` = 3x3 pinhole
    matrix, or None for orthographic with ``pixel_size``.
    """
    H, W = int(shape[0]), int(shape[1])
    V, F, oid = _merge(vertices, faces, object_ids)
    if len(F) and (F.min() < 0 or F.max() >= len(V)):
        raise FninError("face indices out of range")
    persp = K is not None
    if persp:
        K = np.asarray(K, np.float64)
        fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    else:
        s = float(pixel_size)
        if not s > 0:
            raise FninError(f"pixel size must be positive, got {pixel_size}")

    # --- per-vertex projection -------------------------------------------------------
    if persp:
        zv = V[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            pu = fx * V[:, 0] / zv + cx
            pv = fy * V[:, 1] / zv + cy
    else:
        pu, pv = V[:, 0] / s, V[:, 1] / s

    zbuf = np.full(H * W, np.inf)
    fbuf = np.full(H * W, -1, np.int64)

    if len(F):
        keep = np.ones(len(F), bool)
        if persp:
            keep &= (zv[F] > 0).all(axis=1)
        u0, u1, u2 = pu[F[:, 0]], pu[F[:, 1]], pu[F[:, 2]]
        v0, v1, v2 = pv[F[:, 0]], pv[F[:, 1]], pv[F[:, 2]]
        au, av, bu, bv = u1 - u0, v1 - v0, u2 - u0, v2 - v0
        det = au * bv - av * bu
        keep &= np.isfinite(det) & (np.abs(det) > 1e-12)
        umin = np.ceil(np.minimum(np.minimum(u0, u1), u2))
        umax = np.floor(np.maximum(np.maximum(u0, u1), u2))
        vmin = np.ceil(np.minimum(np.minimum(v0, v1), v2))
        vmax = np.floor(np.maximum(np.maximum(v0, v1), v2))
        with np.errstate(invalid="ignore"):
            keep &= (umax >= 0) & (vmax >= 0) & (umin <= W - 1) & (vmin <= H - 1)
        fsel = np.nonzero(keep)[0]
        umin = np.clip(umin[fsel], 0, W - 1).astype(np.int64)
        umax = np.clip(umax[fsel], 0, W - 1).astype(np.int64)
        vmin = np.clip(vmin[fsel], 0, H - 1).astype(np.int64)
        vmax = np.clip(vmax[fsel], 0, H - 1).astype(np.int64)
        bw = umax - umin + 1
        bh = vmax - vmin + 1
        ok = (bw > 0) & (bh > 0)
        fsel, umin, vmin, bw, bh = fsel[ok], umin[ok], vmin[ok], bw[ok], bh[ok]
        # barycentrics b1, b2 as affine functions of (du, dv) from the box origin
        d = det[fsel]
        au, av, bu, bv = au[fsel], av[fsel], bu[fsel], bv[fsel]
        ou, ov = umin - u0[fsel], vmin - v0[fsel]
        b1u, b1v = bv / d, -bu / d
        b2u, b2v = -av / d, au / d
        b10 = b1u * ou + b1v * ov
        b20 = b2u * ou + b2v * ov
        zc = _depth_coeffs(V, F[fsel], K if persp else None, None if persp else s)
        # depth (or 1/depth) affine in (du, dv) from the box origin
        z0 = zc[0] * umin + zc[1] * vmin + zc[2]
        n_cand = bw * bh
        cum = np.cumsum(n_cand)
        start = 0
        while start < len(fsel):
            base = cum[start - 1] if start else 0
            stop = int(np.searchsorted(cum, base + CHUNK, side="right"))
            stop = max(stop, start + 1)
            sl = slice(start, stop)
            _raster_chunk(sl, n_cand, bw, umin, vmin, b10, b1u, b1v, b20, b2u, b2v,
                          z0, zc, persp, fsel, W, zbuf, fbuf)
            start = stop

    # --- final per-pixel shading -----------------------------------------------------
    pix = np.nonzero(fbuf >= 0)[0]
    fid = fbuf[pix]
    pv_, pu_ = np.divmod(pix, W)
    pu_ = pu_.astype(np.float64)
    pv_ = pv_.astype(np.float64)
    Ff = F[fid]
    P0, P1, P2 = V[Ff[:, 0]], V[Ff[:, 1]], V[Ff[:, 2]]
    fn = np.cross(P1 - P0, P2 - P0)
    fn /= np.linalg.norm(fn, axis=1, keepdims=True)
    if persp:
        ray = np.stack([(pu_ - cx) / fx, (pv_ - cy) / fy, np.ones_like(pu_)], axis=1)
        # exact ray-plane intersection: z = (n . P0) / (n . d)
        z = np.einsum("ij,ij->i", fn, P0) / np.einsum("ij,ij->i", fn, ray)
        rhat = ray / np.linalg.norm(ray, axis=1, keepdims=True)
        X = z[:, None] * ray
    else:
        X = np.stack([pu_ * s, pv_ * s, np.zeros_like(pu_)], axis=1)
        z = (np.einsum("ij,ij->i", fn, P0) - fn[:, 0] * X[:, 0] - fn[:, 1] * X[:, 1]) / fn[:, 2]
        X[:, 2] = z
        rhat = np.broadcast_to(np.array([0.0, 0.0, 1.0]), X.shape)
    fdot = np.einsum("ij,ij->i", fn, rhat)
    front = (fdot < -grazing) & np.isfinite(z) & (z > 0)
    nrm = fn
    if smooth:
        # barycentrics of the 3D hit point (= perspective-correct interpolation weights)
        e1, e2, e0 = P1 - P0, P2 - P0, X - P0
        d11 = np.einsum("ij,ij->i", e1, e1)
        d12 = np.einsum("ij,ij->i", e1, e2)
        d22 = np.einsum("ij,ij->i", e2, e2)
        d01 = np.einsum("ij,ij->i", e0, e1)
        d02 = np.einsum("ij,ij->i", e0, e2)
        den = d11 * d22 - d12 * d12
        l1 = (d22 * d01 - d12 * d02) / den
        l2 = (d11 * d02 - d12 * d01) / den
        lam = np.clip(np.stack([1 - l1 - l2, l1, l2], axis=1), 0.0, 1.0)
        vn = vertex_normals(V, F)
        ns = np.einsum("ik,ikj->ij", lam, vn[Ff])
        nn = np.linalg.norm(ns, axis=1, keepdims=True)
        ns = ns / np.where(nn > 0, nn, 1.0)
        bad = (nn[:, 0] < 1e-6) | (np.einsum("ij,ij->i", ns, rhat) >= -grazing)
        nrm = np.where(bad[:, None], fn, ns)

    pix, fid, z, nrm = pix[front], fid[front], z[front], nrm[front]
    depth = np.full(H * W, np.nan)
    depth[pix] = z
    normals = np.full((H * W, 3), np.nan, np.float32)
    normals[pix] = nrm
    face = np.full(H * W, -1, np.int64)
    face[pix] = fid
    obj = np.full(H * W, -1, np.int64)
    obj[pix] = oid[fid]
    mask = face >= 0
    return Render(depth.reshape(H, W), normals.reshape(H, W, 3), mask.reshape(H, W),
                  obj.reshape(H, W), face.reshape(H, W))


def _depth_coeffs(V, Fs, K, s):
    """(A, B, C) per face with 1/z = A u + B v + C (perspective) or z = A u + B v + C."""
    P0 = V[Fs[:, 0]]
    fn = np.cross(V[Fs[:, 1]] - P0, V[Fs[:, 2]] - P0)
    c = np.einsum("ij,ij->i", fn, P0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if K is not None:
            fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
            A = fn[:, 0] / fx / c
            B = fn[:, 1] / fy / c
            C = (fn[:, 2] - fn[:, 0] * cx / fx - fn[:, 1] * cy / fy) / c
        else:
            A = -fn[:, 0] * s / fn[:, 2]
            B = -fn[:, 1] * s / fn[:, 2]
            C = c / fn[:, 2]
    return A, B, C


def _raster_chunk(sl, n_cand, bw, umin, vmin, b10, b1u, b1v, b20, b2u, b2v, z0, zc, persp,
                  fsel, W, zbuf, fbuf):
    n = n_cand[sl]
    total = int(n.sum())
    local = np.arange(total, dtype=np.int64)
    offs = np.cumsum(n) - n
    local -= np.repeat(offs, n)
    bwr = np.repeat(bw[sl], n)
    dv, du = np.divmod(local, bwr)
    del local
    duf = du.astype(np.float64)
    dvf = dv.astype(np.float64)
    b1 = np.repeat(b10[sl], n) + np.repeat(b1u[sl], n) * duf + np.repeat(b1v[sl], n) * dvf
    b2 = np.repeat(b20[sl], n) + np.repeat(b2u[sl], n) * duf + np.repeat(b2v[sl], n) * dvf
    inside = (b1 >= -_TOL) & (b2 >= -_TOL) & (b1 + b2 <= 1 + _TOL)
    del b1, b2
    idx = np.nonzero(inside)[0]
    if not len(idx):
        return
    tri = np.repeat(np.arange(sl.start, sl.stop), n)[idx]
    duf, dvf = duf[idx], dvf[idx]
    zz = z0[tri] + zc[0][tri] * duf + zc[1][tri] * dvf
    if persp:
        with np.errstate(divide="ignore"):
            zz = np.where(zz > 0, 1.0 / zz, np.inf)
    pix = (vmin[tri] + dv[idx]) * W + umin[tri] + du[idx]
    good = (zz > 0) & (zz < zbuf[pix])
    pix, zz, tri = pix[good], zz[good], tri[good]
    if not len(pix):
        return
    np.minimum.at(zbuf, pix, zz)
    win = zz <= zbuf[pix]
    fbuf[pix[win]] = fsel[tri[win]]
