"""The rounds after a method (fnin_cli.solvers.rounds): their prior, the fold join, where
they run and what follows them."""

from __future__ import annotations

import numpy as np

from fnin_cli.camera import Camera
from fnin_cli.config import DEFAULT
from fnin_cli.solvers.rounds import fold_edges, fold_prior, view_cosine
from fnin_cli.solvers.system import NormalSystem


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
