"""File formats: one :class:`Format` object per suffix, and the merged readers and writers.

A format knows how to read a file into an array (with its integer bit depth), how to
read only the header for the image size (the memory pre-check), and how to write a
float map. Adding a format means adding one :class:`Format` to ``FORMATS`` here: the
readers, the writers, the header probe and the suffix lists all derive from it.

Decoding of normal maps (see :mod:`fnin_cli.conventions`): integer PNG/TIFF hold
(n + 1) / 2 scaled to the type's range; float EXR/NPY/TIFF hold the normals as they are.

Every reader returns plain numpy arrays and raises :class:`FninError` (never a raw
library exception) with the file name and what to try. Every writer is atomic: it
writes a temporary file in the destination folder and renames it over the target, so a
failure never leaves a partial file and never touches an existing one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..conventions import from_internal
from ..errors import FninError
from .depth import OFFSET_KEY, SCALE_KEY, png_text, to_steps, write_depth_png
from .files import atomic_path, check_output
from .layout import LOSSY_SUFFIXES
from .pngfile import read_png
from .pngfile import write_png as _write_png_file

MESH_SUFFIXES = (".ply", ".obj", ".stl", ".glb")

# Refuse to allocate an input this large (pixels); a 4096x3072 map is 12.6 M.
MAX_PIXELS = 64_000_000


# ---------------------------------------------------------------- raw arrays

def _suffix(path: Path) -> str:
    return path.suffix.lower()


def read_array(path, channels=None) -> tuple[np.ndarray, int | None]:
    """Read an image-like file as an (H, W) or (H, W, C) array.

    Returns ``(array, bitdepth)``; ``bitdepth`` is 8 or 16 for integer images and
    ``None`` for float data. PNG goes through libpng (:mod:`.pngfile`), which keeps
    16-bit RGB (Pillow, imageio's default PNG plugin, silently drops it to 8 bits). ``channels``: EXR
    channel names to stack, e.g. ``("N.X", "N.Y", "N.Z")`` (EXR files only).
    """
    path = Path(path)
    if not path.exists():
        raise FninError("file not found", path)
    if path.is_dir():
        raise FninError("is a folder, expected a file", path)
    suf = _suffix(path)
    try:
        fmt = BY_SUFFIX.get(suf)
        if fmt is None:
            lossy = " (a lossy format: its compression changes the normals)" if suf in LOSSY_SUFFIXES else ""
            raise FninError(
                f"unknown file type '{suf}'{lossy}; use one of {', '.join(NORMAL_SUFFIXES)}", path
            )
        if channels is not None:
            if suf != ".exr":
                raise FninError("--channels with channel names applies to EXR files only; "
                                "use --channels rgb or bgr for other files", path)
            arr, depth = _read_exr(path, tuple(channels)), None
        else:
            arr, depth = fmt.read(path)
    except FninError:
        raise
    except MemoryError:
        raise FninError("not enough memory to read this file", path) from None
    except Exception as exc:  # corrupt or truncated files from any backend
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FninError(f"cannot read file ({reason[:120]}); is it corrupt or truncated?", path) from None
    if arr.size == 0:
        raise FninError(f"file holds no pixels (shape {arr.shape}); is it corrupt or truncated?", path)
    if arr.dtype.kind not in "biuf":
        raise FninError(f"unsupported data type {arr.dtype}; expected numbers", path)
    if arr.ndim not in (2, 3) or min(arr.shape[:2]) < 1:
        raise FninError(f"expected an image of shape (H, W) or (H, W, C), got {arr.shape}", path)
    check_size(arr.shape, path)
    return arr, depth


def check_size(shape, path):
    """Raise :class:`FninError` if an image of ``shape`` exceeds ``MAX_PIXELS``."""
    if len(shape) >= 2 and int(shape[0]) * int(shape[1]) > MAX_PIXELS:
        need_gb = shape[0] * shape[1] * 200 / 1e9
        raise FninError(
            f"image of {shape[1]}x{shape[0]} pixels is too large (limit {MAX_PIXELS:,} "
            f"pixels, ~{need_gb:.0f} GB needed); crop or downsample it",
            path,
        )


def _read_png(path: Path):
    return read_png(path, check_size)


def _read_npy(path: Path):
    arr = np.load(path, allow_pickle=False, mmap_mode="r")
    depth = None
    if arr.dtype == np.uint8:
        depth = 8
    elif arr.dtype == np.uint16:
        depth = 16
    check_size(arr.shape, path)
    return np.asarray(arr), depth


def _read_tiff(path: Path):
    import tifffile

    arr = tifffile.imread(path)
    return arr, {np.dtype(np.uint8): 8, np.dtype(np.uint16): 16}.get(arr.dtype)


# EXR channel triples read as (x, y, z), top level or as the suffixes of a layer ('N.X')
EXR_TRIPLES = (("R", "G", "B"), ("X", "Y", "Z"), ("x", "y", "z"))
# layer names taken automatically when the file has no top-level R, G, B
EXR_NORMAL_LAYERS = ("n", "normal", "normals", "nrm")


def exr_layers(names) -> list:
    """Three-channel groups ``(prefix.R, prefix.G, prefix.B)`` (or X/Y/Z) among ``names``."""
    names = set(names)
    found = []
    for prefix in sorted({n.rsplit(".", 1)[0] for n in names if "." in n}):
        for t in EXR_TRIPLES:
            trip = tuple(f"{prefix}.{c}" for c in t)
            if all(n in names for n in trip) and trip not in found:
                found.append(trip)
                break
    return found


def _read_exr(path: Path, channels: tuple | None = None) -> np.ndarray:
    """An EXR as an array: ``channels`` by name, else R,G,B / X,Y,Z, a normal layer, one channel."""
    import OpenEXR

    chans = {name: c.pixels for name, c in OpenEXR.File(str(path), separate_channels=True).channels().items()}

    def stack(names):
        return np.stack([np.asarray(chans[n]) for n in names], axis=-1).astype(np.float32)

    if channels:
        if len(channels) != 3:
            raise FninError(f"--channels wants three EXR channel names (x, y, z), got {len(channels)}", path)
        missing = [n for n in channels if n not in chans]
        if missing:
            raise FninError(f"no channel {', '.join(missing)} in this EXR (found {', '.join(sorted(chans))}); "
                            "pass --channels with three of these names", path)
        return stack(channels)
    for names in EXR_TRIPLES:
        if all(n in chans for n in names):
            return stack(names)
    layers = exr_layers(chans)
    if layers:
        normal = [t for t in layers if t[0].rsplit(".", 1)[0].rsplit(".", 1)[-1].lower() in EXR_NORMAL_LAYERS]
        pick = normal or layers
        if len(pick) == 1:
            return stack(pick[0])
        options = "; ".join(",".join(t) for t in pick)
        raise FninError(f"EXR holds several 3-channel layers ({options}); pick one with --channels "
                        f"{','.join(pick[0])}", path)
    if len(chans) == 1:
        return np.asarray(next(iter(chans.values()))).astype(np.float32)
    for name in ("Z", "Y", "depth", "R"):
        if name in chans:
            return np.asarray(chans[name]).astype(np.float32)
    raise FninError(f"no RGB/XYZ/Z channels in EXR (found {', '.join(sorted(chans))}); "
                    "pick three with --channels A,B,C", path)


# ---------------------------------------------------------------- masks & K

def read_mask(path, shape=None) -> np.ndarray:
    """Read a mask (white/non-zero = object) as a bool array, checking its shape."""
    path = Path(path)
    arr, bitdepth = read_array(path)
    if arr.ndim == 3:
        if arr.shape[2] in (2, 4):  # grey+alpha or RGBA: use alpha where it is not all opaque
            alpha = arr[..., -1]
            arr = arr[..., 0] if np.all(alpha == alpha.flat[0]) else alpha
        else:
            arr = arr[..., 0]
    if arr.dtype == np.bool_:
        mask = arr.copy()
    elif bitdepth:
        mask = arr >= (2**bitdepth) // 2
    else:
        mask = np.nan_to_num(arr.astype(np.float64)) > 0.5
    if shape is not None and mask.shape != tuple(shape):
        raise FninError(
            f"mask is {mask.shape[1]}x{mask.shape[0]} but the normal map is "
            f"{shape[1]}x{shape[0]}; pass the mask that belongs to this normal map",
            path,
        )
    return mask


def read_K(path) -> np.ndarray:
    """Read 3x3 pinhole intrinsics written by np.savetxt (or any whitespace 3x3 text)."""
    path = Path(path)
    if not path.exists():
        raise FninError("intrinsics file not found", path)
    try:
        K = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except Exception:
        raise FninError("cannot parse intrinsics; expected 3 rows of 3 numbers (np.savetxt of K)", path) from None
    if K.shape != (3, 3):
        raise FninError(f"intrinsics must be 3x3, got {K.shape[0]}x{K.shape[1]}", path)
    return K


def _write_exr(path: Path, channels: dict) -> None:
    import OpenEXR

    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    OpenEXR.File(header, {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in channels.items()}).write(str(path))


def write_png(path: Path, arr: np.ndarray) -> None:
    """Write uint8/uint16 grey (H, W) or RGB/RGBA (H, W, C) PNG, keeping 16 bits."""
    _write_png_file(path, arr)


def write_array(path, arr: np.ndarray, force: bool = False) -> Path:
    """Write a float map (depth, weights, normals) atomically by suffix.

    .npy/.exr/.tif keep float32 exactly (NaN outside the mask). .png stores a 16-bit
    grey picture normalised to the finite range (lossy), background 0, with the scale
    and offset in text chunks (:mod:`.depth`; ``io.read_depth`` reads it back).
    """
    path = check_output(path, force)
    suf = _suffix(path)
    arr = np.asarray(arr)
    fmt = BY_SUFFIX.get(suf)
    if fmt is None:
        raise FninError(f"unknown output type '{suf}'; use one of {', '.join(DEPTH_SUFFIXES)}", path)
    with atomic_path(path) as tmp:
        fmt.write(tmp, arr)
    return path


def read_depth(path) -> np.ndarray:
    """Read a depth (or weights) map written by fnin as float32, NaN where there is none.

    .exr/.npy/.tif hold the floats themselves; a .png is decoded with the scale and
    offset in its text chunks (see the module docstring), and refused without them.
    """
    path = Path(path)
    arr, _ = read_array(path)
    if arr.ndim == 3:
        if arr.shape[2] != 1:
            raise FninError(f"a depth map has one channel, this file has {arr.shape[2]}", path)
        arr = arr[..., 0]
    if path.suffix.lower() != ".png":
        return np.asarray(arr, np.float32)
    try:
        text = png_text(path)
        scale, offset = float(text[SCALE_KEY]), float(text[OFFSET_KEY])
    except (KeyError, ValueError):
        raise FninError(f"this PNG does not record its depth scale ({SCALE_KEY}/{OFFSET_KEY} text chunks), so "
                        "its values cannot be turned into depths; write depth as .exr, .npy or .tif", path) from None
    except Exception as exc:
        raise FninError(f"cannot read the PNG's text chunks ({type(exc).__name__}); is it corrupt?", path) from None
    values = arr.astype(np.float64)
    depth = offset + scale * (values - 1.0)
    depth[arr == 0] = np.nan
    return depth.astype(np.float32)


def _write_npy(path: Path, arr: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, arr.astype(np.float32) if arr.dtype.kind == "f" else arr)


def _write_exr_map(path: Path, arr: np.ndarray) -> None:
    if arr.ndim == 3:
        _write_exr(path, {"RGB": arr[..., :3]})
    else:
        _write_exr(path, {"Z": arr})


def _write_tiff(path: Path, arr: np.ndarray) -> None:
    import tifffile

    # explicit photometric: tifffile warns that (H, W, 3) float data will
    # otherwise become 3 greyscale pages in future versions
    rgb = arr.ndim == 3 and arr.shape[2] in (3, 4)
    tifffile.imwrite(path, arr.astype(np.float32), photometric="rgb" if rgb else "minisblack")


def _write_png_map(path: Path, arr: np.ndarray) -> None:
    if arr.dtype in (np.uint8, np.uint16):
        write_png(path, arr)
    elif arr.ndim == 2:  # a depth/weights map: 16-bit with its scale in text chunks (io.depth)
        write_depth_png(path, arr)
    else:
        write_png(path, to_uint16(arr))


def to_uint16(arr: np.ndarray) -> np.ndarray:
    """Map finite values linearly to 1..65535 (0 = NaN/background)."""
    return to_steps(arr)[0]


def write_normal_map(path, normals: np.ndarray, force: bool = False, bits: int = 16) -> Path:
    """Write internal (OpenCV-frame) normals in the photometric-stereo file convention.

    PNG: RGB = (n_ps + 1) / 2 with ``bits`` bits, invalid pixels white; float files
    store n_ps itself (NaN where invalid).
    """
    path = check_output(path, force)
    ps = from_internal(normals, "ps")
    suf = _suffix(path)
    if suf == ".png":
        maxval = 2**bits - 1
        enc = np.clip(np.round((np.nan_to_num(ps, nan=1.0) + 1) / 2 * maxval), 0, maxval)
        enc[~np.isfinite(ps).all(-1)] = maxval
        with atomic_path(path) as tmp:
            write_png(tmp, enc.astype(np.uint16 if bits == 16 else np.uint8))
        return path
    return write_array(path, ps.astype(np.float32), force=True)


# ---------------------------------------------------------------- header probes

def _probe_png(path: Path):
    with open(path, "rb") as fh:
        head = fh.read(24)
    if len(head) == 24 and head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        w, h = struct.unpack(">II", head[16:24])
        return int(h), int(w)
    return None


def _probe_npy(path: Path):
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, _ = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, _ = np.lib.format.read_array_header_2_0(fh)
    return (int(shape[0]), int(shape[1])) if len(shape) >= 2 else None


def _probe_tiff(path: Path):
    import tifffile

    with tifffile.TiffFile(path) as tf:
        shape = tf.pages[0].shape
    return (int(shape[0]), int(shape[1])) if len(shape) >= 2 else None


def _probe_exr(path: Path):
    import OpenEXR

    lo, hi = OpenEXR.File(str(path), header_only=True).header()["dataWindow"]
    return int(hi[1] - lo[1] + 1), int(hi[0] - lo[0] + 1)


# ---------------------------------------------------------------- the formats

@dataclass(frozen=True)
class Format:
    """One image file format.

    Attributes
    ----------
    suffixes : tuple of str
        Lower-case suffixes, with the dot.
    read : callable
        ``read(path) -> (array, bitdepth)``: bitdepth 8/16 for integer data, None for float.
    probe : callable
        ``probe(path) -> (H, W) or None``: the size from the header only (memory check).
    write : callable
        ``write(path, array)``: a float map (depth, weights, normals) or integer picture.
    """

    suffixes: tuple
    read: Callable
    probe: Callable
    write: Callable


FORMATS = (
    Format((".exr",), lambda p: (_read_exr(p), None), _probe_exr, _write_exr_map),
    Format((".png",), _read_png, _probe_png, _write_png_map),
    Format((".npy",), _read_npy, _probe_npy, _write_npy),
    Format((".tif", ".tiff"), _read_tiff, _probe_tiff, _write_tiff),
)
BY_SUFFIX = {suf: f for f in FORMATS for suf in f.suffixes}
NORMAL_SUFFIXES = tuple(BY_SUFFIX)                     # .exr .png .npy .tif .tiff
MASK_SUFFIXES = NORMAL_SUFFIXES
DEPTH_SUFFIXES = NORMAL_SUFFIXES


def probe_shape(path) -> tuple[int, int] | None:
    """(H, W) of an image file from its header only, without reading the pixels.

    Returns None for an unknown suffix or an unreadable header (the real reader then
    reports the problem).
    """
    path = Path(path)
    fmt = BY_SUFFIX.get(path.suffix.lower())
    if fmt is None:
        return None
    try:
        return fmt.probe(path)
    except Exception:  # a corrupt header is reported by the real reader
        return None
