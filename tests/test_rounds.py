"""The rounds after a method (fnin_cli.solvers.rounds, --refine): BiNI's rounds and their
AMG hierarchy kept across rounds, their prior (the edge net, the fold join), their stop."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from fnin_cli.camera import Camera
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.solvers.bini import bini_weights, integrate_bini
from fnin_cli.solvers.linear import AMGCache, pcg, sa_hierarchy
from fnin_cli.solvers.registry import BY_NAME, DEFAULT_METHOD
from fnin_cli.solvers.rounds import fold_edges, fold_prior, view_cosine
from fnin_cli.solvers.stage2 import edge_prior
from fnin_cli.solvers.system import DataTerm, NormalSystem, classic_lambda

from helpers import aligned_error, camera, step_surface


def _row(nx_signs, nz):
    """One row of unit normals with x components of the given signs and |n_z| = nz."""
    s = np.asarray(nx_signs, float)
    n = np.dstack([s * np.sqrt(1 - nz ** 2), np.zeros_like(s), -np.full_like(s, nz)])   # (1, N, 3)
    return NormalSystem(n, np.ones((1, len(s)), bool), Camera(None, 1.0))


def test_view_cosine_is_n_dot_ray_under_perspective():
    K = np.array([[100.0, 0, 1.0], [0, 100.0, 0.0], [0, 0, 1]])
    n = np.dstack([np.full((1, 3), 0.6), np.zeros((1, 3)), np.full((1, 3), -0.8)])
    c = view_cosine(NormalSystem(n, np.ones((1, 3), bool), Camera(K)))
    u = np.arange(3.0)
    r = np.stack([(u - 1.0) / 100.0, np.zeros(3), np.ones(3)], 1)
    assert np.allclose(c, np.abs(r @ np.array([0.6, 0.0, -0.8])) / np.linalg.norm(r, axis=1), rtol=1e-12)


def test_view_cosine_is_nz_under_orthographic_with_any_pixel_size():
    n = np.dstack([np.full((1, 2), 0.6), np.zeros((1, 2)), np.full((1, 2), -0.8)])
    assert np.allclose(view_cosine(NormalSystem(n, np.ones((1, 2), bool), Camera(None, 0.25))), 0.8)


def test_a_fold_needs_both_normals_near_grazing():
    assert fold_edges(_row([1, 1, 1], 0.1), 0.3)[0].all()
    assert not fold_edges(_row([1, 1, 1], 0.1), 0.05)[0].any()
    assert not fold_edges(_row([1, 1, 1], 0.5), 0.3)[0].any()
    n = np.dstack([np.array([[0.995, 0.0]]), np.zeros((1, 2)), -np.array([[0.0999, 1.0]])])   # grazing | facing
    assert not fold_edges(NormalSystem(n, np.ones((1, 2), bool), Camera(None, 1.0)), 0.3)[0].any()


def test_join_cancels_inside_a_band_and_leaves_other_pixels_alone():
    s = _row([1, 1, 1, 1, 1], 0.1)
    bias = {"u": np.full(5, 3.0), "v": np.full(5, -1.0)}
    out = fold_prior(s, bias, 0.3, join=2.0)
    assert out["u"].tolist() == [-2.0, 0.0, 0.0, 0.0, 2.0]
    assert out["v"].tolist() == [-1.0] * 5        # no vertical edges in one row
    assert fold_prior(s, bias, 0.01)["u"].tolist() == [3.0] * 5
    assert fold_prior(s, bias, 0.3, join=0.0)["u"].tolist() == [0.0] * 5    # prior off, no pull


def test_the_default_joins_folds_at_cosine_03_with_logit_2():
    assert DEFAULT.rounds.fold_cos == 0.3 and DEFAULT.rounds.fold_join == 2.0


# ------------------------------------------------------------------ the fold join on scenes

def _rows(profile, slope, shape=(6, 24)):
    """Orthographic rows with depth ``profile(u)`` and dz/du ``slope(u)`` (pixel units)."""
    from fnin_cli.data import analytic

    cam = Camera(None, 1.0)
    surf = analytic.from_depth_function(shape, cam, lambda u, v: (profile(u), slope(u), np.zeros_like(v)))
    return NormalSystem(surf.normals, surf.support, cam), surf.depth[surf.support]


def _cut_between(system, left_col: int) -> np.ndarray:
    """An edge net's (2, H, W) w_u-, w_v- image that cuts every row's edge between columns
    ``left_col`` and ``left_col + 1`` with confidence 0.999 and says nothing elsewhere."""
    p = np.full((2,) + system.shape, 0.5)
    p[0][:, left_col] = 0.999       # that pixel trusts its left difference, not its right
    p[0][:, left_col + 1] = 0.001   # and its right neighbour the other way
    return p


def _rounds(system, start, edge_p, config):
    from fnin_cli.solvers.backend import CPU
    from fnin_cli.solvers.rounds import run_rounds
    from fnin_cli.solvers.system import DataTerm, classic_lambda

    from fnin_cli.solvers.objective import FixedTerm

    lam = classic_lambda(system.camera, system.shape, config.solver.lam)
    return run_rounds(system, start, edge_p, (FixedTerm(DataTerm(lam, start)),), config, config.rounds, CPU)


def test_a_steep_fold_the_edge_net_cuts_stays_joined():
    """A chin: flat, a band of slope 5 (|n_z| 0.196, within 0.3 of grazing), flat. The
    rounds start with the band's right half 6 units off (as a drifting piece) and an edge
    prior cutting the band in its middle: with the fold join the band closes, without it
    the cut and the offset stay."""
    system, true = _rows(lambda u: 100 + 5 * (np.clip(u, 8, 16) - 8), lambda u: np.where((u >= 8) & (u < 16), 5.0, 0.0))
    cols = np.nonzero(system.mask)[1]
    start = true + np.where(cols >= 12, 6.0, 0.0)
    edge_p = _cut_between(system, 11)
    off = replace(DEFAULT, rounds=replace(DEFAULT.rounds, fold_cos=None))

    def step_error(r):
        e = r.z - true
        return abs(float(np.median(e[cols >= 12]) - np.median(e[cols < 12])))

    joined, cut = _rounds(system, start, edge_p, DEFAULT), _rounds(system, start, edge_p, off)
    assert step_error(cut) > 5.0                  # without the join the offset stays (6 units)
    assert step_error(joined) < 0.6               # with it the fold closes (0.31 measured: inexact rounds)
    p = system.index[0, 11]
    # inside a band of folds the join's pulls cancel and BiNI's own weights decide (0.5 on an
    # even band); without the join the prior's cut stays
    assert joined.weights["u+"][p] > 0.4 and cut.weights["u+"][p] < 0.05


def test_an_occlusion_with_a_grazing_near_side_is_still_cut():
    """The near surface turns away (slope 5 over its last columns) and ends at a step onto a
    facing plane 55 units behind: the step's edge has one grazing and one facing pixel, so it
    is no fold; the edge prior's cut and the step stay with the join."""
    near = lambda u: np.where(u < 8, 50.0, 50 + 5 * (u - 8))          # noqa: E731
    system, true = _rows(lambda u: np.where(u <= 11, near(u), 120.0),
                         lambda u: np.where((u >= 8) & (u <= 11), 5.0, 0.0))
    folds = fold_edges(system, DEFAULT.rounds.fold_cos)[0]
    cols_p = np.nonzero(system.mask)[1][system.hp]
    assert folds[(cols_p >= 8) & (cols_p < 11)].all() and not folds[cols_p == 11].any()
    r = _rounds(system, true, _cut_between(system, 11), DEFAULT)
    cols = np.nonzero(system.mask)[1]
    step = np.median(r.z[cols == 12]) - np.median(r.z[cols == 11])
    assert step == pytest.approx(55.0, abs=0.5)
    assert r.weights["u+"][system.index[0, 11]] < 0.1


# ------------------------------------------------------------------ BiNI rounds, hierarchy, stop

def _step_system(kind="persp"):
    cam = camera(kind)
    surf, _ = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, cam.K if cam.perspective else None,
                      pixel_size=None if cam.perspective else cam.pixel_size)
    return inp, surf, NormalSystem(inp.normals, inp.mask, inp.camera), classic_lambda(inp.camera, inp.shape)


def test_refreshed_hierarchy_solves_the_new_system_exactly():
    """The prolongators of one set of weights, with Galerkin operators of another, give
    an SPD V-cycle for the new matrix: PCG reaches the direct solution of the new system."""
    inp, _, system, lam = _step_system()
    A1 = system.matrix(None, DataTerm(lam))
    z = integrate(inp, "wls").z[inp.mask]                   # the weights of a first round
    A2 = system.matrix(bini_weights(system, z), DataTerm(lam))
    ml = sa_hierarchy(A1).refreshed(A2)
    assert (abs(ml.levels[0].A - A2)).max() == 0.0
    M = ml.vcycle
    rng = np.random.default_rng(1)
    r1, r2 = rng.normal(size=system.n), rng.normal(size=system.n)
    assert np.dot(M(r1), r2) == pytest.approx(np.dot(r1, M(r2)), rel=1e-9)    # symmetric
    assert np.dot(M(r1), r1) > 0                                                # positive
    b = A2 @ rng.normal(size=system.n)
    x, it, res = pcg(A2, b, np.zeros(system.n), M, rtol=1e-11, maxiter=500)
    exact = spla.spsolve(A2.tocsc(), b)
    assert res <= 1e-11 and it < 500                                           # converged
    # up to the nearly free constant (lam is ~1e-10 of the stencil), the same solution
    np.testing.assert_allclose(x - x.mean(), exact - exact.mean(), atol=1e-6 * np.abs(exact).max())


@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_rounds_with_refreshed_hierarchy_match_fresh_ones(kind):
    """Reusing the hierarchy changes the cost, not the answer: after the same rounds from
    the same start, both recover the step scene equally well (up to the 1e-3 inner solves)."""
    inp, surf, system, lam = _step_system(kind)
    z0 = integrate(inp, "wls").z[inp.mask]
    mode = "scale" if kind == "persp" else "offset"
    errs = {}
    for reuse in (False, True):
        r = integrate_bini(system, z0=z0, term=DataTerm(lam, z0), max_iter=6, tol=0.0, solver="amg",
                           hierarchy=AMGCache() if reuse else None)
        assert r.iterations == 6
        z = system.to_image(r.z)
        errs[reuse] = aligned_error(np.exp(z) if kind == "persp" else z, surf.depth, inp.mask, mode)
    assert errs[True] == pytest.approx(errs[False], rel=0.05, abs=1e-4)


def test_default_rounds_stop_by_rule_and_refine_counts_exactly():
    inp, surf, _, _ = _step_system()
    assert BY_NAME[DEFAULT_METHOD].rounds(DEFAULT) == DEFAULT.rounds and DEFAULT.rounds.max_rounds > 0
    assert all(m.rounds(DEFAULT).max_rounds == 0 for m in BY_NAME.values() if m.name != "fnin")
    assert BY_NAME["wls"].rounds(DEFAULT, 2) == replace(DEFAULT.rounds, max_rounds=2, tol=0.0)
    default = integrate(inp, device="cpu")
    assert 1 <= default.rounds <= DEFAULT.rounds.max_rounds and "refine" in default.seconds
    assert integrate(inp, refine=0, device="cpu").rounds == 0            # the paper's one-shot
    assert integrate(inp, refine=3, device="cpu").rounds == 3            # N rounds, no energy-change stop
    assert integrate(inp, "wls").rounds == 0 and integrate(inp, "wls", refine=2).rounds == 2
    # the default is no worse than the one-shot on the step scene
    one = integrate(inp, refine=0, device="cpu")
    e = {n: aligned_error(r.depth, surf.depth, inp.mask, "scale") for n, r in (("default", default), ("one", one))}
    assert e["default"] <= e["one"] * 1.05 + 1e-4


def test_default_builds_one_amg_hierarchy_for_stage2_and_its_rounds(monkeypatch):
    """Stage II before the rounds solves to RoundsConfig.stage2_rtol and leaves its
    hierarchy to the rounds, which only refresh it (rebuilds after slow rounds switched off
    here: they have their own test below); the one-shot keeps OneShotConfig.solve_rtol."""
    from fnin_cli.solvers import linear

    cfg = replace(DEFAULT, rounds=replace(DEFAULT.rounds, rebuild_after=None))

    built, tols = [], []
    real_build, real_solve = linear.sa_hierarchy, linear.solve_spd
    monkeypatch.setattr(linear, "sa_hierarchy", lambda A, **kw: built.append(A.shape) or real_build(A, **kw))

    def solve_spy(A, b, x0, method="amg", rtol=1e-6, *args, **kw):
        tols.append(rtol)
        return real_solve(A, b, x0, method, rtol, *args, **kw)

    monkeypatch.setattr("fnin_cli.solvers.system.solve_spd", solve_spy)
    inp, _, _, _ = _step_system()
    res = integrate(inp, device="cpu", config=cfg)
    assert res.rounds >= 1 and len(built) == 1
    assert tols[0] == cfg.rounds.stage2_rtol and all(t == cfg.rounds.inner_rtol for t in tols[1:])
    built.clear(), tols.clear()
    integrate(inp, refine=0, device="cpu", config=cfg)
    assert len(built) == 1 and tols == [cfg.one_shot.solve_rtol]


def test_hierarchy_with_only_its_finest_operator_replaced_still_solves_the_new_system():
    """with_finest keeps the coarse operators of the old weights: the V-cycle is still
    symmetric positive definite and PCG reaches the new system's solution."""
    inp, _, system, lam = _step_system()
    A1 = system.matrix(None, DataTerm(lam))
    A2 = system.matrix(bini_weights(system, integrate(inp, "wls").z[inp.mask]), DataTerm(lam))
    old = sa_hierarchy(A1)
    ml = old.with_finest(A2)
    assert len(ml.levels) > 1 and ml.levels[0].A is A2
    assert all(new.A is prev.A for new, prev in zip(ml.levels[1:], old.levels[1:]))
    M = ml.vcycle
    rng = np.random.default_rng(3)
    r1, r2 = rng.normal(size=system.n), rng.normal(size=system.n)
    assert np.dot(M(r1), r2) == pytest.approx(np.dot(r1, M(r2)), rel=1e-9)
    assert np.dot(M(r1), r1) > 0
    b = A2 @ rng.normal(size=system.n)
    x, it, res = pcg(A2, b, np.zeros(system.n), M, rtol=1e-10, maxiter=500)
    assert res <= 1e-10 and it < 500


@pytest.mark.parametrize("every", [1, 2, 3, None])
def test_rounds_refresh_the_coarse_operators_every_kth_round(monkeypatch, every):
    """With AMGCache(refresh_every=k) the first solve builds the hierarchy, the next
    refreshes it and then every k-th; the others replace the finest operator only (all of
    them with None)."""
    from fnin_cli.solvers import linear

    calls = []
    real_refreshed, real_finest = linear.Hierarchy.refreshed, linear.Hierarchy.with_finest
    monkeypatch.setattr(linear.Hierarchy, "refreshed", lambda self, A: calls.append("R") or real_refreshed(self, A))
    monkeypatch.setattr(linear.Hierarchy, "with_finest", lambda self, A: calls.append("f") or real_finest(self, A))
    inp, _, system, lam = _step_system()
    z0 = integrate(inp, "wls").z[inp.mask]
    r = integrate_bini(system, z0=z0, term=DataTerm(lam, z0), max_iter=7, tol=0.0, solver="amg",
                       hierarchy=AMGCache(refresh_every=every))
    assert r.iterations == 7
    assert "".join(calls) == "".join("R" if every and (i - 1) % every == 0 else "f" for i in range(1, 7))


@pytest.mark.parametrize("after", [0, 2, None])
def test_a_round_that_took_many_iterations_rebuilds_the_hierarchy(monkeypatch, after):
    """With AMGCache(rebuild_after=m), a round whose PCG took more than m iterations
    makes the next round build a fresh hierarchy (sa_hierarchy on that round's matrix);
    the others follow the refresh schedule, and None never rebuilds."""
    from fnin_cli.solvers import linear

    events, its = [], []
    real_sa, real_pcg = linear.sa_hierarchy, linear.pcg
    monkeypatch.setattr(linear, "sa_hierarchy", lambda A: events.append("B") or real_sa(A))

    def counting_pcg(*args, **kw):
        out = real_pcg(*args, **kw)
        its.append(out[1])
        return out

    monkeypatch.setattr(linear, "pcg", counting_pcg)
    inp, _, system, lam = _step_system()
    z0 = integrate(inp, "wls").z[inp.mask]
    events.clear(), its.clear()
    r = integrate_bini(system, z0=z0, term=DataTerm(lam, z0), max_iter=6, tol=0.0, solver="amg",
                       hierarchy=AMGCache(refresh_every=1, rebuild_after=after))
    assert r.iterations == 6 and len(its) == 6
    built = [i for i in range(6) if i == 0 or (after is not None and its[i - 1] > after)]
    assert events == ["B"] * len(built)
    if after == 0:
        assert len(built) == 1 + sum(it > 0 for it in its[:-1]) and len(built) > 1
    # the rebuilt rounds end where the refreshed ones do (the same system, tolerance 1e-3)
    ref = integrate_bini(system, z0=z0, term=DataTerm(lam, z0), max_iter=6, tol=0.0, solver="amg",
                         hierarchy=AMGCache(refresh_every=1))
    assert np.max(np.abs(r.z - ref.z)) < 1e-2 * np.ptp(ref.z)


def test_amg_cache_rebuilds_after_a_solve_that_took_too_many_iterations():
    h = AMGCache(rebuild_after=8)
    h.after_solve(8)
    assert h.rebuild is False
    h.after_solve(9)
    assert h.rebuild is True
    h = AMGCache(rebuild_after=None)
    h.after_solve(500)
    assert h.rebuild is False


def test_with_finest_on_a_one_level_hierarchy_factors_the_new_matrix():
    """A system of at most SA_MAX_COARSE unknowns is one level, solved by LU: replacing its
    operator must replace the factorisation too (the V-cycle is then the exact inverse)."""
    import scipy.sparse as sp

    A1 = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(40, 40), format="csr")
    A2 = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(40, 40), format="csr")
    ml = sa_hierarchy(A1)
    assert len(ml.levels) == 1
    b = np.random.default_rng(0).normal(size=40)
    np.testing.assert_allclose(ml.with_finest(A2).vcycle(b), spla.spsolve(A2.tocsc(), b), rtol=1e-12)


def _true_edge_image(system, inp, surf, kind):
    """BiNI's w_u-, w_v- of the true unknown as the (2, H, W) image an edge net gives."""
    zt = (np.log(surf.depth) if kind == "persp" else surf.depth)[inp.mask]
    wt = bini_weights(system, zt)
    p = np.zeros((2,) + inp.shape)
    p[0][inp.mask], p[1][inp.mask] = wt["u-"], wt["v-"]
    return p


@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_edge_prior_keeps_the_cut_the_plain_rounds_lose(kind):
    """From the smooth WLS start of the step scene, plain BiNI rounds smear the jump over
    both sides (each side > 0.1 of its range off after 8 rounds); with a prior that knows
    the cut (the true weights' logits, scale 0.5), two rounds give each side's shape to
    1e-3. A zero prior (p = 0.5) is BiNI's own rounds."""
    inp, surf, system, lam = _step_system(kind)
    _, side = step_surface(camera(kind))
    z0 = integrate(inp, "wls").z[inp.mask]
    mode = "scale" if kind == "persp" else "offset"

    def side_errors(bias, rounds):
        r = integrate_bini(system, z0=z0, term=DataTerm(lam, z0), max_iter=rounds, tol=0.0, solver="amg", bias=bias)
        z = system.to_image(r.z)
        est = np.exp(z) if kind == "persp" else z
        return [aligned_error(est, surf.depth, inp.mask & s, mode) for s in (side, ~side)], r

    plain, r_plain = side_errors(None, 8)
    assert min(plain) > 0.1
    informed, _ = side_errors(edge_prior(system, _true_edge_image(system, inp, surf, kind), 0.5), 2)
    assert max(informed) < 1e-3
    flat, r_flat = side_errors(edge_prior(system, np.full((2,) + inp.shape, 0.5), 0.5), 8)
    np.testing.assert_array_equal(r_flat.z, r_plain.z)


def test_edge_prior_reaches_the_rounds_after_fnin_only(monkeypatch):
    """RoundsConfig.edge_prior changes the default's rounds (their first weights carry
    the edge net's logits) and leaves the one-shot and bini as they were."""
    from fnin_cli.solvers.objective import BilateralWeights

    inp, _, _, _ = _step_system()
    seen = []
    real = BilateralWeights.at
    monkeypatch.setattr(BilateralWeights, "at", lambda r, s, z, d=None: seen.append(r.bias) or real(r, s, z, d))
    off = replace(DEFAULT, rounds=replace(DEFAULT.rounds, edge_prior=None))
    one_off, default_off = integrate(inp, refine=0, config=off).z, integrate(inp, refine=2, config=off).z
    assert seen and all(b is None for b in seen)
    seen.clear()
    on = replace(DEFAULT, rounds=replace(DEFAULT.rounds, edge_prior=0.5))
    one_on, default_on = integrate(inp, refine=0, config=on).z, integrate(inp, refine=2, config=on).z
    assert len(seen) == 3 and all(set(b) == {"u", "v"} for b in seen)   # start + 2 rounds
    np.testing.assert_array_equal(one_on, one_off)
    assert not np.array_equal(default_on, default_off)
    seen.clear()
    integrate(inp, "bini")
    assert seen and all(b is None for b in seen)


def test_rounds_k_applies_to_the_rounds_that_carry_the_prior(monkeypatch):
    """RoundsConfig.k sets BiNI's k of the rounds after fnin (they carry the edge-net
    prior); bini keeps 2, and an explicit bini_k sets every k."""
    from fnin_cli.solvers.objective import BilateralWeights

    inp, _, _, _ = _step_system()
    ks = []
    real = BilateralWeights.at
    monkeypatch.setattr(BilateralWeights, "at", lambda r, s, z, d=None: ks.append((r.k, r.bias is None)) or real(r, s, z, d))
    cfg = replace(DEFAULT, rounds=replace(DEFAULT.rounds, edge_prior=0.3, k=3.0))
    integrate(inp, refine=2, config=cfg)
    assert ks == [(3.0, False)] * 3
    ks.clear()
    integrate(inp, "bini", config=cfg)
    assert ks and all(k == 2.0 and plain for k, plain in ks)
    ks.clear()
    integrate(inp, refine=2, bini_k=1.5, config=cfg)
    assert ks == [(1.5, False)] * 3
    ks.clear()
    integrate(inp, refine=2, config=replace(cfg, rounds=replace(cfg.rounds, edge_prior=None)))   # no prior: k = 2
    assert ks == [(2.0, True)] * 3


def test_refine_help_names_the_default_rounds():
    from typer.testing import CliRunner

    from fnin_cli.cli.app import app

    assert str(DEFAULT.rounds.fixed(12)) == "12 rounds"
    assert str(replace(DEFAULT.rounds, max_rounds=16, tol=1e-3)) == \
        "at most 16 rounds, stopping once BiNI's energy changes by less than 0.001"
    out = CliRunner().invoke(app, ["integrate", "--help"], env={"COLUMNS": "300"}).output
    assert f"fnin's own {DEFAULT.rounds}" in " ".join(out.split())


def test_rounds_stop_at_a_fixed_point_with_the_same_answer():
    """A round whose inner solve needs no iteration leaves z, and so the weights and every
    later round, as they were: integrate_bini stops there, and its z and weights are those
    of running all the rounds, to the last bit."""
    from fnin_cli.solvers.objective import BilateralWeights, Objective

    inp, _, system, lam = _step_system("ortho")
    bini = Objective(system, BilateralWeights(3.0))
    z0 = integrate(inp, "wls").z[inp.mask]
    r = integrate_bini(system, k=3.0, z0=z0, term=DataTerm(lam, z0), max_iter=120, tol=0.0, solver="amg",
                       hierarchy=AMGCache(refresh_every=3, rebuild_after=8))
    assert 1 <= r.iterations < 120
    # the same rounds written out, all 120 of them, no stop
    z, h = z0.copy(), AMGCache(refresh_every=3)
    w, _ = bini.weights_and_energy(z)
    its = []
    for _ in range(120):
        z, info = system.solve(w, DataTerm(lam, z0), x0=z, method="amg", rtol=1e-3, hierarchy=h)
        its.append(info.iterations)
        if info.iterations > 8:
            h.rebuild = True
        w, _ = bini.weights_and_energy(z)
    assert its[r.iterations - 1] == 0 and all(i == 0 for i in its[r.iterations - 1:])
    assert np.array_equal(z, r.z)
    assert all(np.array_equal(w[d], r.weights[d]) for d in w)
