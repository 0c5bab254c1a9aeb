"""Smooth weighted least squares: every weight 1 (a masked Poisson integrator).
"""

from __future__ import annotations

import time

from .bini import IntegrationResult
from .system import NormalSystem


def integrate_wls(system: NormalSystem, lam: float = 1e-3, z_prior=None, solver: str = "amg",
                  rtol: float = 1e-8) -> IntegrationResult:
    """Smooth 4-direction least squares (all weights 1)."""
    t0 = time.perf_counter()
    z, info = system.solve(None, lam=lam, z_prior=z_prior, method=solver, rtol=rtol)
    return IntegrationResult(z, None, 1, {"solve": time.perf_counter() - t0})
