"""Banded BiNI rounds (studies/banded-rounds/README.md): a candidate, not in the package.

After ``n_full`` of today's full-resolution rounds, each round solves only for the
pixels whose BiNI weights moved by more than ``tau`` since their last solve, dilated by
``radius`` pixels; every other pixel is held at its value (Dirichlet). The reduced system
is the principal submatrix of the round's matrix, solved for the correction
A_SS dz = (b - A z)_S with AMG-PCG on A_SS. Energy and stop rule: BiNI's, over all pixels.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fnin_cli.solvers.bini import IntegrationResult, _weights_and_energy
from fnin_cli.solvers.linear import dot, pcg, sa_hierarchy
from fnin_cli.solvers.system import DIRECTIONS


@dataclass(frozen=True)
class Banded:
    n_full: int = 2          # today's full rounds first
    tau: float = 0.01        # a weight that moved more than this since its last solve is active
    radius: int = 8          # active pixels dilated by this many pixels (square window)
    closing: bool = False    # one full round after the banded ones stop

    def __str__(self):
        return f"n_full={self.n_full} tau={self.tau} r={self.radius} closing={self.closing}"


def dilate(system, active: np.ndarray, radius: int) -> np.ndarray:
    """``active`` (over the masked pixels) dilated by a (2 radius + 1)^2 square, within the mask."""
    from scipy.ndimage import maximum_filter1d

    img = np.zeros(system.shape, np.uint8)
    img[system.mask] = active
    rows, cols = np.nonzero(img)
    if rows.size == 0:
        return np.zeros(system.n, bool)
    # the bounding box plus the radius: the filters need not sweep the whole frame
    r0, r1 = max(rows.min() - radius, 0), min(rows.max() + radius + 1, system.shape[0])
    c0, c1 = max(cols.min() - radius, 0), min(cols.max() + radius + 1, system.shape[1])
    box = img[r0:r1, c0:c1]
    box = maximum_filter1d(maximum_filter1d(box, 2 * radius + 1, axis=0), 2 * radius + 1, axis=1)
    img[r0:r1, c0:c1] = box
    return img[system.mask].astype(bool)


def band_solve(system, weights, lam, prior, z, band: np.ndarray, rtol: float, maxiter: int):
    """z with its ``band`` pixels re-solved, the others fixed: A_SS dz = (b - A z)_S.
    Returns (z, PCG iterations, seconds of setup)."""
    t0 = time.perf_counter()
    A = system.matrix(weights, lam)
    b = system.rhs(weights, lam, None)
    idx = np.flatnonzero(band)
    ref = np.sqrt(dot(b[idx], b[idx]))       # today's reference, restricted to the band
    if prior is not None and lam:
        b = b + lam * prior
    r = (b - A @ z)[idx]
    Ass = A[idx][:, idx].tocsr()
    Ass.sort_indices()
    ml = sa_hierarchy(Ass)
    setup = time.perf_counter() - t0
    dz, it, _ = pcg(Ass, r, np.zeros(idx.size), ml.vcycle, rtol, maxiter, ref)
    z = z.copy()
    z[idx] += dz
    return z, it, setup


def banded_rounds(system, k, z0, lam, max_rounds, tol, cg_rtol, maxiter, solver, hierarchy, bias,
                  banded: Banded | None, callback=None) -> IntegrationResult:
    """Today's rounds (``banded`` None, or n_full >= max_rounds) or banded ones, from ``z0``
    with prior ``z0``; returns an IntegrationResult whose seconds carry the band sizes."""
    t0 = time.perf_counter()
    z = np.asarray(z0, np.float64).copy()
    prior = z0
    weights, energy = _weights_and_energy(system, z, k, bias)
    history, bands = [energy], []
    n_full = max_rounds if banded is None else banded.n_full
    ref = None
    it = 0
    last_banded = False

    def full(z):
        zn, info = system.solve(weights, lam=lam, z_prior=prior, x0=z, method=solver, rtol=cg_rtol,
                                maxiter=maxiter, hierarchy=hierarchy)
        if hierarchy is not None and info.iterations:
            hierarchy.after_solve(info.iterations)
        return zn, info.iterations

    for it in range(1, max_rounds + 1):
        if it <= n_full:
            z, n_it = full(z)
            if n_it == 0:
                break
            ref = np.stack([weights[d] for d in DIRECTIONS])
            last_banded = False
        else:
            W = np.stack([weights[d] for d in DIRECTIONS])
            moved = (np.abs(W - ref) > banded.tau).any(axis=0)
            if not moved.any():
                break                                  # nothing moved: a fixed point
            band = dilate(system, moved, banded.radius)
            z, n_it, _ = band_solve(system, weights, lam, prior, z, band, cg_rtol, maxiter)
            bands.append(int(band.sum()))
            ref[:, band] = W[:, band]
            last_banded = True
            if n_it == 0:
                break
        weights, new_energy = _weights_and_energy(system, z, k, bias)
        history.append(new_energy)
        rel = abs(energy - new_energy) / energy if energy > 0 else 0.0
        energy = new_energy
        if callback is not None:
            callback(it, energy, z)
        if rel < tol:
            break
    if banded is not None and banded.closing and last_banded:
        z, n_it = full(z)
        if n_it:
            weights, energy = _weights_and_energy(system, z, k, bias)
            history.append(energy)
            it += 1
    return IntegrationResult(z, weights, it, {"solve": time.perf_counter() - t0, "bands": bands}, history)


@dataclass(frozen=True)
class Extrapolated:
    """Second design: full rounds, each PCG warm-started at z + (z - z_prev), capped at
    ``cap`` iterations (None: today's inner solve)."""

    cap: int | None = None

    def __str__(self):
        return f"extrapolated start, PCG cap {self.cap}"


def extrapolated_rounds(system, k, z0, lam, max_rounds, tol, cg_rtol, maxiter, solver, hierarchy, bias,
                        ex: Extrapolated, callback=None) -> IntegrationResult:
    """Today's rounds (``integrate_bini``'s loop and stop rule) with the extrapolated warm
    start and the capped inner PCG of ``ex``."""
    t0 = time.perf_counter()
    z = np.asarray(z0, np.float64).copy()
    prev = None
    weights, energy = _weights_and_energy(system, z, k, bias)
    history, it = [energy], 0
    cap = maxiter if ex.cap is None else ex.cap
    for it in range(1, max_rounds + 1):
        x0 = z if prev is None else 2.0 * z - prev
        zn, info = system.solve(weights, lam=lam, z_prior=z0, x0=x0, method=solver, rtol=cg_rtol, maxiter=cap,
                                hierarchy=hierarchy)
        if info.iterations == 0:
            break
        if hierarchy is not None:
            hierarchy.after_solve(info.iterations)
        prev, z = z, zn
        weights, new_energy = _weights_and_energy(system, z, k, bias)
        history.append(new_energy)
        rel = abs(energy - new_energy) / energy if energy > 0 else 0.0
        energy = new_energy
        if callback is not None:
            callback(it, energy, z)
        if rel < tol:
            break
    return IntegrationResult(z, weights, it, {"solve": time.perf_counter() - t0}, history)
