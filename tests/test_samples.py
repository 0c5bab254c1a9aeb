"""The committed samples/ are exactly what scripts/make_samples.py generates, and sane."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from fnin_cli import io
from fnin_cli.camera import normals_from_depth
from fnin_cli.pipeline import integrate, load_input

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
NAMES = ("dome", "flutes", "hill")


def _script():
    spec = importlib.util.spec_from_file_location("make_samples", REPO / "scripts" / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_committed_samples_match_the_generator(tmp_path):
    written = _script().make_samples(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == _files(tmp_path)
    assert _files(tmp_path) == _files(SAMPLES)
    for rel in _files(SAMPLES):
        ours, fresh = SAMPLES / rel, tmp_path / rel
        if rel.endswith(".npz"):
            with np.load(ours) as a, np.load(fresh) as b:
                assert a.files == b.files == ["depth_gt"]
                assert np.array_equal(a["depth_gt"], b["depth_gt"], equal_nan=True), rel
        elif rel.endswith(".txt"):
            assert ours.read_text() == fresh.read_text(), rel
        else:  # images: compare decoded pixels (PNG/EXR compressors may differ by version)
            (a, da), (b, db) = io.read_array(ours), io.read_array(fresh)
            assert da == db and a.dtype == b.dtype, rel
            assert np.array_equal(a, b, equal_nan=True), rel


def test_generator_refuses_to_overwrite_without_force(tmp_path):
    script = _script()
    script.make_samples(tmp_path)
    with pytest.raises(Exception, match="exists"):
        script.make_samples(tmp_path)
    script.make_samples(tmp_path, force=True)


@pytest.mark.parametrize("name", NAMES)
def test_sample_is_small_loadable_and_consistent(name):
    folder = SAMPLES / name
    assert all(p.stat().st_size < 1_000_000 for p in folder.iterdir())
    inp = load_input(folder)
    assert inp.camera.perspective == (folder / "K.txt").exists() == (name != "hill")
    assert not inp.warnings
    suffix = ".exr" if name == "flutes" else ".png"
    _, bitdepth = io.read_array(folder / f"normal_map{suffix}")
    assert bitdepth == (None if suffix == ".exr" else 16)
    gt = np.load(folder / "depth_gt.npz")["depth_gt"]
    assert gt.dtype == np.float32 and gt.shape == inp.shape == (192, 256)
    assert np.array_equal(np.isfinite(gt), inp.mask)
    assert np.all(inp.normals[inp.mask][:, 2] < 0)
    # the normals are those of depth_gt: compare with central differences wherever the
    # 3x3 neighbourhood is inside the mask (all but creases and jumps agree to < 0.1 deg)
    fd = normals_from_depth(gt.astype(np.float64), inp.camera)
    inner = inp.mask.copy()
    for dv in (-1, 0, 1):
        for du in (-1, 0, 1):
            inner &= np.roll(inp.mask, (dv, du), axis=(0, 1))
    inner[[0, -1], :] = inner[:, [0, -1]] = False
    angle = np.degrees(np.arccos(np.clip(np.sum(fd * inp.normals, -1)[inner], -1, 1)))
    assert np.percentile(angle, 95) < 0.1
    assert np.mean(angle < 1.0) > 0.97
    # and there is a real depth jump somewhere: far above the pixel footprint
    footprint = gt / inp.camera.focal if inp.camera.perspective else np.ones_like(gt)
    jump = np.abs(np.diff(gt, axis=1)) / np.minimum(footprint[:, 1:], footprint[:, :-1])
    assert np.nanmax(jump) > 20


def test_flutes_discontinuities_matter():
    """BiNI (discontinuity-aware) beats smooth WLS clearly on the flutes sample."""
    folder = SAMPLES / "flutes"
    inp = load_input(folder)
    gt = np.load(folder / "depth_gt.npz")["depth_gt"].astype(np.float64)
    made = {}
    for method in ("wls", "bini"):
        est = integrate(inp, method=method).depth.astype(np.float64)
        m = inp.mask
        made[method] = np.mean(np.abs(np.median(gt[m] / est[m]) * est[m] - gt[m]))
    assert made["bini"] < 0.5 * made["wls"], made
