"""Candidate 3 'crease' (README.md), adopted: since then the package's
``fnin_cli.solvers.placement.place_at_creases``; this wrapper gives ``run.py`` the candidate's
call (the bridge-placed start in, the pieces the bridges moved skipped)."""

from __future__ import annotations

import numpy as np

from fnin_cli.config import DEFAULT
from fnin_cli.solvers.pieces import cut_pieces
from fnin_cli.solvers.placement import place_at_creases
from fnin_cli.solvers.rounds import view_cosine
from fnin_cli.solvers.system import NormalSystem


def place_creases(system: NormalSystem, z: np.ndarray, start: np.ndarray, weights: dict,
                  cos_min: float = DEFAULT.rounds.crease_cos) -> tuple:
    """``start`` (the bridge-placed start) with each crease piece moved; ``z`` is the
    method's own result (a piece the bridges moved differs there and is left alone)."""
    labels, sizes, _ = cut_pieces(system, weights)
    bridged = {int(k) for k in np.unique(labels[start != z])}
    return place_at_creases(system, start, weights, view_cosine, cos_min, skip=bridged, pieces=(labels, sizes))
