"""Issues 16 and 43: mis-encoded normal maps give the right surface or a one-line hint (through the CLI).

The corpus is generated here: a non-symmetric analytic surface (three Gaussian bumps on a
tilted plane) seen by a perspective camera, written as the correct 16-bit PNG + mask +
K.txt and as the plausible mistakes: green-down PNG, BGR-order PNG, z-flipped PNG,
(n+1)/2 float EXR, OpenCV-frame NPY read without a flag; plus correct raw float EXR and
ps-frame NPY. Each runs ``fnin integrate --json`` with the default method.

Issue 43: an object whose mask is its silhouette (a bumpy ellipsoid), 8-bit orthographic
and 16-bit perspective, with and without its mask, mirrored, x-, y- and z-flipped and BGR;
the same without an outline; a random-noise PNG (``--method wls``: the decoding is what is
tested).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fnin_cli import io, load_input
from fnin_cli.camera import Camera
from fnin_cli.conventions import from_internal
from fnin_cli.data.analytic import from_depth_function

from helpers import gaussian_bumps
from helpers_cli import invoke

H, W = 96, 128
K = np.array([[150.0, 0, 60.0], [0, 155.0, 45.0], [0, 0, 1]])
MADE_RATIO = 1.10      # the bound: MADE within 1.10x of the correct input's
MADE_SLACK = 1e-5      # plus this absolute slack (depth units, mean depth 1: solver round-off)


def _bumps(u, v):
    return gaussian_bumps(u, v, ((14.0, 40, 30, 14.0), (-9.0, 85, 62, 16.0), (5.0, 100, 22, 9.0)), offset=100.0)


def _write_exr(path, channels: dict):
    import OpenEXR

    hdr = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    OpenEXR.File(hdr, {k: np.ascontiguousarray(v, np.float32) for k, v in channels.items()}).write(str(path))


def _rgb(arr):
    return {c: arr[..., i] for i, c in enumerate("RGB")}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    t = tmp_path_factory.mktemp("corpus")
    v, u = np.mgrid[0:H, 0:W]
    mask = ((u - 62) / 58.0) ** 2 + ((v - 46) / 42.0) ** 2 < 1.0   # off-centre ellipse
    mask &= ~((u > 95) & (v > 70))                                   # a notch: not symmetric
    surf = from_depth_function((H, W), Camera(K), _bumps, support=mask)
    n = np.where(mask[..., None], surf.normals, 0.0)
    ps = from_internal(n, "ps")
    code = np.round((ps + 1) / 2 * 65535).astype(np.uint16)
    code[~mask] = 0
    files = {}

    def png(name, arr):
        io.write_png(t / name, arr)
        files[name] = t / name

    png("correct.png", code)
    g = code.copy()
    g[..., 1] = 65535 - g[..., 1]
    png("green-down.png", g)
    png("bgr.png", np.ascontiguousarray(code[..., ::-1]))
    z = code.copy()
    z[..., 2] = 65535 - z[..., 2]
    png("zflip.png", z)
    half = code.astype(np.float32) / 65535
    _write_exr(t / "half.exr", _rgb(half))
    files["half.exr"] = t / "half.exr"
    raw = (2 * half - 1).astype(np.float32)
    _write_exr(t / "raw.exr", _rgb(raw))
    files["raw.exr"] = t / "raw.exr"
    np.save(t / "opencv.npy", raw * np.array([1, -1, -1], np.float32))
    files["opencv.npy"] = t / "opencv.npy"
    np.save(t / "ps.npy", raw)
    files["ps.npy"] = t / "ps.npy"
    io.write_png(t / "mask.png", (mask * 255).astype(np.uint8))
    np.savetxt(t / "K.txt", K)
    return {"dir": t, "files": files, "mask": mask, "gt": np.where(mask, surf.depth, np.nan), "raw": raw}


def _run(c, name, *extra):
    out = c["dir"] / f"out_{name}_{len(extra)}.npy"
    r = invoke(["integrate", c["files"][name], "--mask", c["dir"] / "mask.png", "--K", c["dir"] / "K.txt",
                "-o", out, "--force", "--json", *extra])
    rec = json.loads(r.stdout) if r.stdout.strip() else None
    return r, rec, out


def _made(c, out):
    est = np.load(out)
    gt = c["gt"]
    m = c["mask"] & np.isfinite(est) & np.isfinite(gt)
    s = np.nanmedian(gt[m] / est[m])
    return float(np.nanmean(np.abs(s * est[m] - gt[m]))), float(m.sum()) / float(c["mask"].sum())


@pytest.fixture(scope="module")
def reference(corpus):
    r, rec, out = _run(corpus, "correct.png")
    assert r.exit_code == 0, r.stderr
    assert rec["convention"] == "ps" and "check" in rec["seconds"]
    return _made(corpus, out)[0]


# name -> decoding the default (auto) must pick, and the option a strict run must name
MISTAKES = {
    "green-down.png": ("directx", "--convention directx"),
    "bgr.png": ("ps/bgr", "--channels bgr"),
    "zflip.png": ("ps/flip-z", "--flip z"),
    "half.exr": ("ps/half", "--float-encoding half"),
    "opencv.npy": ("opencv", "--convention"),
}


@pytest.mark.parametrize("name", list(MISTAKES))
def test_mis_encoded_input_gives_the_right_surface_by_default(corpus, reference, name):
    r, rec, out = _run(corpus, name)
    assert r.exit_code == 0, r.stderr
    assert rec["status"] == "ok" and rec["convention"] == MISTAKES[name][0]
    # the change is said on stderr, as a warning naming the option
    assert any(line.startswith("warning: ") and "normals look" in line for line in r.stderr.splitlines())
    made, kept = _made(corpus, out)
    assert kept >= 0.99
    assert made <= MADE_RATIO * reference + MADE_SLACK, (made, reference)


@pytest.mark.parametrize("name", list(MISTAKES))
def test_mis_encoded_input_with_explicit_convention_is_refused_with_the_fix(corpus, name):
    r, rec, out = _run(corpus, name, "--convention", "ps")
    assert r.exit_code == 1
    assert rec["status"] == "failed" and MISTAKES[name][1] in rec["error"]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and MISTAKES[name][1] in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("name,extra", [("raw.exr", ()), ("ps.npy", ()), ("correct.png", ("--convention", "ps")),
                                        ("green-down.png", ("--convention", "directx")),
                                        ("bgr.png", ("--channels", "bgr", "--convention", "ps")),
                                        ("half.exr", ("--float-encoding", "half", "--convention", "ps"))])
def test_correct_inputs_run_and_match(corpus, reference, name, extra):
    r, rec, out = _run(corpus, name, *extra)
    assert r.exit_code == 0, r.stderr
    assert "normals look" not in r.stderr
    made, kept = _made(corpus, out)
    assert kept >= 0.99
    assert made <= MADE_RATIO * reference + MADE_SLACK, (made, reference)


def test_python_api_records_the_decoding(corpus):
    d = corpus["dir"]
    inp = load_input(d / "green-down.png", mask=d / "mask.png", K=d / "K.txt")
    assert inp.convention == "directx" and any('convention="directx"' in w for w in inp.warnings)  # Python's name
    inp = load_input(d / "correct.png", mask=d / "mask.png", K=d / "K.txt", convention="ps")
    assert inp.convention == "ps" and inp.check["changed"] is False


# ---------------------------------------------------------------- --channels (EXR layers)

def test_exr_normal_layer_is_found_by_name(corpus, tmp_path):
    raw = corpus["raw"]
    _write_exr(tmp_path / "layers.exr", {"N.X": raw[..., 0], "N.Y": raw[..., 1], "N.Z": raw[..., 2],
                                         "depth.Z": raw[..., 2]})
    arr, _ = io.read_array(tmp_path / "layers.exr")
    np.testing.assert_array_equal(arr, raw)
    _write_exr(tmp_path / "two.exr", {**{f"a.{c}": raw[..., i] for i, c in enumerate("XYZ")},
                                      **{f"b.{c}": -raw[..., i] for i, c in enumerate("XYZ")}})
    r = invoke(["integrate", tmp_path / "two.exr", "--mask", corpus["dir"] / "mask.png", "-o", tmp_path / "x.npy"])
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and "--channels a.X,a.Y,a.Z" in lines[0]
    r = invoke(["integrate", tmp_path / "two.exr", "--channels", "a.X,a.Y,a.Z", "--mask", corpus["dir"] / "mask.png",
                "--K", corpus["dir"] / "K.txt", "-o", tmp_path / "x.npy", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["convention"] == "ps"
    r = invoke(["integrate", tmp_path / "two.exr", "--channels", "a.X,a.Y,q.W", "-o", tmp_path / "y.npy"])
    assert r.exit_code == 1 and "q.W" in r.stderr and "a.X" in r.stderr and not (tmp_path / "y.npy").exists()


def test_channel_names_on_a_png_and_bad_values_are_errors(corpus, tmp_path):
    r = invoke(["integrate", corpus["files"]["correct.png"], "--channels", "N.X,N.Y,N.Z", "-o", tmp_path / "x.npy"])
    assert r.exit_code == 1 and "EXR" in r.stderr and "rgb or bgr" in r.stderr
    r = invoke(["integrate", corpus["files"]["correct.png"], "--channels", "rg", "-o", tmp_path / "x.npy"])
    assert r.exit_code == 2 and "--channels" in r.stderr
    r = invoke(["integrate", corpus["files"]["correct.png"], "--float-encoding", "quarter", "-o", tmp_path / "x.npy"])
    assert r.exit_code == 2 and "raw or half" in r.stderr
    r = invoke(["integrate", corpus["files"]["correct.png"], "--convention", "sideways", "-o", tmp_path / "x.npy"])
    assert r.exit_code == 2 and "auto" in r.stderr
    assert not (tmp_path / "x.npy").exists()


# ---------------------------------------------------------------- invalid pixels

def test_many_invalid_masked_normals_stop_unless_allowed(corpus, tmp_path):
    raw = corpus["raw"].copy()
    mask = corpus["mask"]
    idx = np.flatnonzero(mask)[::10]                  # 10 % of the masked pixels
    raw.reshape(-1, 3)[idx] = np.nan
    np.save(tmp_path / "n.npy", raw)
    args = ["integrate", tmp_path / "n.npy", "--mask", corpus["dir"] / "mask.png", "-o", tmp_path / "x.npy"]
    r = invoke(args)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1
    assert f"{idx.size} of {int(mask.sum())} masked normals" in lines[0] and "NaN" in lines[0]
    assert "--allow-invalid" in lines[0] and not (tmp_path / "x.npy").exists()
    r = invoke(args + ["--allow-invalid"])
    assert r.exit_code == 0 and f"{idx.size} masked pixels have invalid normals" in r.stderr


def test_zero_vectors_inside_the_mask_name_the_cause(corpus, tmp_path):
    raw = corpus["raw"].copy()
    raw[:, :20] = 0.0                                 # background stored as 0 inside the mask
    np.save(tmp_path / "n.npy", raw)
    r = invoke(["integrate", tmp_path / "n.npy", "--mask", corpus["dir"] / "mask.png", "-o", tmp_path / "x.npy"])
    assert r.exit_code == 1 and "are zero" in r.stderr and "mask" in r.stderr


def test_nan_without_mask_warns_with_the_count(corpus, tmp_path):
    raw = corpus["raw"].copy()
    raw[~corpus["mask"]] = np.nan
    np.save(tmp_path / "n.npy", raw)
    r = invoke(["integrate", tmp_path / "n.npy", "--K", corpus["dir"] / "K.txt", "-o", tmp_path / "x.npy"])
    nbad = int((~corpus["mask"]).sum())
    assert r.exit_code == 0, r.stderr
    assert f"warning: {tmp_path / 'n.npy'}: {nbad} NaN/inf normals and no mask" in r.stderr


# ---------------------------------------------------------------- int and CHW arrays

@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_array_says_what_it_found_and_what_fnin_expects(tmp_path, dtype):
    np.save(tmp_path / "n.npy", (np.arange(48 * 48 * 3).reshape(48, 48, 3) % 2).astype(dtype))
    r = invoke(["integrate", tmp_path / "n.npy", "-o", tmp_path / "x.npy"])
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1
    assert np.dtype(dtype).name in lines[0] and "float normals" in lines[0] and "uint8/uint16" in lines[0]
    assert "mask is empty" not in lines[0]


def test_channels_first_array_gets_the_transpose_hint(corpus, tmp_path):
    np.save(tmp_path / "n.npy", np.ascontiguousarray(corpus["raw"].transpose(2, 0, 1)))
    r = invoke(["integrate", tmp_path / "n.npy", "-o", tmp_path / "x.npy"])
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1
    assert f"(3, {H}, {W})" in lines[0] and "channels-first" in lines[0] and "(H, W, 3)" in lines[0]


# ---------------------------------------------------------------- issue 43: real-map mistakes

def _blob(h=120, w=160):
    """Internal normals and mask of an asymmetric bumpy ellipsoid whose mask is its
    silhouette (normals 66 degrees from the view axis at the outline), orthographic."""
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    a, b, height, cu, cv = 62.0, 46.0, 40.0, 75.0, 58.0
    rho2 = ((u - cu) / a) ** 2 + ((v - cv) / b) ** 2
    mask = rho2 < 0.96 ** 2
    root = np.sqrt(np.maximum(1.0 - rho2, 1e-3))
    g, gu, gv = gaussian_bumps(u, v, ((8.0, 100, 45, 10.0), (-6.0, 60, 80, 9.0)))
    zu = gu + height * (u - cu) / (a * a * root)
    zv = gv + height * (v - cv) / (b * b * root)
    n = np.stack([zu, zv, -np.ones_like(u)], -1)
    return n / np.linalg.norm(n, axis=-1, keepdims=True), mask


def _png(path, n, mask, bits, background=True):
    top = 2 ** bits - 1
    code = np.round((from_internal(n, "ps") + 1) / 2 * top).astype(np.uint8 if bits == 8 else np.uint16)
    if background:
        code[~mask] = top
    io.write_png(path, code)
    return code


def _load(path, *extra):
    r = invoke(["integrate", path, "-o", path.with_suffix(".npy"), "--force", "--json", "--method", "wls", *extra])
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def _angle(out_normals, truth, mask):
    cos = np.clip(np.sum(out_normals[mask] * truth[mask], -1), -1, 1)
    return float(np.degrees(np.arccos(cos)).mean())


@pytest.mark.parametrize("bits,K", [(8, None), (16, np.array([[220.0, 0, 80.0], [0, 220.0, 60.0], [0, 0, 1]]))],
                         ids=["8bit-ortho", "16bit-persp"])
@pytest.mark.parametrize("with_mask", [True, False], ids=["mask", "nomask"])
def test_mistakes_of_an_object_are_fixed_or_refused_never_wrong(tmp_path, bits, K, with_mask):
    """Issue 43, item 1: mirrored, x-, y-, z-flipped and BGR copies of an object's map never
    give exit 0 with a wrong surface; with the object's outline each is re-decoded to the
    right normals with a warning naming the option."""
    n, mask = _blob()
    top = 2 ** bits - 1
    code = _png(tmp_path / "correct.png", n, mask, bits)
    flips = {"xflip.png": (0, "ps/flip-x", "--flip x"), "yflip.png": (1, "directx", "--convention directx"),
             "zflip.png": (2, "ps/flip-z", "--flip z")}
    cases = {"correct.png": (code, mask, n, "ps", None)}
    for name, (axis, dec, opt) in flips.items():
        c = code.copy()
        c[..., axis] = np.where(mask, top - c[..., axis], top)
        cases[name] = (c, mask, n, dec, opt)
    cases["bgr.png"] = (np.ascontiguousarray(code[..., ::-1]), mask, n, "ps/bgr", "--channels bgr")
    cases["mirror.png"] = (np.ascontiguousarray(code[:, ::-1]), np.ascontiguousarray(mask[:, ::-1]),
                           n[:, ::-1] * np.array([-1.0, 1.0, 1.0]), "ps/flip-x", "--flip x")
    for name, (c, m, truth, dec, opt) in cases.items():
        io.write_png(tmp_path / name, c)
        io.write_png(tmp_path / f"m_{name}", (m * 255).astype(np.uint8))
        extra = (["--mask", tmp_path / f"m_{name}"] if with_mask else []) + (
            ["--K", tmp_path / "K.txt"] if K is not None else [])
        if K is not None:
            np.savetxt(tmp_path / "K.txt", K)
        r, rec = _load(tmp_path / name, *extra)
        assert r.exit_code == 0, (name, r.stderr)
        assert rec["convention"] == dec, (name, rec["convention"], r.stderr)
        parts = rec["convention"].split("/")
        inp = load_input(tmp_path / name, mask=m if with_mask else None, K=K, convention=parts[0],
                         channels="bgr" if "bgr" in parts else None,
                         flip=next((p[5:] for p in parts if p.startswith("flip-")), None))
        assert _angle(inp.normals, truth, m & inp.mask) < 1.0, name
        warned = [ln for ln in r.stderr.splitlines() if "normals look" in ln]
        if opt is None:
            assert not warned
        else:   # said once, naming the option
            assert len(warned) == 1 and opt in warned[0], (name, r.stderr)
        # an explicit convention is refused with the option that fixes it, never the one in use
        if opt is not None:
            r, _ = _load(tmp_path / name, *extra, "--convention", "ps")
            lines = r.stderr.strip().splitlines()
            assert r.exit_code == 1 and len(lines) == 1 and opt in lines[0], (name, r.stderr)
            assert "--convention ps" not in lines[0]


def test_mirrored_map_without_an_outline_is_refused_naming_both(tmp_path):
    """A surface filling the frame (no outline), orthographic: mirrored and green-down
    integrate alike, so neither is guessed: exit 1, one line naming both options."""
    v, u = np.mgrid[0:H, 0:W].astype(np.float64)
    _, zu, zv = _bumps(u, v)
    n = np.stack([zu, zv, -np.ones_like(u)], -1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    code = _png(tmp_path / "c.png", n, np.ones((H, W), bool), 16, background=False)
    io.write_png(tmp_path / "mirror.png", np.ascontiguousarray(code[:, ::-1]))
    r, rec = _load(tmp_path / "mirror.png")
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and rec["status"] == "failed" and len(lines) == 1
    assert "--flip x" in lines[0] and "--convention directx" in lines[0] and "cannot tell" in lines[0]
    assert not (tmp_path / "mirror.npy").exists()
    r, rec = _load(tmp_path / "mirror.png", "--flip", "x")
    assert r.exit_code == 0 and rec["convention"] == "ps/flip-x" and "normals look" not in r.stderr


def test_random_noise_png_is_refused(tmp_path):
    rng = np.random.default_rng(43)
    io.write_png(tmp_path / "noise.png", rng.integers(0, 256, (H, W, 3)).astype(np.uint8))
    r, rec = _load(tmp_path / "noise.png")
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and rec["status"] == "failed" and len(lines) == 1 and "noise" in lines[0]
    assert not (tmp_path / "noise.npy").exists()


def test_facing_away_hint_never_suggests_the_convention_in_use(tmp_path):
    """Too small for the check to decide: the loader's own facing-away refusal names the
    other conventions, --flip z and --channels bgr, not the convention in use."""
    v, u = np.mgrid[0:24, 0:30].astype(np.float64)
    n = np.stack([0.01 * (u - 15), 0.01 * (v - 12), -np.ones_like(u)], -1)    # a shallow dome
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    code = _png(tmp_path / "z.png", n, np.ones(u.shape, bool), 16, background=False)
    code[..., 2] = 65535 - code[..., 2]
    io.write_png(tmp_path / "z.png", code)
    r, _ = _load(tmp_path / "z.png", "--convention", "directx")
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and "face away" in lines[0]
    assert "--convention directx" not in lines[0] and "directx (" not in lines[0]
    assert "--convention ps" in lines[0] and "--flip z" in lines[0] and "--channels bgr" in lines[0]
