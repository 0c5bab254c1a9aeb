"""BiNI rounds at scale: most rounds on a block-reduced grid, then a few at full resolution.

At camera sizes each BiNI round is a full-resolution solve, and the rounds after FNIN
were 70% of a 24 MP run. :func:`multiscale_rounds` runs the rounds on the normal map
reduced by ``factor`` (normals averaged over ``factor`` x ``factor`` blocks and
renormalised; the reduced mask holds the blocks wholly inside the mask; K scaled), carries
the change of the unknown they made back to every full-resolution pixel (mask-aware
bilinear interpolation, the nearest reduced pixel where none is near), then runs at most
``fine_rounds`` full-resolution rounds from there with the caller's prior, bias and AMG
hierarchy. A candidate for the rounds after a method when
the input has at least ``MIN_PIXELS`` masked pixels. Not adopted (README.md here): kept
with the study, outside the package, so that its measurement can be re-run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fnin_cli.camera import Camera
from fnin_cli.solvers.bini import IntegrationResult, integrate_bini
from fnin_cli.solvers.system import NormalSystem

# the rounds go multiscale from this many masked pixels: below it (DiLiGenT, the 512x612
# bench views) coarse rounds lost at equal time (docs/decisions.md#coarse-rounds), so
# those inputs keep the plain rounds (studies/multiscale-rounds)
MIN_PIXELS = 300_000
# block size of the reduced grid (studies/multiscale-rounds)
FACTOR = 2
# full-resolution rounds after the reduced ones (studies/multiscale-rounds)
FINE_ROUNDS = 2
# a reduced grid needs this many masked pixels to be worth solving on; fewer: plain rounds
MIN_COARSE_PIXELS = 1000


@dataclass(frozen=True)
class Multiscale:
    """How :func:`multiscale_rounds` splits the rounds: ``factor`` (block size),
    ``fine_rounds`` (full-resolution rounds after the reduced ones), ``min_pixels``
    (masked pixels from which the rounds go multiscale)."""

    factor: int = FACTOR
    fine_rounds: int = FINE_ROUNDS
    min_pixels: int = MIN_PIXELS

    def applies(self, system: NormalSystem) -> bool:
        """Whether the rounds on ``system`` go multiscale."""
        return self.factor > 1 and system.n >= self.min_pixels


def block_reduce(normals: np.ndarray, mask: np.ndarray, camera: Camera, factor: int):
    """(normals, mask, camera) of the grid reduced by ``factor``.

    A reduced pixel is in the mask when its whole ``factor`` x ``factor`` block is (a
    trailing partial block is dropped); its normal is the block's mean, renormalised.
    Perspective: fx, fy divided by ``factor`` and c' = (c + 1/2) / factor - 1/2 (pixel
    centres); orthographic: the pixel size times ``factor``.

    Examples
    --------
    >>> n = np.dstack([np.zeros((4, 6)), np.zeros((4, 6)), -np.ones((4, 6))]).astype(np.float32)
    >>> m = np.ones((4, 6), bool); m[0, 0] = False
    >>> nc, mc, cam = block_reduce(n, m, Camera(None, 0.5), 2)
    >>> mc.tolist(), cam.pixel_size
    ([[False, True, True], [True, True, True]], 1.0)
    """
    f = int(factor)
    h, w = mask.shape[0] // f, mask.shape[1] // f
    m = mask[:h * f, :w * f].reshape(h, f, w, f).all(axis=(1, 3))
    nc = np.zeros((h, w, 3), np.float32)
    for c in range(3):
        ch = np.where(mask[:h * f, :w * f], normals[:h * f, :w * f, c], 0.0).astype(np.float32)
        nc[..., c] = ch.reshape(h, f, w, f).sum(axis=(1, 3))
    length = np.sqrt((nc * nc).sum(axis=-1))
    m &= length > 1e-6
    nc /= np.where(m, length, 1.0)[..., None]
    nc[~m] = np.nan
    if camera.perspective:
        K = np.array(camera.K, np.float64)
        K[0, 0] /= f
        K[1, 1] /= f
        K[0, 2] = (K[0, 2] + 0.5) / f - 0.5
        K[1, 2] = (K[1, 2] + 0.5) / f - 0.5
        cam = Camera(K)
    else:
        cam = Camera(None, camera.pixel_size * f)
    return nc, m, cam


def block_mean(img: np.ndarray, mask_coarse: np.ndarray, factor: int) -> np.ndarray:
    """The mean of ``img`` (H, W) over each block of the reduced mask, as values over its
    masked pixels (row-major, as ``NormalSystem`` orders them)."""
    f = int(factor)
    h, w = mask_coarse.shape
    blocks = np.asarray(img[:h * f, :w * f], np.float64).reshape(h, f, w, f).mean(axis=(1, 3))
    return blocks[mask_coarse]


def carry_up(values: np.ndarray, mask_coarse: np.ndarray, mask: np.ndarray, factor: int) -> np.ndarray:
    """Values over the reduced grid's masked pixels, interpolated to the full grid's
    masked pixels: bilinear between reduced pixel centres over the reduced mask's pixels
    only (weights renormalised), the nearest reduced masked pixel where none of the four
    is in the mask.

    Examples
    --------
    >>> mc = np.ones((2, 2), bool)
    >>> carry_up(np.array([0.0, 1.0, 0.0, 1.0]), mc, np.ones((4, 4), bool), 2)[:4].round(3).tolist()
    [0.0, 0.0, 0.5, 1.0]
    """
    from scipy import ndimage

    f = int(factor)
    h, w = mask_coarse.shape
    grid = np.zeros((h, w))
    grid[mask_coarse] = values
    if not mask_coarse.all():   # fill outside from the nearest reduced masked pixel
        idx = ndimage.distance_transform_edt(~mask_coarse, return_distances=False, return_indices=True)
        filled = grid[idx[0], idx[1]]
    else:
        filled = grid
    rows, cols = np.nonzero(mask)
    out = np.zeros(rows.size)
    wsum = np.zeros(rows.size)
    # pixel centre (i + 1/2) of the full grid at (i + 1/2) / f - 1/2 of the reduced one
    y = (rows + 0.5) / f - 0.5
    x = (cols + 0.5) / f - 0.5
    y0 = np.floor(y).astype(np.int64)
    x0 = np.floor(x).astype(np.int64)
    ty, tx = y - y0, x - x0
    for dy, wy in ((0, 1.0 - ty), (1, ty)):
        yy = np.clip(y0 + dy, 0, h - 1)
        for dx, wx in ((0, 1.0 - tx), (1, tx)):
            xx = np.clip(x0 + dx, 0, w - 1)
            wgt = wy * wx * mask_coarse[yy, xx]
            out += wgt * grid[yy, xx]
            wsum += wgt
    near = np.clip(np.rint(y).astype(np.int64), 0, h - 1), np.clip(np.rint(x).astype(np.int64), 0, w - 1)
    return np.where(wsum > 1e-12, out / np.maximum(wsum, 1e-12), filled[near])


def multiscale_rounds(system: NormalSystem, normals: np.ndarray, z0: np.ndarray, lam: float, k: float,
                      max_rounds: int, tol: float, cg_rtol: float, solver: str = "amg",
                      hierarchy: dict | None = None, bias: dict | None = None, logits=None,
                      scale: float = 1.0, ms: Multiscale = Multiscale(), callback=None,
                      coarse_hierarchy: dict | None = None) -> IntegrationResult:
    """BiNI rounds from ``z0`` (prior ``z0``): at most ``max_rounds`` on the grid reduced by
    ``ms.factor``, the change carried up (:func:`carry_up`), then at most ``ms.fine_rounds``
    at full resolution (``hierarchy``, ``bias``: as :func:`~fnin_cli.solvers.bini.integrate_bini`
    takes them). ``logits``: the edge net's (2, H, W) logits of w_u-, w_v- whose block means
    times ``scale`` are the reduced rounds' bias (None: BiNI's own weights there).
    ``callback(round, energy, z)`` after each round (reduced rounds: z is None).
    ``coarse_hierarchy``: the reduced rounds' AMG cache settings (a fresh dict: its own).

    Returns the full-resolution :class:`~fnin_cli.solvers.bini.IntegrationResult`, its
    ``iterations`` counting the rounds at both scales and ``seconds`` each scale's.
    """
    t0 = time.perf_counter()
    nc, mc, cam = block_reduce(normals, system.mask, system.camera, ms.factor)
    if int(mc.sum()) < MIN_COARSE_PIXELS:
        return integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0, max_iter=max_rounds, tol=tol,
                              cg_rtol=cg_rtol, solver=solver, hierarchy=hierarchy, bias=bias, callback=callback)
    coarse = NormalSystem(nc, mc, cam)
    zc0 = block_mean(system.to_image(z0, 0.0), mc, ms.factor)
    bias_c = None
    if logits is not None:
        bias_c = {ax: scale * block_mean(logits[i], mc, ms.factor) for i, ax in enumerate("uv")}
    cb = (lambda i, e, z: callback(i, e, None)) if callback is not None else None
    rc = integrate_bini(coarse, k=k, z0=zc0, lam=lam, z_prior=zc0, max_iter=max_rounds, tol=tol,
                        cg_rtol=cg_rtol, solver=solver, hierarchy=dict(coarse_hierarchy or {}), bias=bias_c, callback=cb)
    z_start = z0 + carry_up(rc.z - zc0, mc, system.mask, ms.factor)
    t1 = time.perf_counter()
    done = rc.iterations
    cbf = (lambda i, e, z: callback(done + i, e, z)) if callback is not None else None
    rf = integrate_bini(system, k=k, z0=z_start, lam=lam, z_prior=z0, max_iter=max(1, ms.fine_rounds), tol=tol,
                        cg_rtol=cg_rtol, solver=solver, hierarchy=hierarchy, bias=bias, callback=cbf)
    seconds = {"coarse_rounds": t1 - t0, "fine_rounds": time.perf_counter() - t1}
    return IntegrationResult(rf.z, rf.weights, done + rf.iterations, seconds, rc.history + rf.history)


def edge_logits(p_img: np.ndarray) -> np.ndarray:
    """The logits of the edge net's w_u-, w_v- image (2, H, W), clipped as
    :func:`fnin_cli.solvers.stage2.edge_prior` clips them."""
    q = np.clip(p_img, 1e-6, 1.0 - 1e-6)
    return np.log(q / (1.0 - q))


def run_rounds(system, normals, z, edge_p, rounds, lam, bini_k=None, hierarchy=None, callback=None,
               multiscale: Multiscale | None = None):
    """The rounds after a method as :func:`fnin_cli.pipeline.integrate` runs them, or the
    multiscale candidate from ``multiscale.min_pixels`` masked pixels."""
    from fnin_cli import pipeline as P

    bias, k = P.rounds_prior(system, edge_p, bini_k)
    ms = Multiscale() if multiscale is None else multiscale
    if ms.applies(system):
        logits = None if bias is None else edge_logits(edge_p)
        return multiscale_rounds(system, normals, z, lam, k, rounds.max_rounds, rounds.tol, P.REFINE_RTOL,
                                 P.REFINE_SOLVER, hierarchy, bias, logits, P.ROUNDS_EDGE_PRIOR or 0.0, ms,
                                 callback, P.rounds_hierarchy())
    return integrate_bini(system, k=k, z0=z, lam=lam, z_prior=z, max_iter=rounds.max_rounds, tol=rounds.tol,
                          cg_rtol=P.REFINE_RTOL, solver=P.REFINE_SOLVER, hierarchy=hierarchy, callback=callback,
                          bias=bias)
