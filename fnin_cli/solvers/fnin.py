"""FNIN end to end: Stage I (the network, torch) then Stage II (:mod:`.stage2`).

``run_fnin`` runs the registry's fnin, fnin-s and fnin-stage1 (each a
:class:`~fnin_cli.config.FninVariant`).
"""

from __future__ import annotations

import time

import numpy as np

from ..config import DEFAULT, FninVariant, IntegrationConfig
from ..model.inference import network_outputs
from ..model.weights import load_model, resolve_device
from ..resources import kept_heap
from .backend import CPU, Backend
from .bini import bini_weights
from .linear import AMGCache
from .pieces import weighted_median
from .stage2 import model_weights, stage2
from .system import DataTerm, NormalSystem


def run_fnin(system: NormalSystem, inp, variant: FninVariant = FninVariant(), config: IntegrationConfig = DEFAULT,
             model=None, device="auto", lam=DEFAULT.solver.lam, backend: Backend = CPU, stage=None, rtol=None,
             hierarchy: AMGCache | None = None, prior: DataTerm | None = None) -> tuple:
    """Stage I + Stage II as ``variant`` says (default: fnin's). Returns
    (z, weights, discontinuity per pixel, seconds, the edge net's w_u-, w_v- as a
    (2, H, W) image or None, the backend Stage II solved on, notes).

    ``backend``: where Stage II solves; where a grid's GPU runs out of memory the solve
    runs on the CPU (the network is not run again), the backend returned is then the
    CPU's and ``notes`` says so. ``stage(name, step, total)`` is called when the Stage II
    solve starts; ``rtol`` replaces Stage II's tolerance; ``hierarchy`` keeps its AMG
    hierarchy for rounds that follow (:func:`~fnin_cli.solvers.linear.solve_spd`); ``prior``:
    a depth prior's term, added to Stage II's (z_R, relative depth, is first moved to the
    prior's level: the weighted median of their difference)."""
    seconds = {}
    notes = []
    t0 = time.perf_counter()
    dev = resolve_device(device)
    model = model if model is not None else load_model(device=str(dev))
    seconds["load_model"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    net_device = next(model.parameters()).device
    z_img, om_img, p_img = network_outputs(model, inp, net_device, config.one_shot.network_side,
                                           edges=variant.edges, edge_tile=config.one_shot.edge_tile)
    seconds["network"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    weights = None
    # Stage II frees and allocates arrays of the map's size over and over: keep their pages
    # mapped (not around the network, which it slows; docs/decisions.md#kept-heap)
    with kept_heap():
        if not variant.bini_weights:
            weights = model_weights(system, p_img, om_img, config.one_shot)
        if not variant.solve:
            z = system.at_pixels(z_img)
        else:
            if stage is not None:
                stage("solve", None, None)
            own_rtol, maxiter = backend.tolerance(config)
            z_r = system.at_pixels(z_img)
            if prior is not None:
                z_r = z_r + _level_shift(prior, z_r)
            if variant.bini_weights:
                weights = bini_weights(system, z_r, config.solver.k)
            term = DataTerm(lam, z_r) if prior is None else DataTerm(lam, z_r).plus(prior)

            def solve(on: Backend):
                return stage2(system, weights, term, z_r, on, own_rtol if rtol is None else rtol, maxiter,
                              hierarchy, config.solver.grid_coarse_scale)

            z = backend.or_on_cpu(lambda: solve(backend), lambda: solve(backend.on_cpu()), notes)
            seconds["solve"] = time.perf_counter() - t2
    if notes or not variant.solve:
        backend = backend.on_cpu()     # what follows solves where Stage II did
    disc = system.at_pixels(om_img) if om_img is not None and not variant.bini_weights else None
    return z, weights, disc, seconds, p_img, backend, notes


def _level_shift(prior: DataTerm, z) -> float:
    """The shift that takes z to a depth prior's level: the weighted median of target - z."""
    w = np.broadcast_to(prior.weight, z.shape)
    has = w > 0
    return weighted_median((prior.target - z)[has], w[has])
