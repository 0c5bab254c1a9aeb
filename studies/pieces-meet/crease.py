"""Candidate 3 'crease' (README.md): after the package's bridge placement, each loose piece
of Stage II's weights that meets the rest at a crease (no boundary edge with a pixel within
``fold_cos`` of grazing) is placed by least squares over its whole boundary: the most
connected reading, no jump on average."""

from __future__ import annotations

import numpy as np

from fnin_cli.config import DEFAULT
from fnin_cli.solvers.pieces import REPORT_MIN_PIXELS, _piece_edges, cut_pieces
from fnin_cli.solvers.rounds import view_cosine
from fnin_cli.solvers.system import NormalSystem


def place_creases(system: NormalSystem, z: np.ndarray, start: np.ndarray, weights: dict,
                  cos_min: float = DEFAULT.rounds.fold_cos, min_pixels: int = REPORT_MIN_PIXELS) -> tuple:
    """``start`` (the bridge-placed start) with each crease piece moved; ``z`` is the
    method's own result (a piece the bridges moved differs there and is left alone)."""
    labels, sizes, _ = cut_pieces(system, weights)
    c = view_cosine(system)
    out = np.array(start, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            continue
        members = labels == k
        if np.any(out[members] != z[members]):
            continue                                  # placed by a bridge
        edges = _piece_edges(system, labels, k)
        if any(np.any(np.minimum(c[p], c[q]) < cos_min) for p, q, *_ in edges):
            continue                                  # an occluding contour: not a crease
        num = den = 0.0
        for p, q, a, n, sign in edges:
            dz = out[q] - out[p]
            for aa, nn in ((a[p], n[p]), (a[q], n[q])):
                num -= float((sign * aa * (aa * dz + nn)).sum())
                den += float((aa * aa).sum())
        if den > 0:
            t = num / den
            out[members] += t
            moved.append((k, int(sizes[k]), t))
    return out, moved
