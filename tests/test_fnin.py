"""FNIN Stage II and the end-to-end fnin / fnin-s methods."""

from dataclasses import replace

import numpy as np
import pytest

from fnin_cli.config import DEFAULT
from fnin_cli.data import analytic
from fnin_cli.model import inference
from fnin_cli.solvers import stage2
from fnin_cli.model import weights as model_weights
from fnin_cli.camera import Camera
from fnin_cli.pipeline import build_input, integrate, load_input
from fnin_cli.data.synthetic import make_scene, relative_error
from fnin_cli.solvers.backend import Backend
from fnin_cli.solvers.system import DIRECTIONS, DataTerm, NormalSystem

SAMPLES = __import__("pathlib").Path(__file__).resolve().parents[1] / "samples"




def _jump_scene():
    """A clean scene whose depth jumps the smooth integrator cannot recover."""
    for seed in range(200):
        sc = make_scene(seed, 64, ortho_prob=0.0, noise=False)
        s = NormalSystem(np.nan_to_num(sc.clean_normals), sc.mask, Camera(sc.K))
        gt = sc.unknown[sc.mask]
        z, _ = s.solve(None, DataTerm(1e-3), method="direct")
        if sc.mask.sum() > 1500 and relative_error(z, gt) > 0.3:
            return sc, s, gt, relative_error(z, gt)
    raise AssertionError("no scene with jumps")


def test_stage2_with_true_prior_keeps_the_jumps():
    """fnin-s from the true depth: BiNI weights from z_R cut at the jumps and one solve
    keeps them (the smooth integrator is > 0.3 off on the same scene)."""
    sc, s, gt, wls_err = _jump_scene()
    lam = 1e-3 * s.camera.focal ** 2
    from fnin_cli.solvers.bini import bini_weights

    z = stage2.stage2(s, bini_weights(s, gt), DataTerm(lam, gt.copy()), gt.copy(), Backend("direct"))
    assert relative_error(z, gt) < 0.02 < wls_err


def test_stage2_attention_weights_with_true_discontinuity_map():
    sc, s, gt, wls_err = _jump_scene()
    res = s.residuals(gt)
    disc = np.zeros(s.n, bool)
    for d in DIRECTIONS:
        disc |= np.abs(res[d]) > 0.5
    omega = s.to_image(disc.astype(float), fill=0.0)
    w = stage2.attention_weights(s, omega, paired=False)
    # the weight towards a discontinuity pixel is 0, elsewhere 1
    assert set(np.unique(np.concatenate([w[d] for d in DIRECTIONS]))) <= {0.0, 1.0}
    # paired: 0.5 where both neighbours along an axis are marked
    w = stage2.attention_weights(s, omega)
    assert set(np.unique(np.concatenate([w[d] for d in DIRECTIONS]))) <= {0.0, 0.5, 1.0}
    z = stage2.stage2(s, w, DataTerm(1e-3 * s.camera.focal ** 2, gt + 0.0), gt + 0.0, Backend("direct"))
    assert relative_error(z, gt) < 0.05 < wls_err


def test_attention_weights_point_at_the_neighbour():
    mask = np.ones((3, 4), bool)
    n = np.zeros((3, 4, 3), np.float32)
    n[..., 2] = -1
    s = NormalSystem(n, mask, Camera(None))
    omega = np.zeros((3, 4))
    omega[1, 2] = 0.8
    w = stage2.attention_weights(s, omega, paired=False)
    p = s.index[1, 1]  # left of the marked pixel: its u+ difference points at it
    assert w["u+"][p] == pytest.approx(0.2) and w["u-"][p] == 1.0
    q = s.index[1, 3]
    assert w["u-"][q] == pytest.approx(0.2)
    assert w["v+"][s.index[0, 2]] == pytest.approx(0.2) and w["v-"][s.index[2, 2]] == pytest.approx(0.2)
    # paired (the default): the pair along an axis sums to 1 where both differences exist
    w = stage2.attention_weights(s, omega)
    assert w["u+"][p] == pytest.approx(0.2 / 1.2) and w["u-"][p] == pytest.approx(1 / 1.2)
    assert w["u-"][q] == pytest.approx(0.2)   # its u+ difference leaves the mask: nothing to pair
    assert w["v+"][s.index[0, 2]] == pytest.approx(0.2)   # top row: no v- difference


@pytest.mark.parametrize("method", ["fnin", "fnin-s"])
@pytest.mark.parametrize("ortho", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_fnin_methods_end_to_end(method, ortho, with_mask):
    sc = make_scene(31, 96, ortho_prob=1.0 if ortho else 0.0)
    inp = build_input(sc.normals, None, sc.mask if with_mask else None, sc.K)
    res = integrate(inp, method=method)
    m = inp.mask
    assert res.depth.shape == m.shape and np.isfinite(res.depth[m]).all() and np.isnan(res.depth[~m]).all()
    assert {"network", "solve"} <= set(res.seconds)
    gt = sc.unknown[m]
    # never worse than the trivial constant answer on this held-out scene
    assert relative_error(res.z[m], gt) < 1.0


def test_fnin_on_sample_and_refine():
    inp = load_input(SAMPLES / "dome")
    a = integrate(inp, method="fnin", refine=0)
    b = integrate(inp, method="fnin", refine=2)
    assert b.iterations == a.iterations + 2 and (a.rounds, b.rounds) == (0, 2)
    assert np.isfinite(b.depth[inp.mask]).all()
    assert "refine" in b.seconds


def test_gpu_stage2_tolerance_matches_the_exact_solve():
    """The torch solver (Jacobi-PCG at OneShotConfig.gpu_solve_rtol, run here through torch on the CPU)
    lands on the exact Stage II solution; a 100x looser tolerance visibly does not."""
    sc = make_scene(21, 96, ortho_prob=0.0)
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    s = NormalSystem(inp.normals, inp.mask, inp.camera)
    z_img, om = inference.stage1(model_weights.load_model(None, "cpu"), inp, "cpu")
    zr = z_img[s.mask]
    w = stage2.attention_weights(s, om)
    exact = stage2.stage2(s, w, DataTerm(1e-3, zr), zr, Backend("direct"))
    one = DEFAULT.one_shot

    def off(rtol):
        z = stage2.stage2(s, w, DataTerm(1e-3, zr), zr, Backend("torch:cpu"), rtol=rtol, maxiter=one.gpu_maxiter)
        return np.abs((z - z.mean()) - (exact - exact.mean())).mean() / np.abs(exact - exact.mean()).mean()

    assert off(one.gpu_solve_rtol) < 1e-3          # measured 1.9e-4 at 1e-4
    assert off(100 * one.gpu_solve_rtol) > 5e-3    # measured 1.1e-2 at 1e-2


def test_full_float32_restores_the_cudnn_flags():
    import torch

    before = torch.backends.cudnn.allow_tf32
    with inference.full_float32():
        assert torch.backends.cudnn.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 == before


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_gives_the_cpu_answer():
    """Stage I on the GPU (no TF32) equals the CPU's, so with the CPU's solver fnin's depth
    does not depend on the device; with the GPU's own (the grid, the default on CUDA) it is
    as accurate as the CPU's."""
    sc = make_scene(5, 256, 320, ortho_prob=0.0)
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    zc, oc = inference.stage1(model_weights.load_model(None, "cpu"), inp, "cpu")
    zg, og = inference.stage1(model_weights.load_model(None, "cuda"), inp, "cuda")
    m = inp.mask
    assert np.abs(zc[m] - zg[m]).max() < 1e-4 * np.abs(zc[m]).max()
    assert np.abs(oc[m] - og[m]).max() < 1e-3
    amg = replace(DEFAULT, solver=replace(DEFAULT.solver, gpu_grid_pixels=None))
    grid = replace(DEFAULT, solver=replace(DEFAULT.solver, gpu_grid_pixels=0))
    a = integrate(inp, "fnin", device="cpu").depth[m]
    b = integrate(inp, "fnin", device="cuda", config=amg).depth[m]
    assert np.abs(a - b).mean() < 1e-3 * np.abs(a - a.mean()).mean()
    from fnin_cli.bench.cases import align_and_errors

    e_cpu = align_and_errors(integrate(inp, "fnin", device="cpu").depth, sc.depth, m, True)["made"]
    e_grid = align_and_errors(integrate(inp, "fnin", device="cuda", config=grid).depth, sc.depth, m, True)["made"]
    assert e_grid <= 1.1 * e_cpu + 1e-6


def test_refine_rounds_keep_separate_objects_where_the_method_put_them(monkeypatch):
    """Regression: --refine's BiNI rounds once pulled each separate object's offset to the
    lam prior's 0 (exact inner solves do it in one round), erasing fnin's placement of
    disconnected pieces. The prior now stays at the result the rounds start from, and the
    rounds solve with AMG."""

    assert DEFAULT.rounds.solver == "amg"
    shape = (96, 128)
    K = np.array([[150.0, 0, 64], [0, 150.0, 48], [0, 0, 1]])
    cam = Camera(K)
    a = analytic.restrict(analytic.sphere(shape, cam, (-0.45, 0.0, 2.0), 0.35), analytic.disc_mask(shape, (33, 48), 24))
    b = analytic.restrict(analytic.sphere(shape, cam, (0.5, 0.05, 2.6), 0.4), analytic.disc_mask(shape, (95, 50), 22))
    s = analytic.nearest(a, b)
    inp = build_input(s.normals, None, s.support, K)
    assert not (a.support & b.support).any()

    def offset(refine, config=None):
        d = integrate(inp, "fnin", refine=refine, device="cpu", config=config).depth
        return np.log(np.mean(d[a.support & inp.mask]) / np.mean(d[b.support & inp.mask]))

    before = offset(0)
    assert abs(before) > 0.01            # fnin placed them apart (with the prior at 0: ~0.0004)
    # shipped: Stage II before the rounds stops at 1e-3, where such nearly free offsets
    # have not fully converged (docs/decisions.md#stage2-before-rounds); they stay close
    assert abs(offset(3) - before) < 0.2 * abs(before)
    # with Stage II solved as in the one-shot, the rounds keep the offset exactly
    assert abs(offset(3, replace(DEFAULT, rounds=replace(DEFAULT.rounds, stage2_rtol=None))) - before) < 1e-3
