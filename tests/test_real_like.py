"""Real-like normal errors (data.real_like) and `fnin bench meshes --noise` (issue 31, item 1):
the tilt field has the stated amplitude and is smooth, quantisation and white noise have
their stated size, seeds reproduce, and the CLI option builds the suite."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fnin_cli.bench.cases import mesh_cases, mesh_view_set
from fnin_cli.data import real_like
from fnin_cli.errors import FninError

from helpers_cli import run_fnin
from test_mesh_bench_train import mesh_dir  # noqa: F401  (the tiny mesh folder fixture)

FRONT = np.array([0.0, 0.0, -1.0])


def _angles_deg(a, b):
    return np.degrees(np.arccos(np.clip(np.sum(a * b, -1), -1.0, 1.0)))


def _plane(h=64, w=80):
    n = np.broadcast_to(FRONT, (h, w, 3)).astype(np.float32).copy()
    return n, np.ones((h, w), bool)


def test_the_tilt_field_turns_the_normals_by_at_most_its_amplitude_and_reaches_it():
    n, mask = _plane()
    for amp in (1.0, 3.5, 6.0):
        out = real_like.apply_noise(n, mask, None, {"model": "tilt", "tilt_deg": amp, "sigma_frac": 0.08},
                                    np.random.default_rng(7))
        ang = _angles_deg(out.astype(np.float64), n)
        assert ang.max() == pytest.approx(amp, abs=2e-3)      # float32 output
        assert np.median(ang) > 0.2 * amp                     # a field, not a few pixels


def test_the_tilt_field_is_smooth_at_its_sigma():
    mask = np.ones((96, 96), bool)
    r = real_like.tilt_field(mask, 4.0, 8.0, np.random.default_rng(3))
    step = np.abs(np.diff(np.degrees(r[..., :2]), axis=1)).max()
    assert step < 0.25 * 4.0                        # neighbours differ by far less than the amplitude
    assert np.all(r[..., 2] == 0)                   # tilts only
    wide = real_like.tilt_field(mask, 4.0, 2.0, np.random.default_rng(3))
    assert np.abs(np.diff(np.degrees(wide[..., :2]), axis=1)).max() > step   # smaller sigma: rougher


def test_white_noise_and_quantisation_have_their_stated_size():
    n, mask = _plane(128, 128)
    out = real_like.apply_noise(n, mask, None, {"model": "white", "white_deg": 3.0}, np.random.default_rng(1))
    rms = np.sqrt(np.mean(_angles_deg(out.astype(np.float64), n) ** 2))
    assert rms == pytest.approx(3.0, rel=0.05)
    rng = np.random.default_rng(2)
    v = rng.normal(size=(2000, 3))
    v[:, 2] = -np.abs(v[:, 2])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for bits, most in ((8, 0.5), (16, 0.002)):
        q = real_like.quantise(v, bits)
        assert np.allclose(np.linalg.norm(q, axis=1), 1.0)
        assert 0 < _angles_deg(q, v).max() < most


def test_perturbed_normals_still_face_the_camera():
    rng = np.random.default_rng(4)
    v = rng.normal(size=(40, 40, 3))
    v[..., 2] = -np.abs(v[..., 2]) * 0.05            # near grazing
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    mask = np.ones((40, 40), bool)
    out = real_like.apply_noise(v, mask, None, real_like.draw_params("ps8", rng), rng)
    assert np.all(out[..., 2] < 0)


def test_seeds_reproduce_and_differ(mesh_dir):  # noqa: F811
    a = mesh_view_set(mesh_dir, 48, 2, noise="real-like", noise_seed=5)
    c = real_like.real_like_scenes(mesh_view_set(mesh_dir, 48, 2), "real-like", 5, size=48, folds=2)
    d = real_like.real_like_scenes(mesh_view_set(mesh_dir, 48, 2), "real-like", 6, size=48, folds=2)
    assert [x[0] for x in a] == [x[0] for x in c] and len(a) == 4      # 2 views + 2 folds
    for (_, s1, _), (_, s2, _), (_, s3, _) in zip(a, c, d):
        np.testing.assert_array_equal(s1.normals, s2.normals)
        assert not np.array_equal(np.nan_to_num(s1.normals), np.nan_to_num(s3.normals))
    clean = mesh_view_set(mesh_dir, 48, 2)
    assert np.array_equal(clean[0][1].depth, a[0][1].depth, equal_nan=True)   # same geometry
    assert [real_like.SUITE_CYCLE[0] in a[0][0], "-ps-" in a[1][0]] == [True, True]
    assert a[2][0].startswith("fold") and a[2][1].object_id.max() == 0


def test_unknown_noise_is_a_one_line_error(mesh_dir):  # noqa: F811
    with pytest.raises(FninError, match="unknown --noise"):
        mesh_cases(mesh_dir, 48, 2, noise="pink")


def test_bench_meshes_noise_option(mesh_dir, tmp_path):  # noqa: F811
    out = tmp_path / "r.json"
    p = run_fnin(["bench", "meshes", "--meshes", mesh_dir, "--mesh-size", 48, "--mesh-views", 2, "--noise",
                  "tilt", "--noise-seed", 3, "--methods", "wls", "--json", out, "--no-warmup"], timeout=300)
    assert p.returncode == 0, p.stderr
    names = list(json.loads(out.read_text())["cases"])
    assert len(names) == 2 and all("-tilt" in n for n in names)
    p = run_fnin(["bench", "synthetic", "--noise", "tilt"], timeout=60)
    assert p.returncode != 0 and "--noise" in p.stderr and "Traceback" not in p.stderr
