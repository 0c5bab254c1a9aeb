"""FNIN end to end: Stage I (the network, torch) then Stage II (:mod:`.stage2`).

``run_fnin`` runs the registry's fnin, fnin-s and fnin-stage1 (each a
:class:`~fnin_cli.config.FninVariant`).
"""

from __future__ import annotations

import time

import numpy as np

from ..config import FninVariant
from ..model.inference import network_outputs
from ..model.weights import load_model, resolve_device
from ..resources import kept_heap
from .objective import FixedWeights, bini_weights
from .pieces import weighted_median
from .stage2 import model_weights, stage2
from .system import DataTerm, NormalSystem


def run_fnin(system: NormalSystem, inp, variant: FninVariant, args) -> tuple:
    """Stage I + Stage II as ``variant`` says, with the run's :class:`~fnin_cli.solvers.registry.RunArgs`.
    Returns (z, weights, discontinuity per pixel, seconds, the edge net's w_u-, w_v- as a
    (2, H, W) image or None, the backend Stage II solved on, notes).

    Stage II minimises the normals term with the network's weights (fixed) plus the run's
    anchor lam (z - z_R)^2 and depth prior (:meth:`RunArgs.objective`), from z_R (moved to
    a depth prior's level first: the weighted median of their difference). Where a grid's
    GPU runs out of memory the solve runs on the CPU (the network is not run again), the
    backend returned is then the CPU's and ``notes`` says so. ``args.stage("solve")`` is
    called when the solve starts; ``args.rtol`` replaces Stage II's tolerance and
    ``args.hierarchy`` keeps its AMG hierarchy for rounds that follow."""
    config, backend = args.config, args.backend
    seconds = {}
    notes = []
    t0 = time.perf_counter()
    model = args.model if args.model is not None else load_model(device=str(resolve_device(args.device)))
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
            if args.stage is not None:
                args.stage("solve", None, None)
            own_rtol, maxiter = backend.tolerance(config)
            z_r = system.at_pixels(z_img)
            if args.prior is not None:
                z_r = z_r + _level_shift(args.prior.at(None), z_r)
            if variant.bini_weights:
                weights = bini_weights(system, z_r, config.solver.k)
            objective = args.objective(system, FixedWeights(weights), z_r)
            z = stage2(system, weights, objective.terms, z_r, backend, own_rtol if args.rtol is None else args.rtol,
                       maxiter, args.hierarchy, config.solver.grid_coarse_scale, notes, *args.iterations(objective),
                       rtol_after=args.second_rtol(own_rtol))
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
