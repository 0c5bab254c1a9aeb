"""Sparse SPD solvers for the normal equations: PCG, the smoothed-aggregation AMG
hierarchy, ``solve_spd`` (amg, jacobi, direct, torch) and a torch PCG for GPUs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..resources import limit_threads

# smoothed-aggregation AMG parameters, pyamg's symmetric defaults (docs/decisions.md#amg-hierarchy)
SA_THETA = 0.05
SA_MAX_COARSE = 100
SA_OMEGA = 4.0 / 3.0
SA_POWER_STEPS = 10


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # numpy's pairwise sum, not BLAS ddot: multi-threaded BLAS on 2 loaded vCPUs can
    # be orders of magnitude slower for these sizes (SPEC, measured facts).
    return float(np.add.reduce(a * b))


@dataclass
class SolveInfo:
    """How a linear solve went: solver, iterations, relative residual, setup and solve seconds."""

    method: str
    iterations: int
    residual: float
    setup_seconds: float
    solve_seconds: float


# ---------------------------------------------------------------- linear solvers

def pcg(A, b, x0, precondition, rtol=1e-6, maxiter=5000, ref_norm=None):
    """Preconditioned conjugate gradient; stops at ||b - Ax|| <= rtol * ref_norm (default ||b||)."""
    x = np.array(x0, dtype=np.float64, copy=True)
    r = b - A @ x
    bnorm = (np.sqrt(_dot(b, b)) if ref_norm is None else ref_norm) or 1.0
    rnorm = np.sqrt(_dot(r, r))
    if rnorm <= rtol * bnorm:
        return x, 0, rnorm / bnorm
    z = precondition(r)
    p = z.copy()
    rz = _dot(r, z)
    it = 0
    for it in range(1, maxiter + 1):
        Ap = A @ p
        alpha = rz / _dot(p, Ap)
        x += alpha * p
        r -= alpha * Ap
        rnorm = np.sqrt(_dot(r, r))
        if rnorm <= rtol * bnorm:
            break
        z = precondition(r)
        rz_new = _dot(r, z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return x, it, rnorm / bnorm


def sa_hierarchy(A, theta: float = SA_THETA, max_coarse: int = SA_MAX_COARSE, omega: float = SA_OMEGA,
                 power_steps: int = SA_POWER_STEPS, max_levels: int = 12):
    """A smoothed-aggregation AMG hierarchy (pyamg's aggregation and smoothers).

    The same choices as ``pyamg.smoothed_aggregation_solver(symmetry="symmetric",
    max_coarse=100, coarse_solver="splu", strength=("symmetric", {"theta": 0.05}),
    improve_candidates=None)``, but rho(D^-1 A) comes from ``power_steps`` power
    iterations from a fixed start vector (times 1.05, capped by the Gershgorin bound:
    deterministic) and every level stays CSR; together half pyamg's cost
    (docs/decisions.md#amg-hierarchy). Symmetric Gauss-Seidel pre- and post-smoothing
    (docs/decisions.md#amg-smoother).

    Parameters
    ----------
    A : scipy.sparse matrix
        The SPD system matrix.

    Returns
    -------
    pyamg.multilevel.MultilevelSolver
    """
    from pyamg.aggregation import fit_candidates, standard_aggregation
    from pyamg.multilevel import MultilevelSolver
    from pyamg.strength import symmetric_strength_of_connection

    A = sp.csr_matrix(A)
    B = np.ones((A.shape[0], 1))
    levels = []
    while True:
        level = MultilevelSolver.Level()
        level.A, level.B = A, B
        levels.append(level)
        if A.shape[0] <= max_coarse or len(levels) == max_levels:
            break
        agg, _ = standard_aggregation(symmetric_strength_of_connection(A, theta))
        T, B = fit_candidates(agg, B)
        d = A.diagonal()
        dinv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
        rho = float(np.max(dinv * (abs(A) @ np.ones(A.shape[0]))))      # Gershgorin
        x = 1.0 + np.cos(0.7548776662 * np.arange(A.shape[0]))            # fixed start
        est = 0.0
        for _ in range(power_steps):
            x = dinv * (A @ x)
            est = float(np.sqrt(_dot(x, x)))
            if est == 0.0:
                break
            x /= est
        if est > 0.0:
            rho = min(rho, 1.05 * est)
        T = sp.csr_matrix(T)
        P = sp.csr_matrix(T - sp.diags(dinv * (omega / rho)) @ (A @ T))
        R = sp.csr_matrix(P.T)
        level.P, level.R = P, R
        A = sp.csr_matrix(R @ (A @ P))
        A.sort_indices()
    return _multilevel(levels)


def _multilevel(levels):
    """A V-cycle solver over ``levels``: symmetric Gauss-Seidel sweeps, sparse LU at the bottom."""
    from pyamg.multilevel import MultilevelSolver
    from pyamg.relaxation.smoothing import change_smoothers

    ml = MultilevelSolver(levels, coarse_solver="splu")
    smoother = ("gauss_seidel", {"sweep": "symmetric"})
    change_smoothers(ml, smoother, smoother)
    return ml


def refresh_hierarchy(ml, A):
    """The hierarchy ``ml`` with its operators rebuilt for a new matrix ``A``.

    The prolongators (aggregates and their smoothing) of ``ml`` are kept; each level's
    operator is the Galerkin product R A P of the new matrix, so the V-cycle stays a
    symmetric positive-definite preconditioner for ``A``. Between IRLS rounds only the
    weights change, and this skips the aggregation and the prolongator smoothing
    (docs/decisions.md#refine-hierarchy).
    """
    from pyamg.multilevel import MultilevelSolver

    levels = []
    for old in ml.levels:
        level = MultilevelSolver.Level()
        level.A = A
        if hasattr(old, "P"):
            level.P, level.R = old.P, old.R
            A = sp.csr_matrix(old.R @ (A @ old.P))
            A.sort_indices()
        levels.append(level)
    return _multilevel(levels)


def amg_preconditioner(A):
    """One AMG V-cycle (:func:`sa_hierarchy`) as a function r -> M r."""
    return sa_hierarchy(A).aspreconditioner(cycle="V").matvec


def solve_spd(A, b, x0, method="amg", rtol=1e-6, maxiter=5000, t0=None, ref_norm=None, hierarchy=None):
    """Solve the SPD system with one of: ``amg`` (pyamg smoothed-aggregation PCG),
    ``jacobi`` (diagonal PCG), ``direct`` (sparse LU),
    ``torch[:device]`` (diagonal PCG in torch, for GPUs); ``auto`` is ``amg``.

    BLAS is held to one thread meanwhile: on two loaded vCPUs a threaded BLAS made the
    AMG setup 10-30x slower here (0.18 s -> 1.2-9 s for one DiLiGenT object).

    ``hierarchy``: a dict kept across calls whose matrices share one sparsity pattern
    (IRLS rounds): the first ``amg`` call stores its hierarchy there and later calls
    only refresh its operators (:func:`refresh_hierarchy`).
    """
    with limit_threads(1, torch=False, env=False):
        return _solve_spd(A, b, x0, method, rtol, maxiter, t0, ref_norm, hierarchy)


def _solve_spd(A, b, x0, method, rtol, maxiter, t0, ref_norm, hierarchy=None):
    t0 = time.perf_counter() if t0 is None else t0
    if method == "auto":
        method = "amg"
    if method == "direct":
        from scipy.sparse.linalg import spsolve

        t1 = time.perf_counter()
        x = spsolve(A.tocsc(), b, permc_spec="MMD_AT_PLUS_A")
        r = b - A @ x
        res = np.sqrt(_dot(r, r)) / (np.sqrt(_dot(b, b)) or 1.0)
        return x, SolveInfo(method, 1, res, t1 - t0, time.perf_counter() - t1)
    if method == "jacobi":
        inv_diag = 1.0 / A.diagonal()
        t1 = time.perf_counter()
        x, it, res = pcg(A, b, x0, lambda r: inv_diag * r, rtol, maxiter, ref_norm)
        return x, SolveInfo(method, it, res, t1 - t0, time.perf_counter() - t1)
    if method == "amg":
        if hierarchy is None:
            M = amg_preconditioner(A)
        else:
            ml = hierarchy.get("ml")
            ml = sa_hierarchy(A) if ml is None else refresh_hierarchy(ml, A)
            hierarchy["ml"] = ml
            M = ml.aspreconditioner(cycle="V").matvec
        t1 = time.perf_counter()
        x, it, res = pcg(A, b, x0, M, rtol, maxiter, ref_norm)
        return x, SolveInfo(method, it, res, t1 - t0, time.perf_counter() - t1)
    if method.startswith("torch"):
        device = method.partition(":")[2] or "cpu"
        t1 = time.perf_counter()
        x, it, res = torch_pcg(A, b, x0, device, rtol, maxiter, ref_norm)
        return x, SolveInfo(method, it, res, t1 - t0, time.perf_counter() - t1)
    raise ValueError(f"unknown linear solver '{method}'")


def torch_pcg(A, b, x0, device="cpu", rtol=1e-6, maxiter=5000, ref_norm=None):
    """Jacobi-preconditioned CG in torch (float64 CSR), for GPU devices; same stopping rule."""
    import torch

    import warnings

    dev = torch.device(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        At = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)),
                                     torch.from_numpy(A.indices.astype(np.int64)),
                                     torch.from_numpy(A.data), size=A.shape, dtype=torch.float64,
                                     check_invariants=False).to(dev)
    bt = torch.from_numpy(np.ascontiguousarray(b)).to(dev)
    x = torch.from_numpy(np.array(x0, dtype=np.float64)).to(dev)
    inv_diag = torch.from_numpy(1.0 / A.diagonal()).to(dev)
    bnorm = float(torch.linalg.vector_norm(bt)) if ref_norm is None else float(ref_norm)
    bnorm = bnorm or 1.0
    r = bt - At @ x
    rnorm = float(torch.linalg.vector_norm(r))
    it = 0
    if rnorm > rtol * bnorm:
        z = inv_diag * r
        p = z.clone()
        rz = torch.dot(r, z)
        for it in range(1, maxiter + 1):
            Ap = At @ p
            alpha = rz / torch.dot(p, Ap)
            x += alpha * p
            r -= alpha * Ap
            # check convergence every 10 iterations: a host sync per iteration is slow on GPUs
            if it % 10 == 0 or it == maxiter:
                rnorm = float(torch.linalg.vector_norm(r))
                if rnorm <= rtol * bnorm:
                    break
            z = inv_diag * r
            rz_new = torch.dot(r, z)
            p = z + (rz_new / rz) * p
            rz = rz_new
    return x.cpu().numpy(), it, rnorm / bnorm
