"""Over-relaxed BiNI rounds (studies/relaxed-rounds/README.md): a candidate, not in the package."""

from __future__ import annotations

import time

import numpy as np

from fnin_cli.solvers.bini import IntegrationResult, _weights_and_energy, needs_rebuild


def relaxed_rounds(system, k, z0, lam, max_iter, tol, beta, cg_rtol=1e-3, solver="amg", hierarchy=None,
                   bias=None) -> IntegrationResult:
    """BiNI rounds from ``z0`` (prior ``z0``) with z <- z + beta (solve - z), the plain step
    where BiNI's energy of the relaxed z rose; stop as ``integrate_bini``."""
    t0 = time.perf_counter()
    z = np.asarray(z0, np.float64).copy()
    weights, energy = _weights_and_energy(system, z, k, bias)
    history, it = [energy], 0
    for it in range(1, max_iter + 1):
        zs, info = system.solve(weights, lam=lam, z_prior=z0, x0=z, method=solver, rtol=cg_rtol,
                                hierarchy=hierarchy)
        if info.iterations == 0:
            break
        needs_rebuild(hierarchy, info)
        zr = z + beta * (zs - z) if beta != 1.0 else zs
        w2, e2 = _weights_and_energy(system, zr, k, bias)
        if beta != 1.0 and e2 > energy:
            zr = zs
            w2, e2 = _weights_and_energy(system, zr, k, bias)
        rel = abs(energy - e2) / energy if energy > 0 else 0.0
        z, weights, energy = zr, w2, e2
        history.append(energy)
        if rel < tol:
            break
    return IntegrationResult(z, weights, it, {"solve": time.perf_counter() - t0}, history)
