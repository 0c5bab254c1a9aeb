"""Depth maps as files: the 16-bit PNG with its scale on record, and ``read_depth``.

A depth (or weights) map written as PNG is a 16-bit grey picture: 0 = no depth
(NaN, outside the mask) and 1..65535 the finite range, linearly. The PNG carries the
mapping in text chunks (tEXt), so the depth can be read back::

    fnin:depth_scale   float, units per step
    fnin:depth_offset  float, the depth of value 1
    fnin:nan           "0" (the value that means no depth)

    depth = offset + scale * (value - 1)      where value > 0, else NaN

The quantisation step is ``scale`` = (max - min) / 65534. EXR, NPY and TIFF keep
float32 exactly and are the formats to prefer; ``io.read_depth`` (:mod:`.formats`)
reads all four.
"""

from __future__ import annotations

import io as _bytes_io
import struct
import zlib
from pathlib import Path

import numpy as np

from ..errors import FninError
from .png_fast import SIGNATURE

SCALE_KEY = "fnin:depth_scale"
OFFSET_KEY = "fnin:depth_offset"
NAN_KEY = "fnin:nan"


def to_steps(arr: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(uint16 values, lo, hi): finite values mapped linearly from lo..hi to 1..65535, the
    rest 0 (computed in ``arr``'s own float type; lo = hi = 0 without finite values)."""
    finite = np.isfinite(arr)
    out = np.zeros(arr.shape, np.uint16)
    lo = hi = 0.0
    if finite.any():
        lo, hi = float(arr[finite].min()), float(arr[finite].max())
        step = 65534.0 / (hi - lo) if hi > lo else 0.0
        out[finite] = (1 + np.round((arr[finite] - lo) * step)).astype(np.uint16)
    return out, lo, hi


def encode_depth(arr: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Float map -> (uint16 values, scale, offset): finite values to 1..65535, NaN to 0."""
    out, lo, hi = to_steps(np.asarray(arr, np.float64))
    return out, (hi - lo) / 65534.0, lo


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_depth_png(path, arr: np.ndarray) -> None:
    """Write a float map as a 16-bit grey PNG with its scale and offset in tEXt chunks
    (``path`` is written directly; callers make it atomic)."""
    import png

    values, scale, offset = encode_depth(arr)
    h, w = values.shape
    buf = _bytes_io.BytesIO()
    png.Writer(w, h, greyscale=True, bitdepth=16, compression=6).write(buf, values.reshape(h, w))
    data = buf.getvalue()
    ihdr_end = len(SIGNATURE) + 8 + 13 + 4  # signature, IHDR length+type, IHDR data, CRC
    text = b"".join(_chunk(b"tEXt", f"{k}\0{v}".encode("latin-1"))
                    for k, v in ((SCALE_KEY, repr(scale)), (OFFSET_KEY, repr(offset)), (NAN_KEY, "0")))
    with open(path, "wb") as fh:
        fh.write(data[:ihdr_end] + text + data[ihdr_end:])


def png_text(path) -> dict:
    """The tEXt chunks of a PNG as {key: value}."""
    import png

    out = {}
    for kind, data in png.Reader(filename=str(path)).chunks():
        if kind == b"tEXt" and b"\0" in data:
            k, v = data.split(b"\0", 1)
            out[k.decode("latin-1")] = v.decode("latin-1")
        if kind == b"IDAT":
            break
    return out
