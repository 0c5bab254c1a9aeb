"""The steps that set what no solve sets: the offsets of pieces the normals cannot place.

Each step is declared once with one interface: ``applies(ctx)`` says when it runs, and
``step(z, pieces, ctx)`` takes z over the masked pixels and the
:class:`~fnin_cli.solvers.pieces.Pieces` of the weights in force and returns z and what it
did (:class:`Done`: the pieces it moved, notes for the user, how each piece was placed).
:func:`run_steps` runs a list of them in order; a piece an earlier step of the same list
moved is not moved again.

- before the rounds (:data:`BEFORE_ROUNDS`, on Stage II's pieces): :class:`Placement`, the
  pieces' offsets by one solve over the piece graph (:mod:`fnin_cli.solvers.placement`);
- after the rounds (:data:`AFTER_ROUNDS`, on the rounds' pieces), the same placement at the
  three scales the normals leave free: :class:`Slivers` (a few pixels,
  :func:`~fnin_cli.solvers.pieces.reattach_slivers`), :class:`Placement` (the pieces), then
  :class:`Grazing` (single rim pixels, :func:`~fnin_cli.solvers.grazing.hold_grazing`);
- at the end (:func:`fnin_cli.pipeline.finish`): :class:`Pins` (``--depth-at``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import IntegrationConfig
from ..errors import FninError
from .grazing import hold_grazing
from .pieces import Pieces, pin_pieces, reattach_slivers
from .placement import CONNECTED, place_pieces
from .system import NormalSystem


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
        The run's depth prior (a :mod:`fnin_cli.priors` kind): where there is one it places
        the pieces, and the placements stand aside.
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
    """The pieces' offsets by one solve over the piece graph
    (:func:`~fnin_cli.solvers.placement.place_pieces`, ``RoundsConfig.contact_edges``,
    ``touch_tol``, ``occlusion_cos``) on the pieces cut all round (``pieces.plain``: moving one
    tears no edge either side trusts): before the rounds Stage II's, after them the rounds'
    (and says how it placed the loose pieces inside those it moved)."""

    name = "placement"

    def __init__(self, after: bool):
        self.after = after

    def applies(self, ctx: Context) -> bool:
        return ctx.placing and ctx.config.rounds.contact_edges is not None

    def __call__(self, z, pieces: Pieces, ctx: Context, skip=()) -> tuple:
        r, c = ctx.config.rounds, pieces.config
        labels, sizes = pieces.plain[:2]
        z, moved, how = place_pieces(ctx.system, z, labels, sizes, view_cosine, c.min_pixels, c.agree_tol,
                                     r.contact_edges, r.occlusion_cos, r.touch_tol)
        if not self.after:
            notes = [f"a piece of {sizes[k]:,} pixels meets the rest where the normals cannot place it: placed "
                     "by the most connected reading (no jump on average across it); --depth-prior places it"
                     for k, said in how.items() if said == CONNECTED]
            return z, Done(moved, notes)
        # said of the loose pieces (pieces.joined's ids) inside each piece it moved
        joined, jsizes = pieces.joined
        placed = {}
        for k in range(1, len(jsizes)):
            if jsizes[k] < c.min_pixels:
                break
            cut = int(labels[np.argmax(joined == k)])
            if cut in how:
                placed[k] = how[cut]
        return z, Done(moved, placed=placed)


class Slivers:
    """Pixels and slivers the rounds with the edge prior cut loose are held to their
    neighbours (:func:`~fnin_cli.solvers.pieces.reattach_slivers`, ``RoundsConfig.reattach_pixels``)."""

    name = "slivers"

    def applies(self, ctx: Context) -> bool:
        r = ctx.config.rounds
        return ctx.edge_p is not None and r.edge_prior is not None and bool(r.reattach_pixels)

    def __call__(self, z, pieces: Pieces, ctx: Context, skip=()) -> tuple:
        z, _ = reattach_slivers(ctx.system, z, pieces, max_pixels=ctx.config.rounds.reattach_pixels)
        return z, Done()


class Grazing:
    """Last after the rounds: a silhouette pixel placed by nothing but grazing normals is held
    where its neighbours' normals put it (:func:`~fnin_cli.solvers.grazing.hold_grazing`,
    ``RoundsConfig.hold_grazing``), so that every placement reads the rounds' own z."""

    name = "grazing"

    def applies(self, ctx: Context) -> bool:
        return ctx.edge_p is not None and bool(ctx.config.rounds.hold_grazing)

    def __call__(self, z, pieces: Pieces, ctx: Context, skip=()) -> tuple:
        c = pieces.config
        z, _ = hold_grazing(ctx.system, z, pieces.weights, ctx.config.rounds.hold_grazing, c.cut_weight, c.trust_floor)
        return z, Done()


class Pins:
    """Each piece holding a ``--depth-at`` pixel is shifted so that the pixel has its depth
    (:func:`~fnin_cli.solvers.pieces.pin_pieces`); the first pin shifts the whole map first."""

    name = "pins"

    def applies(self, ctx: Context) -> bool:
        return len(ctx.pins) > 1

    def __call__(self, z, pieces: Pieces, ctx: Context, skip=()) -> tuple:
        persp = ctx.system.camera.perspective
        targets = [(r, c, float(np.log(d)) if persp else float(d)) for r, c, d in ctx.pins]
        r0, c0, t0 = targets[0]
        z = z + (t0 - z[ctx.system.index[r0, c0]])
        try:
            z, done = pin_pieces(ctx.system, z, pieces, targets)
        except ValueError as exc:
            raise FninError(f"--depth-at: {exc}") from None
        return z, Done([(k, pixels, 0.0) for _, k, pixels in done],
                       placed={k: "pinned by --depth-at {},{},{:g}".format(*ctx.pins[i]) for i, k, _ in done})


BEFORE_ROUNDS = (Placement(after=False),)
AFTER_ROUNDS = (Slivers(), Placement(after=True), Grazing())


def run_steps(steps, z: np.ndarray, pieces: Pieces, ctx: Context) -> tuple:
    """z after each of ``steps`` that applies, in order, and what they did together
    (:class:`Done`); a piece one step moved is not moved by a later one."""
    done = Done()
    for step in steps:
        if step.applies(ctx):
            z, did = step(z, pieces, ctx, skip={k for k, _, _ in done.moved})
            done.add(did)
    return z, done
