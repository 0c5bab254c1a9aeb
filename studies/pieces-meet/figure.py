"""Candidate 1 'figure' (README.md): bridge-placement's bridge shift, applied only to a
surrounded piece (no pixel on the mask's outline) that the shift puts in front of its
neighbours along the rest of its boundary."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bridge import bridge_shift  # noqa: E402

from fnin_cli.solvers.pieces import CUT_WEIGHT, REPORT_MIN_PIXELS, cut_pieces  # noqa: E402
from fnin_cli.solvers.system import NormalSystem  # noqa: E402


def outline(system: NormalSystem) -> np.ndarray:
    """(n,) bool: masked pixels with a 4-neighbour outside the mask or the image."""
    m = np.pad(system.mask, 1)
    inner = m[1:-1, 1:-1] & m[:-2, 1:-1] & m[2:, 1:-1] & m[1:-1, :-2] & m[1:-1, 2:]
    return ~inner[system.mask]


def sides(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = 1.0) -> tuple:
    """(in front, behind): piece k's boundary edges that do not agree with both normals
    (|a dz + n| <= tol on both rows) where the piece's side is nearer than both normals
    predict (in front), or farther than both (behind)."""
    front = behind = 0
    for p, q, a, n in ((system.hp, system.hq, system.a_u, system.nx), (system.vp, system.vq, system.a_v, system.ny)):
        in_p, in_q = labels[p] == k, labels[q] == k
        e = in_p ^ in_q
        pp, qq = p[e], q[e]
        dz = z[qq] - z[pp]
        agree = np.maximum(np.abs(a[pp] * dz + n[pp]), np.abs(a[qq] * dz + n[qq])) <= tol
        sign = np.where(in_q[e], 1.0, -1.0)            # sign * dz: the piece's side minus the other's
        with np.errstate(divide="ignore", invalid="ignore"):
            pa, pb = sign * (-n[pp] / a[pp]), sign * (-n[qq] / a[qq])
        d = sign * dz
        ok = ~agree & np.isfinite(pa) & np.isfinite(pb)
        front += int((ok & (d < np.minimum(pa, pb))).sum())
        behind += int((ok & (d > np.maximum(pa, pb))).sum())
    return front, behind


def agreeing(system: NormalSystem, z: np.ndarray, labels: np.ndarray, k: int, tol: float = 1.0) -> np.ndarray:
    """(edges,) bool over piece k's boundary edges (horizontal then vertical): both rows
    agree with the normals, |a dz + n| <= tol."""
    out = []
    for p, q, a, n in ((system.hp, system.hq, system.a_u, system.nx), (system.vp, system.vq, system.a_v, system.ny)):
        e = (labels[p] == k) ^ (labels[q] == k)
        pp, qq = p[e], q[e]
        dz = z[qq] - z[pp]
        out.append(np.maximum(np.abs(a[pp] * dz + n[pp]), np.abs(a[qq] * dz + n[qq])) <= tol)
    return np.concatenate(out)


def place_figures(system: NormalSystem, z: np.ndarray, weights: dict, min_edges: int = 3,
                  threshold: float = CUT_WEIGHT, min_pixels: int = REPORT_MIN_PIXELS, closing: bool = False) -> tuple:
    """z with each loose piece (cut all round, >= min_pixels) moved by its bridge shift where
    >= min_edges edges agree there and more than now, the piece touches no outline pixel, and
    after the shift it lies in front of its neighbours on more jump edges than behind.
    With ``closing`` (candidate 2) the agreeing edges counted are those that do not agree now.
    Returns (z, [(label, pixels, shift)] moved)."""
    labels, sizes, _ = cut_pieces(system, weights, threshold)
    edge = outline(system)
    z = np.array(z, dtype=np.float64, copy=True)
    moved = []
    for k in range(1, len(sizes)):
        if sizes[k] < min_pixels:
            continue
        members = labels == k
        if edge[members].any():
            continue
        shift, agree, now = bridge_shift(system, z, labels, k)
        trial = z.copy()
        trial[members] += shift
        if closing:
            # candidate 2: the edges the shift brings into agreement, not those already agreeing
            before, after = agreeing(system, z, labels, k), agreeing(system, trial, labels, k)
            agree, now = int((after & ~before).sum()), int(before.sum())
        if not (agree >= min_edges and agree > now):
            continue
        front, behind = sides(system, trial, labels, k)
        if front > behind:
            z = trial
            moved.append((k, int(sizes[k]), float(shift)))
    return z, moved
