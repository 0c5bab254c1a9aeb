"""Candidate 4 'behind' (README.md): after the package's start (bridges, creases), each loose
piece of Stage II's weights that no rule moved and that borders an occluding contour is moved
back, never forward, by the least amount that puts it behind its occluder along every
occluding edge."""

from __future__ import annotations

import numpy as np

from fnin_cli.config import DEFAULT
from fnin_cli.solvers.pieces import REPORT_MIN_PIXELS, cut_pieces
from fnin_cli.solvers.placement import _piece_edges
from fnin_cli.solvers.rounds import view_cosine
from fnin_cli.solvers.system import NormalSystem


def place_behind(system: NormalSystem, z: np.ndarray, start: np.ndarray, weights: dict,
                 cos_min: float = DEFAULT.rounds.crease_cos, min_pixels: int = REPORT_MIN_PIXELS,
                 mostly: bool = False) -> tuple:
    """``start`` (the package's rounds' start) with each occluded piece moved back; ``z`` is the
    method's own result (a piece that differs there was placed by a rule and is left alone).
    An occluding edge of a piece: its outside pixel's view cosine is below ``cos_min``, its
    own at least that. ``mostly`` (candidate 5): only a piece whose boundary edges are more
    than half occluding ones."""
    labels, sizes, _ = cut_pieces(system, weights)
    c = view_cosine(system)
    out = np.array(start, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            break
        members = labels == k
        if np.any(out[members] != z[members]):
            continue
        ahead, edges = [], 0
        for p, q, _, _, sign in _piece_edges(system, labels, k):
            edges += len(p)
            inside, other = np.where(sign > 0, q, p), np.where(sign > 0, p, q)
            occluding = (c[other] < cos_min) & (c[inside] >= cos_min)
            ahead.append((out[other] - out[inside])[occluding])
        ahead = np.concatenate(ahead)
        if mostly and 2 * ahead.size <= edges:
            continue
        if ahead.size and ahead.max() > 0:
            t = float(ahead.max())
            out[members] += t
            moved.append((k, int(sizes[k]), t))
    return out, moved


def place_behind_final(system: NormalSystem, z: np.ndarray, weights: dict,
                       cos_min: float = DEFAULT.rounds.crease_cos) -> tuple:
    """Candidate 6: candidate 5's move for the loose pieces of the final result, after the
    rounds, each piece as ``loose_pieces`` lists it (its own rim slivers not part of it): the
    package's ``place_behind_occluders`` (candidate 7) given the mutual-cut pieces."""
    from fnin_cli.solvers.placement import place_behind_occluders

    pieces = cut_pieces(system, weights, mutual=True)[:2]
    return place_behind_occluders(system, z, weights, view_cosine(system), cos_min, pieces=pieces)
