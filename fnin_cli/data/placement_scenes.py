"""Scenes whose pieces the normals cannot place, with their truth, and the measures of
where an integrator put them (studies/placement-scenes: placing the pieces cut apart by jumps).

- :func:`vase_scene`: a body of revolution (a vase: a foot, a belly, a neck, a lip) in
  front of a flat wall that faces the camera, the whole image masked. The body is closed
  at both ends with a round cap, so its whole silhouette, foot included, is an occluding
  contour: its normals turn grazing there while the wall's face the camera, and the body
  stands in front of the wall across a gap in depth (it does not touch it).
  Orthographic or perspective.
- :func:`stripes_scene`: orthographic; the lower half a floor facing the camera, the
  upper half vertical stripes whose slope along the rows alternates +1 / -1 from stripe
  to stripe, each continuous with the floor at the fold: neighbouring stripes separate by
  steps that grow away from the floor.

Depth and normals are exact: the body is ray-cast (the nearest root of its implicit
equation along each pixel's ray, bisected to float64 precision) and its normals are the
gradient of that equation; the wall, floor and stripes are planes. Deterministic.

Measures, numpy only, independent of the result's unknown offset (orthographic) or scale
(perspective) where the question is one of order:

- :func:`in_front_share`: the share of the body's silhouette pixels that sit in front of
  (or level with) the wall pixels next to them, in the same result;
- :func:`fold_jumps`: per column of the fold, the jump across it against the truth's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..camera import Camera
from .analytic import normals_from_gradient, pixel_grid

# "level" at an occluding contour: within one pixel footprint of the wall. Across the
# silhouette's last pixel the front surface's depth changes by about a footprint or more
# (it is grazing), so the normals cannot order the two closer than that.
LEVEL_FOOTPRINTS = 1.0
# a fold column "jumps" when its step across the fold is off the truth's by more than
# this many units (pixel footprints: the stripes scene has pixel size 1): a stripe that
# no longer meets the floor
FOLD_JUMP_UNITS = 2.0
_BISECT = 60            # bisection steps: the bracket shrinks below float64 resolution
_SAMPLES = 256          # samples along each ray (0.15 units apart here) to bracket the nearest root


@dataclass
class PlacementScene:
    """A scene with its truth and the pixels the placement measures read."""

    name: str
    normals: np.ndarray          # (H, W, 3) float32 unit, OpenCV frame, facing the camera
    mask: np.ndarray             # (H, W) bool
    camera: Camera
    depth: np.ndarray            # (H, W) float64 true depth along the optical axis
    body: np.ndarray | None = None         # (H, W) bool: the occluding body (vase scene)
    silhouette: np.ndarray | None = None   # (H, W) bool: body pixels with a wall 4-neighbour
    fold_row: int | None = None            # the first row below the fold (stripes scene)
    stripe: np.ndarray | None = None       # (W,) int: each column's stripe index

    @property
    def K(self):
        """The 3x3 pinhole matrix, or None (orthographic)."""
        return self.camera.K

    @property
    def pixel_size(self) -> float:
        return self.camera.pixel_size

    @property
    def fold(self) -> np.ndarray | None:
        """(H, W) bool: the two rows either side of the fold (stripes scene), or None."""
        if self.fold_row is None:
            return None
        m = np.zeros(self.mask.shape, bool)
        m[self.fold_row - 1:self.fold_row + 1] = True
        return m


def vase_profile(eta, foot: float = 0.06, cap: int = 16):
    """The body's squared radius as a fraction of its height, and its derivative, at
    ``eta`` in [0, 1] from the lip (0) to the foot (1): (r^2, d r^2 / d eta).

    r = e(eta) p(eta): p gives the lip (eta 0.07), the neck (about 0.25), the belly
    (0.62) and the foot (0.93, its bulge ``foot``); e = sqrt(1 - (2 eta - 1)^cap)
    closes the body with a round cap at both ends (r ~ sqrt of the distance to the end;
    a larger even ``cap``, a flatter end), so that the normals turn grazing along the
    whole silhouette."""
    eta = np.asarray(eta, np.float64)
    bumps = ((0.17, 0.62, 0.18), (0.08, 0.07, 0.05), (foot, 0.93, 0.04))
    p, dp = np.full_like(eta, 0.10), np.zeros_like(eta)
    for a, c, w in bumps:
        g = a * np.exp(-((eta - c) / w) ** 2)
        p += g
        dp += -2 * (eta - c) / w ** 2 * g
    x = 2 * eta - 1
    e2, de2 = 1 - x ** cap, -2 * cap * x ** (cap - 1)
    return e2 * p * p, de2 * p * p + e2 * 2 * p * dp


def _rays(shape, camera: Camera):
    """Per pixel the ray's origin o and direction d (d_z = 1, so depth = o_z + t = t)."""
    u, v = pixel_grid(shape)
    if camera.perspective:
        Kinv = np.linalg.inv(camera.K)
        d = np.stack([u, v, np.ones_like(u)], -1) @ Kinv.T
        return np.zeros_like(d), d
    s = camera.pixel_size
    o = np.stack([s * u, s * v, np.zeros_like(u)], -1)
    return o, np.broadcast_to(np.array([0.0, 0.0, 1.0]), o.shape)


def _cast_body(o, d, axis, top, height, profile):
    """Depth t of each ray's nearest hit with the body (NaN: a miss) and the outward
    gradient of F = (X - x0)^2 + (Z - z0)^2 - height^2 r^2((Y - top) / height) there."""
    x0, z0 = axis
    rmax = height * np.sqrt(profile(np.linspace(0, 1, 2001))[0].max())

    def F(t, o=o, d=d):
        X = o + t[..., None] * d
        eta = (X[..., 1] - top) / height
        inside = (eta >= 0) & (eta <= 1)
        r2 = np.where(inside, height ** 2 * profile(np.clip(eta, 0, 1))[0], -1.0)
        return (X[..., 0] - x0) ** 2 + (X[..., 2] - z0) ** 2 - r2

    lo = np.full(o.shape[:-1], np.nan)
    hi = np.full(o.shape[:-1], np.nan)
    if not d[..., :2].any():
        # orthographic: the ray's X, Y are fixed, the hit is in closed form; bracket it
        t = np.full(o.shape[:-1], z0)
        F0 = F(t)
        t = z0 - np.sqrt(np.maximum(-F0, 0.0))
        hit = F0 < 0
        lo[hit], hi[hit] = t[hit] - 1e-6 * rmax, np.minimum(t[hit] + 1e-6 * rmax, z0)
    else:
        # only the rays that pass within the body's bounding cylinder can hit it
        near = _may_hit(o, d, axis, top, height, rmax)
        ts = np.linspace(z0 - rmax * 1.05, z0, _SAMPLES)
        on, dn = o[near], d[near]
        lon, hin = np.full(len(on), np.nan), np.full(len(on), np.nan)
        prev = F(np.full(len(on), ts[0]), on, dn)
        for a, b in zip(ts[:-1], ts[1:]):
            cur = F(np.full(len(on), b), on, dn)
            new = np.isnan(lon) & (prev > 0) & (cur <= 0)
            lon[new], hin[new] = a, b
            prev = cur
        lo[near], hi[near] = lon, hin
    hit = np.isfinite(lo)
    lo, hi = lo[hit], hi[hit]
    oh, dh = o[hit], d[hit]
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        out = F(mid, oh, dh) > 0
        lo, hi = np.where(out, mid, lo), np.where(out, hi, mid)
    t = 0.5 * (lo + hi)
    X = oh + t[:, None] * dh
    eta = np.clip((X[:, 1] - top) / height, 0, 1)
    grad = np.stack([2 * (X[:, 0] - x0), -height * profile(eta)[1], 2 * (X[:, 2] - z0)], -1)
    depth = np.full(o.shape[:-1], np.nan)
    depth[hit] = t
    g = np.full(o.shape, np.nan)
    g[hit] = grad
    return depth, g


def _may_hit(o, d, axis, top, height, rmax):
    """Rays whose points at depths [z0 - rmax, z0] pass within the body's box."""
    x0, z0 = axis
    lo_x = hi_x = lo_y = hi_y = None
    for t in (z0 - 1.05 * rmax, z0):
        X = o + t * d
        lo_x = X[..., 0] if lo_x is None else np.minimum(lo_x, X[..., 0])
        hi_x = X[..., 0] if hi_x is None else np.maximum(hi_x, X[..., 0])
        lo_y = X[..., 1] if lo_y is None else np.minimum(lo_y, X[..., 1])
        hi_y = X[..., 1] if hi_y is None else np.maximum(hi_y, X[..., 1])
    return (hi_x >= x0 - rmax) & (lo_x <= x0 + rmax) & (hi_y >= top) & (lo_y <= top + height)


def _silhouette(body: np.ndarray) -> np.ndarray:
    """Body pixels with a 4-neighbour off the body (inside the image)."""
    p = np.pad(body, 1, constant_values=True)
    off = ~p[:-2, 1:-1] | ~p[2:, 1:-1] | ~p[1:-1, :-2] | ~p[1:-1, 2:]
    return body & off


def vase_scene(kind: str = "ortho", shape=(168, 168), height: float = 0.84, gap: float = 1.25,
               focal: float = 1.5, foot: float = 0.06, cap: int = 16) -> PlacementScene:
    """A vase in front of a flat wall that faces the camera, the whole image masked.

    Parameters
    ----------
    kind : {"ortho", "persp"}
        Orthographic (pixel size 1) or pinhole (``focal`` x the image width, the
        principal point at the centre).
    shape : (int, int)
        (H, W).
    height : float
        The body's height on screen, as a fraction of H (at the axis's depth).
    gap : float
        The wall's distance behind the body's axis, in body radii (its belly's): above 1
        the body stands clear of the wall.
    focal : float
        Perspective only: the focal length in image widths.
    foot, cap : float, int
        The foot's bulge and the ends' flatness (:func:`vase_profile`).

    Returns
    -------
    PlacementScene
        ``body`` the vase's pixels, ``silhouette`` those next to the wall.
    """
    if kind not in ("ortho", "persp"):
        raise ValueError(f"kind must be 'ortho' or 'persp', got {kind!r}")
    h, w = int(shape[0]), int(shape[1])
    if kind == "persp":
        f = focal * w
        camera = Camera(np.array([[f, 0.0, (w - 1) / 2], [0.0, f, (h - 1) / 2], [0.0, 0.0, 1.0]]))
        z_axis = f          # the axis at depth f: one pixel footprint = one unit there
        top, x0 = -height * h / 2, 0.0
    else:
        camera = Camera(None, 1.0)
        z_axis = 200.0
        top, x0 = (h - 1) / 2 - height * h / 2, (w - 1) / 2
    H = height * h
    profile = partial(vase_profile, foot=foot, cap=cap)
    rmax = H * np.sqrt(profile(np.linspace(0, 1, 2001))[0].max())
    o, d = _rays((h, w), camera)
    depth, grad = _cast_body(o, d, (x0, z_axis), top, H, profile)
    body = np.isfinite(depth)
    wall = z_axis + gap * rmax
    depth = np.where(body, depth, wall)
    n = np.where(body[..., None], grad, np.array([0.0, 0.0, -1.0]))
    n = n / np.linalg.norm(n, axis=-1, keepdims=True)
    return PlacementScene(f"vase-{kind}", n.astype(np.float32), np.ones((h, w), bool), camera, depth,
                          body=body, silhouette=_silhouette(body))


def stripes_scene(shape=(128, 128), stripe: int = 8, floor: float = 100.0) -> PlacementScene:
    """Stripes meeting a floor at a fold, orthographic (pixel size 1), the whole image masked.

    Rows from ``H // 2`` down are a floor at depth ``floor`` facing the camera; the rows
    above are vertical stripes ``stripe`` pixels wide, stripe k with depth
    ``floor + s_k (v - H // 2)``, s_k = +1 for even k and -1 for odd: each meets the floor
    at the fold (between rows H // 2 - 1 and H // 2), and neighbouring stripes separate by
    steps of 2 (H // 2 - v) units.

    Returns
    -------
    PlacementScene
        ``fold_row`` = H // 2 (the floor's first row), ``stripe`` each column's index.
    """
    h, w = int(shape[0]), int(shape[1])
    camera = Camera(None, 1.0)
    u, v = pixel_grid((h, w))
    fold = h // 2
    k = (u // stripe).astype(np.int64)
    slope = np.where(k % 2 == 0, 1.0, -1.0)
    up = v < fold
    depth = np.where(up, floor + slope * (v - fold), floor)
    zv = np.where(up, slope, 0.0)
    n = normals_from_gradient(depth, np.zeros_like(depth), zv, camera)
    return PlacementScene("stripes", n.astype(np.float32), np.ones((h, w), bool), camera, depth,
                          fold_row=fold, stripe=k[0])


# ------------------------------------------------------------------ measures

def _to_truth(depth, scene: PlacementScene):
    """``depth`` aligned as the bench aligns it (median scale / offset to the truth)."""
    z = np.asarray(depth, np.float64)
    ok = scene.mask & np.isfinite(z)
    if scene.camera.perspective:
        return z * np.median(scene.depth[ok] / z[ok])
    return z + np.median(scene.depth[ok] - z[ok])


def in_front_share(depth, scene: PlacementScene) -> dict:
    """Where the body's silhouette sits against the wall next to it, in one result.

    Each silhouette pixel is compared with the mean depth of its wall 4-neighbours:
    behind by b = z_body - z_wall (orthographic), or b = z_wall (z_body / z_wall - 1)
    (perspective: a ratio, so the result's unknown scale does not enter). It is in front
    or level where b <= LEVEL_FOOTPRINTS pixel footprints at the wall (pixel size, or
    z_wall / f). The share does not depend on the result's offset or scale; the amounts
    are in the truth's units after the bench's median alignment.

    Returns
    -------
    dict
        ``share`` (in front or level), ``pixels`` (silhouette pixels measured),
        ``behind_median`` and ``behind_max`` (over the pixels behind; 0 if none).
    """
    z = _to_truth(depth, scene)
    sil, wall = scene.silhouette, scene.mask & ~scene.body
    zw = np.where(wall, z, 0.0)
    pad_z = np.pad(zw, 1)
    pad_w = np.pad(wall, 1).astype(np.float64)
    sums = pad_z[:-2, 1:-1] + pad_z[2:, 1:-1] + pad_z[1:-1, :-2] + pad_z[1:-1, 2:]
    cnt = pad_w[:-2, 1:-1] + pad_w[2:, 1:-1] + pad_w[1:-1, :-2] + pad_w[1:-1, 2:]
    at = sil & (cnt > 0) & np.isfinite(z)
    z_wall = sums[at] / cnt[at]
    if scene.camera.perspective:
        behind = z_wall * (z[at] / z_wall - 1)
        tol = LEVEL_FOOTPRINTS * z_wall / scene.camera.focal
    else:
        behind = z[at] - z_wall
        tol = LEVEL_FOOTPRINTS * scene.pixel_size
    back = behind[behind > tol]
    return {"share": float(np.mean(behind <= tol)) if at.any() else float("nan"), "pixels": int(at.sum()),
            "behind_median": float(np.median(back)) if back.size else 0.0,
            "behind_max": float(back.max()) if back.size else 0.0}


def fold_jumps(depth, scene: PlacementScene) -> dict:
    """Per column of the fold, the step z(fold_row - 1) - z(fold_row) against the truth's.

    Returns
    -------
    dict
        ``columns`` (measured), ``jumping`` (columns off by more than FOLD_JUMP_UNITS),
        ``max_excess`` (the largest |step - true step|), ``stripes_cut`` (stripes with a
        jumping column) and ``stripes_cut_by_slope`` ({"+1": n, "-1": n}).
    """
    z = np.asarray(depth, np.float64)
    a, b = scene.fold_row - 1, scene.fold_row
    ok = scene.mask[a] & scene.mask[b] & np.isfinite(z[a]) & np.isfinite(z[b])
    excess = np.abs((z[a] - z[b]) - (scene.depth[a] - scene.depth[b]))
    jump = ok & (excess > FOLD_JUMP_UNITS)
    cut = np.unique(scene.stripe[jump])
    return {"columns": int(ok.sum()), "jumping": int(jump.sum()),
            "max_excess": float(excess[ok].max()) if ok.any() else float("nan"),
            "stripes_cut": int(cut.size),
            "stripes_cut_by_slope": {"+1": int(np.sum(cut % 2 == 0)), "-1": int(np.sum(cut % 2 == 1))}}
