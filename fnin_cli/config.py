"""The integration's configuration: every constant the default (and the other methods) use.

One frozen value, :data:`DEFAULT`, holds them; :func:`fnin_cli.pipeline.integrate` takes
``config=`` (None: ``DEFAULT``) and hands it to the run functions, which read nothing
else. Each field carries one line of why and the anchor of its record in
``docs/decisions.md``.

A study (or a test) builds a variant instead of overwriting a module global::

    from dataclasses import replace
    from fnin_cli.config import DEFAULT
    cfg = replace(DEFAULT, rounds=replace(DEFAULT.rounds, k=3.0, edge_prior=None))
    res = integrate(inp, config=cfg)

``fnin integrate --show-config`` prints the configuration a run would use, and the
``--json`` record carries it under ``"config"`` (:func:`fnin_cli.pipeline.run_config`).
The methods (fnin, fnin-s, fnin-stage1, bini, wls) are entries of
:mod:`fnin_cli.solvers.registry`; the FNIN family's differ by a :class:`FninVariant`.

This module imports nothing from the package: every layer may read it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace


@dataclass(frozen=True)
class SolverConfig:
    """The least-squares problem and BiNI's IRLS, as every method uses them."""

    # the prior weight lambda: it only settles what the data leave free (perspective; an
    # orthographic camera scales it to a [-1, 1] image, solvers.system.classic_lambda)
    # (docs/decisions.md#prior-weight)
    lam: float = 1e-3
    # BiNI's sigmoid sharpness k, the baseline's: bini, fnin-s's weights, rounds without the edge prior
    k: float = 2.0
    # bini: at most this many IRLS rounds, stopping once the energy's relative change is below
    # tol (the baseline's stopping rule)
    max_iter: int = 150
    tol: float = 1e-4
    # BiNI's inexact inner Jacobi-PCG solve, part of the method (docs/decisions.md#refine-rtol)
    inner_rtol: float = 1e-3
    inner_solver: str = "jacobi"
    # PCG's iteration cap on the CPU (Stage II, bini, the rounds)
    maxiter: int = 5000
    # when the network runs on a CUDA device and the map has at least this many masked
    # pixels, Stage II and the rounds solve there on the pixel grid (solvers.grid) instead of
    # AMG on the CPU, faster from about this size on; None: never (docs/decisions.md#grid-on-gpu)
    gpu_grid_pixels: int | None = 500_000
    # the grid V-cycle's coarse correction scaled up: its piecewise-constant prolongation
    # under-corrects smooth error (docs/decisions.md#grid-on-gpu)
    grid_coarse_scale: float = 1.5
    # wls: one smooth solve, to near-exactness
    wls_rtol: float = 1e-8


@dataclass(frozen=True)
class OneShotConfig:
    """FNIN's one-shot: the network (Stage I) and one weighted solve (Stage II)."""

    # finest network scale (short side): as accurate as 128/256, half the time (docs/decisions.md#network-side)
    network_side: int = 64
    # the edge net runs in tiles of this side (plus its receptive radius around each; None:
    # one block): activations stay in cache, empty tiles are skipped (docs/decisions.md#edge-net-tiles)
    edge_tile: int | None = 512
    # AMG-PCG tolerance: the loosest whose one-shot stays within 0.1% of the exact solve's
    # error on validation-mesh scenes, no scene far off (docs/decisions.md#solve-rtol)
    solve_rtol: float = 1e-4
    # torch Jacobi-PCG (solver="torch:...") leaves more smooth error than AMG (docs/decisions.md#gpu-solve)
    gpu_solve_rtol: float = 1e-4
    gpu_maxiter: int = 20000
    # the edge net's weights sharpened, sigmoid(a logit w): 7% better end to end (docs/decisions.md#edge-sharpness)
    edge_sharpness: float = 2.0
    # a pixel whose two neighbours on an axis both cut the edge towards it (weights below
    # this) is a one-pixel sliver: its own weights on that axis fade to 0; None: off
    # (docs/decisions.md#sliver-gate)
    sliver_gate: float | None = 0.5


@dataclass(frozen=True)
class RoundsConfig:
    """BiNI rounds after a method's result (``--refine``; the default's own after fnin)."""

    # at most this many rounds, stopping once BiNI's energy changes by less than tol (0: all
    # of them): as accurate as twice as many on real-like renders (docs/decisions.md#trust-rounds,
    # #default-rounds)
    max_rounds: int = 8
    tol: float = 1e-3
    # the inner solver on every device: a third of Jacobi-PCG's time, no worse (docs/decisions.md#refine-solver)
    solver: str = "amg"
    # the inner tolerance: BiNI's own (docs/decisions.md#refine-rtol)
    inner_rtol: float = 1e-3
    # refresh the AMG hierarchy's coarse operators every k-th round (None: never), the
    # finest every round (docs/decisions.md#refresh-every)
    refresh_every: int | None = 3
    # a round that took more than this many PCG iterations has the next build a fresh AMG
    # hierarchy; None: never (docs/decisions.md#rounds-rebuild)
    rebuild_after: int | None = 8
    # Stage II before rounds solves to this and the rounds refresh its hierarchy; None: it
    # solves as the one-shot does and the rounds build their own (docs/decisions.md#stage2-before-rounds)
    stage2_rtol: float | None = 1e-3
    # this times the edge net's logits is added to every round's BiNI weights after fnin;
    # None: BiNI's own weights (docs/decisions.md#rounds-edge-prior)
    edge_prior: float | None = 0.3
    # BiNI's k in the rounds that carry that prior; None: SolverConfig.k
    # (docs/decisions.md#rounds-k-with-prior, #rounds-k-robust)
    k: float | None = 2.5
    # after the rounds with the edge prior, pieces of fewer pixels than this that no
    # neighbour trusts are moved to where their neighbours' normals put them; 0: off
    # (docs/decisions.md#sliver-reattach)
    reattach_pixels: int = 16
    # after them, the pieces' places and the slivers, the pixels whose normals are within this
    # cosine of edge-on (84 degrees from the ray) that no other normal places (rims, lines
    # between two surfaces) go together where their neighbours put them: a grazing normal
    # says nothing of the step across it (a 1-degree error moves tan by 1/cos^2 = 100x that);
    # None: off (docs/decisions.md#hold-grazing); the slivers read it too: one with a firmer
    # neighbour goes where one of those puts it (docs/decisions.md#sliver-reattach)
    hold_grazing: float | None = 0.1
    # a steep fold (both normals of an edge within this cosine of grazing) loses the edge
    # prior in the rounds, and fold_join logits pull it joined: chins and spines stay
    # attached; None: off (docs/decisions.md#fold-join)
    fold_cos: float | None = 0.3
    fold_join: float = 2.0
    # the pieces the normals cannot place are placed by one solve over the piece graph
    # (solvers.placement), before the rounds and after them: two pieces touch where at least
    # this many boundary edges agree with both normals at one shift; None: no placement
    # (docs/decisions.md#placement-solve)
    contact_edges: int | None = 3
    # and only edges across which the two sides' slopes along the boundary agree within this
    # (residual units per pixel: over 20 pixels the jump changes by under agree_tol) are read
    # for contact, where two surfaces can touch all along a stretch (docs/decisions.md#placement-solve)
    touch_tol: float = 0.05
    # a boundary edge with one pixel within this cosine of grazing and the other not is an
    # occluding contour, the grazing side in front; a pair mostly bounded so is ordered so;
    # None: no order read (docs/decisions.md#placement-solve)
    occlusion_cos: float | None = 0.3
    # before the rounds such an edge, where the grazing pixel's surface recedes towards the
    # other (a limb against what it hides), also cuts the placement's pieces: a body Stage II
    # joined to what lies behind it is a piece of its own (docs/decisions.md#placement-solve)
    occluding_cuts: bool = True

    def __str__(self) -> str:
        """As the help text says it: "12 rounds" or "at most 16 rounds, ... below 0.001"."""
        if self.tol > 0:
            return f"at most {self.max_rounds} rounds, stopping once BiNI's energy changes by less than {self.tol:g}"
        return f"{self.max_rounds} rounds"

    def fixed(self, n: int) -> "RoundsConfig":
        """These rounds with exactly ``n`` of them (``--refine n``): no energy-change stop
        (but for a round that changes nothing, where every later one would be the same)."""
        return replace(self, max_rounds=int(n), tol=0.0)


@dataclass(frozen=True)
class PiecesConfig:
    """The pieces the weights cut apart (solvers.pieces) and how they are told and placed."""

    # an edge whose two weights are both below this is a cut (docs/decisions.md#loose-pieces-report)
    cut_weight: float = 0.2
    # a loose piece has at least this many pixels: reported in --json, moved by the
    # placements; smaller ones are slivers (docs/decisions.md#loose-pieces-report)
    min_pixels: int = 50
    # re-attaching a sliver, each boundary edge counts this plus its two weights: an edge
    # neither side trusts still counts, a trusted one up to 3x (docs/decisions.md#sliver-reattach)
    trust_floor: float = 1.0
    # a boundary edge agrees with both normals where both one-sided residuals |a dz + n| are
    # within this (the "pixels disagree with their normals" check's) (docs/decisions.md#placement-solve)
    agree_tol: float = 1.0


@dataclass(frozen=True)
class PriorConfig:
    """How a depth prior's term (fnin_cli.priors) trusts it."""

    # under a relative or disparity prior (fused after the rounds) the placement after the
    # rounds runs as without one, and the fuse holds the pieces it placed by the normals'
    # evidence within the prior's noise (studies/robust-prior, candidate 20o)
    place_fused: bool = True
    # and a piece placed behind its occluder that the prior puts farther still, the way its
    # contour allows (a blur shrinks jumps, never widens them), is left to the prior where the
    # prior resolves it, read beyond twice its blur (docs/decisions.md#robust-prior)
    free_widened: bool = True
    # and the placement before the rounds runs under such a prior too, as without one: up to
    # the fuse the run is the no-prior run (docs/decisions.md#robust-prior, candidate 20v)
    place_before_fused: bool = True
    # and a piece behind its occluder, by its placement and by its own contours, that the
    # prior puts nearer (against that order) stays where the placement put it unless the
    # prior resolves it nearer (docs/decisions.md#robust-prior, candidate 20v)
    hold_ordered: bool = True
    # where the fuse reads whether the prior resolves a piece, its word is the jump the prior
    # sees across the piece's contour, read near it on both sides: a smooth warp is not a
    # jump (docs/decisions.md#robust-prior, candidate 20v)
    local_word: bool = True
    # the term's robust loss where the prior's sigma is given: "cauchy", "huber", "tukey", or
    # None (a plain quadratic: a wrong patch pulls the whole surface), at this scale in sigmas
    # (the textbook constants of 95% efficiency: cauchy 2.385, huber 1.345, tukey 4.685); a
    # redescending loss rejects where the scale is known (docs/decisions.md#robust-prior)
    loss: str | None = "tukey"
    loss_scale: float = 4.685
    # where sigma is estimated, a monotone loss: a redescending one with an estimated scale
    # lost whole objects on renders (docs/decisions.md#robust-prior)
    estimated_loss: str | None = "huber"
    estimated_scale: float = 1.345
    # the residuals' smooth field, which the normals' own error makes and the prior corrects,
    # is taken over this fraction of the object's size (square root of its pixels): twice the
    # radius of a wrong patch of 5% of it (docs/decisions.md#robust-prior)
    smooth_scale: float = 0.25
    # a one-shot or wls solve whose prior reweights itself runs at most this many times,
    # stopping once the energy changes by less than tol (the rounds already iterate)
    iterations: int = 8
    tol: float = 1e-3
    # a sigma not given is estimated once, from the prior's residual against the first solve
    # (whose prior is weak: its start sigma), as 1.4826 x the median absolute residual per
    # measurement; never below this fraction of that start (docs/decisions.md#robust-prior)
    estimate_floor: float = 0.01
    # a prior disagreeing on more than this share of its measurements gets a warning
    rejected_warn: float = 0.1
    # a full-size absolute map with its sigma given is judged before the first solve from its
    # own steps where the normals say the surface runs on (docs/decisions.md#robust-prior)
    judge_steps: bool = True
    # and what it lets go stays let go in a piece too small for a field of its own (whose trust
    # is 1 by construction), judged again across the rounds' cuts (docs/decisions.md#robust-prior)
    judge_small: bool = True
    # a full-size absolute map without a sigma has it from the same steps before any solve,
    # and is then judged and weighed as if it were given (docs/decisions.md#robust-prior)
    judge_estimates: bool = True
    # the judge links an open edge (a grazing pixel on it) where the prior's own step is within
    # its threshold: grazing lines do not split a right surface (docs/decisions.md#robust-prior)
    judge_open: bool = True


@dataclass(frozen=True)
class IntegrationConfig:
    """Everything :func:`fnin_cli.pipeline.integrate` needs besides its input and method."""

    solver: SolverConfig = field(default_factory=SolverConfig)
    one_shot: OneShotConfig = field(default_factory=OneShotConfig)
    rounds: RoundsConfig = field(default_factory=RoundsConfig)
    pieces: PiecesConfig = field(default_factory=PiecesConfig)
    prior: PriorConfig = field(default_factory=PriorConfig)

    def as_dict(self) -> dict:
        """Plain nested dict (JSON-ready)."""
        return asdict(self)


@dataclass(frozen=True)
class FninVariant:
    """A method of the FNIN family: how it uses the network's outputs (the registry's
    fnin, fnin-s and fnin-stage1 are three of these).

    Attributes
    ----------
    edges : bool
        Run the edge net (when the model has one); False: the attention map omega only.
    bini_weights : bool
        Stage II's weights are BiNI's, computed once from z_R (fnin-s), instead of the
        network's (the edge net's, else omega's).
    solve : bool
        Run Stage II; False: the network's z_R alone (a fast preview).
    edge_prior : bool
        Hand the edge map to the rounds that follow as their prior (``RoundsConfig.edge_prior``).
    """

    edges: bool = True
    bini_weights: bool = False
    solve: bool = True
    edge_prior: bool = True


# the default: what `fnin integrate` runs
DEFAULT = IntegrationConfig()
