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
from .errors import for_caller, warn
# the inputs' API, re-exported: the pipeline is where users find load_input and integrate
from .inputs import ORTHO_AND_K, Input, build_input, load_input, mask_array, parse_channels  # noqa: F401
from .resources import kept_heap
from .prior import OUTLIER_SIGMAS, as_prior, prior_report
from .priors import prior_kind
from .scale import check_scale, depth_pins, fix_scale
from .solvers.backend import choose_backend
from .solvers.linear import AMGCache
from .solvers.pieces import Pieces, loose_pieces, unplaced_note
from .solvers.registry import DEFAULT_METHOD, METHODS, Method, MethodOutput, RunArgs, method_named  # noqa: F401
from .solvers.rounds import RoundsResult, run_rounds
from .solvers.steps import AFTER_ROUNDS, BEFORE_ROUNDS, Context, Pins, run_steps
from .solvers.system import DIRECTIONS, NormalSystem, classic_lambda


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
    pieces_from: tuple | None = field(default=None, repr=False)  # (pieces, placed, placed by id, prior pixels)
    prior_residual: dict | None = None   # where the result and the depth prior disagree (prior.prior_report)
    prior_disagree: np.ndarray | None = field(default=None, repr=False)  # (H, W) beyond 3 sigma of the prior
    prior_trust: np.ndarray | None = field(default=None, repr=False)     # (H, W) the prior's trust in [0, 1], NaN: none

    @property
    def pixels(self) -> int:
        return int(self.mask.sum())

    @property
    def loose_pieces(self) -> list:
        """The pieces joined to the rest only across cuts (or not at all), largest first
        (:func:`fnin_cli.solvers.pieces.loose_pieces`, without their ``labels``); a piece's
        ``placed`` says how its offset was set: the evidence the placement read where it moved
        it (:data:`fnin_cli.solvers.placement.CONTACT`, ``BEHIND``, ``CONNECTED``), the pin
        where ``depth_at`` pinned it; computed on first use."""
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
                pieces, placed, placed_by, prior_pixels = self.pieces_from
                with kept_heap():    # the components' arrays (docs/decisions.md#kept-heap)
                    found = loose_pieces(pieces, placed=placed)
                ids = np.zeros(pieces.system.n, np.int32)
                for piece in found:
                    members = piece.pop("labels")
                    ids[members] = piece["id"]
                    by_prior = prior_pixels is not None and prior_pixels[members].any()
                    piece["placed"] = placed_by.get(piece["id"], "depth prior" if by_prior else piece["placed"])
                loose[self.mask] = ids
            self._pieces_cache = (found, loose)
        return self._pieces_cache


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
    depth_prior=None,
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
    solver : str
        Where the solves run (:func:`~fnin_cli.solvers.backend.choose_backend`): auto,
        grid:DEVICE, or a sparse solver on the CPU (amg, jacobi, direct, torch[:DEVICE]).
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
    depth_prior : DepthPrior or path, optional
        Depth the user already has (:mod:`fnin_cli.prior`; a path is read with
        :func:`~fnin_cli.prior.read_prior`'s defaults). Absolute: a term of every solve, and
        the result is in the prior's units (perspective) or at its offset (orthographic).
        Relative: fitted to the integrated surface by an affine map of depth, then fused in
        one more solve; the result stays relative. ``--mean-depth`` cannot go with an
        absolute prior; ``--depth-at`` still pins.

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
    method_named(method)            # an unknown method is the first error
    prior = as_prior(depth_prior, inp)
    check_scale(inp, mean_depth, depth_at, prior)
    run = run_method(inp, method, refine, with_overrides(DEFAULT if config is None else config, bini_k, lam,
                                                         network_side), device, model, solver, progress, stage, prior)
    ready = None
    if run.rounds.max_rounds:
        run, ready = prepare_rounds(run)
    # the rounds and what follows them free and allocate arrays of the map's size over and
    # over: keep their pages mapped (docs/decisions.md#kept-heap)
    with kept_heap():
        rounds = None if ready is None else the_rounds(run, *ready, progress, stage)
        return finish(inp, run, rounds, mean_depth, depth_at)


def prepare_rounds(run: "MethodRun") -> tuple:
    """(the run without what no later step reads, (start, data terms, notes)) of the rounds
    after the method: the start is the method's z with the steps before the rounds applied
    to Stage II's pieces (:data:`~fnin_cli.solvers.steps.BEFORE_ROUNDS`), the terms the
    run's with the anchor at that start, so free offsets stay where the method and the steps
    put them (docs/decisions.md#refine-prior). Built before the kept heap, so that at camera
    size the terms' vectors are mapped on their own, not put in holes the rounds reuse. The
    run returned holds neither the method's own z, weights and discontinuity (the rounds'
    replace them) nor the depth prior's own term (the terms hold it): at camera size each is
    one or two vectors of the masked pixels (docs/results.md#camera-size-maps-issue-30)."""
    start, done = run_steps(BEFORE_ROUNDS, run.out.z, Pieces(run.system, run.out.weights, run.config.pieces),
                            run.context())
    terms = run.args.terms(start)
    lighter = replace(run, out=replace(run.out, z=None, weights=None, discontinuity=None),
                      args=replace(run.args, prior=None))
    return lighter, (start, terms, done.notes)


def the_rounds(run: "MethodRun", start, terms, notes: list, progress=None, stage=None) -> RoundsResult:
    """The rounds from ``start`` with ``terms`` (:func:`prepare_rounds`), ``notes`` first
    among theirs; then the AMG hierarchy is let go unless a prior's fuse solves with it."""
    if stage is not None:
        stage("refine", 0, run.rounds.max_rounds)
    rounds = run_rounds(run.system, start, run.out.edge_p, terms, run.config, run.rounds, run.out.backend,
                        run.hierarchy, progress)
    rounds.notes[:0] = notes
    run.release_hierarchy()
    return rounds


@dataclass
class MethodRun:
    """A method's result before its rounds (:func:`run_method`): what :func:`run_rounds`
    and :func:`finish` take."""

    method: str
    system: NormalSystem
    out: MethodOutput
    config: IntegrationConfig
    rounds: object                  # RoundsConfig: the rounds that follow (max_rounds 0: none)
    args: RunArgs                   # what the method ran with: lam, backend, the depth prior's term
    hierarchy: AMGCache | None      # Stage II's AMG hierarchy, kept for the rounds
    t0: float                       # when the run started (perf_counter)
    seconds: dict
    prior: object = None            # the depth prior's kind (fnin_cli.priors), or None

    @property
    def lam(self) -> float:
        """The anchor's weight in the system's units."""
        return self.args.lam

    def release_hierarchy(self) -> None:
        """After the rounds: let the AMG hierarchy go unless a prior's fuse solves with it; its
        memory serves what follows (docs/results.md#camera-size-maps-issue-30)."""
        if self.hierarchy is not None and not (self.prior is not None and self.prior.fuses):
            self.hierarchy.drop()

    def context(self, pins=()):
        """What the placement steps read (:class:`~fnin_cli.solvers.steps.Context`)."""
        return Context(self.system, self.config, self.out.edge_p, self.prior, tuple(pins))


def run_method(inp: Input, method: str = DEFAULT_METHOD, refine: int | None = None,
               config: IntegrationConfig = DEFAULT, device: str = "auto", model=None, solver: str = "auto",
               progress=None, stage=None, prior=None) -> MethodRun:
    """The first half of :func:`integrate`: the system, the backend (chosen here, once) and
    the method's own result (``prior``: a :class:`~fnin_cli.prior.DepthPrior`)."""
    m = method_named(method)
    t0 = time.perf_counter()
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    seconds = {"setup": time.perf_counter() - t0}
    # lam in the system's units: it only settles what the data leave free (docs/decisions.md#prior-weight)
    lam_sys = classic_lambda(inp.camera, inp.shape, config.solver.lam)
    backend = choose_backend(solver, config, network_device(m, model, device), system.n)
    if stage is not None:
        stage("network" if m.needs_network else "solve", None, None)
    rounds = m.rounds(config, refine)
    hierarchy = AMGCache(rounds.refresh_every, rounds.rebuild_after) if rounds.max_rounds else None
    shared = rounds.max_rounds and rounds.stage2_rtol is not None
    kind = prior_kind(prior, config)
    term = None if kind is None else kind.term(system)
    args = RunArgs(lam_sys, config, backend, device, model, progress, stage,
                   rounds.stage2_rtol if shared else None, hierarchy if shared else None, term,
                   bool(rounds.max_rounds))
    out = m.run(system, inp, args)
    seconds.update(out.seconds)
    return MethodRun(method, system, out, config, rounds, args, hierarchy, t0, seconds, kind)


def network_device(m: Method, model=None, device: str = "auto"):
    """The torch device a network method's network runs on (None for the other methods)."""
    if not m.needs_network:
        return None
    if model is not None:
        return next(model.parameters()).device
    from .model.weights import resolve_device   # torch: network methods only

    return resolve_device(device)


def finish(inp: Input, run: MethodRun, rounds: RoundsResult | None = None, mean_depth: float | None = None,
           depth_at: tuple | None = None) -> Result:
    """The second half of :func:`integrate`: the method's result or its ``rounds``', with the
    steps after the rounds (:data:`~fnin_cli.solvers.steps.AFTER_ROUNDS`: slivers, placement, rim)
    and a depth prior's fuse applied to the final weights' pieces, its pieces pinned
    (``depth_at``), its scale fixed, the warnings, the :class:`Result`."""
    system, out = run.system, run.out
    z, weights, discontinuity, iterations = out.z, out.weights, out.discontinuity, out.iterations
    seconds = dict(run.seconds)
    notes = list(out.warnings)
    refined = 0
    pins = depth_pins(depth_at)
    ctx = run.context(pins)
    pieces = Pieces(system, rounds.weights if rounds is not None else weights, run.config.pieces)
    placed_by = {}                     # how a piece was placed, by id
    done = None
    if rounds is not None:
        t = time.perf_counter()
        z, done = run_steps(AFTER_ROUNDS, rounds.z, pieces, ctx)
        weights, refined = rounds.weights, rounds.rounds
        seconds["refine"] = rounds.seconds + (time.perf_counter() - t)
        iterations += rounds.rounds
        notes += rounds.notes
        placed_by.update(done.placed)
    if discontinuity is None or refined:
        discontinuity = weights_to_discontinuity(weights, system.n)
    kind, fitted = run.prior, None
    if kind is not None:
        z, fitted, held = kind.fuse(run, z, pieces, done.placed if done is not None else {})
        if done is not None:
            # a fused prior places the pieces the placement moved, but those it left where the
            # normals' evidence put them (agreeing within its noise)
            for k, how in done.placed.items():
                placed_by[k] = f"depth prior, where the normals put it ({how})" if k in held else "depth prior"
    z, pinned = run_steps((Pins(),), z, pieces, ctx)
    placed_by.update(pinned.placed)
    zimg = system.to_image(z)
    to_depth = fix_scale if kind is None else kind.to_depth
    depth, note = to_depth(zimg, inp.camera, inp.mask, mean_depth, pins[0] if pins else None)
    residual = disagree_map = prior_pixels = trust = None
    if kind is not None:
        more, residual, said, disagree_map, prior_pixels, trust = _prior_outputs(kind, fitted, depth, zimg, inp)
        note += more
        notes += said
    placed = f"by the weak links across its cuts ({run.method}{' and its rounds' if refined else ''})"
    seconds["total"] = time.perf_counter() - run.t0
    warnings = list(inp.warnings) + [for_caller(n) for n in notes]
    warn(notes)
    frac = jump_fraction(system, z)
    if frac > 0.25:
        warnings.append(for_caller(
            f"{frac:.0%} of neighbouring pixels disagree with their normals (result is mostly jumps); "
            f"wrong convention? {conventions.flip_hint(inp.convention or '')}"))
        warn(warnings[-1:])
    res = Result(depth.astype(np.float32), system.to_image(discontinuity).astype(np.float32), inp.camera,
                 inp.mask, run.method, seconds, note, zimg, iterations, warnings, refined,
                 (pieces, placed, placed_by, prior_pixels), residual, disagree_map, trust)
    # what the normals could not place, said where people look (stderr), not only in --json
    free = unplaced_note(res.loose_pieces, system.n)
    if free is not None:
        res.warnings.append(for_caller(free))
        warn([free])
    return res


def _prior_outputs(kind, fitted, depth: np.ndarray, zimg: np.ndarray, inp: Input) -> tuple:
    """What a result says about its depth prior: (the scale note's addition, ``prior_residual``
    for ``--json``, warnings, the (H, W) map of prior pixels beyond OUTLIER_SIGMAS sigma, the
    prior's pixels over the mask, the (H, W) trust)."""
    fitted, more = kind.in_result(fitted, depth, zimg, inp)
    residual, disagree = prior_report(fitted, depth, inp.mask, inp.camera, inp.normals)
    robust, rejected, trust = kind.report(inp.mask)
    residual.update(robust)
    on = fitted.valid & inp.mask
    disagree_map = np.zeros(inp.mask.shape, bool)
    disagree_map[on] = np.abs(depth[on] - fitted.depth[on]) > OUTLIER_SIGMAS * fitted.sigma
    return more, residual, rejected + disagree, disagree_map, on[inp.mask], trust


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
