"""FNIN's Stage II (fnin_cli.solvers.stage2): its weights from the network's outputs on
small hand-built maps with exact expected values, and where its one solve runs (the gate
on scenes and through training: test_sliver_gate.py; the edge net's weights end to end:
test_edges.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.config import DEFAULT
from fnin_cli.solvers import stage2
from fnin_cli.solvers.backend import Backend
from fnin_cli.solvers.system import DataTerm, NormalSystem


def _flat(h: int, w: int, mask=None) -> NormalSystem:
    """An orthographic system of normals facing the camera on an h x w map."""
    normals = np.dstack([np.zeros((h, w)), np.zeros((h, w)), -np.ones((h, w))])
    return NormalSystem(normals, np.ones((h, w), bool) if mask is None else mask, Camera(None, 1.0))


def test_sharpen_is_a_temperature_on_the_logit():
    p = np.array([1e-9, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])
    np.testing.assert_array_equal(stage2.sharpen(p, 1.0), p)
    two = stage2.sharpen(p, 2.0)
    q = np.clip(p, 1e-7, 1 - 1e-7)
    np.testing.assert_allclose(two, q * q / (q * q + (1 - q) ** 2), rtol=1e-9, atol=1e-12)   # a = 2 in closed form
    np.testing.assert_allclose(stage2.sharpen(1 - p, 3.0), 1 - stage2.sharpen(p, 3.0), atol=1e-12)
    assert np.all(np.diff(stage2.sharpen(p, 3.0)) >= 0) and stage2.sharpen(p, 3.0)[3] == 0.5
    assert abs(stage2.sharpen(p, 3.0)[1] - 0.5) > abs(two[1] - 0.5) > abs(p[1] - 0.5)


def test_sharpen_by_hand():
    # sigmoid(a logit p) = p^a / (p^a + (1 - p)^a): 0.75 at a = 2 is 9/10, 0.2 at a = 3 is 1/65
    np.testing.assert_allclose(stage2.sharpen(np.array([0.75, 0.2]), 2.0)[0], 0.9, rtol=1e-12)
    np.testing.assert_allclose(stage2.sharpen(np.array([0.2]), 3.0), [1 / 65], rtol=1e-12)
    np.testing.assert_allclose(stage2.sharpen(np.array([0.75]), 0.5), [np.sqrt(3) / (np.sqrt(3) + 1)], rtol=1e-12)


def test_edge_weights_are_the_sharpened_maps_in_binis_layout():
    s = _flat(2, 3)
    wu = np.array([[0.1, 0.5, 0.75], [0.9, 0.25, 0.5]])
    wv = np.array([[0.5, 0.2, 0.8], [0.6, 0.4, 0.5]])
    p = np.stack([wu, wv])
    plain = replace(DEFAULT.one_shot, edge_sharpness=1.0, sliver_gate=None)
    w = stage2.edge_weights(s, p, plain)
    np.testing.assert_array_equal(w["u-"], wu.ravel())
    np.testing.assert_array_equal(w["u+"], 1 - wu.ravel())
    np.testing.assert_array_equal(w["v-"], wv.ravel())
    np.testing.assert_array_equal(w["v+"], 1 - wv.ravel())
    sharp = stage2.edge_weights(s, p, replace(plain, edge_sharpness=2.0))
    assert sharp["u-"][2] == pytest.approx(0.9) and sharp["u+"][2] == pytest.approx(0.1)
    assert sharp["u-"][4] == pytest.approx(0.1) and sharp["u-"][1] == 0.5


def test_edge_weights_gate_a_sliver_only_when_the_gate_is_set():
    # a row of five pixels; pixels 1 and 3 cut the edges towards pixel 2 (0.01 < 0.2)
    s = _flat(1, 5)
    wm = np.array([0.5, 0.99, 0.99, 0.01, 0.5])
    p = np.stack([wm[None], np.full((1, 5), 0.5)])
    one = replace(DEFAULT.one_shot, edge_sharpness=1.0)
    off = stage2.edge_weights(s, p, replace(one, sliver_gate=None))
    on = stage2.edge_weights(s, p, replace(one, sliver_gate=0.2))
    np.testing.assert_array_equal(off["u-"], wm)
    # pixel 2: g = max(0.01, 0.01) / 0.2 = 0.05 on both of its u weights; the rest unchanged
    np.testing.assert_allclose(on["u-"], [0.5, 0.99, 0.99 * 0.05, 0.01, 0.5], rtol=1e-12)
    np.testing.assert_allclose(on["u+"], [0.5, 0.01, 0.01 * 0.05, 0.99, 0.5], rtol=1e-12)
    np.testing.assert_array_equal(on["v-"], off["v-"])


def test_neighbour_weights_are_the_weights_towards_each_pixel():
    s = _flat(1, 3)
    w = {"u+": np.array([0.7, 0.2, 0.4]), "u-": np.array([0.3, 0.8, 0.6]),
         "v+": np.full(3, 0.5), "v-": np.full(3, 0.5)}
    lo, hi = stage2.neighbour_weights(s, w, "u")
    np.testing.assert_array_equal(lo, [1.0, 0.7, 0.2])   # the left neighbour's u+ (none for pixel 0)
    np.testing.assert_array_equal(hi, [0.8, 0.6, 1.0])   # the right neighbour's u- (none for pixel 2)
    lo, hi = stage2.neighbour_weights(s, w, "v")          # one row: no neighbour on v
    np.testing.assert_array_equal(lo, np.ones(3))
    np.testing.assert_array_equal(hi, np.ones(3))


def test_attention_weights_trust_the_side_omega_does_not_mark():
    s = _flat(1, 3)
    omega = np.array([[0.2, 0.6, 0.9]])
    w = stage2.attention_weights(s, omega, paired=False)
    np.testing.assert_allclose(w["u+"], [0.4, 0.1, 1.0])   # towards the right neighbour q: 1 - omega(q)
    np.testing.assert_allclose(w["u-"], [1.0, 0.8, 0.4])   # towards the left one
    np.testing.assert_array_equal(w["v+"], np.ones(3))
    np.testing.assert_array_equal(w["v-"], np.ones(3))
    paired = stage2.attention_weights(s, omega)
    # only the middle pixel has both sides: 0.1 and 0.8 divided by their sum
    np.testing.assert_allclose(paired["u+"], [0.4, 0.1 / 0.9, 1.0])
    np.testing.assert_allclose(paired["u-"], [1.0, 0.8 / 0.9, 0.4])
    # both sides marked: the division is floored at 1e-6, never by zero
    both = stage2.attention_weights(s, np.ones((1, 3)))
    assert np.isfinite(both["u+"]).all() and both["u+"][1] == 0.0


def test_model_weights_use_the_edge_net_when_the_model_has_one():
    s = _flat(1, 3)
    omega = np.array([[0.2, 0.6, 0.9]])
    p = np.stack([np.full((1, 3), 0.25), np.full((1, 3), 0.5)])
    for got, want in ((stage2.model_weights(s, None, omega), stage2.attention_weights(s, omega)),
                      (stage2.model_weights(s, p, omega), stage2.edge_weights(s, p))):
        assert got.keys() == want.keys()
        for k in got:
            np.testing.assert_array_equal(got[k], want[k])


def test_edge_prior_is_the_scaled_logit_clipped():
    s = _flat(1, 2)
    p = np.stack([np.array([[0.75, 1.0]]), np.array([[0.0, 0.5]])])
    bias = stage2.edge_prior(s, p, 2.0)
    np.testing.assert_allclose(bias["u"], [2 * np.log(3), 2 * np.log((1 - 1e-6) / 1e-6)], rtol=1e-9)
    np.testing.assert_allclose(bias["v"], [2 * np.log(1e-6 / (1 - 1e-6)), 0.0], rtol=1e-9, atol=1e-12)


def test_stage2_solves_on_the_cpu_with_the_backends_solver():
    s = _flat(3, 4)
    w = stage2.attention_weights(s, np.zeros((3, 4)))
    # flat normals and a prior at depth 2: the one solution is the plane z = 2, from any start
    z = stage2.stage2(s, w, DataTerm(1e-3, np.full(s.n, 2.0)), np.zeros(s.n), Backend("direct"))
    np.testing.assert_allclose(z, 2.0, rtol=1e-9)
    z = stage2.stage2(s, w, DataTerm(1e-3, np.full(s.n, 2.0)), np.zeros(s.n), Backend("amg"), rtol=1e-10)
    np.testing.assert_allclose(z, 2.0, rtol=1e-6)


def test_stage2_on_a_grid_backend_goes_to_the_grids_solver(monkeypatch):
    """On a grid backend Stage II solves on that device's pixel grid, with its tolerance,
    iteration cap and V-cycle scale (the grid itself replaced by a stand-in)."""
    from fnin_cli.solvers import grid

    calls = []

    class FakeGrid:
        def __init__(self, system, device):
            self.system, self.device = system, device

        def image(self, values):
            return np.asarray(values)

        def vector(self, img):
            return np.asarray(img)

        def weights_images(self, weights):
            return weights

        def term(self, term):
            return term

        def solve(self, w, term, x0, rtol, maxiter, coarse_scale):
            calls.append((rtol, maxiter, self.device, coarse_scale))
            return np.full(self.system.n, 7.0), 3, 0.0

    monkeypatch.setattr(grid, "GridSystem", FakeGrid)
    s = _flat(2, 2)
    w = stage2.attention_weights(s, np.zeros((2, 2)))
    z = stage2.stage2(s, w, DataTerm(1e-3, np.zeros(s.n)), np.zeros(s.n), Backend(grid="cuda:1"),
                      rtol=1e-5, maxiter=9, coarse_scale=2.0)
    np.testing.assert_array_equal(z, 7.0)
    assert calls == [(1e-5, 9, "cuda:1", 2.0)]
