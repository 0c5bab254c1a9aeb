"""Check a normal map's decoding against its data: integrability, facing, the outline, noise.

Normals of a real surface form a curl-free gradient field, face the camera and, where the
mask's outline is the object's occluding contour, point out of the mask there. A
mis-decoded map (green-down read as green-up, a mirrored map or one whose x is negated,
BGR channel order, a float file holding (n + 1) / 2, z flipped) breaks one or more of
these. This module scores the user's decoding and every plausible mistake on the *raw*
array as read from the file and says which one the data support, or that they cannot
tell, or that the map is not a surface's at all. Rule, corpus and measurements:
studies/decoding-real-maps/README.md.

The cues are computed by :mod:`.cues` and the candidate decodings described by
:mod:`.decodings`; this module decides between them.

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
  most ``ALT_MAX``, or, where the given class scores above ``ALT_MAX`` (the blocks cannot
  tell), another class's pixel-scale score is ``FINE_MARGIN`` lower and at most
  ``FINE_MAX`` over at least ``FINE_MIN_CELLS`` cells; when the given decoding faces away:
  the class integrability clearly prefers, else the classes facing the camera best
  (``FACING_TIE``), then the fewest mistakes, else refused naming the options;
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
from ..errors import FninError
from .cues import (COHERENT_DEG, UNIT_TOL, Grid, block_means, block_size, cell_weights, coherence, domain,
                   fine_cells, fine_score, grid_score, outline_blocks, outline_score, span, spread_deg, unit_fraction,
                   unit_fractions_unmasked, unit_share)
from .decodings import Decoding, decode, describe, given_decoding, mistakes, options_to

# --- thresholds, chosen on the development set of studies/decoding-real-maps (renders of
# the training meshes, procedural scenes, samples/, noise; never DiLiGenT or real/) -------
MIN_PIXELS = 1000  # fewer valid pixels: cannot tell
MIN_CELLS = 100    # fewer scored cells: cannot tell
FACING_MAX = 0.25  # a decoding with more of its blocks facing away is implausible
FACING_TIE = 0.05  # classes facing away within this of the best face the camera alike
STEEP_COS = 0.5    # a block is steep when its normal is over 60 degrees from its ray ...
STEEPER_MAX = 0.5  # ... and a decoding with this larger a share of steep blocks than the given one is implausible
MARGIN = 0.10      # another class must score this much below the given's (dev: a correct map's at most 0.08 over)
ALT_MAX = 0.41     # ... and at most this (right decodings <= 0.40, wrong classes of correct maps >= 0.40)
COHERENT_MIN = 0.2   # fewer coherent neighbour pairs: noise (random values ~0.03, maps >= 0.75)
OUTLINE_BLOCKS = 30  # fewer outline blocks: the outline cannot tell
OUTLINE_TIE = 0.3  # outward minus inward fraction that picks x and y within a class
OUTLINE_XY = 0.5   # ... that turns the given decoding's x and y by itself (refused)
PERSPECTIVE_GAP = 0.15  # a flipped pair this far apart in score: the lower one
PLANAR_DEG = 8.0   # normals within this angle of their mean (95th pct): near-planar, cannot tell
SCALES = 3         # block sizes k, 2k, 4k
SCALE_MIN_CELLS = 300  # a coarser scale counts only with at least this many cells
DOMAIN_TOL = 0.25  # without a mask the domain is the vectors of length 1 +- this (as the loader's)
# where the block scores leave the given class unproven (above ALT_MAX), another class whose
# pixel-scale score (cues.fine_score) is at most FINE_MAX and FINE_MARGIN below the given's,
# over at least FINE_MIN_CELLS smooth cells, is picked (dev: right 0.11-0.50, a flipped plant's 0.88;
# docs/decisions.md#decoding-check)
FINE_MAX = 0.35
FINE_MARGIN = 0.3
FINE_MIN_CELLS = 1000
# without a mask, fewer of the domain's vectors unit within UNIT_TOL: a picture (its colours fill
# the band), not a normal map (maps >= 0.995, pictures <= 0.54: studies/real-maps)
UNIT_SHARE_MIN = 0.9


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
    fine: dict = field(default_factory=dict)
    by_fine: bool = False      # the class was chosen on the pixel-scale scores (``fine``)

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
                "fine_scores": {k: round(v, 4) for k, v in self.fine.items()},
                "ratio": None if not np.isfinite(self.ratio) else round(self.ratio, 4)}



# ----------------------------------------------------------------- the check

def check_decoding(raw: np.ndarray, bitdepth: int | None, mask: np.ndarray | None = None,
                   camera: Camera | None = None, convention: str = "ps", channels: str = "rgb",
                   float_encoding: str = "raw", mode: str = "auto", source=None, flip: str = "") -> DecodingCheck:
    """Score the given decoding of a raw normal map against the plausible mistakes.

    Candidates: the given decoding with any of x, y, z negated, each in both channel
    orders; for float data within [0, 1] the (n + 1) / 2 decoding when it (and not the raw
    one) gives unit vectors. The cues: :mod:`.cues`; the decision: this module's docstring.

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
    >>> chk = check_decoding(raw, 16, mask, Camera(K), convention="ps", mode="auto")  # doctest: +SKIP
    >>> if chk.changed:                                                          # doctest: +SKIP
    ...     print("warning:", chk.message, file=sys.stderr)
    >>> normals = chk.decode(raw, 16)            # internal frame, then normalise  # doctest: +SKIP
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
        mask, unit_mask = domain(raw, bd, Decoding(float_encoding=given.float_encoding), DOMAIN_TOL)
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
            unit["raw"] = unit_fraction(sub)
            in01 = sub.size > 0 and float(sub.min()) >= -1e-3 and float(sub.max()) <= 1.0 + 1e-3
            unit["half"] = unit_fraction(2.0 * sub - 1.0) if in01 else 0.0
        else:
            unit.update(unit_fractions_unmasked(raw))
        other = "half" if given.float_encoding == "raw" else "raw"
        if (unit[other] >= 0.9 and unit[given.float_encoding] <= 0.6
                and unit[other] - unit[given.float_encoding] >= 0.3):
            enc, half_detected = other, True
    base = Decoding(given.signs, given.channels, enc, given.named)   # the given signs and channels, the data's encoding
    if not user_mask:   # the loader's domain: vectors of unit length under that encoding
        mask = unit_mask if enc == given.float_encoding else domain(raw, bd, base, DOMAIN_TOL)[1]
        valid = int(mask.sum())

    chk = DecodingCheck(given=given, chosen=base, changed=base != given, confident=half_detected,
                        ratio=float("nan"), unit_fraction=unit, reason="unit length" if half_detected else "",
                        valid_pixels=valid)
    if valid >= MIN_PIXELS:
        chk.coherent = coherence(raw, mask, bd, base, valid)
        if not user_mask:
            chk.unit_share = unit_share(raw, mask, bd, base, valid)

    # coarse grids shared by all candidates: block size k, 2k, 4k (noise averages out at
    # the coarser ones, fine detail survives at the finer one); a candidate's score is its
    # best (lowest) over the scales that keep at least SCALE_MIN_CELLS cells.
    k = block_size(valid)
    (r0, r1), (c0, c1) = (span(mask.any(axis=a), k * 2 ** (SCALES - 1)) for a in (1, 0))
    means, full = block_means(raw[r0:r1, c0:c1], mask[r0:r1, c0:c1], k)
    h, w = mask.shape
    border = (r0 == 0, r0 + (full.shape[0] + 1) * k > h, c0 == 0, c0 + (full.shape[1] + 1) * k > w)
    on, outward = outline_blocks(full, border)
    rim = means[on]
    levels = []
    kk = k
    for level in range(SCALES):
        cam = camera.scaled(1.0 / kk) if kk > 1 else camera
        grid = Grid(full, cam, (r0 // kk, c0 // kk))
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
    weights = [cell_weights(decode(m, bd, base).astype(np.float64), grid) for grid, m in levels]
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
                        s_i, n_i, _ = grid_score(decode(m, bd, d).astype(np.float64), grid, weights[i])
                        if i == 0:
                            sc, ncell = s_i, n_i
                        elif np.isfinite(s_i) and not s_i >= sc:
                            sc = s_i
                    ol = outline_score(decode(rim, bd, d).astype(np.float64), outward) if len(rim) else 0.0
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
    chk.spread_deg = spread_deg(decode(levels[0][1], bd, base)) if levels and levels[0][1].size else 0.0
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
        if target == gcls and others and S[gcls] > ALT_MAX:
            # the blocks cannot tell (their cells straddle jumps): the pixels where no jump is
            picked = _fine_target(raw, bd, mask, camera, plausible, cls, gcls, chk)
            if picked is not None:
                target, chk.by_fine = picked, True
    else:
        # the given decoding faces away: a class integrability clearly prefers, else the
        # classes that face the camera best, then the fewest mistakes
        best_cls = min(S, key=S.get)
        if S[best_cls] <= ALT_MAX and all(S[best_cls] + MARGIN <= v for c, v in S.items() if c != best_cls):
            target = best_cls
        else:
            face = {c: min(cands[d][1] for d in plausible if cls(d) == c) for c in S}
            near = [c for c in S if face[c] <= min(face.values()) + FACING_TIE]
            cost = {c: min(mistakes(d, given) for d in plausible if cls(d) == c) for c in near}
            fewest = [c for c in near if cost[c] == min(cost.values())]
            if len(fewest) > 1:
                chk.reason = "facing away, ambiguous"
                opts = sorted((d for d in plausible if cls(d) in fewest),
                              key=lambda d: (mistakes(d, given), cands[d][0]))
                opts = list(dict.fromkeys(options_to(d, given) for d in opts))[:3]
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
        reasons.append("integrability at pixel scale" if chk.by_fine else "integrability")
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
            out = max(plausible, key=lambda d: (cands[d][2], -mistakes(d, given)))
            return refuse(f"normals point into the mask along its outline ({-o_base:.0%} more of them in than "
                          f"out over {chk.outline_blocks} outline blocks), as if {describe(out, given)}: pass "
                          f"{options_to(out, given)}; if they are right as they are (a concave object seen from its "
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
            e1, e2 = mistakes(m1, given), mistakes(m2, given)
            pick = None if e1 == e2 else (m1 if e1 < e2 else m2)
        if pick is None:
            chk.reason = ", ".join(reasons + ["ambiguous"])
            a, b = sorted((m1, m2), key=lambda d: (mistakes(d, given), options_to(d, given)))
            sc = chk.fine if chk.by_fine else chk.scores
            scale = " at pixel scale" if chk.by_fine else ""
            return refuse(f"normals do not fit the decoding '{given.name}' (integrability score{scale} "
                          f"{sc[base.name]:.2f}) but do when {describe(a, given)} ({sc[a.name]:.2f}) or "
                          f"{describe(b, given)} ({sc[b.name]:.2f}), which {_tell(outline_ok)}: pass "
                          f"{options_to(a, given)} or {options_to(b, given)}", True)
    if pick is None:
        pick = base
    chk.chosen, chk.reason = pick, ", ".join(reasons)
    return _finish(chk, given, mode, source)


def _fine_target(raw, bd, mask, camera, plausible: dict, cls, gcls, chk: DecodingCheck):
    """The class the pixel-scale score (:func:`~.cues.fine_score`) picks over the given one
    (``gcls``), or None; fills ``chk.fine`` (per plausible decoding, the score of its class's
    member that the block scores rank best)."""
    values, rays, f = fine_cells(raw, mask, camera)
    best = {}
    for d, v in plausible.items():
        if cls(d) not in best or v[0] < plausible[best[cls(d)]][0]:
            best[cls(d)] = d
    score, cells = {}, {}
    for c, d in best.items():
        corners = []
        for x in values:
            n = decode(x, bd, d).astype(np.float64)
            corners.append(n / np.maximum(np.linalg.norm(n, axis=-1, keepdims=True), 1e-12))
        score[c], cells[c] = fine_score(tuple(corners), rays, f)
    chk.fine = {d.name: score[cls(d)] for d in plausible}
    if gcls not in score or not np.isfinite(score[gcls]) or cells[gcls] < FINE_MIN_CELLS:
        return None
    alt = [c for c in score if c != gcls and np.isfinite(score[c])]
    if not alt:
        return None
    c = min(alt, key=score.get)
    return c if score[c] <= FINE_MAX and score[gcls] - score[c] >= FINE_MARGIN else None


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
    fix = options_to(chosen, given)
    what = describe(chosen, given)
    base = Decoding(given.signs, given.channels, chosen.float_encoding, given.named)
    if chk.by_fine:
        scores = chk.fine
    scale = " at pixel scale" if chk.by_fine else ""
    detail = (f"integrability score{scale} {scores.get(base.name, float('nan')):.2f} as decoded ({given.name}) vs "
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
