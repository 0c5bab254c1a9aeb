"""Hold the rounds' weights on fold edges at an early round's (issue 31, item 2; the fourth
fold-or-jump rule, FOLD_OR_JUMP.md).

On DiLiGenT the first round is right where the later rounds carry a piece away across a
steep fold (bear 0.100 mm after one round, 0.596 after eight): the rounds' reweighting
feeds on the fold's own steep residuals. Pulling fold edges joined (fold.py) fixes
DiLiGenT but joins the renders' real self-occlusions, which look the same in the normals.
This candidate keeps the *early decision* on a fold instead, join or step: on every pixel
touching a fold edge on an axis (:func:`fold.fold_edges`), that axis' BiNI weights are
held, round after round, at the weights of an early solution:

- ``at=0``: the weights the first round solved with (from the method's result and the
  edge prior: what gave bear 0.100 after one round);
- ``at=1``: the weights the first round's solution gives (those the second round uses).

Everywhere else the rounds run as today. A real step the early weights cut stays cut; a
fold they joined stays joined.

With ``prior_scale`` (the fifth rule) the hold is as strong as the edge net's belief that
the pixel's fold edge is joined, b = max over its fold edges on the axis of
max(w_q->p, w_p->q) from the net's probabilities sigmoid(bias / prior_scale) (fold.py's
joinC30 belief): the held logit is b logit(held) + (1 - b) (k x + bias), so a fold the
net confidently cuts (on renders, a real step) is left to the rounds.

Built through the package's hooks only: :meth:`FoldHold.bias` is
``integrate(rounds_bias=)`` (it keeps its own copy of the per-axis logits and the fold
pixels), :meth:`FoldHold.adjust` is ``integrate(rounds_adjust=)``: after each round's
solve it rewrites the copy's logits on the fold pixels to logit(held) - k x(z), so that
``bini_weights``' sigmoid(k x + bias) gives exactly the held weights there (``integrate``
calls ``rounds_bias`` first, then ``rounds_adjust``, then the rounds, which read the same
dict every round).
"""

from __future__ import annotations

import numpy as np

from fnin_cli.config import DEFAULT
from fnin_cli.solvers.bini import bini_weights
from fnin_cli.solvers.system import NormalSystem

from fold import fold_edges, fold_pixels, joined_belief  # noqa: F401  (fold_pixels: this module's API too)

_CLIP = 1e-9   # held weights are kept in [_CLIP, 1 - _CLIP] so that their logit is finite


def _logit(w: np.ndarray) -> np.ndarray:
    w = np.clip(w, _CLIP, 1.0 - _CLIP)
    return np.log(w / (1.0 - w))


def fold_belief(system: NormalSystem, bias: dict, cos_max: float, prior_scale: float,
                same_side: bool = False) -> dict:
    """Per axis, over pixels: the edge net's belief that the pixel's fold edge on that axis
    is joined, the largest over its fold edges of max(w_q->p, w_p->q), the net's
    probabilities being sigmoid(bias / prior_scale) (w_q->p: q's weight towards p,
    sigmoid(bias[q]); w_p->q = 1 - sigmoid(bias[p])); 0 off the fold edges."""
    h, v = fold_edges(system, cos_max, same_side)
    out = {}
    for axis, fold, p, q in (("u", h, system.hp, system.hq), ("v", v, system.vp, system.vq)):
        pf, qf = p[fold], q[fold]
        joined = joined_belief(bias[axis], pf, qf, prior_scale)
        b = np.zeros(system.n)
        np.maximum.at(b, pf, joined)
        np.maximum.at(b, qf, joined)
        out[axis] = b
    return out


class FoldHold:
    """A fold edge's weights held at an early round's (the module's docstring).

    Use as ``integrate(inp, rounds_bias=h.bias, rounds_adjust=h.adjust)``; the state is
    reset by every ``bias`` call (one per ``integrate`` with rounds), so one instance
    serves a sequence of runs.

    Parameters
    ----------
    cos_max : float
        The fold test's cosine to grazing (:func:`fold.fold_edges`).
    at : int
        0: the weights the first round solved with; 1: those of the first round's solution.
    k : float
        The rounds' BiNI k (``RoundsConfig.k``; the rounds that carry the edge prior).
    same_side : bool
        :func:`fold.fold_edges`' same-side test.
    prior_scale : float, optional
        The edge prior's scale (``RoundsConfig.edge_prior``): the hold is weighted by the
        net's belief that the fold is joined (the module's docstring); None: full hold.
    """

    def __init__(self, cos_max: float = 0.3, at: int = 0, k: float = DEFAULT.rounds.k, same_side: bool = False,
                 prior_scale: float | None = None):
        if at not in (0, 1):
            raise ValueError("at is 0 or 1")
        self.cos_max, self.at, self.k, self.same_side = cos_max, at, float(k), same_side
        self.prior_scale = prior_scale
        self.held_pixels = 0   # pixel-axes held in the last run (a record, not used)

    def bias(self, system: NormalSystem, bias: dict) -> dict:
        self._bias = {a: np.array(bias[a], np.float64, copy=True) for a in ("u", "v")}
        self._orig = {a: self._bias[a].copy() for a in ("u", "v")}
        self._pix = fold_pixels(system, self.cos_max, self.same_side)
        self._belief = None if self.prior_scale is None else fold_belief(system, bias, self.cos_max,
                                                                         self.prior_scale, self.same_side)
        self._held = None
        self.held_pixels = int(self._pix["u"].sum() + self._pix["v"].sum())
        return self._bias

    def _weights_minus(self, system: NormalSystem, z: np.ndarray) -> dict:
        w = bini_weights(system, z, self.k, bias=self._orig)
        return {"u": w["u-"], "v": w["v-"]}

    def adjust(self, z_start: np.ndarray, system: NormalSystem):
        if self.at == 0:
            w = self._weights_minus(system, np.asarray(z_start, np.float64))
            self._held = {a: w[a][self._pix[a]] for a in ("u", "v")}

        def adjust(it, z, weights):
            if self._held is None:   # at=1: the first round's solution sets them
                w = self._weights_minus(system, z)
                self._held = {a: w[a][self._pix[a]] for a in ("u", "v")}
            d = system.differences(z)
            for a in ("u", "v"):
                on = self._pix[a]
                x = d[a + "+"][on] ** 2 - d[a + "-"][on] ** 2
                held = _logit(self._held[a]) - self.k * x
                if self._belief is not None:
                    b = self._belief[a][on]
                    held = b * held + (1.0 - b) * self._orig[a][on]
                self._bias[a][on] = held
            return z

        return adjust

    def __repr__(self) -> str:
        return (f"FoldHold(cos_max={self.cos_max}, at={self.at}, k={self.k}, same_side={self.same_side}, "
                f"prior_scale={self.prior_scale})")
