"""The rounds after a method: BiNI's reweighting started from the method's result.

``fnin integrate`` with no flags runs FNIN's one-shot and then these rounds; ``--refine N``
runs N of them after any method. This module owns their objective and where they run:

- their weight rule (:func:`rounds_prior`): BiNI's bilateral weights with the edge net's
  belief that an edge is a discontinuity added as logits, with steep *folds* (both
  normals of an edge near grazing) taken off that prior and pulled joined
  (:func:`fold_prior`, ``RoundsConfig.fold_cos`` and ``fold_join``);
- their data terms: the anchor at the rounds' start (free offsets stay where the method
  and the placements put them, docs/decisions.md#refine-prior) and a depth prior's;
- where they run (:class:`~fnin_cli.solvers.backend.Backend`: AMG on the CPU, or the pixel
  grid on a GPU when Stage II ran there), falling back to the CPU where the GPU's memory
  runs out; the IRLS loop itself is :func:`~fnin_cli.solvers.irls.minimise`.

What moves pieces before and after them is :mod:`fnin_cli.solvers.steps`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..config import DEFAULT, IntegrationConfig, RoundsConfig
from .backend import Backend
from .irls import InnerSolve, minimise
from .linear import AMGCache
from .objective import BilateralWeights, Objective
from .stage2 import edge_prior
from .system import NormalSystem, view_cosine


# ------------------------------------------------------------------ the prior: edge net and folds

def fold_edges(system: NormalSystem, cos_max: float) -> tuple:
    """(horizontal, vertical) booleans over the system's edges (``hp``-``hq``, ``vp``-``vq``):
    True where both pixels' normals are within ``cos_max`` of grazing (:func:`view_cosine`)."""
    c = view_cosine(system)
    return tuple(np.maximum(c[p], c[q]) < cos_max for p, q in ((system.hp, system.hq), (system.vp, system.vq)))


def fold_prior(system: NormalSystem, bias: dict, cos_max: float, join: float = 0.0) -> dict:
    """The rounds' per-axis logits with the prior taken off every pixel that touches a
    fold edge on that axis, and ``join`` pulling both ends of each fold edge towards it.

    On an edge p -> q (q the next pixel on the axis) the weight of q towards p is
    sigmoid(... + bias[q]) and that of p towards q is 1 - sigmoid(... + bias[p]): joining
    adds ``join`` to bias[q] and subtracts it from bias[p]; inside a band of fold edges the
    two cancel and its pixels are left to BiNI's own weights (docs/decisions.md#fold-join).

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.full((1, 4), 0.99), np.zeros((1, 4)), np.full((1, 4), -0.1)])
    >>> n[0, 0] = (0.0, 0.0, -1.0)
    >>> s = NormalSystem(n, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> fold_prior(s, {"u": np.full(4, 3.0), "v": np.zeros(4)}, 0.2, join=1.0)["u"].tolist()
    [3.0, -1.0, 0.0, 1.0]
    """
    out = {}
    folds = fold_edges(system, cos_max)
    for axis, fold, p, q in zip("uv", folds, (system.hp, system.vp), (system.hq, system.vq)):
        touching = np.zeros(system.n, bool)
        touching[p[fold]] = True
        touching[q[fold]] = True
        b = np.where(touching, 0.0, bias[axis])
        if join:
            pull = np.full(int(fold.sum()), float(join))
            b = b + np.bincount(q[fold], pull, system.n) - np.bincount(p[fold], pull, system.n)
        out[axis] = b
    return out


def rounds_prior(system: NormalSystem, edge_p, config: IntegrationConfig = DEFAULT) -> tuple:
    """(bias, k) of the rounds after a method: the edge net's logits times
    ``config.rounds.edge_prior`` when the method left an edge map ``edge_p`` (else None),
    with the fold join applied (``fold_cos``, ``fold_join``); k: ``config.rounds.k`` with
    that prior, else BiNI's own (``config.solver.k``)."""
    r = config.rounds
    bias = edge_prior(system, edge_p, r.edge_prior) if r.edge_prior is not None and edge_p is not None else None
    if bias is not None and r.fold_cos is not None:
        bias = fold_prior(system, bias, r.fold_cos, r.fold_join)
    k = r.k if bias is not None and r.k is not None else config.solver.k
    return bias, float(k)


# ------------------------------------------------------------------ running them

@dataclass
class RoundsResult:
    """What :func:`run_rounds` returns: z, the last weights, rounds run, seconds, notes."""

    z: np.ndarray
    weights: dict
    rounds: int
    seconds: float
    notes: list = field(default_factory=list)


def rounds_objective(system: NormalSystem, edge_p, terms: tuple, config: IntegrationConfig = DEFAULT) -> Objective:
    """The rounds' objective: BiNI's weights with :func:`rounds_prior`'s logits and k, and
    the data ``terms`` (the anchor at the rounds' start, a depth prior's)."""
    bias, k = rounds_prior(system, edge_p, config)
    return Objective(system, BilateralWeights(k, bias), tuple(terms))


def run_rounds(system: NormalSystem, z: np.ndarray, edge_p, terms: tuple, config: IntegrationConfig,
               rounds: RoundsConfig, backend: Backend, hierarchy: AMGCache | None = None,
               progress=None) -> RoundsResult:
    """``rounds.max_rounds`` BiNI rounds started at ``z`` (:func:`rounds_objective`, then
    :func:`solve_rounds`).

    Parameters
    ----------
    system : NormalSystem
    z : ndarray
        The rounds' start over the masked pixels.
    edge_p : ndarray or None
        The edge net's (2, H, W) w_u-, w_v- image (the rounds' prior), or None.
    terms : tuple of Term
        The data terms every round carries (:mod:`fnin_cli.solvers.objective`).
    config, rounds : IntegrationConfig, RoundsConfig
        The run's constants and the rounds it runs.
    backend : Backend
        Where the rounds solve; a grid backend falls back to the CPU where the GPU's
        memory runs out (a note says so).
    hierarchy : AMGCache, optional
        Stage II's AMG hierarchy, refreshed instead of built anew.
    progress : callable, optional
        ``progress(i)`` after each round.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> from fnin_cli.solvers.backend import CPU
    >>> from fnin_cli.solvers.objective import FixedTerm
    >>> from fnin_cli.solvers.system import DataTerm
    >>> flat = np.dstack([np.zeros((4, 4, 2)), -np.ones((4, 4, 1))])
    >>> s = NormalSystem(flat, np.ones((4, 4), bool), Camera(None, 1.0))
    >>> r = run_rounds(s, np.zeros(16), None, (FixedTerm(DataTerm(1e-3, np.zeros(16))),), DEFAULT, DEFAULT.rounds, CPU)
    >>> r.rounds, float(np.abs(r.z).max())
    (1, 0.0)
    """
    return solve_rounds(rounds_objective(system, edge_p, terms, config), z, config, rounds, backend, hierarchy,
                        progress)


def solve_rounds(objective: Objective, z: np.ndarray, config: IntegrationConfig, rounds: RoundsConfig,
                 backend: Backend, hierarchy: AMGCache | None = None, progress=None) -> RoundsResult:
    """The rounds' iterations of ``objective`` from ``z``: at most ``rounds.max_rounds``,
    stopping by ``rounds.tol``, each solved by ``rounds.solver`` to ``rounds.inner_rtol``
    (on a grid backend: its V-cycle, falling back to the CPU where the GPU's memory runs out)."""
    t0 = time.perf_counter()
    notes = []
    solve = InnerSolve(rounds.solver, rounds.inner_rtol, config.solver.maxiter, hierarchy,
                       config.solver.grid_coarse_scale)
    r = minimise(objective, z, solve, backend, rounds.max_rounds, rounds.tol,
                 (lambda i, e, z: progress(i)) if progress else None, notes)
    return RoundsResult(r.z, r.weights, r.iterations, time.perf_counter() - t0, notes)
