"""The decoding check: integrability / facing / unit-length scores pick the right decoding."""

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.conventions import from_internal, normalise
from fnin_cli.errors import FninError
from fnin_cli.checks import (
    Decoding,
    check_decoding,
    check_invalid,
    decode,
    integrability_score,
    invalid_report,
)

from helpers import gaussian_bumps

H, W = 192, 256
K = np.array([[300.0, 0, 120.0], [0, 310.0, 100.0], [0, 0, 1]])


def _bumps(u, v):
    """Asymmetric surface (units of pixels) and its derivatives."""
    return gaussian_bumps(u, v, ((40.0, 80, 60, 25.0), (-25.0, 170, 130, 30.0), (15.0, 200, 40, 18.0)))


def surface_normals(kind="bumps", perspective=False):
    """Exact internal-frame normals (H, W, 3) and mask of an analytic surface."""
    v, u = np.mgrid[0:H, 0:W].astype(np.float64)
    mask = np.ones((H, W), bool)
    if kind == "bumps":
        z, zu, zv = _bumps(u, v)
    elif kind == "plane":
        z, zu, zv = 0.3 * u - 0.2 * v, np.full_like(u, 0.3), np.full_like(u, -0.2)
    elif kind == "sphere":
        R = 80.0
        d2 = (u - (W - 1) / 2) ** 2 + (v - (H - 1) / 2) ** 2
        mask = d2 < (0.95 * R) ** 2
        zs = np.sqrt(np.maximum(R * R - d2, 1.0))
        z, zu, zv = -zs, (u - (W - 1) / 2) / zs, (v - (H - 1) / 2) / zs
    if not perspective:
        n = np.stack([zu, zv, -np.ones_like(u)], -1)
    else:
        # depth D = 200 + z/3 in scene units; l = ln D; normal of X = D K^-1 (u, v, 1)
        D, Du, Dv = 200.0 + z / 3, zu / 3, zv / 3
        fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
        r = np.stack([(u - cx) / fx, (v - cy) / fy, np.ones_like(u)], -1)
        Xu = Du[..., None] * r + D[..., None] * np.array([1 / fx, 0, 0])
        Xv = Dv[..., None] * r + D[..., None] * np.array([0, 1 / fy, 0])
        n = np.cross(Xv, Xu)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return n.astype(np.float64), mask


def encode_png(n, bits=16, convention="ps"):
    f = from_internal(n, convention)
    top = 2**bits - 1
    return np.round((f + 1) / 2 * top).astype(np.uint16 if bits == 16 else np.uint8)


def cam(perspective):
    return Camera(K) if perspective else Camera()


def recovered(chk, raw, bd):
    return normalise(chk.decode(raw, bd))[0]


@pytest.fixture(scope="module", params=[False, True], ids=["ortho", "persp"])
def bumps(request):
    n, mask = surface_normals("bumps", request.param)
    return n, mask, cam(request.param)


def test_correct_encodings_accepted(bumps):
    n, mask, c = bumps
    for raw, bd in ((encode_png(n), 16), (encode_png(n, 8), 8), (from_internal(n, "ps").astype(np.float32), None)):
        chk = check_decoding(raw, bd, mask, c, mode="strict")
        assert not chk.changed and chk.confident and chk.message == ""
        assert chk.chosen == Decoding() and chk.scores["ps"] < 0.15
    raw = from_internal(n, "opencv").astype(np.float32)
    chk = check_decoding(raw, None, mask, c, convention="opencv", mode="strict")
    assert not chk.changed
    raw = encode_png(n, 16, "directx")
    chk = check_decoding(raw, 16, mask, c, convention="directx", mode="strict")
    assert not chk.changed


def _mis_encodings(n):
    png = encode_png(n)
    g = png.copy(); g[..., 1] = 65535 - g[..., 1]
    z = png.copy(); z[..., 2] = 65535 - z[..., 2]
    half = ((from_internal(n, "ps") + 1) / 2).astype(np.float32)
    return {
        # the fixes as a Python caller reads them (the command line's: test_decoding_cli.py)
        "green-down": (g, 16, "directx", 'convention="directx"'),
        "bgr": (np.ascontiguousarray(png[..., ::-1]), 16, "ps/bgr", 'channels="bgr"'),
        "half": (half, None, "ps/half", 'float_encoding="half"'),
        "zflip": (z, 16, "custom(+1,-1,+1)", "flip z"),
        "opencv": (from_internal(n, "opencv").astype(np.float32), None, "opencv", 'convention="opencv"'),
        "bgr+green-down": (np.ascontiguousarray(g[..., ::-1]), 16, "directx/bgr", 'convention="directx", channels="bgr"'),
    }


@pytest.mark.parametrize("name", ["green-down", "bgr", "half", "zflip", "opencv", "bgr+green-down"])
def test_mis_encoding_detected_and_fixed(bumps, name):
    n, mask, c = bumps
    raw, bd, expect, fix = _mis_encodings(n)[name]
    chk = check_decoding(raw, bd, mask, c, mode="auto")
    assert chk.changed and chk.confident and chk.chosen.name == expect, (chk.scores, chk.reason)
    assert "normals look" in chk.message and "\n" not in chk.message
    np.testing.assert_allclose(recovered(chk, raw, bd), n, atol=1e-4)
    with pytest.raises(FninError, match=fix):
        check_decoding(raw, bd, mask, c, mode="strict", source="x.png")


def test_messages_name_the_option(bumps):
    n, mask, c = bumps
    raw, bd, *_ = _mis_encodings(n)["green-down"]
    chk = check_decoding(raw, bd, mask, c)
    assert chk.message.startswith("normals look green-down (y flipped); decoding them as --convention directx")
    with pytest.raises(FninError) as e:
        check_decoding(raw, bd, mask, c, mode="strict", source="x.png")
    # a Python caller reads the Python arguments (issue 32)
    assert 'pass convention="directx" (or convention="auto")' in str(e.value) and str(e.value).startswith("x.png: ")
    raw, bd, *_ = _mis_encodings(n)["bgr"]
    with pytest.raises(FninError, match=r'BGR, as cv2.imwrite writes\): pass channels="bgr"'):
        check_decoding(raw, bd, mask, c, mode="strict")
    assert check_decoding(raw, bd, mask, c).as_dict()["channels"] == "bgr"


@pytest.mark.parametrize("perspective", [False, True])
@pytest.mark.parametrize("kind", ["plane", "sphere"])
def test_symmetric_or_planar_accepted_as_given(kind, perspective):
    n, mask = surface_normals(kind, perspective)
    raw = encode_png(n)
    chk = check_decoding(raw, 16, mask, cam(perspective), mode="strict")
    assert not chk.changed
    if kind == "plane":
        g = raw.copy(); g[..., 1] = 65535 - g[..., 1]
        chk = check_decoding(g, 16, mask, cam(perspective), mode="auto")
        if perspective:  # log-depth of a tilted plane has a mixed derivative: a flip is visible
            assert not chk.changed or chk.chosen.name == "directx"
        else:  # a y-flipped plane is a plane: cannot tell, keep the given one
            assert not chk.changed and not chk.confident


def test_tiny_input_accepted():
    n, _ = surface_normals("bumps")
    small = n[50:80, 60:90]
    raw = encode_png(small)
    raw[..., 1] = 65535 - raw[..., 1]  # even mis-encoded: too small to tell
    chk = check_decoding(raw, 16, np.ones(small.shape[:2], bool), Camera(), mode="strict")
    assert not chk.changed and not chk.confident


@pytest.mark.parametrize("perspective", [False, True])
def test_noise_and_quantisation_no_false_alarm(perspective):
    n, mask = surface_normals("bumps", perspective)
    rng = np.random.default_rng(0)
    for kind in ("sphere", "plane", "bumps"):
        n, mask = surface_normals(kind, perspective)
        noisy = n + rng.normal(0, np.deg2rad(2.0), n.shape)
        noisy /= np.linalg.norm(noisy, axis=-1, keepdims=True)
        for bits in (8, 16):
            chk = check_decoding(encode_png(noisy, bits), bits, mask, cam(perspective), mode="strict")
            assert not chk.changed
        chk = check_decoding(from_internal(noisy, "ps").astype(np.float32), None, mask, cam(perspective),
                             mode="strict")
        assert not chk.changed
    # and a noisy green-down map is still caught
    n, mask = surface_normals("bumps", perspective)
    noisy = n + rng.normal(0, np.deg2rad(2.0), n.shape)
    g = encode_png(noisy / np.linalg.norm(noisy, axis=-1, keepdims=True), 8)
    g[..., 1] = 255 - g[..., 1]
    assert check_decoding(g, 8, mask, cam(perspective)).chosen.name == "directx"


def test_score_range(bumps):
    n, mask, c = bumps
    assert integrability_score(n, mask, c) < 0.15
    assert integrability_score(n * np.array([1, -1, 1]), mask, c) > 0.7


def test_no_mask_and_nan_background():
    n, mask = surface_normals("sphere")
    raw = from_internal(n, "ps").astype(np.float32)
    raw[~mask] = np.nan
    raw[..., 1] *= -1  # green-down float
    chk = check_decoding(raw, None, None, Camera())
    assert chk.chosen.name == "directx"
    assert decode(raw, None, chk.chosen)[mask].shape == (mask.sum(), 3)


# ------------------------------------------------------------------ invalid pixels

def test_invalid_report_counts_and_causes():
    n, mask = surface_normals("bumps")
    rep = invalid_report(n, mask)
    assert rep.ok and rep.masked == mask.sum() and rep.message == ""
    bad = n.copy()
    bad[:20] = np.nan
    rep = invalid_report(bad, mask)
    assert not rep.ok and rep.nonfinite == 20 * W and "NaN" in rep.message
    bad = n.copy()
    bad[:20] = 0
    rep = invalid_report(bad, mask)
    assert not rep.ok and "zero" in rep.message and "mask is larger" in rep.message
    half = ((from_internal(n, "ps") + 1) / 2).astype(np.float32)
    rep = invalid_report(half, mask, raw=half, is_float=True)
    assert not rep.ok and "(n+1)/2" in rep.message and "--float-encoding half" in rep.message
    bad = n.copy()
    bad[:2] = np.nan  # 1 % : under the 2 % threshold
    assert invalid_report(bad, mask).ok
    with pytest.raises(FninError, match="allow_invalid=True"):
        check_invalid(half, mask)
    assert check_invalid(half, mask, allow=True).fraction > 0.2
    rep = check_invalid(np.where(mask[..., None], n, np.nan), None)
    assert rep.ok
