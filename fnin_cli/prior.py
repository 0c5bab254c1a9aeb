"""Depth priors: depth a user already has beside the normals (``--depth-prior``).

Normals fix a surface's shape but not its scale (perspective), its offset (orthographic),
the placement of pieces joined to the rest only across jumps, nor, under photometric
stereo's smooth bias, its lowest frequencies. A depth prior (a sensor's depth map, SfM or
MVS points, a fitted model's depth, a monocular network's relative depth) supplies them:
it is one more data term of the least squares (docs/methods.md#depth-prior),

    sum_p  c_p / 2 (z_p - t_p)^2,   t_p = ln d_p (perspective) or d_p (orthographic),
    c_p = b_p (PRIOR_NORMAL_NOISE / sigma_p)^2,

sigma_p the prior's noise in the unknown's units (sigma / d_p for perspective log-depth),
b_p the pixel's share of one measurement (1; 1/k^2 for a block of a prior at 1/k of the
map's size). Every method carries it in every solve (:class:`~fnin_cli.solvers.system.DataTerm`).

- :func:`read_prior` reads a file (a depth map at the map's size or 1/k of it, or a CSV of
  ``row,col,depth`` points) into a :class:`DepthPrior` (absolute depth, relative depth, or
  disparity) and refuses priors that carry no depth (:func:`check_values`);
- :meth:`DepthPrior.term` is its data term for a system;
- :func:`fit_relative` maps a relative prior (known up to an affine map of depth, as
  monocular networks give) onto an integrated surface;
- :func:`prior_report` measures where the result and the prior disagree, with hints for a
  prior that is evidently something else (inverse depth, other units, flipped, shifted).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .camera import Camera
from .errors import FninError

# the normals' residual noise assumed against the prior's (normal units: about 3 degrees);
# it sets how strongly a prior of noise sigma pulls (docs/decisions.md#depth-prior)
PRIOR_NORMAL_NOISE = 0.05
# --prior-sigma's default: this fraction of the prior's median depth (perspective) or of its
# depth range (orthographic), a consumer depth sensor's noise (docs/decisions.md#depth-prior)
DEFAULT_SIGMA_FRACTION = 0.01
# no prior is trusted beyond this fraction of its median depth (of its range, orthographic):
# the least squares stay well conditioned (an exact fit once made the coarse solve singular)
MIN_SIGMA_FRACTION = 1e-4
# a relative prior (a network's smooth depth) counts as one measurement per block of this
# side: its neighbouring values are not independent (docs/decisions.md#depth-prior)
RELATIVE_BLOCK = 8
# the slope test reads at most about this many pixels (every k-th row of a larger map)
SLOPE_PIXELS = 250_000
# a prior value beyond this many sigmas from the result counts as a disagreement
OUTLIER_SIGMAS = 3.0
# a depth map prior must cover at least this fraction of the mask: less is a crop or a
# registration gone wrong, not a measurement of this object (points are measurements: exempt)
MIN_COVER = 0.01
# values whose spread is within this fraction of their magnitude count as one constant (a
# placeholder fill, not a measurement; float32 keeps ~1e-7)
CONSTANT_SPREAD = 1e-6
# absolute: metric depth; relative: depth up to an affine map (a d + b); disparity: inverse
# depth up to an affine map (a / z + b), as monocular networks and stereo give
KINDS = ("absolute", "relative", "disparity")


@dataclass
class DepthPrior:
    """A depth prior laid on the normal map's pixel grid.

    Attributes
    ----------
    depth : ndarray
        (H, W) float64 depth in the prior's units, NaN where it has none.
    share : ndarray
        (H, W) each pixel's share of one measurement (1 for a full-size map or a point,
        1/k^2 inside a block of a prior at 1/k), 0 where ``depth`` is NaN.
    sigma : float
        The prior's noise (standard deviation) in its units.
    kind : str
        "absolute" (metric depth), "relative" (depth known up to an affine map) or
        "disparity" (inverse depth known up to an affine map: a / z + b); ``depth`` holds
        the file's values in each case.
    source : str
        The file it came from (or a description).
    block : int
        k for a prior at 1/k of the map's size, 1 at full size, 0 for points.
    sigma_given : bool
        Whether ``sigma`` is the user's (``--prior-sigma``); False: a start that the run
        estimates from the data (:class:`fnin_cli.priors.RobustPrior`).
    meta : dict
        What made the prior, where known (the bench's priors: ``wrong``, the (H, W) pixels
        it drew wrong on purpose).
    """

    depth: np.ndarray
    share: np.ndarray
    sigma: float
    kind: str = "absolute"
    source: str = ""
    block: int = 1
    meta: dict = field(default_factory=dict, repr=False, compare=False)
    sigma_given: bool = True

    def __post_init__(self):
        # float32 images: a camera-size prior costs two 4-byte frames, not two 8-byte ones
        self.depth = np.asarray(self.depth, np.float32)
        self.share = np.asarray(self.share, np.float32)

    @property
    def valid(self) -> np.ndarray:
        return np.isfinite(self.depth) & (self.share > 0)

    def describe(self) -> str:
        what = "points" if self.block == 0 else ("map" if self.block == 1 else f"map at 1/{self.block}")
        if self.kind == "disparity":
            return f"disparity prior ({what}, {int(self.valid.sum())} pixels, sigma {self.sigma:g})"
        return f"{self.kind} depth prior ({what}, {int(self.valid.sum())} pixels, sigma {self.sigma:g})"

    def term(self, mask: np.ndarray, camera: Camera, share_scale: float = 1.0):
        """The prior's :class:`~fnin_cli.solvers.system.DataTerm` over the masked pixels (in
        the unknown's units: log-depth for perspective), each pixel's share times
        ``share_scale``."""
        from .solvers.system import DataTerm

        # float32 gathers, float64 only over the pixels with a value: no frame-sized or
        # float64 n-sized temporaries beyond the term's own two vectors
        d, share = self.depth[mask], self.share[mask]
        has = np.isfinite(d) & (share > 0)
        values = d[has].astype(np.float64)
        if camera.perspective:
            floor = MIN_SIGMA_FRACTION * float(np.median(np.abs(values))) if values.size else 0.0
        else:
            floor = MIN_SIGMA_FRACTION * float(np.ptp(values)) if values.size else 0.0
        sigma = max(float(self.sigma), floor)
        sigma_z = sigma / values if camera.perspective else np.full(values.shape, sigma)
        target = np.zeros(d.shape)
        target[has] = np.log(values) if camera.perspective else values
        weight = np.zeros(d.shape)
        weight[has] = share[has].astype(np.float64) * share_scale * (PRIOR_NORMAL_NOISE / sigma_z) ** 2
        return DataTerm(weight, target)

    def relative_term(self, mask: np.ndarray, camera: Camera):
        """:meth:`term` of a fitted relative prior: each pixel a 1/:data:`RELATIVE_BLOCK`^2
        share of a measurement."""
        return self.term(mask, camera, 1.0 / RELATIVE_BLOCK ** 2)

    def on_mask(self, mask: np.ndarray) -> "DepthPrior":
        """This prior with its values outside ``mask`` dropped."""
        depth = np.where(mask, self.depth, np.float32(np.nan))
        return replace(self, depth=depth, share=np.where(np.isfinite(depth), self.share, np.float32(0.0)))


# ------------------------------------------------------------------ reading

def read_prior(path, shape, camera: Camera, sigma: float | None = None, kind: str = "absolute") -> DepthPrior:
    """A depth prior from ``path`` for a normal map of ``shape`` under ``camera``.

    A depth map (``.npy``, ``.exr``, float ``.tif``, 16-bit ``.png`` with the scale chunks
    fnin writes) at the map's size or at 1/k of it (k an integer: each prior pixel is one
    k x k block); NaN, inf or 0 mean no value. Or a ``.csv`` with the header
    ``row,col,depth`` (the normal map's pixel coordinates). A map at 1/k has each side the
    map's side divided by k, rounded down or up (:func:`block_factor`). ``sigma``: the
    prior's noise in its units (None: :func:`default_sigma`). ``kind``: one of
    :data:`KINDS`. Raises :class:`FninError` naming the file and the fix, also for values
    that carry no depth (:func:`check_values`).
    """
    path = Path(path)
    if kind not in KINDS:
        raise FninError(f"--prior-kind must be one of {', '.join(KINDS)}, got '{kind}'")
    if sigma is not None and not (np.isfinite(sigma) and sigma > 0):
        raise FninError(f"--prior-sigma must be a positive number, got {sigma:g}")
    if not path.exists():
        raise FninError("depth prior not found", path)
    if path.suffix.lower() == ".csv":
        depth, share, block = _read_points(path, shape)
    else:
        depth, share, block = _read_map(path, shape)
    if camera.perspective and kind == "absolute":
        bad = np.isfinite(depth) & (depth < 0)
        if bad.any():
            raise FninError(f"the depth prior has {int(bad.sum())} negative depths, and a perspective camera "
                            "needs depth > 0 along the optical axis; is it a disparity or a z-up height?", path)
    check_values(depth, kind, block, path)
    given = sigma is not None
    if not given:
        sigma = default_sigma(depth, camera.perspective)
    return DepthPrior(depth, share, float(sigma), kind, str(path), block, sigma_given=given)


def default_sigma(depth: np.ndarray, perspective: bool) -> float:
    """The start of a sigma not given (``--prior-sigma``) for a prior of values ``depth``
    (NaN: none): :data:`DEFAULT_SIGMA_FRACTION` of its median (perspective) or of its 5-95%
    range (orthographic), a consumer depth sensor's noise; the run then estimates it
    (:class:`fnin_cli.priors.RobustPrior`)."""
    v = depth[np.isfinite(depth)]
    if not v.size:
        return DEFAULT_SIGMA_FRACTION
    scale = float(np.median(np.abs(v))) if perspective else float(np.percentile(v, 95) - np.percentile(v, 5))
    return DEFAULT_SIGMA_FRACTION * (scale if scale > 0 else 1.0)


def check_values(depth: np.ndarray, kind: str, block: int, source="") -> None:
    """Raise :class:`FninError` (one line) where a prior's values (NaN: none) carry no
    depth: none at all, disparity <= 0 everywhere (nearer is larger, so some must be
    positive), or one constant value (a placeholder fill; for points only where a relative
    or disparity prior needs two values to be fitted: equal absolute points can be a plane
    facing the camera)."""
    v = depth[np.isfinite(depth)]
    if not v.size:
        raise FninError("the depth prior has no value (all NaN, inf or 0); give a prior with depths", source)
    if kind == "disparity" and not (v > 0).any():
        raise FninError("the disparity prior has no value > 0 (disparity grows as depth shrinks); is it depth? "
                        "then use --prior-kind absolute or relative", source)
    if (block != 0 or kind != "absolute") and float(np.ptp(v)) <= CONSTANT_SPREAD * float(np.max(np.abs(v))):
        what = "point" if block == 0 and v.size == 1 else "value"
        raise FninError(f"the depth prior is one constant {what} ({float(v[0]):g} at {v.size} pixels): it holds no "
                        "shape to fuse; is it a placeholder fill?", source)


def _read_map(path: Path, shape):
    from .io.formats import read_depth

    try:
        arr = read_depth(path).astype(np.float64)
    except FninError:
        raise
    except Exception as exc:
        raise FninError(f"cannot read the depth prior ({type(exc).__name__}: {exc})", path) from None
    if arr.ndim != 2:
        raise FninError(f"a depth prior is one channel, this file has shape {arr.shape}", path)
    arr[~np.isfinite(arr) | (arr == 0)] = np.nan
    h, w = shape
    ph, pw = arr.shape
    if (ph, pw) == (h, w):
        return arr, np.where(np.isfinite(arr), 1.0, 0.0), 1
    k = block_factor((ph, pw), (h, w))
    if k is not None:
        depth = np.kron(arr, np.ones((k, k)))[:h, :w]      # a side rounded up: its last blocks cropped
        if depth.shape != (h, w):                          # a side rounded down: the last rows/cols none
            depth = np.pad(depth, ((0, h - depth.shape[0]), (0, w - depth.shape[1])), constant_values=np.nan)
        return depth, np.where(np.isfinite(depth), 1.0 / k ** 2, 0.0), k
    sizes = ", ".join(f"1/{k}: {_sides(h, k)} x {_sides(w, k)}" for k in (2, 4, 8))
    raise FninError(f"the depth prior is {ph} x {pw} (rows x cols), but the normal map is {h} x {w}: give a prior "
                    f"at the map's size or at 1/k of it, each side divided by k rounded down or up ({sizes}), "
                    "or a .csv with the header row,col,depth", path)


def block_factor(prior_shape, shape) -> int | None:
    """k >= 2 such that each side of ``prior_shape`` (rows, cols) is the side of ``shape``
    divided by k, rounded down or up (612 / 8 -> 76 or 77); the smallest such k, or None."""
    (ph, pw), (h, w) = prior_shape, shape
    if ph < 1 or pw < 1:
        return None
    # ph = floor or ceil of h / k  <=>  h / (ph + 1) < k < h / (ph - 1): a few integers at most
    for k in range(max(2, h // (ph + 1)), h // max(ph - 1, 1) + 2):
        if all(side in (n // k, -(-n // k)) for side, n in ((ph, h), (pw, w))):
            return k
    return None


def _sides(n: int, k: int) -> str:
    lo, hi = n // k, -(-n // k)
    return f"{lo}" if lo == hi else f"{lo} or {hi}"


def _read_points(path: Path, shape):
    h, w = shape
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise FninError(f"cannot read the CSV ({type(exc).__name__})", path) from None
    rows = [ln for ln in lines if ln.strip()]
    if not rows or [c.strip().lower() for c in rows[0].split(",")] != ["row", "col", "depth"]:
        raise FninError("a depth-prior CSV starts with the header row,col,depth (the normal map's pixel "
                        "coordinates and the depth there)", path)
    depth = np.full((h, w), np.nan)
    for i, line in enumerate(rows[1:], start=2):
        parts = [c.strip() for c in line.split(",")]
        try:
            if len(parts) != 3:
                raise ValueError
            r, c, d = int(parts[0]), int(parts[1]), float(parts[2])
        except ValueError:
            raise FninError(f"line {i} is not row,col,depth (integers, then a number): '{line.strip()}'",
                            path) from None
        if not (0 <= r < h and 0 <= c < w):
            raise FninError(f"line {i}: pixel (row {r}, col {c}) is outside the {h} x {w} (rows x cols) normal map",
                            path)
        if np.isfinite(d) and d != 0:
            depth[r, c] = d
    return depth, np.where(np.isfinite(depth), 1.0, 0.0), 0


# ------------------------------------------------------------------ relative priors

def robust_affine(p: np.ndarray, d: np.ndarray, w: np.ndarray, iterations: int = 10) -> tuple:
    """(a, b, spread): the affine map d ~ a p + b fitted by :func:`robust_lstsq`: a blurred
    edge or a warped corner of a monocular network's depth does not pull the map.

    Examples
    --------
    >>> p = np.arange(10.0); d = 2 * p + 1; d[9] = 100.0
    >>> a, b, s = robust_affine(p, d, np.ones(10))
    >>> round(a, 3), round(b, 3)
    (2.0, 1.0)
    """
    (a, b), spread = robust_lstsq(np.stack([p, np.ones(p.size)], 1), d, w, iterations)
    return float(a), float(b), spread


def robust_lstsq(A: np.ndarray, d: np.ndarray, w: np.ndarray, iterations: int = 10) -> tuple:
    """(x, spread): d ~ A x by iteratively reweighted least squares with Cauchy's weight at
    2.385 times the residuals' robust spread (1.4826 x their median absolute value), each
    row also weighted by ``w``. ``spread``: that of the final residuals.

    Examples
    --------
    >>> A = np.stack([np.arange(10.0), np.ones(10)], 1); d = A @ [2.0, 1.0]; d[9] = 100.0
    >>> [round(float(v), 3) for v in robust_lstsq(A, d, np.ones(10))[0]]
    [2.0, 1.0]
    """
    weight = w.astype(np.float64)
    x = np.zeros(A.shape[1])
    for _ in range(iterations):
        sw = np.sqrt(weight)
        x, *_ = np.linalg.lstsq(A * sw[:, None], d * sw, rcond=None)
        r = d - A @ x
        spread = 1.4826 * float(np.median(np.abs(r)))
        if spread <= 0:
            break
        weight = w / (1.0 + (r / (2.385 * spread)) ** 2)
    return x, 1.4826 * float(np.median(np.abs(d - A @ x)))


def _fit_points(prior: DepthPrior, depth: np.ndarray, mask: np.ndarray, what: str) -> np.ndarray:
    m = prior.valid & mask & np.isfinite(depth)
    if m.sum() < 3:
        raise FninError(f"the {what} prior covers fewer than 3 pixels of the object; it cannot be fitted",
                        prior.source)
    return m


def fit_relative(prior: DepthPrior, depth: np.ndarray, mask: np.ndarray, positive: bool = True) -> tuple:
    """(the prior mapped onto ``depth``, the map): a relative prior's depths p taken to
    a p + b, the affine map of depth that fits them to an integrated ``depth`` (relative
    depth, NaN outside ``mask``) robustly (:func:`robust_affine`); its sigma becomes the
    fit's robust spread. ``positive``: mapped depths <= 0 count as missing (perspective
    depth; orthographic depth has any offset). Raises :class:`FninError` where the prior
    and the depth share fewer than 3 pixels."""
    m = _fit_points(prior, depth, mask, "relative depth")
    a, b, spread = robust_affine(prior.depth[m].astype(np.float64), depth[m], np.sqrt(prior.share[m]))
    fitted = a * prior.depth.astype(np.float64) + b
    fitted[~(np.isfinite(fitted) & ((fitted > 0) | (not positive)))] = np.nan
    sigma = max(spread, 1e-9 * float(np.nanmedian(np.abs(depth[m]))))
    return replace(prior, depth=fitted, sigma=sigma, sigma_given=True), (a, b)


def fit_disparity(prior: DepthPrior, depth: np.ndarray, mask: np.ndarray) -> tuple:
    """(the prior as depth on ``depth``'s scale, the map): a disparity prior's values D
    (inverse depth up to an affine map, as monocular networks give it) taken to the depth
    1 / (a D + b), the affine map of D fitted robustly (:func:`robust_affine`) to the
    inverse of an integrated perspective ``depth`` (relative, NaN outside ``mask``); where
    a D + b <= 0 it has none. Its sigma is the robust spread of the mapped depth about
    ``depth``."""
    m = _fit_points(prior, depth, mask, "disparity")
    a, b, _ = robust_affine(prior.depth[m].astype(np.float64), 1.0 / depth[m], np.sqrt(prior.share[m]))
    q = a * prior.depth.astype(np.float64) + b
    fitted = np.full(q.shape, np.nan)
    np.divide(1.0, q, out=fitted, where=np.isfinite(q) & (q > 0))
    r = fitted[m] - depth[m]
    spread = 1.4826 * float(np.nanmedian(np.abs(r))) if np.isfinite(r).any() else 0.0
    sigma = max(spread, 1e-9 * float(np.nanmedian(np.abs(depth[m]))))
    return replace(prior, depth=fitted, kind="relative", sigma=sigma, sigma_given=True), (a, b)


# ------------------------------------------------------------------ disagreement

def prior_report(prior: DepthPrior, depth: np.ndarray, mask: np.ndarray, camera: Camera, normals=None) -> tuple:
    """(``prior_residual`` for ``--json``, warnings): how far the result ``depth`` is from
    the prior where it has values (mean and 95th percentile of |result - prior| in its
    units, the share beyond :data:`OUTLIER_SIGMAS` sigma, and with the input's ``normals``
    the prior's :func:`slope_ratio`), a warning where they clearly disagree, and a one-line
    hint where the prior looks like something else."""
    m = prior.valid & mask & np.isfinite(depth)
    if not m.any():
        return {"pixels": 0}, []
    r = np.abs(depth[m] - prior.depth[m])
    out = {"pixels": int(m.sum()), "mean": float(r.mean()), "p95": float(np.percentile(r, 95)),
           "beyond_3_sigma": float(np.mean(r > OUTLIER_SIGMAS * prior.sigma)), "sigma": prior.sigma}
    notes = []
    slope = None if normals is None else slope_ratio(prior, normals, m, camera)
    if slope is not None:
        out["slope_ratio"] = slope
    against = slope is not None and (slope < -0.5 or (not camera.perspective and not 0.5 < slope < 2.0))
    if out["beyond_3_sigma"] > 0.25 or against:
        hint = _what_else(prior, depth, m, mask, camera, slope)
        notes.append(f"the depth prior and the normals disagree ({out['beyond_3_sigma']:.0%} of its pixels are "
                     f"more than {OUTLIER_SIGMAS:g} sigma, {prior.sigma:g}, from the result)"
                     + (f"; {hint}" if hint else "; check its units and --prior-sigma"))
    return out, notes


def _what_else(prior: DepthPrior, depth: np.ndarray, m: np.ndarray, mask: np.ndarray, camera: Camera,
               slope: float | None = None) -> str:
    """A one-line guess at what a disagreeing prior is instead (or ""); ``m``: the pixels
    compared, ``mask``: the object's (a shifted prior brings no value from outside it),
    ``slope``: :func:`slope_ratio`'s, as the report computed it (None: no normals)."""
    p, d = prior.depth[m], depth[m]
    if p.size < 10:
        return ""
    if slope is not None and slope < -0.5:
        return (f"its depth runs against the normals' (slope ratio {slope:.2g}): inverse depth or disparity, "
                "or flipped? convert it to depth, or use --prior-kind relative")
    if slope is not None and not camera.perspective and not 0.5 < slope < 2.0:
        return (f"its relief is {slope:.3g}x what the normals give: other units? (orthographic depth is in "
                "--pixel-size units; or --prior-kind relative)")

    def corr(x, y):
        x, y = x - x.mean(), y - y.mean()
        den = np.sqrt((x * x).sum() * (y * y).sum())
        return float((x * y).sum() / den) if den > 0 else 0.0

    c_depth = corr(p, d)
    c_inverse = corr(1.0 / np.where(p != 0, p, np.nan), d) if np.all(p != 0) else -1.0
    if c_inverse > max(0.9, c_depth + 0.05):
        return "it looks like inverse depth or disparity: convert it to depth, or use --prior-kind relative"
    if c_depth < -0.5:
        return "it runs against the result (flipped or negated?)"
    shifted = None
    if m.sum() <= SLOPE_PIXELS:
        shifted = _best_shift(np.where(mask, prior.depth, np.float32(np.nan)), depth, m)
    if shifted is not None:
        return f"it fits best shifted by {shifted} pixels (row, col): is it registered to the normal map?"
    return ""


def slope_ratio(prior: DepthPrior, normals: np.ndarray, m: np.ndarray, camera: Camera) -> float | None:
    """How the prior's change along rows compares with what the normals predict over the
    same spans (the unknown's units: log-depth for perspective): the median ratio of one to
    the other, 1 for a prior that agrees, about -1 for inverse depth or a flip,
    s for an orthographic prior in units s times the normals'. None without enough spans."""
    step = max(1, prior.block)
    # every s-th row (spans run along rows): the test needs ~ a few hundred thousand pixels,
    # not a camera-size map's frames of temporaries; the camera sees rows s apart
    s = max(1, int(np.ceil(int(m.sum()) / SLOPE_PIXELS)))
    if s > 1:
        normals, m = normals[::s], m[::s]
        prior = replace(prior, depth=prior.depth[::s], share=prior.share[::s])
        if camera.perspective:
            K = camera.K.copy()
            K[1, 1] /= s
            K[1, 2] /= s
            camera = Camera(K, camera.pixel_size)
    a_u, _, nx, _ = camera.residual_coefficients(normals, m)   # the system's own, nothing else built
    pred = np.zeros(m.shape)
    pred[m] = -nx / a_u                          # d(unknown)/du each normal predicts
    pred[~np.isfinite(pred)] = 0.0
    t = np.full(m.shape, np.nan)
    t[m] = np.log(prior.depth[m]) if camera.perspective else prior.depth[m]
    # the unknown's change from column c to c + step: the trapezoid sum of the predicted slopes
    csum = np.cumsum(pred, axis=1)
    inside = np.cumsum(m, axis=1)
    a, b = slice(0, -step), slice(step, None)
    span = (inside[:, b] - inside[:, a] == step) & m[:, a]
    dn = (csum[:, b] - csum[:, a]) - 0.5 * (pred[:, b] - pred[:, a])
    dp = t[:, b] - t[:, a]
    ok = span & np.isfinite(dp) & (np.abs(dn) > 0)
    if ok.sum() < 20:
        return None
    # the median ratio over spans the normals say change: robust to the jumps, where the
    # prior changes and the normals cannot say so
    ok &= np.abs(dn) >= 0.5 * float(np.median(np.abs(dn[ok])))
    return float(np.median(dp[ok] / dn[ok])) if ok.sum() >= 20 else None


def _best_shift(prior_depth: np.ndarray, depth: np.ndarray, m: np.ndarray, reach: int = 4):
    """The (row, col) shift within ``reach`` pixels that fits the prior to the result far
    better than none (median |difference| under half of the unshifted one), or None."""
    def err(dr, dc):
        shifted = np.roll(np.roll(prior_depth, dr, 0), dc, 1)
        mm = m & np.isfinite(shifted) & np.isfinite(depth)
        mm = np.roll(np.roll(mm, 0, 0), 0, 1)
        return float(np.median(np.abs(shifted[mm] - depth[mm]))) if mm.sum() > 10 else np.inf

    base = err(0, 0)
    best = min(((err(dr, dc), (dr, dc)) for dr in range(-reach, reach + 1) for dc in range(-reach, reach + 1)
                if (dr, dc) != (0, 0)), key=lambda t: t[0])
    return best[1] if best[0] < 0.5 * base else None


def as_prior(value, inp) -> DepthPrior | None:
    """``integrate``'s ``depth_prior`` for the input ``inp``: None, a :class:`DepthPrior`, or a
    path read with :func:`read_prior`'s defaults. Only its values inside the input's mask
    count: every reader masks them (no masked copy is made: at camera size that was two
    more frames beside the caller's, held through the run). Raises :class:`FninError`
    where no prior value falls on the object, where a map covers less than
    :data:`MIN_COVER` of it (:func:`check_cover`), and for a disparity prior of an
    orthographic map."""
    if value is None:
        return None
    prior = value if isinstance(value, DepthPrior) else read_prior(value, inp.shape, inp.camera)
    if prior.depth.shape != inp.mask.shape:
        raise FninError(f"the depth prior is laid on a {prior.depth.shape[0]} x {prior.depth.shape[1]} grid (rows x "
                        f"cols), the map is {inp.shape[0]} x {inp.shape[1]}", prior.source)
    check_cover(prior, inp.mask)
    if prior.kind == "disparity" and not inp.camera.perspective:
        raise FninError("a disparity prior needs a perspective camera (--K or --fx): an orthographic map has no "
                        "depth to invert; give --prior-kind relative for depth known up to a d + b", prior.source)
    return prior


def check_cover(prior: DepthPrior, mask: np.ndarray) -> None:
    """Raise :class:`FninError` (one line) where no value of ``prior`` falls inside
    ``mask``, or a map (not points: each point is a measurement, 200 SfM points are 0.4%
    of a 50,000-pixel object) covers less than :data:`MIN_COVER` of it."""
    on = int((prior.valid & mask).sum())
    if not on:
        raise FninError("no value of the depth prior falls inside the mask; is it registered to the normal map?",
                        prior.source)
    total = int(mask.sum())
    if prior.block != 0 and on < MIN_COVER * total:
        raise FninError(f"the depth prior covers {on} of the object's {total} pixels ({on / total:.2%}, under "
                        f"{MIN_COVER:.0%}): is it cropped or registered elsewhere? (points: give a .csv)",
                        prior.source)
