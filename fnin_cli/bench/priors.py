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
  a d + b (a in [0.5, 2], b within 30% of the median depth).
"""

from __future__ import annotations

import zlib

import numpy as np

from ..prior import DepthPrior
from ..solvers.rounds import view_cosine
from ..solvers.system import NormalSystem

KINDS = ("dense8", "sparse", "relative")
BLOCK = 8
SPARSE_POINTS = 200


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
    from scipy.ndimage import gaussian_filter

    s = max(gt.shape) / 20.0
    filled = gaussian_filter(np.where(mask, gt, 0.0), s, mode="nearest")
    weight = gaussian_filter(mask.astype(float), s, mode="nearest")
    smooth = np.full(gt.shape, np.nan)
    np.divide(filled, weight, out=smooth, where=mask & (weight > 1e-6))
    a = float(np.exp(rng.uniform(np.log(0.5), np.log(2.0))))
    b = float(rng.uniform(-0.3, 0.3)) * median
    depth = a * smooth + b
    depth[~(np.isfinite(depth) & (depth > 0))] = np.nan
    spread = float(np.nanstd(depth)) or 1.0
    return DepthPrior(depth, np.isfinite(depth).astype(float), 0.1 * spread, "relative", "relative", 1)


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
