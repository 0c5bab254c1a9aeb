"""FNIN end to end: Stage I (the network, torch) then Stage II (:mod:`.stage2`).

``run_fnin`` is the run function of the registry's fnin, fnin-s and fnin-stage1.
"""

from __future__ import annotations

import time

from ..model.inference import network_outputs
from ..model.weights import load_model, resolve_device
from .stage2 import NETWORK_SIDE, model_weights, pick_solver, stage2
from .system import NormalSystem


def run_fnin(system: NormalSystem, inp, method="fnin", model=None, device="auto", lam=1e-3,
             solver="auto", k=2.0, side: int = NETWORK_SIDE, stage=None, rtol=None, hierarchy=None):
    """Stage I + Stage II. Returns (z, weights, discontinuity per pixel, seconds, the edge
    net's w_u-, w_v- as a (2, H, W) image or None).
    ``stage(name, step, total)`` is called when the Stage II solve starts; ``rtol``
    replaces Stage II's tolerance; ``hierarchy`` (a dict) keeps its AMG hierarchy for
    rounds that follow (:func:`~fnin_cli.solvers.linear.solve_spd`)."""
    seconds = {}
    t0 = time.perf_counter()
    dev = resolve_device(device)
    model = model if model is not None else load_model(device=str(dev))
    seconds["load_model"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    net_device = next(model.parameters()).device
    z_img, om_img, p_img = network_outputs(model, inp, net_device, side, edges=method != "fnin-s")
    seconds["network"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    weights = None
    if method != "fnin-s":
        weights = model_weights(system, p_img, om_img)
    if method == "fnin-stage1":
        z = z_img[system.mask]
    else:
        if stage is not None:
            stage("solve", None, None)
        lin, own_rtol, maxiter = pick_solver(solver)
        z, weights = stage2(system, z_img[system.mask], om_img, method, lam, lin, k,
                            own_rtol if rtol is None else rtol, maxiter, weights, hierarchy)
        seconds["solve"] = time.perf_counter() - t2
    disc = om_img[system.mask] if om_img is not None and method != "fnin-s" else None
    return z, weights, disc, seconds, p_img
