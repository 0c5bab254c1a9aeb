"""Depth priors derived from a case's ground truth, for ``fnin bench --prior``.

Each is drawn with a seed (the bench's ``--prior-seed`` and the case's name) so runs
repeat, and models what users hold beside their normals (docs/methods.md#depth-prior):

- ``dense8``: a depth sensor: 8 x 8 block means of the true depth (a prior at 1/8 of the
  map's size) with depth-dependent noise, sigma = 0.1% of the median depth times
  (z / median)^2 (1.5 mm at 1.5 m; orthographic: 1% of the depth range), and holes where
  a block is mostly off the object or its mean normal is within 17 deg of grazing
  (|cos| < 0.3), as structured light and time-of-flight lose them, plus 5% of the blocks
  at random;
- ``sparse``: SfM points: 200 pixels of the object with noise 0.033% of the median depth
  (0.5 mm at 1.5 m; orthographic: 0.3% of the depth range);
- ``relative``: a monocular network's depth: the true depth smoothed heavily (a Gaussian
  of 1/20 of the image's long side, inside the mask), then an unknown affine map
  a d + b (a in [0.5, 2], b within 30% of the median depth);
- ``patches``: a full-size map that is wrong in places: the true depth with noise 0.067%
  of the median depth (1 mm at 1.5 m; orthographic: 0.5% of the depth range), sigma given,
  and three discs of 5% of the mask each shifted back by 2% of the median depth (30 mm
  at 1.5 m; orthographic: 15% of the range); ``meta["wrong"]`` holds the discs' pixels;
- ``mono-depth`` and ``mono-disparity``: a monocular network's output: the true depth
  warped by a smooth field of 4% of the object's depth range (a few random low-frequency
  waves), blurred by a Gaussian of 3 px inside the mask, then an unknown affine map of
  depth (a z + b, kind relative) or of disparity (a / z + b, kind disparity);
- ``dense8-nosigma``, ``sparse-nosigma`` and ``patches-nosigma``: ``dense8``, ``sparse`` and
  ``patches`` as a user without a noise figure gives them: sigma is the reader's default
  (:func:`~fnin_cli.prior.default_sigma`).
"""

from __future__ import annotations

import zlib

import numpy as np

from dataclasses import replace

from ..blur import masked_blur
from ..prior import DepthPrior, default_sigma
from ..solvers.system import view_cosine
from ..solvers.system import NormalSystem

KINDS = ("dense8", "sparse", "relative", "patches", "mono-depth", "mono-disparity", "dense8-nosigma",
         "sparse-nosigma", "patches-nosigma")
# the kinds whose prior fixes the depth (an absolute error, nothing fitted, means something)
ABSOLUTE_KINDS = ("dense8", "sparse", "patches", "dense8-nosigma", "sparse-nosigma", "patches-nosigma")
BLOCK = 8
SPARSE_POINTS = 200
PATCHES, PATCH_SHARE = 3, 0.05       # patches: three discs of 5% of the mask each
MONO_WARP, MONO_BLUR = 0.04, 3.0     # mono-*: warp of 4% of the depth range, blur of 3 px


def case_seed(seed: int, name: str) -> int:
    """The seed of one case's prior: the bench's ``seed`` and the case's name."""
    return (int(seed) * 1_000_003 + zlib.crc32(name.encode())) % 2**32


def make_prior(kind: str, gt: np.ndarray, inp, seed: int) -> DepthPrior:
    """A ``kind`` prior (:data:`KINDS`) of the true depth ``gt`` for the input ``inp``."""
    rng = np.random.default_rng(seed)
    mask = inp.mask & np.isfinite(gt)
    v = gt[mask]
    persp = inp.camera.perspective
    median = float(np.median(v))
    span = float(np.percentile(v, 95) - np.percentile(v, 5)) or 1.0
    if kind == "dense8":
        return _dense(gt, inp, mask, rng, median, span, persp)
    if kind == "sparse":
        sigma = 0.5 / 1500 * median if persp else 0.003 * span
        rows, cols = np.nonzero(mask)
        pick = rng.choice(rows.size, min(SPARSE_POINTS, rows.size), replace=False)
        depth = np.full(gt.shape, np.nan)
        depth[rows[pick], cols[pick]] = gt[rows[pick], cols[pick]] + rng.normal(0.0, sigma, pick.size)
        return DepthPrior(depth, np.isfinite(depth).astype(float), sigma, "absolute", f"sparse (seed {seed})", 0)
    if kind == "relative":
        return _relative(gt, mask, rng, median)
    if kind == "patches":
        return _patches(gt, mask, rng, median, span, persp)
    if kind in ("mono-depth", "mono-disparity"):
        return _mono(gt, mask, rng, median, span, kind == "mono-disparity")
    if kind in ("dense8-nosigma", "sparse-nosigma", "patches-nosigma"):
        given = make_prior(kind.split("-")[0], gt, inp, seed)
        return replace(given, sigma=default_sigma(given.depth, persp), source=f"{given.source} (sigma not given)",
                       sigma_given=False)
    raise ValueError(f"unknown prior kind '{kind}'; use one of {', '.join(KINDS)}")


def _dense(gt, inp, mask, rng, median, span, persp) -> DepthPrior:
    h, w = gt.shape
    hc, wc = h // BLOCK, w // BLOCK
    crop = (slice(0, hc * BLOCK), slice(0, wc * BLOCK))
    m = mask[crop].reshape(hc, BLOCK, wc, BLOCK)
    vals = np.where(mask, gt, 0.0)[crop].reshape(hc, BLOCK, wc, BLOCK)
    count = m.sum(axis=(1, 3))
    blocks = np.full((hc, wc), np.nan)
    np.divide(vals.sum(axis=(1, 3)), count, out=blocks, where=count > 0)
    cosine = np.zeros(gt.shape)
    cosine[inp.mask] = view_cosine(NormalSystem(inp.normals, inp.mask, inp.camera))
    c = np.where(mask, cosine, 0.0)[crop].reshape(hc, BLOCK, wc, BLOCK).sum(axis=(1, 3))
    mean_cos = np.divide(c, count, out=np.zeros_like(c), where=count > 0)
    keep = (count >= BLOCK * BLOCK // 2) & (mean_cos >= 0.3) & (rng.uniform(size=blocks.shape) >= 0.05)
    blocks[~keep] = np.nan
    if persp:
        s0 = 0.001 * median
        noise = s0 * (np.where(np.isfinite(blocks), blocks, median) / median) ** 2
    else:
        s0 = 0.01 * span
        noise = np.full(blocks.shape, s0)
    blocks = blocks + rng.normal(0.0, 1.0, blocks.shape) * noise
    depth = np.full((h, w), np.nan)
    depth[crop] = np.kron(blocks, np.ones((BLOCK, BLOCK)))
    share = np.where(np.isfinite(depth), 1.0 / BLOCK ** 2, 0.0)
    return DepthPrior(depth, share, s0, "absolute", "dense8", BLOCK)


def _relative(gt, mask, rng, median) -> DepthPrior:
    smooth = masked_blur(gt, mask, max(gt.shape) / 20.0)
    a = float(np.exp(rng.uniform(np.log(0.5), np.log(2.0))))
    b = float(rng.uniform(-0.3, 0.3)) * median
    depth = a * smooth + b
    depth[~(np.isfinite(depth) & (depth > 0))] = np.nan
    spread = float(np.nanstd(depth)) or 1.0
    return DepthPrior(depth, np.isfinite(depth).astype(float), 0.1 * spread, "relative", "relative", 1)


def _patches(gt, mask, rng, median, span, persp) -> DepthPrior:
    sigma = median / 1500 if persp else 0.005 * span
    shift = 0.02 * median if persp else 0.15 * span
    rows, cols = np.nonzero(mask)
    n = int(round(PATCH_SHARE * rows.size))
    wrong = np.zeros(gt.shape, bool)
    for _ in range(PATCHES):
        free = np.flatnonzero(~wrong[rows, cols])
        c = free[rng.integers(free.size)]
        # the n mask pixels nearest a centre: a disc of 5% of the mask, clipped to it
        near = np.argsort((rows - rows[c]) ** 2 + (cols - cols[c]) ** 2, kind="stable")[:n]
        wrong[rows[near], cols[near]] = True
    depth = np.where(mask, gt + rng.normal(0.0, sigma, gt.shape), np.nan)
    depth[wrong] += shift
    return DepthPrior(depth, np.isfinite(depth).astype(float), sigma, "absolute", "patches", 1,
                      meta={"wrong": wrong})


def _mono(gt, mask, rng, median, span, disparity: bool) -> DepthPrior:
    h, w = gt.shape
    yy, xx = np.mgrid[:h, :w] / max(h, w)
    warp = np.zeros(gt.shape)
    for _ in range(3):   # low-frequency waves of 1-2 periods across the image
        f, angle, phase = rng.uniform(1.0, 2.0), rng.uniform(0, np.pi), rng.uniform(0, 2 * np.pi)
        warp += np.cos(2 * np.pi * f * (xx * np.cos(angle) + yy * np.sin(angle)) + phase)
    warp *= MONO_WARP * span / max(float(np.max(np.abs(warp[mask]))), 1e-12)
    z = masked_blur(gt + warp, mask, MONO_BLUR)
    if disparity:
        a = median * float(np.exp(rng.uniform(np.log(0.5), np.log(2.0))))   # a / z about 0.5..2
        b = float(rng.uniform(-0.2, 0.5))
        values, kind = a / z + b, "disparity"
    else:
        a = float(np.exp(rng.uniform(np.log(0.5), np.log(2.0))))
        b = float(rng.uniform(-0.3, 0.3)) * median
        values, kind = a * z + b, "relative"
    values[~(np.isfinite(values) & (values > 0))] = np.nan
    spread = float(np.nanstd(values)) or 1.0
    source = "mono-disparity" if disparity else "mono-depth"
    return DepthPrior(values, np.isfinite(values).astype(float), 0.1 * spread, kind, source, 1)


def fit_to_truth(prior: DepthPrior, gt: np.ndarray, mask: np.ndarray) -> tuple:
    """(the prior as depth, how it was fitted): a relative prior's best affine map of depth
    to ``gt`` (least squares over the pixels with both), a disparity prior's best affine
    map of disparity (a / z + b fitted to 1 / gt, then inverted); an absolute prior as is."""
    if prior.kind == "absolute":
        return prior.depth.astype(np.float64), None
    m = prior.valid & mask & np.isfinite(gt)
    p = prior.depth[m].astype(np.float64)
    target = 1.0 / gt[m] if prior.kind == "disparity" else gt[m]
    (a, b), *_ = np.linalg.lstsq(np.stack([p, np.ones(p.size)], 1), target, rcond=None)
    fitted = a * prior.depth.astype(np.float64) + b
    if prior.kind == "disparity":
        fitted = np.where(fitted > 0, 1.0 / np.where(fitted > 0, fitted, 1.0), np.nan)
        return fitted, "affine in disparity, least squares to 1/gt"
    return fitted, "affine in depth, least squares to gt"


def prior_alone(prior: DepthPrior, mask: np.ndarray) -> np.ndarray:
    """The prior alone as a depth map over ``mask``: its values, and where it has none the
    nearest value it has (a sparse prior's points filled as nearest-neighbour regions)."""
    from scipy.ndimage import distance_transform_edt

    has = prior.valid
    _, (rows, cols) = distance_transform_edt(~has, return_indices=True)
    out = prior.depth[rows, cols]
    out[~mask] = np.nan
    return out


def write_prior(path, prior: DepthPrior) -> str:
    """Write ``prior`` as a user would give it: a 1/k map as ``.npy`` at its own size, a
    full-size map as ``.npy``, points as a ``row,col,depth`` CSV. Returns the file written."""
    from pathlib import Path

    path = Path(path)
    if prior.block == 0:
        out = path.with_suffix(".csv")
        rows, cols = np.nonzero(prior.valid)
        lines = ["row,col,depth"] + [f"{r},{c},{prior.depth[r, c]:.6g}" for r, c in zip(rows, cols)]
        out.write_text("\n".join(lines) + "\n")
        return str(out)
    out = path.with_suffix(".npy")
    k = prior.block
    h, w = prior.depth.shape
    arr = prior.depth[:h // k * k:k, :w // k * k:k] if k > 1 else prior.depth
    np.save(out, np.asarray(arr, np.float32))
    return str(out)
