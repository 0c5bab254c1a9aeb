"""The placement steps (fnin_cli.solvers.steps): when each applies, one interface, one order."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.config import DEFAULT
from fnin_cli.errors import FninError
from fnin_cli.solvers.pieces import Pieces
from fnin_cli.solvers.steps import AFTER_ROUNDS, BEFORE_ROUNDS, Context, Done, Pins, Placement, run_steps
from fnin_cli.solvers.system import NormalSystem


def _halves(shape=(6, 10)):
    """A flat orthographic map cut between its two halves (each side distrusts the other)."""
    n = np.dstack([np.zeros(shape + (2,)), -np.ones(shape + (1,))])
    s = NormalSystem(n, np.ones(shape, bool), Camera(None, 1.0))
    right = (np.arange(shape[1]) >= shape[1] // 2)[None, :].repeat(shape[0], 0)
    img = right.astype(float)
    w = {d: 0.5 * (np.roll(img, sh, axis=ax) == img)[s.mask]
         for d, sh, ax in (("u+", -1, 1), ("u-", 1, 1), ("v+", -1, 0), ("v-", 1, 0))}
    return s, right[s.mask], w


def test_the_default_placements_apply_after_fnin_without_a_prior_only():
    s, _, _ = _halves()
    edge = np.zeros((2,) + s.shape)
    for step in (Placement(after=False), Placement(after=True)):
        assert step.applies(Context(s, DEFAULT, edge))
        assert not step.applies(Context(s, DEFAULT, None))               # another method's rounds
        assert not step.places_pieces(Context(s, DEFAULT, edge, prior=object()))
    assert not Placement(after=False).applies(Context(s, DEFAULT, edge, prior=object()))
    off = replace(DEFAULT, rounds=replace(DEFAULT.rounds, contact_edges=None))
    assert not BEFORE_ROUNDS[0].applies(Context(s, off, edge))
    # the slivers and the rim are the rounds' own: with the edge prior, a depth prior or not
    after = Placement(after=True)
    assert after.applies(Context(s, DEFAULT, edge, prior=object())) and after.applies(Context(s, off, edge))
    assert after.holds_slivers(Context(s, DEFAULT, edge, prior=object()))
    assert not after.holds_slivers(Context(s, replace(DEFAULT, rounds=replace(DEFAULT.rounds, reattach_pixels=0)), edge))
    none = replace(off, rounds=replace(off.rounds, reattach_pixels=0, hold_grazing=None))
    assert not after.applies(Context(s, none, edge))
    assert not Pins().applies(Context(s, DEFAULT, None, pins=((0, 0, 1.0),)))   # one pin: the scale alone
    assert Pins().applies(Context(s, DEFAULT, None, pins=((0, 0, 1.0), (0, 9, 2.0))))
    # the flow: method, placement, rounds, placement, finish (pins)
    assert [(type(t).__name__, t.after) for t in BEFORE_ROUNDS + AFTER_ROUNDS] == [("Placement", False),
                                                                                   ("Placement", True)]


def test_a_piece_one_step_moved_is_not_moved_by_the_next():
    s, right, w = _halves()
    moved_by = []

    class Mover:
        name = "mover"

        def __init__(self, shift):
            self.shift = shift

        def applies(self, ctx):
            return True

        def __call__(self, z, pieces, ctx, skip=()):
            if 1 in skip:
                return z, Done()
            moved_by.append(self.shift)
            return z + self.shift * (pieces.plain[0] == 1), Done([(1, int(right.sum()), self.shift)], ["moved"])

    z, done = run_steps((Mover(2.0), Mover(5.0)), np.zeros(s.n), Pieces(s, w), Context(s, DEFAULT))
    assert moved_by == [2.0] and done.notes == ["moved"]
    np.testing.assert_array_equal(z, np.where(right, 2.0, 0.0))


def test_pins_shift_the_map_to_the_first_and_each_pinned_piece_to_its_own():
    s, right, w = _halves()
    ctx = Context(s, DEFAULT, None, pins=((0, 0, 3.0), (0, 9, 7.0)))
    z, done = Pins()(np.zeros(s.n), Pieces(s, w), ctx)
    img = s.to_image(z)
    assert img[0, 0] == 3.0 and img[0, 9] == 7.0
    np.testing.assert_array_equal(z, np.where(right, 7.0, 3.0))
    assert set(done.placed.values()) == {"pinned by --depth-at 0,0,3", "pinned by --depth-at 0,9,7"}
    with pytest.raises(FninError, match="pixels .* are on one piece; pin each piece once"):
        Pins()(np.zeros(s.n), Pieces(s, w), Context(s, DEFAULT, None, pins=((0, 0, 3.0), (1, 1, 7.0))))


def test_a_sliver_follows_the_loose_piece_it_borders_when_the_placement_moves_that_piece():
    """Regression (issue 51 item 4): after the rounds the slivers were placed first, then
    the pieces' solve moved the loose piece they border and left them behind: one-pixel
    spikes far from every neighbour (7 of DiLiGenT goblet's 8). A flat 20x20 map whose right
    half is a loose piece 5 units up, with one pixel inside it that no edge holds: the
    placement brings the half down, and the pixel comes with it."""
    shape = (20, 20)
    n = np.dstack([np.zeros(shape + (2,)), -np.ones(shape + (1,))])
    s = NormalSystem(n, np.ones(shape, bool), Camera(None, 1.0))
    lab = (np.arange(20) >= 10)[None, :].repeat(20, 0).astype(int)
    lab[5, 15] = 2                                                   # the sliver
    w = {d: (np.roll(lab, sh, axis=ax) == lab)[s.mask].astype(float)
         for d, sh, ax in (("u+", -1, 1), ("u-", 1, 1), ("v+", -1, 0), ("v-", 1, 0))}
    z = np.where(lab[s.mask] > 0, 5.0, 0.0)
    out, done = Placement(after=True)(z, Pieces(s, w), Context(s, DEFAULT, np.zeros((2,) + shape)))
    img = s.to_image(out)
    assert np.allclose(img[:, 10:], img[0, 10], atol=1e-6)           # the sliver with its piece
    assert abs(img[0, 10] - img[0, 0]) < 0.5 and done.placed           # the piece placed down
