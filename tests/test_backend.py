"""Where the solves run (fnin_cli.solvers.backend): the backend a run chooses, the Stage II
tolerance it gets, and the fall-back to the CPU when the GPU's memory runs out (the whole
run's fall-back: test_grid.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from fnin_cli.config import DEFAULT
from fnin_cli.solvers.backend import CPU, OUT_OF_MEMORY, Backend, choose_backend


def test_auto_solver_is_amg_on_every_device_and_torch_gets_its_tolerance():
    one = DEFAULT.one_shot
    assert choose_backend("auto") == Backend("amg") and Backend("amg").tolerance() == (one.solve_rtol, 5000)
    assert choose_backend("torch:cuda").tolerance() == (one.gpu_solve_rtol, one.gpu_maxiter)
    assert choose_backend("direct") == Backend("direct")   # an explicit choice is kept


def test_large_maps_on_cuda_pick_the_grid_the_rest_keep_amg():
    big = DEFAULT.solver.gpu_grid_pixels
    assert choose_backend("auto", DEFAULT, torch.device("cpu"), 10 * big) == Backend()
    assert choose_backend("auto", DEFAULT, torch.device("cuda"), big) == Backend(grid="cuda")
    assert choose_backend("auto", DEFAULT, torch.device("cuda", 1), big) == Backend(grid="cuda:1")
    assert choose_backend("auto", DEFAULT, torch.device("cuda"), big - 1) == Backend()      # DiLiGenT-size maps
    assert choose_backend("auto", DEFAULT, None, 10 * big) == Backend()                    # no network: bini, wls
    off = replace(DEFAULT, solver=replace(DEFAULT.solver, gpu_grid_pixels=None))
    assert choose_backend("auto", off, torch.device("cuda"), 10 * big) == Backend()
    assert choose_backend("torch:cuda", DEFAULT, torch.device("cuda"), big) == Backend("torch:cuda")
    assert choose_backend("grid:cuda:1") == Backend(grid="cuda:1")


def test_a_device_given_as_text_counts_like_a_torch_device():
    big = DEFAULT.solver.gpu_grid_pixels
    assert choose_backend("auto", DEFAULT, "cuda:0", big) == Backend(grid="cuda:0")
    assert choose_backend("auto", DEFAULT, "cpu", 10 * big) is CPU
    # a bare "grid" is the grid on the CPU (tests), any other name the CPU's sparse solver
    assert choose_backend("grid") == Backend(grid="cpu")
    assert choose_backend("jacobi") == Backend(linear="jacobi", grid=None)


def test_the_grid_and_the_cpu_backends_tolerances():
    one, solver = DEFAULT.one_shot, DEFAULT.solver
    tight = replace(DEFAULT, one_shot=replace(one, solve_rtol=1e-7, gpu_solve_rtol=1e-2, gpu_maxiter=7))
    # the grid and the CPU's AMG get the one-shot's own tolerance, a torch Jacobi-PCG its GPU one
    assert Backend(grid="cuda").tolerance(tight) == (1e-7, solver.maxiter)
    assert Backend("amg").tolerance(tight) == (1e-7, solver.maxiter)
    assert Backend("torch:cuda").tolerance(tight) == (1e-2, 7)
    assert Backend("torch").tolerance(tight) == (1e-2, 7)


def test_on_cpu_moves_only_the_grids_solves():
    assert Backend(grid="cuda:1").on_cpu() == Backend("amg")
    assert Backend("direct", grid="cuda").on_cpu() == Backend("direct")
    kept = Backend("jacobi")
    assert kept.on_cpu() is kept and not kept.on_grid and Backend(grid="cpu").on_grid


def test_or_on_cpu_runs_the_cpu_step_on_the_cpu_and_the_grid_step_on_a_grid():
    notes = []
    assert CPU.or_on_cpu(lambda: pytest.fail("the grid step ran on the CPU backend"), lambda: "cpu", notes) == "cpu"
    assert Backend(grid="cpu").or_on_cpu(lambda: "grid", lambda: pytest.fail("fell back"), notes) == "grid"
    assert notes == []


def test_or_on_cpu_falls_back_when_the_gpu_runs_out_of_memory_and_says_so():
    def out_of_memory():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    notes = ["earlier"]
    assert Backend(grid="cpu").or_on_cpu(out_of_memory, lambda: "cpu", notes) == "cpu"
    assert notes == ["earlier", OUT_OF_MEMORY]


def test_or_on_cpu_raises_every_other_error():
    def broken():
        raise RuntimeError("an unforeseen failure")

    notes = []
    with pytest.raises(RuntimeError, match="unforeseen"):
        Backend(grid="cpu").or_on_cpu(broken, lambda: pytest.fail("fell back"), notes)
    assert notes == []
