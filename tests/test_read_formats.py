"""Every format and bit depth that read before the libpng reader reads the same arrays.

Each case writes a small file with a third-party writer (pypng, tifffile, OpenEXR, numpy)
and states the array (and bit depth) that ``read_array`` returned before PNGs went through
imagecodecs: the pixel values themselves, palettes expanded, tRNS as an alpha channel,
1/2/4-bit grey and sBIT depths scaled to 8 bits (the old pypng path's rules). These
expectations were checked against the former reader (pypng plus the numpy decoder at
054941e) before it was removed.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from fnin_cli.io import read_array

H, W = 3, 4


def _pypng(path, rows, **kw):
    import png

    with open(path, "wb") as fh:
        png.Writer(W, H, **kw).write(fh, [list(map(int, r)) for r in np.asarray(rows)])


def _vals(bits, planes, seed):
    a = np.random.default_rng(seed).integers(0, 2**bits, (H, W, planes))
    a.flat[0], a.flat[1] = 0, 2**bits - 1          # both ends of the range
    return a


def _scaled8(v, bits):  # the old rule for depths other than 8 and 16
    return np.round(v * (255.0 / (2**bits - 1))).astype(np.uint8)


PALETTE = [(i * 10, 255 - i * 10, (i * 37) % 256) for i in range(16)]
PALETTE_A = [p + (i * 16,) for i, p in enumerate(PALETTE)]


def png_cases():
    """(name, writer(path), expected array, expected bit depth)."""
    out = []
    for bits in (1, 2, 4):
        v = _vals(bits, 1, bits)[..., 0]
        out.append((f"grey{bits}", lambda p, v=v, b=bits: _pypng(p, v, greyscale=True, bitdepth=b),
                    _scaled8(v, bits), 8))
    for bits, dt in ((8, np.uint8), (16, np.uint16)):
        for planes, kw in ((1, dict(greyscale=True)), (2, dict(greyscale=True, alpha=True)),
                           (3, dict(greyscale=False)), (4, dict(greyscale=False, alpha=True))):
            v = _vals(bits, planes, bits + planes)
            exp = v[..., 0] if planes == 1 else v
            out.append((f"p{planes}_{bits}", lambda p, v=v, kw=kw, b=bits: _pypng(p, v.reshape(H, -1), bitdepth=b, **kw),
                        exp.astype(dt), bits))
        # a tRNS colour key: pypng (and libpng) add an alpha channel, 0 where the key is
        g = np.random.default_rng(bits).integers(0, 4, (H, W))
        alpha = np.where(g == 2, 0, 2**bits - 1)
        out.append((f"grey{bits}_trns", lambda p, g=g, b=bits: _pypng(p, g, greyscale=True, bitdepth=b, transparent=2),
                    np.stack([g, alpha], -1).astype(dt), bits))
        c = np.random.default_rng(bits + 1).integers(0, 2, (H, W, 3))
        alpha = np.where((c == 1).all(-1), 0, 2**bits - 1)
        out.append((f"rgb{bits}_trns", lambda p, c=c, b=bits: _pypng(p, c.reshape(H, -1), greyscale=False,
                                                                     bitdepth=b, transparent=(1, 1, 1)),
                    np.concatenate([c, alpha[..., None]], -1).astype(dt), bits))
        # Adam7 interlaced
        v = _vals(bits, 3, 40 + bits)
        out.append((f"rgb{bits}_interlaced", lambda p, v=v, b=bits: _pypng(p, v.reshape(H, -1), greyscale=False,
                                                                           bitdepth=b, interlace=True),
                    v.astype(dt), bits))
    g = np.random.default_rng(5).integers(0, 4, (H, W))
    out.append(("grey2_trns", lambda p: _pypng(p, g, greyscale=True, bitdepth=2, transparent=1),
                np.stack([_scaled8(g, 2), np.where(g == 1, 0, 255)], -1).astype(np.uint8), 8))
    idx = np.random.default_rng(6).integers(0, 16, (H, W))
    for bits in (4, 8):
        out.append((f"palette{bits}", lambda p, b=bits: _pypng(p, idx, palette=PALETTE, bitdepth=b),
                    np.asarray(PALETTE, np.uint8)[idx], 8))
    out.append(("palette8_alpha", lambda p: _pypng(p, idx, palette=PALETTE_A, bitdepth=8),
                np.asarray(PALETTE_A, np.uint8)[idx], 8))
    # sBIT: pypng stores 12-bit values in 16 bits (and 5-bit in 8) with an sBIT chunk; the
    # old reader shifted them back to 12 (5) bits and scaled those to 8
    v12 = _vals(12, 1, 7)[..., 0]
    out.append(("grey12_sbit", lambda p: _pypng(p, v12, greyscale=True, bitdepth=12), _scaled8(v12, 12), 8))
    v5 = _vals(5, 3, 8)
    out.append(("rgb5_sbit", lambda p: _pypng(p, v5.reshape(H, -1), greyscale=False, bitdepth=5),
                _scaled8(v5, 5), 8))
    return out


@pytest.mark.parametrize("name,write,expected,depth", png_cases(), ids=[c[0] for c in png_cases()])
def test_png_variants_read_the_same_arrays(tmp_path, name, write, expected, depth):
    path = tmp_path / f"{name}.png"
    write(path)
    arr, bitdepth = read_array(path)
    assert bitdepth == depth
    assert arr.dtype == expected.dtype and arr.shape == expected.shape
    np.testing.assert_array_equal(arr, expected)


def test_png_sbit_literal(tmp_path):
    """One sBIT case spelled out: 12-bit 4095 and 2048 in a 16-bit file read as 255 and 128."""
    _pypng(tmp_path / "a.png", np.array([[0, 2048, 4095, 1]] * H), greyscale=True, bitdepth=12)
    arr, bitdepth = read_array(tmp_path / "a.png")
    np.testing.assert_array_equal(arr, np.array([[0, 128, 255, 0]] * H, np.uint8))
    assert bitdepth == 8


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _encode(arr: np.ndarray, filters) -> bytes:
    """A PNG of ``arr`` (H, W, C) uint8/uint16 whose row r uses filter ``filters[r % len]``."""
    h, w, c = arr.shape
    bd = 16 if arr.dtype == np.uint16 else 8
    raw = arr.astype(">u2" if bd == 16 else np.uint8).tobytes()
    bpp, rb = c * bd // 8, w * c * bd // 8
    out, prev = bytearray(), bytes(rb)
    for r in range(h):
        line = raw[r * rb:(r + 1) * rb]
        f = filters[r % len(filters)]
        left = lambda i: line[i - bpp] if i >= bpp else 0                    # noqa: E731
        upleft = lambda i: prev[i - bpp] if i >= bpp else 0                  # noqa: E731
        pred = [0, lambda i: left(i), lambda i: prev[i], lambda i: (left(i) + prev[i]) // 2,
                lambda i: _paeth(left(i), prev[i], upleft(i))][f]
        out.append(f)
        out.extend((line[i] - (pred(i) if f else 0)) % 256 for i in range(rb))
        prev = line
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bd, colour, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(bytes(out))) + _chunk(b"IEND", b""))


@pytest.mark.parametrize("dtype,channels", [(np.uint16, 3), (np.uint8, 1), (np.uint16, 4), (np.uint8, 2)])
@pytest.mark.parametrize("filters", [(0,), (1,), (2,), (3,), (4,), (1, 2, 0, 3, 4)])
def test_png_every_row_filter(tmp_path, dtype, channels, filters):
    arr = np.random.default_rng(3).integers(0, np.iinfo(dtype).max + 1, size=(9, 7, channels)).astype(dtype)
    path = tmp_path / "a.png"
    path.write_bytes(_encode(arr, filters))
    got, bitdepth = read_array(path)
    np.testing.assert_array_equal(got, arr[..., 0] if channels == 1 else arr)
    assert got.dtype == dtype and bitdepth == (16 if dtype == np.uint16 else 8)


@pytest.mark.parametrize("dtype,depth", [(np.uint8, 8), (np.uint16, 16), (np.int16, None), (np.int32, None),
                                         (np.float32, None), (np.float64, None), (np.float16, None)])
@pytest.mark.parametrize("planes", [1, 3, 4])
def test_tiff_reads_the_same_arrays(tmp_path, dtype, depth, planes):
    import tifffile

    rng = np.random.default_rng(planes)
    a = (rng.normal(size=(H, W, planes)) * 100).astype(dtype) if np.dtype(dtype).kind in "if" else \
        rng.integers(0, np.iinfo(dtype).max, (H, W, planes)).astype(dtype)
    a = a[..., 0] if planes == 1 else a
    tifffile.imwrite(tmp_path / "a.tif", a, photometric="rgb" if planes >= 3 else "minisblack")
    arr, bitdepth = read_array(tmp_path / "a.tif")
    assert arr.dtype == a.dtype and bitdepth == depth
    np.testing.assert_array_equal(arr, a)


def _exr(path, channels: dict, half: bool):
    import OpenEXR

    dt = np.float16 if half else np.float32
    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    OpenEXR.File(header, {k: np.ascontiguousarray(v, dtype=dt) for k, v in channels.items()}).write(str(path))


EXR_CASES = [
    ("RGB", {"R": 0, "G": 1, "B": 2}, None, (0, 1, 2)),
    ("XYZ", {"X": 0, "Y": 1, "Z": 2}, None, (0, 1, 2)),
    ("xyz", {"x": 0, "y": 1, "z": 2}, None, (0, 1, 2)),
    ("N.XYZ", {"N.X": 0, "N.Y": 1, "N.Z": 2, "A": 3}, None, (0, 1, 2)),
    ("normal.RGB+beauty", {"normal.R": 0, "normal.G": 1, "normal.B": 2, "beauty.R": 3, "beauty.G": 3,
                           "beauty.B": 3}, None, (0, 1, 2)),
    ("named", {"nx": 0, "ny": 1, "nz": 2}, ("nx", "ny", "nz"), (0, 1, 2)),
    ("named_reordered", {"nx": 0, "ny": 1, "nz": 2}, ("nz", "nx", "ny"), (2, 0, 1)),
    ("Z", {"Z": 0}, None, 0),
    ("depth+mask", {"depth": 1, "mask": 3}, None, 1),
    ("one", {"whatever": 2}, None, 2),
]


@pytest.mark.parametrize("half", [False, True], ids=["float", "half"])
@pytest.mark.parametrize("name,layout,channels,expect", EXR_CASES, ids=[c[0] for c in EXR_CASES])
def test_exr_reads_the_same_arrays(tmp_path, half, name, layout, channels, expect):
    planes = np.random.default_rng(9).normal(size=(4, H, W)).astype(np.float16 if half else np.float32)
    _exr(tmp_path / "a.exr", {k: planes[i] for k, i in layout.items()}, half)
    arr, bitdepth = read_array(tmp_path / "a.exr", channels=channels)
    exp = np.stack([planes[i] for i in expect], -1) if isinstance(expect, tuple) else planes[expect]
    assert bitdepth is None and arr.dtype == np.float32
    np.testing.assert_array_equal(arr, exp.astype(np.float32))


@pytest.mark.parametrize("dtype,depth", [(np.uint8, 8), (np.uint16, 16), (np.float32, None), (np.float64, None),
                                         (np.int16, None), (bool, None)])
def test_npy_reads_the_same_arrays(tmp_path, dtype, depth):
    a = (np.random.default_rng(1).normal(size=(H, W, 3)) * 50).astype(dtype)
    np.save(tmp_path / "a.npy", a)
    arr, bitdepth = read_array(tmp_path / "a.npy")
    assert arr.dtype == a.dtype and bitdepth == depth
    np.testing.assert_array_equal(arr, a)
