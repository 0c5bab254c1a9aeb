"""Fold or jump: where the normals on both sides of an edge turn towards grazing.

A steep fold that is not a jump (a chin, a book's spine) shows normals close to grazing on
*both* sides of the edge, and the surface is continuous across it; at an occlusion jump
the near side is grazing but the far side need not be. The rounds' edge-net prior can cut
such a fold and carry the piece behind it away (issue 31); :func:`fold_prior` takes the
prior off the edges this test calls a fold (BiNI's own weights decide there) and may add a
logit that keeps them joined.

Measured in the package as ``studies/trust-rounds/fold.py`` with ``RoundsConfig`` fields
``fold_cos``, ``fold_join``, ``fold_same_side`` read by ``pipeline.rounds_prior``; not
adopted (README.md), so moved here unchanged and built through
``integrate(rounds_bias=FoldPrior(...))``.
"""

from __future__ import annotations

import numpy as np

from fnin_cli.solvers.rounds import view_cosine  # noqa: F401  (the package keeps the test since round 4)
from fnin_cli.solvers.system import NormalSystem


def fold_edges(system: NormalSystem, cos_max: float, same_side: bool = False) -> tuple:
    """(horizontal, vertical) booleans over the system's edges (``hp``-``hq``, ``vp``-``vq``):
    True where both pixels' normals are within ``cos_max`` of grazing (:func:`view_cosine`)
    and, with ``same_side``, their components along the edge's axis have the same sign (the
    surface keeps falling the same way: a fold; two surfaces turning away from each other,
    a limb against a body, do not)."""
    c = view_cosine(system)
    out = []
    for p, q, n in ((system.hp, system.hq, system.nx), (system.vp, system.vq, system.ny)):
        f = np.maximum(c[p], c[q]) < cos_max
        out.append(f & (n[p] * n[q] > 0) if same_side else f)
    return tuple(out)


def touching(n: int, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Over n pixels: True at both ends of the edges p -> q."""
    t = np.zeros(n, bool)
    t[p] = True
    t[q] = True
    return t


def fold_pixels(system: NormalSystem, cos_max: float, same_side: bool = False) -> dict:
    """{"u": bool over pixels touching a horizontal fold edge, "v": ... vertical}."""
    h, v = fold_edges(system, cos_max, same_side)
    return {axis: touching(system.n, p[fold], q[fold])
            for axis, fold, p, q in (("u", h, system.hp, system.hq), ("v", v, system.vp, system.vq))}


def joined_belief(bias_axis: np.ndarray, p: np.ndarray, q: np.ndarray, prior_scale: float) -> np.ndarray:
    """Per edge p -> q on one axis, the edge net's belief that it is joined, max(w_q->p,
    w_p->q) from its probabilities sigmoid(bias / prior_scale) (w_q->p = sigmoid(bias[q]),
    w_p->q = 1 - sigmoid(bias[p]))."""
    prob = 0.5 * (1.0 + np.tanh(0.5 * np.asarray(bias_axis, np.float64) / prior_scale))
    return np.maximum(prob[q], 1.0 - prob[p])


def fold_prior(system: NormalSystem, bias: dict, cos_max: float, join: float = 0.0,
               same_side: bool = False, prior_scale: float | None = None) -> dict:
    """The rounds' per-axis logits (:func:`~fnin_cli.solvers.bini.bini_weights`' ``bias``)
    with the prior taken off every pixel that touches a fold edge on that axis, plus
    ``join`` pulling both ends of each fold edge towards it (``same_side``: see
    :func:`fold_edges`). ``prior_scale`` (the third rule): the join on each fold edge is
    scaled by the edge net's belief that the edge is joined, max(w_q->p, w_p->q) from its
    probabilities sigmoid(bias / prior_scale) (``RoundsConfig.edge_prior``): an edge the
    net confidently cuts is not pulled back; None: the full join everywhere.

    On an edge p -> q (q the next pixel on the axis) the weight of q towards p is
    sigmoid(... + bias[q]) and that of p towards q is 1 - sigmoid(... + bias[p]): joining
    adds ``join`` to bias[q] and subtracts it from bias[p] (inside a band of fold edges
    the two cancel: its pixels are left to BiNI's own weights).

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.full((1, 4), 0.99), np.zeros((1, 4)), np.full((1, 4), -0.1)])
    >>> n[0, 0] = (0.0, 0.0, -1.0)
    >>> s = NormalSystem(n, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> b = fold_prior(s, {"u": np.full(4, 3.0), "v": np.zeros(4)}, 0.2, join=1.0)
    >>> b["u"].tolist()
    [3.0, -1.0, 0.0, 1.0]
    """
    h, v = fold_edges(system, cos_max, same_side)
    out = {}
    for axis, fold, p, q in (("u", h, system.hp, system.hq), ("v", v, system.vp, system.vq)):
        b = np.where(touching(system.n, p[fold], q[fold]), 0.0, bias[axis])
        if join:
            pull = np.full(int(fold.sum()), float(join))
            if prior_scale is not None:
                pull = pull * joined_belief(bias[axis], p[fold], q[fold], prior_scale)
            b = b + np.bincount(q[fold], pull, system.n) - np.bincount(p[fold], pull, system.n)
        out[axis] = b
    return out


class FoldPrior:
    """``integrate(rounds_bias=...)``'s callable: :func:`fold_prior` with these settings
    (what ``RoundsConfig.fold_cos``, ``fold_join`` and ``fold_same_side`` were)."""

    def __init__(self, cos_max: float, join: float = 0.0, same_side: bool = False,
                 prior_scale: float | None = None):
        self.cos_max, self.join, self.same_side, self.prior_scale = cos_max, join, same_side, prior_scale

    def __call__(self, system: NormalSystem, bias: dict) -> dict:
        return fold_prior(system, bias, self.cos_max, self.join, self.same_side, self.prior_scale)

    def __repr__(self) -> str:
        return (f"FoldPrior(cos_max={self.cos_max}, join={self.join}, same_side={self.same_side}, "
                f"prior_scale={self.prior_scale})")
