"""Grazing pixels that nothing but grazing normals places.

A normal within a few degrees of edge-on says nothing of the depth step across its pixel
(the step is tan of its angle to the ray: a 1-degree error moves it by 1/cos^2 times that).
After the rounds, a silhouette pixel, or a line of them between two surfaces, tied to the
rest only through such normals sits where they put it: far from every neighbour, or in the
middle of a jump. :func:`place_grazing` places them together where their neighbours put
them; the placement after the rounds (:class:`fnin_cli.solvers.steps.Placement`) runs it
last, after the pieces' places and the slivers (studies/placement-solve/README.md,
candidate 29; docs/decisions.md#hold-grazing).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..config import DEFAULT
from .pieces import weighted_medians
from .system import NormalSystem, view_cosine

_P = DEFAULT.pieces


def place_grazing(system: NormalSystem, z: np.ndarray, weights: dict, cos_max: float,
                  threshold: float = _P.cut_weight, floor: float = _P.trust_floor) -> tuple:
    """(z, the pixels placed: (n,) bool): the grazing pixels (|cos(normal, ray)| <
    ``cos_max``) that nothing else places, placed together where their neighbours put them.

    A pixel that does not graze but whose every 4-neighbour in the mask does (a noisy normal
    on a rim) is tied to the rest only through grazing normals: it counts as grazing here
    (studies/placement-solve/README.md, candidate 31).

    Such a pixel is one that no 4-neighbour that does not graze trusts (a weight of at
    least ``threshold`` towards it), or that lies outside the span of where its neighbours
    put it (each that does not graze, or is trusted so, at its z plus the step its normal
    predicts, 0 for a grazing one): the solve left it elsewhere. Of those, the pixels
    beside one that does not graze or on the mask's outline (rims, lines between two
    surfaces, the edges of a band seen edge-on; a band's inside keeps its place) move: the
    L1 energy sum trust_pq |z_p - (z_q + s_qp)| over their 4-neighbour edges (s_qp the step
    q's normal predicts to p where q does not graze, else 0; trust ``floor`` plus the
    edge's two weights) is lowered by weighted-median coordinate descent, the pixels in two
    checkerboard colours, each in turn at the weighted median of where its neighbours put
    it, until none moves. A pixel takes one of those places, never the midpoint of two,
    and a line's pixels pull on each other: they join a side together rather than stay in
    the jump or leave one of them alone.

    Examples
    --------
    A plane of slope 0 on a 1x4 row whose last pixel grazes and sits 50 units off; its
    neighbour does not trust the edge:

    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.zeros((1, 4, 1)), np.zeros((1, 4, 1)), -np.ones((1, 4, 1))])
    >>> n[0, 3] = [0.0, -0.999, -0.04]
    >>> s = NormalSystem(n, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> w = {"u+": np.array([1.0, 1.0, 0.0, 1.0]), "u-": np.ones(4), "v+": np.ones(4), "v-": np.ones(4)}
    >>> z, placed = place_grazing(s, np.array([0.0, 0.0, 0.0, 50.0]), w, 0.1)
    >>> z.tolist(), placed.tolist()
    ([0.0, 0.0, 0.0, 0.0], [False, False, False, True])
    """
    rows, cols = np.nonzero(system.mask)
    grazing = view_cosine(system) < cos_max
    placed = np.zeros(system.n, bool)
    if not grazing.any():
        return z, placed
    grazing = grazing | _alone(system, grazing)
    todo = np.flatnonzero(grazing)
    idx = np.pad(system.index, 1, constant_values=-1)
    r, c = rows[todo] + 1, cols[todo] + 1
    # the 4-neighbours (-1 outside) and each one's weight towards the pixel: the one above
    # looks down (v+), the one below up (v-), the left one right (u+), the right one left (u-)
    nb = np.stack([idx[r - 1, c], idx[r + 1, c], idx[r, c - 1], idx[r, c + 1]], -1)
    safe = np.maximum(nb, 0)
    towards = np.stack([weights["v+"][safe[:, 0]], weights["v-"][safe[:, 1]],
                        weights["u+"][safe[:, 2]], weights["u-"][safe[:, 3]]], -1)
    firm = (nb >= 0) & ~grazing[safe]
    vouched = (firm & (towards >= threshold)).any(axis=1)
    own = np.stack([weights["v-"][todo], weights["v+"][todo], weights["u-"][todo], weights["u+"][todo]], -1)
    trust = floor + np.maximum(towards + own, 0.0)
    # the step each neighbour's normal predicts from it to the pixel (the zero of its
    # one-sided residual, as _boundary_edges), 0 from a grazing one
    with np.errstate(divide="ignore", invalid="ignore"):
        ny, av, nx, au = system.ny, system.a_v, system.nx, system.a_u
        step = np.stack([ny[safe[:, 0]] / -av[safe[:, 0]], ny[safe[:, 1]] / av[safe[:, 1]],
                         nx[safe[:, 2]] / -au[safe[:, 2]], nx[safe[:, 3]] / au[safe[:, 3]]], -1)
    step = np.where(grazing[safe] | ~np.isfinite(step), 0.0, step)
    # within the span of where its placed neighbours put it, a pixel agrees with one of them
    unsure = np.zeros(system.n, bool)
    unsure[todo[~vouched]] = True
    where = np.where((nb >= 0) & ~unsure[safe], z[safe] + step, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # all-NaN: no neighbour to say where (not inside)
        inside = (z[todo] >= np.nanmin(where, axis=1)) & (z[todo] <= np.nanmax(where, axis=1))
    move = (~vouched | ~inside) & (firm.any(axis=1) | (nb < 0).any(axis=1))
    todo, nb, trust, step = todo[move], nb[move], trust[move], step[move]
    if not len(todo):
        return z, placed
    z = np.array(z, np.float64, copy=True)
    colour = ((rows[todo] + cols[todo]) % 2).astype(bool)
    has = nb >= 0
    for _ in range(len(todo) + 1):       # each sweep lowers the energy; it stops when none moves
        moved = False
        for side in (False, True):       # a colour's 4-neighbours are of the other colour
            i, j = np.nonzero(has & (colour == side)[:, None])
            if not len(i):
                continue
            done, value = weighted_medians(todo[i], z[nb[i, j]] + step[i, j], trust[i, j])
            change = value != z[done]
            if change.any():
                z[done[change]] = value[change]
                moved = True
        if not moved:
            break
    placed[todo] = True
    return z, placed


def _alone(system: NormalSystem, grazing: np.ndarray) -> np.ndarray:
    """(n,) bool: the pixels that do not graze but whose every 4-neighbour in the mask does
    (at least one): tied to the rest only through grazing normals, as loose as those. On
    boolean images: no per-pixel neighbour indices over the whole map."""
    firm = np.zeros(system.mask.shape, bool)
    firm[system.mask] = ~grazing

    def beside(img: np.ndarray) -> np.ndarray:       # a 4-neighbour is set
        b = np.pad(img, 1)
        return b[:-2, 1:-1] | b[2:, 1:-1] | b[1:-1, :-2] | b[1:-1, 2:]

    return (firm & beside(system.mask) & ~beside(firm))[system.mask]
