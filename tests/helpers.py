"""Shared assertions and analytic scenes for the tests (imported as ``helpers``)."""

from __future__ import annotations

import numpy as np

from fnin_cli.data import analytic
from fnin_cli.camera import Camera

REL_TOL = 1e-3  # of the depth range, after the scale/offset alignment


def aligned_error(est, gt, mask, mode: str) -> float:
    """Max |aligned est - gt| over ``mask`` divided by the range of gt there.

    ``mode='scale'`` (perspective): est scaled by nanmedian(gt / est);
    ``mode='offset'`` (orthographic): est shifted by nanmedian(gt - est).
    """
    est = np.asarray(est, np.float64)[mask]
    gt = np.asarray(gt, np.float64)[mask]
    assert est.size and np.all(np.isfinite(gt)), "ground truth must be finite on the mask"
    assert np.all(np.isfinite(est)), "estimate has non-finite values inside the mask"
    if mode == "scale":
        aligned = np.nanmedian(gt / est) * est
    elif mode == "offset":
        aligned = est + np.nanmedian(gt - est)
    else:
        raise ValueError(f"mode must be 'scale' or 'offset', not {mode!r}")
    span = float(gt.max() - gt.min())
    assert span > 0, "ground truth is constant on the mask; the relative error is undefined"
    return float(np.max(np.abs(aligned - gt)) / span)


def assert_equal_up_to(est, gt, mask, mode: str, rel_tol: float = REL_TOL):
    """est equals gt up to a scale ('scale') or offset ('offset'), within ``rel_tol``
    of gt's range over ``mask``."""
    err = aligned_error(est, gt, mask, mode)
    assert err <= rel_tol, f"relative error {err:.3e} > {rel_tol:.1e} ({mode} alignment, {int(np.sum(mask))} px)"


def mode_of(camera: Camera) -> str:
    return "scale" if camera.perspective else "offset"


# ------------------------------------------------------------------ scenes

SHAPE = (60, 80)  # H, W: small enough for fast solves, large enough for 1e-3 accuracy
F = 100.0


def camera(kind: str) -> Camera:
    h, w = SHAPE
    if kind == "persp":
        return Camera(np.array([[F, 0.0, (w - 1) / 2 + 3.0], [0.0, 1.1 * F, (h - 1) / 2 - 2.0], [0.0, 0.0, 1.0]]))
    return Camera(None, 0.5)


def scene_point(cam: Camera, u: float, v: float, depth: float) -> np.ndarray:
    """3D point seen at pixel (u, v) at ``depth``."""
    if cam.perspective:
        return depth * (np.linalg.inv(cam.K) @ np.array([u, v, 1.0]))
    return np.array([u * cam.pixel_size, v * cam.pixel_size, depth])


def smooth_surface(name: str, cam: Camera) -> analytic.Surface:
    """Analytic smooth surfaces filling (most of) the SHAPE grid, exact normals."""
    h, w = SHAPE
    persp = cam.perspective
    z0 = 10.0 if persp else 50.0
    px = z0 / F if persp else cam.pixel_size  # metric size of one pixel at depth z0
    if name == "sphere":
        # cap of normals within 40 deg of the view, radius ~ 36 px on screen
        R = 36.0 * px / np.sin(np.radians(40.0))
        C = scene_point(cam, w / 2 - 4, h / 2 + 3, z0 + R)
        return analytic.sphere(SHAPE, cam, C, R, max_angle_deg=40.0)
    if name == "plane":
        return analytic.plane(SHAPE, cam, normal=[0.4, -0.3, -1.0], point=scene_point(cam, w / 2, h / 2, z0))
    if name == "paraboloid":
        # a dome: z = z0 - k r^2, slope ~ 1 footprint per pixel at the border
        return analytic.paraboloid(SHAPE, cam, z0, -0.6 * px / w, center=(w / 2 + 5, h / 2 - 4))
    raise ValueError(name)


def irregular_mask() -> np.ndarray:
    """A blob with a hole and a notch, inside SHAPE."""
    h, w = SHAPE
    u, v = analytic.pixel_grid(SHAPE)
    blob = ((u - w / 2) / (0.45 * w)) ** 2 + ((v - h / 2) / (0.45 * h)) ** 2 <= 1.0
    hole = (u - w / 2 - 8) ** 2 + (v - h / 2 + 4) ** 2 <= 25
    notch = (u < w / 4) & (np.abs(v - h / 2) < 3)
    return blob & ~hole & ~notch


STEP_COL = 37  # first column of the right-hand side of the step scene


def step_surface(cam: Camera, gap: float = 40.0) -> tuple[analytic.Surface, np.ndarray]:
    """Two sheets separated by a depth jump along the whole column STEP_COL: on the left
    a dome tilted down the rows, on the right a ramp tilted up the rows and nearer the
    camera by gap -+ 30 pixel footprints (the jump varies along the step, as at real
    occlusions, and the normals jump there too). Returns the surface and the 'right
    side' map. The two sides touch only across the jump, so each side's shape is
    defined but their relative depth is not."""
    h, w = SHAPE
    persp = cam.perspective
    z0 = 10.0 if persp else 50.0
    px = z0 / F if persp else cam.pixel_size
    k = 0.6 * px / w
    uc, vc = w / 2 - 10, h / 2

    def dome(u, v):
        z = z0 + 0.5 * px * (v - vc) - k * ((u - uc) ** 2 + (v - vc) ** 2)
        return z, -2 * k * (u - uc), 0.5 * px - 2 * k * (v - vc)

    def ramp(u, v):
        z = z0 - gap * px - 0.5 * px * (v - vc) + 0.3 * px * (u - STEP_COL)
        return z, np.full_like(u, 0.3 * px), np.full_like(v, -0.5 * px)

    return _sheets(cam, dome, ramp)


def _sheets(cam: Camera, left, right) -> tuple:
    """(surface, right-side map): depth functions ``left`` and ``right`` (z, dz/du, dz/dv
    of u, v) on either side of the column STEP_COL."""
    u, _ = analytic.pixel_grid(SHAPE)
    side = u >= STEP_COL
    near = analytic.restrict(analytic.from_depth_function(SHAPE, cam, left), ~side)
    far = analytic.restrict(analytic.from_depth_function(SHAPE, cam, right), side)
    return analytic.nearest(near, far), side


def rim_step_surface(cam: Camera, gap: float = 80.0, rim: int = 8, bend: float = 0.25) -> tuple:
    """Two sheets across a jump along STEP_COL, the left one bending away over its last
    ``rim`` columns (its slope there grows to 2 ``bend`` ``rim`` footprints a pixel), the
    right one ``gap`` footprints farther: the normals cannot place the right sheet (in
    perspective BiNI's weights join it one-sidedly, the rim's steep normal extrapolated
    across the jump). Returns the surface and the 'right side' map."""
    h, w = SHAPE
    z0 = 10.0 if cam.perspective else 50.0
    px = z0 / F if cam.perspective else cam.pixel_size
    c0 = STEP_COL - rim

    def left(u, v):
        t = np.maximum(u - c0, 0.0)
        return z0 + 0.2 * px * (v - h / 2) + bend * px * t ** 2, 2 * bend * px * t, np.full_like(v, 0.2 * px)

    def right(u, v):
        z = z0 + gap * px - 0.5 * px * (v - h / 2) + 0.3 * px * (u - STEP_COL)
        return z, np.full_like(u, 0.3 * px), np.full_like(v, -0.5 * px)

    return _sheets(cam, left, right)


def gaussian_bumps(u, v, bumps, offset: float = 0.0):
    """A tilted plane ``offset + 0.05 u + 0.03 v`` plus Gaussian ``bumps`` (amplitude, centre
    u, centre v, sigma), in pixel units: ``(z, dz/du, dz/dv)``. Not symmetric, so a flipped
    or channel-swapped normal map of it does not integrate."""
    z = offset + 0.05 * u + 0.03 * v
    zu = np.full_like(u, 0.05)
    zv = np.full_like(u, 0.03)
    for a, cu, cv, s in bumps:
        g = a * np.exp(-((u - cu) ** 2 + (v - cv) ** 2) / (2 * s * s))
        z += g
        zu += -g * (u - cu) / (s * s)
        zv += -g * (v - cv) / (s * s)
    return z, zu, zv


def _eight_neighbours(depth: np.ndarray, mask: np.ndarray):
    """(depth with NaN outside ``mask``, the depth range: 1st to 99th percentile of the
    masked depths, the (8, h, w) stack of each pixel's 8-neighbours), or None with fewer
    than two masked depths."""
    d = np.where(mask, np.asarray(depth, np.float64), np.nan)
    vals = d[mask & np.isfinite(d)]
    if vals.size < 2:
        return None
    spread = float(np.percentile(vals, 99) - np.percentile(vals, 1)) or 1.0
    h, w = d.shape
    pad = np.pad(d, 1, constant_values=np.nan)
    nb = np.stack([pad[1 + dr:1 + dr + h, 1 + dc:1 + dc + w]
                   for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)])
    return d, spread, nb


def count_isolated(depth: np.ndarray, mask: np.ndarray, fraction: float = 0.2) -> tuple[int, float]:
    """(count, largest offset in depth ranges) of the masked pixels whose depth is off the
    median of their masked 8-neighbours by more than ``fraction`` of the depth range (1st
    to 99th percentile of the masked depths): issue 51's isolated depth pixels (as
    studies/real-maps/spikes.py counts them). Pixels without a masked neighbour do not count."""
    import warnings

    got = _eight_neighbours(depth, mask)
    if got is None:
        return 0, 0.0
    d, spread, nb = got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # all-NaN: a pixel without neighbour
        off = np.abs(d - np.nanmedian(nb, axis=0)) / spread
    off = off[mask & np.isfinite(off)]
    return int(np.sum(off > fraction)), float(off.max()) if off.size else 0.0


def count_far(depth: np.ndarray, mask: np.ndarray, fraction: float = 0.1) -> int:
    """Masked pixels whose nearest masked 8-neighbour is more than ``fraction`` of the depth
    range (1st to 99th percentile) away: far from every neighbour (a pixel along a sharp
    occlusion edge has one on its own side; :func:`count_isolated` counts it). Pixels
    without a masked neighbour do not count (studies/real-maps/spikes_public.py)."""
    import warnings

    got = _eight_neighbours(depth, mask)
    if got is None:
        return 0
    d, spread, nb = got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # all-NaN: a pixel without neighbour
        near = np.nanmin(np.abs(nb - d), axis=0) / spread
    return int(np.sum(near[mask & np.isfinite(near)] > fraction))


def plant_normals(seed: int, h: int = 480, w: int = 480, leaves: int = 300) -> np.ndarray:
    """(h, w, 3) internal-frame unit normals of a dense orthographic plant filling the frame:
    ``leaves`` small tilted, slightly curved elliptic leaves (3-18 px, slopes up to about 60
    degrees, each bent along its own axis) over a cylindrical pot and a gently bumpy soil
    (issue 51 item 3: a map whose block-scale integrability cannot tell an x flip)."""
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:h, 0:w].astype(float)
    z = 1000 + 0.3 * v + 3 * np.sin(u / 17) * np.cos(v / 23)        # soil, farther down the image
    p = 3 * np.cos(u / 17) / 17 * np.cos(v / 23)
    q = 0.3 - 3 * np.sin(u / 17) * np.sin(v / 23) / 23
    cx, r = w / 2, w * 0.22                                          # pot: a vertical cylinder
    pot = (v > h * 0.62) & (np.abs(u - cx) < r)
    dx = np.clip((u - cx) / r, -0.999, 0.999)
    zp = 900 - r * np.sqrt(1 - dx ** 2)
    sel = pot & (zp < z)
    z[sel], p[sel], q[sel] = zp[sel], (dx / np.sqrt(1 - dx ** 2))[sel], 0.0
    for _ in range(leaves):
        lu, lv = rng.uniform(0.1 * w, 0.9 * w), rng.uniform(0.05 * h, 0.7 * h)
        a, b = rng.uniform(6, 18), rng.uniform(3, 8)
        th = rng.uniform(0, np.pi)
        du, dv = u - lu, v - lv
        x1, y1 = du * np.cos(th) + dv * np.sin(th), -du * np.sin(th) + dv * np.cos(th)
        inside = (x1 / a) ** 2 + (y1 / b) ** 2 < 1
        gu, gv = rng.normal(0, 1.0, 2)
        c = rng.uniform(-0.03, 0.03)
        zl = rng.uniform(600, 880) + gu * du + gv * dv + c * x1 ** 2
        sel = inside & (zl < z)
        z[sel] = zl[sel]
        p[sel], q[sel] = (gu + 2 * c * x1 * np.cos(th))[sel], (gv + 2 * c * x1 * np.sin(th))[sel]
    n = np.stack([p, q, -np.ones_like(p)], -1)
    return n / np.linalg.norm(n, axis=-1, keepdims=True)
