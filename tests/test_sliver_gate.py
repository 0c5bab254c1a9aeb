"""The sliver gate of Stage II (solvers.stage2.sliver_gate, docs/decisions.md#sliver-gate)."""

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.model import inference
from fnin_cli.pipeline import build_input
from fnin_cli.solvers import stage2
from fnin_cli.solvers.bini import bini_weights
from fnin_cli.solvers.system import DataTerm, NormalSystem
from fnin_cli.data.synthetic import make_scene

from test_edges import _edge_model


def _flat_system(shape, mask=None):
    normals = np.zeros(shape + (3,))
    normals[..., 2] = 1.0
    mask = np.ones(shape, bool) if mask is None else mask
    return NormalSystem(normals, mask, Camera(None, 1.0))


def _comb():
    """A front surface at depth 0 in the top half, split by a one-pixel column of the rear
    surface (depth 50, the bottom half) that reaches up between its two parts."""
    depth = np.full((24, 24), 50.0)
    depth[:12, :] = 0.0
    depth[:12, 12] = 50.0
    rear = depth == 50.0
    return depth, rear


def test_a_pixel_cut_off_by_both_neighbours_connects_to_neither():
    s = _flat_system((1, 6))
    wm = np.array([0.5, 0.9, 0.9, 0.1, 0.5, 0.5])        # pixel 2: both neighbours lean away
    w = {"u-": wm.copy(), "u+": 1 - wm, "v-": np.full(6, 0.5), "v+": np.full(6, 0.5)}
    before = {k: v.copy() for k, v in w.items()}
    g = stage2.sliver_gate(s, w, 0.2)
    for k in w:                                            # the input is not modified
        np.testing.assert_array_equal(w[k], before[k])
    gate = np.ones(6)
    gate[2] = max(w["u+"][1], w["u-"][3]) / 0.2            # 0.1 / 0.2
    np.testing.assert_allclose(g["u-"], wm * gate)
    np.testing.assert_allclose(g["u+"], (1 - wm) * gate)
    np.testing.assert_array_equal(g["v-"], w["v-"])        # one pixel tall: v untouched
    # one neighbour cutting towards a pixel is an ordinary jump: no gate
    wm2 = np.array([0.5, 0.9, 0.9, 0.5, 0.5, 0.5])
    w2 = {"u-": wm2, "u+": 1 - wm2, "v-": np.full(6, 0.5), "v+": np.full(6, 0.5)}
    for k, v in stage2.sliver_gate(s, w2, 0.2).items():
        np.testing.assert_array_equal(v, w2[k])


def test_a_pixel_at_the_border_of_the_mask_is_not_gated():
    mask = np.ones((1, 4), bool)
    s = _flat_system((1, 4), mask)
    wm = np.array([0.0, 0.0, 1.0, 1.0])                  # pixel 0 has no left neighbour
    w = {"u-": wm, "u+": 1 - wm, "v-": np.full(4, 0.5), "v+": np.full(4, 0.5)}
    g = stage2.sliver_gate(s, w, 0.5)
    assert g["u+"][0] == w["u+"][0] and g["u-"][3] == w["u-"][3]


def test_the_gate_keeps_a_rear_surface_off_the_front_one_it_shows_through():
    """With BiNI's weights of the true depth, the one-pixel column ties the rear surface
    to the front one (paired weights: 0.5 to each side); gated, each surface keeps its
    own depth."""
    depth, rear = _comb()
    s = _flat_system(depth.shape)
    z = depth[s.mask]
    w = bini_weights(s, z)
    assert w["u-"][s.index[5, 12]] == pytest.approx(0.5)   # the column: tied both ways
    errors = {}
    for name, weights in (("paired", w), ("gated", stage2.sliver_gate(s, w, 0.2))):
        zs, _ = s.solve(weights, DataTerm(1e-6, z), rtol=1e-10)
        errors[name] = float(np.abs(zs - z)[rear[s.mask]].mean())
    assert errors["paired"] > 5.0          # the rear surface pulled tens of units forward
    assert errors["gated"] < 1e-3


def test_edge_weights_apply_the_gate_only_when_it_is_set():
    from dataclasses import replace

    from fnin_cli.config import DEFAULT

    model = _edge_model()
    sc = make_scene(7, 40, fold_prob=1.0)
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    s = NormalSystem(inp.normals, inp.mask, inp.camera)
    p = inference.network_outputs(model, inp, "cpu")[2]
    plain = stage2.edge_weights(s, p, replace(DEFAULT.one_shot, sliver_gate=None))
    np.testing.assert_allclose(plain["u+"] + plain["u-"], 1.0)
    gated = stage2.edge_weights(s, p, replace(DEFAULT.one_shot, sliver_gate=0.3))
    want = stage2.sliver_gate(s, plain, 0.3)
    for k in plain:
        np.testing.assert_array_equal(gated[k], want[k])


def test_the_solve_objective_trains_through_the_gate():
    """With the gate, the training objective is the error of Stage II's gated solve (the
    same solve as inference) and its gradient is that error's derivative with respect to
    the paired weights, through each pixel's own gate and its neighbours' (finite
    differences)."""
    from test_edges import _two_object_scene
    from fnin_cli.solvers.bini import bini_layout
    from fnin_cli.train.losses import _numpy_system, _scene_solve_error

    args, w, zr, z, objects = _two_object_scene()
    mask = args[1]
    system, lam = _numpy_system(*args)
    gated = stage2.sliver_gate(system, bini_layout(w[0][mask], w[1][mask]), 0.5)
    zs, _ = system.solve(gated, DataTerm(lam, zr[mask]), x0=zr[mask], rtol=1e-10)
    loss, grad = _scene_solve_error(*args, w, zr, z, None, 0.0, 0.5)
    zc, gc = zs - zs.mean(), z[mask] - z[mask].mean()
    assert loss == pytest.approx(np.mean(np.abs(zc - gc)) / np.mean(np.abs(gc)), rel=1e-4)
    assert loss != pytest.approx(_scene_solve_error(*args, w, zr, z, None)[0], rel=1e-3)
    # pixels gated on u, and the neighbours whose weights set their gates
    rows, cols = np.nonzero(mask)
    cut = np.flatnonzero(gated["u-"] < np.where(mask, w[0], 0)[mask] - 1e-12)
    assert cut.size > 5
    probes = []
    for i in cut[:3]:
        r, c = rows[i], cols[i]
        probes += [(0, r, c), (0, r, c - 1), (0, r, c + 1)]
    for ch, r, c in probes:
        wp, wm = w.copy(), w.copy()
        wp[ch, r, c] += 1e-5
        wm[ch, r, c] -= 1e-5
        fd = (_scene_solve_error(*args, wp, zr, z, None, 0.0, 0.5)[0]
              - _scene_solve_error(*args, wm, zr, z, None, 0.0, 0.5)[0]) / 2e-5
        assert fd == pytest.approx(grad[ch, r, c], rel=2e-2, abs=1e-7), (ch, r, c)


def test_the_card_says_whether_the_solve_objective_was_gated():
    from fnin_cli.train.card import _objective

    cfg = {"edge_objective": "solve"}
    assert "sliver-gated at t = 0.5 as at inference" in _objective(cfg, 0.5)
    assert "sliver-gated" not in _objective(cfg) and "(sharpened as at inference)" in _objective(cfg)


def test_the_discontinuity_map_marks_a_pixel_cut_on_both_sides():
    """pipeline.weights_to_discontinuity: a pixel that connects to neither side of an axis
    is a discontinuity (1), as one that trusts one side only; paired weights as before."""
    from fnin_cli.pipeline import weights_to_discontinuity

    depth, rear = _comb()
    s = _flat_system(depth.shape)
    w = bini_weights(s, depth[s.mask])
    column = s.index[5, 12]
    paired = weights_to_discontinuity(w, s.n)
    gated = weights_to_discontinuity(stage2.sliver_gate(s, w, 0.5), s.n)
    assert paired[column] == pytest.approx(0.0, abs=1e-6)    # 0.5 / 0.5: paired weights hide it
    assert gated[column] == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(paired, np.maximum(np.abs(w["u+"] - w["u-"]), np.abs(w["v+"] - w["v-"])))
    assert gated.min() >= 0.0 and gated.max() <= 1.0


def test_the_documented_example_holds():
    import doctest

    result = doctest.testmod(stage2)
    assert result.attempted > 0 and result.failed == 0
