"""What the relative fuse does with the placement's pieces.

A relative or disparity prior is fused after the rounds and the placements before and
after them (:mod:`fnin_cli.priors`). A loose piece the placement put by the normals'
evidence (behind an occluding contour, or in contact) is held there where the prior's word
on it lies within its noise, or puts it in front of what hides it where the prior does not
resolve it so (:func:`hold_placed`); one behind its occluder that the prior puts farther
still, the way its contour allows, is left to the prior where the prior resolves it (its
blur, :mod:`fnin_cli.blur`, and the jump it sees across the contour); the edges that placed
either leave the fuse's normals term (:func:`without_edges_of`).
docs/decisions.md#robust-prior.
"""

from __future__ import annotations

import numpy as np

from .prior import OUTLIER_SIGMAS, RELATIVE_BLOCK
from .solvers.placement import BEHIND, CONTACT, occluding_edges
from .solvers.system import view_cosine


def hold_placed(term, z: np.ndarray, pieces, placed: dict,
                occlusion_cos: float | None = None, blur=None, ordered: bool = False,
                local: bool = False) -> tuple:
    """(held, freed): two lists of the loose pieces (``pieces.joined`` labels) that
    ``placed`` says the placement put by the normals' evidence (an occluding contour's
    order or a contact). Held: those on which the prior's word, its mean residual less the
    main piece's, lies within OUTLIER_SIGMAS of its sigma times max(1, sqrt(RELATIVE_BLOCK^2
    / the piece's prior pixels)) (one measurement per RELATIVE_BLOCK^2 pixels): ``term``'s
    target is shifted on each by that mean, so that the prior shapes the piece without
    moving it.

    With ``occlusion_cos``, a piece placed behind its occluder (BEHIND) whose word lies
    beyond that bound in the direction its occluding contours allow (:func:`contour_sides`)
    is freed: an occluding contour bounds a jump one way only and a blurred prior shrinks a
    jump, never widens it, so the prior places it (its target is not shifted). ``blur``
    (called once, where some piece is to be freed, with the pieces' label image, -1
    outside the mask): the prior's blur s in px
    (:func:`~fnin_cli.blur.blur_scale`); a piece is then freed only where the prior
    resolves it: its word read on its pixels farther than 2 s from every other piece's (a
    Gaussian mixes in under 3% of the other side there) passes the same test with one
    measurement per max(RELATIVE_BLOCK^2, 4 pi s^2) pixels (the blur's area); a piece with
    no such pixel is fused as the others.

    ``ordered``: a piece behind its occluder by its placement and by its contours (+1)
    whose word puts it nearer, against that order, is held as within its noise unless the
    prior resolves it nearer (a blur or a warp pulls a piece towards its occluder; a
    contour says it lies behind). ``local``: where the prior's resolving is read, the word
    is the jump it sees across the piece's contour: the mean on the piece's core less the
    main piece's, each on its pixels from 2 s to 4 s + 2 RELATIVE_BLOCK px from the other
    side, at one measurement per the blur's area on each side (a smooth warp, the same on
    both sides, is not a jump); where either side has no such pixel, the core's word.

    Examples
    --------
    Two pieces of a flat 4x4 map cut apart between columns 1 and 2, the right one placed
    behind its occluder; the prior puts it 0.5 sigma higher than the result does:

    >>> from dataclasses import replace
    >>> from fnin_cli.camera import Camera
    >>> from fnin_cli.config import DEFAULT
    >>> from fnin_cli.prior import DepthPrior
    >>> from fnin_cli.priors import RobustPrior
    >>> from fnin_cli.solvers.pieces import Pieces
    >>> from fnin_cli.solvers.placement import BEHIND
    >>> from fnin_cli.solvers.system import NormalSystem
    >>> flat = np.dstack([np.zeros((4, 4, 2)), -np.ones((4, 4, 1))])
    >>> s = NormalSystem(flat, np.ones((4, 4), bool), Camera(None, 1.0))
    >>> w = {d: np.ones(16) for d in ("u+", "u-", "v+", "v-")}
    >>> w["u+"][s.index[:, 1]] = 0.0; w["u-"][s.index[:, 2]] = 0.0
    >>> depth = np.zeros((4, 4)); depth[:, 2:] = 0.05
    >>> term = RobustPrior(DepthPrior(depth, np.ones((4, 4)), 0.1), s)
    >>> hold_placed(term, np.zeros(16), Pieces(s, w, replace(DEFAULT.pieces, min_pixels=4)), {1: BEHIND})
    ([1], [])
    >>> float(np.abs(term.target).max())
    0.0
    """
    labels, sizes = pieces.joined
    wanted = [k for k, how in placed.items() if how in (BEHIND, CONTACT) and k != 0
              and sizes[k] >= pieces.config.min_pixels]
    has = term.has
    lab = labels[has]
    on_main = lab == 0
    if not wanted or not on_main.any():
        return [], []
    r = (term.target[has] - z[has]) * term.inv_sigma           # in the prior's sigmas
    main = float(np.mean(r[on_main]))
    allowed = None if occlusion_cos is None else contour_sides(pieces.system, labels, occlusion_cos)
    resolve = {"blur": blur}          # the blur, measured on first use
    target = term.target.copy()
    held, freed = [], []
    for k in wanted:
        on = lab == k
        if not on.any():
            continue
        d = float(np.mean(r[on])) - main
        # against the contour's order, where the placement and the piece's contours agree that
        # it lies behind (it may only go farther): held unless the prior resolves it nearer
        against = (ordered and allowed is not None and placed[k] == BEHIND and allowed[k] > 0 and d < 0
                   and not (blur is not None and _resolved(pieces, labels, k, r, has, main, -1, resolve, local)))
        if against or abs(d) <= OUTLIER_SIGMAS * max(1.0, np.sqrt(RELATIVE_BLOCK ** 2 / on.sum())):
            target[has[on]] -= d / term.inv_sigma[on]
            held.append(int(k))
        elif (allowed is not None and placed[k] == BEHIND and allowed[k] != 0 and np.sign(d) == allowed[k]
              and (blur is None or _resolved(pieces, labels, k, r, has, main, allowed[k], resolve, local))):
            freed.append(int(k))
    term.target = target
    return held, freed


def _resolved(pieces, labels: np.ndarray, k: int, r: np.ndarray, has: np.ndarray, main: float, side: int,
              resolve: dict, local: bool = False) -> bool:
    """Whether piece ``k``'s word (``r``: residuals in sigmas on the prior pixels ``has``,
    less ``main``) on its core, its pixels farther than twice the prior's blur from every
    other piece's, lies beyond the noise bound at the blur's footprint on ``side``; with
    ``local``, the jump across its contour (:func:`hold_placed`)."""
    from scipy.ndimage import distance_transform_edt

    system = pieces.system
    if "image" not in resolve:        # once a fuse: the pieces' image, each pixel's place in r
        resolve["image"] = system.to_image(labels.astype(np.float64), fill=-1.0)
        resolve["at"] = np.full(system.n, -1, np.int64)
        resolve["at"][has] = np.arange(has.size)
    img = resolve["image"]
    if callable(resolve["blur"]):
        resolve["blur"] = float(resolve["blur"](img))
    s = resolve["blur"]
    # read on the piece's box widened by the bands' reach: its distances are the whole map's
    # wherever the tests below can tell them apart
    reach = 4.0 * s + 2.0 * RELATIVE_BLOCK
    rows, cols = np.nonzero(img == k)
    m = int(np.ceil(reach)) + 1
    box = (slice(max(rows.min() - m, 0), rows.max() + m + 1), slice(max(cols.min() - m, 0), cols.max() + m + 1))
    sub = img[box]
    at = np.where(sub >= 0, resolve["at"][np.maximum(system.index[box], 0)], -1)   # -1: no prior value
    others = (sub >= 0) & (sub != k)
    far = distance_transform_edt(~others) if others.any() else np.full(sub.shape, np.inf)
    core = (sub == k) & (far > 2.0 * s) & (at >= 0)
    if not core.any():
        return False
    d = float(np.mean(r[at[core]])) - main
    footprint = max(RELATIVE_BLOCK ** 2, 4.0 * np.pi * s * s)
    bound = OUTLIER_SIGMAS * max(1.0, np.sqrt(footprint / core.sum()))
    if local:
        # the jump the prior sees across the piece's contour: its word on the piece's core
        # against the main piece's, each read in a band just beyond twice the blur (two
        # measurement blocks wide), where a smooth warp is the same on both sides
        near = distance_transform_edt(sub != k)
        mine = core & (far <= reach)
        theirs = (sub == 0) & (near > 2.0 * s) & (near <= reach) & (at >= 0)
        if mine.any() and theirs.any():
            d = float(np.mean(r[at[mine]]) - np.mean(r[at[theirs]]))
            bound = OUTLIER_SIGMAS * max(1.0, np.sqrt(footprint * (1.0 / mine.sum() + 1.0 / theirs.sum())))
    return np.sign(d) == side and abs(d) > bound


def contour_sides(system, labels: np.ndarray, cos_max: float) -> np.ndarray:
    """Per label of ``labels``, the way an occluding contour lets its piece move: +1
    (farther: it is occluded, the grazing pixels of its cut edges lie outside it), -1
    (nearer: they lie inside, it occludes), 0 where neither has more edges (an edge counts
    where exactly one of its pixels is within ``cos_max`` of grazing)."""
    grazing = view_cosine(system) < cos_max
    n = int(labels.max()) + 1
    out, inside = np.zeros(n), np.zeros(n)
    for edge, p, q in zip(occluding_edges(system, cos_max), (system.hp, system.vp), (system.hq, system.vq)):
        lp, lq, gp = labels[p], labels[q], grazing[p]
        one = edge & (lp != lq)
        # the grazing pixel's piece has it inside; the other piece has it outside
        graze_lab = np.where(gp, lp, lq)[one]
        other_lab = np.where(gp, lq, lp)[one]
        inside += np.bincount(graze_lab, minlength=n)
        out += np.bincount(other_lab, minlength=n)
    return np.sign(out - inside).astype(int)


def without_edges_of(system, pieces, held: list) -> dict:
    """``pieces.weights`` with every edge between one of the ``held`` pieces
    (``pieces.joined`` labels) and another piece at weight 0: what placed a piece is not
    undone by the weak one-sided weights its cut left."""
    labels = pieces.joined[0]
    mine = np.isin(labels, np.asarray(held, dtype=labels.dtype))
    weights = {k: v.copy() for k, v in pieces.weights.items()}
    for axis, p, q in (("u", system.hp, system.hq), ("v", system.vp, system.vq)):
        across = (labels[p] != labels[q]) & (mine[p] | mine[q])
        weights[axis + "+"][p[across]] = 0.0
        weights[axis + "-"][q[across]] = 0.0
    return weights
