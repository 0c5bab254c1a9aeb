"""Check a normal map's decoding against its data: integrability, facing, unit length.

Normals of a real surface form a curl-free gradient field; a mis-decoded map (green-down
read as green-up, BGR channel order, a float file holding (n + 1) / 2, z flipped) does not
integrate, or faces away from the camera, or has non-unit vectors. This module scores the
user's decoding and the plausible mistakes on the *raw* array as read from the file and
says which one the data support.

How the score works (cheap: one pass over the image, the rest on a coarse grid)
-----------------------------------------------------------------------------
1. The raw array is block-averaged (k x k blocks fully inside the mask and finite; k grows
   with the image so that about 5 000 blocks remain). Every candidate decoding is affine
   per channel, so decoding the block means equals block-averaging the decoded normals:
   all candidates are then evaluated on the small grid, and on grids of 2k and 4k blocks
   (noise averages out); a candidate's score is its lowest over the scales.
2. Per candidate: renormalise, gradients of the unknown under the camera (orthographic
   p = -n_x/n_z, q = -n_y/n_z; perspective the log-depth gradients
   -n_x/(f_x n.r), -n_y/(f_y n.r), via :meth:`Camera.gradients` of the block camera).
3. Per 2x2 cell of blocks (all four valid and not grazing, |cos(n, ray)| >= 0.15):
   c = dp/dv - dq/du (the curl, trapezoidal) and s = dp/dv + dq/du (twice the mixed
   second derivative). The score is the weighted mean of |c| / (|c| + |s|) with weights
   min(|c| + |s|, 90th percentile): 0 for an integrable field, 0.5 for pure noise, about 1
   for a y-flipped field (flipping y swaps c and s exactly in the orthographic case).
   It is scale-free and a few wild cells (depth jumps, grazing rims) cannot dominate.
4. The unit-length criterion (fraction of masked pixels with ||n| - 1| <= 0.1) decides
   whether float data hold (n + 1) / 2; the facing-away fraction decides z.

Decision: the given decoding is kept unless an alternative is *clearly better*: its score
is below ``RATIO`` (0.5) times the given one's, below ``ALT_MAX`` (0.25) in absolute terms,
and the given score is above the noise floor ``FLOOR`` (0.2); or the given decoding faces
away from the camera (> 50 %) and an alternative does not; or the float data are (n+1)/2.
With fewer than ``MIN_PIXELS`` valid pixels or ``MIN_CELLS`` cells, or near-planar data
(95 % of the normals within ``PLANAR_DEG`` of their mean: every decoding of a plane is a
plane), the integrability test cannot tell and the given decoding is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..camera import Camera
from .. import conventions
from ..conventions import SIGNS, canonical
from ..errors import FninError

# --- thresholds: correct maps score 0.04-0.25, wrong decodings 0.47-0.91 on shared/data and
# samples (docs/results.md#mis-encoded-inputs, benchmarks/convention_check.py) ----------
RATIO = 0.5        # alternative must score below RATIO * given score
FLOOR = 0.2        # given score must exceed this (0.5 = noise, ~0.01-0.1 = correct maps)
ALT_MAX = 0.25     # and the alternative must itself look integrable
MIN_PIXELS = 1000  # fewer valid pixels: cannot tell
MIN_CELLS = 100    # fewer scored cells: cannot tell
GRAZING = 0.15     # |cos(normal, ray)| below this: cell ignored
FACING_MAX = 0.5   # given decoding facing away above this is implausible (same as pipeline)
ALT_FACING_MAX = 0.25  # an alternative must face the camera at least this well
BLOCK_TARGET = 5000  # about this many valid blocks (block size 2..16)
PLANAR_DEG = 8.0   # normals within this angle of their mean (95th pct): near-planar, cannot tell
SCALES = 3         # block sizes k, 2k, 4k
SCALE_MIN_CELLS = 300  # a coarser scale counts only with at least this many cells
UNIT_TOL = 0.1     # unit-length tolerance for the (n+1)/2 test

FLIPS = {"": (1.0, 1.0, 1.0), "y": (1.0, -1.0, 1.0), "z": (1.0, 1.0, -1.0), "yz": (1.0, -1.0, -1.0)}


@dataclass(frozen=True)
class Decoding:
    """How raw file values become internal (OpenCV-frame) vectors.

    ``signs`` are the file-to-internal sign flips (``conventions.SIGNS`` for the named
    conventions), ``channels`` the stored order ('rgb' or 'bgr'), ``float_encoding`` how a
    float file stores n: 'raw' (n itself) or 'half' ((n + 1) / 2). Integer images are
    always colour codes (n + 1) / 2 scaled to the type's range.
    """

    signs: tuple = (1.0, -1.0, -1.0)
    channels: str = "rgb"
    float_encoding: str = "raw"

    @property
    def convention(self) -> str | None:
        """The named ``--convention`` with these signs, or None (e.g. z alone flipped)."""
        for name, s in SIGNS.items():
            if tuple(float(x) for x in s) == tuple(self.signs):
                return name
        return None

    @property
    def name(self) -> str:
        conv = self.convention or "custom(%+d,%+d,%+d)" % tuple(int(s) for s in self.signs)
        parts = [conv]
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


def given_decoding(convention: str = "ps", channels: str = "rgb", float_encoding: str = "raw") -> Decoding:
    """The :class:`Decoding` of the user's options (convention name, channel order, float encoding)."""
    channels = channels.lower()
    if channels not in ("rgb", "bgr"):
        raise FninError(f"unknown channel order '{channels}'; use rgb or bgr")
    if float_encoding not in ("raw", "half"):
        raise FninError(f"unknown float encoding '{float_encoding}'; use raw or half")
    signs = tuple(float(x) for x in SIGNS[canonical(convention)])
    return Decoding(signs, channels, float_encoding)


@dataclass
class DecodingCheck:
    """Result of :func:`check_decoding`.

    ``chosen`` is the decoding to use (the given one unless ``changed``); ``scores`` maps
    each candidate's name to its integrability score (0 = integrable, 0.5 = noise, 1 = as
    far from integrable as a y-flipped field); ``facing_away`` and ``unit_fraction`` hold
    the other criteria; ``ratio`` = best alternative score / given score; ``confident``
    says the data decide (a change is made or proposed only when True); ``message`` is a
    one-line explanation ('' when nothing to say).
    """

    given: Decoding
    chosen: Decoding
    changed: bool
    confident: bool
    ratio: float
    scores: dict = field(default_factory=dict)
    facing_away: dict = field(default_factory=dict)
    unit_fraction: dict = field(default_factory=dict)
    reason: str = ""
    spread_deg: float = 0.0
    message: str = ""
    strict_message: str = ""
    block: int = 1
    cells: int = 0
    valid_pixels: int = 0

    def decode(self, raw: np.ndarray, bitdepth: int | None, out: np.ndarray | None = None) -> np.ndarray:
        """The raw array decoded with the chosen decoding (internal frame, not normalised;
        ``out``: see :func:`decode`)."""
        return decode(raw, bitdepth, self.chosen, out)

    def as_dict(self) -> dict:
        """JSON-ready summary (for the ``--json`` record)."""
        return {"convention": self.chosen.convention, "channels": self.chosen.channels,
                "float_encoding": self.chosen.float_encoding, "changed": self.changed,
                "confident": self.confident, "reason": self.reason,
                "scores": {k: round(v, 4) for k, v in self.scores.items()},
                "ratio": None if not np.isfinite(self.ratio) else round(self.ratio, 4)}


# ----------------------------------------------------------------- scoring internals

def _block_means(raw: np.ndarray, mask: np.ndarray, k: int):
    """Block means (Hc, Wc, 3) float64 of raw channels over k x k blocks fully valid."""
    h, w = mask.shape
    hc, wc = h // k, w // k
    a = raw[: hc * k, : wc * k, :3]
    m = mask[: hc * k, : wc * k]
    if a.dtype.kind == "f":
        m = m & np.isfinite(a).all(axis=-1)
    # k strided slices added, first along rows then columns: 8x faster than a reduction
    # over axes (1, 3). Row sums in float32 are exact for 16-bit codes (k <= 16).
    mk = m.reshape(hc * k, wc, k)
    fm = mk[:, :, 0].copy()
    for j in range(1, k):
        fm &= mk[:, :, j]
    fm = fm.reshape(hc, k, wc)
    full = fm[:, 0].copy()
    for j in range(1, k):
        full &= fm[:, j]
    ak = a.reshape(hc * k, wc, k, 3)
    rows = ak[:, :, 0].astype(np.float32)
    for j in range(1, k):
        rows += ak[:, :, j]
    rk = rows.reshape(hc, k, wc, 3)
    means = rk[:, 0].astype(np.float64)
    for j in range(1, k):
        means += rk[:, j]
    means /= float(k * k)
    means[~full] = np.nan
    return means, full


class _Grid:
    """Valid blocks of the coarse grid, their rays and the 2x2 cells between them (1-D)."""

    def __init__(self, full: np.ndarray, camera: Camera, origin=(0, 0)):
        self.idx = np.flatnonzero(full)
        r = camera.rays(full.shape, origin).reshape(-1, 3)[self.idx]
        self.r = r
        self.rnorm = np.linalg.norm(r, axis=-1)
        if camera.K is not None:
            self.fx, self.fy = float(camera.K[0, 0]), float(camera.K[1, 1])
        else:
            self.fx = self.fy = 1.0
        pos = np.full(full.size, -1, np.int64)
        pos[self.idx] = np.arange(self.idx.size)
        pos = pos.reshape(full.shape)
        a, b, c, d = pos[:-1, :-1], pos[:-1, 1:], pos[1:, :-1], pos[1:, 1:]
        cell = (a >= 0) & (b >= 0) & (c >= 0) & (d >= 0)
        self.corners = [x[cell] for x in (a, b, c, d)]  # (v,u) (v,u+1) (v+1,u) (v+1,u+1)


def _score(vec: np.ndarray, grid: _Grid) -> tuple[float, int, float]:
    """(integrability score, cells, facing-away fraction) of coarse vectors (N, 3)."""
    nrm = np.linalg.norm(vec, axis=-1)
    ok = nrm > 1e-6
    n = vec / np.where(ok, nrm, 1.0)[:, None]
    facing = conventions.facing_away_fraction(n, ok)
    ndr = np.sum(n * grid.r, axis=-1)
    good = ok & (np.abs(ndr) >= GRAZING * grid.rnorm)
    ndr = np.where(good, ndr, 1.0)
    p = -n[:, 0] / (grid.fx * ndr)
    q = -n[:, 1] / (grid.fy * ndr)
    a, b, c_, d = grid.corners
    cell = good[a] & good[b] & good[c_] & good[d]
    ncell = int(cell.sum())
    if ncell == 0:
        return float("nan"), 0, facing
    a, b, c_, d = a[cell], b[cell], c_[cell], d[cell]
    pv = 0.5 * (p[c_] + p[d] - p[a] - p[b])
    qu = 0.5 * (q[b] + q[d] - q[a] - q[c_])
    c = np.abs(pv - qu)
    m = c + np.abs(pv + qu)
    keep = m > 0
    if not keep.any():
        return 0.5, ncell, facing
    c, m = c[keep], m[keep]
    wgt = np.minimum(m, np.partition(m, int(0.9 * (m.size - 1)))[int(0.9 * (m.size - 1))])
    return float(np.sum(wgt * c / m) / np.sum(wgt)), ncell, facing


def _spread(vec: np.ndarray) -> float:
    """95th percentile angle (degrees) between the unit vectors and their mean direction."""
    n = vec / np.maximum(np.linalg.norm(vec, axis=-1, keepdims=True), 1e-12)
    n = n[np.isfinite(n).all(-1)]
    if not n.size:
        return 0.0
    m = n.mean(axis=0)
    m /= max(np.linalg.norm(m), 1e-12)
    return float(np.degrees(np.arccos(np.clip(np.percentile(n @ m, 5), -1, 1))))


def _unit_fraction(vec: np.ndarray, tol: float = UNIT_TOL) -> float:
    """Fraction of the vectors that :func:`conventions.normalise` keeps with tolerance ``tol``."""
    return float(np.mean(conventions.normalise(vec, tol)[1])) if vec.size else 0.0


def integrability_score(normals: np.ndarray, mask: np.ndarray, camera: Camera | None = None,
                        block: int | None = None) -> float:
    """Integrability score of internal-frame normals (0 integrable, 0.5 noise, ~1 y-flipped).

    Parameters
    ----------
    normals : (H, W, 3) array
        Internal (OpenCV-frame) vectors, unit or not.
    mask : (H, W) bool array
    camera : Camera, optional
        Orthographic when omitted.
    block : int, optional
        Block size of the coarse grid (default: chosen from the number of valid pixels).
    """
    camera = camera or Camera()
    mask = np.asarray(mask, bool)
    k = block or _block_size(int(mask.sum()))
    means, full = _block_means(np.asarray(normals), mask, k)
    cam = camera.scaled(1.0 / k) if k > 1 else camera
    return _score(means.reshape(-1, 3)[np.flatnonzero(full)], _Grid(full, cam))[0]


def _span(any_: np.ndarray, align: int) -> tuple[int, int]:
    """[start, stop) of the True entries of ``any_``, the start rounded down and the
    length up to multiples of ``align`` (stop at most the end)."""
    on = np.flatnonzero(any_)
    if not on.size:
        return 0, any_.size
    start = int(on[0]) // align * align
    stop = start + -(-(int(on[-1]) + 1 - start) // align) * align
    return start, min(stop, any_.size)


def _block_size(valid: int) -> int:
    return int(np.clip(round(np.sqrt(valid / BLOCK_TARGET)), 2, 16))


def _flip_name(flip: str, channels: str, half: bool, convention: str | None = None) -> str:
    """What the file looks like, relative to the given decoding; ``convention``: the
    chosen one (a y flip is green-up when it leads to ps, green-down otherwise)."""
    parts = []
    if flip == "y":
        green = {"ps": "green-up", "directx": "green-down", "opencv": "green-down"}.get(convention)
        parts.append(f"{green} (y flipped)" if green else "y flipped")
    elif flip == "z":
        parts.append("z flipped")
    elif flip == "yz":
        parts.append("y and z flipped (OpenCV frame)")
    if channels:
        parts.append("channel order reversed (BGR, as cv2.imwrite writes)")
    if half:
        parts.append("stored as (n+1)/2 in a float file")
    return "; ".join(parts)


def _fix_options(given: Decoding, chosen: Decoding) -> str:
    opts = []
    if chosen.signs != given.signs:
        conv = chosen.convention
        opts.append(f"--convention {conv}" if conv else "")
    if chosen.channels != given.channels:
        opts.append(f"--channels {chosen.channels}")
    if chosen.float_encoding != given.float_encoding:
        opts.append(f"--float-encoding {chosen.float_encoding}")
    return " ".join(o for o in opts if o)


# ----------------------------------------------------------------- the check

def check_decoding(raw: np.ndarray, bitdepth: int | None, mask: np.ndarray | None = None,
                   camera: Camera | None = None, convention: str = "ps", channels: str = "rgb",
                   float_encoding: str = "raw", mode: str = "auto", source=None) -> DecodingCheck:
    """Score the given decoding of a raw normal map against the plausible mistakes.

    Candidates: the given decoding with y, z or both flipped, each in both channel
    orders; for float data within [0, 1], also the (n + 1) / 2 decoding when it (and not
    the raw one) gives unit vectors. See the module docstring for the score.

    Parameters
    ----------
    raw : (H, W, C) array
        The array as read from the file (C >= 3; extra channels ignored), before decoding.
    bitdepth : int or None
        8 or 16 for integer images (colour codes), None for float data.
    mask : (H, W) bool array, optional
        Object pixels. Default: finite pixels whose given decoding has length > 0.1.
    camera : Camera, optional
        Perspective (K) or orthographic (default).
    convention, channels, float_encoding : str
        The user's decoding ('ps'|'opencv'|'directx', 'rgb'|'bgr', 'raw'|'half').
    mode : {'auto', 'strict'}
        ``auto``: return the better decoding as ``chosen`` with a stderr-ready ``message``.
        ``strict``: raise :class:`FninError` with a one-line hint when another decoding is
        clearly better; otherwise return with ``chosen`` = given.
    source : str, optional
        File name for error messages.

    Returns
    -------
    DecodingCheck

    Examples
    --------
    >>> from fnin_cli.checks import check_decoding  # doctest: +SKIP
    >>> chk = check_decoding(raw, 16, mask, Camera(K), convention="ps", mode="auto")
    >>> if chk.changed:
    ...     print("warning:", chk.message, file=sys.stderr)
    >>> normals = chk.decode(raw, 16)            # internal frame, then normalise
    """
    if mode not in ("auto", "strict"):
        raise ValueError(f"mode must be 'auto' or 'strict', got {mode!r}")
    camera = camera or Camera()
    raw = np.asarray(raw)
    if raw.ndim != 3 or raw.shape[2] < 3:
        raise FninError(f"normal map must be (H, W, 3), got shape {raw.shape}", source)
    raw = raw[..., :3]
    given = given_decoding(convention, channels, float_encoding)
    is_float = bitdepth is None and raw.dtype.kind == "f"
    if mask is None:
        # the length does not depend on signs or channel order: the default ones will do;
        # a band of rows at a time (no full-size float array)
        mask = np.empty(raw.shape[:2], bool)
        step = max(1, (1 << 20) // max(1, raw.shape[1]))
        for r in range(0, raw.shape[0], step):
            vec = decode(raw[r:r + step], bitdepth, Decoding(float_encoding=given.float_encoding))
            with np.errstate(invalid="ignore", over="ignore"):
                sq = np.einsum("...i,...i->...", vec, vec)
                mask[r:r + step] = np.isfinite(sq) & (sq > 0.01)  # finite, length > 0.1
    mask = np.asarray(mask, bool)
    valid = int(mask.sum())

    # unit-length criterion on a subsample (only float data can be (n+1)/2)
    unit = {}
    encodings = [given.float_encoding]
    half_detected = False
    if is_float:
        stride = max(1, int(np.sqrt(valid / 50000.0)))
        sub = raw[::stride, ::stride][mask[::stride, ::stride]].astype(np.float64)
        sub = sub[np.isfinite(sub).all(-1)]
        unit["raw"] = _unit_fraction(sub)
        in01 = sub.size > 0 and float(sub.min()) >= -1e-3 and float(sub.max()) <= 1.0 + 1e-3
        unit["half"] = _unit_fraction(2.0 * sub - 1.0) if in01 else 0.0
        other = "half" if given.float_encoding == "raw" else "raw"
        plausible_other = (unit[other] >= 0.9 and unit[given.float_encoding] <= 0.6
                           and unit[other] - unit[given.float_encoding] >= 0.3)
        if plausible_other:
            encodings = [other]
            half_detected = True

    # coarse grids shared by all candidates: block size k, 2k, 4k (noise averages out at
    # the coarser ones, fine detail survives at the finer one); a candidate's score is its
    # best (lowest) over the scales that keep at least SCALE_MIN_CELLS cells.
    k = _block_size(valid)
    # only the mask's bounding box is averaged, its start on the coarsest block grid, so
    # every block (at every scale) is the one the whole image would give
    (r0, r1), (c0, c1) = (_span(mask.any(axis=a), k * 2 ** (SCALES - 1)) for a in (1, 0))
    means, full = _block_means(raw[r0:r1, c0:c1], mask[r0:r1, c0:c1], k)
    bd = None if is_float else (bitdepth or (16 if raw.dtype.itemsize > 1 else 8))
    levels = []
    kk = k
    for level in range(SCALES):
        cam = camera.scaled(1.0 / kk) if kk > 1 else camera
        grid = _Grid(full, cam, (r0 // kk, c0 // kk))
        if level and grid.corners[0].size < SCALE_MIN_CELLS:
            break
        levels.append((grid, means.reshape(-1, 3)[grid.idx]))
        hc, wc = full.shape[0] // 2, full.shape[1] // 2
        if min(hc, wc) < 2:
            break
        means = means[: 2 * hc, : 2 * wc].reshape(hc, 2, wc, 2, 3).mean(axis=(1, 3))
        full = full[: 2 * hc, : 2 * wc].reshape(hc, 2, wc, 2).all(axis=(1, 3))
        kk *= 2

    scores, facing, cands = {}, {}, []
    for enc in dict.fromkeys(encodings + [given.float_encoding]):
        for ch in ("", "bgr"):
            for flip, f in FLIPS.items():
                d = Decoding(tuple(a * b for a, b in zip(given.signs, f)),
                             ("bgr" if given.channels == "rgb" else "rgb") if ch else given.channels, enc)
                sc, ncell, fa = float("nan"), 0, 0.0
                for i, (grid, m) in enumerate(levels):
                    s_i, n_i, f_i = _score(decode(m, bd, d).astype(np.float64), grid)
                    if i == 0:
                        sc, ncell, fa = s_i, n_i, f_i
                    elif np.isfinite(s_i) and not s_i >= sc:
                        sc = s_i
                scores[d.name], facing[d.name] = sc, fa
                if enc == encodings[0]:
                    cands.append((flip, ch, d, sc, ncell, fa))

    ref = cands[0]  # (no flip, same channels, chosen encoding)
    cells = ref[4]
    tiny = valid < MIN_PIXELS or cells < MIN_CELLS
    # near-planar data: every sign/channel decoding of a constant normal is a plane, so
    # integrability cannot tell (and noise decides the scores): keep the given decoding
    spread = _spread(decode(levels[0][1], bd, ref[2])) if levels and levels[0][1].size else 0.0
    planar = spread < PLANAR_DEG
    reason = ""
    chosen = ref[2]
    confident = half_detected
    if half_detected:
        reason = "unit length"
    # z: the given decoding faces away, a z-flipped one does not
    if not tiny and ref[5] > FACING_MAX:
        faced = [c for c in cands if c[5] <= ALT_FACING_MAX and c[1] == ""]
        if faced:
            faced.sort(key=lambda c: (len(c[0]), c[0]))  # fewest flips first ('z' before 'yz')
            ref = faced[0]
            chosen, confident, reason = ref[2], True, "facing away"
    # integrability: a clearly better alternative
    best_alt, ratio = None, float("nan")
    if not tiny and not planar and np.isfinite(ref[3]):
        alts = [c for c in cands if c is not ref and c[5] <= max(ALT_FACING_MAX, ref[5])
                and np.isfinite(c[3])]
        if alts:
            best_alt = min(alts, key=lambda c: c[3])
            ratio = best_alt[3] / ref[3] if ref[3] > 0 else float("inf")
            if ref[3] > FLOOR and best_alt[3] < ALT_MAX and best_alt[3] < RATIO * ref[3]:
                chosen, confident = best_alt[2], True
                reason = (reason + ", " if reason else "") + "integrability"
    changed = chosen != given
    if not changed:
        confident = confident or (best_alt is not None and not tiny and not planar and ref[3] <= FLOOR)

    chk = DecodingCheck(given=given, chosen=chosen, changed=changed, confident=confident, ratio=ratio,
                        scores=scores, facing_away=facing, unit_fraction=unit, reason=reason,
                        block=k, cells=cells, valid_pixels=valid, spread_deg=spread)
    if changed:
        flip = next(c[0] for c in cands if c[2] == chosen)
        ch = chosen.channels != given.channels
        what = _flip_name(flip, ch, chosen.float_encoding != given.float_encoding, chosen.convention)
        fix = _fix_options(given, chosen)
        sc = scores.get(chosen.name, float("nan"))
        detail = (f"integrability score {scores[given.name]:.2f} as decoded ({given.name}) vs "
                  f"{sc:.2f} ({chosen.name})")
        if "unit length" in reason:
            detail = (f"{1 - unit.get(given.float_encoding, 0):.0%} of the vectors are not unit length "
                      f"as decoded, {1 - unit.get(chosen.float_encoding, 0):.0%} when decoded as 2x-1; "
                      + detail)
        if "facing away" in reason:
            detail = f"{facing[given.name]:.0%} face away from the camera as decoded; " + detail
        if chosen.convention is None:  # z alone flipped: no named convention
            as_ = f"{fix + ' with ' if fix else ''}z flipped (no --convention names this; fix the file: z -> -z)"
            how = "flip z in the file (B -> 1 - B), or pass --convention auto"
        else:
            as_, how = fix, f"pass {fix} (or --convention auto)"
        chk.message = f"normals look {what}; decoding them as {as_} ({detail})"
        chk.strict_message = f"normals do not fit the decoding '{given.name}' but do when {what}: {how} [{detail}]"
    if mode == "strict" and changed:
        raise FninError(chk.strict_message, source)
    return chk
