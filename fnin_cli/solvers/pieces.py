"""Pieces of the pixel graph that the weights cut apart, and what the normals cannot say
about them.

A *cut* is an edge between two neighbouring pixels that neither side trusts: both of its
weights (p's towards q and q's towards p) are below a threshold. The connected components
of the masked pixels joined by the edges that are not cut are the *pieces*. The largest
one is the main piece; any other piece is joined to the rest only across cuts (or not at
all: a separate island of the mask), so its offset (orthographic) or scale (perspective)
relative to the main piece is something no integrator can know from the normals.

- :func:`cut_pieces` labels the pieces; :class:`Pieces` holds the labellings of one set of
  weights, computed once and shared by every step that reads them;
- :func:`loose_pieces` describes the non-main ones for ``--json`` and the preview;
- :func:`reattach_slivers` holds single pixels and small slivers that the rounds cut
  loose to their neighbours (no isolated spikes): a small piece is shifted so that the
  differences its neighbours' normals predict across its boundary hold (the weighted
  median over the boundary's edges). A sliver here is held by mutual trust: an
  edge is kept only where *both* weights reach the threshold, which also isolates a pixel
  that one strong weight of its own ties to a neighbour that does not trust it back;
- :func:`pin_pieces` shifts pieces so that given pixels get given unknowns (the repeatable
  ``--depth-at``);
- where the default puts the pieces the normals cannot place (one solve over the piece
  graph: contacts, occluding contours, the connected reading): :mod:`fnin_cli.solvers.placement`.
"""

from __future__ import annotations

import numpy as np

from functools import cached_property

from ..config import DEFAULT, PiecesConfig
from .system import NormalSystem, view_cosine

_P = DEFAULT.pieces


def _edges(system: NormalSystem):
    """(p, q, weight of p towards q, weight of q towards p) per axis, as index arrays."""
    return (("u", system.hp, system.hq), ("v", system.vp, system.vq))


def components(system: NormalSystem, weights: dict | None, threshold: float, mutual: bool,
               drop: tuple | None = None) -> tuple:
    """(component per pixel, number of components, cut edges' p, cut edges' q), unordered:
    :func:`cut_pieces` without its order by size, for callers that need the grouping alone.
    ``drop``: (horizontal, vertical) booleans over the system's edges cut whatever their
    weights (occluding contours: a depth prior's fields, the placement before the rounds)."""
    # imported here: `fnin --help` imports the pipeline and must not pay for scipy
    # (docs/decisions.md#start-up)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    rows, cols, cut_p, cut_q = [], [], [], []
    for i, (axis, p, q) in enumerate(_edges(system)):
        if weights is None:
            keep = np.ones(len(p), bool)
        else:
            a, b = weights[axis + "+"][p] >= threshold, weights[axis + "-"][q] >= threshold
            keep = (a & b) if mutual else (a | b)
        if drop is not None:
            keep &= ~drop[i]
        rows.append(p[keep])
        cols.append(q[keep])
        cut_p.append(p[~keep])
        cut_q.append(q[~keep])
    r = np.concatenate(rows)
    g = csr_matrix((np.ones(len(r), np.int8), (r, np.concatenate(cols))), shape=(system.n, system.n))
    n_raw, raw = connected_components(g, directed=True, connection="weak")
    return raw, n_raw, np.concatenate(cut_p), np.concatenate(cut_q)


def cut_pieces(system: NormalSystem, weights: dict | None, threshold: float = _P.cut_weight,
               mutual: bool = False, drop: tuple | None = None) -> tuple:
    """Label the pieces: (labels (n,) int, sizes per label, cut edges per label).

    An edge p-q is cut where both weights (p's ``axis+`` and q's ``axis-``) are below
    ``threshold``; with ``mutual`` where either is; and wherever ``drop`` ((horizontal,
    vertical) booleans over the system's edges, as :func:`components`) says. Label 0 is
    the largest piece (ties: the one holding the lowest pixel index); the others follow by
    size. With ``weights`` None nothing is cut (the pieces are the mask's islands).

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
    raw, n_raw, cut_p, cut_q = components(system, weights, threshold, mutual, drop)
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


class Pieces:
    """The pieces of one set of weights, the one value every step that reads them shares:
    each labelling is computed once, on first use.

    Attributes
    ----------
    system : NormalSystem
    weights : dict or None
        The per-direction weights that cut (None: nothing is cut).
    config : PiecesConfig
        The cut threshold, the least loose piece, the reattachment's trust floor.
    plain : (labels, sizes, cuts)
        :func:`cut_pieces`: an edge is cut where both of its weights are below the threshold.
    mutual : (labels, sizes, cuts)
        :func:`cut_pieces` with ``mutual``: an edge holds only where both weights reach it.
    joined : (labels, sizes)
        ``mutual``'s pieces with each sliver (under ``config.min_pixels``) joined to the
        largest piece that shares its plain piece: what a pin or a placement moves
        (a pinned island's rim moves with it).

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((1, 4, 2)), -np.ones((1, 4, 1))])
    >>> s = NormalSystem(flat, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> wm = np.array([0.5, 0.9, 0.1, 0.5])
    >>> p = Pieces(s, {"u-": wm, "u+": 1 - wm, "v-": np.full(4, 0.5), "v+": np.full(4, 0.5)})
    >>> p.plain[0].tolist(), p.mutual[0].tolist()
    ([0, 0, 1, 1], [0, 0, 1, 1])
    """

    def __init__(self, system: NormalSystem, weights: dict | None, config: PiecesConfig = _P,
                 drop: tuple | None = None):
        self.system, self.weights, self.config, self.drop = system, weights, config, drop

    def cut_also(self, drop: tuple) -> "Pieces":
        """The same weights' pieces with the edges flagged in ``drop`` ((horizontal, vertical)
        booleans over the system's edges) cut as well."""
        if self.drop is not None:
            drop = (drop[0] | self.drop[0], drop[1] | self.drop[1])
        return Pieces(self.system, self.weights, self.config, drop)

    @cached_property
    def plain(self) -> tuple:
        return cut_pieces(self.system, self.weights, self.config.cut_weight, drop=self.drop)

    @cached_property
    def mutual(self) -> tuple:
        return cut_pieces(self.system, self.weights, self.config.cut_weight, mutual=True, drop=self.drop)

    @cached_property
    def joined(self) -> tuple:
        labels, sizes, _ = self.mutual
        both = self.plain[0]
        small = sizes[labels] < self.config.min_pixels
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


def _boundary_edges(system: NormalSystem, labels: np.ndarray, small: np.ndarray, weights: dict | None = None,
                    floor: float = _P.trust_floor):
    """Per edge that leaves a ``small`` piece (``labels``: each pixel's piece; an edge
    between two small pieces is listed once for each side): (inside pixel, outside pixel,
    offset, weight). The shift ``z[outside] + offset - z[inside]`` makes the outside
    neighbour's one-sided residual towards the inside pixel zero. The weight is
    ``floor`` plus the edge's trust: its two weights, each side's towards the other
    (0 without ``weights``)."""
    pin, pout, off, weight = [], [], [], []
    for axis, p, q in _edges(system):
        a = system.a_u if axis == "u" else system.a_v
        nn = system.nx if axis == "u" else system.ny
        trust = 0.0 if weights is None else np.maximum(weights[axis + "+"][p] + weights[axis + "-"][q], 0.0)
        counts = np.broadcast_to(floor + trust, p.shape)
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


def weighted_medians(lab: np.ndarray, values: np.ndarray, weight: np.ndarray) -> tuple:
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
    """The weighted median of ``values`` (:func:`weighted_medians` of one label).

    Examples
    --------
    >>> weighted_median(np.array([3.0, 1.0, 2.0]), np.array([1.0, 1.0, 5.0]))
    2.0
    """
    return float(weighted_medians(np.zeros(len(values), np.int64), values, weight)[1][0])


def reattach_slivers(system: NormalSystem, z: np.ndarray, pieces: Pieces,
                     max_pixels: int = DEFAULT.rounds.reattach_pixels,
                     grazing_cos: float | None = DEFAULT.rounds.hold_grazing) -> tuple:
    """z with every piece of fewer than ``max_pixels`` pixels (``pieces.mutual``) that
    borders another piece shifted to where its neighbours' normals put it, and the number
    of pixels moved (by a non-zero shift). The main piece and islands without a neighbour
    stay.

    A small piece's shift is the weighted median of the shifts its outside neighbours'
    rows towards it ask for, each weighted by ``PiecesConfig.trust_floor`` plus the edge's trust
    (:func:`_boundary_edges`); where the piece has rows from neighbours whose normals do not
    graze (view cosine at least ``grazing_cos``), its shift is one of theirs, the one nearest
    that median: a grazing neighbour's step is what a 1-degree error makes it, so its row
    weighs in the choice but cannot place the piece where no firm row asks (a corner pixel
    beside a rim). It is one of them, never the midpoint of two: a pixel on a
    jump, whose neighbours' normals put it on either surface, joins the side it is tied to
    most instead of the middle of the jump. Small pieces that border
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
    >>> z, moved = reattach_slivers(s, np.array([0, 0, 9.0, 0, 0]), Pieces(s, w), max_pixels=2)
    >>> z.tolist(), moved
    ([0.0, 0.0, 0.0, 0.0, 0.0], 1)
    """
    labels, sizes, _ = pieces.mutual
    n_raw = sizes.size
    small = (sizes < max_pixels) & (np.arange(n_raw) != 0)      # label 0: the main piece
    if not small.any():
        return z, 0
    z = np.array(z, np.float64, copy=True)
    pin, pout, off, weight = _boundary_edges(system, labels, small, pieces.weights, pieces.config.trust_floor)
    grazing = None if grazing_cos is None else view_cosine(system) < grazing_cos
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
        asked = z[pout[use]] + off[use] - z[pin[use]]
        done, shift = weighted_medians(lab_in[use], asked, weight[use])
        if grazing is not None:
            shift = _firm_place(lab_in[use], asked, ~grazing[pout[use]], done, shift, n_raw)
        delta = np.zeros(n_raw)
        delta[done] = shift
        z[members] += delta[labels[members]]
        waiting[done] = False
        placed[done] = True
        moved += int(sizes[done[shift != 0]].sum())
    return z, moved


def _firm_place(lab: np.ndarray, asked: np.ndarray, firm: np.ndarray, done: np.ndarray, shift: np.ndarray,
                n: int) -> np.ndarray:
    """``shift`` (per label of ``done``) moved, for each label with ``firm`` rows, to the
    firm row's ``asked`` value nearest to it (itself where it is one)."""
    if not firm.any():
        return shift
    at = np.full(n, np.nan)
    at[done] = shift
    rows = np.flatnonzero(firm)
    order = np.lexsort((np.abs(asked[rows] - at[lab[rows]]), lab[rows]))
    rows = rows[order]
    first = np.r_[True, lab[rows][1:] != lab[rows][:-1]]
    nearest = np.full(n, np.nan)
    nearest[lab[rows[first]]] = asked[rows[first]]
    out = nearest[done]
    return np.where(np.isfinite(out), out, shift)


ISLAND = "an island of the mask: no edge joins it, only the solve's weak prior placed it"
EXTRAPOLATED = "by one side's normals extrapolated across a jump"


def loose_pieces(pieces: Pieces, placed: str = "by the method") -> list:
    """The pieces other than the main one with at least ``config.min_pixels`` pixels, largest
    first, the pieces those of ``pieces.mutual``: a piece joined to the
    rest only across cuts, or only where one side's normal is extrapolated across a jump
    (one weight trusts the edge, the other does not), is one the normals cannot place.
    Dicts with ``id`` (1, 2, ...), ``pixels``, ``share`` (of the mask), ``pixel`` (row,
    col of one of its pixels, to pin with ``--depth-at``), ``cut_edges`` (edges between it
    and other pieces; 0: an island of the mask), ``placed`` (how its offset was set:
    ``placed`` for a piece cut all round, :data:`EXTRAPOLATED` for one held by one-sided
    edges, :data:`ISLAND` for an island) and ``labels`` (an (n,) bool of its pixels; not
    for JSON)."""
    system, min_pixels = pieces.system, pieces.config.min_pixels
    labels, sizes, cuts = pieces.mutual
    both, _, both_cuts = pieces.plain   # pieces no edge holds either way
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


def unplaced_note(found: list, n: int) -> str | None:
    """One line for the loose pieces (:func:`loose_pieces`, their ``placed`` filled) that
    neither a pin nor a depth prior placed (a contact the placement read may be spurious: the
    piece is still named): how many, their share of the ``n`` masked pixels,
    the largest and where to pin it; None where there are none.

    Examples
    --------
    >>> unplaced_note([{"pixels": 300, "pixel": [4, 7], "placed": "by the method"}], 1000)[:55]
    '1 piece (30% of the pixels; the largest 300 px at row 4'
    >>> unplaced_note([{"pixels": 80, "pixel": [4, 7], "placed": "by the method"}], 29355)[:28]
    '1 piece (0.3% of the pixels;'
    """
    free = [p for p in found if not p["placed"].startswith(("pinned", "depth prior"))]
    if not free:
        return None
    share = sum(p["pixels"] for p in free) / n
    r, c = free[0]["pixel"]
    return (f"{len(free)} piece{'s' if len(free) > 1 else ''} ({share:.{0 if share >= 0.01 else 1}%} of the pixels; the largest "
            f"{free[0]['pixels']:,} px at row {r}, col {c}) cut off by jumps: the normals cannot say how far "
            "{0} from the rest, so that depth is a guess; --depth-at ROW,COL,DEPTH pins one, --depth-prior FILE "
            "places all".format("it lies" if len(free) == 1 else "they lie"))


def pin_pieces(system: NormalSystem, z: np.ndarray, pieces: Pieces, pins):
    """z with each piece that holds a pin (``pieces.joined``) shifted so that the pinned
    pixel's unknown is the pin's. ``pins``: [(row, col, unknown)] (the unknown: log-depth or depth); one pin
    per piece (a second pin on a piece raises ``ValueError`` naming both). Returns
    (z, [(pin index, piece label, pixels)])."""
    labels, sizes = pieces.joined
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
