"""Sparse SPD solvers for the normal equations: PCG, the smoothed-aggregation AMG
hierarchy, ``solve_spd`` (amg, jacobi, direct, torch) and a torch PCG for GPUs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..config import DEFAULT
from ..resources import limit_threads

# smoothed-aggregation AMG parameters, pyamg's symmetric defaults (docs/decisions.md#amg-hierarchy)
SA_THETA = 0.05
SA_MAX_COARSE = 100
SA_OMEGA = 4.0 / 3.0
SA_POWER_STEPS = 10
# Gauss-Seidel in the V-cycle: "symmetric" (a forward and a backward sweep before and after
# the coarse correction) or "one-each" (forward before, backward after)
# (docs/decisions.md#amg-smoother)
VCYCLE_SWEEPS = "one-each"


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """a . b as numpy's pairwise sum."""
    # numpy's pairwise sum, not BLAS ddot: multi-threaded BLAS on 2 loaded vCPUs can
    # be orders of magnitude slower for these sizes (docs/decisions.md#blas-threads).
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

def pcg(A, b, x0, precondition, rtol=1e-6, maxiter=DEFAULT.solver.maxiter, ref_norm=None):
    """Preconditioned conjugate gradient; stops at ||b - Ax|| <= rtol * ref_norm (default ||b||)."""
    x = np.array(x0, dtype=np.float64, copy=True)
    r = b - A @ x
    bnorm = (np.sqrt(dot(b, b)) if ref_norm is None else ref_norm) or 1.0
    rnorm = np.sqrt(dot(r, r))
    if rnorm <= rtol * bnorm:
        return x, 0, rnorm / bnorm
    z = precondition(r)
    p = z.copy()
    rz = dot(r, z)
    it = 0
    for it in range(1, maxiter + 1):
        Ap = A @ p
        alpha = rz / dot(p, Ap)
        x += alpha * p
        r -= alpha * Ap
        rnorm = np.sqrt(dot(r, r))
        if rnorm <= rtol * bnorm:
            break
        z = precondition(r)
        rz_new = dot(r, z)
        p *= rz_new / rz
        p += z
        rz = rz_new
    return x, it, rnorm / bnorm


def sa_hierarchy(A, theta: float = SA_THETA, max_coarse: int = SA_MAX_COARSE, omega: float = SA_OMEGA,
                 power_steps: int = SA_POWER_STEPS, max_levels: int = 12) -> "Hierarchy":
    """A smoothed-aggregation AMG hierarchy (pyamg's aggregation).

    The same choices as ``pyamg.smoothed_aggregation_solver(symmetry="symmetric",
    max_coarse=100, coarse_solver="splu", strength=("symmetric", {"theta": 0.05}),
    improve_candidates=None)``, but rho(D^-1 A) comes from ``power_steps`` power
    iterations from a fixed start vector (times 1.05, capped by the Gershgorin bound:
    deterministic) and every level stays CSR; together half pyamg's cost
    (docs/decisions.md#amg-hierarchy).

    Parameters
    ----------
    A : scipy.sparse matrix
        The SPD system matrix.

    Returns
    -------
    Hierarchy
        Its :meth:`Hierarchy.vcycle` is the preconditioner.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> A = sp.diags([-1.0, 2.01, -1.0], [-1, 0, 1], shape=(1000, 1000), format="csr")
    >>> ml = sa_hierarchy(A)
    >>> x, it, res = pcg(A, np.ones(1000), np.zeros(1000), ml.vcycle, rtol=1e-8)
    >>> bool(res <= 1e-8), it < 20
    (True, True)
    """
    import scipy.sparse as sp   # here, not at import: `fnin --help` need not load scipy
    from pyamg.aggregation import fit_candidates, standard_aggregation

    A = sp.csr_matrix(A)
    B = np.ones((A.shape[0], 1))
    levels = []
    while True:
        levels.append(Level(A))
        if A.shape[0] <= max_coarse or len(levels) == max_levels:
            break
        agg, _ = standard_aggregation(_strength_pattern(A, theta))
        used = np.diff(sp.csc_matrix(agg).indptr) > 0       # aggregates with a node in them
        if not used.all():
            agg = sp.csr_matrix(agg)[:, np.flatnonzero(used)]
        if agg.shape[1] == 0:
            # no strong connection anywhere (a data term that dominates every row, as a
            # very tight depth prior does): nothing to coarsen, and this level is solved by
            # a symmetric Gauss-Seidel sweep instead of a factorisation of its size
            levels[-1].smooth_only = True
            break
        T, B = fit_candidates(agg, B)
        d = A.diagonal()
        dinv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
        rho = float(np.max(dinv * (abs(A) @ np.ones(A.shape[0]))))      # Gershgorin
        x = 1.0 + np.cos(0.7548776662 * np.arange(A.shape[0]))            # fixed start
        est = 0.0
        for _ in range(power_steps):
            x = dinv * (A @ x)
            est = float(np.sqrt(dot(x, x)))
            if est == 0.0:
                break
            x /= est
        if est > 0.0:
            rho = min(rho, 1.05 * est)
        T = sp.csr_matrix(T)
        AT = sp.csr_matrix(A @ T)
        AT.data *= np.repeat(dinv * (omega / rho), np.diff(AT.indptr))   # diag(.) @ AT, row by row
        P = sp.csr_matrix(T - AT)
        levels[-1].P, levels[-1].R = P, sp.csr_matrix(P.T)
        A = _galerkin(levels[-1].R, A, P)
    return Hierarchy(levels)


def _strength_pattern(A, theta: float):
    """The pattern of pyamg's ``symmetric_strength_of_connection(A, theta)`` (the diagonal
    and the entries with |a_ij| >= theta sqrt(|a_ii a_jj|)), which is all its standard
    aggregation reads: without the strengths' magnitudes and row scaling, which cost
    twice the test itself on the finest level and change no aggregate."""
    import scipy.sparse as sp
    from pyamg import amg_core

    Sp = np.empty_like(A.indptr)
    Sj = np.empty_like(A.indices)
    Sx = np.empty_like(A.data)
    amg_core.symmetric_strength_of_connection(A.shape[0], theta, A.indptr, A.indices, A.data, Sp, Sj, Sx)
    nnz = int(Sp[-1])
    return sp.csr_matrix((Sx[:nnz], Sj[:nnz], Sp), shape=A.shape)


class Level:
    """One level of a :class:`Hierarchy`: its operator A and, above the coarsest, the
    prolongator P (coarse to fine) and the restriction R = P^T. ``smooth_only``: a coarsest
    level that nothing could coarsen, solved by one symmetric Gauss-Seidel sweep."""

    def __init__(self, A, P=None, R=None, smooth_only: bool = False):
        self.A, self.P, self.R, self.smooth_only = A, P, R, smooth_only


class Hierarchy:
    """An AMG hierarchy and its V-cycle: Gauss-Seidel before and after the coarse
    correction (``VCYCLE_SWEEPS``), sparse LU on the coarsest level.

    The V-cycle is pyamg's (``MultilevelSolver.aspreconditioner(cycle="V")``) without
    its two residual norms per application, which cost about a sixth of a V-cycle
    (docs/decisions.md#vcycle). ``lu``: the coarsest operator's factorisation, if known.
    """

    def __init__(self, levels, lu=None):
        import scipy.sparse as sp
        from pyamg import amg_core
        from scipy.sparse.linalg import splu

        self.levels = levels
        self._gs = amg_core.gauss_seidel
        if levels[-1].smooth_only:
            self._lu = None
        else:
            self._lu = splu(sp.csc_matrix(levels[-1].A)) if lu is None else lu

    def refreshed(self, A) -> "Hierarchy":
        """This hierarchy with its operators rebuilt for a new matrix ``A``.

        The prolongators (aggregates and their smoothing) are kept; each level's operator
        is the Galerkin product R A P of the new matrix, so the V-cycle stays a symmetric
        positive-definite preconditioner for ``A``. Between IRLS rounds only the weights
        change, and this skips the aggregation and the prolongator smoothing
        (docs/decisions.md#refine-hierarchy).
        """
        levels = []
        for old in self.levels:
            levels.append(Level(A, old.P, old.R, old.smooth_only))
            if old.P is not None:
                A = _galerkin(old.R, A, old.P)
        return Hierarchy(levels)

    def with_finest(self, A) -> "Hierarchy":
        """This hierarchy with only its finest operator replaced by ``A`` (same pattern):
        the coarse operators stay those of the previous matrix. Still a symmetric
        positive-definite V-cycle; a refresh skipped when the weights change little
        between rounds (docs/decisions.md#refresh-every)."""
        levels = [Level(A, self.levels[0].P, self.levels[0].R, self.levels[0].smooth_only)] + self.levels[1:]
        return Hierarchy(levels, self._lu if len(levels) > 1 else None)

    def vcycle(self, b: np.ndarray) -> np.ndarray:
        """One V-cycle from x = 0: an approximation of A^-1 b (symmetric positive definite
        as an operator, so PCG can use it)."""
        return self._cycle(0, np.asarray(b, dtype=np.float64))

    def _cycle(self, i: int, b: np.ndarray) -> np.ndarray:
        level = self.levels[i]
        if level.P is None:
            if self._lu is not None:
                return self._lu.solve(b)
            x = np.zeros(b.shape[0])
            self._sweep(level.A, x, b, forward=True, backward=True)
            return x
        A, n = level.A, b.shape[0]
        both = VCYCLE_SWEEPS == "symmetric"
        x = np.zeros(n)
        self._sweep(A, x, b, forward=True, backward=both)
        x += level.P @ self._cycle(i + 1, level.R @ (b - A @ x))
        self._sweep(A, x, b, forward=both, backward=True)
        return x

    def _sweep(self, A, x, b, forward: bool, backward: bool):
        n = x.shape[0]
        if forward:
            self._gs(A.indptr, A.indices, A.data, x, b, 0, n, 1)
        if backward:
            self._gs(A.indptr, A.indices, A.data, x, b, n - 1, -1, -1)


class AMGCache:
    """One AMG hierarchy kept across solves whose matrices share one sparsity pattern
    (the IRLS rounds after a method, and Stage II before them).

    The first solve builds the hierarchy (:func:`sa_hierarchy`); later solves refresh
    its operators for their matrix (:meth:`Hierarchy.refreshed`). With
    ``refresh_every = k`` only every k-th later solve refreshes them all, the others
    replace the finest operator alone (:meth:`Hierarchy.with_finest`); with None none
    refreshes the coarse ones (docs/decisions.md#refresh-every). With ``rebuild_after =
    m`` a solve that took more than m PCG iterations has the next one build a fresh
    hierarchy (:meth:`after_solve`; docs/decisions.md#rounds-rebuild).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> A = sp.diags([-1.0, 2.01, -1.0], [-1, 0, 1], shape=(500, 500), format="csr")
    >>> cache = AMGCache(refresh_every=3)
    >>> ml = cache.hierarchy_for(A); cache.calls, cache.hierarchy is ml
    (1, True)
    """

    def __init__(self, refresh_every: int | None = 1, rebuild_after: int | None = None):
        self.refresh_every = refresh_every
        self.rebuild_after = rebuild_after
        self.hierarchy: Hierarchy | None = None   # the kept hierarchy (None: none built yet)
        self.calls = 0                            # solves that used this cache
        self.rebuild = False                      # the next solve builds a fresh hierarchy

    def hierarchy_for(self, A) -> "Hierarchy":
        """The hierarchy for this solve's matrix ``A`` (built, refreshed or with its finest
        operator replaced, as the class says), kept for the next call."""
        ml, calls, every = self.hierarchy, self.calls, self.refresh_every
        if ml is None or self.rebuild:
            self.rebuild = False
            # the old hierarchy goes before the build, which reads none of it: side by side
            # each rebuild raised the rounds' kept heap (docs/decisions.md#rounds-rebuild)
            self.hierarchy = ml = None
            ml = sa_hierarchy(A)
        elif every and (calls - 1) % every == 0:
            ml = ml.refreshed(A)
        else:
            ml = ml.with_finest(A)
        self.hierarchy, self.calls = ml, calls + 1
        return ml

    def drop(self) -> None:
        """Let go of the kept hierarchy once no solve follows (after the rounds): its
        operators are the largest arrays a run holds beside the system."""
        self.hierarchy = None

    def after_solve(self, iterations: int) -> None:
        """After a round's solve: if it took more than ``rebuild_after`` PCG iterations, the
        kept hierarchy's aggregates no longer fit the weights (a cut the rounds opened runs
        through them), so the next solve builds a fresh one."""
        if self.rebuild_after is not None and iterations > self.rebuild_after:
            self.rebuild = True


def _galerkin(R, A, P):
    """R A P in CSR with sorted indices."""
    import scipy.sparse as sp

    Ac = sp.csr_matrix(R @ (A @ P))
    Ac.sort_indices()
    return Ac


def amg_preconditioner(A):
    """One AMG V-cycle (:func:`sa_hierarchy`) as a function r -> M r."""
    return sa_hierarchy(A).vcycle


def solve_spd(A, b, x0, method="amg", rtol=1e-6, maxiter=DEFAULT.solver.maxiter, t0=None, ref_norm=None,
              hierarchy=None):
    """Solve the SPD system with one of: ``amg`` (pyamg smoothed-aggregation PCG),
    ``jacobi`` (diagonal PCG), ``direct`` (sparse LU),
    ``torch[:device]`` (diagonal PCG in torch, for GPUs); ``auto`` is ``amg``.

    BLAS is held to one thread meanwhile: on two loaded vCPUs a threaded BLAS made the
    AMG setup 10-30x slower here (0.18 s -> 1.2-9 s for one DiLiGenT object).

    ``hierarchy``: an :class:`AMGCache` kept across calls whose matrices share one
    sparsity pattern (IRLS rounds): the first ``amg`` call builds its hierarchy there and
    later calls reuse it (:meth:`AMGCache.hierarchy_for`).
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
        res = np.sqrt(dot(r, r)) / (np.sqrt(dot(b, b)) or 1.0)
        return x, SolveInfo(method, 1, res, t1 - t0, time.perf_counter() - t1)
    if method == "jacobi":
        inv_diag = 1.0 / A.diagonal()
        t1 = time.perf_counter()
        x, it, res = pcg(A, b, x0, lambda r: inv_diag * r, rtol, maxiter, ref_norm)
        return x, SolveInfo(method, it, res, t1 - t0, time.perf_counter() - t1)
    if method == "amg":
        M = amg_preconditioner(A) if hierarchy is None else hierarchy.hierarchy_for(A).vcycle
        t1 = time.perf_counter()
        x, it, res = pcg(A, b, x0, M, rtol, maxiter, ref_norm)
        return x, SolveInfo(method, it, res, t1 - t0, time.perf_counter() - t1)
    if method.startswith("torch"):
        device = method.partition(":")[2] or "cpu"
        t1 = time.perf_counter()
        x, it, res = torch_pcg(A, b, x0, device, rtol, maxiter, ref_norm)
        return x, SolveInfo(method, it, res, t1 - t0, time.perf_counter() - t1)
    raise ValueError(f"unknown linear solver '{method}'")


def torch_pcg(A, b, x0, device="cpu", rtol=1e-6, maxiter=DEFAULT.solver.maxiter, ref_norm=None):
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
