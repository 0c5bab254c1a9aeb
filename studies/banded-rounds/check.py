"""Checks of the study's banded rounds on the analytic step scene (tests/helpers.step_surface):
(1) the reduced system with every pixel active is the full round's solve; (2) banded
rounds against today's on the step scene. Usage (repository root)::

    PYTHONPATH=$PWD:studies/banded-rounds:tests python studies/banded-rounds/check.py
"""

from __future__ import annotations

import numpy as np

from banded import Banded, band_solve, banded_rounds
from fnin_cli.pipeline import build_input, classic_lambda, integrate
from fnin_cli.solvers.bini import bini_weights, integrate_bini
from fnin_cli.solvers.system import NormalSystem
from helpers import aligned_error, camera, step_surface


def main():
    cam = camera("persp")
    surf, _ = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, cam.K)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    lam = classic_lambda(inp.camera, inp.shape)
    z0 = integrate(inp, "wls").z[inp.mask]
    w = bini_weights(system, z0)
    full, _ = system.solve(w, lam=lam, z_prior=z0, x0=z0, method="direct")
    band, it, _ = band_solve(system, w, lam, z0, z0, np.ones(system.n, bool), 1e-12, 5000)
    rel = np.abs(band - full).max() / np.abs(full - z0).max()
    print(f"(1) all-active band vs direct full solve: max |diff| / max |step| = {rel:.2e} ({it} PCG its)")
    assert rel < 1e-6
    errs = {}
    for name, b in (("today", None), ("b2r8", Banded(2, 0.01, 8)), ("b2r8c", Banded(2, 0.01, 8, True))):
        if b is None:
            r = integrate_bini(system, z0=z0, lam=lam, z_prior=z0, max_iter=16, tol=1e-3, solver="amg")
        else:
            r = banded_rounds(system, 2.0, z0, lam, 16, 1e-3, 1e-3, 5000, "amg", None, None, b)
        errs[name] = aligned_error(np.exp(system.to_image(r.z)), surf.depth, inp.mask, "scale")
        print(f"(2) {name}: {r.iterations} rounds, error {errs[name]:.5f}, bands {r.seconds.get('bands')}")


if __name__ == "__main__":
    main()
