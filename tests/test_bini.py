"""BiNI (fnin_cli.solvers.bini): its bilateral weights and its run as the registry's ``bini``."""

from __future__ import annotations

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.solvers.bini import bini_weights, integrate_bini
from fnin_cli.solvers.system import DataTerm, NormalSystem


def _row(z_values):
    """A 1 x n orthographic row of flat normals (slope 0), and its system."""
    n = len(z_values)
    normals = np.dstack([np.zeros((1, n, 2)), -np.ones((1, n, 1))])
    return NormalSystem(normals, np.ones((1, n), bool), Camera(None, 1.0)), np.asarray(z_values, float)


def test_the_side_with_the_larger_jump_gets_the_smaller_weight():
    """w_u- = sigmoid_k((A_u+ z)^2 - (A_u- z)^2): at the pixel before a jump of 2 the right
    difference is 2, the left 0, so w_u- = 1 / (1 + exp(-k 4)) and w_u+ = 1 - w_u-."""
    s, z = _row([0.0, 0.0, 0.0, 2.0, 2.0])
    w = bini_weights(s, z, k=2.0)
    assert w["u-"][2] == pytest.approx(1.0 / (1.0 + np.exp(-8.0)), rel=1e-12)
    assert w["u+"][2] == pytest.approx(1.0 - w["u-"][2], rel=1e-12)
    assert w["u-"][3] == pytest.approx(1.0 / (1.0 + np.exp(8.0)), rel=1e-12)   # after it: the left side is cut
    assert w["u-"][0] == pytest.approx(0.5)                                     # flat: both sides alike
    for d in ("u", "v"):
        np.testing.assert_allclose(w[d + "+"] + w[d + "-"], 1.0)


def test_logits_shift_the_weights_and_k_sharpens_them():
    s, z = _row([0.0, 0.0, 0.0, 2.0, 2.0])
    bias = {"u": np.full(5, 1.5), "v": np.zeros(5)}
    w = bini_weights(s, z, 2.0, bias=bias)
    assert w["u-"][0] == pytest.approx(1.0 / (1.0 + np.exp(-1.5)), rel=1e-12)
    sharp = bini_weights(s, z, 6.0)
    assert sharp["u-"][2] > bini_weights(s, z, 2.0)["u-"][2]


def test_bini_from_zero_integrates_a_tilted_plane():
    """BiNI as published (z = 0 start, Jacobi-PCG to 1e-3 per iteration) on a plane of
    slope 0.3: every one-sided difference agrees, so the weights stay 1/2 and one smooth
    solve is the answer, to the inner tolerance."""
    n = np.dstack([np.full((10, 12), 0.3), np.zeros((10, 12)), -np.ones((10, 12))])
    n /= np.linalg.norm(n, axis=2, keepdims=True)
    s = NormalSystem(n, np.ones((10, 12), bool), Camera(None, 1.0))
    r = integrate_bini(s, term=DataTerm(1e-9))
    slope = np.diff(s.to_image(r.z), axis=1)
    np.testing.assert_allclose(slope, 0.3, atol=2e-3)
    assert 1 <= r.iterations <= DEFAULT.solver.max_iter


def test_the_bini_method_with_a_prior_starts_at_its_level():
    """With a depth prior bini starts at the prior's level (a constant changes no weight)
    and its result is in the prior's units."""
    n = np.dstack([np.zeros((16, 16, 2)), -np.ones((16, 16, 1))])
    inp = build_input(n.astype(np.float32), ortho=True)
    from fnin_cli.prior import DepthPrior

    prior = DepthPrior(np.full((16, 16), 40.0), np.ones((16, 16)), 0.1)
    res = integrate(inp, "bini", depth_prior=prior)
    np.testing.assert_allclose(res.depth[inp.mask], 40.0, atol=1e-6)
