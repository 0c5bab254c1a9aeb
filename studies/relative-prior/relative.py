"""Fusing a relative depth prior (``--prior-kind relative``) with the integrated surface.

A relative prior, a monocular network's depth, is known up to an affine map of depth and is
smooth: it knows where the pieces of an object sit and the lowest frequencies, not the
detail. Fusing it (docs/methods.md#depth-prior):

1. :func:`~fnin_cli.prior.fit_relative` maps it onto the result's main piece;
2. :func:`fit_blur` finds its resolution: the Gaussian under which the result's main piece,
   blurred inside the mask, matches it best;
3. :func:`piece_shifts` moves the pieces the normals hold only by one extrapolated normal
   (``pieces.cut_pieces(mutual=True)``) where, blurred as the prior is, they match it
   better elsewhere beyond ``prior.OUTLIER_SIGMAS`` standard errors;
4. one solve with the moved pieces cut loose and the prior's target *de-blurred*: the
   shifted result plus the prior's residual from its blurred version, so the prior corrects
   what it resolves and leaves the normals' detail alone.

The blur and the shifts are fitted on a grid of block means at most :data:`GRID_SIDE` long.
"""

from __future__ import annotations

import numpy as np

from fnin_cli.prior import OUTLIER_SIGMAS, DepthPrior, fit_relative
from fnin_cli.solvers.pieces import CUT_WEIGHT, REPORT_MIN_PIXELS, cut_pieces
from fnin_cli.solvers.system import DataTerm, NormalSystem

# the prior's blur and the pieces' shifts are fitted on block means at most this many
# blocks long: a smooth prior loses nothing there, and the blurs stay cheap at 24 MP
# (128 moved a piece of bear wrongly: README.md)
GRID_SIDE = 512


def block_means(img: np.ndarray, weight: np.ndarray, d: int) -> tuple:
    """(weighted block means, block weights) of ``img`` over d x d blocks (the image
    padded with weight 0 to a multiple of d).

    Examples
    --------
    >>> m, w = block_means(np.arange(6.0).reshape(2, 3), np.ones((2, 3)), 2)
    >>> m.tolist(), w.tolist()
    ([[2.0, 3.5]], [[4.0, 2.0]])
    """
    h, w = img.shape
    hc, wc = -(-h // d), -(-w // d)
    pad = ((0, hc * d - h), (0, wc * d - w))
    wt = np.pad(weight.astype(np.float64), pad)
    val = np.pad(np.where(weight > 0, img, 0.0), pad) * wt
    wsum = wt.reshape(hc, d, wc, d).sum(axis=(1, 3))
    mean = np.zeros_like(wsum)
    np.divide(val.reshape(hc, d, wc, d).sum(axis=(1, 3)), wsum, out=mean, where=wsum > 0)
    return mean, wsum


def masked_blur(img: np.ndarray, weight: np.ndarray, sigma: float, den: np.ndarray | None = None) -> np.ndarray:
    """The weight-normalised Gaussian blur of ``img`` (0 where no weight reaches);
    ``den``: the blurred weight, where the caller has it."""
    if sigma <= 0:
        return np.where(weight > 0, img, 0.0)
    from scipy.ndimage import gaussian_filter

    num = gaussian_filter(np.where(weight > 0, img, 0.0) * weight, sigma, mode="nearest")
    if den is None:
        den = gaussian_filter(weight.astype(np.float64), sigma, mode="nearest")
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 1e-9 * max(float(weight.max()), 1e-300))
    return out


def _blurred_piece(share: np.ndarray, weight: np.ndarray, sigma: float, den: np.ndarray) -> np.ndarray:
    """:func:`masked_blur` of a piece's cell shares, computed on the piece's bounding box
    grown by the kernel's radius (the same values: beyond it the blur of the piece is 0)."""
    if sigma <= 0:
        return masked_blur(share, weight, sigma)
    rows, cols = np.nonzero(share)
    if rows.size == 0:
        return np.zeros_like(share)
    r = int(4.0 * sigma + 0.5) + 1
    box = (slice(max(rows.min() - r, 0), rows.max() + r + 1), slice(max(cols.min() - r, 0), cols.max() + r + 1))
    # a box side inside the grid sees zeros beyond it either way; one on the grid's edge is the edge
    from scipy.ndimage import gaussian_filter

    num = gaussian_filter(share[box] * weight[box], sigma, mode="nearest")
    out = np.zeros_like(share)
    part = np.zeros_like(num)
    np.divide(num, den[box], out=part, where=den[box] > 1e-9 * max(float(weight.max()), 1e-300))
    out[box] = part
    return out


def fit_blur(target: np.ndarray, z: np.ndarray, z_weight: np.ndarray, fit: np.ndarray) -> tuple:
    """(sigma, b, blurred z, blurred weight or None): the blur (0 or 1, 2, 4, ... grid
    cells, up to a quarter of the grid; the search stops after two in a row fit worse than
    the best) under which ``target ~ blur(z) + b`` fits best on the cells ``fit`` (least
    median absolute residual, b their median), ``z`` blurred with its weights ``z_weight``.
    The slope is 1: ``target`` is a prior already mapped onto z by
    :func:`~fnin_cli.prior.fit_relative`, and a least-squares map of z onto a blurred z
    has slope 1 (a slope fitted here can collapse towards 0 where the prior hardly varies
    with z, and the de-blurred target divides by it)."""
    from scipy.ndimage import gaussian_filter

    best, worse = None, 0
    sigmas = [0.0] + [float(2 ** i) for i in range(int(np.log2(max(max(z.shape) / 4, 1))) + 1)]
    t = target[fit]
    for s in sigmas:
        den = gaussian_filter(z_weight.astype(np.float64), s, mode="nearest") if s > 0 else None
        bz = masked_blur(z, z_weight, s, den)
        diff = t - bz[fit]
        b = float(np.median(diff))
        r = float(np.median(np.abs(diff - b)))
        if best is None or r < best[0]:
            best, worse = (r, s, b, bz, den), 0
        else:
            worse += 1
            if worse == 2:       # past the prior's blur: wider ones only fit worse (and cost most)
                break
    return best[1:]


def piece_shifts(target: np.ndarray, t_weight: np.ndarray, bz: np.ndarray, columns: list, b: float,
                 sigma: float) -> np.ndarray:
    """Per piece, the shift that the prior asks for: least squares of ``target ~ bz + b +
    sum_k s_k columns_k`` on the cells with prior weight (``bz``: the blurred result,
    ``columns``: each piece's blurred cell shares, both by :func:`masked_blur` at
    ``sigma``), 0 where it is within OUTLIER_SIGMAS standard errors (one independent
    residual per blur footprint, 2 pi sigma^2 cells)."""
    has = t_weight > 0
    X = np.stack([c[has] for c in columns], 1)
    y = (target - bz - b)[has]
    w = t_weight[has] / t_weight[has].mean()
    sw = np.sqrt(w)
    shifts, *_ = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)
    res = y - X @ shifts
    footprint = max(1.0, 2 * np.pi * sigma ** 2)
    cov = np.linalg.pinv((X * w[:, None]).T @ X) * float(np.average(res ** 2, weights=w)) * footprint
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return np.where(np.abs(shifts) > OUTLIER_SIGMAS * se, shifts, 0.0)


def _upsample(coarse: np.ndarray, d: int, shape: tuple) -> np.ndarray:
    """Bilinear from block centres to the pixels of ``shape``."""
    if d == 1:
        return coarse
    from scipy.ndimage import map_coordinates

    rows = (np.arange(shape[0]) + 0.5) / d - 0.5
    cols = (np.arange(shape[1]) + 0.5) / d - 0.5
    rr, cc = np.meshgrid(rows, cols, indexing="ij")
    return map_coordinates(coarse, [rr, cc], order=1, mode="nearest")


def _piece_shares(system: NormalSystem, labels: np.ndarray, n: int, d: int, shape: tuple) -> list:
    """Per piece 1 .. n-1, each d x d cell's share of the mask's pixels that are that
    piece's (:func:`block_means` of its indicator, from the pixels' cells)."""
    rows, cols = np.nonzero(system.mask)
    cell = (rows // d) * shape[1] + cols // d
    size = shape[0] * shape[1]
    total = np.bincount(cell, minlength=size).astype(np.float64)
    out = []
    for k in range(1, n):
        share = np.zeros(size)
        np.divide(np.bincount(cell[labels == k], minlength=size), total, out=share, where=total > 0)
        out.append(share.reshape(shape))
    return out


def cut_moved(system: NormalSystem, weights: dict, labels: np.ndarray, moved: np.ndarray) -> dict:
    """``weights`` with every edge between a moved piece and another large piece (label >=
    0) cut (both weights 0); edges to smaller pieces (label -1) stay."""
    out = {k: np.array(w, np.float64, copy=True) for k, w in weights.items()}
    is_moved = np.append(moved, False)[labels]
    for axis, p, q in (("u", system.hp, system.hq), ("v", system.vp, system.vq)):
        cut = (labels[p] != labels[q]) & (is_moved[p] | is_moved[q]) & (labels[p] >= 0) & (labels[q] >= 0)
        out[axis + "+"][p[cut]] = 0.0
        out[axis + "-"][q[cut]] = 0.0
    return out


def fuse_relative(system: NormalSystem, z: np.ndarray, weights: dict, prior: DepthPrior, lam: float, solve) -> tuple:
    """(z, fitted prior, weights): the module's steps 1-4 on the result ``z`` (its rounds'
    ``weights``), ``solve(weights, term, x0)`` the final solve (the caller's backend), the
    classic prior ``lam`` towards the shifted result. The weights returned carry the cuts
    of the moved pieces."""
    camera, mask = system.camera, system.mask
    labels, sizes, _ = cut_pieces(system, weights, CUT_WEIGHT, mutual=True)
    labels = np.where(sizes[labels] >= REPORT_MIN_PIXELS, labels, -1)
    zimg = system.to_image(z, fill=0.0)
    main = system.to_image((labels == 0).astype(float), fill=0.0) > 0
    fitted, _ = fit_relative(prior, np.exp(system.to_image(z)) if camera.perspective else system.to_image(z),
                             main, camera.perspective)
    term = fitted.relative_term(mask, camera)
    has = system.to_image((term.weight > 0).astype(float), fill=0.0)
    timg = system.to_image(term.target, fill=0.0)
    d = max(1, -(-max(mask.shape) // GRID_SIDE))
    z_c, z_w = block_means(zimg, mask.astype(float), d)
    t_c, t_w = block_means(timg, has, d)
    main_c, _ = block_means(main.astype(float), mask.astype(float), d)
    sigma, b, bz, den = fit_blur(t_c, z_c, z_w, (t_w > 0) & (main_c >= 0.5))
    n = int(labels.max()) + 1
    moved = np.zeros(max(n, 1), bool)
    z = np.array(z, np.float64, copy=True)
    if n > 1:
        columns = [_blurred_piece(p, z_w, sigma, den) for p in _piece_shares(system, labels, n, d, z_c.shape)]
        shifts = piece_shifts(t_c, t_w, bz, columns, b, sigma)
        for k in np.flatnonzero(shifts) + 1:
            moved[k] = True
            z[labels == k] += shifts[k - 1]
            bz = bz + shifts[k - 1] * columns[k - 1]     # the blur is linear: blur of the shifted z
    # the de-blurred target: the shifted result plus the prior's residual from its blur
    target = z + _upsample(t_c - bz - b, d, mask.shape)[mask]
    term = DataTerm(term.weight, np.where(term.weight > 0, target, 0.0))
    weights = cut_moved(system, weights, labels, moved)
    z, _ = solve(weights, DataTerm(lam, z).plus(term), z)
    return z, fitted, weights
