"""Smooth weighted least squares: every weight 1 (a masked Poisson integrator).
"""

from __future__ import annotations

import time

from ..config import DEFAULT
from .bini import IntegrationResult
from .system import DataTerm, NormalSystem


def integrate_wls(system: NormalSystem, term: DataTerm = DataTerm(DEFAULT.solver.lam), solver: str = "amg",
                  rtol: float = DEFAULT.solver.wls_rtol) -> IntegrationResult:
    """Smooth 4-direction least squares (all weights 1) with the data term ``term``."""
    t0 = time.perf_counter()
    z, info = system.solve(None, term, method=solver, rtol=rtol)
    return IntegrationResult(z, None, 1, {"solve": time.perf_counter() - t0})
