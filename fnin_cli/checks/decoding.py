"""Check a normal map's decoding against its data: integrability, facing, the outline, noise.

Normals of a real surface form a curl-free gradient field, face the camera and, where the
mask's outline is the object's occluding contour, point out of the mask there. A
mis-decoded map (green-down read as green-up, a mirrored map or one whose x is negated,
BGR channel order, a float file holding (n + 1) / 2, z flipped) breaks one or more of
these. This module scores the user's decoding and every plausible mistake on the *raw*
array as read from the file and says which one the data support, or that they cannot
tell, or that the map is not a surface's at all. Rule, corpus and measurements:
studies/decoding-real-maps/README.md.

The cues (cheap: one pass over the image, the rest on a coarse grid)
--------------------------------------------------------------------
1. Block means. The raw array is block-averaged (k x k blocks fully inside the mask and
   finite; k grows with the image so that about 5 000 blocks remain). Every candidate
   decoding is affine per channel, so decoding the block means equals block-averaging the
   decoded normals: all candidates are evaluated on the small grid, and on grids of 2k
   and 4k blocks.
2. Integrability score per candidate (its lowest over the scales): per 2x2 cell of blocks
   (not grazing, |cos(n, ray)| >= 0.15), c = dp/dv - dq/du (the curl) and
   s = dp/dv + dq/du, where (p, q) are the gradients of the unknown (orthographic
   -n_x/n_z, -n_y/n_z; perspective the log-depth gradients, less the mixed derivative
   2 n_x n_y / (f_x f_y (n.r)^2) that every plane has there); the score is the weighted
   mean of |c| / (|c| + |s|): 0 integrable, 0.5 noise, ~1 a y- or x-flipped field (a flip
   swaps c and s). A cell weighs how much the normals turn across it (capped at the 90th
   percentile), the same for every candidate: flat cells, where every decoding is a
   plane, weigh little.
3. Facing: the fraction of blocks whose normal faces away from its ray (n . r > 0.05 |r|).
4. Outline: blocks of the grid on the mask's outline (not on the image border); the
   outward direction o of the mask there; the fraction of them whose normal's image-plane
   part points out (n_xy . o >= 0.5) minus the fraction pointing in. At an occluding
   contour normals point out of the silhouette; flipping x and y together turns them in.
5. Coherence: the fraction of horizontally neighbouring pixels whose normals are within
   20 degrees (a surface: most; random values: a few per cent).
6. Unit length (float data): whether the file holds n or (n + 1) / 2; without a mask, the
   share of the domain's vectors (length 1 +- ``DOMAIN_TOL``) within ``UNIT_TOL`` of 1.

The decision
------------
Integrability cannot tell a field from the same field with x *and* y negated (the
surface seen inside out: exactly so in orthographic views), and does not see z. So the 16
candidates (x, y, z signs times two channel orders) fall into classes by channel order
and the sign of x times y; facing picks z; integrability picks the class; the outline,
perspective (a flipped pair is not equally integrable through a wide-angle lens) or the
mistakes counted pick x and y within the class:

- a picture: without a mask, fewer than ``UNIT_SHARE_MIN`` of the domain's vectors of
  length 1 +- ``UNIT_TOL``: refused (with an explicit --convention: a warning), naming --mask;
- noise: fewer than ``COHERENT_MIN`` coherent neighbours: refused (with an explicit
  --convention: a warning). A smooth random field is not refused: under white noise a
  gently curved surface scores like one (studies/decoding-real-maps/README.md);
- a decoding with more than ``FACING_MAX`` of its blocks facing away, or ``STEEPER_MAX``
  more of them steep (over 60 degrees from the ray) than the given one, is implausible;
- the class: the given decoding's, unless another class scores ``MARGIN`` lower and at
  most ``ALT_MAX``; when the given decoding faces away: the class integrability clearly
  prefers, else the classes facing the camera best (``FACING_TIE``), then the fewest
  mistakes, else refused naming the options;
- within the class: the outline when ``OUTLINE_BLOCKS`` blocks say so by ``OUTLINE_TIE``;
  else a perspective gap of ``PERSPECTIVE_GAP``; else the fewer mistakes (a named
  convention, a flipped axis or BGR count one each); a tie (a mirrored map vs a green-down
  one without an outline) is refused with both options named;
- the given decoding's x and y turned by the outline alone (``OUTLINE_XY``: a map rotated
  180 degrees, or a concave object seen from its open side) is refused (with an explicit
  --convention: a warning).

With fewer than ``MIN_PIXELS`` valid pixels or ``MIN_CELLS`` cells, or near-planar data
(95 % of the normals within ``PLANAR_DEG`` of their mean: every decoding of a plane is a
plane), the data cannot tell and the given decoding is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..camera import Camera
from .. import conventions
from ..conventions import SIGNS, canonical
from ..errors import FninError

# --- thresholds, chosen on the development set of studies/decoding-real-maps (renders of
# the training meshes, procedural scenes, samples/, noise; never DiLiGenT or real/) -------
MIN_PIXELS = 1000  # fewer valid pixels: cannot tell
MIN_CELLS = 100    # fewer scored cells: cannot tell
GRAZING = 0.15     # |cos(normal, ray)| below this: cell ignored
FACING_MAX = 0.25  # a decoding with more of its blocks facing away is implausible
FACING_TIE = 0.05  # classes facing away within this of the best face the camera alike
STEEP_COS = 0.5    # a block is steep when its normal is over 60 degrees from its ray ...
STEEPER_MAX = 0.5  # ... and a decoding with this larger a share of steep blocks than the given one is implausible
MARGIN = 0.10      # another class must score this much below the given's (dev: a correct map's at most 0.08 over)
ALT_MAX = 0.41     # ... and at most this (right decodings <= 0.40, wrong classes of correct maps >= 0.40)
COHERENT_DEG = 20.0  # neighbouring normals within this angle are coherent
COHERENT_MIN = 0.2   # fewer coherent neighbour pairs: noise (random values ~0.03, maps >= 0.75)
OUTLINE_BLOCKS = 30  # fewer outline blocks: the outline cannot tell
OUTWARD = 0.5      # an outline normal points out (in) when n_xy . o >= (<= -) this
OUTLINE_TIE = 0.3  # outward minus inward fraction that picks x and y within a class
OUTLINE_XY = 0.5   # ... that turns the given decoding's x and y by itself (refused)
PERSPECTIVE_GAP = 0.15  # a flipped pair this far apart in score: the lower one
BLOCK_TARGET = 5000  # about this many valid blocks (block size 2..16)
PLANAR_DEG = 8.0   # normals within this angle of their mean (95th pct): near-planar, cannot tell
SCALES = 3         # block sizes k, 2k, 4k
SCALE_MIN_CELLS = 300  # a coarser scale counts only with at least this many cells
UNIT_TOL = 0.1     # unit-length tolerance for the (n+1)/2 test
DOMAIN_TOL = 0.25  # without a mask the domain is the vectors of length 1 +- this (as the loader's)
# without a mask, fewer of the domain's vectors unit within UNIT_TOL: a picture (its colours fill
# the band), not a normal map (maps >= 0.995, pictures <= 0.54: studies/real-maps)
UNIT_SHARE_MIN = 0.9
COHERENT_PAIRS = 100_000  # about this many neighbour pairs sampled for the coherence

AXES = "xyz"
# preference among named conventions when two express the same signs equally well
_NAMED = ("ps", "directx", "opencv")


def _axes(flip: str) -> tuple:
    """``--flip`` value ('x', 'yz', 'none', '') -> sign multipliers (sx, sy, sz)."""
    f = (flip or "").lower().replace(",", "").replace(" ", "")
    if f in ("", "none"):
        return (1.0, 1.0, 1.0)
    if not set(f) <= set(AXES) or len(set(f)) != len(f):
        raise FninError(f"unknown --flip '{flip}'; use x, y, z or several of them (xy), or none")
    return tuple(-1.0 if a in f else 1.0 for a in AXES)


def _flip_str(mult) -> str:
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
        order = ([prefer] if prefer in SIGNS else []) + [n for n in _NAMED if n != prefer]
        best = None
        for name in order:
            mult = tuple(float(a * b) for a, b in zip(self.signs, SIGNS[name]))
            k = sum(m < 0 for m in mult)
            if best is None or k < best[0]:
                best = (k, name, _flip_str(mult))
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
    signs = tuple(float(a * b) for a, b in zip(SIGNS[conv], _axes(flip)))
    return Decoding(signs, channels, float_encoding, conv)


@dataclass
class DecodingCheck:
    """Result of :func:`check_decoding`.

    ``chosen`` is the decoding to use (the given one unless ``changed``); ``scores`` maps
    each candidate's name to its integrability score (0 = integrable, 0.5 = noise, 1 = as
    far from integrable as a y-flipped field); ``facing_away``, ``outline`` (outward minus
    inward fraction of the outline's normals, per candidate), ``unit_fraction``,
    ``coherent`` and ``unit_share`` (without a mask) hold the other cues; ``ratio`` = best
    other class's score / the given one's; ``confident`` says the data decide; ``refused``
    says the data rule the map out (noise, a picture, or two decodings they cannot tell
    apart) with ``refusal`` the one-line reason;
    ``message`` explains a change (a warning), ``strict_message`` the error an explicit
    decoding gets, ``warning`` what an explicit decoding is told but not refused for.
    """

    given: Decoding
    chosen: Decoding
    changed: bool
    confident: bool
    ratio: float
    scores: dict = field(default_factory=dict)
    facing_away: dict = field(default_factory=dict)
    unit_fraction: dict = field(default_factory=dict)
    outline: dict = field(default_factory=dict)
    reason: str = ""
    spread_deg: float = 0.0
    message: str = ""
    strict_message: str = ""
    refused: bool = False
    refusal: str = ""
    warning: str = ""
    coherent: float = float("nan")
    unit_share: float = 1.0
    outline_blocks: int = 0
    block: int = 1
    cells: int = 0
    valid_pixels: int = 0

    def decode(self, raw: np.ndarray, bitdepth: int | None, out: np.ndarray | None = None) -> np.ndarray:
        """The raw array decoded with the chosen decoding (internal frame, not normalised;
        ``out``: see :func:`decode`)."""
        return decode(raw, bitdepth, self.chosen, out)

    def as_dict(self) -> dict:
        """JSON-ready summary (for the ``--json`` record)."""
        conv, flip = self.chosen.express(self.given.named)
        return {"convention": conv, "flip": flip, "channels": self.chosen.channels,
                "float_encoding": self.chosen.float_encoding, "changed": self.changed,
                "confident": self.confident, "reason": self.reason,
                "scores": {k: round(v, 4) for k, v in self.scores.items()},
                "outline": {k: round(v, 3) for k, v in self.outline.items()},
                "outline_blocks": self.outline_blocks,
                "coherent": None if not np.isfinite(self.coherent) else round(self.coherent, 3),
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
        self.perspective = camera.K is not None
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


def _cell_weights(vec: np.ndarray, grid: _Grid) -> np.ndarray:
    """Weight of each 2x2 cell of ``grid``: how much the unit normals turn across it,
    |n_d - n_a| + |n_c - n_b|, capped at its 90th percentile. Sign flips and channel
    orders are orthogonal maps of the vectors: every candidate gets the same weights, so
    flat cells (where every decoding is a plane) weigh little for all of them alike."""
    n = vec / np.maximum(np.linalg.norm(vec, axis=-1, keepdims=True), 1e-12)
    a, b, c, d = grid.corners
    kappa = np.linalg.norm(n[d] - n[a], axis=-1) + np.linalg.norm(n[c] - n[b], axis=-1)
    if kappa.size:
        kappa = np.minimum(kappa, np.partition(kappa, int(0.9 * (kappa.size - 1)))[int(0.9 * (kappa.size - 1))])
    return kappa


def _score(vec: np.ndarray, grid: _Grid, weights: np.ndarray | None = None) -> tuple[float, int, float]:
    """(integrability score, cells, facing-away fraction) of coarse vectors (N, 3); facing
    away: n . r > 0.05 |r| (the ray r of the block's centre). ``weights``: per cell of
    ``grid`` (default :func:`_cell_weights` of ``vec``)."""
    nrm = np.linalg.norm(vec, axis=-1)
    ok = nrm > 1e-6
    n = vec / np.where(ok, nrm, 1.0)[:, None]
    if weights is None:
        weights = _cell_weights(vec, grid)
    ndr = np.sum(n * grid.r, axis=-1)
    facing = float(np.mean(ndr[ok] > 0.05 * grid.rnorm[ok])) if ok.any() else 0.0
    good = ok & (np.abs(ndr) >= GRAZING * grid.rnorm)
    ndr = np.where(good, ndr, 1.0)
    p = -n[:, 0] / (grid.fx * ndr)
    q = -n[:, 1] / (grid.fy * ndr)
    a, b, c_, d = grid.corners
    cell = good[a] & good[b] & good[c_] & good[d]
    ncell = int(cell.sum())
    if ncell == 0:
        return float("nan"), 0, facing
    a, b, c_, d, wgt = a[cell], b[cell], c_[cell], d[cell], weights[cell]
    pv = 0.5 * (p[c_] + p[d] - p[a] - p[b])
    qu = 0.5 * (q[b] + q[d] - q[a] - q[c_])
    c = np.abs(pv - qu)
    s = pv + qu
    if grid.perspective:
        # the mixed derivative every plane has in log-depth, 2 n_x n_y / (f_x f_y (n.r)^2):
        # left in, it makes decodings that tilt flat cells look more integrable
        nm = 0.25 * (n[a] + n[b] + n[c_] + n[d])
        rm = 0.25 * (grid.r[a] + grid.r[b] + grid.r[c_] + grid.r[d])
        s = s - 2.0 * nm[:, 0] * nm[:, 1] / (grid.fx * grid.fy * np.sum(nm * rm, -1) ** 2)
    m = c + np.abs(s)
    keep = (m > 0) & (wgt > 0)
    if not keep.any():
        return 0.5, ncell, facing
    c, m, wgt = c[keep], m[keep], wgt[keep]
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


def _outline(full: np.ndarray, border: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Outline blocks of the grid ``full`` and their outward unit directions (N, 2) as
    (x, y) = (columns, rows). An outline block is a full block with a 4-neighbour outside
    the mask, where outside is the background around the mask or reaching the grid's edge:
    holes inside it (missing data, zeroed patches) are not an object's outline. ``border`` = (top, bottom, left,
    right): whether that side of the grid is the image's border (what lies beyond it is
    unknown, not background). The outward direction is the sum of the offsets (weighted
    1 / distance^2) to the outside blocks within 2."""
    R = 2
    hc, wc = full.shape
    out = np.zeros((hc + 2 * R, wc + 2 * R), bool)    # True: inside the image, outside the mask
    out[R:R + hc, R:R + wc] = ~full
    top, bottom, left, right = border
    out[:R, :] = not top
    out[R + hc:, :] = not bottom
    out[:, :R] = not left
    out[:, R + wc:] = not right
    if top:
        out[:R, :] = False
    if bottom:
        out[R + hc:, :] = False
    # the background reachable from around the grid or from its edge rows and columns
    # (the image's frame cuts the background, not a hole), 4-connected through blocks not full
    seed = out.copy()
    seed[R + 1:R + hc - 1, R + 1:R + wc - 1] = False
    reach = seed
    while True:
        grown = reach.copy()
        grown[1:] |= reach[:-1]
        grown[:-1] |= reach[1:]
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        grown &= out
        if np.array_equal(grown, reach):
            break
        reach = grown
    out = reach
    ox = np.zeros((hc, wc))
    oy = np.zeros((hc, wc))
    edge = np.zeros((hc, wc), bool)
    for dy in range(-R, R + 1):
        for dx in range(-R, R + 1):
            if dx == 0 and dy == 0:
                continue
            o = out[R + dy:R + dy + hc, R + dx:R + dx + wc]
            w = 1.0 / (dx * dx + dy * dy)
            ox += o * (dx * w)
            oy += o * (dy * w)
            if abs(dx) + abs(dy) == 1:
                edge |= o
    norm = np.hypot(ox, oy)
    on = full & edge & (norm > 0)
    o = np.stack([ox[on], oy[on]], -1) / norm[on][:, None]
    return on, o


def _outline_score(vec: np.ndarray, o: np.ndarray) -> float:
    """Fraction of outline normals (N, 3) pointing out of the mask minus those pointing in."""
    if not len(o):
        return 0.0
    n = vec / np.maximum(np.linalg.norm(vec, axis=-1, keepdims=True), 1e-12)
    dot = n[:, 0] * o[:, 0] + n[:, 1] * o[:, 1]
    return float(np.mean(dot >= OUTWARD) - np.mean(dot <= -OUTWARD))


def _coherence(raw: np.ndarray, mask: np.ndarray, bd, decoding: "Decoding", valid: int) -> float:
    """Fraction of sampled horizontal neighbour pairs (both in ``mask``) whose normals are
    within ``COHERENT_DEG``; NaN with too few pairs. Signs and channel order do not change
    angles, so any of the candidates gives the same number."""
    st = max(1, int(np.sqrt(valid / COHERENT_PAIRS)))
    h, w = mask.shape
    if w < 2:
        return float("nan")
    a_m, b_m = mask[::st, 0:w - 1:st], mask[::st, 1::st][:, : (w - 1 + st - 1) // st]
    pair = a_m & b_m
    if int(pair.sum()) < 100:
        return float("nan")
    a = decode(raw[::st, 0:w - 1:st][pair], bd, decoding).astype(np.float64)
    b = decode(raw[::st, 1::st][:, : pair.shape[1]][pair], bd, decoding).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return float(np.mean(cos >= np.cos(np.radians(COHERENT_DEG))))


def _unit_share(raw: np.ndarray, mask: np.ndarray, bd, decoding: "Decoding", valid: int) -> float:
    """Share of the vectors in ``mask`` (sampled: about 200 000) whose length under
    ``decoding`` is within ``UNIT_TOL`` of 1. Signs and channel order do not change lengths."""
    st = max(1, int(np.sqrt(valid / 200_000.0)))
    vec = decode(raw[::st, ::st][mask[::st, ::st]], bd, decoding).astype(np.float64)
    if not len(vec):
        return 1.0
    return float(np.mean(np.abs(np.linalg.norm(vec, axis=-1) - 1.0) <= UNIT_TOL))


def _domain(raw: np.ndarray, bitdepth, decoding: "Decoding", tol: float) -> tuple[np.ndarray, np.ndarray]:
    """(finite and longer than 0.1, finite with length within 1 +- ``tol``) of the vectors
    under ``decoding``, a band of rows at a time (no full-size float array). Signs and
    channel order do not change lengths."""
    nonzero = np.empty(raw.shape[:2], bool)
    unit = np.empty(raw.shape[:2], bool)
    step = max(1, (1 << 20) // max(1, raw.shape[1]))
    lo, hi = np.float32((1 - tol) ** 2), np.float32((1 + tol) ** 2)
    for r in range(0, raw.shape[0], step):
        vec = decode(raw[r:r + step], bitdepth, decoding)
        with np.errstate(invalid="ignore", over="ignore"):
            sq = np.einsum("...i,...i->...", vec, vec)
            nonzero[r:r + step] = np.isfinite(sq) & (sq > np.float32(0.01))
            unit[r:r + step] = (sq >= lo) & (sq <= hi)
    return nonzero, unit


def _unit_fractions_unmasked(raw: np.ndarray) -> dict:
    """{'raw': ..., 'half': ...}: the share of the pixels that hold a unit vector under
    either float encoding that hold one under each (tolerance ``UNIT_TOL``; 'half' only
    when every finite value lies in [0, 1]). Without a mask the pixels a map's encoding
    cannot explain are its background, whatever its colour: a (n + 1) / 2 file's grey
    (n = 0) or white background is no unit vector under 2x - 1 but may be one, or not,
    under n itself, so the shares are taken over the union, not over the given encoding's
    domain (which holds that background)."""
    stride = max(1, int(np.sqrt(raw.shape[0] * raw.shape[1] / 200000.0)))
    sub = raw[::stride, ::stride].reshape(-1, 3).astype(np.float64)
    sub = sub[np.isfinite(sub).all(-1)]
    if not sub.size:
        return {"raw": 0.0, "half": 0.0}
    in01 = float(sub.min()) >= -1e-3 and float(sub.max()) <= 1.0 + 1e-3
    ok_raw = conventions.normalise(sub, UNIT_TOL)[1]
    ok_half = conventions.normalise(2.0 * sub - 1.0, UNIT_TOL)[1] if in01 else np.zeros(len(sub), bool)
    either = int(np.sum(ok_raw | ok_half))
    if either == 0:
        return {"raw": 0.0, "half": 0.0}
    return {"raw": float(ok_raw.sum()) / either, "half": float(ok_half.sum()) / either}


def _mistakes(d: Decoding, given: Decoding) -> int:
    """How many independent mistakes turn ``given`` into ``d``: another named convention,
    each further flipped axis, the channel order (the float encoding is decided apart)."""
    flips = {a for a, s, g in zip(AXES, d.signs, given.signs) if s != g}
    best = len(flips)
    for name in _NAMED:
        named = {a for a, s, g in zip(AXES, SIGNS[name], given.signs) if s != g}
        if named:
            best = min(best, 1 + len(flips ^ named))
    return best + (d.channels != given.channels)


def _what(d: Decoding, given: Decoding) -> str:
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


def _options(d: Decoding, given: Decoding) -> str:
    """The command-line options that turn ``given`` into ``d``: the fewest, a named
    convention before a flip (never the convention already in use)."""
    gconv, gflip = given.express()
    best = None
    for name in [gconv] + [n for n in _NAMED if n != gconv]:
        mult = tuple(float(a * b) for a, b in zip(d.signs, SIGNS[name]))
        flip = _flip_str(mult)
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


# ----------------------------------------------------------------- the check

def check_decoding(raw: np.ndarray, bitdepth: int | None, mask: np.ndarray | None = None,
                   camera: Camera | None = None, convention: str = "ps", channels: str = "rgb",
                   float_encoding: str = "raw", mode: str = "auto", source=None, flip: str = "") -> DecodingCheck:
    """Score the given decoding of a raw normal map against the plausible mistakes.

    Candidates: the given decoding with any of x, y, z negated, each in both channel
    orders; for float data within [0, 1] the (n + 1) / 2 decoding when it (and not the raw
    one) gives unit vectors. See the module docstring for the cues and the decision.

    Parameters
    ----------
    raw : (H, W, C) array
        The array as read from the file (C >= 3; extra channels ignored), before decoding.
    bitdepth : int or None
        8 or 16 for integer images (colour codes), None for float data.
    mask : (H, W) bool array, optional
        Object pixels. Default: finite pixels whose vector has length 1 +- 0.25 (what the
        loader integrates without a mask).
    camera : Camera, optional
        Perspective (K) or orthographic (default).
    convention, channels, float_encoding, flip : str
        The user's decoding ('ps'|'opencv'|'directx', 'rgb'|'bgr', 'raw'|'half', flipped
        axes such as 'x').
    mode : {'auto', 'strict'}
        ``auto``: return the better decoding as ``chosen`` with a stderr-ready ``message``;
        raise :class:`FninError` (``refusal``) when the data rule the map out (noise, two
        decodings they cannot tell apart, x and y turned by the outline alone).
        ``strict`` (an explicit decoding): raise with a one-line hint when another decoding
        is clearly better or two are; noise and the outline alone only set ``warning``.
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
    given = given_decoding(convention, channels, float_encoding, flip)
    is_float = bitdepth is None and raw.dtype.kind == "f"
    bd = None if is_float else (bitdepth or (16 if raw.dtype.itemsize > 1 else 8))
    user_mask = mask is not None
    if user_mask:
        mask = np.asarray(mask, bool)
    else:   # finite and not zero under the given encoding (the unit test below needs it)
        mask, unit_mask = _domain(raw, bd, Decoding(float_encoding=given.float_encoding), DOMAIN_TOL)
    valid = int(mask.sum())

    # unit-length criterion on a subsample (only float data can be (n+1)/2)
    unit = {}
    enc = given.float_encoding
    half_detected = False
    if is_float:
        if user_mask:
            stride = max(1, int(np.sqrt(valid / 50000.0)))
            sub = raw[::stride, ::stride][mask[::stride, ::stride]].astype(np.float64)
            sub = sub[np.isfinite(sub).all(-1)]
            unit["raw"] = _unit_fraction(sub)
            in01 = sub.size > 0 and float(sub.min()) >= -1e-3 and float(sub.max()) <= 1.0 + 1e-3
            unit["half"] = _unit_fraction(2.0 * sub - 1.0) if in01 else 0.0
        else:
            unit.update(_unit_fractions_unmasked(raw))
        other = "half" if given.float_encoding == "raw" else "raw"
        if (unit[other] >= 0.9 and unit[given.float_encoding] <= 0.6
                and unit[other] - unit[given.float_encoding] >= 0.3):
            enc, half_detected = other, True
    base = Decoding(given.signs, given.channels, enc, given.named)   # the given signs and channels, the data's encoding
    if not user_mask:   # the loader's domain: vectors of unit length under that encoding
        mask = unit_mask if enc == given.float_encoding else _domain(raw, bd, base, DOMAIN_TOL)[1]
        valid = int(mask.sum())

    chk = DecodingCheck(given=given, chosen=base, changed=base != given, confident=half_detected,
                        ratio=float("nan"), unit_fraction=unit, reason="unit length" if half_detected else "",
                        valid_pixels=valid)
    if valid >= MIN_PIXELS:
        chk.coherent = _coherence(raw, mask, bd, base, valid)
        if not user_mask:
            chk.unit_share = _unit_share(raw, mask, bd, base, valid)

    # coarse grids shared by all candidates: block size k, 2k, 4k (noise averages out at
    # the coarser ones, fine detail survives at the finer one); a candidate's score is its
    # best (lowest) over the scales that keep at least SCALE_MIN_CELLS cells.
    k = _block_size(valid)
    (r0, r1), (c0, c1) = (_span(mask.any(axis=a), k * 2 ** (SCALES - 1)) for a in (1, 0))
    means, full = _block_means(raw[r0:r1, c0:c1], mask[r0:r1, c0:c1], k)
    h, w = mask.shape
    border = (r0 == 0, r0 + (full.shape[0] + 1) * k > h, c0 == 0, c0 + (full.shape[1] + 1) * k > w)
    on, outward = _outline(full, border)
    rim = means[on]
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

    # the 16 candidates: x, y, z signs relative to the given decoding, both channel orders
    other_ch = "bgr" if base.channels == "rgb" else "rgb"
    weights = [_cell_weights(decode(m, bd, base).astype(np.float64), grid) for grid, m in levels]
    cands = {}
    if levels:
        grid0 = levels[0][0]
        rays = grid0.r / grid0.rnorm[:, None]
    for ch in (base.channels, other_ch):
        for sz in (1, -1):
            for sy in (1, -1):
                for sx in (1, -1):
                    d = Decoding(tuple(a * b for a, b in zip(base.signs, (sx, sy, sz))), ch, enc, given.named)
                    sc, ncell, fa, steep = float("nan"), 0, 1.0, 1.0
                    if levels:   # facing first: the others need no score (but the given one, for messages)
                        v0 = decode(levels[0][1], bd, d).astype(np.float64)
                        nv = np.linalg.norm(v0, axis=-1)
                        ok = nv > 1e-6
                        cos = np.sum(v0[ok] * rays[ok], -1) / nv[ok]
                        fa = float(np.mean(cos > 0.05)) if ok.any() else 1.0
                        steep = float(np.mean(np.abs(cos) < STEEP_COS)) if ok.any() else 1.0
                    for i, (grid, m) in enumerate(levels if fa <= FACING_MAX or d == base else ()):
                        s_i, n_i, _ = _score(decode(m, bd, d).astype(np.float64), grid, weights[i])
                        if i == 0:
                            sc, ncell = s_i, n_i
                        elif np.isfinite(s_i) and not s_i >= sc:
                            sc = s_i
                    ol = _outline_score(decode(rim, bd, d).astype(np.float64), outward) if len(rim) else 0.0
                    cands[d] = (sc, fa, ol, ncell, (sx, sy, sz), steep)
    chk.scores = {d.name: v[0] for d, v in cands.items()}
    chk.facing_away = {d.name: v[1] for d, v in cands.items()}
    chk.outline = {d.name: v[2] for d, v in cands.items()}
    chk.block, chk.cells, chk.outline_blocks = k, cands[base][3], int(len(rim))

    def refuse(text: str, hard: bool):
        """Auto: refused. Strict: ``hard`` ones too, the others a warning."""
        if mode == "strict" and not hard:
            chk.warning = text
            return chk
        chk.refused, chk.refusal, chk.confident = True, text, True
        err = FninError(text, source)
        err.check = chk     # the scores behind the refusal (studies, --debug)
        raise err

    # noise: incoherent neighbours (decided before anything else needs cells)
    if valid >= MIN_PIXELS and np.isfinite(chk.coherent) and chk.coherent < COHERENT_MIN:
        chk.reason = "noise"
        return refuse(f"normals look like noise: only {chk.coherent:.0%} of neighbouring normals are within "
                      f"{COHERENT_DEG:.0f} degrees of each other (a surface's map: most){_keep_hint(mode)}", False)
    # a picture: without a mask the domain is the near-unit vectors, and a picture's colours
    # fill that band where a normal map's vectors sit at length 1
    if chk.unit_share < UNIT_SHARE_MIN:
        chk.reason = "not unit length"
        return refuse(f"this does not look like a normal map: without a mask, only {chk.unit_share:.0%} of the "
                      f"{valid} pixels fnin would take as normals (length 1 +- {DOMAIN_TOL}) have length 1 +- "
                      f"{UNIT_TOL} (a normal map's: nearly all; a picture's colours spread over the band); if it "
                      f"is one, pass its --mask{_keep_hint(mode)}", False)
    if valid < MIN_PIXELS or chk.cells < MIN_CELLS:
        return _finish(chk, given, mode, source)
    # near-planar data: every sign/channel decoding of a constant normal is a plane, so
    # integrability cannot tell (and noise decides the scores): keep the given decoding
    chk.spread_deg = _spread(decode(levels[0][1], bd, base)) if levels and levels[0][1].size else 0.0
    if chk.spread_deg < PLANAR_DEG:
        return _finish(chk, given, mode, source)

    # plausible: facing the camera, and not edge-on where the given decoding is not (a
    # decoding that turns a camera-facing map edge-on amplifies its noise into any score)
    plausible = {d: v for d, v in cands.items()
                 if v[1] <= FACING_MAX and np.isfinite(v[0]) and v[5] <= cands[base][5] + STEEPER_MAX}
    if not plausible:
        return _finish(chk, given, mode, source)   # nothing faces the camera: the loader says so

    def cls(d):
        v = cands[d][4]
        return (d.channels, v[0] * v[1])

    S = {}
    for d, v in plausible.items():
        S[cls(d)] = min(S.get(cls(d), np.inf), v[0])
    gcls = cls(base)
    base_ok = base in plausible
    others = {c: s for c, s in S.items() if c != gcls}
    if others:
        alt = min(others, key=others.get)
        chk.ratio = others[alt] / S[gcls] if S.get(gcls, 0) > 0 else float("inf")
    if base_ok:
        target = alt if others and S[gcls] - others[alt] >= MARGIN and others[alt] <= ALT_MAX else gcls
    else:
        # the given decoding faces away: a class integrability clearly prefers, else the
        # classes that face the camera best, then the fewest mistakes
        best_cls = min(S, key=S.get)
        if S[best_cls] <= ALT_MAX and all(S[best_cls] + MARGIN <= v for c, v in S.items() if c != best_cls):
            target = best_cls
        else:
            face = {c: min(cands[d][1] for d in plausible if cls(d) == c) for c in S}
            near = [c for c in S if face[c] <= min(face.values()) + FACING_TIE]
            cost = {c: min(_mistakes(d, given) for d in plausible if cls(d) == c) for c in near}
            fewest = [c for c in near if cost[c] == min(cost.values())]
            if len(fewest) > 1:
                chk.reason = "facing away, ambiguous"
                opts = sorted((d for d in plausible if cls(d) in fewest),
                              key=lambda d: (_mistakes(d, given), cands[d][0]))
                opts = list(dict.fromkeys(_options(d, given) for d in opts))[:3]
                return refuse(f"{cands[base][1]:.0%} of the normals face away from the camera as decoded "
                              f"({given.name}) and the data cannot tell which decoding is right (best integrability "
                              f"score {S[best_cls]:.2f}): try {', '.join(opts[:-1])}{' or ' if len(opts) > 1 else ''}"
                              f"{opts[-1]}", True)
            target = fewest[0]

    def member(sx, sy):
        """The class member with these x, y signs and the z that faces the camera."""
        ds = [d for d in plausible if cls(d) == target and cands[d][4][:2] == (sx, sy)]
        return min(ds, key=lambda d: (cands[d][4][2] != 1, cands[d][1])) if ds else None

    pairs = [(1, 1), (-1, -1)] if target[1] == 1 else [(1, -1), (-1, 1)]
    m1, m2 = member(*pairs[0]), member(*pairs[1])
    outline_ok = chk.outline_blocks >= OUTLINE_BLOCKS
    reasons = ["unit length"] if half_detected else []
    if not base_ok:
        reasons.append("facing away")
    if target != gcls:
        reasons.append("integrability")
    chk.confident = True
    if m1 is None or m2 is None:
        pick = m1 or m2
    elif target == gcls and base_ok:
        partner = m2 if base == m1 else m1
        pick = base
        o_base = cands[base][2]
        persp = cands[base][0] - cands[partner][0] >= PERSPECTIVE_GAP
        if persp and not (outline_ok and o_base >= OUTLINE_TIE):
            pick = partner
            reasons.append("perspective")
        elif outline_ok and o_base <= -OUTLINE_XY:
            chk.reason = "outline"
            out = max(plausible, key=lambda d: (cands[d][2], -_mistakes(d, given)))
            return refuse(f"normals point into the mask along its outline ({-o_base:.0%} more of them in than "
                          f"out over {chk.outline_blocks} outline blocks), as if {_what(out, given)}: pass "
                          f"{_options(out, given)}; if they are right as they are (a concave object seen from its "
                          f"open side), name the file's convention (--convention ...)", False)
    else:
        d_out = cands[m1][2]
        by_outline = outline_ok and abs(d_out) >= OUTLINE_TIE
        gap = cands[m1][0] - cands[m2][0]
        by_persp = abs(gap) >= PERSPECTIVE_GAP
        if by_outline and by_persp and (d_out > 0) != (gap < 0):
            pick = None
        elif by_outline:
            pick = m1 if d_out > 0 else m2
            reasons.append("outline")
        elif by_persp:
            pick = m1 if gap < 0 else m2
            reasons.append("perspective")
        else:
            e1, e2 = _mistakes(m1, given), _mistakes(m2, given)
            pick = None if e1 == e2 else (m1 if e1 < e2 else m2)
        if pick is None:
            chk.reason = ", ".join(reasons + ["ambiguous"])
            sg = cands[base][0]
            a, b = sorted((m1, m2), key=lambda d: (_mistakes(d, given), _options(d, given)))
            return refuse(f"normals do not fit the decoding '{given.name}' (integrability score {sg:.2f}) but do "
                          f"when {_what(a, given)} ({cands[a][0]:.2f}) or {_what(b, given)} ({cands[b][0]:.2f}), "
                          f"which {_tell(outline_ok)}: pass {_options(a, given)} or {_options(b, given)}",
                          True)
    if pick is None:
        pick = base
    chk.chosen, chk.reason = pick, ", ".join(reasons)
    return _finish(chk, given, mode, source)


def _tell(outline_ok: bool) -> str:
    if not outline_ok:
        return "this map cannot tell apart (no object outline in its mask)"
    return "its outline cannot tell apart"


def _keep_hint(mode: str) -> str:
    if mode == "strict":
        return "; integrating them as decoded"
    return "; to integrate them anyway, name the file's convention (--convention ...)"


def _finish(chk: DecodingCheck, given: Decoding, mode: str, source) -> DecodingCheck:
    """Fill in the messages of a change; raise in strict mode."""
    chosen = chk.chosen
    chk.changed = chosen != given
    if not chk.changed:
        return chk
    scores, facing = chk.scores, chk.facing_away
    fix = _options(chosen, given)
    what = _what(chosen, given)
    base = Decoding(given.signs, given.channels, chosen.float_encoding, given.named)
    detail = (f"integrability score {scores.get(base.name, float('nan')):.2f} as decoded ({given.name}) vs "
              f"{scores.get(chosen.name, float('nan')):.2f} ({chosen.name})")
    if "outline" in chk.reason:
        detail += f"; outline {chk.outline.get(chosen.name, 0):+.2f} over {chk.outline_blocks} blocks"
    if "unit length" in chk.reason:
        u = chk.unit_fraction
        detail = (f"{1 - u.get(given.float_encoding, 0):.0%} of the vectors are not unit length "
                  f"as decoded, {1 - u.get(chosen.float_encoding, 0):.0%} when decoded as 2x-1; " + detail)
    if "facing away" in chk.reason and base.name in facing:
        detail = f"{facing[base.name]:.0%} face away from the camera as decoded; " + detail
    chk.message = f"normals look {what}; decoding them with {fix} ({detail})"
    chk.strict_message = (f"normals do not fit the decoding '{given.name}' but do when {what}: pass {fix} "
                          f"(or --convention auto) [{detail}]")
    if mode == "strict":
        err = FninError(chk.strict_message, source)
        err.check = chk
        raise err
    return chk
