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
  differences its neighbours' normals predict across its boundary hold (the median over
  the boundary's edges). A sliver here is held by mutual trust: an edge is kept only where
  *both* weights reach the threshold, which also isolates a pixel that one strong weight
  of its own ties to a neighbour that does not trust it back;
- :func:`pin_pieces` shifts pieces so that given pixels get given unknowns (the repeatable
  ``--depth-at``).
"""

from __future__ import annotations

import numpy as np

from ..config import DEFAULT
from .system import NormalSystem

# an edge whose weights are both below this is a cut (docs/decisions.md#loose-pieces-report)
CUT_WEIGHT = 0.2
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


def _boundary_targets(system: NormalSystem, z: np.ndarray, inside: np.ndarray):
    """Per edge leaving the pixels ``inside``: (inside pixel, the shift that would make the
    outside neighbour's one-sided residual towards it zero)."""
    pix, shift = [], []
    for axis, p, q in _edges(system):
        a = system.a_u if axis == "u" else system.a_v
        nn = system.nx if axis == "u" else system.ny
        # q is after p on the axis: q's residual towards p is a_q (z_q - z_p) + n_q
        out_p = inside[p] & ~inside[q]      # p inside, q outside
        out_q = inside[q] & ~inside[p]      # q inside, p outside: p's residual a_p (z_q - z_p) + n_p
        qq, pp = q[out_p], p[out_p]
        pix.append(pp)
        shift.append(z[qq] + nn[qq] / a[qq] - z[pp])
        pp, qq = p[out_q], q[out_q]
        pix.append(qq)
        shift.append(z[pp] - nn[pp] / a[pp] - z[qq])
    return np.concatenate(pix), np.concatenate(shift)


def reattach_slivers(system: NormalSystem, z: np.ndarray, weights: dict, threshold: float = CUT_WEIGHT,
                     max_pixels: int = DEFAULT.rounds.reattach_pixels) -> tuple:
    """z with every piece of fewer than ``max_pixels`` pixels (mutual-trust pieces,
    :func:`cut_pieces` with ``mutual=True``) that borders another piece shifted by the
    median of the shifts its neighbours' normals ask for across its boundary, and the
    number of pixels moved. The main piece and islands without a neighbour stay.

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
    pix, shift = _boundary_targets(system, z, small[labels])
    # the median of each small piece's boundary shifts (edges between two small pieces
    # count for both: each is held to where the other is now)
    ok = np.isfinite(shift)
    lab, shift = labels[pix][ok], shift[ok]
    if not len(lab):
        return z, 0
    order = np.lexsort((shift, lab))
    lab, shift = lab[order], shift[order]
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
    counts = np.diff(np.r_[starts, len(lab)])
    lo, hi = starts + (counts - 1) // 2, starts + counts // 2
    delta = np.zeros(len(sizes))
    delta[lab[starts]] = 0.5 * (shift[lo] + shift[hi])
    z += delta[labels]
    return z, int(sizes[lab[starts]].sum())


ISLAND = "an island of the mask: no edge joins it, only the solve's weak prior placed it"


def loose_pieces(system: NormalSystem, weights: dict | None, threshold: float = CUT_WEIGHT,
                 min_pixels: int = REPORT_MIN_PIXELS, placed: str = "by the method") -> list:
    """The pieces other than the main one with at least ``min_pixels`` pixels, largest
    first: dicts with ``id`` (1, 2, ...), ``pixels``, ``share`` (of the mask), ``pixel``
    (row, col of one of its pixels, to pin with ``--depth-at``), ``cut_edges`` (edges
    cut between it and other pieces; 0: an island of the mask), ``placed`` (how its
    offset was set: ``placed`` for a cut piece, :data:`ISLAND` for an island)
    and ``labels`` (an (n,) bool of its pixels; not for JSON)."""
    labels, sizes, cuts = cut_pieces(system, weights, threshold)
    out = []
    rows, cols = np.nonzero(system.mask)
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            break
        members = labels == k
        i = int(np.flatnonzero(members)[len(np.flatnonzero(members)) // 2])
        how = placed if cuts[k] else ISLAND
        out.append({"id": k, "pixels": int(sizes[k]), "share": float(sizes[k] / system.n),
                    "pixel": [int(rows[i]), int(cols[i])], "cut_edges": int(cuts[k]),
                    "placed": how, "labels": members})
    return out


def pin_pieces(system: NormalSystem, z: np.ndarray, weights: dict | None, pins, threshold: float = CUT_WEIGHT):
    """z with each piece that holds a pin shifted so that the pinned pixel's unknown is
    the pin's. ``pins``: [(row, col, unknown)] (the unknown: log-depth or depth); one pin
    per piece (a second pin on a piece raises ``ValueError`` naming both). Returns
    (z, [(pin index, piece label, pixels)])."""
    labels, sizes, _ = cut_pieces(system, weights, threshold)
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
