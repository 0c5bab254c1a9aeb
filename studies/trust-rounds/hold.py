"""Hold each cut-loose piece's offset to the one-shot's (issue 31, item 2; a trust-rounds
candidate). After each round's solve, the pieces of the weights that solve used
(``solvers.pieces.cut_pieces``: edges whose two weights are both below 0.2 are cut) that
have at least ``min_pixels`` pixels and at least one cut edge (not a separate island of
the mask) are shifted back by ``strength`` times their drift: the mean of (z - z_start)
over the piece minus that over the main piece (in the unknown: an offset, or a scale for
perspective). A piece whose boundary is all cut (strength 1) keeps the offset the one-shot
gave it relative to the main piece; its inside still follows the rounds."""

from __future__ import annotations

import numpy as np

from fnin_cli.solvers.pieces import CUT_WEIGHT, cut_pieces


class PieceHold:
    """``integrate(rounds_adjust=PieceHold(...))``: a factory ``(z_start, system) -> adjust``."""

    def __init__(self, strength: float = 1.0, min_pixels: int = 50, threshold: float = CUT_WEIGHT):
        self.strength, self.min_pixels, self.threshold = strength, min_pixels, threshold
        self.moved = []

    def __call__(self, z_start, system):
        z0 = np.array(z_start, np.float64, copy=True)

        def adjust(it, z, weights):
            labels, sizes, cuts = cut_pieces(system, weights, self.threshold)
            held = np.flatnonzero((sizes >= self.min_pixels) & (cuts > 0) & (np.arange(len(sizes)) > 0))
            if not len(held):
                return z
            d = z - z0
            main = d[labels == 0].mean()
            z = z.copy()
            for k in held:
                on = labels == k
                z[on] -= self.strength * (d[on].mean() - main)
            self.moved.append((it, len(held)))
            return z

        return adjust

    def fresh(self) -> "PieceHold":
        return PieceHold(self.strength, self.min_pixels, self.threshold)

    def __repr__(self) -> str:
        return f"PieceHold(strength={self.strength}, min_pixels={self.min_pixels}, threshold={self.threshold})"
