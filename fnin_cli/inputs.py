"""Inputs: a normal map read, decoded, checked and validated into an :class:`Input`.

:func:`load_input` reads a file or a DiLiGenT/BiNI-layout folder (the mask and K beside a
layout file too), runs the decoding check, decodes and normalises in float32 bands;
:func:`build_input` validates arrays (internal-frame normals, mask, camera). Every input
rule is checked here, once; what comes out is trusted by the integration
(:mod:`fnin_cli.pipeline`).
"""

from __future__ import annotations

import time
import warnings as warnings_module
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import conventions, io
from .camera import Camera
from .checks import INVALID_MAX, check_decoding, check_invalid
from .errors import FninError, FninWarning, for_caller, warn
from .io.layout import input_files

# the one message of the rule "an orthographic camera has no intrinsics" (CLI and API)
ORTHO_AND_K = "--ortho and a camera (--K) both given; drop one of them"


@dataclass
class Input:
    """A normal map ready to integrate: internal-frame unit normals and its domain."""

    normals: np.ndarray            # (H, W, 3) float32, OpenCV frame, NaN where invalid
    mask: np.ndarray               # (H, W) bool: pixels to integrate
    camera: Camera
    source: str = "<array>"
    bitdepth: int | None = None
    warnings: list = field(default_factory=list)
    convention: str = "ps"         # the decoding used: 'ps', 'directx', 'opencv', 'ps/bgr', 'ps/half', ...
    check: dict | None = None      # the decoding check's summary (checks.DecodingCheck.as_dict) and seconds
    mask_source: str | None = None    # where the mask came from: its file, "array", or None (valid normals)
    camera_source: str | None = None  # where K came from: its file, "array", or None (orthographic)

    @property
    def shape(self):
        return self.mask.shape


def load_input(
    path,
    mask=None,
    K=None,
    ortho: bool = False,
    pixel_size: float | None = None,
    convention: str = "auto",
    channels=None,
    float_encoding: str = "raw",
    allow_invalid: bool = False,
    flip: str | None = None,
) -> Input:
    """Load a normal map file or a DiLiGenT/BiNI-layout folder.

    ``mask``/``K`` may be paths or arrays. Without a mask, the valid normals are the
    domain. Without K the camera is orthographic (one pixel = ``pixel_size`` units).

    Decoding (README "Inputs"): ``convention`` ps|opencv|directx (and aliases) or
    ``auto`` (ps unless the data clearly integrate better under another decoding: then
    that one, with a warning); ``channels`` 'rgb', 'bgr' or three EXR channel names;
    ``float_encoding`` 'raw' or 'half' ((n + 1) / 2 in a float file); ``flip`` the axes
    to negate after the convention ('x' for a mirrored map, 'z', 'xy', ...). Under ``auto``
    a map that looks like noise, or fits two decodings the data cannot tell apart (a
    mirrored map and a green-down one without an object outline), is an error naming the
    options. With an explicit convention the check is strict: a clearly better decoding
    is an error naming the option that fixes it; noise and the outline alone are warnings.
    More than 2 % invalid masked normals is an error unless ``allow_invalid``.
    ``Input.convention`` holds the decoding used.

    A file named like a layout folder's normal map (``x/normal_map.png``) reads
    ``x/mask.png`` and ``x/K.txt`` as the folder ``x`` would, unless ``mask``, ``K`` or
    ``ortho`` say otherwise; ``Input.mask_source`` and ``Input.camera_source`` say where
    the mask and the camera came from.
    """
    # a folder's files, or a file and (for a normal_map.png in a layout folder) its mask and K.txt
    npath, fmask, fK = input_files(path)
    mask = fmask if mask is None else mask
    if K is None and not ortho:
        K = fK
    mask_source = None if mask is None else "array" if isinstance(mask, np.ndarray) else str(mask)
    camera_source = None if K is None else str(K) if isinstance(K, (str, Path)) else "array"
    order, names = parse_channels(channels)
    auto = str(convention).lower() == "auto"
    conv = "ps" if auto else conventions.canonical(convention)
    arr, bitdepth = io.read_array(npath, channels=names)
    arr = _check_layout(arr, bitdepth, npath)
    shape = arr.shape[:2]
    mask = None if mask is None else mask_array(mask, shape, npath)
    if isinstance(K, (str, Path)):
        K_src, K = K, io.read_K(K)
    else:
        K_src = npath
    cam = None if K is None else Camera(np.asarray(K, np.float64)).validate(shape, K_src)
    t0 = time.perf_counter()
    # auto: a change is a warning, noise or two decodings the data cannot tell apart an
    # error; explicit: a clearly better decoding is an error (checks/decoding.py)
    chk = check_decoding(arr, bitdepth, mask, cam, convention=conv, channels=order, float_encoding=float_encoding,
                         mode="auto" if auto else "strict", source=npath, flip=flip or "")
    warnings = [w for w in (chk.message if chk.changed else "", chk.warning) if w]
    normals, valid, nonfinite = _decode_normalise(arr, bitdepth, chk)
    # 8-bit data in a 16-bit or float file: the same quantisation as an 8-bit file, which
    # build_input names (the file's bit depth alone missed 8-bit maps saved wider)
    codes = _eight_bit_codes(arr, bitdepth, valid if mask is None else valid & mask,
                             chk.chosen.float_encoding == "half")
    if codes:
        warnings.append(f"8-bit values in a {codes}: quantisation limits accuracy (about 0.5 degree); "
                        "prefer normals saved before rounding to 8 bits (16-bit PNG or EXR)")
    if mask is None:  # NaN/inf are background: count them for a warning
        if nonfinite:
            warnings.append(f"{nonfinite} NaN/inf normals and no mask: treated as background")
    elif np.count_nonzero(mask & ~valid) > INVALID_MAX * np.count_nonzero(mask):
        # too many: the full report (count and likely cause) stops the run unless allowed
        check_invalid(chk.decode(arr, bitdepth), mask, allow=allow_invalid, source=npath, is_float=bitdepth is None,
                      raw=arr)
    seconds = time.perf_counter() - t0
    with warnings_module.catch_warnings():  # reported below, with the loader's own
        warnings_module.simplefilter("ignore", FninWarning)
        inp = build_input(normals, valid, mask, cam, ortho, pixel_size, source=str(npath), bitdepth=bitdepth,
                          convention=chk.chosen.name, copy=False)
    inp.warnings[:0] = [for_caller(w) for w in warnings]   # Python arguments outside the CLI
    inp.check = dict(chk.as_dict(), seconds=round(seconds, 4))
    inp.mask_source, inp.camera_source = mask_source, camera_source
    warn(inp.warnings)
    return inp


def mask_array(mask, shape, source=None) -> np.ndarray:
    """``mask`` (a bool-like array or an image path) as an (H, W) bool array of ``shape``,
    or a one-line error."""
    if not isinstance(mask, np.ndarray):
        return io.read_mask(mask, shape)
    if mask.shape != tuple(shape):
        raise FninError(f"mask shape {mask.shape} differs from normal map {tuple(shape)}", source)
    return mask.astype(bool)


# pixels decoded at a time: the float32 temporaries stay small (a whole 24 MP frame at
# once takes seconds to allocate them; docs/decisions.md#input-path)
DECODE_CHUNK = 1 << 20


def _decode_normalise(arr: np.ndarray, bitdepth, chk) -> tuple[np.ndarray, np.ndarray, int]:
    """(unit normals float32 (H, W, 3), valid (H, W), count of non-finite vectors) of a
    raw map under the check's chosen decoding, a band of rows at a time."""
    h, w = arr.shape[:2]
    normals = np.empty((h, w, 3), np.float32)
    valid = np.empty((h, w), bool)
    nonfinite = 0
    step = max(1, DECODE_CHUNK // max(1, w))
    for r in range(0, h, step):
        # decoded straight into the output's band, normalised there in place
        vec = chk.decode(arr[r:r + step], bitdepth, out=normals[r:r + step])
        if bitdepth is None:
            nonfinite += int(np.count_nonzero(~np.isfinite(vec).all(axis=-1)))
        valid[r:r + step] = conventions.normalise(vec, inplace=True)[1]
    return normals, valid, nonfinite


# a float map holds 8-bit codes when (n + 1) / 2 * 255 is this close to a whole number
# everywhere (float32 round-off of c / 127.5 - 1 is ~1e-5 of a code; a float16 EXR's
# ~0.06: such files are not flagged)
EIGHT_BIT_TOL = 1e-3


def _eight_bit_codes(arr: np.ndarray, bitdepth, domain: np.ndarray, half: bool = False) -> str | None:
    """What a 16-bit or float normal map holding only 8-bit colour codes on ``domain`` is
    ("16-bit normal map (every value a multiple of 257)", the way image tools widen 8 bits
    to 16; "float normal map (...)"), or None. A band of rows at a time; a real 16-bit or
    float map fails on its first pixels."""
    if bitdepth not in (16, None) or not domain.any():
        return None
    h, w = domain.shape
    step = max(1, DECODE_CHUNK // max(1, w))
    for r in range(0, h, step):
        d = domain[r:r + step]
        if not d.any():
            continue
        x = arr[r:r + step, :, :3][d]
        if bitdepth == 16:
            if np.any(x % 257):
                return None
        else:
            c = x.astype(np.float64) * 255.0 if half else (x.astype(np.float64) + 1.0) * 127.5
            if not np.all(np.abs(c - np.round(c)) <= EIGHT_BIT_TOL):
                return None
    if bitdepth == 16:
        return "16-bit normal map (every value a multiple of 257)"
    return "float normal map (every (n + 1) / 2 x 255 a whole number)"


def parse_channels(channels) -> tuple:
    """``--channels`` value -> (order 'rgb'|'bgr', EXR channel names or None)."""
    if channels is None or channels == "":
        return "rgb", None
    if isinstance(channels, str):
        if channels.lower() in ("rgb", "bgr"):
            return channels.lower(), None
        names = tuple(c.strip() for c in channels.split(",") if c.strip())
    else:
        names = tuple(str(c) for c in channels)
    if len(names) != 3:
        raise FninError(f"--channels wants rgb, bgr or three EXR channel names such as N.X,N.Y,N.Z; "
                        f"got '{channels}'")
    return "rgb", names


def _check_layout(arr: np.ndarray, bitdepth, npath) -> np.ndarray:
    """A raw normal-map array as (H, W, 3) numbers fnin can decode, or a one-line error."""
    if arr.ndim == 3 and arr.shape[0] in (3, 4) and arr.shape[2] not in (3, 4) and min(arr.shape[1:]) > 4:
        c, h, w = arr.shape
        raise FninError(f"array of shape {arr.shape} looks channels-first ({c}, H, W): transpose it to "
                        f"(H, W, {c}) (numpy: arr.transpose(1, 2, 0)) and save it again", npath)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        got = "1 channel" if arr.ndim == 2 else f"{arr.shape[2]} channels"
        raise FninError(f"a normal map needs 3 channels (x, y, z), got {got}", npath)
    if bitdepth is None and arr.dtype.kind in "biu":
        vals = arr[..., :3]
        lo, hi = (int(vals.min()), int(vals.max())) if vals.size else (0, 0)
        raise FninError(f"normal map holds {arr.dtype} integers (values {lo}..{hi}); fnin expects float normals "
                        f"(x, y, z in -1..1) or uint8/uint16 colour codes (n+1)/2: convert it "
                        f"(arr.astype(np.float32) for normals)", npath)
    return arr[..., :3]


def build_input(normals, valid=None, mask=None, K=None, ortho=False, pixel_size=None, source="<array>",
                bitdepth=None, convention="ps", copy: bool = True) -> Input:
    """Validate arrays (internal-frame normals) into an :class:`Input`.

    ``K``: a 3x3 array, a K.txt path, an already validated :class:`Camera`, or None
    (orthographic, ``pixel_size`` units per pixel). ``convention`` names the decoding
    the normals came from (``Input.convention``, and the facing-away message). ``copy=False``
    keeps float32 ``normals`` themselves (no 24 MP copy) when the caller made them."""
    shape = normals.shape[:2]
    if valid is None:
        normals, valid = conventions.normalise(np.asarray(normals, np.float32))
    warnings = []
    m = valid.copy() if mask is None else mask_array(mask, shape, source)
    bad = int((m & ~valid).sum())
    if bad:
        warnings.append(f"{bad} masked pixels have invalid normals (non-finite or not unit length) and are skipped")
    m &= valid
    if isinstance(K, Camera):
        cam = K
    elif isinstance(K, (str, Path)):
        cam = Camera(io.read_K(K)).validate(shape, K)
    elif K is not None:
        cam = Camera(np.asarray(K, np.float64)).validate(shape, source)
    else:
        cam = Camera(None, 1.0 if pixel_size is None else float(pixel_size)).validate(shape, source)
    if ortho and cam.perspective:
        raise FninError(ORTHO_AND_K, source)
    if not m.any():
        raise FninError("the mask is empty: no pixel with a valid normal to integrate", source)
    # pixels with no 4-neighbour in the domain cannot be integrated
    padded = np.pad(m, 1)
    has_nb = padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
    isolated = m & ~has_nb
    if isolated.any():
        if isolated.sum() == m.sum():
            raise FninError("the mask holds only isolated pixels; nothing connected to integrate", source)
        warnings.append(f"{int(isolated.sum())} isolated pixels dropped")
        m &= ~isolated
    away = conventions.facing_away_fraction(normals, m)
    if away > 0.5:
        raise FninError(
            f"{away:.0%} of the normals face away from the camera; wrong convention? "
            f"(now '{convention}'): {conventions.flip_hint(convention)}", source)
    if bitdepth == 8:
        warnings.append("8-bit normal map: quantisation limits accuracy (about 0.5 degree); prefer 16-bit or EXR")
    warnings = [for_caller(w) for w in warnings]
    warn(warnings)
    return Input(normals.astype(np.float32, copy=copy), m, cam, source, bitdepth, warnings, convention)
