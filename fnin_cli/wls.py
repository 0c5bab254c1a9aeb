"""The weighted least-squares (WLS) core shared by every solver.

For a masked normal map it minimises over the unknown z (log-depth or depth)

    sum_p  w_u+/2 (a_u dU+ z + n_x)^2 + w_u-/2 (a_u dU- z + n_x)^2
         + w_v+/2 (a_v dV+ z + n_y)^2 + w_v-/2 (a_v dV- z + n_y)^2  +  lam/2 (z - z_prior)^2

(SPEC "The equations"; a one-sided difference exists only where both pixels are in
the mask). The normal equations are a symmetric positive-definite 5-point system.
Everything here is vectorised over pixels: the sparsity pattern is built once per
mask and each new set of weights only refills the matrix values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .camera import Camera

DIRECTIONS = ("u+", "u-", "v+", "v-")

# Smoothed-aggregation AMG for these 5-point systems (:func:`sa_hierarchy`): symmetric
# strength with a weak-connection threshold, standard aggregation, the constant candidate,
# one Jacobi smoothing step of the tentative prolongator, a sparse LU at the bottom, CSR
# on every level, symmetric Gauss-Seidel sweeps before and after the coarse correction.
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
    method: str
    iterations: int
    residual: float
    setup_seconds: float
    solve_seconds: float


class NormalSystem:
    """The residual rows of one masked normal map under one camera.

    ``pixels`` are the masked pixels in row-major order; ``index`` maps (row, col) to
    the unknown's position (-1 outside the mask).
    """

    def __init__(self, normals: np.ndarray, mask: np.ndarray, camera: Camera):
        self.shape = mask.shape
        self.mask = mask
        self.camera = camera
        self.n = int(mask.sum())
        index = np.full(mask.shape, -1, np.int64)
        index[mask] = np.arange(self.n)
        self.index = index
        self.a_u, self.a_v, self.nx, self.ny = camera.residual_coefficients(normals, mask)
        # horizontal edges (p, q): q is the right neighbour of p; vertical: q below p
        both_h = mask[:, :-1] & mask[:, 1:]
        both_v = mask[:-1, :] & mask[1:, :]
        self.hp, self.hq = index[:, :-1][both_h], index[:, 1:][both_h]
        self.vp, self.vq = index[:-1, :][both_v], index[1:, :][both_v]
        # which pixels have each one-sided difference
        self.has = {
            "u+": np.zeros(self.n, bool), "u-": np.zeros(self.n, bool),
            "v+": np.zeros(self.n, bool), "v-": np.zeros(self.n, bool),
        }
        self.has["u+"][self.hp] = True
        self.has["u-"][self.hq] = True
        self.has["v+"][self.vp] = True
        self.has["v-"][self.vq] = True
        self._pattern = None

    # ------------------------------------------------------------ residuals

    def differences(self, z: np.ndarray) -> dict:
        """a * (one-sided difference of z) per pixel and direction (0 where it does not exist)."""
        dh = z[self.hq] - z[self.hp]
        dv = z[self.vq] - z[self.vp]
        out = {d: np.zeros(self.n) for d in DIRECTIONS}
        out["u+"][self.hp] = self.a_u[self.hp] * dh
        out["u-"][self.hq] = self.a_u[self.hq] * dh
        out["v+"][self.vp] = self.a_v[self.vp] * dv
        out["v-"][self.vq] = self.a_v[self.vq] * dv
        return out

    def residuals(self, z: np.ndarray) -> dict:
        """Residual a*dz + n per pixel and direction (0 where the difference does not exist)."""
        diffs = self.differences(z)
        for d, n in (("u+", self.nx), ("u-", self.nx), ("v+", self.ny), ("v-", self.ny)):
            diffs[d] = np.where(self.has[d], diffs[d] + n, 0.0)
        return diffs

    def energy(self, z: np.ndarray, weights: dict | None = None) -> float:
        """Weighted squared residual sum (Az - b)^T W (Az - b), without the prior."""
        res = self.residuals(z)
        if weights is None:
            return float(sum(_dot(r, r) for r in res.values()))
        return float(sum(_dot(weights[d] * res[d], res[d]) for d in DIRECTIONS))

    def weight_gradients(self, z: np.ndarray, adjoint: np.ndarray) -> dict:
        """dL/dw_d per pixel and direction at the minimiser z of the weighted objective,
        given ``adjoint`` = A^{-1} dL/dz (implicit differentiation of A(w) z = b(w)):
        dL/dw_d = -(a D_d adjoint) * r_d(z). Training through Stage II uses it."""
        diffs = self.differences(adjoint)
        res = self.residuals(z)
        return {d: -diffs[d] * res[d] for d in DIRECTIONS}

    # ------------------------------------------------------------ normal equations

    def _csr_pattern(self):
        if self._pattern is None:
            n = self.n
            rows = np.concatenate([self.hp, self.hq, self.vp, self.vq, np.arange(n)])
            cols = np.concatenate([self.hq, self.hp, self.vq, self.vp, np.arange(n)])
            order = sp.csr_matrix(
                (np.arange(rows.size, dtype=np.float64) + 1.0, (rows, cols)), shape=(n, n)
            )
            order.sort_indices()
            perm = order.data.astype(np.int64) - 1
            self._pattern = (order.indptr, order.indices, perm)
        return self._pattern

    def matrix(self, weights: dict | None, lam: float) -> sp.csr_matrix:
        """The SPD matrix sum_d (a D_d)^T W_d (a D_d) + lam I."""
        w = _full_weights(weights, self.n)
        ch = w["u+"][self.hp] * self.a_u[self.hp] ** 2 + w["u-"][self.hq] * self.a_u[self.hq] ** 2
        cv = w["v+"][self.vp] * self.a_v[self.vp] ** 2 + w["v-"][self.vq] * self.a_v[self.vq] ** 2
        diag = (
            np.bincount(self.hp, ch, self.n) + np.bincount(self.hq, ch, self.n)
            + np.bincount(self.vp, cv, self.n) + np.bincount(self.vq, cv, self.n) + lam
        )
        vals = np.concatenate([-ch, -ch, -cv, -cv, diag])
        indptr, indices, perm = self._csr_pattern()
        return sp.csr_matrix((vals[perm], indices, indptr), shape=(self.n, self.n))

    def rhs(self, weights: dict | None, lam: float, z_prior=None) -> np.ndarray:
        w = _full_weights(weights, self.n)
        th = (w["u+"][self.hp] * self.a_u[self.hp] * self.nx[self.hp]
              + w["u-"][self.hq] * self.a_u[self.hq] * self.nx[self.hq])
        tv = (w["v+"][self.vp] * self.a_v[self.vp] * self.ny[self.vp]
              + w["v-"][self.vq] * self.a_v[self.vq] * self.ny[self.vq])
        b = (np.bincount(self.hp, th, self.n) - np.bincount(self.hq, th, self.n)
             + np.bincount(self.vp, tv, self.n) - np.bincount(self.vq, tv, self.n))
        if z_prior is not None and lam:
            b = b + lam * z_prior
        return b

    def solve(
        self,
        weights: dict | None = None,
        lam: float = 1e-3,
        z_prior: np.ndarray | None = None,
        x0: np.ndarray | None = None,
        method: str = "amg",
        rtol: float = 1e-6,
        maxiter: int = 5000,
    ) -> tuple[np.ndarray, SolveInfo]:
        """Minimise the weighted objective; returns (z, info)."""
        t0 = time.perf_counter()
        A = self.matrix(weights, lam)
        b = self.rhs(weights, lam, None)
        # tolerance relative to the data part of the right-hand side: with a warm start
        # at z_prior, lam * z_prior would otherwise make any x0 look converged
        ref = np.sqrt(_dot(b, b))
        if z_prior is not None and lam:
            b = b + lam * z_prior
        if x0 is None:
            x0 = z_prior if z_prior is not None else np.zeros(self.n)
        return solve_spd(A, b, x0, method=method, rtol=rtol, maxiter=maxiter, t0=t0, ref_norm=ref)

    def to_image(self, values: np.ndarray, fill=np.nan) -> np.ndarray:
        img = np.full(self.shape, fill, dtype=np.float64)
        img[self.mask] = values
        return img


def _full_weights(weights, n):
    if weights is None:
        one = np.ones(n)
        return {d: one for d in DIRECTIONS}
    return weights


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
    """A smoothed-aggregation hierarchy (pyamg's aggregation and smoothers) built here for
    speed, with the same choices as ``pyamg.smoothed_aggregation_solver(symmetry=
    "symmetric", max_coarse=100, coarse_solver="splu", strength=("symmetric", {"theta":
    0.05}), improve_candidates=None)`` but two differences that together halve its cost:

    - rho(D^-1 A) for the prolongation smoother comes from ``power_steps`` power
      iterations from a fixed start vector (times 1.05, capped by the Gershgorin bound),
      not from pyamg's restarted Arnoldi: half of pyamg's setup time went there, and it
      drew random start vectors (the output depended on numpy's global RNG).
    - every level stays CSR: pyamg keeps the coarse levels in BSR with 1x1 blocks, whose
      Gauss-Seidel is 3-4x slower than the CSR one (one V-cycle on harvest 12.8 -> 5.6 ms).

    Setup + PCG of the 9 DiLiGenT fnin solves at rtol 1e-3 (1 thread,
    ``benchmarks/stage2_solver.py``): 0.77 s with pyamg's solver, 0.64 s with its levels
    turned into CSR, 0.40 s with this one, at the same iteration counts give or take one.
    """
    from pyamg.aggregation import fit_candidates, standard_aggregation
    from pyamg.multilevel import MultilevelSolver
    from pyamg.relaxation.smoothing import change_smoothers
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
    ml = MultilevelSolver(levels, coarse_solver="splu")
    smoother = ("gauss_seidel", {"sweep": "symmetric"})
    change_smoothers(ml, smoother, smoother)
    return ml


def amg_preconditioner(A):
    """One AMG V-cycle (:func:`sa_hierarchy`) as a function r -> M r."""
    return sa_hierarchy(A).aspreconditioner(cycle="V").matvec


def solve_spd(A, b, x0, method="amg", rtol=1e-6, maxiter=5000, t0=None, ref_norm=None):
    """Solve the SPD system with one of: ``amg`` (pyamg smoothed-aggregation PCG),
    ``jacobi`` (diagonal PCG), ``direct`` (sparse LU),
    ``torch[:device]`` (diagonal PCG in torch, for GPUs); ``auto`` is ``amg``.

    BLAS is held to one thread meanwhile: on two loaded vCPUs a threaded BLAS made the
    AMG setup 10-30x slower here (0.18 s -> 1.2-9 s for one DiLiGenT object).
    """
    from .resources import limit_threads

    with limit_threads(1, torch=False, env=False):
        return _solve_spd(A, b, x0, method, rtol, maxiter, t0, ref_norm)


def _solve_spd(A, b, x0, method, rtol, maxiter, t0, ref_norm):
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
        M = amg_preconditioner(A)
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
