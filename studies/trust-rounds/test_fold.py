"""The study's fold test (fold.py; `python -m pytest studies/trust-rounds/test_fold.py`):
which edges it calls a fold, and what it does to the rounds' prior through
``integrate(rounds_bias=)``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fnin_cli.camera import Camera
from fnin_cli.solvers.system import NormalSystem

sys.path.insert(0, str(Path(__file__).parent))
from fold import FoldPrior, fold_edges, fold_prior, view_cosine  # noqa: E402


def _row(nx_signs, nz):
    """One row of unit normals with x components of the given signs and |n_z| = nz."""
    s = np.asarray(nx_signs, float)
    n = np.dstack([s * np.sqrt(1 - nz ** 2), np.zeros_like(s), -np.full_like(s, nz)])   # (1, N, 3)
    return NormalSystem(n, np.ones((1, len(s)), bool), Camera(None, 1.0))


def test_view_cosine_is_n_dot_ray_under_perspective():
    K = np.array([[100.0, 0, 1.0], [0, 100.0, 0.0], [0, 0, 1]])
    n = np.dstack([np.full((1, 3), 0.6), np.zeros((1, 3)), np.full((1, 3), -0.8)])
    c = view_cosine(NormalSystem(n, np.ones((1, 3), bool), Camera(K)))
    u = np.arange(3.0)
    r = np.stack([(u - 1.0) / 100.0, np.zeros(3), np.ones(3)], 1)
    assert np.allclose(c, np.abs(r @ np.array([0.6, 0.0, -0.8])) / np.linalg.norm(r, axis=1))


def test_a_grazing_fold_and_not_a_facing_edge():
    s = _row([1, 1, 1], 0.1)
    assert fold_edges(s, 0.3)[0].all()
    assert not fold_edges(s, 0.05)[0].any()
    assert not fold_edges(_row([1, 1, 1], 0.5), 0.3)[0].any()


def test_same_side_rejects_surfaces_turning_away_from_each_other():
    s = _row([1, -1, -1], 0.1)
    assert fold_edges(s, 0.3)[0].tolist() == [True, True]
    assert fold_edges(s, 0.3, same_side=True)[0].tolist() == [False, True]


def test_join_cancels_inside_a_band_and_leaves_other_pixels_alone():
    s = _row([1, 1, 1, 1, 1], 0.1)
    bias = {"u": np.full(5, 3.0), "v": np.full(5, -1.0)}
    out = FoldPrior(0.3, join=2.0)(s, bias)
    assert out["u"].tolist() == [-2.0, 0.0, 0.0, 0.0, 2.0]
    assert out["v"].tolist() == [-1.0] * 5        # no vertical edges in one row
    assert fold_prior(s, bias, 0.01)["u"].tolist() == [3.0] * 5


def test_the_join_follows_the_edge_nets_belief_that_the_edge_is_joined():
    s = _row([1, 1], 0.1)                        # one fold edge 0 -> 1
    scale = 0.5
    logit = np.log(0.8 / 0.2)                    # pixel 1 joins pixel 0 with p = 0.8
    bias = {"u": np.array([logit * scale, logit * scale]), "v": np.zeros(2)}
    out = fold_prior(s, bias, 0.3, join=2.0, prior_scale=scale)
    # pixel 0's weight towards 1 is 1 - 0.8 = 0.2: the edge is joined with belief 0.8
    assert np.allclose(out["u"], [-1.6, 1.6])
    cut = {"u": np.array([logit * scale, -logit * scale]), "v": np.zeros(2)}   # both cut: belief 0.2
    assert np.allclose(fold_prior(s, cut, 0.3, join=2.0, prior_scale=scale)["u"], [-0.4, 0.4])
