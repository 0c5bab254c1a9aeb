"""The rounds after a method: BiNI's reweighting started from the method's result.

``fnin integrate`` with no flags runs FNIN's one-shot and then these rounds; ``--refine N``
runs N of them after any method. This module owns everything about them:

- their prior (:func:`rounds_prior`): the edge net's belief that an edge is a
  discontinuity, added to every round's BiNI weights as logits, with steep *folds* (both
  normals of an edge near grazing) taken off that prior and pulled joined
  (:func:`fold_prior`, ``RoundsConfig.fold_cos`` and ``fold_join``);
- where they run (:class:`~fnin_cli.solvers.backend.Backend`: AMG on the CPU, or the pixel
  grid on a GPU when Stage II ran there), falling back to the CPU where the GPU's memory
  runs out;
- where they start (:func:`rounds_start`: pieces cut all round placed at a bridge or a
  crease);
- the sliver reattachment after them (:func:`~fnin_cli.solvers.pieces.reattach_slivers`),
  and then loose pieces seen past an occluding contour moved behind it (:func:`rounds_end`).

Studies change the rounds through :func:`run_rounds`' ``stop``, ``adjust`` and ``bias``
arguments; :func:`fnin_cli.pipeline.integrate` has no such hooks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..config import DEFAULT, IntegrationConfig, RoundsConfig
from .backend import Backend
from .bini import integrate_bini
from .linear import AMGCache
from .pieces import cut_pieces, reattach_slivers
from .placement import BEHIND, place_at_creases, place_behind_occluders, place_by_bridges
from .stage2 import edge_prior
from .system import DataTerm, NormalSystem


# ------------------------------------------------------------------ the prior: edge net and folds

def view_cosine(system: NormalSystem) -> np.ndarray:
    """|cos| of the angle between each masked pixel's normal and its view ray (0: grazing).

    Orthographic: |n_z|; perspective: |n . r| / |r| with r = ((u - cx)/fx, (v - cy)/fy, 1).
    Unit normals assumed.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.full((2, 2), 0.6), np.zeros((2, 2)), np.full((2, 2), -0.8)])
    >>> view_cosine(NormalSystem(n, np.ones((2, 2), bool), Camera(None, 2.0))).round(3).tolist()
    [0.8, 0.8, 0.8, 0.8]
    """
    cam = system.camera
    if cam.K is None:
        return np.abs(system.a_u) * cam.pixel_size
    v, u = np.nonzero(system.mask)
    K = cam.K
    r2 = ((u - K[0, 2]) / K[0, 0]) ** 2 + ((v - K[1, 2]) / K[1, 1]) ** 2 + 1.0
    return np.abs(system.a_u) / K[0, 0] / np.sqrt(r2)


def fold_edges(system: NormalSystem, cos_max: float) -> tuple:
    """(horizontal, vertical) booleans over the system's edges (``hp``-``hq``, ``vp``-``vq``):
    True where both pixels' normals are within ``cos_max`` of grazing (:func:`view_cosine`)."""
    c = view_cosine(system)
    return tuple(np.maximum(c[p], c[q]) < cos_max for p, q in ((system.hp, system.hq), (system.vp, system.vq)))


def fold_prior(system: NormalSystem, bias: dict, cos_max: float, join: float = 0.0) -> dict:
    """The rounds' per-axis logits with the prior taken off every pixel that touches a
    fold edge on that axis, and ``join`` pulling both ends of each fold edge towards it.

    On an edge p -> q (q the next pixel on the axis) the weight of q towards p is
    sigmoid(... + bias[q]) and that of p towards q is 1 - sigmoid(... + bias[p]): joining
    adds ``join`` to bias[q] and subtracts it from bias[p]; inside a band of fold edges the
    two cancel and its pixels are left to BiNI's own weights (docs/decisions.md#fold-join).

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.full((1, 4), 0.99), np.zeros((1, 4)), np.full((1, 4), -0.1)])
    >>> n[0, 0] = (0.0, 0.0, -1.0)
    >>> s = NormalSystem(n, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> fold_prior(s, {"u": np.full(4, 3.0), "v": np.zeros(4)}, 0.2, join=1.0)["u"].tolist()
    [3.0, -1.0, 0.0, 1.0]
    """
    out = {}
    folds = fold_edges(system, cos_max)
    for axis, fold, p, q in zip("uv", folds, (system.hp, system.vp), (system.hq, system.vq)):
        touching = np.zeros(system.n, bool)
        touching[p[fold]] = True
        touching[q[fold]] = True
        b = np.where(touching, 0.0, bias[axis])
        if join:
            pull = np.full(int(fold.sum()), float(join))
            b = b + np.bincount(q[fold], pull, system.n) - np.bincount(p[fold], pull, system.n)
        out[axis] = b
    return out


def rounds_prior(system: NormalSystem, edge_p, config: IntegrationConfig = DEFAULT) -> tuple:
    """(bias, k) of the rounds after a method: the edge net's logits times
    ``config.rounds.edge_prior`` when the method left an edge map ``edge_p`` (else None),
    with the fold join applied (``fold_cos``, ``fold_join``); k: ``config.rounds.k`` with
    that prior, else BiNI's own (``config.solver.k``)."""
    r = config.rounds
    bias = edge_prior(system, edge_p, r.edge_prior) if r.edge_prior is not None and edge_p is not None else None
    if bias is not None and r.fold_cos is not None:
        bias = fold_prior(system, bias, r.fold_cos, r.fold_join)
    k = r.k if bias is not None and r.k is not None else config.solver.k
    return bias, float(k)


# ------------------------------------------------------------------ running them

def rounds_start(system: NormalSystem, z: np.ndarray, edge_p, weights: dict | None, rounds: RoundsConfig,
                 prior=None) -> tuple:
    """Where the rounds after fnin start, and notes for the caller: the method's z with each
    piece that its weights cut all round placed (docs/decisions.md#pieces-meet)

    - a surrounded piece, where a jump along its boundary closes
      (:func:`~fnin_cli.solvers.placement.place_by_bridges`, ``rounds.bridge_edges``);
    - then a piece that meets the rest at a crease, by the most connected reading
      (:func:`~fnin_cli.solvers.placement.place_at_creases`, ``rounds.crease_cos``): the
      normals cannot place it, and a note says so.

    z itself, no notes, without the edge map (another method's rounds), with both settings
    off, or with a depth ``prior`` (it places the pieces)."""
    if edge_p is None or weights is None or prior is not None or (not rounds.bridge_edges
                                                                   and rounds.crease_cos is None):
        return z, []
    pieces = cut_pieces(system, weights)[:2]           # both placements read the same pieces
    bridged = creased = []
    if rounds.bridge_edges:
        z, bridged = place_by_bridges(system, z, weights, rounds.bridge_edges, pieces=pieces)
    if rounds.crease_cos is not None:
        z, creased = place_at_creases(system, z, weights, view_cosine, rounds.crease_cos,
                                      skip={k for k, _, _ in bridged}, pieces=pieces)
    notes = [f"a piece of {pixels:,} pixels meets the rest at a crease that the normals cannot place: "
             "placed by the most connected reading (no jump on average across it); --depth-prior places it"
             for _, pixels, _ in creased]
    return z, notes


@dataclass
class RoundsResult:
    """What :func:`run_rounds` returns: z, the last weights, rounds run, seconds, notes;
    ``placed``: how :func:`rounds_end` placed loose pieces ({piece id: how})."""

    z: np.ndarray
    weights: dict
    rounds: int
    seconds: float
    notes: list = field(default_factory=list)
    placed: dict = field(default_factory=dict)


def rounds_end(system: NormalSystem, result: RoundsResult, edge_p, rounds: RoundsConfig, prior=None) -> RoundsResult:
    """The rounds' result with each loose piece seen past an occluding contour moved behind
    its occluder (:func:`~fnin_cli.solvers.placement.place_behind_occluders`,
    ``rounds.occlusion_cos``; docs/decisions.md#pieces-meet), and its ``placed`` saying so;
    the result itself without the edge map (another method's rounds), with the setting
    off, or with a depth ``prior`` (it places the pieces)."""
    if edge_p is None or prior is not None or rounds.occlusion_cos is None:
        return result
    z, moved = place_behind_occluders(system, result.z, result.weights, view_cosine, rounds.occlusion_cos)
    if not moved:
        return result
    return replace(result, z=z, placed={**result.placed, **{k: BEHIND for k, _, _ in moved}})


def run_rounds(system: NormalSystem, z: np.ndarray, edge_p, term: DataTerm, config: IntegrationConfig,
               rounds: RoundsConfig, backend: Backend, hierarchy: AMGCache | None = None, progress=None,
               bias=None, stop=None, adjust=None) -> RoundsResult:
    """``rounds.max_rounds`` BiNI rounds started at ``z`` with the data term ``term``.

    Parameters
    ----------
    system : NormalSystem
    z : ndarray
        The method's result over the masked pixels (the rounds' start).
    edge_p : ndarray or None
        The edge net's (2, H, W) w_u-, w_v- image (the rounds' prior), or None.
    term : DataTerm
        The data term every round's system carries (the prior at the rounds' start:
        free offsets stay where the method put them, docs/decisions.md#refine-prior).
    config, rounds : IntegrationConfig, RoundsConfig
        The run's constants and the rounds it runs.
    backend : Backend
        Where the rounds solve; a grid backend falls back to the CPU where the GPU's
        memory runs out (a note says so).
    hierarchy : AMGCache, optional
        Stage II's AMG hierarchy, refreshed instead of built anew.
    progress : callable, optional
        ``progress(i)`` after each round.
    bias : callable, optional
        ``bias(system, logits) -> logits``: a study's change to the prior (where there is one).
    stop, adjust : callable, optional
        A study's stop and adjustment (:func:`~fnin_cli.solvers.bini.integrate_bini`); with
        either the rounds run on the CPU.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> from fnin_cli.solvers.backend import CPU
    >>> flat = np.dstack([np.zeros((4, 4, 2)), -np.ones((4, 4, 1))])
    >>> s = NormalSystem(flat, np.ones((4, 4), bool), Camera(None, 1.0))
    >>> r = run_rounds(s, np.zeros(16), None, DataTerm(1e-3, np.zeros(16)), DEFAULT, DEFAULT.rounds, CPU)
    >>> r.rounds, float(np.abs(r.z).max())
    (1, 0.0)
    """
    t0 = time.perf_counter()
    prior, k = rounds_prior(system, edge_p, config)
    if bias is not None and prior is not None:
        prior = bias(system, prior)
    with_prior = prior is not None
    callback = (lambda i, e, z: progress(i)) if progress else None
    notes = []

    def on_cpu():
        return integrate_bini(system, k=k, z0=z, term=term, max_iter=rounds.max_rounds, tol=rounds.tol,
                              cg_rtol=rounds.inner_rtol, cg_maxiter=config.solver.maxiter, solver=rounds.solver,
                              hierarchy=hierarchy, callback=callback, bias=prior,
                              stop=stop if with_prior else None, adjust=adjust if with_prior else None)

    if backend.on_grid and stop is None and adjust is None:
        # Stage II ran on the grid (a GPU): so do the rounds, weights and energy included
        # (docs/decisions.md#grid-on-gpu)
        from . import grid   # torch: only for this backend; a module attribute, so tests can replace it

        r = backend.or_on_cpu(lambda: grid.grid_rounds(system, z, k, term, rounds.max_rounds, rounds.tol,
                                                       rounds.inner_rtol, config.solver.maxiter, prior, backend.grid,
                                                       callback, config.solver.grid_coarse_scale),
                              on_cpu, notes)
    else:
        r = on_cpu()
    z_out = r.z
    if with_prior and rounds.reattach_pixels:
        # the rounds with the edge prior can cut a pixel or a sliver loose: hold it to its
        # neighbours (docs/decisions.md#sliver-reattach)
        z_out, _ = reattach_slivers(system, z_out, r.weights, max_pixels=rounds.reattach_pixels)
    return RoundsResult(z_out, r.weights, r.iterations, time.perf_counter() - t0, notes)
