"""BiNI's bilateral weights and its iteratively reweighted least squares (written from
the description in docs/methods.md#equations, not from BiNI's GPL code), plus the shared :class:`IntegrationResult`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..config import DEFAULT
from .linear import AMGCache
from .system import DataTerm, NormalSystem

_S = DEFAULT.solver   # the defaults below: BiNI as its paper describes it (fnin_cli.config)


def sigmoid(x: np.ndarray, k: float) -> np.ndarray:
    """1 / (1 + exp(-k x)), computed without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * k * x))  # = 1 / (1 + exp(-k x)), overflow-free


def bini_weights(system: NormalSystem, z: np.ndarray, k: float = _S.k, differences: dict | None = None,
                 bias: dict | None = None) -> dict:
    """BiNI's bilateral weights from the current z (docs/methods.md#equations).

    Per pixel, the one-sided difference (times a) with the larger square gets the
    smaller weight: w_u- = sigmoid_k((A_u+ z)^2 - (A_u- z)^2), w_u+ = 1 - w_u-.
    ``differences``: ``system.differences(z)``, if already computed. ``bias``: per-axis
    logits ``{"u": ..., "v": ...}`` over the masked pixels added to the sigmoid's
    argument, w_u- = sigmoid(k ((A_u+ z)^2 - (A_u- z)^2) + bias_u) (the edge net's prior
    in the rounds after FNIN, :func:`fnin_cli.solvers.stage2.edge_prior`).
    """
    d = system.differences(z) if differences is None else differences
    xu, xv = d["u+"] ** 2 - d["u-"] ** 2, d["v+"] ** 2 - d["v-"] ** 2
    if bias is None:
        return bini_layout(sigmoid(xu, k), sigmoid(xv, k))
    return bini_layout(sigmoid(k * xu + bias["u"], 1.0), sigmoid(k * xv + bias["v"], 1.0))


def bini_layout(wu_minus: np.ndarray, wv_minus: np.ndarray) -> dict:
    """Per-direction weights from w_u-, w_v- over the masked pixels (w+ = 1 - w-)."""
    return {"u+": 1.0 - wu_minus, "u-": wu_minus, "v+": 1.0 - wv_minus, "v-": wv_minus}


def _weights_and_energy(system: NormalSystem, z: np.ndarray, k: float, bias: dict | None = None) -> tuple[dict, float]:
    """BiNI's weights of z (``bias``: see :func:`bini_weights`) and its weighted energy,
    from one pass of differences."""
    d = system.differences(z)
    weights = bini_weights(system, z, k, d, bias)
    return weights, system.energy(z, weights, system.residuals(z, d))


@dataclass
class IntegrationResult:
    """What ``integrate_wls`` and ``integrate_bini`` return."""

    z: np.ndarray                      # unknown over masked pixels
    weights: dict | None               # per-direction weights used last
    iterations: int = 1
    seconds: dict = field(default_factory=dict)
    history: list = field(default_factory=list)


def integrate_bini(
    system: NormalSystem,
    k: float = _S.k,
    z0: np.ndarray | None = None,
    term: DataTerm = DataTerm(_S.lam),
    max_iter: int = _S.max_iter,
    tol: float = _S.tol,
    cg_rtol: float = _S.inner_rtol,
    cg_maxiter: int = _S.maxiter,
    solver: str = _S.inner_solver,
    callback=None,
    hierarchy: AMGCache | None = None,
    bias: dict | None = None,
    stop=None,
    adjust=None,
) -> IntegrationResult:
    """BiNI's iteratively reweighted least squares, written from docs/methods.md#equations.

    Starts from ``z0`` (0 = BiNI's own start), every round's system carrying the data term
    ``term`` (BiNI's own: lam z^2), solves each round inexactly with
    Jacobi-PCG to ``cg_rtol`` warm-started at the previous z (part of the method: an
    exact inner solve changes the trajectory), updates the weights, and stops when the
    relative change of the weighted energy drops below ``tol``, or once a round's inner
    solve needs no iteration (z is then a fixed point). With ``solver="amg"``
    and a ``hierarchy`` (:class:`~fnin_cli.solvers.linear.AMGCache`), one AMG hierarchy
    (the cache's, if a solve on this system left one there, else the first round's) is
    kept and only its operators are refreshed for each round's weights (the rounds after
    FNIN); a round whose solve took more than the cache's ``rebuild_after`` PCG iterations
    has the next round build a fresh hierarchy (:meth:`~fnin_cli.solvers.linear.AMGCache.after_solve`).
    ``bias``: per-axis
    logits added to every round's weights (:func:`bini_weights`; None: BiNI's own weights).
    ``callback(round, energy, z)`` after each round. ``stop(round, z_before, z_after)``:
    True ends the rounds after that one (a study's stop; None: the energy rule only).
    ``adjust(round, z, weights) -> z``: applied to each round's solution before its
    weights are computed (a study's prior on the pieces; None: nothing).
    """
    t0 = time.perf_counter()
    z = np.zeros(system.n) if z0 is None else np.asarray(z0, np.float64).copy()

    def solve(z, weights):
        z, info = system.solve(weights, term, x0=z, method=solver,
                               rtol=cg_rtol, maxiter=cg_maxiter, hierarchy=hierarchy)
        if hierarchy is not None and info.iterations:
            hierarchy.after_solve(info.iterations)
        return z, info.iterations

    z, weights, it, history = irls_rounds(solve, lambda z: _weights_and_energy(system, z, k, bias), z,
                                          max_iter, tol, callback, stop, adjust)
    return IntegrationResult(z, weights, it, {"solve": time.perf_counter() - t0}, history)


def irls_rounds(solve, weights_and_energy, z, max_iter: int, tol: float, callback=None, stop=None, adjust=None):
    """BiNI's iteratively reweighted least squares, whatever holds the unknown (numpy
    vectors here, torch images in :mod:`.grid`): ``solve(z, weights) -> (z, iterations)``
    solves one round's system warm-started at z, ``weights_and_energy(z) -> (weights,
    energy)``. Stops when the energy's relative change drops below ``tol``, once a solve
    needs no iteration (z is then a fixed point), or when ``stop`` says so; ``callback``,
    ``stop`` and ``adjust`` as in :func:`integrate_bini`. Returns (z, weights, rounds,
    energy history)."""
    weights, energy = weights_and_energy(z)
    history = [energy]
    it = 0
    for it in range(1, max_iter + 1):
        z_before = z
        z, iterations = solve(z, weights)
        if iterations == 0:
            # z already solves this round's system: the weights, the system and so every
            # later round would be this one again (docs/decisions.md#fixed-point-stop)
            if callback is not None:
                callback(it, energy, z)
            break
        if adjust is not None:
            z = adjust(it, z, weights)
        weights, new_energy = weights_and_energy(z)
        history.append(new_energy)
        rel = abs(energy - new_energy) / energy if energy > 0 else 0.0
        energy = new_energy
        if callback is not None:
            callback(it, energy, z)
        if rel < tol or (stop is not None and stop(it, z_before, z)):
            break
    return z, weights, it, history
