"""Pieces of the pixel graph that the weights cut apart, and what the normals cannot say
about them (issue 31, items 4 and 5).

A *cut* is an edge between two neighbouring pixels that neither side trusts: both of its
weights (p's towards q and q's towards p) are below a threshold. The connected components
of the masked pixels joined by the edges that are not cut are the *pieces*. The largest
one is the main piece; any other piece is joined to the rest only across cuts (or not at
all: a separate island of the mask), so its offset (orthographic) or scale (perspective)
relative to the main piece is something no integrator can know from the normals.

- :func:`cut_pieces` labels the pieces;
- :func:`loose_pieces` describes the non-main ones for ``--json`` and the preview;
- :func:`reattach_slivers` holds single pixels and small slivers that the rounds cut
  loose to their neighbours (no isolated spikes): a small piece is shifted so that the
  differences its neighbours' normals predict across its boundary hold (the weighted
  median over the boundary's edges, issue 43). A sliver here is held by mutual trust: an
  edge is kept only where *both* weights reach the threshold, which also isolates a pixel
  that one strong weight of its own ties to a neighbour that does not trust it back;
- :func:`pin_pieces` shifts pieces so that given pixels get given unknowns (the repeatable
  ``--depth-at``);
- :func:`place_by_bridges` moves a surrounded piece that the one-shot cut all round to
  where a jump along its boundary closes (issue 43, item 2: dome's cap);
- :func:`place_at_creases` gives a piece that meets the rest at a crease, which the normals
  cannot place, the most connected reading (least squares across its boundary: flutes);
- :func:`place_behind_occluders`, after the rounds, moves a loose piece seen past an
  occluding contour behind its occluder (goblet's pieces, synthetic persp-09).
"""

from __future__ import annotations

import numpy as np

from ..config import DEFAULT
from .system import NormalSystem

# an edge whose weights are both below this is a cut (docs/decisions.md#loose-pieces-report)
CUT_WEIGHT = 0.2
# re-attaching a small piece, each boundary edge counts this plus its trust (its two
# weights' sum, 0..2): an edge neither side trusts still counts, a trusted one up to 3x
TRUST_FLOOR = 1.0
# a loose piece listed in --json has at least this many pixels
REPORT_MIN_PIXELS = 50


def _edges(system: NormalSystem):
    """(p, q, weight of p towards q, weight of q towards p) per axis, as index arrays."""
    return (("u", system.hp, system.hq), ("v", system.vp, system.vq))


def _components(system: NormalSystem, weights: dict | None, threshold: float, mutual: bool) -> tuple:
    """(component per pixel, number of components, cut edges' p, cut edges' q), unordered."""
    # imported here: `fnin --help` imports the pipeline and must not pay for scipy
    # (docs/decisions.md#start-up)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    rows, cols, cut_p, cut_q = [], [], [], []
    for axis, p, q in _edges(system):
        if weights is None:
            keep = np.ones(len(p), bool)
        else:
            a, b = weights[axis + "+"][p] >= threshold, weights[axis + "-"][q] >= threshold
            keep = (a & b) if mutual else (a | b)
        rows.append(p[keep])
        cols.append(q[keep])
        cut_p.append(p[~keep])
        cut_q.append(q[~keep])
    r = np.concatenate(rows)
    g = csr_matrix((np.ones(len(r), np.int8), (r, np.concatenate(cols))), shape=(system.n, system.n))
    n_raw, raw = connected_components(g, directed=True, connection="weak")
    return raw, n_raw, np.concatenate(cut_p), np.concatenate(cut_q)


def cut_pieces(system: NormalSystem, weights: dict | None, threshold: float = CUT_WEIGHT,
               mutual: bool = False) -> tuple:
    """Label the pieces: (labels (n,) int, sizes per label, cut edges per label).

    An edge p-q is cut where both weights (p's ``axis+`` and q's ``axis-``) are below
    ``threshold``; with ``mutual`` where either is. Label 0 is the largest piece (ties:
    the one holding the lowest pixel index); the others follow by size. With ``weights``
    None nothing is cut (the pieces are the mask's islands).

    Examples
    --------
    A row of four pixels whose middle edge both sides distrust:

    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((1, 4, 2)), -np.ones((1, 4, 1))])
    >>> s = NormalSystem(flat, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> wm = np.array([0.5, 0.9, 0.1, 0.5])              # w_u- of each pixel
    >>> w = {"u-": wm, "u+": 1 - wm, "v-": np.full(4, 0.5), "v+": np.full(4, 0.5)}
    >>> labels, sizes, cuts = cut_pieces(s, w)
    >>> labels.tolist(), sizes.tolist(), cuts.tolist()
    ([0, 0, 1, 1], [2, 2], [1, 1])
    """
    raw, n_raw, cut_p, cut_q = _components(system, weights, threshold, mutual)
    sizes = np.bincount(raw)
    first = np.empty(len(sizes), np.int64)
    first[raw[::-1]] = np.arange(system.n)[::-1]   # the last write wins: each piece's first pixel
    order = np.lexsort((first, -sizes))             # largest first, then by first pixel
    relabel = np.empty(len(sizes), np.int64)
    relabel[order] = np.arange(len(sizes))
    labels = relabel[raw]
    cp, cq = cut_p, cut_q
    between = labels[cp] != labels[cq]          # a cut inside one piece does not bound it
    cuts = (np.bincount(labels[cp][between], minlength=len(sizes))
            + np.bincount(labels[cq][between], minlength=len(sizes)))
    return labels, sizes[order], cuts


def _boundary_edges(system: NormalSystem, labels: np.ndarray, small: np.ndarray, weights: dict | None = None):
    """Per edge that leaves a ``small`` piece (``labels``: each pixel's piece; an edge
    between two small pieces is listed once for each side): (inside pixel, outside pixel,
    offset, weight). The shift ``z[outside] + offset - z[inside]`` makes the outside
    neighbour's one-sided residual towards the inside pixel zero. The weight is
    ``TRUST_FLOOR`` plus the edge's trust: its two weights, each side's towards the other
    (0 without ``weights``)."""
    pin, pout, off, weight = [], [], [], []
    for axis, p, q in _edges(system):
        a = system.a_u if axis == "u" else system.a_v
        nn = system.nx if axis == "u" else system.ny
        trust = 0.0 if weights is None else np.maximum(weights[axis + "+"][p] + weights[axis + "-"][q], 0.0)
        counts = np.broadcast_to(TRUST_FLOOR + trust, p.shape)
        apart = labels[p] != labels[q]
        # q is after p on the axis: q's residual towards p is a_q (z_q - z_p) + n_q
        for inside, outside, sign in ((p, q, 1.0), (q, p, -1.0)):
            edge = apart & small[labels[inside]]
            o = outside[edge]
            pin.append(inside[edge])
            pout.append(o)
            off.append(sign * nn[o] / a[o])
            weight.append(counts[edge])
    return tuple(np.concatenate(x) for x in (pin, pout, off, weight))


def _weighted_medians(lab: np.ndarray, values: np.ndarray, weight: np.ndarray) -> tuple:
    """(the labels present, per label the weighted median of its ``values``): the first
    value, in increasing order, at which the label's cumulative ``weight`` reaches half its
    total; always one of the values, never the midpoint of two."""
    order = np.lexsort((values, lab))
    lab, values, weight = lab[order], values[order], weight[order]
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
    cum = np.cumsum(weight)
    before = np.r_[0.0, cum][starts]                        # the earlier labels' weight
    half = np.repeat(before + 0.5 * np.add.reduceat(weight, starts), np.diff(np.r_[starts, len(lab)]))
    reached = np.flatnonzero(cum >= half * (1.0 - 1e-12))
    return lab[starts], values[reached[np.searchsorted(reached, starts)]]


def weighted_median(values: np.ndarray, weight: np.ndarray) -> float:
    """The weighted median of ``values`` (:func:`_weighted_medians` of one label).

    Examples
    --------
    >>> weighted_median(np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 5.0]))
    2.0
    """
    return float(_weighted_medians(np.zeros(len(values), np.int64), values, weight)[1][0])


def reattach_slivers(system: NormalSystem, z: np.ndarray, weights: dict, threshold: float = CUT_WEIGHT,
                     max_pixels: int = DEFAULT.rounds.reattach_pixels) -> tuple:
    """z with every piece of fewer than ``max_pixels`` pixels (mutual-trust pieces,
    :func:`cut_pieces` with ``mutual=True``) that borders another piece shifted to where
    its neighbours' normals put it, and the number of pixels moved (by a non-zero shift).
    The main piece and islands without a neighbour stay.

    A small piece's shift is the weighted median of the shifts its outside neighbours'
    rows towards it ask for, each weighted by ``TRUST_FLOOR`` plus the edge's trust
    (:func:`_boundary_edges`). It is one of them, never the midpoint of two: a pixel on a
    jump, whose neighbours' normals put it on either surface, joins the side it is tied to
    most instead of the middle of the jump (issue 43). Small pieces that border
    larger ones are placed first, against those alone; then those that border the pieces
    just placed, and so on (a chain of one-pixel pieces along a silhouette follows the
    surface); small pieces that border only each other are placed against each other at
    once.

    Examples
    --------
    A plane of slope 0 on a 1x5 row whose middle pixel sits 9 units off and that no
    neighbour trusts:

    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((1, 5, 2)), -np.ones((1, 5, 1))])
    >>> s = NormalSystem(flat, np.ones((1, 5), bool), Camera(None, 1.0))
    >>> wm = np.array([0.5, 0.99, 0.99, 0.01, 0.5])
    >>> w = {"u-": wm, "u+": 1 - wm, "v-": np.full(5, 0.5), "v+": np.full(5, 0.5)}
    >>> z, moved = reattach_slivers(s, np.array([0, 0, 9.0, 0, 0]), w, max_pixels=2)
    >>> z.tolist(), moved
    ([0.0, 0.0, 0.0, 0.0, 0.0], 1)
    """
    labels, n_raw, _, _ = _components(system, weights, threshold, mutual=True)
    sizes = np.bincount(labels, minlength=n_raw)
    small = (sizes < max_pixels) & (np.arange(n_raw) != np.argmax(sizes))
    if not small.any():
        return z, 0
    z = np.array(z, np.float64, copy=True)
    pin, pout, off, weight = _boundary_edges(system, labels, small, weights)
    ok = np.isfinite(off) & np.isfinite(weight)
    pin, pout, off, weight = pin[ok], pout[ok], off[ok], weight[ok]
    lab_in = labels[pin]
    members = np.flatnonzero(small[labels])   # the small pieces' pixels: each pass moves some
    placed = ~small                       # per piece: the large ones hold, small ones wait
    waiting = np.zeros(n_raw, bool)
    waiting[lab_in] = True                # small pieces with a neighbour
    moved = 0
    while waiting.any():
        # the edges from a waiting piece to a placed one; none left: the waiting pieces
        # border only each other and are placed against each other's current places
        use = waiting[lab_in] & placed[labels[pout]]
        if not use.any():
            use = waiting[lab_in]
        done, shift = _weighted_medians(lab_in[use], z[pout[use]] + off[use] - z[pin[use]], weight[use])
        delta = np.zeros(n_raw)
        delta[done] = shift
        z[members] += delta[labels[members]]
        waiting[done] = False
        placed[done] = True
        moved += int(sizes[done[shift != 0]].sum())
    return z, moved


ISLAND = "an island of the mask: no edge joins it, only the solve's weak prior placed it"
EXTRAPOLATED = "by one side's normals extrapolated across a jump"
BEHIND = "behind its occluder: the least shift that puts it behind the occluding contour"


def loose_pieces(system: NormalSystem, weights: dict | None, threshold: float = CUT_WEIGHT,
                 min_pixels: int = REPORT_MIN_PIXELS, placed: str = "by the method") -> list:
    """The pieces other than the main one with at least ``min_pixels`` pixels, largest
    first, the pieces those of :func:`cut_pieces` with ``mutual``: a piece joined to the
    rest only across cuts, or only where one side's normal is extrapolated across a jump
    (one weight trusts the edge, the other does not), is one the normals cannot place.
    Dicts with ``id`` (1, 2, ...), ``pixels``, ``share`` (of the mask), ``pixel`` (row,
    col of one of its pixels, to pin with ``--depth-at``), ``cut_edges`` (edges between it
    and other pieces; 0: an island of the mask), ``placed`` (how its offset was set:
    ``placed`` for a piece cut all round, :data:`EXTRAPOLATED` for one held by one-sided
    edges, :data:`ISLAND` for an island) and ``labels`` (an (n,) bool of its pixels; not
    for JSON)."""
    labels, sizes, cuts = cut_pieces(system, weights, threshold, mutual=True)
    both, _, both_cuts = cut_pieces(system, weights, threshold)   # pieces no edge holds either way
    big = sizes[labels] >= min_pixels
    out = []
    rows, cols = np.nonzero(system.mask)
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            break
        members = labels == k
        at = np.flatnonzero(members)
        i = int(at[len(at) // 2])
        whole = both == both[i]
        if np.unique(labels[whole & big]).size > 1:      # one-sided edges join it to another piece
            how, edges = EXTRAPOLATED, int(cuts[k])
        elif both_cuts[both[i]] == 0:
            how, edges = ISLAND, 0
        else:
            how, edges = placed, int(cuts[k])
        out.append({"id": k, "pixels": int(sizes[k]), "share": float(sizes[k] / system.n),
                    "pixel": [int(rows[i]), int(cols[i])], "cut_edges": edges,
                    "placed": how, "labels": members})
    return out


def _pin_labels(system: NormalSystem, weights: dict | None, threshold: float) -> tuple:
    """(labels, sizes) of the pieces a pin moves: :func:`loose_pieces`' (``mutual``), each
    smaller one (under REPORT_MIN_PIXELS) going with the largest piece of those that
    share its piece under plain cuts (a sliver of a pinned island's rim moves with it)."""
    labels, sizes, _ = cut_pieces(system, weights, threshold, mutual=True)
    both = cut_pieces(system, weights, threshold)[0]
    small = sizes[labels] < REPORT_MIN_PIXELS
    if small.any():
        # per plain piece, its lowest mutual label among the large ones (labels run largest first)
        none = np.iinfo(np.int64).max
        first = np.full(int(both.max()) + 1, none)
        np.minimum.at(first, both[~small], labels[~small])
        has = first[both[small]] != none
        moved = labels[small].copy()
        moved[has] = first[both[small]][has]
        labels = labels.copy()
        labels[small] = moved
        sizes = np.bincount(labels, minlength=sizes.size)
    return labels, sizes


def pin_pieces(system: NormalSystem, z: np.ndarray, weights: dict | None, pins, threshold: float = CUT_WEIGHT):
    """z with each piece that holds a pin shifted so that the pinned pixel's unknown is
    the pin's. ``pins``: [(row, col, unknown)] (the unknown: log-depth or depth); one pin
    per piece (a second pin on a piece raises ``ValueError`` naming both). Returns
    (z, [(pin index, piece label, pixels)])."""
    labels, sizes = _pin_labels(system, weights, threshold)
    z = np.array(z, np.float64, copy=True)
    seen, done = {}, []
    for i, (r, c, target) in enumerate(pins):
        k = int(labels[system.index[r, c]])
        if k in seen:
            pr, pc = pins[seen[k]][:2]
            raise ValueError(f"pixels (row {pr}, col {pc}) and (row {r}, col {c}) are on one piece; "
                             "pin each piece once")
        seen[k] = i
        z[labels == k] += target - z[system.index[r, c]]
        done.append((i, k, int(sizes[k])))
    return z, done


# ------------------------------------------------------------------ bridges: where a jump closes

# a boundary edge agrees with both normals where both one-sided residuals |a dz + n| are at
# most this (the tolerance of the "neighbours disagree with their normals" check)
AGREE_TOL = 1.0


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


def agreeing_edges(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = AGREE_TOL,
                   edges: list | None = None) -> np.ndarray:
    """(edges,) bool over piece ``k``'s boundary edges (horizontal, then vertical): both
    one-sided residuals within ``tol`` (the edge agrees with both pixels' normals).
    ``edges``: :func:`_piece_edges`' where the caller has them."""
    out = [_agree(z, p, q, a, n, tol) for p, q, a, n, _ in (edges or _piece_edges(system, labels, k))]
    return np.concatenate(out) if out else np.zeros(0, bool)


def bridge_shift(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = AGREE_TOL,
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


def jump_sides(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = AGREE_TOL,
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


def place_by_bridges(system: NormalSystem, z: np.ndarray, weights: dict, min_edges: int = 3,
                     threshold: float = CUT_WEIGHT, min_pixels: int = REPORT_MIN_PIXELS, pieces=None) -> tuple:
    """z with each piece that ``weights`` cut all round (at least ``min_pixels``) moved to
    where a jump along its boundary closes, and the list of (label, pixels, shift) moved.

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

    ``pieces``: :func:`cut_pieces`' (labels, sizes) of ``weights`` where the caller has them.

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
    >>> bridge_shift(s, z, labels, 1), place_by_bridges(s, z, cut, min_pixels=1)[1]
    (-5.0, [])
    """
    labels, sizes = pieces or cut_pieces(system, weights, threshold)[:2]
    # the pieces that touch the outline, in one pass (each candidate then scans the edges)
    touches = np.bincount(labels[outline_pixels(system)], minlength=len(sizes)) > 0
    z = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in np.flatnonzero((sizes >= min_pixels) & ~touches):
        if k == 0:
            continue
        k = int(k)
        members = labels == k
        edges = _piece_edges(system, labels, k)        # scanned once, read by all four tests
        shift = bridge_shift(system, z, labels, k, edges=edges)
        trial = z.copy()
        trial[members] += shift
        before = agreeing_edges(system, z, labels, k, edges=edges)
        after = agreeing_edges(system, trial, labels, k, edges=edges)
        closing, now = int((after & ~before).sum()), int(before.sum())
        if closing < min_edges or closing <= now:
            continue
        front, behind = jump_sides(system, trial, labels, k, edges=edges)
        if front > behind:
            z = trial
            moved.append((k, int(sizes[k]), shift))
    return z, moved


# ------------------------------------------------------------------ creases: the most connected reading

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


def place_at_creases(system: NormalSystem, z: np.ndarray, weights: dict, view_cos, cos_min: float,
                     skip=(), threshold: float = CUT_WEIGHT, min_pixels: int = REPORT_MIN_PIXELS,
                     pieces=None) -> tuple:
    """z with each piece that ``weights`` cut all round (at least ``min_pixels``, label not
    in ``skip``) and that meets the rest at a crease moved by its :func:`connected_shift`,
    and the list of (label, pixels, shift) moved. ``view_cos``: each masked pixel's view
    cosine, or a function of the system that gives them (called only where a piece is
    tested); ``pieces``: :func:`cut_pieces`' (labels, sizes) where the caller has them.

    A crease here: along the piece's whole boundary no edge has a pixel whose view cosine
    (``view_cos``, per masked pixel) is below ``cos_min``, so no side is an occluding
    contour. Where two sheared surfaces meet at a crease every offset closes the jump at
    some row, so the normals do not place the piece; the least-squares reading is what a
    smooth solve (bini's start) takes. Behind an occluding contour that reading would pull
    the occluded piece in front, and the piece stays (studies/pieces-meet, candidate 3).

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
    >>> z, moved = place_at_creases(s, np.where(half[s.mask], 4.0, 0.0), cut, np.ones(12), 0.3, min_pixels=1)
    >>> float(np.abs(z).max()), moved
    (0.0, [(1, 6, -4.0)])
    """
    labels, sizes = pieces or cut_pieces(system, weights, threshold)[:2]
    z = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            break                                       # labels run largest first
        if k in skip:
            continue
        if callable(view_cos):
            view_cos = view_cos(system)
        edges = _piece_edges(system, labels, k)
        if any(np.any(np.minimum(view_cos[p], view_cos[q]) < cos_min) for p, q, *_ in edges):
            continue                                    # an occluding contour on its boundary
        shift = connected_shift(z, edges)
        z[labels == k] += shift
        moved.append((k, int(sizes[k]), shift))
    return z, moved


# ------------------------------------------------------------------ occluders: behind the contour

def place_behind_occluders(system: NormalSystem, z: np.ndarray, weights: dict, view_cos: np.ndarray,
                           cos_min: float, threshold: float = CUT_WEIGHT,
                           min_pixels: int = REPORT_MIN_PIXELS, pieces=None) -> tuple:
    """z with each loose piece (:func:`loose_pieces` of ``weights``) that is seen past an
    occluding contour moved back until it lies behind its occluder, and the list of
    (piece id, pixels, shift) moved.

    An occluding edge of a piece: a boundary edge whose outside pixel's view cosine
    (``view_cos``) is below ``cos_min`` (the occluder's silhouette, near grazing) and whose
    own is not. A piece with more than half of its boundary edges occluding ones is moved
    back, never forward, by the least amount that puts it behind its occluder along every
    occluding edge: max(0, max of z(occluder) - z(piece) there). The normals do not say how
    far behind an occluded surface lies; they do say it is not in front of what hides it.
    A piece counts its own slivers (its grazing rim, held to it by the rounds' reattachment)
    as its own, as ``--depth-at`` does; a loose piece is cut off from the rest, so the move
    changes nothing else (studies/pieces-meet, candidate 7). ``pieces``: other (labels,
    sizes) to test, labels running largest first (a study's).

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
    >>> z, moved = place_behind_occluders(s, np.where(col >= 3, 8.0, 10.0), w, np.abs(s.a_u), 0.3, min_pixels=1)
    >>> z.reshape(3, 6)[0].tolist(), moved
    ([10.0, 10.0, 10.0, 10.0, 10.0, 10.0], [(1, 9, 2.0)])
    """
    # the pieces loose_pieces lists, with its ids, each with its own slivers (a cap's grazing
    # rim is its own, not an occluder): as --depth-at moves them
    labels, sizes = pieces or _pin_labels(system, weights, threshold)
    out = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            break                                       # labels run largest first
        members = labels == k
        ahead, edges = [], 0
        for p, q, _, _, sign in _piece_edges(system, labels, k):
            edges += len(p)
            inside, other = np.where(sign > 0, q, p), np.where(sign > 0, p, q)
            occluding = (view_cos[other] < cos_min) & (view_cos[inside] >= cos_min)
            ahead.append((out[other] - out[inside])[occluding])
        ahead = np.concatenate(ahead) if ahead else np.zeros(0)
        if 2 * ahead.size <= edges or ahead.max() <= 0:
            continue
        shift = float(ahead.max())
        out[members] += shift
        moved.append((k, int(sizes[k]), shift))
    return out, moved
