"""The one IRLS driver: minimise an :class:`~fnin_cli.solvers.objective.Objective` on a backend.

Every solve of every method goes through :func:`minimise`: ``wls`` and Stage II are one
iteration with fixed weights, ``bini`` and the rounds after a method several, each solving
the weighted system warm-started at the previous z, then asking the objective for its
weights and data terms at the new z. One loop, one energy (the normals term's weighted
residual, :meth:`Objective.energy`), one stopping rule:

- the energy's relative change drops below ``tol``;
- or an iteration's solve needs no inner iteration (z already solves that system: the
  weights, the system and so every later iteration would be the same,
  docs/decisions.md#fixed-point-stop);
- or ``max_iter`` iterations ran.

Where it runs (:class:`~fnin_cli.solvers.backend.Backend`): the CPU's sparse solvers
(:meth:`NormalSystem.solve`), or a GPU's pixel grid (:mod:`.grid`) from the same objective,
falling back to the CPU where the GPU's memory runs out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .backend import CPU, Backend
from .linear import AMGCache
from .objective import Objective
from .system import DIRECTIONS


@dataclass(frozen=True)
class InnerSolve:
    """How each iteration's linear system is solved.

    Attributes
    ----------
    method : str or None
        The CPU's sparse solver (:func:`~fnin_cli.solvers.linear.solve_spd`); None: the
        backend's own (``Backend.linear``).
    rtol, maxiter : float, int
        PCG's relative tolerance (to the data's right-hand side) and iteration cap.
    rtol_after : float, optional
        The tolerance of every solve after the first (None: ``rtol``).
    hierarchy : AMGCache, optional
        One AMG hierarchy kept across solves, its operators refreshed for new weights.
    coarse_scale : float
        The grid V-cycle's coarse correction scale (:mod:`.grid`).
    """

    method: str | None = None
    rtol: float = 1e-6
    maxiter: int = 5000
    hierarchy: AMGCache | None = None
    coarse_scale: float = 1.5
    rtol_after: float | None = None

    def tolerance(self, first: bool) -> float:
        """The tolerance of the first solve, or of one after it."""
        return self.rtol if first or self.rtol_after is None else self.rtol_after


@dataclass
class IntegrationResult:
    """What :func:`minimise` returns: z over the masked pixels, the weights it ended with,
    iterations run, seconds, the energy after each (empty where nothing reweights)."""

    z: np.ndarray
    weights: dict | None
    iterations: int = 1
    seconds: dict = field(default_factory=dict)
    history: list = field(default_factory=list)


def minimise(objective: Objective, z0: np.ndarray | None, solve: InnerSolve, backend: Backend = CPU,
             max_iter: int = 1, tol: float = 0.0, callback=None, notes: list | None = None) -> IntegrationResult:
    """Minimise ``objective`` from ``z0`` (None: the data terms' target, else 0).

    Parameters
    ----------
    objective : Objective
    z0 : ndarray or None
        The start over the masked pixels (copied).
    solve : InnerSolve
        How each iteration's system is solved.
    backend : Backend
        Where: the CPU's sparse solver, or a grid (GPU) that falls back to the CPU where
        its memory runs out (a note is appended to ``notes``).
    max_iter, tol : int, float
        At most ``max_iter`` iterations, stopping once the energy's relative change is
        below ``tol`` (0: never by energy).
    callback : callable, optional
        ``callback(iteration, energy, z)`` after each iteration.

    Examples
    --------
    A tilted plane's normals, solved once with all weights 1:

    >>> from fnin_cli.camera import Camera
    >>> from fnin_cli.solvers.objective import FixedWeights, anchored
    >>> from fnin_cli.solvers.system import NormalSystem
    >>> n = np.dstack([np.full((3, 4), -0.6), np.zeros((3, 4)), np.full((3, 4), -0.8)])
    >>> s = NormalSystem(n, np.ones((3, 4), bool), Camera(None, 1.0))
    >>> z = minimise(anchored(s, FixedWeights(None), 1e-9), None, InnerSolve("direct")).z
    >>> np.round(np.diff(z[:4]), 4).tolist()
    [0.75, 0.75, 0.75]
    """
    t0 = time.perf_counter()
    notes = [] if notes is None else notes
    if backend.on_grid:
        r = backend.or_on_cpu(lambda: _run(_GridOps(objective, backend.grid, solve), objective, z0, max_iter, tol,
                                           callback),
                              lambda: _run(_CpuOps(objective, solve, backend.on_cpu()), objective, z0, max_iter,
                                           tol, callback), notes)
    else:
        r = _run(_CpuOps(objective, solve, backend), objective, z0, max_iter, tol, callback)
    r.seconds["solve"] = time.perf_counter() - t0
    return r


def _run(ops, objective: Objective, z0, max_iter: int, tol: float, callback) -> IntegrationResult:
    """The loop, whatever holds the unknown (``ops``: numpy vectors or torch images)."""
    z = ops.start(z0)
    iterate = objective.reweights
    weights, energy = ops.weights_and_energy(z) if iterate else (ops.fixed_weights(), None)
    history = [] if energy is None else [energy]
    term = ops.term(None)          # the data terms as they are: updated from z after each solve
    it = 0
    for it in range(1, max_iter + 1):
        z, inner = ops.solve(z, weights, term, it == 1)
        stop = inner == 0
        if iterate and not stop:
            weights, new_energy = ops.weights_and_energy(z)
            history.append(new_energy)
            stop = (abs(energy - new_energy) / energy if energy > 0 else 0.0) < tol
            energy = new_energy
            if objective.terms_reweight:
                term = ops.term(z, weights)
        if callback is not None:
            callback(it, energy, z)
        if stop:
            break
    return IntegrationResult(ops.vector(z), ops.weights_out(weights), it, {}, history)


def _start(objective: Objective, z0):
    """The start over the masked pixels: ``z0`` (copied), else the data terms' target, else 0."""
    if z0 is not None:
        return np.asarray(z0, np.float64).copy()
    target = objective.data(None).target
    return np.zeros(objective.system.n) if target is None else target


class _CpuOps:
    """The loop's steps on the CPU: z and weights as vectors over the masked pixels."""

    def __init__(self, objective: Objective, solve: InnerSolve, backend: Backend):
        self.objective, self.solve_with = objective, solve
        self.method = solve.method or backend.linear

    def start(self, z0):
        return _start(self.objective, z0)

    def fixed_weights(self):
        return self.objective.rule.at(self.objective.system, None)

    def weights_and_energy(self, z):
        return self.objective.weights_and_energy(z)

    def term(self, z, weights=None):
        return self.objective.data(z, weights)

    def solve(self, z, weights, term, first: bool = True):
        s = self.solve_with
        z, info = self.objective.system.solve(weights, term, x0=z, method=self.method, rtol=s.tolerance(first),
                                              maxiter=s.maxiter, hierarchy=s.hierarchy)
        if s.hierarchy is not None and info.iterations and self.objective.rule.reweights:
            # the next weights change the matrix: a slow solve asks for a fresh hierarchy
            s.hierarchy.after_solve(info.iterations)
        return z, info.iterations

    def vector(self, z):
        return z

    def weights_out(self, weights):
        return weights


class _GridOps:
    """The loop's steps on a torch device's pixel grid (:class:`~fnin_cli.solvers.grid.GridSystem`)."""

    def __init__(self, objective: Objective, device: str, solve: InnerSolve):
        from . import grid   # torch: only for this backend; a module attribute, so tests can replace it

        self.objective, self.solve_with = objective, solve
        self.grid = grid.GridSystem(objective.system, device)
        self._fixed = None
        rule = objective.rule
        self.bias = None if not rule.reweights or rule.bias is None else {
            a: self.grid.image(rule.bias[a]) for a in ("u", "v")}

    def start(self, z0):
        return self.grid.image(_start(self.objective, z0))

    def fixed_weights(self):
        if self._fixed is None:
            self._fixed = self.grid.weights_images(self.objective.rule.at(self.objective.system, None))
        return self._fixed

    def weights_and_energy(self, z):
        rule = self.objective.rule
        if rule.reweights:
            weights, energy = self.grid.bini_weights_and_energy(z, rule.k, self.bias)
        else:
            weights = self.fixed_weights()
            energy = self.grid.energy(z, weights)
        if self.objective.terms_reweight:
            energy += self.objective.terms_energy(self.vector(z))
        return weights, energy

    def term(self, z, weights=None):
        # only a term that reweights reads z (and one that reads them, the weights): the
        # others cost no copy back from the device
        terms = self.objective.terms
        reads = z is not None and self.objective.terms_reweight
        w = None
        if reads and weights is not None and any(getattr(t, "reads_weights", False) for t in terms):
            w = self.weights_out(weights)
        return self.grid.term(self.objective.data(self.vector(z) if reads else None, w))

    def solve(self, z, weights, term, first: bool = True):
        s = self.solve_with
        z_new, iterations, _ = self.grid.solve(weights, term, z, s.tolerance(first), s.maxiter, s.coarse_scale)
        return z_new, iterations

    def vector(self, z):
        return self.grid.vector(z)

    def weights_out(self, weights):
        if not self.objective.rule.reweights:
            return self.objective.rule.at(self.objective.system, None)
        return {d: self.grid.vector(weights[d]) for d in DIRECTIONS}
