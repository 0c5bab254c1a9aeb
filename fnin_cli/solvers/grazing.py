"""Grazing pixels that nothing but grazing normals places.

A normal within a few degrees of edge-on says nothing of the depth step across its pixel
(the step is tan of its angle to the ray: a 1-degree error moves it by 1/cos^2 times that).
After the rounds, a silhouette pixel tied to the rest only through such normals sits where
they put it: far from every neighbour. :func:`hold_grazing` holds it where its neighbours'
normals put it; the placement after the rounds (:class:`fnin_cli.solvers.steps.Placement`)
runs it on the default's rounds' result, after the pieces' places (studies/real-maps/README.md,
docs/decisions.md#hold-grazing).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..config import DEFAULT
from .pieces import weighted_medians
from .system import NormalSystem, view_cosine

_P = DEFAULT.pieces


def hold_grazing(system: NormalSystem, z: np.ndarray, weights: dict, cos_max: float,
                 threshold: float = _P.cut_weight, floor: float = _P.trust_floor) -> tuple:
    """(z, pixels held): the pixels whose normals graze (|cos(normal, ray)| < ``cos_max``)
    that nothing else places, held where their neighbours put them.

    Such a pixel is one that no 4-neighbour that does not graze trusts (a weight of at
    least ``threshold`` towards it), that lies outside the span of where its other
    4-neighbours put it (each at its z plus the step its own normal predicts, 0 for a
    grazing one) and whose 4-connected group of such pixels is a rim (each of them on the
    mask's outline: a broad steep surface seen edge-on has consistent grazing normals). It
    goes to the weighted median of where its neighbours put it (a neighbour that does not
    graze at its z plus its step, a grazing one at its z), each counting
    ``floor`` plus the edge's two weights: one of them, never the midpoint (a pixel on
    a jump joins the side it is tied to most). A chain is held from its ends inwards;
    pixels with no such neighbour stay.

    A grazing normal says nothing of the step across its pixel: the step is tan of its
    angle to the ray, and a 1-degree error in it moves the step by 1/cos^2 times that,
    more than the depth range around it (8-bit codes, a 1-degree tilt). Where only grazing
    normals (its own, or a grazing neighbour's) tie a pixel to the rest, the solve left it
    where they put it: single silhouette pixels and slivers far from every neighbour
    (studies/real-maps/README.md). A neighbour that does not graze and trusts the edge
    predicts the step from its own normal: that pixel keeps its place.

    Examples
    --------
    A plane of slope 0 on a 1x4 row whose last pixel grazes and sits 50 units off; its
    neighbour does not trust the edge:

    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.zeros((1, 4, 1)), np.zeros((1, 4, 1)), -np.ones((1, 4, 1))])
    >>> n[0, 3] = [0.0, -0.999, -0.04]
    >>> s = NormalSystem(n, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> w = {"u+": np.array([1.0, 1.0, 0.0, 1.0]), "u-": np.ones(4), "v+": np.ones(4), "v-": np.ones(4)}
    >>> z, held = hold_grazing(s, np.array([0.0, 0.0, 0.0, 50.0]), w, 0.1)
    >>> z.tolist(), held
    ([0.0, 0.0, 0.0, 0.0], 1)
    """
    rows, cols = np.nonzero(system.mask)
    grazing = view_cosine(system) < cos_max
    if not grazing.any():
        return z, 0
    todo = np.flatnonzero(grazing)
    idx = np.pad(system.index, 1, constant_values=-1)
    r, c = rows[todo] + 1, cols[todo] + 1
    # the 4-neighbours (-1 outside) and each one's weight towards the pixel: the one above
    # looks down (v+), the one below up (v-), the left one right (u+), the right one left (u-)
    nb = np.stack([idx[r - 1, c], idx[r + 1, c], idx[r, c - 1], idx[r, c + 1]], -1)
    safe = np.maximum(nb, 0)
    towards = np.stack([weights["v+"][safe[:, 0]], weights["v-"][safe[:, 1]],
                        weights["u+"][safe[:, 2]], weights["u-"][safe[:, 3]]], -1)
    vouched = ((nb >= 0) & ~grazing[safe] & (towards >= threshold)).any(axis=1)
    own = np.stack([weights["v-"][todo], weights["v+"][todo], weights["u-"][todo], weights["u+"][todo]], -1)
    trust = floor + np.maximum(towards + own, 0.0)
    # the step each neighbour's normal predicts from it to the pixel (the zero of its
    # one-sided residual, as _boundary_edges), 0 from a grazing one (held before it)
    with np.errstate(divide="ignore", invalid="ignore"):
        ny, av, nx, au = system.ny, system.a_v, system.nx, system.a_u
        step = np.stack([ny[safe[:, 0]] / -av[safe[:, 0]], ny[safe[:, 1]] / av[safe[:, 1]],
                         nx[safe[:, 2]] / -au[safe[:, 2]], nx[safe[:, 3]] / au[safe[:, 3]]], -1)
    step = np.where(grazing[safe] | ~np.isfinite(step), 0.0, step)
    # a pixel within the span of where its neighbours put it (each one that does not graze,
    # or is vouched for, at its z plus its step) agrees with one of them: it stays
    unsure = np.zeros(system.n, bool)
    unsure[todo[~vouched]] = True
    where = np.where((nb >= 0) & ~unsure[safe], z[safe] + step, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # all-NaN: no neighbour to say where (not inside)
        inside = (z[todo] >= np.nanmin(where, axis=1)) & (z[todo] <= np.nanmax(where, axis=1))
    keep = ~vouched & ~inside
    todo, nb, trust, step = todo[keep], nb[keep], trust[keep], step[keep]
    # only groups of them (4-connected) that are rims, every pixel on the mask's outline: a
    # broad steep surface seen edge-on is one of consistent grazing normals, not a sliver
    if len(todo):
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        pos = np.full(system.n, -1, np.int64)
        pos[todo] = np.arange(len(todo))
        link = (nb >= 0) & (pos[np.maximum(nb, 0)] >= 0)
        row, col = np.nonzero(link)
        g = csr_matrix((np.ones(len(row), np.int8), (row, pos[nb[row, col]])), shape=(len(todo), len(todo)))
        n_lab, lab = connected_components(g, directed=False)
        inner = np.zeros(n_lab, bool)
        inner[lab[~(nb < 0).any(axis=1)]] = True
        rim = ~inner[lab]
        todo, nb, trust, step = todo[rim], nb[rim], trust[rim], step[rim]
    if not len(todo):
        return z, 0
    z = np.array(z, np.float64, copy=True)
    reliable = np.ones(system.n, bool)
    reliable[todo] = False
    held = 0
    while len(todo):
        ok = (nb >= 0) & reliable[np.maximum(nb, 0)]
        ready = ok.any(axis=1)
        if not ready.any():
            break
        row, col = np.nonzero(ok & ready[:, None])
        done, value = weighted_medians(todo[row], z[nb[row, col]] + step[row, col], trust[row, col])
        z[done] = value
        reliable[done] = True
        held += len(done)
        todo, nb, trust, step = todo[~ready], nb[~ready], trust[~ready], step[~ready]
    return z, held
