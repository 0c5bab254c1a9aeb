"""The least-squares system (solvers.system): assembly against a dense build, its data
terms, residuals and pattern on ragged masks, the gradients through a solve."""


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


def test_data_terms_add_up_to_one_term():
    """DataTerm.plus: weights add, targets are weighted; the sum's normal equations are
    those of the two terms together (the depth prior joins the classic prior this way)."""
    s, _ = _system(seed=3, size=24)
    rng = np.random.default_rng(5)
    a = DataTerm(1e-3, rng.normal(size=s.n))
    b = DataTerm(np.where(rng.uniform(size=s.n) < 0.3, 2.0, 0.0), rng.normal(size=s.n))   # holes: weight 0
    both = a.plus(b)
    A, rhs, _ = s.normal_equations(None, both)
    A0, rhs0, _ = s.normal_equations(None, DataTerm(0.0))
    scale = np.abs(A0.diagonal()).max()          # the stencil's size: differences lose digits to it
    np.testing.assert_allclose((A - A0).diagonal(), a.weight + b.weight, rtol=1e-9, atol=1e-13 * scale)
    np.testing.assert_allclose(rhs - rhs0, a.weight * a.target + b.weight * b.target, rtol=1e-9,
                               atol=1e-13 * np.abs(rhs0).max())
    np.testing.assert_array_equal((A - A0).toarray() - np.diag((A - A0).diagonal()), 0.0)   # the diagonal only
    assert DataTerm(2.0).pull() is None and DataTerm(0.0, np.ones(3)).pull() is None
    assert DataTerm(2.0).plus(DataTerm(1.0)).target is None
