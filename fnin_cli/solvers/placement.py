"""One placement solve over the piece graph: the offsets the normals leave to the evidence
along the pieces' boundaries.

The pieces (:mod:`fnin_cli.solvers.pieces`) are the nodes, one unknown offset each (a shift of
the unknown: depth orthographic, log-depth perspective); the largest piece is held. Every pair
of pieces that share boundary edges is read for what the normals say across it
(:func:`piece_links`):

- **contact**: where the two sides' slopes along the boundary agree (``touch_tol``), the jump
  across it is the same along it, and where one shift of the pair makes at least
  ``contact_edges`` such edges (neither pixel on the mask's outline) agree with both pixels'
  normals at once, more than agree now elsewhere on the boundary, the two sides touch there (a
  fold, a crease whose sides can touch all along it, a bridge where a jump closes). The pair is
  held at that shift;
- **occlusion**: where most of the boundary is an occluding contour (one side's pixels within
  ``occlusion_cos`` of grazing, the other's not), the grazing side is in front: an inequality,
  the facing side behind it by at least nothing, by no more than it must move;
- **connected**: a pair with neither, and no grazing pixel on its boundary, is read the way a
  smooth solve reads it, no jump on average across the boundary (least squares over its
  edges), at a weight so small that it only places what nothing else does.

:func:`solve_offsets` minimises the weighted absolute misfits of the contacts and the
connected readings with the occlusions as hinges (a small linear programme, HiGHS), each piece
held where it is by a tie-breaking weight; :func:`place_pieces` applies the offsets and says
how each piece was placed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .system import NormalSystem, view_cosine

CONTACT = "in contact: the jump across its boundary closes along it"
BEHIND = "behind its occluder: the least shift that puts it behind the occluding contour"
CONNECTED = "by the most connected reading (no jump on average across its boundary): the normals cannot place it"

# the weights of the programme's terms, relative to one contact edge: a connected reading
# only decides what no contact or occlusion does, the hold only what nothing does, and an
# occlusion's hinge outweighs any contact (docs/decisions.md#placement-solve)
_CONNECTED, _HOLD, _HINGE = 1e-3, 1e-6, 1e3


@dataclass(frozen=True)
class Links:
    """The evidence between pairs of pieces (:func:`piece_links`), one row per pair (a < b):
    Δ = t_b - t_a is the pair's relative shift.

    Attributes
    ----------
    a, b : (m,) int
        The pieces of each pair.
    edges : (m,) int
        Boundary edges between them.
    contact : (m,) int
        The most touching boundary edges that one Δ makes agree with both normals (0 where
        that is no more than the edges agreeing now that it would open).
    contact_shift : (m,) float
        That Δ (the middle of the interval where they all agree).
    connected_shift : (m,) float
        The least-squares Δ over the boundary's one-sided residuals.
    low, high : (m,) float
        The occlusion's bounds on Δ (-inf, +inf: none).
    grazing : (m,) int
        Boundary edges with a pixel within the occlusion's cosine of grazing.
    """

    a: np.ndarray
    b: np.ndarray
    edges: np.ndarray
    contact: np.ndarray
    contact_shift: np.ndarray
    connected_shift: np.ndarray
    low: np.ndarray
    high: np.ndarray
    grazing: np.ndarray


def _boundary(system: NormalSystem, labels: np.ndarray, nodes: int):
    """Every edge p-q (p the pixel before q along its axis) between two different pieces
    both below ``nodes``: (p, q, a_p, a_q, n_p, n_q, sign, bend), sign +1 where q is on the
    pair's larger label (a shift Δ of that piece against the other changes z_q - z_p by
    sign Δ), bend how much the jump across the edge changes per pixel along the boundary
    (the two sides' slopes along it, in the across residual's units)."""
    out = []
    for p, q, a, n, a_t, n_t in ((system.hp, system.hq, system.a_u, system.nx, system.a_v, system.ny),
                                 (system.vp, system.vq, system.a_v, system.ny, system.a_u, system.nx)):
        lp, lq = labels[p], labels[q]
        e = (lp != lq) & (lp < nodes) & (lq < nodes)
        p, q = p[e], q[e]
        with np.errstate(divide="ignore", invalid="ignore"):
            bend = np.abs(n_t[p] / a_t[p] - n_t[q] / a_t[q]) * np.minimum(np.abs(a[p]), np.abs(a[q]))
        out.append((p, q, a[p], a[q], n[p], n[q], np.where(labels[q] > labels[p], 1.0, -1.0), bend))
    return [np.concatenate(x) for x in zip(*out)]


def occluding_edges(system: NormalSystem, cos_min: float) -> tuple:
    """(horizontal, vertical) booleans over the system's edges: True where an occluding
    contour runs, one pixel's normal within ``cos_min`` of grazing (:func:`view_cosine`) and
    the other's not. The normals say nothing of the step there (an object in front of
    another), so a depth prior's step there is evidence, not an error (studies/robust-prior)."""
    c = view_cosine(system) >= cos_min
    return c[system.hp] != c[system.hq], c[system.vp] != c[system.vq]


def occluding_contours(system: NormalSystem, occlusion_cos: float) -> tuple:
    """(horizontal, vertical) booleans over the system's edges: the occluding edges
    (:func:`occluding_edges`) where the grazing pixel's surface recedes towards the other
    (its one-sided step towards it, -n/a, is away from the camera): a limb against what it
    hides. A convex flank's grazing side lies beyond its facing one and recedes away from
    it: not a contour."""
    grazing = view_cosine(system) < occlusion_cos
    out = []
    for one, (p, q, a, n) in zip(occluding_edges(system, occlusion_cos),
                                 ((system.hp, system.hq, system.a_u, system.nx),
                                  (system.vp, system.vq, system.a_v, system.ny))):
        with np.errstate(divide="ignore", invalid="ignore"):
            recede_p = -n[p] / a[p] > 0        # p grazes: z_q - z_p it predicts
            recede_q = n[q] / a[q] > 0         # q grazes: z_p - z_q it predicts
        out.append(one & np.where(grazing[p], recede_p, recede_q))
    return tuple(out)


def outline_pixels(system: NormalSystem) -> np.ndarray:
    """(n,) bool: the masked pixels with a 4-neighbour outside the mask or the image (those
    that lack one of the system's one-sided differences)."""
    h = system.has
    return ~(h["u+"] & h["u-"] & h["v+"] & h["v-"])


def _best_intervals(pair: np.ndarray, lo: np.ndarray, hi: np.ndarray, m: int) -> tuple:
    """Per pair (0..m-1): the most intervals [lo, hi] that share one point, and the middle of
    the stretch where they do (a sweep over the ends, openings before closings at a tie)."""
    if lo.size == 0:
        return np.zeros(m, np.int64), np.zeros(m)
    ends = np.concatenate([lo, hi])
    step = np.concatenate([np.ones(lo.size), -np.ones(hi.size)])
    owner = np.concatenate([pair, pair])
    order = np.lexsort((-step, ends, owner))
    ends, step, owner = ends[order], step[order], owner[order]
    run = np.cumsum(step)
    first = np.searchsorted(owner, np.arange(m))
    base = np.where(first > 0, run[np.maximum(first - 1, 0)], 0.0)
    depth = run - base[owner]
    count = np.zeros(m)
    np.maximum.at(count, owner, depth)
    # the first position in each pair where the depth is its maximum
    at_max = depth == count[owner]
    idx = np.full(m, -1)
    pos = np.flatnonzero(at_max)
    idx[owner[pos[::-1]]] = pos[::-1]
    mid = np.zeros(m)
    ok = idx >= 0
    nxt = np.minimum(idx[ok] + 1, ends.size - 1)
    mid[ok] = 0.5 * (ends[idx[ok]] + ends[nxt])
    return count.astype(np.int64), mid


def piece_links(system: NormalSystem, z: np.ndarray, labels: np.ndarray, nodes: int, view_cos: np.ndarray,
                tol: float, occlusion_cos: float | None, touch_tol: float = np.inf) -> Links:
    """The evidence between every pair of pieces below ``nodes`` that share boundary edges
    (:class:`Links`), read from z over the masked pixels.

    ``tol``: an edge agrees with a normal where the one-sided residual |a dz + n| is within it.
    ``view_cos``: each masked pixel's |cos| to its view ray. ``occlusion_cos``: a boundary edge
    with one pixel below it and the other not is occluding, the grazing side in front (None:
    no occlusions). ``touch_tol``: only edges across which the two sides' slopes along the
    boundary agree within it (the jump changes by at most that per pixel along it, in
    residual units) are read for contact: where two surfaces can touch all along a stretch.
    """
    p, q, ap, aq, n_p, n_q, sign, bend = _boundary(system, labels, nodes)
    lab_a, lab_b = np.minimum(labels[p], labels[q]), np.maximum(labels[p], labels[q])
    keys, pair = np.unique(lab_a * nodes + lab_b, return_inverse=True)
    m = keys.size
    dz = z[q] - z[p]
    # the Δ under which each side's residual a (dz + sign Δ) + n is within tol
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = []
        for a, n in ((ap, n_p), (aq, n_q)):
            s1, s2 = sign * ((-n - tol) / a - dz), sign * ((-n + tol) / a - dz)
            bounds.append((np.minimum(s1, s2), np.maximum(s1, s2)))
    lo, hi = np.maximum(bounds[0][0], bounds[1][0]), np.minimum(bounds[0][1], bounds[1][1])
    fits = np.isfinite(lo) & np.isfinite(hi) & (lo <= hi)
    # touching, and off the mask's outline (beyond it the labels and normals are cut short)
    rim = outline_pixels(system)
    ok = fits & (bend <= touch_tol) & ~rim[p] & ~rim[q]
    contact, mid = _best_intervals(pair[ok], lo[ok], hi[ok], m)
    # a contact must close more edges than the present placement holds elsewhere on the
    # boundary (edges agreeing now, at Δ = 0, that it would open): else it is a coincidence
    # of a few edges, not where the two sides touch
    s_e = mid[pair]
    held = fits & (lo <= 0.0) & (hi >= 0.0) & ~((lo <= s_e) & (hi >= s_e))
    contact = np.where(contact > np.bincount(pair[held], minlength=m), contact, 0)
    # least squares: the Δ minimising the sum over both sides of (a (dz + sign Δ) + n)^2
    num = np.bincount(pair, -sign * (ap * (ap * dz + n_p) + aq * (aq * dz + n_q)), m)
    den = np.bincount(pair, ap * ap + aq * aq, m)
    connected = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    edges = np.bincount(pair, minlength=m)
    low, high = np.full(m, -np.inf), np.full(m, np.inf)
    grazing = np.zeros(m, np.int64)
    if occlusion_cos is not None:
        gp, gq = view_cos[p] < occlusion_cos, view_cos[q] < occlusion_cos
        # the grazing side in front: p's, z_q - z_p + sign Δ >= 0; q's, <= 0
        front_p, front_q = gp & ~gq, gq & ~gp
        lower = (front_p & (sign > 0)) | (front_q & (sign < 0))      # Δ >= -sign dz
        upper = (front_p & (sign < 0)) | (front_q & (sign > 0))      # Δ <= -sign dz
        bound = -sign * dz
        lo_b, hi_b = np.full(m, -np.inf), np.full(m, np.inf)
        np.maximum.at(lo_b, pair[lower], bound[lower])
        np.minimum.at(hi_b, pair[upper], bound[upper])
        n_lo, n_hi = np.bincount(pair[lower], minlength=m), np.bincount(pair[upper], minlength=m)
        use_lo, use_hi = 2 * n_lo > edges, 2 * n_hi > edges
        low[use_lo], high[use_hi] = lo_b[use_lo], hi_b[use_hi]
        grazing = np.bincount(pair[gp | gq], minlength=m)
    return Links(keys // nodes, keys % nodes, edges, contact, mid, connected, low, high, grazing)


def solve_offsets(links: Links, nodes: int, contact_edges: int, fixed: dict | None = None) -> tuple:
    """(t (nodes,), how (nodes,) str or None): the offsets that minimise

    sum over contacts of c |Δ - s| + sum over the rest of 1e-3 e |Δ - s_connected|
    + 1e3 e (hinges of the occlusions' bounds) + 1e-6 sum |t|,

    c a contact's agreeing edges, e a pair's edges, t_0 = 0 (the largest piece held); a pair
    with a grazing pixel on its boundary gets no connected reading (behind an occluding
    contour it would pull the occluded side in front). ``fixed`` {piece: offset}: pieces
    whose offsets the user's pins set (``--depth-at``), held there instead of the largest
    piece, so that what touches them follows. ``how``: per piece, the evidence that placed
    it (CONTACT, BEHIND, CONNECTED), None where nothing did or a pin does.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    is_contact = links.contact >= contact_edges
    bounded = np.isfinite(links.low) | np.isfinite(links.high)
    is_connected = ~is_contact & (links.grazing == 0)
    # variables: t (nodes, t_0 fixed by bounds), then per absolute term u+, u- (>= 0), then hinges
    terms = [(i, links.contact_shift[i], float(links.contact[i])) for i in np.flatnonzero(is_contact)]
    terms += [(i, links.connected_shift[i], _CONNECTED * float(links.edges[i])) for i in np.flatnonzero(is_connected)]
    hinges = [(i, links.low[i], 1.0) for i in np.flatnonzero(np.isfinite(links.low))]
    hinges += [(i, links.high[i], -1.0) for i in np.flatnonzero(np.isfinite(links.high))]
    nt, nterm, nh = nodes, len(terms), len(hinges)
    nvar = 2 * nt + 2 * nterm + nh           # t = tp - tn (each >= 0) keeps the hold linear
    cost = np.zeros(nvar)
    cost[:2 * nt] = _HOLD
    rows, cols, vals, rhs = [], [], [], []
    for r, (i, s, w) in enumerate(terms):    # t_b - t_a - u+ + u- = s
        a, b = int(links.a[i]), int(links.b[i])
        rows += [r] * 6
        cols += [b, nt + b, a, nt + a, 2 * nt + 2 * r, 2 * nt + 2 * r + 1]
        vals += [1.0, -1.0, -1.0, 1.0, -1.0, 1.0]
        rhs.append(s)
        cost[2 * nt + 2 * r: 2 * nt + 2 * r + 2] = w
    a_eq = coo_matrix((vals, (rows, cols)), shape=(nterm, nvar)) if nterm else None
    rows, cols, vals, rub = [], [], [], []
    for r, (i, bound, sign) in enumerate(hinges):   # sign (Δ - bound) + h >= 0
        a, b = int(links.a[i]), int(links.b[i])
        rows += [r] * 5
        cols += [b, nt + b, a, nt + a, 2 * nt + 2 * nterm + r]
        vals += [-sign, sign, sign, -sign, -1.0]
        rub.append(-sign * bound)
        cost[2 * nt + 2 * nterm + r] = _HINGE * float(links.edges[i])
    a_ub = coo_matrix((vals, (rows, cols)), shape=(nh, nvar)) if nh else None
    bnds = np.zeros((nvar, 2))
    bnds[:, 1] = np.inf
    fixed = {k: v for k, v in (fixed or {}).items() if k < nt}
    if not fixed:
        fixed = {0: 0.0}                     # the largest piece is held
    for k, v in fixed.items():               # t_k = tp_k - tn_k = v exactly
        bnds[k] = max(v, 0.0)
        bnds[nt + k] = max(-v, 0.0)
    res = linprog(cost, A_ub=a_ub, b_ub=np.array(rub) if nh else None, A_eq=a_eq,
                  b_eq=np.array(rhs) if nterm else None, bounds=bnds, method="highs")
    t = res.x[:nt] - res.x[nt:2 * nt] if res.status == 0 else np.zeros(nt)
    how = np.full(nodes, None, dtype=object)
    # what a piece's pairs say, the strongest last: an occluding contour's order over a
    # contact (a grazing pixel's edge agrees with almost any step), a contact over a reading
    for flag, label in ((is_connected, CONNECTED), (is_contact, CONTACT), (bounded, BEHIND)):
        for i in np.flatnonzero(flag):
            for k in (int(links.a[i]), int(links.b[i])):
                how[k] = label
    for k in fixed:
        how[k] = None
    return t, how


def place_pieces(system: NormalSystem, z: np.ndarray, labels: np.ndarray, sizes: np.ndarray, view_cos,
                 min_pixels: int, tol: float, contact_edges: int, occlusion_cos: float | None,
                 touch_tol: float = np.inf, fixed: dict | None = None) -> tuple:
    """z with every piece of at least ``min_pixels`` (labels run largest first) shifted by
    :func:`solve_offsets` (``fixed``: its pinned pieces' offsets), and ([(label, pixels,
    shift)] of those that moved, {label: how} for those: the evidence that placed them).
    Smaller pieces are not unknowns here: their edges are not read.

    Examples
    --------
    A floor (rows 2-3) and a ramp above it (rows 0-1, one unit farther each row up) cut
    apart at the fold and left 7 units off; the fold's edges agree with both normals at one
    stretch of shifts, and the ramp is put back in its middle, within a unit of the truth
    (the fold's one-sided predictions, 0 and 1, differ by one):

    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.zeros((4, 6, 2)), -np.ones((4, 6, 1))])
    >>> n[:2, :, 1] = -1.0
    >>> n /= np.linalg.norm(n, axis=2, keepdims=True)
    >>> s = NormalSystem(n, np.ones((4, 6), bool), Camera(None, 1.0))
    >>> labels = np.repeat([1, 1, 0, 0], 6)
    >>> truth = np.repeat([2.0, 1.0, 0.0, 0.0], 6)
    >>> z, moved, how = place_pieces(s, truth + 7.0 * labels, labels, np.array([12, 12]), np.ones(24),
    ...                              6, 1.0, 3, 0.3, 0.05)
    >>> float(np.abs(z - truth).max()) < 1.0, how[1] == CONTACT
    (True, True)
    """
    nodes = int(np.searchsorted(-np.asarray(sizes), -min_pixels, side="right"))
    z = np.array(z, dtype=np.float64, copy=True)
    if nodes < 2:
        return z, [], {}
    cos = view_cos(system) if callable(view_cos) else view_cos
    links = piece_links(system, z, labels, nodes, cos, tol, occlusion_cos, touch_tol)
    if links.a.size == 0:
        return z, [], {}
    t, how = solve_offsets(links, nodes, contact_edges, fixed)
    # a piece the solve left where it was (within 1e-9) keeps its z and its reading
    shift = np.zeros(len(sizes))
    moving = np.flatnonzero(np.abs(t) > 1e-9)
    shift[moving] = t[moving]
    z += shift[labels]                      # one pass over the pixels, not one per piece
    moved = [(int(k), int(sizes[k]), float(t[k])) for k in moving]
    return z, moved, {k: how[k] for k, _, _ in moved if how[k] is not None}
