"""bridge-placement's candidate, as measured inside the package at 71ab633
(the package's pieces module's ``bridge_shift`` and ``place_by_bridges`` then, applied by
``solvers.rounds.rounds_start`` when ``RoundsConfig.bridge_edges`` was set); not adopted
(README.md), so it lives here."""

from __future__ import annotations

import numpy as np

from fnin_cli.solvers.pieces import CUT_WEIGHT, REPORT_MIN_PIXELS, cut_pieces
from fnin_cli.solvers.system import NormalSystem


def bridge_shift(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = 1.0) -> tuple:
    """(shift, edges that agree after it, edges that agree now) for piece ``k``: the shift of
    the piece's unknown under which the most edges of its boundary agree with both pixels'
    normals (one-sided residuals |a dz + n| at most ``tol``). Where a jump closes (a
    piece meets the rest through a narrow continuous bridge), those edges agree at the true
    placement and nowhere else; along a jump each edge asks for a shift of its own.

    Examples
    --------
    A flat row whose right half sits 5 units off:

    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((2, 6, 2)), -np.ones((2, 6, 1))])
    >>> s = NormalSystem(flat, np.ones((2, 6), bool), Camera(None, 1.0))
    >>> labels = np.array([0, 0, 0, 1, 1, 1] * 2)
    >>> z = np.where(labels == 1, 5.0, 0.0)
    >>> shift, agree, now = bridge_shift(s, z, labels, 1)
    >>> round(shift, 6), agree, now
    (-5.0, 2, 0)
    """
    lo_all, hi_all = [], []
    for p, q, a, n in ((system.hp, system.hq, system.a_u, system.nx), (system.vp, system.vq, system.a_v, system.ny)):
        in_p, in_q = labels[p] == k, labels[q] == k
        edge = in_p ^ in_q
        if not edge.any():
            continue
        pp, qq = p[edge], q[edge]
        sign = np.where(in_p[edge], 1.0, -1.0)      # the piece at p: z_q - (z_p + s)
        dz = z[qq] - z[pp]
        bounds = []
        for aa, nn in ((a[pp], n[pp]), (a[qq], n[qq])):
            c = aa * sign                            # residual after the shift: r - c s
            r = aa * dz + nn
            with np.errstate(divide="ignore", invalid="ignore"):
                s1, s2 = (r - tol) / c, (r + tol) / c
            bounds.append((np.minimum(s1, s2), np.maximum(s1, s2)))
        lo, hi = np.maximum(bounds[0][0], bounds[1][0]), np.minimum(bounds[0][1], bounds[1][1])
        ok = np.isfinite(lo) & np.isfinite(hi) & (lo <= hi)
        lo_all.append(lo[ok])
        hi_all.append(hi[ok])
    lo = np.concatenate(lo_all) if lo_all else np.zeros(0)
    hi = np.concatenate(hi_all) if hi_all else np.zeros(0)
    if lo.size == 0:
        return 0.0, 0, 0
    # the shift inside the most intervals: a sweep over their ends (opening before closing)
    ends = np.concatenate([lo, hi])
    step = np.concatenate([np.ones(lo.size), -np.ones(hi.size)])
    order = np.lexsort((-step, ends))
    count = np.cumsum(step[order])
    best = int(np.argmax(count))
    # the middle of the best interval of shifts, not its edge
    nxt = ends[order][best + 1] if best + 1 < ends.size else ends[order][best]
    shift = 0.5 * (ends[order][best] + nxt)
    return float(shift), int(count[best]), int(((lo <= 0) & (hi >= 0)).sum())


def place_by_bridges(system: NormalSystem, z: np.ndarray, weights: dict, min_edges: int,
                     threshold: float = CUT_WEIGHT, min_pixels: int = REPORT_MIN_PIXELS) -> tuple:
    """z with every loose piece (cut all round, at least ``min_pixels``) moved by its
    :func:`bridge_shift` where at least ``min_edges`` boundary edges agree there and more
    than at its placement now; and the labels of the pieces moved."""
    labels, sizes, _ = cut_pieces(system, weights, threshold)
    z = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            continue
        shift, agree, now = bridge_shift(system, z, labels, k)
        if agree >= min_edges and agree > now:
            z[labels == k] += shift
            moved.append(k)
    return z, moved
