"""Readers and writers round-trip; file conventions map to the internal frame both ways."""

import os
import struct

import numpy as np
import pytest
from helpers import SHAPE, assert_equal_up_to, camera, smooth_surface

from fnin_cli.data import analytic
from fnin_cli import conventions, io
from fnin_cli.camera import Camera
from fnin_cli.errors import FninError
from fnin_cli.pipeline import build_input, integrate, load_input


@pytest.fixture
def sphere():
    """Internal-frame unit normals of a sphere cap (NaN outside), its support and K."""
    cam = camera("persp")
    s = smooth_surface("sphere", cam)
    return s.normals.astype(np.float32), s.support, cam.K


def nan_equal(a, b):
    return np.array_equal(a, b, equal_nan=True)


# ---------------------------------------------------------------- normal maps

@pytest.mark.filterwarnings("ignore::fnin_cli.errors.FninWarning")  # fnin's own (NaN background), by design
@pytest.mark.filterwarnings("error")  # regression: tifffile's "stored as MINISBLACK" warning
@pytest.mark.parametrize("suffix", [".exr", ".npy", ".tif", ".tiff"])
def test_float_normal_map_round_trip(tmp_path, sphere, suffix):
    normals, support, K = sphere
    path = io.write_normal_map(tmp_path / f"n{suffix}", normals)
    raw, bitdepth = io.read_array(path)
    assert bitdepth is None and raw.dtype == np.float32
    # the file holds n in the ps convention, NaN where invalid, bit for bit
    assert nan_equal(raw, conventions.from_internal(normals, "ps"))
    inp = load_input(path, K=K)
    assert np.array_equal(inp.mask, support)
    np.testing.assert_allclose(inp.normals[support], normals[support], atol=1e-6)


@pytest.mark.parametrize("bits,tol", [(16, 5e-5), (8, 1e-2)])
def test_png_normal_map_round_trip(tmp_path, sphere, bits, tol):
    normals, support, K = sphere
    path = io.write_normal_map(tmp_path / "n.png", normals, bits=bits)
    raw, bitdepth = io.read_array(path)
    maxval = 2 ** bits - 1
    assert bitdepth == bits and raw.dtype == (np.uint16 if bits == 16 else np.uint8)
    assert raw.shape == SHAPE + (3,)
    ps = conventions.from_internal(normals, "ps")
    np.testing.assert_array_equal(raw[support], np.round((ps[support] + 1) / 2 * maxval))
    assert np.all(raw[~support] == maxval)  # background white, as in DiLiGenT
    inp = load_input(path, K=K)
    assert np.array_equal(inp.mask, support)  # white (length sqrt 3) is rejected as invalid
    err = np.abs(inp.normals[support] - normals[support]).max()
    assert err <= tol
    assert any("8-bit" in w for w in inp.warnings) == (bits == 8)


def test_16bit_rgb_png_is_exact(tmp_path, rng):
    """pypng keeps all 16 bits of RGB (Pillow, imageio's default, reads them as 8 bits)."""
    arr = rng.integers(0, 65536, size=(7, 5, 3), dtype=np.uint16)
    arr[0, 0] = (1, 257, 65534)  # values an 8-bit detour would destroy
    io.write_png(tmp_path / "x.png", arr)
    head = (tmp_path / "x.png").read_bytes()[16:26]
    width, height, bit_depth, colour_type = struct.unpack(">IIBB", head)
    assert (width, height, bit_depth, colour_type) == (5, 7, 16, 2)  # IHDR: 16-bit truecolour
    back, bitdepth = io.read_array(tmp_path / "x.png")
    assert bitdepth == 16 and back.dtype == np.uint16
    np.testing.assert_array_equal(back, arr)


def test_rgba_normal_map_uses_rgb(tmp_path, sphere):
    normals, support, K = sphere
    ps = conventions.from_internal(normals, "ps")
    enc = np.round((np.nan_to_num(ps, nan=1.0) + 1) / 2 * 65535).astype(np.uint16)
    alpha = np.where(support, 65535, 0).astype(np.uint16)[..., None]
    io.write_png(tmp_path / "n.png", np.concatenate([enc, alpha], -1))
    inp = load_input(tmp_path / "n.png", K=K)
    assert np.array_equal(inp.mask, support)
    np.testing.assert_allclose(inp.normals[support], normals[support], atol=5e-5)


def test_folder_layout_perspective_and_orthographic(tmp_path, sphere):
    normals, support, K = sphere
    folder = tmp_path / "obj"
    folder.mkdir()
    io.write_normal_map(folder / "normal_map.png", normals)
    mask = support.copy()
    mask[:, :10] = False
    io.write_png(folder / "mask.png", (mask * 255).astype(np.uint8))
    inp = load_input(folder)
    assert not inp.camera.perspective  # no K.txt: orthographic
    assert np.array_equal(inp.mask, mask)
    np.savetxt(folder / "K.txt", K)
    inp = load_input(folder)
    assert inp.camera.perspective
    np.testing.assert_array_equal(inp.camera.K, K)
    assert np.array_equal(inp.mask, mask)
    assert not load_input(folder, ortho=True).camera.perspective


# ---------------------------------------------------------------- depth maps

@pytest.fixture
def depth():
    d = np.linspace(1.5, 2.5, SHAPE[0] * SHAPE[1], dtype=np.float32).reshape(SHAPE)
    d[:3, :4] = np.nan
    return d


@pytest.mark.parametrize("suffix", [".exr", ".npy", ".tif", ".tiff"])
def test_depth_float_formats_are_exact(tmp_path, depth, suffix):
    path = io.write_array(tmp_path / f"d{suffix}", depth)
    back, bitdepth = io.read_array(path)
    assert bitdepth is None and back.dtype == np.float32 and back.shape == SHAPE
    assert nan_equal(back, depth)


def test_depth_png_is_16bit_quantised(tmp_path, depth):
    path = io.write_array(tmp_path / "d.png", depth)
    back, bitdepth = io.read_array(path)
    assert bitdepth == 16 and back.dtype == np.uint16
    finite = np.isfinite(depth)
    assert np.all(back[~finite] == 0) and np.all(back[finite] >= 1)
    lo, hi = np.nanmin(depth), np.nanmax(depth)
    recon = lo + (back[finite].astype(np.float64) - 1) / 65534 * (hi - lo)
    assert np.abs(recon - depth[finite]).max() <= 0.5 * (hi - lo) / 65534 + 1e-7
    assert back[finite].min() == 1 and back[finite].max() == 65535


def test_pipeline_depth_survives_exr(tmp_path, sphere):
    normals, support, K = sphere
    res = integrate(build_input(normals, K=K), method="wls")
    back, _ = io.read_array(io.write_array(tmp_path / "depth.exr", res.depth))
    assert nan_equal(back, res.depth)
    assert np.array_equal(np.isfinite(back), res.mask)


def test_writers_refuse_to_clobber_and_leave_no_temp_files(tmp_path, depth):
    path = io.write_array(tmp_path / "d.npy", depth)
    with pytest.raises(FninError, match="exists"):
        io.write_array(path, depth * 2)
    assert nan_equal(np.load(path), depth)
    io.write_array(path, depth * 2, force=True)
    assert nan_equal(np.load(path), depth * 2)
    with pytest.raises(FninError, match="unknown output type"):
        io.write_array(tmp_path / "d.jpg", depth)
    assert sorted(os.listdir(tmp_path)) == ["d.npy"]


# ---------------------------------------------------------------- masks

def test_mask_formats(tmp_path, rng):
    mask = rng.uniform(size=SHAPE) > 0.4
    io.write_png(tmp_path / "m8.png", (mask * 255).astype(np.uint8))
    io.write_png(tmp_path / "m16.png", (mask * 65535).astype(np.uint16))
    np.save(tmp_path / "mb.npy", mask)
    rgba = np.zeros(SHAPE + (4,), np.uint8)
    rgba[..., 3] = mask * 255  # object in the alpha channel, colour all black
    io.write_png(tmp_path / "ma.png", rgba)
    for name in ("m8.png", "m16.png", "mb.npy", "ma.png"):
        back = io.read_mask(tmp_path / name, SHAPE)
        assert back.dtype == np.bool_
        np.testing.assert_array_equal(back, mask, err_msg=name)


def test_mask_of_wrong_size_is_refused(tmp_path):
    io.write_png(tmp_path / "m.png", np.zeros((5, 6), np.uint8))
    with pytest.raises(FninError, match="mask is 6x5 but the normal map is 8x4"):
        io.read_mask(tmp_path / "m.png", (4, 8))


# ---------------------------------------------------------------- intrinsics

def test_K_round_trip_and_validation(tmp_path):
    K = np.array([[3772.077471010729823, 0.0, 305.875], [0.0, 3759.005431071329895, 255.125], [0.0, 0.0, 1.0]])
    np.savetxt(tmp_path / "K.txt", K)
    back = io.read_K(tmp_path / "K.txt")
    np.testing.assert_array_equal(back, K)
    Camera(back).validate((512, 612))
    with pytest.raises(FninError, match="transposed"):
        Camera(back.T.copy()).validate((512, 612))
    np.savetxt(tmp_path / "bad.txt", K[:2])
    with pytest.raises(FninError, match="3x3"):
        io.read_K(tmp_path / "bad.txt")
    (tmp_path / "junk.txt").write_text("fx fy\n")
    with pytest.raises(FninError, match="cannot parse"):
        io.read_K(tmp_path / "junk.txt")


# ---------------------------------------------------------------- conventions

# the same physical directions written in each file convention -> internal (OpenCV)
DIRECTIONS = {
    #            right          up               toward viewer
    "ps":      [(1, 0, 0),     (0, 1, 0),       (0, 0, 1)],
    "opencv":  [(1, 0, 0),     (0, -1, 0),      (0, 0, -1)],
    "directx": [(1, 0, 0),     (0, -1, 0),      (0, 0, 1)],
}
INTERNAL = [(1, 0, 0), (0, -1, 0), (0, 0, -1)]  # right, up (y is down), toward the camera


@pytest.mark.parametrize("name", sorted(DIRECTIONS))
def test_conventions_map_physical_directions(name):
    file_vecs = np.array(DIRECTIONS[name], np.float32)
    np.testing.assert_array_equal(conventions.to_internal(file_vecs, name), np.array(INTERNAL, np.float32))
    np.testing.assert_array_equal(conventions.from_internal(np.array(INTERNAL, np.float32), name), file_vecs)


@pytest.mark.parametrize("name", list(conventions.CONVENTIONS) + ["PS", "OpenCV"])
def test_conventions_round_trip_both_ways(name, rng):
    v = rng.normal(size=(10, 3)).astype(np.float32)
    np.testing.assert_array_equal(conventions.from_internal(conventions.to_internal(v, name), name), v)
    np.testing.assert_array_equal(conventions.to_internal(conventions.from_internal(v, name), name), v)


def test_convention_aliases_and_unknown():
    v = np.array([[0.1, 0.2, -0.9]])
    for alias, target in (("opengl", "ps"), ("green-up", "ps"), ("green-down", "directx"), ("cv", "opencv")):
        np.testing.assert_array_equal(conventions.to_internal(v, alias), conventions.to_internal(v, target))
    with pytest.raises(FninError, match="unknown normal convention"):
        conventions.to_internal(v, "blender")


def test_decode_colour_code():
    vals = np.array([[[0, 32767.5, 65535]]])
    np.testing.assert_allclose(conventions.decode(vals.round().astype(np.uint16), 16)[0, 0],
                               [-1.0, 0.0, 1.0], atol=2e-5)
    np.testing.assert_allclose(conventions.decode(np.array([[[0, 255, 128]]], np.uint8), 8)[0, 0],
                               [-1.0, 1.0, 128 * 2 / 255 - 1], atol=1e-6)


def test_ps_file_of_a_plane_facing_down_and_its_depth(tmp_path):
    """A plane whose lower rows are farther faces downward: in a ps file (y up) its
    green channel is below mid-grey. Read with the right convention it integrates to
    that plane; with directx (green down) the slope flips; with opencv (z away from
    the viewer) the normals face away and loading fails with a hint."""
    cam = camera("persp")
    surface = analytic.plane(SHAPE, cam, normal=[0.0, 0.5, -1.0], point=[0.0, 0.0, 10.0])
    assert np.all(np.diff(surface.depth, axis=0) > 0)
    path = io.write_normal_map(tmp_path / "plane.png", surface.normals.astype(np.float32))
    raw, _ = io.read_array(path)
    assert np.all(raw[..., 1] < 32768) and np.all(raw[..., 2] > 32768)  # G: down, B: toward viewer
    res = integrate(load_input(path, K=cam.K, convention="ps"), method="wls")
    assert_equal_up_to(res.depth, surface.depth, res.mask, "scale")
    flipped = integrate(load_input(path, K=cam.K, convention="directx"), method="wls")
    assert np.all(np.diff(flipped.depth, axis=0) < 0)
    with pytest.raises(FninError, match='face away.*convention="'):
        load_input(path, K=cam.K, convention="opencv")
