"""PNG files: decoding and encoding through imagecodecs (libpng), with the text chunks fnin uses.

Reading gives the arrays pypng's ``asDirect`` gives (tested on every colour type
and bit depth, ``tests/test_read_formats.py``): 8/16-bit grey, grey+alpha, RGB and RGBA
as they are; palettes expanded to RGB (RGBA with a tRNS chunk); a tRNS colour key adds an
alpha channel; 1/2/4-bit grey scaled to 8 bits; an sBIT chunk reduces the values to its
significant bits, then to 8 bits when that is not 8 or 16. libpng decodes a 24 MP 16-bit
RGB map in 0.8 s, pypng in about 8.5 s (docs/decisions.md#input-path). Interlaced (Adam7) files are rare and make libpng print
a warning to stderr: they still go through pypng.

Writing uses libpng too: a 24 MP 16-bit depth map in 0.9 s (level 1: 5.4 MB), pypng in
5.6 s (9.0 MB).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from ..errors import FninError

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# zlib level of the PNGs fnin writes: level 1 is 6x faster than pypng's 6 and, with
# libpng's row filters, smaller (24 MP depth map: 0.9 s, 5.4 MB; docs/decisions.md#input-path)
LEVEL = 1


def chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def header_chunks(data: bytes) -> dict:
    """The chunks before the first IDAT as {type: data} (text chunks: {'tEXt': [data, ...]}).

    Raises :class:`ValueError` when ``data`` is not a PNG with an IHDR chunk first.
    """
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file (no PNG signature)")
    out: dict = {"tEXt": []}
    pos = len(SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if pos == len(SIGNATURE) and (kind != b"IHDR" or length != 13):
            raise ValueError("no PNG header (IHDR)")
        if kind in (b"IDAT", b"IEND"):
            break
        body = data[pos + 8:pos + 8 + length]
        if kind == b"tEXt":
            out["tEXt"].append(body)
        else:
            out[kind.decode("latin-1")] = body
        pos += 12 + length
    if "IHDR" not in out or len(out["IHDR"]) != 13:
        raise ValueError("no PNG header (IHDR)")
    return out


def ihdr(chunks: dict) -> tuple:
    """(width, height, bitdepth, colour type, interlace) of :func:`header_chunks`' IHDR."""
    w, h, bitdepth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks["IHDR"])
    return w, h, bitdepth, colour, interlace


def read_png(path, check_size=None) -> tuple[np.ndarray, int]:
    """``(array, bitdepth)`` of a PNG file: (H, W) for grey, else (H, W, planes); uint16
    for 16-bit files, uint8 otherwise (see the module docstring for what is converted).

    ``check_size(shape, path)`` is called with the header's (H, W) before decoding.
    """
    path = Path(path)
    data = path.read_bytes()
    chunks = header_chunks(data)
    width, height, bitdepth, colour, interlace = ihdr(chunks)
    if check_size is not None:
        check_size((height, width), path)
    if interlace:
        return _read_pypng(path)
    import imagecodecs

    arr = imagecodecs.png_decode(data)
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[..., 0]
    depth = 16 if arr.dtype == np.uint16 else 8
    if "sBIT" in chunks:
        arr, depth = _significant_bits(arr, chunks["sBIT"], 8 if colour == 3 else bitdepth)
    return arr, depth


def _significant_bits(arr: np.ndarray, sbit: bytes, bitdepth: int) -> tuple[np.ndarray, int]:
    """pypng's sBIT handling: values shifted down to max(sBIT) bits, then (as fnin did
    with any depth other than 8 and 16) scaled to 8 bits."""
    bits = max(sbit) if sbit else 0
    if not sbit or bits > bitdepth or min(sbit) <= 0:
        raise ValueError(f"sBIT chunk {tuple(sbit)} does not fit a {bitdepth}-bit image")
    if bits == bitdepth:
        return arr, (16 if arr.dtype == np.uint16 else 8)
    if bitdepth < 8:   # libpng scaled 1/2/4-bit grey to 8 bits: back to the file's values
        arr = arr // np.uint8(255 // (2**bitdepth - 1))
    v = arr >> (bitdepth - bits)
    if bits == 8:
        return v.astype(np.uint8), 8
    return (v.astype(np.float64) * (255.0 / (2**bits - 1))).round().astype(np.uint8), 8


def _read_pypng(path: Path) -> tuple[np.ndarray, int]:
    """Interlaced PNGs, through pypng (libpng decodes them but prints a warning)."""
    import png

    width, height, rows, info = png.Reader(filename=str(path)).asDirect()
    planes, bitdepth = info["planes"], info["bitdepth"]
    arr = np.vstack([np.asarray(r, dtype=np.uint16 if bitdepth > 8 else np.uint8) for r in rows])
    arr = arr.reshape(height, width, planes)
    if planes == 1:
        arr = arr[..., 0]
    if bitdepth not in (8, 16):  # 1/2/4-bit images and sBIT depths are rescaled to 8 bits
        arr = (arr.astype(np.float64) * (255.0 / (2**bitdepth - 1))).round().astype(np.uint8)
        bitdepth = 8
    return arr, bitdepth


def write_png(path, arr: np.ndarray, text: dict | None = None) -> None:
    """Write uint8/uint16 grey (H, W) or grey+alpha/RGB/RGBA (H, W, C) PNG, keeping 16
    bits; ``text``: {key: value} written as tEXt chunks after the header. ``path`` is
    written directly (callers make it atomic)."""
    import imagecodecs

    arr = np.ascontiguousarray(arr)
    if arr.dtype not in (np.uint8, np.uint16):
        raise FninError(f"a PNG holds uint8 or uint16 values, got {arr.dtype}", path)
    data = imagecodecs.png_encode(arr, level=LEVEL)
    if text:
        end = len(SIGNATURE) + 8 + 13 + 4  # signature, IHDR length+type, IHDR data, CRC
        extra = b"".join(chunk(b"tEXt", f"{k}\0{v}".encode("latin-1")) for k, v in text.items())
        data = data[:end] + extra + data[end:]
    with open(path, "wb") as fh:
        fh.write(data)


def png_text(path) -> dict:
    """The tEXt chunks (before the image data) of a PNG as {key: value}."""
    out = {}
    for body in header_chunks(Path(path).read_bytes())["tEXt"]:
        if b"\0" in body:
            k, v = body.split(b"\0", 1)
            out[k.decode("latin-1")] = v.decode("latin-1")
    return out
