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
    given_decoding,
    integrability_score,
    invalid_report,
)

from fnin_cli.checks.cues import fine_cells, fine_score
from helpers import gaussian_bumps, plant_normals

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
    elif kind == "blob":
        # an asymmetric bumpy ellipsoid whose mask is its silhouette: the normals turn
        # outward (66 degrees) at the mask's outline, as at an occluding contour
        a, b, height, cu, cv = 90.0, 70.0, 60.0, 120.0, 95.0
        rho2 = ((u - cu) / a) ** 2 + ((v - cv) / b) ** 2
        mask = rho2 < 0.96 ** 2
        root = np.sqrt(np.maximum(1.0 - rho2, 1e-3))
        g, gu, gv = gaussian_bumps(u, v, ((12.0, 150, 80, 15.0), (-8.0, 100, 120, 12.0)))
        z = g - height * root
        zu = gu + height * (u - cu) / (a * a * root)
        zv = gv + height * (v - cv) / (b * b * root)
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
    """A surface filling the frame: no object outline in its mask."""
    n, mask = surface_normals("bumps", request.param)
    return n, mask, cam(request.param)


@pytest.fixture(scope="module", params=[False, True], ids=["ortho", "persp"])
def blob(request):
    """An object whose mask is its silhouette."""
    n, mask = surface_normals("blob", request.param)
    return n, mask, cam(request.param)


@pytest.mark.parametrize("kind", ["bumps", "blob"])
def test_correct_encodings_accepted(kind):
    for perspective in (False, True):
        n, mask = surface_normals(kind, perspective)
        c = cam(perspective)
        for raw, bd in ((encode_png(n), 16), (encode_png(n, 8), 8), (from_internal(n, "ps").astype(np.float32), None)):
            chk = check_decoding(raw, bd, mask, c, mode="strict")
            assert not chk.changed and chk.confident and chk.message == "" and chk.warning == ""
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
    x = png.copy(); x[..., 0] = 65535 - x[..., 0]
    half = ((from_internal(n, "ps") + 1) / 2).astype(np.float32)
    return {
        # the fixes as a Python caller reads them (the command line's: test_decoding_cli.py)
        "green-down": (g, 16, "directx", 'convention="directx"'),
        "bgr": (np.ascontiguousarray(png[..., ::-1]), 16, "ps/bgr", 'channels="bgr"'),
        "half": (half, None, "ps/half", 'float_encoding="half"'),
        "zflip": (z, 16, "ps/flip-z", 'flip="z"'),
        "xflip": (x, 16, "ps/flip-x", 'flip="x"'),
        "opencv": (from_internal(n, "opencv").astype(np.float32), None, "opencv", 'convention="opencv"'),
        "bgr+green-down": (np.ascontiguousarray(g[..., ::-1]), 16, "directx/bgr", 'convention="directx", channels="bgr"'),
    }


@pytest.mark.parametrize("name", ["green-down", "bgr", "half", "zflip", "xflip", "opencv", "bgr+green-down"])
def test_mis_encoding_detected_and_fixed(blob, name):
    n, mask, c = blob
    raw, bd, expect, fix = _mis_encodings(n)[name]
    chk = check_decoding(raw, bd, mask, c, mode="auto")
    assert chk.changed and chk.confident and chk.chosen.name == expect, (chk.scores, chk.reason)
    assert "normals look" in chk.message and "\n" not in chk.message
    np.testing.assert_allclose(recovered(chk, raw, bd)[mask], n[mask], atol=1e-4)
    with pytest.raises(FninError, match=fix):
        check_decoding(raw, bd, mask, c, mode="strict", source="x.png")


def test_mirrored_map_is_read_as_x_flipped(blob):
    """Issue 43: a mirrored map (image reversed, values kept) has n_x of the wrong sign for
    its pixels; the outline says x, not y (which integrates as well: the surface inside out)."""
    n, mask, c = blob
    raw, mmask = np.ascontiguousarray(encode_png(n)[:, ::-1]), np.ascontiguousarray(mask[:, ::-1])
    for bits, arr in ((16, raw), (8, np.ascontiguousarray(encode_png(n, 8)[:, ::-1]))):
        for m in (mmask, None):
            if m is None:   # no mask: the file's white background is not a normal
                arr = arr.copy()
                arr[~mmask] = 2 ** bits - 1
            chk = check_decoding(arr, bits, m, c)
            assert chk.chosen.name == "ps/flip-x" and "outline" in chk.reason, (chk.reason, chk.outline)
            truth = n[:, ::-1] * np.array([-1.0, 1.0, 1.0])
            assert np.degrees(np.arccos(np.clip(np.sum(recovered(chk, arr, bits)[mmask] * truth[mmask], -1), -1, 1))
                              ).mean() < 1.0
    if not c.perspective:   # the y-flipped decoding integrates exactly as well: only the outline tells
        chk = check_decoding(raw, 16, mmask, c)
        assert abs(chk.scores["ps/flip-x"] - chk.scores["directx"]) < 0.01 < chk.scores["ps"] - 0.5


def test_without_an_outline_x_and_y_flips_are_refused_naming_both(bumps):
    """No outline, orthographic: a mirrored map and a green-down one integrate the same way;
    neither is guessed. Perspective may tell them apart; it never guesses wrong."""
    n, mask, c = bumps
    for name, truth in (("green-down", "directx"), ("xflip", "ps/flip-x")):
        raw, bd, *_ = _mis_encodings(n)[name]
        if not c.perspective:
            for mode in ("auto", "strict"):
                with pytest.raises(FninError) as e:
                    check_decoding(raw, bd, mask, c, mode=mode)
                msg = str(e.value)
                assert 'convention="directx"' in msg and 'flip="x"' in msg and "\n" not in msg
                assert 'convention="ps"' not in msg and "cannot tell" in msg
        else:
            try:
                assert check_decoding(raw, bd, mask, c).chosen.name == truth
            except FninError as e:
                assert 'flip="x"' in str(e) and 'convention="directx"' in str(e)


@pytest.mark.parametrize("perspective", [False, True])
def test_fine_score_is_zero_for_a_surface_and_near_one_for_its_x_flip(perspective):
    """The pixel-scale score of exact normals of a twisting surface: its curl is nothing
    (orthographic, and in log depth under perspective once the plane's own mixed
    derivative is taken out); x negated, the curl carries nearly all of the energy."""
    n, mask = surface_normals("bumps", perspective)
    cam = Camera(K) if perspective else Camera()
    for flip, lo, hi in ((False, 0.0, 1e-6), (True, 0.99, 1.0)):
        m = n * np.array([-1.0 if flip else 1.0, 1.0, 1.0])
        values, rays, f = fine_cells(m, mask, cam)
        score, cells = fine_score(values, rays, f)
        assert lo <= score <= hi and cells > 40_000


@pytest.mark.parametrize("seed", [0, 1])
def test_a_dense_plant_flipped_is_refused_by_its_pixels(seed):
    """Issue 51 item 3: a dense orthographic 8-bit plant filling the frame (many small leaves,
    a pot, soil; no outline). Every block score is near 0.5 (the blocks straddle the leaves'
    edges), so x- and y-flipped copies used to load with exit 0; read on the pixel cells with
    no jump inside, they are refused naming both fixes, and the right map is kept."""
    n = plant_normals(seed, 240, 240, 80)
    code = np.round((np.clip(from_internal(n, "ps"), -1, 1) + 1) / 2 * 255).astype(np.uint8)
    for mask in (None, np.ones(code.shape[:2], bool)):
        chk = check_decoding(code, 8, mask, Camera())
        assert not chk.changed and chk.scores["ps"] > 0.41     # the blocks cannot tell
        for axis in (0, 1):
            bad = code.copy()
            bad[..., axis] = 255 - bad[..., axis]
            with pytest.raises(FninError) as e:
                check_decoding(bad, 8, mask, Camera())
            msg = str(e.value)
            assert "at pixel scale" in msg and 'flip="x"' in msg and 'convention="directx"' in msg
            assert "\n" not in msg and e.value.check.fine["ps"] > 0.8


def test_x_and_y_both_flipped_refused_by_the_outline(blob):
    """The outline alone (normals pointing into the mask) refuses under auto and only warns
    with an explicit convention (a concave object seen from its open side is possible)."""
    n, mask, c = blob
    raw = encode_png(n)
    raw[..., :2] = 65535 - raw[..., :2]
    with pytest.raises(FninError, match='flip="xy"') as e:
        check_decoding(raw, 16, mask, c)
    assert "outline" in str(e.value) and 'convention="ps"' not in str(e.value)
    chk = check_decoding(raw, 16, mask, c, mode="strict")
    assert not chk.changed and "--flip xy" in chk.warning


def test_noise_is_refused_with_one_line():
    rng = np.random.default_rng(1)
    code = rng.integers(0, 256, (H, W, 3)).astype(np.uint8)
    for m in (None, np.ones((H, W), bool)):
        with pytest.raises(FninError, match="normals look like noise") as e:
            check_decoding(code, 8, m, Camera())
        assert "\n" not in str(e.value)
    chk = check_decoding(code, 8, None, Camera(), mode="strict")
    assert not chk.changed and "noise" in chk.warning


def _dome(h, w, radius, noise_deg, seed):
    """A gently curved dome (sphere of ``radius`` px) filling an h x w frame, with white
    noise of ``noise_deg`` per pixel."""
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    x, y = u - w / 2 + 7, v - h / 2 - 3
    zs = np.sqrt(radius ** 2 - x * x - y * y)
    n = np.stack([x / zs, y / zs, -np.ones_like(u)], -1)
    n += np.random.default_rng(seed).normal(0, np.radians(noise_deg), n.shape)
    return n / np.linalg.norm(n, axis=-1, keepdims=True)


@pytest.mark.parametrize("h,w,radius,noise_deg,seed", [(60, 80, 150, 3.0, 0), (100, 130, 250, 5.0, 0),
                                                        (70, 90, 400, 5.0, 1)])
def test_small_noisy_gentle_maps_are_kept(h, w, radius, noise_deg, seed):
    """Regression (the study's first round): small, gently curved maps under 3-5 degrees of
    white noise score like noise (0.42-0.5), and were refused as noise; a BGR decoding that
    turns such a camera-facing map edge-on scored 0.21 and made it 'ambiguous'. Both are
    loaded as given now (the data cannot tell, so nothing changes)."""
    raw = encode_png(_dome(h, w, radius, noise_deg, seed))
    chk = check_decoding(raw, 16, None, Camera())
    assert not chk.changed and not chk.refused and chk.chosen.name == "ps"


def test_holes_in_the_mask_are_not_an_outline():
    """Regression: the edges of holes and zeroed patches inside the mask counted as the
    object's outline; in a procedural scene (a wall behind two domes, one with a hole)
    their normals point 'into the mask', and the correct map was refused as x and y
    flipped. Only the background around the mask is outside now."""
    from fnin_cli.data.synthetic import make_scene

    s = make_scene(12, 96)     # the wall fills the frame: every mask edge is a hole's
    raw = from_internal(np.where(s.mask[..., None], s.normals, np.nan), "ps").astype(np.float32)
    chk = check_decoding(raw, None, None, Camera(s.K))
    assert not chk.changed and not chk.refused and chk.outline_blocks == 0


@pytest.mark.parametrize("background", [65535, 0])
def test_no_mask_background_is_not_part_of_the_check(background):
    """Regression: without a mask the check scored the white (or black) background too, and
    the jump at the object's edge made correct maps look BGR (DiLiGenT's goblet and reading
    as files without mask.png)."""
    n, mask = surface_normals("blob", True)
    raw = encode_png(n)
    raw[~mask] = background
    chk = check_decoding(raw, 16, None, cam(True), mode="strict")
    assert not chk.changed and chk.valid_pixels == mask.sum() and chk.outline_blocks >= 30
    bgr = np.ascontiguousarray(raw[..., ::-1])
    assert check_decoding(bgr, 16, None, cam(True)).chosen.name == "ps/bgr"


def _picture(seed, h=240, w=200):
    """A colour 'photo' (8-bit): a shaded skin-coloured ellipse with texture on a smooth
    coloured background, no normal map."""
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:h, 0:w].astype(float)
    bg = np.stack([0.3 + 0.2 * np.sin(u / 23.0), 0.35 + 0.1 * u / w, 0.5 + 0.2 * v / h], -1)
    x, y = (u - w / 2) / (0.3 * w), (v - h / 2) / (0.35 * h)
    r2 = x ** 2 + y ** 2
    shade = np.clip(0.3 + 0.7 * (-0.4 * x - 0.5 * y + 0.75 * np.sqrt(np.clip(1 - r2, 0, 1))), 0, 1)
    img = np.where((r2 < 1)[..., None], np.array([0.92, 0.7, 0.58]) * shade[..., None], bg)
    img += rng.normal(0, 0.01, img.shape)
    return np.round(np.clip(img, 0, 1) * 255).astype(np.uint8)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_picture_without_a_mask_is_refused(seed):
    """Regression (issue 51): a colour photo saved as a normal map, without a mask, became a
    mesh (the domain is the pixels whose colours decode to near-unit vectors, and those
    were enough to integrate). A picture's colours spread over the domain's length band; a
    normal map's vectors sit at length 1."""
    raw = _picture(seed)
    with pytest.raises(FninError, match="does not look like a normal map.*mask") as exc:
        check_decoding(raw, 8, None, Camera(), source="photo.png")
    assert "\n" not in str(exc.value) and exc.value.check.unit_share < 0.9
    chk = check_decoding(raw, 8, None, Camera(), mode="strict")      # a named convention: warned
    assert "does not look like a normal map" in chk.warning and not chk.refused
    # a normal map of the same size without a mask, 8-bit with a white background: kept
    n, mask = surface_normals("blob", False)
    code = encode_png(n, 8)
    code[~mask] = 255
    chk = check_decoding(code, 8, None, Camera(), mode="strict")
    assert not chk.changed and chk.unit_share > 0.99


@pytest.mark.parametrize("background", [0.5, 1.0, 0.0, np.nan])
def test_half_float_map_without_a_mask_is_detected(background):
    """Regression (issue 51): a float file holding (n + 1) / 2 with its background (grey
    n = 0, white, black) and no mask was read as n itself: the given encoding's domain held
    the grey background, so too few of its vectors were unit under 2x - 1."""
    n, mask = surface_normals("blob", True)
    half = ((from_internal(n, "ps") + 1) / 2).astype(np.float32)
    half[~mask] = background
    chk = check_decoding(half, None, None, cam(True))
    assert chk.changed and chk.chosen.name == "ps/half" and chk.valid_pixels == mask.sum()
    np.testing.assert_allclose(recovered(chk, half, None)[mask], n[mask], atol=1e-4)
    # the same normals stored as n: kept, whatever the background
    raw = from_internal(n, "ps").astype(np.float32)
    raw[~mask] = background
    chk = check_decoding(raw, None, None, cam(True), mode="strict")
    assert not chk.changed and chk.chosen.name == "ps"


def test_messages_name_the_option(blob):
    n, mask, c = blob
    raw, bd, *_ = _mis_encodings(n)["green-down"]
    chk = check_decoding(raw, bd, mask, c)
    assert chk.message.startswith("normals look green-down (y flipped); decoding them with --convention directx")
    with pytest.raises(FninError) as e:
        check_decoding(raw, bd, mask, c, mode="strict", source="x.png")
    # a Python caller reads the Python arguments (issue 32)
    assert 'pass convention="directx" (or convention="auto")' in str(e.value) and str(e.value).startswith("x.png: ")
    raw, bd, *_ = _mis_encodings(n)["bgr"]
    with pytest.raises(FninError, match=r'BGR, as cv2.imwrite writes\): pass channels="bgr"') as e:
        check_decoding(raw, bd, mask, c, mode="strict")
    assert 'convention="ps"' not in str(e.value)
    assert check_decoding(raw, bd, mask, c).as_dict()["channels"] == "bgr"


def test_flip_option_and_names():
    assert given_decoding("ps", flip="x").name == "ps/flip-x"
    assert given_decoding("ps", flip="y") == given_decoding("directx")
    assert given_decoding("opencv", flip="y").express() == ("opencv", "y")   # the user's convention first
    assert Decoding((1.0, -1.0, 1.0)).name == "ps/flip-z"
    with pytest.raises(FninError, match="unknown flip 'w'"):   # --flip on the command line
        given_decoding(flip="w")


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
    n, mask = surface_normals("blob", perspective)
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
