"""A depth prior's blur, measured against the normals' surface.

A monocular network's depth is blurred: a piece much smaller than the blur has no value
of its own in it, only its neighbours' mixed in. :func:`blur_scale` measures the blur
(in pixels) as the Gaussian that best maps the integrated surface onto the prior;
:func:`masked_blur` is that Gaussian inside a mask. The relative fuse reads a piece's
word only where the prior resolves it (:func:`fnin_cli.fuse_pieces.hold_placed`;
docs/decisions.md#robust-prior).
"""

from __future__ import annotations

import numpy as np


# the blurs a prior is tried at (px on the map reduced to at most BLUR_SIDE px on its long
# side): a sensor's 0 to a monocular network's tens of pixels (docs/decisions.md#robust-prior)
BLUR_GRID = (0.0, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)
BLUR_SIDE = 512


def masked_blur(values: np.ndarray, mask: np.ndarray, s: float) -> np.ndarray:
    """``values`` blurred by a Gaussian of ``s`` px inside ``mask`` (normalised by the mask's
    own blur, so the background does not enter), NaN outside it.

    Examples
    --------
    >>> m = np.zeros((5, 5), bool); m[:, :3] = True
    >>> float(np.nanmax(np.abs(masked_blur(np.where(m, 2.0, 9.0), m, 1.0) - 2.0)))
    0.0
    """
    from scipy.ndimage import gaussian_filter

    filled = gaussian_filter(np.where(mask, values, 0.0), s, mode="nearest")
    weight = gaussian_filter(mask.astype(float), s, mode="nearest")
    out = np.full(values.shape, np.nan)
    np.divide(filled, weight, out=out, where=mask & (weight > 1e-6))
    return out


def blur_scale(prior_depth: np.ndarray, depth: np.ndarray, groups: np.ndarray) -> float:
    """The prior's blur in px: the Gaussian of :data:`BLUR_GRID` that, applied to ``depth``
    inside its pieces (``groups`` >= 0, an int image), leaves the least robust spread about
    the affine fit of ``prior_depth`` to it with an offset per piece
    (:func:`~fnin_cli.prior.robust_lstsq`: where the normals could not place a piece, its
    offset says nothing of the blur), on both reduced by block means to at most
    :data:`BLUR_SIDE` px on the long side.

    Examples
    --------
    >>> yy, xx = np.mgrid[:64, :64]
    >>> depth = np.where(xx < 32, 0.0, 5.0) + 0.01 * yy          # a step
    >>> one = np.zeros((64, 64), int)
    >>> blur_scale(3 * masked_blur(depth, one >= 0, 4.0) + 1, depth, one)
    4.0
    >>> two = (xx >= 32).astype(int)                             # the step cut, misplaced by 9
    >>> blur_scale(3 * depth + 1, depth + 9.0 * two, two)
    0.0
    """
    mask = groups >= 0
    f = max(1, int(np.ceil(max(mask.shape) / BLUR_SIDE)))
    h, w = (mask.shape[0] // f) * f, (mask.shape[1] // f) * f

    def blocks(a):
        return a[:h, :w].reshape(h // f, f, w // f, f)

    ok = mask & np.isfinite(prior_depth) & np.isfinite(depth)
    n = blocks(ok.astype(float)).sum(axis=(1, 3))
    inside = n >= 0.5 * f * f
    if inside.sum() < 3:
        return 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = blocks(np.where(ok, prior_depth, 0.0)).sum(axis=(1, 3)) / n
        d = blocks(np.where(ok, depth, 0.0)).sum(axis=(1, 3)) / n
    g = blocks(np.where(ok, groups, -1)).max(axis=(1, 3))
    spreads = []
    for s in BLUR_GRID:
        ds = _blurred(d, inside, s)
        on = inside & np.isfinite(ds)
        spreads.append(_offset_fit_spread(ds[on], p[on], np.unique(g[on], return_inverse=True)[1]))
    return BLUR_GRID[int(np.argmin(spreads))] * f


def _offset_fit_spread(x: np.ndarray, y: np.ndarray, group: np.ndarray, iterations: int = 3) -> float:
    """The robust spread of y ~ a x + an offset per ``group`` (ints 0..G-1), fitted as
    :func:`~fnin_cli.prior.robust_lstsq` fits it with one indicator column per group, but
    with the offsets eliminated (each the weighted group mean): O(n) a step, not O(n G^2)."""
    w = np.ones(x.size)

    def fit(w):
        sw = np.bincount(group, w)
        keep = sw > 0
        mx = np.divide(np.bincount(group, w * x), sw, out=np.zeros_like(sw), where=keep)
        my = np.divide(np.bincount(group, w * y), sw, out=np.zeros_like(sw), where=keep)
        xc, yc = x - mx[group], y - my[group]
        den = float(np.sum(w * xc * xc))
        a = float(np.sum(w * xc * yc)) / den if den > 0 else 0.0
        return yc - a * xc

    spread = 0.0
    for _ in range(iterations):
        r = fit(w)
        spread = 1.4826 * float(np.median(np.abs(r)))
        if spread <= 0:
            break
        w = 1.0 / (1.0 + (r / (2.385 * spread)) ** 2)
    return spread


def _blurred(d: np.ndarray, inside: np.ndarray, s: float) -> np.ndarray:
    """:func:`masked_blur` of ``d`` by ``s`` px; from 6 px on, computed on a map 4 times
    coarser and brought back bilinearly (a blur that wide has nothing finer to lose)."""
    from scipy.ndimage import zoom

    if s <= 0:
        return d
    if s < 6:
        return masked_blur(d, inside, s)
    h, w = (d.shape[0] // 4) * 4, (d.shape[1] // 4) * 4
    n = inside[:h, :w].reshape(h // 4, 4, w // 4, 4).sum(axis=(1, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        coarse = np.where(inside, d, 0.0)[:h, :w].reshape(h // 4, 4, w // 4, 4).sum(axis=(1, 3)) / n
    smooth = masked_blur(coarse, n > 0, s / 4)
    smooth = np.where(np.isfinite(smooth), smooth, np.nanmean(smooth))
    out = np.full(d.shape, np.nan)
    out[:h, :w] = zoom(smooth, 4, order=1, mode="nearest", grid_mode=True)[:h, :w]
    out[~inside] = np.nan
    return out
