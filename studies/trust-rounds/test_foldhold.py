"""The study's fold-edge weight hold (foldhold.py; `python -m pytest
studies/trust-rounds/test_foldhold.py`): the rounds' weights on fold pixels stay at the
early round's, everywhere else they follow the rounds."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fnin_cli.camera import Camera
from fnin_cli.solvers.bini import bini_weights, integrate_bini
from fnin_cli.solvers.system import NormalSystem

sys.path.insert(0, str(Path(__file__).parent))
from foldhold import FoldHold, fold_belief, fold_pixels  # noqa: E402


def _ramp_system(n=24):
    """An orthographic surface falling steeply (|n_z| = 0.1) over columns 10-13 of a
    n x n square, gently elsewhere: the steep band's horizontal edges are folds."""
    x = np.arange(n, dtype=float)
    slope = np.where((x >= 10) & (x <= 13), 10.0, 0.2)
    g = np.tile(slope, (n, 1))
    nrm = np.dstack([g, np.zeros_like(g), -np.ones_like(g)])
    nrm /= np.linalg.norm(nrm, axis=2, keepdims=True)
    return NormalSystem(nrm, np.ones((n, n), bool), Camera(None, 1.0))


def _run(system, hold, at_bias, z0, rounds=6):
    bias = hold.bias(system, at_bias)
    return integrate_bini(system, k=hold.k, z0=z0, z_prior=z0, max_iter=rounds, tol=0.0, solver="jacobi",
                          bias=bias, adjust=hold.adjust(z0, system))


def test_fold_pixels_are_the_steep_band():
    s = _ramp_system()
    pix = fold_pixels(s, 0.3)
    cols = np.unique(np.nonzero(s.to_image(pix["u"].astype(float)) > 0)[1])
    assert cols.tolist() == [10, 11, 12, 13]
    # the test is per pixel (both ends near grazing): the band's vertical edges too
    assert np.array_equal(pix["v"], pix["u"])


def test_the_hold_keeps_the_fold_weights_and_frees_the_rest():
    s = _ramp_system()
    rng = np.random.default_rng(0)
    z0 = rng.normal(0, 0.5, s.n)                   # an early solution far from a fixed point
    prior = {"u": rng.normal(0, 1, s.n), "v": rng.normal(0, 1, s.n)}
    for at in (0, 1):
        hold = FoldHold(0.3, at=at)
        r = _run(s, hold, prior, z0)
        pix = fold_pixels(s, 0.3)["u"]
        if at == 0:
            early = bini_weights(s, z0, hold.k, bias=prior)["u-"]
        else:
            z1 = integrate_bini(s, k=hold.k, z0=z0, z_prior=z0, max_iter=1, tol=0.0, solver="jacobi",
                                bias=prior).z
            early = bini_weights(s, z1, hold.k, bias=prior)["u-"]
        assert r.iterations >= 3             # rounds after the first ran with the hold
        assert np.allclose(r.weights["u-"][pix], early[pix], atol=1e-9)
        free = bini_weights(s, r.z, hold.k, bias=prior)["u-"]
        assert np.allclose(r.weights["u-"][~pix], free[~pix])
        assert not np.allclose(free[pix], early[pix], atol=1e-3)   # the hold did something
    assert hold.held_pixels == 2 * int(pix.sum())   # both axes


def test_the_belief_weighted_hold_blends_held_and_free_logits():
    s = _ramp_system(16)
    rng = np.random.default_rng(1)
    z0 = rng.normal(0, 0.5, s.n)
    scale = 0.3
    prior = {"u": rng.normal(0, 1, s.n), "v": rng.normal(0, 1, s.n)}
    belief = fold_belief(s, prior, 0.3, scale)
    pix = fold_pixels(s, 0.3)
    assert np.all((belief["u"] > 0) == pix["u"]) and np.all((belief["u"] <= 1) & (belief["u"] >= 0))
    hold = FoldHold(0.3, at=0, prior_scale=scale)
    r = _run(s, hold, prior, z0, rounds=4)
    early = bini_weights(s, z0, hold.k, bias=prior)["u-"]
    free = bini_weights(s, r.z, hold.k, bias=prior)["u-"]
    on, b = pix["u"], belief["u"][pix["u"]]
    logit = lambda w: np.log(w / (1 - w))   # noqa: E731
    assert np.allclose(logit(r.weights["u-"][on]), b * logit(early[on]) + (1 - b) * logit(free[on]), atol=1e-6)
    # a pixel pair the net calls joined (w_q->p = sigmoid(3 / 0.3)) is fully held
    n = np.dstack([np.full((1, 2), 0.99), np.zeros((1, 2)), np.full((1, 2), -np.sqrt(1 - 0.99 ** 2))])
    two = NormalSystem(n, np.ones((1, 2), bool), Camera(None, 1.0))
    assert fold_belief(two, {"u": np.array([0.0, 3.0]), "v": np.zeros(2)}, 0.3, scale)["u"].min() > 0.99
    assert fold_belief(two, {"u": np.array([3.0, -3.0]), "v": np.zeros(2)}, 0.3, scale)["u"].max() < 0.01
