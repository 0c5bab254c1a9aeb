"""The study's gap stop (gapstop.py; `python -m pytest studies/trust-rounds/test_gapstop.py`):
G sums the steps across the net's cuts only, and a round that raises it (from the second
on) is undone and ends the rounds."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fnin_cli.camera import Camera
from fnin_cli.solvers.system import NormalSystem

sys.path.insert(0, str(Path(__file__).parent))
from gapstop import GapStop, cut_edges, gap  # noqa: E402


def _flat(n=6):
    nrm = np.dstack([np.zeros((n, n)), np.zeros((n, n)), -np.ones((n, n))])
    return NormalSystem(nrm, np.ones((n, n), bool), Camera(None, 1.0))


def _cut_column(system, col, n=6):
    """Prior logits (scale 0.3) cutting the horizontal edges between columns col and col+1."""
    # logit of each pixel's weight towards its left neighbour (w_q->p = sigmoid(bias[q] / 0.3));
    # p's towards its right one is 1 - sigmoid(bias[p] / 0.3): both low across the cut
    u = np.full((n, n), 3.0)
    u[:, col + 1] = -3.0
    return {"u": u[system.mask], "v": np.full(system.n, 3.0)}


def test_cut_edges_and_gap_count_only_the_nets_cuts():
    s = _flat()
    bias = _cut_column(s, 2)
    (pu, qu), (pv, qv) = cut_edges(s, bias, 0.3)
    assert len(pv) == 0 and len(pu) == 6
    z = np.zeros(s.n)
    cols = np.tile(np.arange(6), 6)
    assert np.all(cols[pu] == 2) and np.all(cols[qu] == 3)
    z[cols >= 3] = 1.5        # a step across the cut
    z[cols == 0] += 10.0      # and one across edges the net joins: not counted
    assert gap(z, cut_edges(s, bias, 0.3)) == 6 * 1.5


def test_a_round_that_opens_the_cuts_is_undone_and_stops():
    s = _flat()
    g = GapStop(eps=0.0)
    g.bias(s, _cut_column(s, 2))
    cols = np.tile(np.arange(6), 6)
    z0 = np.zeros(s.n)
    adjust = g.adjust(z0, s)
    z1 = np.where(cols >= 3, 2.0, 0.0)        # round 1 opens the cut: allowed (the first round)
    assert adjust(1, z1, None) is z1 and not g.stop(1, z0, z1)
    z2 = np.where(cols >= 3, 1.0, 0.0)        # round 2 closes it: kept
    assert adjust(2, z2, None) is z2 and not g.stop(2, z1, z2)
    z3 = np.where(cols >= 3, 1.5, 0.0)        # round 3 opens it again: undone, stop
    back = adjust(3, z3, None)
    assert np.array_equal(back, z2) and g.stop(3, z2, back) and g.stopped_at == 3
    g.bias(s, _cut_column(s, 2))              # a new run starts clean
    assert not g.stop(1, z0, z0) and g.stopped_at is None


def test_cut_stop_ends_the_rounds_after_the_first_on_maps_cut_little():
    from cutstop import CutStop, cut_length

    s = _flat()
    bias = _cut_column(s, 2)                  # 6 cut edges on 36 pixels: s = 6 / 6 = 1
    assert cut_length(s, bias) == 1.0
    c = CutStop(tau=1.5)
    assert c.bias(s, bias) is bias and c.stop(1, None, None)
    c = CutStop(tau=1.0)
    c.bias(s, bias)
    assert not c.stop(1, None, None)
