"""BiNI (Cao et al., ECCV 2022), the baseline: iteratively reweighted least squares with its
bilateral weights, written from the description in docs/methods.md#equations (not from
BiNI's GPL code).

Its objective is the normals term with :class:`~fnin_cli.solvers.objective.BilateralWeights`
and the anchor lam z^2; the one IRLS driver (:func:`~fnin_cli.solvers.irls.minimise`)
solves it from z = 0, each iteration inexactly with Jacobi-PCG warm-started at the
previous z (part of the method: an exact inner solve changes the trajectory).
"""

from __future__ import annotations

import numpy as np

from ..config import DEFAULT
from .backend import CPU
from .irls import InnerSolve, IntegrationResult, minimise
from .objective import BilateralWeights, FixedTerm, Objective, bini_layout, bini_weights  # noqa: F401
from .run import MethodOutput, RunArgs
from .system import DataTerm, NormalSystem

_S = DEFAULT.solver   # the defaults below: BiNI as its paper describes it (fnin_cli.config)


def integrate_bini(system: NormalSystem, k: float = _S.k, z0: np.ndarray | None = None,
                   term: DataTerm = DataTerm(_S.lam), max_iter: int = _S.max_iter, tol: float = _S.tol,
                   cg_rtol: float = _S.inner_rtol, cg_maxiter: int = _S.maxiter, solver: str = _S.inner_solver,
                   callback=None, hierarchy=None, bias: dict | None = None) -> IntegrationResult:
    """BiNI's iteratively reweighted least squares on ``system`` with the data term ``term``.

    Starts from ``z0`` (None: 0, BiNI's own start); stops when the weighted energy's
    relative change drops below ``tol``, after ``max_iter`` iterations, or once an
    iteration's inner solve needs no iteration (:func:`~fnin_cli.solvers.irls.minimise`).
    ``solver``, ``cg_rtol``, ``cg_maxiter``: each iteration's inner solve; ``hierarchy``:
    one AMG hierarchy kept across iterations (:class:`~fnin_cli.solvers.linear.AMGCache`).
    ``bias``: per-axis logits added to the weights (:func:`bini_weights`).
    ``callback(iteration, energy, z)`` after each.

    Examples
    --------
    A tilted plane: BiNI's weights stay paired and it integrates the slope.

    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.full((4, 5), -0.6), np.zeros((4, 5)), np.full((4, 5), -0.8)])
    >>> s = NormalSystem(n, np.ones((4, 5), bool), Camera(None, 1.0))
    >>> r = integrate_bini(s, term=DataTerm(1e-9), cg_rtol=1e-10, solver="direct")
    >>> np.round(np.diff(r.z[:5]), 4).tolist()
    [0.75, 0.75, 0.75, 0.75]
    """
    objective = Objective(system, BilateralWeights(float(k), bias), (FixedTerm(term),))
    start = np.zeros(system.n) if z0 is None else z0
    return minimise(objective, start, InnerSolve(solver, cg_rtol, cg_maxiter, hierarchy), CPU, max_iter, tol,
                    callback)


def run_bini(system: NormalSystem, inp, args: RunArgs) -> MethodOutput:
    """The registry's ``bini``: BiNI from 0 (or from the depth prior's level, where a constant
    changes no weight), the run's anchor and depth prior in every iteration."""
    s = args.config.solver
    if args.stage is not None:   # the progress shows BiNI's iteration out of its cap
        args.stage("solve", None, s.max_iter)
    start = args.prior_level()
    objective = args.objective(system, BilateralWeights(float(s.k)), start)
    r = minimise(objective, np.zeros(system.n) if start is None else start,
                 InnerSolve(s.inner_solver, s.inner_rtol, s.maxiter), CPU, s.max_iter, s.tol,
                 (lambda i, e, z: args.progress(i)) if args.progress else None)
    return MethodOutput(r.z, r.weights, None, r.iterations, {"solve": r.seconds["solve"]})
