"""Where the default puts the pieces the normals cannot place.

The pieces (:mod:`fnin_cli.solvers.pieces`) that the weights cut all round have an offset
(orthographic) or scale (perspective) no integrator reads from the normals. Three readings
place them, each measured in studies/pieces-meet:

- :func:`place_by_bridges`, before the rounds: a surrounded piece moves to where a jump
  along its boundary closes (a cap on a wall);
- :func:`place_at_creases`, before the rounds: a piece that meets the rest at a crease takes
  the most connected reading, least squares across its boundary (sheared pipes);
- :func:`place_behind_occluders`, after the rounds: a loose piece seen past an occluding
  contour moves back, the least that puts it behind its occluder (a floor seen past a
  ball's silhouette).

The steps of :mod:`fnin_cli.solvers.steps` apply them with the default's settings
(``RoundsConfig.bridge_edges``, ``crease_cos``, ``occlusion_cos``).
"""

from __future__ import annotations

from dataclasses import replace  # noqa: F401  (the examples)

import numpy as np

from ..config import DEFAULT
from .pieces import Pieces, cut_pieces  # noqa: F401  (cut_pieces: the examples)
from .system import NormalSystem

_P = DEFAULT.pieces

BEHIND = "behind its occluder: the least shift that puts it behind the occluding contour"


# ------------------------------------------------------------------ bridges: where a jump closes

def _piece_edges(system: NormalSystem, labels: np.ndarray, k: int) -> list:
    """Per axis, piece ``k``'s boundary edges: (p, q, a, n, sign) with sign +1 where the
    piece is at q (sign * (z_q - z_p): the piece's unknown minus its neighbour's)."""
    out = []
    for p, q, a, n in ((system.hp, system.hq, system.a_u, system.nx), (system.vp, system.vq, system.a_v, system.ny)):
        in_p, in_q = labels[p] == k, labels[q] == k
        e = in_p ^ in_q
        out.append((p[e], q[e], a, n, np.where(in_q[e], 1.0, -1.0)))
    return out


def _agree(z: np.ndarray, p, q, a, n, tol: float) -> np.ndarray:
    """Edges p-q whose two one-sided residuals |a dz + n| are both within ``tol``."""
    dz = z[q] - z[p]
    return np.maximum(np.abs(a[p] * dz + n[p]), np.abs(a[q] * dz + n[q])) <= tol


def agreeing_edges(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = _P.agree_tol,
                   edges: list | None = None) -> np.ndarray:
    """(edges,) bool over piece ``k``'s boundary edges (horizontal, then vertical): both
    one-sided residuals within ``tol`` (the edge agrees with both pixels' normals).
    ``edges``: :func:`_piece_edges`' where the caller has them."""
    out = [_agree(z, p, q, a, n, tol) for p, q, a, n, _ in (edges or _piece_edges(system, labels, k))]
    return np.concatenate(out) if out else np.zeros(0, bool)


def bridge_shift(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = _P.agree_tol,
                 edges: list | None = None) -> float:
    """The shift of piece ``k``'s unknown under which the most edges of its boundary agree
    with both pixels' normals (:func:`agreeing_edges`): the middle of the best interval of
    shifts. Where a jump closes (the piece meets the rest through a continuous stretch),
    those edges agree at the true placement; along a jump each edge asks for a shift of its
    own (studies/bridge-placement).

    Examples
    --------
    A flat 2x6 map whose right half sits 5 units off:

    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((2, 6, 2)), -np.ones((2, 6, 1))])
    >>> s = NormalSystem(flat, np.ones((2, 6), bool), Camera(None, 1.0))
    >>> labels = np.array([0, 0, 0, 1, 1, 1] * 2)
    >>> bridge_shift(s, np.where(labels == 1, 5.0, 0.0), labels, 1)
    -5.0
    """
    lo_all, hi_all = [], []
    for p, q, a, n, sign in (edges or _piece_edges(system, labels, k)):
        dz = z[q] - z[p]
        bounds = []
        for aa, nn in ((a[p], n[p]), (a[q], n[q])):
            c = aa * sign                            # the residual after a shift s: r + c s
            r = aa * dz + nn
            with np.errstate(divide="ignore", invalid="ignore"):
                s1, s2 = (-r - tol) / c, (-r + tol) / c
            bounds.append((np.minimum(s1, s2), np.maximum(s1, s2)))
        lo, hi = np.maximum(bounds[0][0], bounds[1][0]), np.minimum(bounds[0][1], bounds[1][1])
        ok = np.isfinite(lo) & np.isfinite(hi) & (lo <= hi)
        lo_all.append(lo[ok])
        hi_all.append(hi[ok])
    lo = np.concatenate(lo_all) if lo_all else np.zeros(0)
    hi = np.concatenate(hi_all) if hi_all else np.zeros(0)
    if lo.size == 0:
        return 0.0
    # the shift inside the most intervals: a sweep over their ends (opening before closing)
    ends = np.concatenate([lo, hi])
    step = np.concatenate([np.ones(lo.size), -np.ones(hi.size)])
    order = np.lexsort((-step, ends))
    best = int(np.argmax(np.cumsum(step[order])))
    nxt = ends[order][best + 1] if best + 1 < ends.size else ends[order][best]
    return float(0.5 * (ends[order][best] + nxt))


def outline_pixels(system: NormalSystem) -> np.ndarray:
    """(n,) bool: the masked pixels with a 4-neighbour outside the mask or the image."""
    m = np.pad(system.mask, 1)
    inner = m[1:-1, 1:-1] & m[:-2, 1:-1] & m[2:, 1:-1] & m[1:-1, :-2] & m[1:-1, 2:]
    return ~inner[system.mask]


def jump_sides(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = _P.agree_tol,
               edges: list | None = None) -> tuple:
    """(in front, behind): piece ``k``'s boundary edges that do not agree with both normals
    where the piece's side is nearer than both normals predict (in front), or farther than
    both (behind). The unknown grows with depth (depth or log-depth)."""
    front = behind = 0
    for p, q, a, n, sign in (edges or _piece_edges(system, labels, k)):
        dz = z[q] - z[p]
        agree = _agree(z, p, q, a, n, tol)
        with np.errstate(divide="ignore", invalid="ignore"):
            pa, pb = sign * (-n[p] / a[p]), sign * (-n[q] / a[q])
        d = sign * dz
        ok = ~agree & np.isfinite(pa) & np.isfinite(pb)
        front += int((ok & (d < np.minimum(pa, pb))).sum())
        behind += int((ok & (d > np.maximum(pa, pb))).sum())
    return front, behind


def place_by_bridges(system: NormalSystem, z: np.ndarray, pieces: Pieces, min_edges: int = 3) -> tuple:
    """z with each piece cut all round (``pieces.plain``, at least ``config.min_pixels``)
    moved to where a jump along its boundary closes, and the list of (label, pixels, shift)
    moved.

    A piece moves by its :func:`bridge_shift` only where (studies/pieces-meet):

    - it is surrounded: none of its pixels is on the mask's outline
      (:func:`outline_pixels`). A piece that reaches the outline borders the unknown
      beyond the mask; whether it is figure or ground the normals cannot say;
    - the shift closes a jump: at least ``min_edges`` boundary edges agree with both
      normals after it that do not now, and more than agree now (a shift within the
      agreement's tolerance is a recentring, not a bridge);
    - after it, the piece lies in front of its neighbours along more of its remaining jump
      edges than behind (:func:`jump_sides`): a surrounded region is the figure. A
      background moved through what it surrounds (bench synthetic persp-15) is not.

    Examples
    --------
    A flat 5x7 map whose middle 1x3 piece sits 5 units behind: at -5 its whole boundary
    closes, and with no jump left nothing says which side is in front, so it stays (the
    tests hold a cap joined to its wall on one side):

    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((5, 7, 2)), -np.ones((5, 7, 1))])
    >>> s = NormalSystem(flat, np.ones((5, 7), bool), Camera(None, 1.0))
    >>> piece = np.zeros((5, 7), bool); piece[2, 2:5] = True
    >>> z = np.where(piece[s.mask], 5.0, 0.0)
    >>> img = piece.astype(float)      # each pixel's weight towards a neighbour on the other side: 0
    >>> cut = {d: 0.5 * (np.roll(img, sh, axis=ax) == img)[s.mask]
    ...        for d, sh, ax in (("u+", -1, 1), ("u-", 1, 1), ("v+", -1, 0), ("v-", 1, 0))}
    >>> labels = cut_pieces(s, cut)[0]
    >>> one = replace(DEFAULT.pieces, min_pixels=1)
    >>> bridge_shift(s, z, labels, 1), place_by_bridges(s, z, Pieces(s, cut, one))[1]
    (-5.0, [])
    """
    labels, sizes = pieces.plain[:2]
    min_pixels, tol = pieces.config.min_pixels, pieces.config.agree_tol
    # the pieces that touch the outline, in one pass (each piece tested then scans its edges)
    touches = np.bincount(labels[outline_pixels(system)], minlength=len(sizes)) > 0
    z = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in np.flatnonzero((sizes >= min_pixels) & ~touches):
        if k == 0:
            continue
        k = int(k)
        members = labels == k
        edges = _piece_edges(system, labels, k)        # scanned once, read by all four tests
        shift = bridge_shift(system, z, labels, k, tol, edges=edges)
        trial = z.copy()
        trial[members] += shift
        before = agreeing_edges(system, z, labels, k, tol, edges=edges)
        after = agreeing_edges(system, trial, labels, k, tol, edges=edges)
        closing, now = int((after & ~before).sum()), int(before.sum())
        if closing < min_edges or closing <= now:
            continue
        front, behind = jump_sides(system, trial, labels, k, tol, edges=edges)
        if front > behind:
            z = trial
            moved.append((k, int(sizes[k]), shift))
    return z, moved


# ------------------------------------------------------------------ creases: the most connected reading

def _cosines(view_cos, system: NormalSystem) -> np.ndarray:
    """The masked pixels' view cosines: ``view_cos`` itself, or what it gives for
    ``system`` where it is a function (computed once a piece is tested)."""
    return view_cos(system) if callable(view_cos) else view_cos


def connected_shift(z: np.ndarray, edges: list) -> float:
    """The shift t of a piece's unknown that minimises the sum over its boundary ``edges``
    (:func:`_piece_edges`) of both one-sided residuals (a (dz + t) + n)^2: no jump on
    average across the boundary, the reading a smooth solve takes.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((2, 4, 2)), -np.ones((2, 4, 1))])
    >>> s = NormalSystem(flat, np.ones((2, 4), bool), Camera(None, 1.0))
    >>> labels = np.array([0, 0, 1, 1] * 2)
    >>> connected_shift(np.where(labels == 1, 3.0, 0.0), _piece_edges(s, labels, 1))
    -3.0
    """
    num = den = 0.0
    for p, q, a, n, sign in edges:
        dz = z[q] - z[p]
        for aa, nn in ((a[p], n[p]), (a[q], n[q])):
            num -= float((sign * aa * (aa * dz + nn)).sum())
            den += float((aa * aa).sum())
    return num / den if den > 0 else 0.0


def place_at_creases(system: NormalSystem, z: np.ndarray, pieces: Pieces, view_cos, cos_min: float,
                     skip=()) -> tuple:
    """z with each piece cut all round (``pieces.plain``, at least ``config.min_pixels``,
    label not in ``skip``) that meets the rest at a crease moved by its
    :func:`connected_shift`, and the list of (label, pixels, shift) moved. ``view_cos``:
    each masked pixel's view cosine, or a function of the system that gives them (called
    only where a piece is tested).

    A crease here: along the piece's whole boundary no edge has a pixel whose view cosine
    (``view_cos``, per masked pixel) is below ``cos_min``, so no side is an occluding
    contour. Where two sheared surfaces meet at a crease every offset closes the jump at
    some row, so the normals do not place the piece; the least-squares reading is what a
    smooth solve (bini's start) takes. Behind an occluding contour that reading would pull
    the occluded piece in front, and the piece stays (studies/pieces-meet).

    Examples
    --------
    A flat 2x6 map whose right half (its own piece) sits 4 units off, no pixel grazing:

    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((2, 6, 2)), -np.ones((2, 6, 1))])
    >>> s = NormalSystem(flat, np.ones((2, 6), bool), Camera(None, 1.0))
    >>> half = np.zeros((2, 6), bool); half[:, 3:] = True
    >>> img = half.astype(float)
    >>> cut = {d: 0.5 * (np.roll(img, sh, axis=ax) == img)[s.mask]
    ...        for d, sh, ax in (("u+", -1, 1), ("u-", 1, 1), ("v+", -1, 0), ("v-", 1, 0))}
    >>> one = replace(DEFAULT.pieces, min_pixels=1)
    >>> z, moved = place_at_creases(s, np.where(half[s.mask], 4.0, 0.0), Pieces(s, cut, one), np.ones(12), 0.3)
    >>> float(np.abs(z).max()), moved
    (0.0, [(1, 6, -4.0)])
    """
    labels, sizes = pieces.plain[:2]
    min_pixels = pieces.config.min_pixels
    z = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            break                                       # labels run largest first
        if k in skip:
            continue
        view_cos = _cosines(view_cos, system)
        edges = _piece_edges(system, labels, k)
        if any(np.any(np.minimum(view_cos[p], view_cos[q]) < cos_min) for p, q, *_ in edges):
            continue                                    # an occluding contour on its boundary
        shift = connected_shift(z, edges)
        z[labels == k] += shift
        moved.append((k, int(sizes[k]), shift))
    return z, moved


# ------------------------------------------------------------------ occluders: behind the contour

def place_behind_occluders(system: NormalSystem, z: np.ndarray, pieces: Pieces, view_cos, cos_min: float) -> tuple:
    """z with each loose piece (``pieces.joined``: :func:`~fnin_cli.solvers.pieces.loose_pieces`'
    pieces, each with its own slivers) that is seen past an occluding contour moved back
    until it lies behind its occluder, and the list of (piece id, pixels, shift) moved.

    An occluding edge of a piece: a boundary edge whose outside pixel's view cosine
    (``view_cos``, as :func:`place_at_creases` takes it) is below ``cos_min`` (the occluder's silhouette, near grazing) and whose
    own is not, the outside pixel on a piece of at least ``config.min_pixels`` (a sliver is no
    occluder). A piece with more than half of its boundary edges occluding ones is moved
    back, never forward, by the least amount that puts it behind its occluder along every
    occluding edge: max(0, max of z(occluder) - z(piece) there). The normals do not say how
    far behind an occluded surface lies; they do say it is not in front of what hides it.
    A piece counts its own slivers (its grazing rim, held to it by the rounds' reattachment)
    as its own, as ``--depth-at`` does; a loose piece is cut off from the rest, so the move
    changes nothing else (studies/pieces-meet).

    Examples
    --------
    An orthographic 3x6 map: a block (columns 0-2) whose rim (column 2) is near grazing, and
    past it a floor (columns 3-5) cut off from it, placed 2 units in front of the rim:

    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.zeros((3, 6, 2)), -np.ones((3, 6, 1))])
    >>> n[:, 2] = (0.99, 0.0, -0.141)
    >>> s = NormalSystem(n / np.linalg.norm(n, axis=2, keepdims=True), np.ones((3, 6), bool), Camera(None, 1.0))
    >>> col = np.tile(np.arange(6), 3)
    >>> w = {d: np.full(18, 0.5) for d in ("u+", "u-", "v+", "v-")}
    >>> w["u+"][col == 2] = 0.0; w["u-"][col == 3] = 0.0          # cut between the rim and the floor
    >>> one = replace(DEFAULT.pieces, min_pixels=1)
    >>> z, moved = place_behind_occluders(s, np.where(col >= 3, 8.0, 10.0), Pieces(s, w, one), np.abs(s.a_u), 0.3)
    >>> z.reshape(3, 6)[0].tolist(), moved
    ([10.0, 10.0, 10.0, 10.0, 10.0, 10.0], [(1, 9, 2.0)])
    """
    # the pieces loose_pieces lists, with its ids, each with its own slivers (a cap's grazing
    # rim is its own, not an occluder): as --depth-at moves them
    labels, sizes = pieces.joined
    min_pixels = pieces.config.min_pixels
    out = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            break                                       # labels run largest first
        members = labels == k
        view_cos = _cosines(view_cos, system)
        ahead, edges = [], 0
        for p, q, _, _, sign in _piece_edges(system, labels, k):
            edges += len(p)
            inside, other = np.where(sign > 0, q, p), np.where(sign > 0, p, q)
            # a sliver is no occluder (on a sphere it is its own grazing rim, cut off)
            occluding = ((view_cos[other] < cos_min) & (view_cos[inside] >= cos_min)
                         & (sizes[labels[other]] >= min_pixels))
            ahead.append((out[other] - out[inside])[occluding])
        ahead = np.concatenate(ahead) if ahead else np.zeros(0)
        if 2 * ahead.size <= edges or ahead.max() <= 0:
            continue
        shift = float(ahead.max())
        out[members] += shift
        moved.append((k, int(sizes[k]), shift))
    return out, moved
