"""The objective (fnin_cli.solvers.objective) and its one IRLS driver (fnin_cli.solvers.irls)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.solvers.backend import CPU, Backend
from fnin_cli.solvers.bini import integrate_bini
from fnin_cli.solvers.irls import InnerSolve, minimise
from fnin_cli.solvers.objective import (BilateralWeights, FixedTerm, FixedWeights, Objective, anchored,
                                        bini_weights)
from fnin_cli.solvers.system import DIRECTIONS, DataTerm, NormalSystem


def _plane(shape=(12, 16), p=0.4, q=-0.25):
    """An orthographic plane z = p u + q v: its normals, system, and z over the pixels."""
    n = np.dstack([np.full(shape, p), np.full(shape, q), np.full(shape, -1.0)])
    n /= np.linalg.norm(n, axis=2, keepdims=True)
    s = NormalSystem(n, np.ones(shape, bool), Camera(None, 1.0))
    v, u = np.nonzero(s.mask)
    return s, p * u + q * v


def _step(shape=(16, 20), jump=6.0):
    """A flat orthographic map whose right half is ``jump`` in front: normals all face the camera."""
    n = np.dstack([np.zeros(shape + (2,)), -np.ones(shape + (1,))])
    s = NormalSystem(n, np.ones(shape, bool), Camera(None, 1.0))
    v, u = np.nonzero(s.mask)
    return s, np.where(u >= shape[1] // 2, jump, 0.0)


def test_data_terms_sum_in_order_as_one_term():
    s, _ = _plane()
    a, b = DataTerm(1e-3, np.full(s.n, 2.0)), DataTerm(np.linspace(0, 1, s.n), np.full(s.n, -1.0))
    obj = Objective(s, FixedWeights(None), (FixedTerm(a), FixedTerm(b)))
    want = a.plus(b)
    got = obj.data(None)
    np.testing.assert_array_equal(got.weight, want.weight)
    np.testing.assert_array_equal(got.target, want.target)
    assert Objective(s, FixedWeights(None)).data(None).weight == 0.0     # no term: a zero one
    assert not obj.reweights and Objective(s, BilateralWeights(2.0)).reweights


def test_the_energy_is_the_normals_terms_weighted_residual():
    s, z = _plane()
    assert Objective(s, FixedWeights(None)).energy(z) == pytest.approx(0.0, abs=1e-20)
    w = bini_weights(s, z + 0.3 * np.random.default_rng(0).normal(size=s.n), 2.0)
    zz = z + np.random.default_rng(1).normal(size=s.n)
    res = s.residuals(zz)
    want = sum(float(np.sum(w[d] * res[d] ** 2)) for d in DIRECTIONS)
    assert Objective(s, FixedWeights(w)).energy(zz) == pytest.approx(want, rel=1e-12)
    weights, energy = Objective(s, BilateralWeights(2.0)).weights_and_energy(zz)
    assert all(np.array_equal(weights[d], bini_weights(s, zz, 2.0)[d]) for d in DIRECTIONS)
    assert energy == pytest.approx(s.energy(zz, weights), rel=1e-12)


def test_one_iteration_with_fixed_weights_integrates_a_plane_exactly():
    s, z = _plane()
    r = minimise(anchored(s, FixedWeights(None), 1e-12), None, InnerSolve("direct"))
    assert r.iterations == 1 and r.history == []
    np.testing.assert_allclose(r.z - r.z.mean(), z - z.mean(), atol=1e-8)


def test_the_normal_equations_are_the_systems_with_the_terms_assembled():
    s, z = _plane()
    obj = anchored(s, FixedWeights(None), 1e-3, z)
    A, b, ref = obj.normal_equations()
    A2, b2, ref2 = s.normal_equations(None, DataTerm(1e-3, z))
    assert (A != A2).nnz == 0 and np.array_equal(b, b2) and ref == ref2


def test_bini_is_the_driver_with_bilateral_weights_and_cuts_a_step():
    """integrate_bini is minimise with BiNI's rule: same z, weights and iterations; on a step
    whose sides are flat it keeps each side flat (the jump is cut)."""
    s, truth = _step()
    z0 = np.zeros(s.n)
    term = DataTerm(1e-6, z0)
    r = integrate_bini(s, k=2.0, z0=z0 + truth * 0.5, term=term, max_iter=30, tol=1e-6, solver="direct")
    again = minimise(Objective(s, BilateralWeights(2.0), (FixedTerm(term),)), z0 + truth * 0.5,
                     InnerSolve("direct", 1e-3), CPU, 30, 1e-6)
    assert r.iterations == again.iterations >= 2
    np.testing.assert_array_equal(r.z, again.z)
    img = s.to_image(r.z)
    assert np.ptp(img[:, :8]) < 1e-3 and np.ptp(img[:, 12:]) < 1e-3      # each side flat
    assert len(r.history) == r.iterations + 1 and r.history[-1] <= r.history[0]


@dataclass
class _Trusted:
    """A data term that trusts a target only where z already lies within ``band`` of it
    (a robust term in miniature): weight ``c`` there, 0 elsewhere; counts its calls."""

    target: np.ndarray
    c: float
    band: float
    calls: int = 0

    reweights = True

    def at(self, z):
        self.calls += 1
        if z is not None:
            self.weight = np.where(np.abs(z - self.target) <= self.band, self.c, 0.0)
        return DataTerm(getattr(self, "weight", np.full(self.target.shape, self.c)), self.target)

    def energy(self, z):
        w = getattr(self, "weight", np.full(self.target.shape, self.c))
        return float(np.sum(w * (z - self.target) ** 2))


def test_a_term_that_reweights_itself_is_asked_each_iteration_and_drops_an_outlier():
    """A prior on a plane with one patch 5 units off: a fixed term pulls the plane towards
    the patch; a term that reweights from z lets the patch go and the plane is exact."""
    s, z = _plane()
    target = z.copy()
    patch = s.to_image(np.zeros(s.n), fill=0.0).astype(bool)
    patch[2:5, 3:6] = True
    target[patch[s.mask]] += 5.0
    fixed = minimise(anchored(s, FixedWeights(None), 0.0, None, FixedTerm(DataTerm(0.05, target))), z,
                     InnerSolve("direct"))
    robust = _Trusted(target, 0.05, 1.0)
    r = minimise(anchored(s, FixedWeights(None), 0.0, None, robust), z, InnerSolve("direct"), max_iter=10)
    assert np.abs(fixed.z - z).max() > 0.1                       # the wrong patch pulls
    assert np.abs(r.z - z).max() < 1e-6                          # rejected
    assert robust.calls >= 2 and r.iterations >= 1


def test_solves_after_the_first_take_their_own_tolerance(monkeypatch):
    """``InnerSolve.rtol_after``: the first solve at ``rtol``, every later one at
    ``rtol_after`` (a second solve that must travel from the first; round 5's robust-prior
    candidate 15c)."""
    s, z = _plane()
    target = z.copy()
    target[:5] += 5.0
    seen = []
    solve = NormalSystem.solve

    def spy(self, *a, **k):
        seen.append(k["rtol"])
        return solve(self, *a, **k)

    monkeypatch.setattr(NormalSystem, "solve", spy)
    minimise(anchored(s, FixedWeights(None), 0.0, None, _Trusted(target, 0.05, 1.0)), z + 1.0,
             InnerSolve("amg", 1e-3, rtol_after=1e-6), max_iter=3)
    assert seen[0] == 1e-3 and len(seen) >= 2 and set(seen[1:]) == {1e-6}
    assert InnerSolve(rtol=1e-3).tolerance(False) == 1e-3        # none given: the same for all


def test_a_start_that_solves_the_system_stops_at_once():
    s, z = _plane()
    obj = Objective(s, BilateralWeights(2.0), (FixedTerm(DataTerm(1e-3, z)),))
    exact = minimise(obj, z, InnerSolve("direct", 1e-12), CPU, 5, 0.0).z
    calls = []
    r = minimise(obj, exact, InnerSolve("amg", 1e-3), CPU, 5, 0.0, callback=lambda i, e, zz: calls.append(i))
    assert r.iterations == 1 and calls == [1]


def test_the_grid_solves_the_same_objective():
    pytest.importorskip("torch")
    s, z = _plane()
    w = bini_weights(s, z + 0.5 * np.random.default_rng(2).normal(size=s.n), 2.0)
    obj = anchored(s, FixedWeights(w), 1e-3, z)
    cpu = minimise(obj, z, InnerSolve("direct"), CPU).z
    grid = minimise(obj, z, InnerSolve(None, 1e-10, 2000), Backend(grid="cpu")).z
    np.testing.assert_allclose(grid, cpu, atol=1e-6 * np.abs(cpu).max())
    assert minimise(obj, z, InnerSolve(None, 1e-10, 2000), Backend(grid="cpu")).weights is w
