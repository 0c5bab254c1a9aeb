"""The sparse solvers (solvers.linear): every solver gives the same minimiser; the AMG
hierarchy and its V-cycle."""


import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.solvers.bini import bini_weights
from fnin_cli.data.synthetic import make_scene
from fnin_cli.solvers.system import DIRECTIONS, DataTerm, NormalSystem


def _system(seed=4, size=40, ortho=False):
    sc = make_scene(seed, size, ortho_prob=1.0 if ortho else 0.0)
    return NormalSystem(np.nan_to_num(sc.normals), sc.mask, Camera(sc.K)), sc


@pytest.mark.parametrize("method", ["amg", "jacobi", "torch"])
def test_iterative_solvers_match_direct(method):
    s, _ = _system(seed=7, size=48)
    z0 = np.zeros(s.n)
    w = bini_weights(s, z0 + np.random.default_rng(1).normal(0, 1e-3, s.n))
    lam = 1e-3 * Camera(s.camera.K).focal ** 2
    prior = np.random.default_rng(2).normal(0, 0.01, s.n)
    ref, _ = s.solve(w, DataTerm(lam, prior), method="direct")
    z, info = s.solve(w, DataTerm(lam, prior), method=method, rtol=1e-10, maxiter=20000)
    assert np.max(np.abs(z - ref)) < 1e-6 * (np.ptp(ref) + 1e-12) + 1e-9


def test_sa_hierarchy_is_csr_deterministic_and_converges_fast():
    """The AMG hierarchy: CSR on every level (pyamg's BSR 1x1 levels made Gauss-Seidel 3-4x
    slower), no dependence on numpy's global RNG (pyamg's spectral-radius estimate drew
    from it), and a V-cycle that is a good preconditioner (few PCG iterations on a
    120x120 BiNI-weighted system where Jacobi-PCG needs hundreds)."""
    from fnin_cli.solvers.linear import amg_preconditioner, pcg, sa_hierarchy

    s, _ = _system(seed=5, size=120)
    w = bini_weights(s, np.random.default_rng(3).normal(0, 1e-2, s.n))
    lam = 1e-9 * s.camera.focal ** 2
    A, b = s.matrix(w, DataTerm(lam)), s.rhs(w)
    ml = sa_hierarchy(A)
    assert len(ml.levels) >= 3
    assert all(level.A.format == "csr" for level in ml.levels)
    assert all(level.P.format == "csr" for level in ml.levels[:-1]) and ml.levels[-1].P is None
    r = np.random.default_rng(0).normal(size=s.n)
    np.random.seed(1)
    y1 = amg_preconditioner(A)(r)
    np.random.seed(2)
    y2 = amg_preconditioner(A)(r)
    assert np.array_equal(y1, y2)
    _, it_amg, res = pcg(A, b, np.zeros(s.n), amg_preconditioner(A), rtol=1e-8)
    inv_diag = 1.0 / A.diagonal()
    _, it_jac, _ = pcg(A, b, np.zeros(s.n), lambda v: inv_diag * v, rtol=1e-8)
    assert res <= 1e-8 and it_amg <= 25 and it_jac > 5 * it_amg


def test_prolongator_smoothing_uses_the_gershgorin_bound_of_abs_a():
    """With no power iteration the prolongator's smoothing step is omega / rho with rho the
    Gershgorin bound max_i sum_j |a_ij| / a_ii: of |A|, whose row sums the off-diagonal
    couplings (negative here) would otherwise cancel; A itself is left as it was."""
    import scipy.sparse as sp
    from pyamg.aggregation import fit_candidates, standard_aggregation

    from fnin_cli.solvers.linear import SA_OMEGA, SA_THETA, _strength_pattern, sa_hierarchy

    s, _ = _system(seed=5, size=40)
    w = bini_weights(s, np.random.default_rng(3).normal(0, 1e-2, s.n))
    A = s.matrix(w, DataTerm(1e-9 * s.camera.focal ** 2))
    before = A.copy()
    P = sa_hierarchy(A, power_steps=0).levels[0].P
    assert (A != before).nnz == 0 and A.data.min() < 0
    agg, _ = standard_aggregation(_strength_pattern(A, SA_THETA))
    T = sp.csr_matrix(fit_candidates(agg, np.ones((s.n, 1)))[0])
    dinv = 1.0 / A.diagonal()
    rho = np.max(dinv * np.abs(A.toarray()).sum(axis=1))
    P_ref = T - sp.diags(dinv * SA_OMEGA / rho) @ (A @ T)
    assert abs(P - P_ref).max() <= 1e-14 * abs(P_ref).max()


@pytest.mark.parametrize("sweeps", ["symmetric", "one-each"])
def test_amg_v_cycle_is_symmetric_positive_definite(monkeypatch, sweeps):
    """PCG needs a symmetric positive-definite preconditioner: the V-cycle's pre- and
    post-smoothers must be adjoint (a forward sweep before and a backward one after, or
    both sweeps on each side)."""
    from fnin_cli.solvers import linear
    from fnin_cli.solvers.linear import sa_hierarchy

    monkeypatch.setattr(linear, "VCYCLE_SWEEPS", sweeps)

    s, _ = _system(seed=5, size=60)
    w = bini_weights(s, np.random.default_rng(3).normal(0, 1e-2, s.n))
    A = s.matrix(w, DataTerm(1e-9 * s.camera.focal ** 2))
    M = sa_hierarchy(A).vcycle
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=s.n), rng.normal(size=s.n)
    assert abs(x @ M(y) - y @ M(x)) <= 1e-12 * np.linalg.norm(x) * np.linalg.norm(M(y))   # forward/forward: 3.5e-9
    assert min(v @ M(v) for v in rng.normal(size=(5, s.n))) > 0


def _pyamg_vcycle(ml, sweeps: str):
    """pyamg's V-cycle (``aspreconditioner(cycle="V")``) on the levels of the project's
    hierarchy ``ml``, Gauss-Seidel as ``sweeps`` ("symmetric" or "one-each"), splu at the
    bottom: the reference of studies/vcycle/vcycle.py, built here so the test needs no study."""
    from pyamg.multilevel import MultilevelSolver
    from pyamg.relaxation.smoothing import change_smoothers

    levels = []
    for own in ml.levels:
        level = MultilevelSolver.Level()
        level.A = own.A
        if own.P is not None:
            level.P, level.R = own.P, own.R
        levels.append(level)
    ref = MultilevelSolver(levels, coarse_solver="splu")
    if sweeps == "symmetric":
        pre = post = ("gauss_seidel", {"sweep": "symmetric"})
    else:
        pre, post = ("gauss_seidel", {"sweep": "forward"}), ("gauss_seidel", {"sweep": "backward"})
    change_smoothers(ref, pre, post)
    return ref.aspreconditioner(cycle="V").matvec


def test_own_v_cycle_equals_pyamgs(monkeypatch):
    """Hierarchy.vcycle drops pyamg's two residual norms per application and nothing else:
    on the same levels it returns pyamg's V-cycle (the same Gauss-Seidel sweeps, splu at
    the bottom) to the last bit, with either sweep setting."""
    from fnin_cli.solvers import linear
    from fnin_cli.solvers.linear import sa_hierarchy

    s, _ = _system(seed=7, size=90)
    A = s.matrix(bini_weights(s, np.random.default_rng(4).normal(0, 1e-2, s.n)), DataTerm(1e-9 * s.camera.focal ** 2))
    ml = sa_hierarchy(A)
    r = np.random.default_rng(2).normal(size=s.n)
    assert len(ml.levels) >= 3
    for sweeps in ("symmetric", "one-each"):
        monkeypatch.setattr(linear, "VCYCLE_SWEEPS", sweeps)
        assert np.array_equal(ml.vcycle(r), _pyamg_vcycle(ml, sweeps)(r)), sweeps


def test_strength_pattern_gives_pyamgs_aggregates():
    """sa_hierarchy's strength test keeps pyamg's pattern (its magnitudes and row scaling
    are dropped): the same aggregates on every level of a BiNI-weighted system."""
    from pyamg.aggregation import standard_aggregation
    from pyamg.strength import symmetric_strength_of_connection

    from fnin_cli.solvers.linear import SA_THETA, _strength_pattern, sa_hierarchy

    s, _ = _system(seed=5, size=90)
    A = s.matrix(bini_weights(s, np.random.default_rng(6).normal(0, 1e-2, s.n)), DataTerm(1e-9 * s.camera.focal ** 2))
    levels = sa_hierarchy(A).levels
    assert len(levels) >= 3
    for level in levels[:-1]:
        ours = standard_aggregation(_strength_pattern(level.A, SA_THETA))[0]
        theirs = standard_aggregation(symmetric_strength_of_connection(level.A, SA_THETA))[0]
        assert (ours != theirs).nnz == 0 and ours.shape == theirs.shape


def test_a_matrix_its_diagonal_dominates_is_solved_without_a_singular_coarse_level():
    """Regression: a depth prior far tighter than the normals (sigma 1e-6 of the depth) left
    no strong connection, the aggregation one empty aggregate, and the coarse LU raised
    "Factor is exactly singular"; such a level is now the coarsest, smoothed only."""
    import scipy.sparse as sp

    from fnin_cli.solvers.linear import pcg, sa_hierarchy

    n = 5000
    A = sp.diags([-1.0, 2.0 + 1e4, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    ml = sa_hierarchy(A)
    assert len(ml.levels) == 1 and ml.levels[0].smooth_only
    b = np.cos(np.arange(n))
    x, it, res = pcg(A, b, np.zeros(n), ml.vcycle, rtol=1e-10)
    assert res <= 1e-10 and it <= 5
    assert np.abs(A @ x - b).max() <= 1e-8 * np.abs(b).max()
    # refreshed and with a new finest operator, as the rounds use it
    assert ml.refreshed(A).levels[0].smooth_only and ml.with_finest(A).levels[0].smooth_only


def test_an_orthographic_prior_tighter_than_the_floor_integrates():
    """Regression (issue 42's note): hill with a shifted absolute prior of sigma 1e-6 of its
    median depth raised "Factor is exactly singular" in Stage II's coarse solve."""
    from fnin_cli.pipeline import integrate, load_input
    from fnin_cli.prior import MIN_SIGMA_FRACTION, DepthPrior

    inp = load_input("samples/hill")
    gt = np.load("samples/hill/depth_gt.npz")
    gt = gt[gt.files[0]]
    prior = DepthPrior(np.where(inp.mask, gt + 5.0, np.nan), inp.mask.astype(float), 1e-6 * float(np.nanmedian(gt)))
    res = integrate(inp, depth_prior=prior)
    # within three of the sigma floor the prior is held to (orthographic: of its range)
    floor = MIN_SIGMA_FRACTION * float(np.ptp(gt[inp.mask]))
    assert np.nanmax(np.abs(res.depth - (gt + 5.0))[inp.mask]) < 3 * floor
