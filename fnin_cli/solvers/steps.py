"""The steps that set what no solve sets: the offsets of pieces the normals cannot place.

Each step is declared once with one interface: ``applies(ctx)`` says when it runs, and
``step(z, pieces, ctx)`` takes z over the masked pixels and the
:class:`~fnin_cli.solvers.pieces.Pieces` of the weights in force and returns z and what it
did (:class:`Done`: the pieces it moved, notes for the user, how each piece was placed).
:func:`run_steps` runs a list of them in order; a piece an earlier step of the same list
moved is not moved again.

- before the rounds (:data:`BEFORE_ROUNDS`, on Stage II's pieces) and after them
  (:data:`AFTER_ROUNDS`, on the rounds'): :class:`Placement`, what the normals leave free
  placed (the pieces' offsets by one solve over the piece graph,
  :mod:`fnin_cli.solvers.placement`; after the rounds also slivers and rim pixels);
- at the end (:func:`fnin_cli.pipeline.finish`): :class:`Pins` (``--depth-at``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import IntegrationConfig
from ..errors import FninError
from .grazing import place_grazing
from .pieces import Pieces, pin_pieces, reattach_slivers
from .placement import CONNECTED, occluding_contours, place_pieces
from .system import NormalSystem, view_cosine


@dataclass(frozen=True)
class Context:
    """What a step may read besides z and the pieces.

    Attributes
    ----------
    system : NormalSystem
    config : IntegrationConfig
    edge_p : ndarray or None
        The edge net's (2, H, W) map where the method left one (fnin's default), else None.
    prior : object or None
        The run's depth prior (a :mod:`fnin_cli.priors` kind): an absolute one places the
        pieces and the placements stand aside; one fused after the rounds (relative,
        disparity) does not see them, and the placements before and after them run as
        without a prior (``PriorConfig.place_fused``, ``place_before_fused``).
    pins : tuple
        ``--depth-at``'s [(row, col, depth)] (checked: inside the mask, positive where
        the camera needs it).
    """

    system: NormalSystem
    config: IntegrationConfig
    edge_p: object = None
    prior: object = None
    pins: tuple = ()

    @property
    def placing(self) -> bool:
        """Whether the default's placements run: after fnin (its edge map), without a prior."""
        return self.edge_p is not None and self.prior is None


@dataclass
class Done:
    """What a step did: ``moved`` [(piece label, pixels, shift)], ``notes`` for the user,
    ``placed`` {piece label: how it was placed} for the result's loose pieces."""

    moved: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    placed: dict = field(default_factory=dict)

    def add(self, other: "Done") -> None:
        self.moved += other.moved
        self.notes += other.notes
        self.placed.update(other.placed)


class Placement:
    """What the normals leave free, placed. Before the rounds (``after`` False): the pieces
    Stage II's weights cut all round, and cut along the occluding contours where a limb
    recedes towards what it hides (:func:`~fnin_cli.solvers.placement.occluding_contours`,
    ``RoundsConfig.occluding_cuts``), by one solve over the piece graph
    (:func:`~fnin_cli.solvers.placement.place_pieces`). After them, at the three scales the
    rounds leave free, in order: the loose pieces (those held only by one-sided edges
    included) by the same solve, reading the rounds' own z (it says how it placed those it
    moved); slivers of a few pixels, held where their neighbours now are
    (:func:`~fnin_cli.solvers.pieces.reattach_slivers`, ``RoundsConfig.reattach_pixels``);
    and last the grazing pixels that only grazing normals tie (rims, lines between two
    surfaces), placed together where their neighbours put them
    (:func:`~fnin_cli.solvers.grazing.place_grazing`, ``RoundsConfig.hold_grazing``): nothing
    re-places them after.

    The pieces' solve runs after fnin (its edge map) without a depth prior, and under one
    fused after the rounds (relative, disparity; ``PriorConfig.place_fused``,
    ``place_before_fused``), which then holds the pieces they placed by evidence
    (:func:`~fnin_cli.fuse_pieces.hold_placed`);
    ``RoundsConfig.contact_edges`` not None. The slivers and the rim after fnin with the
    rounds' edge prior, a depth prior or not.
    """

    name = "placement"

    def __init__(self, after: bool):
        self.after = after

    def places_pieces(self, ctx: Context) -> bool:
        if ctx.edge_p is None or ctx.config.rounds.contact_edges is None:
            return False
        # a prior fused after the rounds (relative, disparity) does not see them: the pieces'
        # solves before and after them run as without one, and the fuse holds what they placed
        p = ctx.config.prior
        fused = getattr(ctx.prior, "fuses", False) and p.place_fused and (self.after or p.place_before_fused)
        return ctx.placing or fused

    @staticmethod
    def holds_slivers(ctx: Context) -> bool:
        r = ctx.config.rounds
        return ctx.edge_p is not None and r.edge_prior is not None and bool(r.reattach_pixels)

    @staticmethod
    def holds_rim(ctx: Context) -> bool:
        return ctx.edge_p is not None and bool(ctx.config.rounds.hold_grazing)

    def applies(self, ctx: Context) -> bool:
        return self.places_pieces(ctx) or (self.after and (self.holds_slivers(ctx) or self.holds_rim(ctx)))

    def __call__(self, z, pieces: Pieces, ctx: Context, skip=()) -> tuple:
        r, c = ctx.config.rounds, pieces.config
        done = Done()
        if self.places_pieces(ctx):
            z, done = self._pieces(z, pieces, ctx)
        if self.after and self.holds_slivers(ctx):
            z, _ = reattach_slivers(ctx.system, z, pieces, max_pixels=r.reattach_pixels, grazing_cos=r.hold_grazing)
        if self.after and self.holds_rim(ctx):
            z, _ = place_grazing(ctx.system, z, pieces.weights, r.hold_grazing, c.cut_weight, c.trust_floor)
        return z, done

    def _pieces(self, z, pieces: Pieces, ctx: Context) -> tuple:
        r, c = ctx.config.rounds, pieces.config
        # before the rounds the pieces Stage II cut all round, and cut along the occluding
        # contours (limbs); after them the loose pieces, those held only by one-sided edges
        # included (what the result lists): the rounds' weights have read the contours there
        if not self.after and r.occluding_cuts and r.occlusion_cos is not None:
            pieces = pieces.cut_also(occluding_contours(ctx.system, r.occlusion_cos))
        labels, sizes = pieces.joined if self.after else pieces.plain[:2]
        z, moved, how = place_pieces(ctx.system, z, labels, sizes, view_cosine, c.min_pixels, c.agree_tol,
                                     r.contact_edges, r.occlusion_cos, r.touch_tol,
                                     pinned_offsets(ctx, z, labels) if self.after else None)
        done = Done(moved, placed=how if self.after else {})
        if not self.after and ctx.prior is None:     # under a fused prior the fuse places it
            done.notes = [f"a piece of {sizes[k]:,} pixels meets the rest where the normals cannot place it: "
                          "placed by the most connected reading (no jump on average across it); --depth-prior "
                          "places it" for k, said in how.items() if said == CONNECTED]
        return z, done


def pinned_offsets(ctx: Context, z: np.ndarray, labels: np.ndarray) -> dict:
    """{piece: offset} that ``--depth-at``'s pins give the pieces of ``labels`` holding one,
    relative to z as :class:`Pins` will first shift it whole (to the first pin): the
    placement holds them there so that what touches them follows. A piece with two pins is
    left out (:class:`Pins` refuses it)."""
    if len(ctx.pins) < 2:
        return {}                        # none, or one: the whole map's shift alone
    at = [int(ctx.system.index[r, c]) for r, c, _ in ctx.pins]
    want = [t for _, _, t in pin_targets(ctx)]
    whole = want[0] - z[at[0]]
    keys = [int(labels[i]) for i in at]
    return {k: want[j] - z[at[j]] - whole for j, k in enumerate(keys) if keys.count(k) == 1}


def pin_targets(ctx: Context) -> list:
    """``--depth-at``'s pins as [(row, col, unknown)]: log-depth under perspective, else depth."""
    persp = ctx.system.camera.perspective
    return [(r, c, float(np.log(d)) if persp else float(d)) for r, c, d in ctx.pins]


class Pins:
    """Each piece holding a ``--depth-at`` pixel is shifted so that the pixel has its depth
    (:func:`~fnin_cli.solvers.pieces.pin_pieces`); the first pin shifts the whole map first."""

    name = "pins"

    def applies(self, ctx: Context) -> bool:
        return len(ctx.pins) > 1

    def __call__(self, z, pieces: Pieces, ctx: Context, skip=()) -> tuple:
        targets = pin_targets(ctx)
        r0, c0, t0 = targets[0]
        z = z + (t0 - z[ctx.system.index[r0, c0]])
        try:
            z, done = pin_pieces(ctx.system, z, pieces, targets)
        except ValueError as exc:
            raise FninError(f"--depth-at: {exc}") from None
        return z, Done([(k, pixels, 0.0) for _, k, pixels in done],
                       placed={k: "pinned by --depth-at {},{},{:g}".format(*ctx.pins[i]) for i, k, _ in done})


BEFORE_ROUNDS = (Placement(after=False),)
AFTER_ROUNDS = (Placement(after=True),)


def run_steps(steps, z: np.ndarray, pieces: Pieces, ctx: Context) -> tuple:
    """z after each of ``steps`` that applies, in order, and what they did together
    (:class:`Done`); a piece one step moved is not moved by a later one."""
    done = Done()
    for step in steps:
        if step.applies(ctx):
            z, did = step(z, pieces, ctx, skip={k for k, _, _ in done.moved})
            done.add(did)
    return z, done
