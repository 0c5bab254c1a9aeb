"""``--downsample N``: a quick look at a huge map, integrated at 1/N of its size.

Normals are averaged over N x N blocks and renormalised; the mask keeps the blocks wholly
inside it (so no block mixes object and background); the camera is the same camera for
the reduced image (:meth:`Camera.scaled`: f/N, principal point (c + 0.5)/N - 0.5, pixel
size x N for orthographic). Block (i, j) stands for the full-resolution pixels
(iN..iN+N-1, jN..jN+N-1); every output (depth, mesh, preview) is at the reduced size.
"""

from __future__ import annotations

import numpy as np

from .errors import FninError


def downsample_pins(depth_at, factor: int):
    """``--depth-at`` pixels of the full-resolution map as pixels of the map at 1/``factor``:
    the block holding each (the depth is kept).

    Examples
    --------
    >>> downsample_pins([(10, 7, 2.5)], 4)
    [(2, 1, 2.5)]
    """
    from .scale import depth_pins

    if depth_at is None or int(factor) <= 1:
        return depth_at
    return [(r // factor, c // factor, d) for r, c, d in depth_pins(depth_at)]


def downsample_prior(prior, factor: int):
    """A :class:`~fnin_cli.prior.DepthPrior` of the full-resolution map for the map at
    1/``factor``: each block's depth is the share-weighted mean of its values and its share
    the sum of theirs (averaging independent measurements)."""
    from dataclasses import replace

    n = int(factor)
    if prior is None or n <= 1:
        return prior
    h, w = prior.depth.shape
    hc, wc = h // n, w // n
    share = np.where(prior.valid, prior.share, 0.0)[:hc * n, :wc * n].reshape(hc, n, wc, n).sum(axis=(1, 3))
    weighted = np.where(prior.valid, prior.depth * prior.share, 0.0)[:hc * n, :wc * n]
    total = weighted.reshape(hc, n, wc, n).sum(axis=(1, 3))
    depth = np.full((hc, wc), np.nan)
    np.divide(total, share, out=depth, where=share > 0)
    return replace(prior, depth=depth, share=share)


def downsample_input(inp, factor: int):
    """The :class:`~fnin_cli.inputs.Input` at 1/``factor`` of its size (see the module docstring).

    Examples
    --------
    >>> from fnin_cli import load_input, integrate            # doctest: +SKIP
    >>> small = downsample_input(load_input("huge.png", mask="mask.png"), 4)   # doctest: +SKIP
    >>> res = integrate(small)        # doctest: +SKIP
    """
    from .pipeline import build_input

    n = int(factor)
    if n < 1:
        raise FninError(f"--downsample must be 1 or more, got {factor}")
    if n == 1:
        return inp
    h, w = inp.shape
    hc, wc = h // n, w // n
    if hc < 2 or wc < 2:
        raise FninError(f"--downsample {n} leaves a {wc}x{hc} map of a {w}x{h} one; use a smaller factor",
                        inp.source)
    mask = inp.mask[:hc * n, :wc * n]
    full = mask.reshape(hc, n, wc, n).all(axis=(1, 3))
    if not full.any():
        raise FninError(f"--downsample {n}: no {n}x{n} block lies wholly inside the mask; use a smaller factor",
                        inp.source)
    sums = np.zeros((hc, wc, 3), np.float64)
    nrm = inp.normals[:hc * n, :wc * n]
    for j in range(n):          # a row of each block at a time: no full-resolution temporary
        sums += nrm[j::n].reshape(hc, wc, n, 3).sum(axis=2, dtype=np.float64)
    length = np.linalg.norm(sums, axis=-1)
    valid = full & (length > 0)            # the mean of unit normals, renormalised (any length)
    normals = (sums / np.where(valid, length, np.nan)[..., None]).astype(np.float32)
    small = build_input(normals, valid, full, inp.camera.scaled(1.0 / n), source=inp.source,
                        convention=inp.convention, copy=False)
    small.bitdepth = inp.bitdepth
    small.warnings[:0] = list(inp.warnings)
    small.check = inp.check
    return small
