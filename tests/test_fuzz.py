"""Property tests: whatever bytes or arrays users feed in, only FninError comes out.

Random arrays of every dtype and shape are written as .npy/.png/.exr/.tif, random
bytes are written under every suffix (with and without the right magic number), and
random normals/masks/intrinsics go into build_input; readers, loaders and the
integrator must either succeed with sane output or raise FninError.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fnin_cli import FninError, io
from fnin_cli.io.formats import probe_shape
from fnin_cli.pipeline import build_input, integrate, load_input

# FNIN_FUZZ_EXAMPLES=500 for a longer hunt; the default keeps the suite fast
FUZZ = settings(max_examples=int(os.environ.get("FNIN_FUZZ_EXAMPLES", "40")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

DTYPES = [np.uint8, np.uint16, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64, np.bool_]
MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".npy": b"\x93NUMPY\x01\x00", ".exr": b"v/1\x01", ".tif": b"II*\x00",
         ".tiff": b"MM\x00*"}


def _try(fn, *args, **kw):
    """Run fn; FninError is an allowed outcome (returns None), anything else fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kw)
        except FninError as exc:
            assert exc.message and "\n" not in exc.message, repr(exc.message)
            return None


def _check_result(inp):
    res = _try(integrate, inp, method="wls")
    if res is None:
        return
    assert res.depth.shape == inp.shape and res.depth.dtype == np.float32
    assert np.isfinite(res.depth[res.mask]).all()
    assert np.isnan(res.depth[~res.mask]).all()


def _load_everything(path, tmp_path):
    _try(io.read_array, path)
    _try(io.read_mask, path, (4, 4))
    probe_shape(path)  # never raises
    inp = _try(load_input, path)
    if inp is not None:
        assert inp.normals.shape == inp.shape + (3,) and inp.mask.any()
        _check_result(inp)


def _arrays(dtypes, min_dims=1, max_dims=4, min_side=0, max_side=6):
    return st.sampled_from(dtypes).flatmap(lambda dt: hnp.arrays(
        dt, hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side),
        elements=_elements(dt)))


def _elements(dt):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return st.floats(allow_nan=True, allow_infinity=True, width=dt.itemsize * 8)
    return None  # hypothesis' default covers the full integer / bool range


@st.composite
def _normalish(draw):
    """Normal-map-like (H, W, 3) arrays: unit normals in the file convention, with some
    pixels replaced by NaN, inf, zeros or junk."""
    h, w = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    n = draw(_unit_normals(h, w))
    n = n * np.array([1, -1, -1], np.float32)  # internal -> 'ps' file convention
    bad = draw(hnp.arrays(np.uint8, (h, w), elements=st.integers(0, 9)))
    junk = np.array([np.nan, np.inf, 0.0, 5.0], np.float32)
    for code in range(4):
        n[bad == code] = junk[code]
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16]))
    return n.astype(dtype)


@FUZZ
@given(arr=st.one_of(_arrays(DTYPES, min_dims=0), _normalish()))
def test_random_npy_arrays(tmp_path, arr):
    path = tmp_path / "n.npy"
    np.save(path, arr)
    _load_everything(path, tmp_path)


@FUZZ
@given(arr=_arrays([np.uint8, np.uint16], min_dims=2, max_dims=3, min_side=1, max_side=8)
       .filter(lambda a: a.ndim == 2 or a.shape[2] <= 4))
def test_random_png_images(tmp_path, arr):
    path = tmp_path / "n.png"
    io.write_png(path, arr)
    _load_everything(path, tmp_path)


@FUZZ
@given(arr=_arrays([np.float32], min_dims=2, max_dims=3, min_side=1, max_side=8)
       .filter(lambda a: a.ndim == 2 or a.shape[2] in (1, 3)))
def test_random_exr_images(tmp_path, arr):
    path = tmp_path / "n.exr"
    io.formats._write_exr(path, {"RGB": arr} if arr.ndim == 3 and arr.shape[2] == 3 else {"Z": arr.reshape(arr.shape[:2])})
    _load_everything(path, tmp_path)


@FUZZ
@given(arr=_arrays([np.uint8, np.uint16, np.float32, np.float64, np.int32], min_dims=1, max_dims=4, min_side=1))
def test_random_tiff_images(tmp_path, arr):
    import tifffile

    path = tmp_path / "n.tif"
    try:
        tifffile.imwrite(path, arr)
    except Exception:  # shapes tifffile itself cannot store are not our concern
        return
    _load_everything(path, tmp_path)


@FUZZ
@given(suffix=st.sampled_from([".png", ".npy", ".exr", ".tif", ".tiff"]), magic=st.booleans(),
       data=st.binary(min_size=0, max_size=600))
def test_random_bytes(tmp_path, suffix, magic, data):
    path = tmp_path / f"n{suffix}"
    path.write_bytes((MAGIC[suffix] if magic else b"") + data)
    _load_everything(path, tmp_path)


@FUZZ
@given(text=st.text(max_size=200))
def test_random_intrinsics_text(tmp_path, text):
    path = tmp_path / "K.txt"
    path.write_text(text, encoding="utf-8")
    K = _try(io.read_K, path)
    if K is not None:
        assert K.shape == (3, 3)
        normals = np.zeros((6, 6, 3), np.float32)
        normals[..., 2] = -1
        _try(build_input, normals, K=path)


@st.composite
def _unit_normals(draw, h, w, grazing=False):
    xy = draw(hnp.arrays(np.float64, (h, w, 2), elements=st.floats(-0.7, 0.7)))
    z = -np.sqrt(np.clip(1 - (xy ** 2).sum(-1), 1e-12, None))
    if grazing:  # n_z ~ 0: the residual form must not divide by it
        z = z * 1e-9
    return np.concatenate([xy, z[..., None]], -1).astype(np.float32)


@st.composite
def _normal_maps(draw):
    h = draw(st.integers(1, 7))
    w = draw(st.integers(1, 7))
    kind = draw(st.sampled_from(["random", "facing", "facing", "grazing"]))
    if kind == "random":
        return draw(hnp.arrays(np.float32, (h, w, 3), elements=st.floats(allow_nan=True, allow_infinity=True,
                                                                          width=32)))
    return draw(_unit_normals(h, w, grazing=kind == "grazing"))


@st.composite
def _cameras(draw, shape):
    kind = draw(st.sampled_from(["none", "good", "good", "random", "wrong-shape", "pixel-size"]))
    h, w = shape
    if kind == "good":
        f = draw(st.floats(0.1, 1e5))
        return {"K": np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1.0]])}
    if kind == "random":
        return {"K": draw(hnp.arrays(np.float64, (3, 3), elements=st.floats(allow_nan=True, allow_infinity=True)))}
    if kind == "wrong-shape":
        return {"K": draw(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=st.floats(-5, 5)))}
    if kind == "pixel-size":
        return {"pixel_size": draw(st.floats(allow_nan=True, allow_infinity=True))}
    return {}


@FUZZ
@given(data=st.data())
def test_random_build_input(data):
    normals = data.draw(_normal_maps())
    shape = normals.shape[:2]
    mask = data.draw(st.one_of(
        st.none(),
        st.none(),
        hnp.arrays(np.bool_, shape),
        hnp.arrays(np.bool_, hnp.array_shapes(min_dims=2, max_dims=2, max_side=7)),
    ))
    cam = data.draw(_cameras(shape))
    inp = _try(build_input, normals, mask=mask, **cam)
    if inp is not None:
        assert inp.mask.any() and np.isfinite(inp.normals[inp.mask]).all()
        _check_result(inp)


@pytest.mark.parametrize("convention", ["ps", "opencv", "directx"])
def test_fuzz_found_nothing_convention_roundtrip(tmp_path, convention):
    """Not random: a valid map in each convention loads (guards the fuzz helpers too)."""
    from fnin_cli.conventions import from_internal

    n = np.zeros((6, 6, 3), np.float32)
    n[..., 2] = -1
    np.save(tmp_path / "n.npy", from_internal(n, convention))
    inp = load_input(tmp_path / "n.npy", convention=convention)
    assert inp.mask.all()
    _check_result(inp)
