"""The WLS core: every linear solver gives the same minimiser; assembly matches a dense build."""

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.solvers.bini import bini_weights
from fnin_cli.data.synthetic import make_scene
from fnin_cli.solvers.system import DIRECTIONS, DataTerm, NormalSystem


def _system(seed=4, size=40, ortho=False):
    sc = make_scene(seed, size, ortho_prob=1.0 if ortho else 0.0)
    return NormalSystem(np.nan_to_num(sc.normals), sc.mask, Camera(sc.K)), sc


@pytest.mark.parametrize("ortho", [False, True])
def test_matrix_and_rhs_equal_dense_normal_equations(ortho):
    """A^T W A + lam I and -A^T W c + lam z_R from explicitly stacked residual rows."""
    s, _ = _system(ortho=ortho)
    rng = np.random.default_rng(0)
    w = {d: rng.uniform(0.1, 1.0, s.n) for d in DIRECTIONS}
    lam, prior = 0.3, rng.normal(size=s.n)
    rows, cons, wts = [], [], []
    for d in DIRECTIONS:
        for p in np.flatnonzero(s.has[d]):
            r, c = divmod(int(np.flatnonzero(s.mask.ravel())[p]), s.shape[1])
            dr, dc = {"u+": (0, 1), "u-": (0, -1), "v+": (1, 0), "v-": (-1, 0)}[d]
            q = s.index[r + dr, c + dc]
            a = s.a_u[p] if d[0] == "u" else s.a_v[p]
            row = np.zeros(s.n)
            sign = 1.0 if d[1] == "+" else -1.0
            row[q] += sign * a
            row[p] -= sign * a
            rows.append(row)
            cons.append(s.nx[p] if d[0] == "u" else s.ny[p])
            wts.append(w[d][p])
    A, c, W = np.array(rows), np.array(cons), np.diag(wts)
    M = A.T @ W @ A + lam * np.eye(s.n)
    b = -A.T @ W @ c + lam * prior
    A_sys, b_sys, ref = s.normal_equations(w, DataTerm(lam, prior))
    np.testing.assert_allclose(A_sys.toarray(), M, rtol=1e-10, atol=1e-8 * np.abs(M).max())
    np.testing.assert_allclose(b_sys, b, rtol=1e-10, atol=1e-8 * np.abs(b).max())
    assert ref == pytest.approx(np.linalg.norm(-A.T @ W @ c), rel=1e-10)     # the data's part alone
    # a per-pixel weight: the same diagonal, weighted targets
    cw = rng.uniform(0.0, 2.0, s.n)
    A_px, b_px, _ = s.normal_equations(w, DataTerm(cw, prior))
    np.testing.assert_allclose(A_px.toarray(), M - lam * np.eye(s.n) + np.diag(cw), rtol=1e-10,
                               atol=1e-8 * np.abs(M).max())
    np.testing.assert_allclose(b_px, -A.T @ W @ c + cw * prior, rtol=1e-10, atol=1e-8 * np.abs(b).max())


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


def test_warm_start_at_prior_is_not_taken_as_converged():
    """Regression: the CG tolerance once included lam*z_prior in ||b||, so a warm start at
    z_prior stopped after 0 iterations far from the solution."""
    s, _ = _system(seed=11, size=48)
    lam = 0.1 * s.camera.focal ** 2
    prior = np.full(s.n, 7.3)  # a log-depth offset like DiLiGenT's ln(1500)
    b_data = s.rhs(None)
    assert np.linalg.norm(b_data) < 1e-2 * np.linalg.norm(b_data + lam * prior)  # the trap is set
    ref, _ = s.solve(None, DataTerm(lam, prior), method="direct")
    z, info = s.solve(None, DataTerm(lam, prior), x0=prior, method="jacobi", rtol=1e-2)
    assert info.iterations > 0
    assert np.mean(np.abs(z - ref)) < 0.1 * np.mean(np.abs(prior - ref))


def test_weight_gradients_match_finite_differences():
    """Implicit differentiation through the weighted solve: dL/dw for L = c.z equals
    central differences of re-solved systems (exact solves), on a perspective fold scene."""
    from scipy.sparse.linalg import spsolve

    from fnin_cli.pipeline import build_input
    from fnin_cli.data.synthetic import make_scene

    sc = make_scene(4, 20, 24, fold_prob=1.0)
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    s = NormalSystem(inp.normals, inp.mask, inp.camera)
    rng = np.random.default_rng(0)
    w = {d: rng.uniform(0.1, 0.9, s.n) for d in ("u+", "u-", "v+", "v-")}
    c = rng.normal(size=s.n)
    prior = rng.normal(size=s.n)

    def solve(weights):
        A, b, _ = s.normal_equations(weights, DataTerm(1e-2, prior))
        return spsolve(A.tocsc(), b)

    z = solve(w)
    adj = spsolve(s.matrix(w, DataTerm(1e-2)).tocsc(), c)
    g = s.weight_gradients(z, adj)
    eps = 1e-6
    checked = 0
    for d in ("u+", "u-", "v+", "v-"):
        for p in rng.choice(np.flatnonzero(s.has[d]), 4, replace=False):
            hi = {k: v.copy() for k, v in w.items()}
            lo = {k: v.copy() for k, v in w.items()}
            hi[d][p] += eps
            lo[d][p] -= eps
            fd = (c @ solve(hi) - c @ solve(lo)) / (2 * eps)
            assert abs(fd - g[d][p]) <= 1e-5 * max(1.0, abs(fd)), (d, p, fd, g[d][p])
            checked += 1
    assert checked == 16 and max(np.abs(g[d]).max() for d in g) > 1e-3


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


def test_differences_residuals_and_pattern_match_the_edges_on_a_ragged_mask():
    """The per-pixel neighbour arrays (right = next pixel, down/up gathered) give each
    one-sided difference and residual the edges give, 0 where it does not exist, and the
    CSR pattern is the sorted one of the edges' coordinates (holes, one-pixel rows and
    columns, the image border)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    mask = rng.random((23, 31)) < 0.7
    mask[:, 0] = mask[0, :] = mask[:, -1] = True
    normals = rng.normal(size=(23, 31, 3))
    normals[..., 2] = -np.abs(normals[..., 2]) - 0.5
    normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
    s = NormalSystem(normals, mask, Camera(np.array([[40.0, 0, 15], [0, 40.0, 11], [0, 0, 1]])))
    z = rng.normal(size=s.n)
    d, r = s.differences(z), s.residuals(z)
    want = {d_: np.zeros(s.n) for d_ in DIRECTIONS}
    for p, q, a, plus, minus in ((s.hp, s.hq, s.a_u, "u+", "u-"), (s.vp, s.vq, s.a_v, "v+", "v-")):
        want[plus][p] = a[p] * (z[q] - z[p])
        want[minus][q] = a[q] * (z[q] - z[p])
    for d_ in DIRECTIONS:
        np.testing.assert_array_equal(d[d_], want[d_])
        n = s.nx if d_[0] == "u" else s.ny
        np.testing.assert_array_equal(r[d_], np.where(s.has[d_], want[d_] + n, 0.0))
    rows = np.concatenate([s.hp, s.hq, s.vp, s.vq, np.arange(s.n)])
    cols = np.concatenate([s.hq, s.hp, s.vq, s.vp, np.arange(s.n)])
    ref = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(s.n, s.n))
    ref.sort_indices()
    A = s.matrix({d_: rng.uniform(0.1, 1, s.n) for d_ in DIRECTIONS}, DataTerm(0.5))
    assert A.has_canonical_format
    np.testing.assert_array_equal(A.indptr, ref.indptr)
    np.testing.assert_array_equal(A.indices, ref.indices)


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
