"""The pipeline: integrate an input with a method, fix the scale, report.

Inputs are read and validated in :mod:`fnin_cli.inputs` (re-exported here).

This is the Python API the CLI and the benchmark stand on::

    from fnin_cli import load_input, integrate
    inp = load_input("normals.exr", mask="mask.png", K="K.txt")
    res = integrate(inp, method="fnin")
    res.depth            # (H, W) float32, NaN outside the mask
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from . import conventions
from .camera import Camera
from .config import DEFAULT, IntegrationConfig
from .errors import FninError, for_caller, warn
# the inputs' API, re-exported: the pipeline is where users find load_input and integrate
from .inputs import ORTHO_AND_K, Input, build_input, load_input, mask_array, parse_channels  # noqa: F401
from .resources import kept_heap
from .solvers.bini import integrate_bini
from .solvers.linear import AMGCache
from .solvers.pieces import loose_pieces, pin_pieces, reattach_slivers
from .solvers.rounds import fold_prior
from .solvers.registry import DEFAULT_METHOD, METHODS, RunArgs, method_named  # noqa: F401 (METHODS: the API's)
from .solvers.stage2 import edge_prior
from .solvers.system import DIRECTIONS, NormalSystem


@dataclass
class Result:
    """The outcome of :func:`integrate`: depth, discontinuity map, camera, mask, seconds per stage."""

    depth: np.ndarray              # (H, W) float32, NaN outside the mask
    discontinuity: np.ndarray      # (H, W) float32 in [0, 1], 1 = discontinuity, NaN outside
    camera: Camera
    mask: np.ndarray
    method: str
    seconds: dict
    scale_note: str
    z: np.ndarray | None = None    # (H, W) float64 unknown (log-depth or depth), NaN outside
    iterations: int = 1
    warnings: list = field(default_factory=list)
    rounds: int = 0                # BiNI rounds run after the method (--refine)
    pieces_from: tuple | None = field(default=None, repr=False)  # (system, weights, placed, pinned)

    @property
    def pixels(self) -> int:
        return int(self.mask.sum())

    @property
    def loose_pieces(self) -> list:
        """The pieces joined to the rest only across cuts (or not at all), largest first
        (:func:`fnin_cli.solvers.pieces.loose_pieces`, without their ``labels``);
        computed on first use."""
        return self._pieces()[0]

    @property
    def loose(self) -> np.ndarray:
        """(H, W) int: each loose piece's ``id`` on its pixels, 0 elsewhere."""
        return self._pieces()[1]

    def _pieces(self):
        if not hasattr(self, "_pieces_cache"):
            loose = np.zeros(self.mask.shape, np.int32)
            found = []
            if self.pieces_from is not None:
                system, weights, placed, pinned = self.pieces_from
                with kept_heap():    # the components' arrays (docs/decisions.md#kept-heap)
                    found = loose_pieces(system, weights, placed=placed)
                ids = np.zeros(system.n, np.int32)
                for piece in found:
                    ids[piece.pop("labels")] = piece["id"]
                    piece["placed"] = pinned.get(piece["id"], piece["placed"])
                loose[self.mask] = ids
            self._pieces_cache = (found, loose)
        return self._pieces_cache


def check_scale(inp: Input, mean_depth: float | None = None, depth_at: tuple | None = None) -> None:
    """The scale/offset anchor of :func:`integrate` (``--mean-depth``, ``--depth-at``)
    against this input: the pixel inside its mask, a positive depth for a perspective
    camera. The one check of these rules; raises :class:`FninError` naming the input."""
    for r, c, d in depth_pins(depth_at):   # one pin, or several (each further pin places its own piece)
        h, w = inp.shape
        if not (0 <= r < h and 0 <= c < w) or not inp.mask[r, c]:
            raise FninError(f"--depth-at pixel (row {r}, col {c}) is not inside the mask of this "
                            f"{w}x{h} map; pick a pixel on the object", inp.source)
        if inp.camera.perspective and not d > 0:
            raise FninError(f"--depth-at depth must be positive for a perspective camera, got {d:g}", inp.source)
    if mean_depth is not None and inp.camera.perspective and not mean_depth > 0:
        raise FninError(f"--mean-depth must be positive for a perspective camera, got {mean_depth:g}", inp.source)


# ------------------------------------------------------------------ integration

def integrate(
    inp: Input,
    method: str = DEFAULT_METHOD,
    refine: int | None = None,
    device: str = "auto",
    mean_depth: float | None = None,
    depth_at: tuple | None = None,
    model=None,
    solver: str = "auto",
    bini_k: float | None = None,
    lam: float | None = None,
    progress=None,
    network_side: int | None = None,
    stage=None,
    config: IntegrationConfig | None = None,
    rounds_stop=None,
    rounds_adjust=None,
    rounds_bias=None,
) -> Result:
    """Integrate ``inp`` with ``method``, then ``refine`` BiNI rounds.

    Parameters
    ----------
    inp : Input
        From :func:`load_input` or :func:`build_input`.
    method : str
        One of ``METHODS`` (:mod:`fnin_cli.solvers.registry`): fnin, fnin-s, bini, wls,
        or fnin-stage1 (the network alone, no Stage II solve: a fast preview).
    refine : int, optional
        BiNI IRLS rounds started from the method's result: ``refine`` of them (fewer
        once a round changes nothing, with the same answer), or with None the method's
        own rounds (``Method.rounds``; for ``fnin``: ``config.rounds``).
        ``refine=0`` with ``fnin`` is the paper's one-shot.
    device : str
        auto, cpu, cuda or mps: where the network of the fnin methods runs.
    mean_depth, depth_at : float, (row, col, depth) or a list of them
        How to fix the unknown scale (perspective; default masked mean 1) or offset
        (orthographic; default mean 0): a masked mean, or one known pixel. With several
        pixels, the first fixes the whole map as one does, and each pins its loose piece
        (``Result.loose_pieces``): that piece is scaled (perspective) or shifted
        (orthographic) so that its pixel has the given depth; one pin per piece.
    model : FNINet, optional
        A loaded network instead of the bundled weights.
    bini_k : float, optional
        BiNI's sigmoid sharpness, for ``bini``, ``fnin-s`` and every round; None: the
        config's (``SolverConfig.k``, and ``RoundsConfig.k`` for the rounds after
        ``fnin``, which carry the edge net's prior).
    lam, network_side : optional
        Shorthands that replace ``SolverConfig.lam`` and ``OneShotConfig.network_side``.
    progress : callable, optional
        ``progress(i)`` after each BiNI iteration (of the bini solve or a refine round).
    stage : callable, optional
        ``stage(name, step, total)`` when a stage starts: "network", "solve" and
        "refine" (step 0 of ``total`` rounds; ``progress`` then counts the rounds).
    config : IntegrationConfig, optional
        Every constant of the run (:mod:`fnin_cli.config`); None: ``config.DEFAULT``.
    rounds_stop : callable, optional
        ``stop(round, z_before, z_after) -> bool`` for the rounds that carry the edge
        prior (:func:`~fnin_cli.solvers.bini.integrate_bini`'s ``stop``; a study's
        candidate stop, one fresh callable per call); None: the rounds' own stop only.
    rounds_adjust : callable, optional
        ``adjust(z_start, system) -> adjust(round, z, weights) -> z`` for the same rounds
        (``integrate_bini``'s ``adjust``, built from the rounds' start); None: none.
    rounds_bias : callable, optional
        ``bias(system, bias) -> bias``: a study's change to the rounds' edge prior (per-axis
        logits, :func:`rounds_prior`), where there is one; None: the prior as configured.

    Returns
    -------
    Result
        Depth (float32, NaN outside the mask), discontinuity map, seconds per stage.

    Examples
    --------
    >>> res = integrate(load_input("samples/dome"), method="wls")   # doctest: +SKIP
    >>> res.depth.shape                                              # doctest: +SKIP
    (192, 256)
    """
    m = method_named(method)
    check_scale(inp, mean_depth, depth_at)
    config = with_overrides(DEFAULT if config is None else config, bini_k, lam, network_side)
    seconds = {}
    t0 = time.perf_counter()
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    seconds["setup"] = time.perf_counter() - t0
    # lam in the system's units: it only settles what the data leaves free
    # (docs/decisions.md#prior-weight).
    lam_sys = classic_lambda(inp.camera, inp.shape, config.solver.lam)
    if stage is not None:
        stage("network" if m.needs_network else "solve", None, None)
    rounds = m.rounds(config, refine)
    hierarchy = AMGCache(rounds.refresh_every, rounds.rebuild_after) if rounds.max_rounds else None
    shared = rounds.max_rounds and rounds.stage2_rtol is not None
    out = m.run(system, inp, RunArgs(lam_sys, config, solver, device, model, progress, stage,
                                     rounds.stage2_rtol if shared else None, hierarchy if shared else None))
    z, weights, discontinuity, iterations = out.z, out.weights, out.discontinuity, out.iterations
    notes = list(out.warnings)
    seconds.update(out.seconds)
    # the rounds and what follows them free and allocate arrays of the map's size over and
    # over: keep their pages mapped (docs/decisions.md#kept-heap)
    with kept_heap():
        refined = 0
        if rounds.max_rounds:
            t1 = time.perf_counter()
            if stage is not None:
                stage("refine", 0, rounds.max_rounds)
            # the prior stays at the rounds' start: free offsets stay where the method put them
            # (docs/decisions.md#refine-prior).
            bias, k = rounds_prior(system, out.edge_p, config)
            if rounds_bias is not None and bias is not None:
                bias = rounds_bias(system, bias)
            callback = (lambda i, e, z: progress(i)) if progress else None

            def on_cpu():
                return integrate_bini(system, k=k, z0=z, lam=lam_sys, z_prior=z, max_iter=rounds.max_rounds,
                                      tol=rounds.tol, cg_rtol=rounds.inner_rtol, cg_maxiter=config.solver.maxiter,
                                      solver=rounds.solver, hierarchy=hierarchy, callback=callback, bias=bias,
                                      stop=rounds_stop if bias is not None else None,
                                      adjust=(rounds_adjust(z, system)
                                              if rounds_adjust is not None and bias is not None else None))

            if out.grid_device is not None and rounds_stop is None and rounds_adjust is None:
                # Stage II ran on the grid (a GPU): so do the rounds, weights and energy included
                # (docs/decisions.md#grid-on-gpu); on the CPU where the GPU's memory runs out
                from .solvers.grid import grid_rounds, or_on_cpu

                r = or_on_cpu(lambda: grid_rounds(system, z, k, lam_sys, z, rounds.max_rounds, rounds.tol,
                                                  rounds.inner_rtol, config.solver.maxiter, bias, out.grid_device,
                                                  callback, config.solver.grid_coarse_scale),
                              on_cpu, notes)
            else:
                r = on_cpu()
            z, weights, refined = r.z, r.weights, r.iterations
            if bias is not None and rounds.reattach_pixels:
                # the rounds with the edge prior can cut a pixel or a sliver loose: hold it to
                # its neighbours (docs/decisions.md#sliver-reattach)
                z, _ = reattach_slivers(system, z, weights, max_pixels=rounds.reattach_pixels)
            seconds["refine"] = time.perf_counter() - t1
            iterations += r.iterations
        if discontinuity is None or refined:
            discontinuity = weights_to_discontinuity(weights, system.n)
        pins = depth_pins(depth_at)
        pinned = {}
        if len(pins) > 1:
            z, pinned = _pin(system, z, weights, pins, inp.camera)
        zimg = system.to_image(z)
        depth, note = fix_scale(zimg, inp.camera, inp.mask, mean_depth, pins[0] if pins else None)
        placed = f"by the weak links across its cuts ({method}{' and its rounds' if refined else ''})"
        seconds["total"] = time.perf_counter() - t0
        warnings = list(inp.warnings) + [for_caller(n) for n in notes]
        warn(notes)
        frac = jump_fraction(system, z)
        if frac > 0.25:
            warnings.append(for_caller(
                f"{frac:.0%} of neighbouring pixels disagree with their normals (result is mostly jumps); "
                f"wrong convention? {conventions.FLIP_HINT}"))
            warn(warnings[-1:])
        return Result(depth.astype(np.float32), system.to_image(discontinuity).astype(np.float32), inp.camera,
                      inp.mask, method, seconds, note, zimg, iterations, warnings, refined,
                      (system, weights, placed, pinned))


def depth_pins(depth_at) -> list:
    """``depth_at`` as a list of (row, col, depth): None, one triple, or a list of them."""
    if depth_at is None:
        return []
    if len(depth_at) == 3 and np.isscalar(depth_at[0]):
        return [tuple(depth_at)]
    return [tuple(p) for p in depth_at]


def _pin(system: NormalSystem, z, weights, pins, camera: Camera) -> tuple:
    """z with the whole map shifted to the first pin and each pinned piece to its own
    (in the unknown: log-depth for perspective), and {piece label: how it was placed}."""
    targets = []
    for r, c, d in pins:   # inside the mask, positive where needed: check_scale
        targets.append((r, c, float(np.log(d)) if camera.perspective else float(d)))
    r0, c0, t0 = targets[0]
    z = z + (t0 - z[system.index[r0, c0]])
    try:
        z, done = pin_pieces(system, z, weights, targets)
    except ValueError as exc:
        raise FninError(f"--depth-at: {exc}") from None
    return z, {k: "pinned by --depth-at {},{},{:g}".format(*pins[i]) for i, k, _ in done}


def with_overrides(config: IntegrationConfig, bini_k: float | None = None, lam: float | None = None,
                   network_side: int | None = None) -> IntegrationConfig:
    """``config`` with :func:`integrate`'s shorthands applied: ``bini_k`` BiNI's k
    everywhere (bini, fnin-s, every round), ``lam`` the prior weight, ``network_side``
    the network's finest scale (None, 0: the config's own)."""
    if bini_k is not None:
        config = replace(config, solver=replace(config.solver, k=float(bini_k)),
                         rounds=replace(config.rounds, k=float(bini_k)))
    if lam is not None:
        config = replace(config, solver=replace(config.solver, lam=float(lam)))
    if network_side:
        config = replace(config, one_shot=replace(config.one_shot, network_side=int(network_side)))
    return config


def run_config(method: str = DEFAULT_METHOD, refine: int | None = None, config: IntegrationConfig | None = None,
               **overrides) -> dict:
    """The configuration a run of ``method`` with ``refine`` uses, as a compact dict:
    the method, the solver constants, the one-shot's (network methods only) and the
    rounds it runs (absent when none). ``overrides``: :func:`with_overrides`'s.
    ``fnin integrate --show-config`` prints it; ``--json`` records it under "config".

    Examples
    --------
    >>> run_config("fnin", refine=0)["rounds"] is None
    True
    >>> run_config("fnin")["rounds"]["max_rounds"] > 0
    True
    """
    config = with_overrides(DEFAULT if config is None else config, **overrides)
    m = method_named(method)
    rounds = m.rounds(config, refine)
    return {"method": method, "solver": asdict(config.solver),
            "one_shot": asdict(config.one_shot) if m.needs_network else None,
            "rounds": asdict(rounds) if rounds.max_rounds else None}


def rounds_prior(system: NormalSystem, edge_p, config: IntegrationConfig = DEFAULT) -> tuple:
    """(bias, k) of the rounds after a method: the edge net's logits times
    ``config.rounds.edge_prior`` when the method left an edge map ``edge_p`` (else None),
    and k: ``config.rounds.k`` with that prior, else BiNI's own (``config.solver.k``)."""
    scale = config.rounds.edge_prior
    bias = edge_prior(system, edge_p, scale) if scale is not None and edge_p is not None else None
    if bias is not None and config.rounds.fold_cos is not None:
        bias = fold_prior(system, bias, config.rounds.fold_cos, config.rounds.fold_join)
    k = config.rounds.k if bias is not None and config.rounds.k is not None else config.solver.k
    return bias, float(k)


def classic_lambda(camera: Camera, shape, lam: float = DEFAULT.solver.lam) -> float:
    """The tiny definiteness prior ``lam`` of wls/bini in the system's normal units.

    Perspective: lambda as it is (docs/methods.md#equations). Orthographic: lambda with the image scaled to
    [-1, 1], since an absolute 1e-3 flattened results (docs/decisions.md#prior-weight).
    """
    if camera.perspective:
        return lam
    return lam * (2.0 / (camera.pixel_size * max(shape))) ** 2


def weights_to_discontinuity(weights: dict | None, n: int) -> np.ndarray:
    """Per-pixel discontinuity in [0, 1] from per-direction weights (0 = smooth): per axis
    |w+ - w-| (one side trusted, the other cut) plus 1 - (w+ + w-) (both sides cut, as
    Stage II's sliver gate does; 0 for paired weights), the larger of the two axes."""
    if weights is None:
        return np.zeros(n)
    per_axis = [np.abs(weights[ax + "+"] - weights[ax + "-"]) + 1.0 - (weights[ax + "+"] + weights[ax + "-"])
                for ax in "uv"]
    return np.clip(np.maximum(*per_axis), 0.0, 1.0)


def jump_fraction(system: NormalSystem, z: np.ndarray, tau: float = 1.0) -> float:
    """Fraction of one-sided differences whose residual exceeds ``tau`` (normal units)."""
    res = system.residuals(z)
    total = sum(int(system.has[d].sum()) for d in DIRECTIONS)
    big = sum(int((np.abs(res[d]) > tau).sum()) for d in DIRECTIONS)
    return big / total if total else 0.0


def fix_scale(zimg: np.ndarray, camera: Camera, mask: np.ndarray, mean_depth=None, depth_at=None):
    """Depth from the unknown with the scale (perspective) or offset (orthographic) fixed
    (the anchor as :func:`check_scale` admits it)."""
    if camera.perspective:
        # work in log space to avoid overflow, then exponentiate
        if depth_at is not None:
            r, c, d = depth_at
            shift = np.log(d) - zimg[r, c]
            note = f"relative depth, scaled so that pixel (row {r}, col {c}) has depth {d:g}"
        else:
            target = 1.0 if mean_depth is None else float(mean_depth)
            zm = zimg[mask]
            zc = zm - zm.max()
            shift = np.log(target) - zm.max() - np.log(np.mean(np.exp(zc)))
            note = f"relative depth (perspective: known up to scale), scaled to masked mean {target:g}"
        depth = np.exp(zimg + shift)
    else:
        if depth_at is not None:
            r, c, d = depth_at
            shift = d - zimg[r, c]
            note = f"depth up to offset (orthographic), shifted so pixel (row {r}, col {c}) has depth {d:g}"
        else:
            target = 0.0 if mean_depth is None else float(mean_depth)
            shift = target - np.mean(zimg[mask])
            note = f"depth up to offset (orthographic), shifted to masked mean {target:g}"
        depth = zimg + shift
    depth[~mask] = np.nan
    return depth, note
