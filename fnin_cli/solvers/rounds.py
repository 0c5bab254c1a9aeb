"""The rounds after a method: their prior (the edge net's belief, with steep folds joined)."""

from __future__ import annotations

import numpy as np

from .system import NormalSystem


def view_cosine(system: NormalSystem) -> np.ndarray:
    """|cos| of the angle between each masked pixel's normal and its view ray (0: grazing).

    Orthographic: |n_z|; perspective: |n . r| / |r| with r = ((u - cx)/fx, (v - cy)/fy, 1).
    Unit normals assumed.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.full((2, 2), 0.6), np.zeros((2, 2)), np.full((2, 2), -0.8)])
    >>> view_cosine(NormalSystem(n, np.ones((2, 2), bool), Camera(None, 2.0))).round(3).tolist()
    [0.8, 0.8, 0.8, 0.8]
    """
    cam = system.camera
    if cam.K is None:
        return np.abs(system.a_u) * cam.pixel_size
    v, u = np.nonzero(system.mask)
    K = cam.K
    r2 = ((u - K[0, 2]) / K[0, 0]) ** 2 + ((v - K[1, 2]) / K[1, 1]) ** 2 + 1.0
    return np.abs(system.a_u) / K[0, 0] / np.sqrt(r2)


def fold_edges(system: NormalSystem, cos_max: float) -> tuple:
    """(horizontal, vertical) booleans over the system's edges (``hp``-``hq``, ``vp``-``vq``):
    True where both pixels' normals are within ``cos_max`` of grazing (:func:`view_cosine`)."""
    c = view_cosine(system)
    return tuple(np.maximum(c[p], c[q]) < cos_max for p, q in ((system.hp, system.hq), (system.vp, system.vq)))


def fold_prior(system: NormalSystem, bias: dict, cos_max: float, join: float = 0.0) -> dict:
    """The rounds' per-axis logits with the prior taken off every pixel that touches a
    fold edge on that axis, and ``join`` pulling both ends of each fold edge towards it.

    On an edge p -> q (q the next pixel on the axis) the weight of q towards p is
    sigmoid(... + bias[q]) and that of p towards q is 1 - sigmoid(... + bias[p]): joining
    adds ``join`` to bias[q] and subtracts it from bias[p]; inside a band of fold edges the
    two cancel and its pixels are left to BiNI's own weights (docs/decisions.md#fold-join).

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.full((1, 4), 0.99), np.zeros((1, 4)), np.full((1, 4), -0.1)])
    >>> n[0, 0] = (0.0, 0.0, -1.0)
    >>> s = NormalSystem(n, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> fold_prior(s, {"u": np.full(4, 3.0), "v": np.zeros(4)}, 0.2, join=1.0)["u"].tolist()
    [3.0, -1.0, 0.0, 1.0]
    """
    out = {}
    for axis, fold, p, q in zip("uv", fold_edges(system, cos_max), (system.hp, system.vp), (system.hq, system.vq)):
        touching = np.zeros(system.n, bool)
        touching[p[fold]] = True
        touching[q[fold]] = True
        b = np.where(touching, 0.0, bias[axis])
        if join:
            pull = np.full(int(fold.sum()), float(join))
            b = b + np.bincount(q[fold], pull, system.n) - np.bincount(p[fold], pull, system.n)
        out[axis] = b
    return out
