"""The system on the pixel grid (fnin_cli.solvers.grid): the GPU's solver, checked on the CPU.

Every test runs with ``device="cpu"``; the last also on CUDA where torch has one.
"""

import numpy as np
import pytest
import scipy.sparse.linalg as spla
import torch

from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.solvers.bini import bini_weights, integrate_bini
from fnin_cli.solvers.backend import Backend
from fnin_cli.solvers.grid import GridSystem, Multigrid
from fnin_cli.solvers.irls import InnerSolve, minimise
from fnin_cli.solvers.objective import BilateralWeights, FixedTerm, Objective
from fnin_cli.solvers.system import DIRECTIONS, DataTerm, NormalSystem, classic_lambda

from helpers import aligned_error, camera, irregular_mask, smooth_surface, step_surface


def _random_system(kind: str, seed: int = 0):
    """Noisy normals on an irregular mask with holes, random BiNI weights (many cuts)."""
    rng = np.random.default_rng(seed)
    cam = camera(kind)
    surf = smooth_surface("paraboloid", cam)
    mask = surf.support & irregular_mask()
    n = surf.normals + 0.05 * rng.normal(size=surf.normals.shape)
    n /= np.linalg.norm(n, axis=2, keepdims=True)
    inp = build_input(n, None, mask, cam.K if cam.perspective else None,
                      pixel_size=None if cam.perspective else cam.pixel_size)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    weights = bini_weights(system, 3.0 * rng.normal(size=system.n), 2.0)
    return inp, system, weights, classic_lambda(inp.camera, inp.shape)


@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_grid_operator_and_rhs_are_the_systems(kind):
    _, system, weights, lam = _random_system(kind)
    grid = GridSystem(system, "cpu")
    w = grid.weights_images(weights)
    x = np.random.default_rng(1).normal(size=system.n)
    for term in (DataTerm(lam), DataTerm(np.random.default_rng(2).uniform(0, 3 * lam, system.n))):
        A = system.matrix(weights, term)
        on_grid = grid.term(term)
        np.testing.assert_allclose(grid.vector(grid.stencil(w, on_grid) @ grid.image(x)), A @ x,
                                   rtol=1e-12, atol=1e-12 * np.abs(A @ x).max())
        # outside the mask the operator is the identity on zeros: nothing leaks in
        y = grid.stencil(w, on_grid) @ grid.image(x)
        assert float(y[~grid.mask].abs().max()) == 0.0
    np.testing.assert_allclose(grid.vector(grid.rhs(w)), system.rhs(weights), atol=1e-12)


def test_grid_weights_and_energy_are_bini_s():
    _, system, _, _ = _random_system("persp", seed=2)
    z = np.random.default_rng(3).normal(size=system.n) * 0.01
    bias = {"u": np.random.default_rng(4).normal(size=system.n), "v": np.zeros(system.n)}
    grid = GridSystem(system, "cpu")
    for b in (None, bias):
        ref = bini_weights(system, z, 2.5, bias=b)
        w, energy = grid.bini_weights_and_energy(grid.image(z), 2.5, None if b is None else
                                                 {a: grid.image(b[a]) for a in "uv"})
        for d in DIRECTIONS:
            np.testing.assert_allclose(grid.vector(w[d]), ref[d], atol=1e-14)
        assert energy == pytest.approx(system.energy(z, ref), rel=1e-12)


def test_vcycle_is_symmetric_positive_definite():
    """PCG needs an SPD preconditioner: checked on the whole matrix of a small case with
    many cuts (two coarse levels, Cholesky below)."""
    _, system, weights, lam = _random_system("persp", seed=5)
    grid = GridSystem(system, "cpu")
    A = grid.stencil(grid.weights_images(weights), grid.term(DataTerm(lam)))
    mg = Multigrid(A)
    assert len(mg.levels) >= 2
    eye = np.eye(system.n)
    M = np.stack([grid.vector(mg.vcycle(grid.image(eye[i]))) for i in range(system.n)])
    assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max()
    assert np.linalg.eigvalsh(0.5 * (M + M.T)).min() > 0


def grid_solve(system, weights, term, x0, rtol, maxiter, device):
    """One solve on the grid: (z over the masked pixels, iterations, relative residual)."""
    grid = GridSystem(system, device)
    z, it, res = grid.solve(grid.weights_images(weights), grid.term(term), grid.image(x0), rtol, maxiter)
    return grid.vector(z), it, res


@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_grid_solve_reaches_the_direct_solution(kind):
    _, system, weights, lam = _random_system(kind, seed=6)
    prior = np.random.default_rng(7).normal(size=system.n) * 0.1
    A, b, _ = system.normal_equations(weights, DataTerm(lam, prior))
    exact = spla.spsolve(A.tocsc(), b)
    z, iterations, residual = grid_solve(system, weights, DataTerm(lam, prior), prior, 1e-11, 2000, "cpu")
    assert residual <= 1e-11 and 0 < iterations < 2000
    # same solution up to the nearly free constant (lam is small against the stencil)
    np.testing.assert_allclose(z - z.mean(), exact - exact.mean(), atol=1e-6 * np.abs(exact).max())
    # a start that already solves it takes no iteration (the rounds' fixed-point stop)
    assert grid_solve(system, weights, DataTerm(lam, prior), exact, 1e-6, 2000, "cpu")[1] == 0


@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_grid_rounds_match_the_cpu_rounds(kind):
    """BiNI's rounds on the grid recover the step scene as the CPU's AMG rounds do, from
    the same start with the same weights rule (up to their 1e-3 inner solves)."""
    cam = camera(kind)
    surf, _ = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, cam.K if cam.perspective else None,
                      pixel_size=None if cam.perspective else cam.pixel_size)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    lam = classic_lambda(inp.camera, inp.shape)
    z0 = integrate(inp, "wls").z[inp.mask]
    mode = "scale" if kind == "persp" else "offset"
    cpu = integrate_bini(system, k=2.0, z0=z0, term=DataTerm(lam, z0), max_iter=8, tol=1e-4, solver="amg")
    rounds = Objective(system, BilateralWeights(2.0), (FixedTerm(DataTerm(lam, z0)),))
    gpu = minimise(rounds, z0, InnerSolve(None, 1e-3, 5000), Backend(grid="cpu"), 8, 1e-4)
    err = {}
    for name, r in (("cpu", cpu), ("grid", gpu)):
        z = system.to_image(r.z)
        err[name] = aligned_error(np.exp(z) if kind == "persp" else z, surf.depth, inp.mask, mode)
    assert gpu.iterations == cpu.iterations
    assert err["grid"] == pytest.approx(err["cpu"], rel=0.05, abs=1e-4)
    for d in DIRECTIONS:
        assert gpu.weights[d].shape == (system.n,)


def test_default_pipeline_on_the_grid_agrees_with_the_cpu():
    """``solver="grid:cpu"`` runs Stage II and the rounds on the grid (what a CUDA device
    gets by default): as accurate as the CPU's AMG, within the rounds' cap; the energy stop
    may end one or two rounds apart (the 1e-3 inner solves differ)."""
    cam = camera("persp")
    surf, _ = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, cam.K)
    ref = integrate(inp, device="cpu")
    res = integrate(inp, device="cpu", solver="grid:cpu")
    assert 1 <= res.rounds <= DEFAULT.rounds.max_rounds and abs(res.rounds - ref.rounds) <= 2
    e_ref = aligned_error(ref.depth, surf.depth, inp.mask, "scale")
    e_grid = aligned_error(res.depth, surf.depth, inp.mask, "scale")
    assert e_grid == pytest.approx(e_ref, rel=0.05, abs=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_grid_gives_the_cpu_grid_answer():
    _, system, weights, lam = _random_system("persp", seed=8)
    prior = np.zeros(system.n)
    z_cpu, i_cpu, _ = grid_solve(system, weights, DataTerm(lam, prior), prior, 1e-8, 2000, "cpu")
    z_gpu, i_gpu, _ = grid_solve(system, weights, DataTerm(lam, prior), prior, 1e-8, 2000, "cuda")
    assert abs(i_gpu - i_cpu) <= 2 + 0.1 * i_cpu
    np.testing.assert_allclose(z_gpu - z_gpu.mean(), z_cpu - z_cpu.mean(), atol=1e-5 * np.abs(z_cpu).max())


@pytest.fixture
def interpreted_kernels(monkeypatch):
    """grid_kernels' Triton kernels run by Triton's interpreter on CPU tensors (where
    Triton is installed; on CUDA machines the kernels themselves run in the next tests)."""
    pytest.importorskip("triton")
    import importlib

    from fnin_cli.solvers import grid_kernels
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    importlib.reload(grid_kernels)
    yield grid_kernels
    monkeypatch.delenv("TRITON_INTERPRET")
    importlib.reload(grid_kernels)


def _fused_and_torch(system, weights, lam, device):
    grid = GridSystem(system, device)
    w = grid.weights_images(weights)
    A = grid.stencil(w, grid.term(DataTerm(lam)))
    fused = grid.stencil(w, grid.term(DataTerm(lam)))
    A.fused, fused.fused = False, True
    return grid, A, fused


def _check_fused_agrees(device):
    for kind, seed in (("persp", 5), ("ortho", 9)):
        _, system, weights, lam = _random_system(kind, seed=seed)
        grid, A, fused = _fused_and_torch(system, weights, lam, device)
        rng = np.random.default_rng(seed)
        x, b = grid.image(rng.normal(size=system.n)), grid.image(rng.normal(size=system.n))
        ref = A @ x
        scale = float(ref.abs().max())
        assert float((fused @ x - ref).abs().max()) <= 1e-13 * scale
        out = torch.full_like(x, np.nan)        # every pixel written
        assert float((fused.residual(b, x, out) - A.residual(b, x, torch.empty_like(x))).abs().max()) <= 1e-13 * scale
        v_ref, v = Multigrid(A).vcycle(b).clone(), Multigrid(fused).vcycle(b)
        assert not torch.isnan(v).any()
        assert float((v - v_ref).abs().max()) <= 1e-11 * float(v_ref.abs().max())


def test_fused_kernels_compute_the_torch_passes(interpreted_kernels):
    _check_fused_agrees("cpu")


def test_fused_kernels_refuse_strided_images(interpreted_kernels):
    """They index images as flat arrays: a view with gaps would be read wrongly."""
    x = torch.zeros((6, 8), dtype=torch.float64)
    wide = torch.ones((6, 16), dtype=torch.float64)[:, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        interpreted_kernels.half_sweep(x, wide, wide, wide, wide, 0)
    with pytest.raises(ValueError, match="contiguous"):
        interpreted_kernels.apply(torch.empty_like(x), x, x, x, x, b=wide)


def test_kernels_that_cannot_compile_leave_the_torch_passes(interpreted_kernels, monkeypatch):
    """Triton needs a C compiler for its launcher: where a first launch fails, the grid
    runs its torch passes (the same cycle) instead of failing the call."""
    assert interpreted_kernels.runs_on(torch.device("cpu"))

    class Broken:
        def __getitem__(self, grid):
            raise RuntimeError("Failed to find C compiler")

    monkeypatch.setattr(interpreted_kernels, "_half_sweep_kernel", Broken())
    assert not interpreted_kernels.runs_on(torch.device("cpu"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_fused_kernels_on_cuda_compute_the_torch_passes():
    pytest.importorskip("triton")
    _check_fused_agrees("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_recorded_vcycle_replays_the_cycle_on_new_inputs():
    _, system, weights, lam = _random_system("persp", seed=5)
    grid = GridSystem(system, "cuda")
    A = grid.stencil(grid.weights_images(weights), grid.term(DataTerm(lam)))
    eager, recorded = Multigrid(A, graph=False), Multigrid(A, graph=True)
    assert recorded._graph is not None and eager._graph is None
    for seed in (1, 2):      # each replay reads its new input
        b = grid.image(np.random.default_rng(seed).normal(size=system.n))
        v = eager.vcycle(b).clone()
        assert float((recorded.vcycle(b) - v).abs().max()) <= 1e-12 * float(v.abs().max())
    z, _, residual = grid_solve(system, weights, DataTerm(lam, np.zeros(system.n)), np.zeros(system.n), 1e-8, 2000,
                                "cuda")
    assert residual <= 1e-8 and np.isfinite(z).all()


def test_a_gpu_too_small_for_the_grid_falls_back_to_the_cpu(monkeypatch):
    """The grid's solves need several images of the map's box on the GPU: where the
    allocator runs out, the run goes on on the CPU (and says so) instead of failing."""
    from fnin_cli.errors import FninWarning
    from fnin_cli.solvers import fnin as fnin_module
    from fnin_cli.solvers import grid as grid_module

    cam = camera("persp")
    surf, _ = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, cam.K)
    ref = integrate(inp, device="cpu")

    real_grid = grid_module.GridSystem

    def fails_at(which: int, error):
        """A GridSystem whose ``which``-th construction in a run (0: Stage II's, 1: the
        rounds') raises ``error``."""
        made = []

        def make(*args, **kwargs):
            made.append(1)
            if len(made) - 1 == which:
                raise error
            return real_grid(*args, **kwargs)
        return make

    oom = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    monkeypatch.setattr(grid_module, "GridSystem", fails_at(0, oom))   # Stage II
    networks = []
    real_outputs = fnin_module.network_outputs
    monkeypatch.setattr(fnin_module, "network_outputs", lambda *a, **k: networks.append(1) or real_outputs(*a, **k))
    with pytest.warns(FninWarning, match="too little free memory"):
        res = integrate(inp, device="cpu", solver="grid:cpu")
    np.testing.assert_array_equal(res.depth, ref.depth)                # the CPU's run, exactly
    assert any("too little free memory" in w for w in res.warnings)
    assert len(networks) == 1                                          # the network ran once, not again
    monkeypatch.undo()
    monkeypatch.setattr(grid_module, "GridSystem", fails_at(1, oom))   # the rounds only
    with pytest.warns(FninWarning, match="too little free memory"):
        res = integrate(inp, device="cpu", solver="grid:cpu")
    e_ref = aligned_error(ref.depth, surf.depth, inp.mask, "scale")
    assert aligned_error(res.depth, surf.depth, inp.mask, "scale") == pytest.approx(e_ref, rel=0.05, abs=1e-4)

    monkeypatch.setattr(grid_module, "GridSystem", fails_at(1, RuntimeError("an unforeseen failure")))  # not swallowed
    with pytest.raises(RuntimeError, match="unforeseen"):
        integrate(inp, device="cpu", solver="grid:cpu")
