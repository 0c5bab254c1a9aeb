"""What a decoding of a normal map's file is, and how two differ.

A :class:`Decoding` says how raw file values become internal (OpenCV-frame) vectors: the
file-to-internal signs (a named ``--convention`` times any ``--flip``), the channel order and,
for float files, whether they hold n or (n + 1) / 2. :func:`decode` applies one,
:func:`given_decoding` builds the user's, and :func:`mistakes`, :func:`describe` and
:func:`options_to` say how far another is from it, in words and in options (the messages of
:func:`~fnin_cli.checks.decoding.check_decoding`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..conventions import SIGNS, canonical
from ..errors import FninError

AXES = "xyz"
# preference among named conventions when two express the same signs equally well
NAMED = ("ps", "directx", "opencv")


def flip_signs(flip: str) -> tuple:
    """``--flip`` value ('x', 'yz', 'none', '') -> sign multipliers (sx, sy, sz)."""
    f = (flip or "").lower().replace(",", "").replace(" ", "")
    if f in ("", "none"):
        return (1.0, 1.0, 1.0)
    if not set(f) <= set(AXES) or len(set(f)) != len(f):
        raise FninError(f"unknown --flip '{flip}'; use x, y, z or several of them (xy), or none")
    return tuple(-1.0 if a in f else 1.0 for a in AXES)


def flip_name(mult) -> str:
    """Sign multipliers -> the ``--flip`` value that gives them ('' when none)."""
    return "".join(a for a, m in zip(AXES, mult) if m < 0)


@dataclass(frozen=True)
class Decoding:
    """How raw file values become internal (OpenCV-frame) vectors.

    ``signs`` are the file-to-internal sign flips (``conventions.SIGNS`` for the named
    conventions, times any ``--flip``), ``channels`` the stored order ('rgb' or 'bgr'),
    ``float_encoding`` how a float file stores n: 'raw' (n itself) or 'half' ((n + 1) / 2).
    Integer images are always colour codes (n + 1) / 2 scaled to the type's range.
    """

    signs: tuple = (1.0, -1.0, -1.0)
    channels: str = "rgb"
    float_encoding: str = "raw"
    named: str | None = field(default=None, compare=False)   # the user's --convention, if any

    def express(self, prefer: str | None = None) -> tuple:
        """(named convention, flipped axes) for these signs: the convention that needs the
        fewest flipped axes, ``prefer`` (default: the user's, then ps, directx, opencv) on a tie."""
        prefer = prefer or self.named
        order = ([prefer] if prefer in SIGNS else []) + [n for n in NAMED if n != prefer]
        best = None
        for name in order:
            mult = tuple(float(a * b) for a, b in zip(self.signs, SIGNS[name]))
            k = sum(m < 0 for m in mult)
            if best is None or k < best[0]:
                best = (k, name, flip_name(mult))
        return best[1], best[2]

    @property
    def convention(self) -> str:
        """The named ``--convention`` part of :meth:`express`."""
        return self.express()[0]

    @property
    def flip(self) -> str:
        """The ``--flip`` part of :meth:`express` ('' when none)."""
        return self.express()[1]

    @property
    def name(self) -> str:
        conv, flip = self.express()
        parts = [conv]
        if flip:
            parts.append(f"flip-{flip}")
        if self.channels != "rgb":
            parts.append(self.channels)
        if self.float_encoding != "raw":
            parts.append(self.float_encoding)
        return "/".join(parts)


def decode(raw: np.ndarray, bitdepth: int | None, decoding: Decoding, out: np.ndarray | None = None) -> np.ndarray:
    """Raw file values to internal-frame vectors under ``decoding`` (float32, not normalised);
    ``out``: a float32 array of the result's shape to write them into (no temporary)."""
    arr = np.asarray(raw)[..., :3]
    if decoding.channels == "bgr":
        arr = arr[..., ::-1]
    # one affine map per channel, in place on a float32 copy: value * scale * sign - sign
    # (bit for bit conventions.decode, then 2x - 1 for 'half', then the signs: the signs
    # are +-1, so multiplying by them commutes with the rounding)
    signs = np.asarray(decoding.signs, np.float32)
    if bitdepth is not None or arr.dtype.kind in "ub":
        scale, shift = np.float32(2.0 / float(2 ** (bitdepth or 8) - 1)), True
    elif decoding.float_encoding == "half":
        scale, shift = np.float32(2.0), True
    else:
        scale, shift = np.float32(1.0), False
    if out is None:
        vec = arr.astype(np.float32)
    else:
        vec = out
        np.copyto(vec, arr, casting="unsafe")    # the same values as astype(float32)
    vec *= scale * signs
    if shift:
        vec -= signs
    return vec


def given_decoding(convention: str = "ps", channels: str = "rgb", float_encoding: str = "raw",
                   flip: str = "") -> Decoding:
    """The :class:`Decoding` of the user's options (convention name, channel order, float
    encoding, flipped axes)."""
    channels = channels.lower()
    if channels not in ("rgb", "bgr"):
        raise FninError(f"unknown channel order '{channels}'; use rgb or bgr")
    if float_encoding not in ("raw", "half"):
        raise FninError(f"unknown float encoding '{float_encoding}'; use raw or half")
    conv = canonical(convention)
    signs = tuple(float(a * b) for a, b in zip(SIGNS[conv], flip_signs(flip)))
    return Decoding(signs, channels, float_encoding, conv)



def mistakes(d: Decoding, given: Decoding) -> int:
    """How many independent mistakes turn ``given`` into ``d``: another named convention,
    each further flipped axis, the channel order (the float encoding is decided apart)."""
    flips = {a for a, s, g in zip(AXES, d.signs, given.signs) if s != g}
    best = len(flips)
    for name in NAMED:
        named = {a for a, s, g in zip(AXES, SIGNS[name], given.signs) if s != g}
        if named:
            best = min(best, 1 + len(flips ^ named))
    return best + (d.channels != given.channels)


def describe(d: Decoding, given: Decoding) -> str:
    """What the file looks like relative to the given decoding, in words."""
    flips = "".join(a for a, s, g in zip(AXES, d.signs, given.signs) if s != g)
    conv = d.express(given.named)[0]
    parts = []
    words = {"x": "mirrored or x negated (x flipped)", "z": "z flipped",
             "xy": "x and y flipped (rotated 180 degrees?)", "xz": "x and z flipped",
             "xyz": "x, y and z flipped"}
    if flips == "y":
        parts.append("green-up (y flipped)" if conv == "ps" else "green-down (y flipped)")
    elif flips == "yz":
        parts.append("in the OpenCV frame (y and z flipped)" if conv == "opencv" else "y and z flipped")
    elif flips:
        parts.append(words[flips])
    if d.channels != given.channels:
        parts.append("channel order reversed (BGR, as cv2.imwrite writes)")
    if d.float_encoding != given.float_encoding:
        parts.append("stored as (n+1)/2 in a float file")
    return "; ".join(parts)


def options_to(d: Decoding, given: Decoding) -> str:
    """The command-line options that turn ``given`` into ``d``: the fewest, a named
    convention before a flip (never the convention already in use)."""
    gconv, gflip = given.express()
    best = None
    for name in [gconv] + [n for n in NAMED if n != gconv]:
        mult = tuple(float(a * b) for a, b in zip(d.signs, SIGNS[name]))
        flip = flip_name(mult)
        opts = []
        if name != gconv:
            opts.append(f"--convention {name}")
        if flip != gflip:
            opts.append(f"--flip {flip or 'none'}")
        key = (len(opts), len(flip))
        if best is None or key < best[0]:
            best = (key, opts)
    opts = best[1]
    if d.channels != given.channels:
        opts.append(f"--channels {d.channels}")
    if d.float_encoding != given.float_encoding:
        opts.append(f"--float-encoding {d.float_encoding}")
    return " ".join(opts)
