"""Smooth weighted least squares: every weight 1 (a masked Poisson integrator)."""

from __future__ import annotations

from ..config import DEFAULT
from .backend import CPU
from .irls import InnerSolve, IntegrationResult, minimise
from .objective import FixedTerm, FixedWeights, Objective
from .run import MethodOutput, RunArgs
from .system import DataTerm, NormalSystem


def integrate_wls(system: NormalSystem, term: DataTerm = DataTerm(DEFAULT.solver.lam), solver: str = "amg",
                  rtol: float = DEFAULT.solver.wls_rtol) -> IntegrationResult:
    """One solve of the normals term with all weights 1 and the data term ``term``,
    started at the term's target (or 0), with the CPU's sparse ``solver`` to ``rtol``."""
    return minimise(Objective(system, FixedWeights(None), (FixedTerm(term),)), None,
                    InnerSolve(solver, rtol, DEFAULT.solver.maxiter), CPU)


def run_wls(system: NormalSystem, inp, args: RunArgs) -> MethodOutput:
    """The registry's ``wls``: one solve of the normals term with all weights 1, the run's
    anchor (and depth prior) beside it, to ``SolverConfig.wls_rtol``, on the CPU."""
    s = args.config.solver
    objective = args.objective(system, FixedWeights(None))
    r = minimise(objective, None, InnerSolve(args.backend.on_cpu().linear, s.wls_rtol, s.maxiter), CPU,
                 *args.iterations(objective))
    return MethodOutput(r.z, None, None, 1, {"solve": r.seconds["solve"]})
