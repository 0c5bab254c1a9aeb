"""--downsample N and the memory pre-check that counts masked pixels."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from fnin_cli.batch import memory
from fnin_cli.camera import Camera
from fnin_cli.data.analytic import paraboloid
from fnin_cli.downsample import downsample_input
from fnin_cli.errors import FninError
from fnin_cli import io
from fnin_cli.io import read_mask
from fnin_cli.pipeline import build_input, integrate

from helpers_cli import invoke, write_folder

N = 3                 # odd: block (i, j)'s centre is the full-resolution pixel (3i + 1, 3j + 1)
REL_TOL = 2e-4        # measured 1.3e-5 (perspective) and 2.1e-5 (orthographic)


@pytest.mark.parametrize("persp", [True, False], ids=["perspective", "orthographic"])
def test_downsampled_depth_matches_full_resolution_at_block_centres(persp):
    h, w = 192, 255
    cam = Camera(np.array([[300.0, 0, 130.2], [0, 300.0, 90.7], [0, 0, 1]])) if persp else Camera(None, 0.05)
    s = paraboloid((h, w), cam, 10.0, -5e-5 if persp else -1e-4)
    inp = build_input(s.normals.astype(np.float32), None, s.support, cam)
    i0, j0 = 30, 40
    known = s.depth[N * i0 + 1, N * j0 + 1]
    full = integrate(inp, "wls", depth_at=(N * i0 + 1, N * j0 + 1, known))
    small_inp = downsample_input(inp, N)
    small = integrate(small_inp, "wls", depth_at=(i0, j0, known))
    hc, wc = h // N, w // N
    assert small.depth.shape == (hc, wc)
    sampled = full.depth[1::N, 1::N][:hc, :wc]
    m = small.mask
    assert m.sum() > 0.9 * hc * wc
    rel = np.abs(small.depth - sampled)[m] / np.abs(sampled[m])
    assert rel.max() < REL_TOL
    # the reduced camera: f / N and (c + 0.5) / N - 0.5; orthographic pixels N times larger
    if persp:
        np.testing.assert_allclose(small_inp.camera.K, [[100.0, 0, (130.2 + 0.5) / 3 - 0.5],
                                                        [0, 100.0, (90.7 + 0.5) / 3 - 0.5], [0, 0, 1]])
    else:
        assert small_inp.camera.pixel_size == pytest.approx(0.15)


def test_mask_keeps_blocks_wholly_inside_and_normals_are_renormalised_means():
    rng = np.random.default_rng(0)
    n = rng.normal(size=(6, 9, 3)) * 0.2 + [0, 0, -1]
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    mask = np.ones((6, 9), bool)
    mask[4, 7] = False                               # block (1, 2) is not wholly inside
    small = downsample_input(build_input(n.astype(np.float32), None, mask, None), 3)
    assert small.mask.tolist() == [[True, True, True], [True, True, False]]
    mean = n[:3, 3:6].reshape(-1, 3).mean(0)
    np.testing.assert_allclose(small.normals[0, 1], mean / np.linalg.norm(mean), atol=1e-6)
    assert np.isnan(small.normals[1, 2]).all()


def test_downsample_too_coarse_is_one_clear_error():
    n = np.tile(np.array([0, 0, -1.0], np.float32), (8, 8, 1))
    mask = np.zeros((8, 8), bool)
    mask[2:5, 2:5] = True
    with pytest.raises(FninError, match="no 4x4 block lies wholly inside the mask"):
        downsample_input(build_input(n, None, mask, None), 4)


def test_cli_downsample_reports_it_and_writes_the_reduced_size(tmp_path):
    case = write_folder(tmp_path / "case", seed=2, size=96)
    r = invoke(["integrate", str(case), "-o", str(tmp_path / "d.npy"), "--method", "wls", "--downsample", "2",
                "--json", "-q"])
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout.splitlines()[0])
    assert rec["downsample"] == 2 and rec["input_shape"] == [96, 96] and rec["shape"] == [48, 48]
    assert np.load(tmp_path / "d.npy").shape == (48, 48)
    r = invoke(["integrate", str(case), "-o", str(tmp_path / "e.npy"), "--downsample", "0"])
    assert r.exit_code == 2 and "--downsample must be 1 or more" in r.stderr


def test_estimate_counts_masked_pixels_and_downsample():
    full = memory.estimate_bytes((4000, 6000), "fnin", True)
    masked = memory.estimate_bytes((4000, 6000), "fnin", True, pixels=1_930_000)
    assert masked < 0.3 * full
    assert memory.estimate_bytes((4000, 6000), "fnin", True, 1_930_000, downsample=4) < masked


def test_refusal_names_masked_pixels_estimate_free_memory_and_downsample(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 3 * 2**30)
    monkeypatch.setattr(memory, "rss_kb", lambda: 0)
    with pytest.raises(FninError) as err:
        memory.check_memory((4000, 6000), "fnin", "big.png", True, 1, pixels=5_750_000)
    msg = err.value.message
    assert "6000x4000" in msg and "5,750,000 masked pixels" in msg and "GiB of memory" in msg
    assert "3.0 GiB is free" in msg
    fit = int(re.search(r"try --downsample (\d+)", msg).group(1))   # the smallest factor that fits
    assert memory.estimate_bytes((4000, 6000), "fnin", True, 5_750_000, fit) <= 3 * 2**30
    assert fit == 2 or memory.estimate_bytes((4000, 6000), "fnin", True, 5_750_000, fit - 1) > 3 * 2**30
    # enough memory: no refusal
    monkeypatch.setattr(memory, "available_memory", lambda: 64 * 2**30)
    memory.check_memory((4000, 6000), "fnin", "big.png", True, 1, pixels=5_750_000)


def test_preview_of_a_large_map_is_computed_on_the_decimated_grid():
    from fnin_cli.batch.preview import preview_image

    h, w = 2000, 3000
    cam = Camera(np.array([[2500.0, 0, 1499.5], [0, 2500.0, 999.5], [0, 0, 1]]))
    s = paraboloid((h, w), cam, 10.0, -1e-6)
    img = preview_image(s.normals.astype(np.float32), s.depth.astype(np.float32), None, cam, s.support)
    assert img.shape[0] * img.shape[1] <= 2_300_000      # panels <= 2 MP, plus titles and legend
    # the shading's normals come from the decimated depth with the decimated camera: exact ones
    from fnin_cli.camera import normals_from_depth

    for c in (cam, Camera(None, 0.5)):
        surf = s if c is cam else paraboloid((h, w), c, 10.0, -1e-6)
        got = normals_from_depth(surf.depth[::3, ::3], c.strided(3))[1:-1, 1:-1]
        ok = np.isfinite(got).all(-1)
        assert ok.mean() > 0.9
        assert np.abs(got - surf.normals[::3, ::3][1:-1, 1:-1])[ok].max() < 1e-3


def test_depth_at_names_a_full_resolution_pixel_under_downsample(tmp_path):
    case = write_folder(tmp_path / "case", seed=2, size=96)
    m = read_mask(case / "mask.png")
    small = m[:96, :96].reshape(48, 2, 48, 2).all(axis=(1, 3))
    i, j = np.argwhere(small)[len(np.argwhere(small)) // 2]
    r = invoke(["integrate", str(case), "-o", str(tmp_path / "d.npy"), "--method", "wls", "--downsample", "2",
                "--depth-at", f"{2 * i + 1},{2 * j},7.5", "-q"])
    assert r.exit_code == 0, r.stderr
    assert np.load(tmp_path / "d.npy")[i, j] == pytest.approx(7.5, rel=1e-5)


def test_a_depth_prior_is_counted_by_the_memory_check(monkeypatch, tmp_path):
    """A prior adds BYTES_PRIOR_IMAGE per pixel of the map and BYTES_PRIOR per masked pixel
    (studies/memory-prior: 1.21-1.48x the measured peaks with a full-size prior, 0.8-24 MP);
    the refusal says it counted one, and `fnin integrate` counts a folder's depth_prior.*
    before reading the map."""
    base = memory.estimate_bytes((4000, 6000), "fnin", True, 1_500_000)
    with_prior = memory.estimate_bytes((4000, 6000), "fnin", True, 1_500_000, prior=True)
    assert with_prior - base == 4000 * 6000 * memory.BYTES_PRIOR_IMAGE + 1_500_000 * memory.BYTES_PRIOR
    assert memory.estimate_bytes((4000, 6000), "fnin", True, 1_500_000, 4, prior=True) < with_prior
    monkeypatch.setattr(memory, "rss_kb", lambda: 0)
    need = [memory.estimate_bytes((64, 64), "fnin", True, 64 * 64, 1, p) for p in (False, True)]
    monkeypatch.setattr(memory, "available_memory", lambda: (need[0] + need[1]) // 2)
    memory.check_memory((64, 64), "fnin", "m.png", True, 1, pixels=64 * 64)          # fits without
    with pytest.raises(FninError) as err:
        memory.check_memory((64, 64), "fnin", "m.png", True, 1, pixels=64 * 64, prior=True)
    assert "and a depth prior" in err.value.message
    # the CLI (a depth map out: no mesh): a folder with a prior beside its map is refused
    # where the same without it runs
    need = [memory.estimate_bytes((64, 64), "fnin", False, 64 * 64, 1, p) for p in (False, True)]
    monkeypatch.setattr(memory, "available_memory", lambda: (need[0] + need[1]) // 2)
    case = tmp_path / "case"
    case.mkdir()
    normals = np.dstack([np.zeros((64, 64, 2)), -np.ones((64, 64, 1))]).astype(np.float32)
    io.write_normal_map(case / "normal_map.png", normals, force=True)
    io.write_png(case / "mask.png", np.full((64, 64), 255, np.uint8))
    r = invoke(["integrate", str(case), "-o", str(tmp_path / "a.npy"), "--pixel-size", "1"])
    assert r.exit_code == 0, r.output
    np.save(case / "depth_prior.npy", np.tile(np.linspace(1.0, 2.0, 64, dtype=np.float32), (64, 1)))
    r = invoke(["integrate", str(case), "-o", str(tmp_path / "b.npy"), "--pixel-size", "1"])
    assert r.exit_code != 0 and "and a depth prior" in r.output and not (tmp_path / "b.npy").exists()
