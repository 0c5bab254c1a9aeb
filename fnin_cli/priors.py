"""The kinds of depth prior as objects: each owns its term, its fit and what it does to the result.

A :class:`~fnin_cli.prior.DepthPrior` (read by :func:`~fnin_cli.prior.read_prior`) says what
the user's file holds; :func:`prior_kind` wraps it in the object that knows how such a prior
enters the integration, so that the pipeline never asks which kind it has:

- :class:`AbsolutePrior` (metric depth): a data term of every solve
  (:meth:`~fnin_cli.prior.DepthPrior.term`); the result is in its units (perspective) or
  at its offset (orthographic);
- :class:`RelativePrior` (known up to an affine map of depth): no term during the solves;
  after them it is fitted to the result's main piece (:func:`~fnin_cli.prior.fit_relative`)
  and fused in one more solve; the result stays relative.

Each has ``fuses`` (whether a solve follows the rounds), ``term(system)`` (its
:class:`~fnin_cli.solvers.objective.Term` for every solve, or None), ``fuse(run, z, pieces)``
(z after it, and the prior as fitted to the result), ``to_depth(zimg, camera, mask,
mean_depth, pin)`` and ``in_result(fitted, depth, zimg, inp)`` (the fitted prior in the
result's frame, for the disagreement report).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .config import DEFAULT, IntegrationConfig
from .blur import blur_scale
from .fuse_pieces import hold_placed, without_edges_of
from .prior import PRIOR_NORMAL_NOISE, RELATIVE_BLOCK, DepthPrior, fit_disparity, fit_relative
from .scale import fix_scale, from_prior
from .solvers.irls import InnerSolve, minimise
from .solvers.objective import FixedWeights, anchored
from .solvers.pieces import components
from .solvers.placement import occluding_edges
from .solvers.system import DataTerm, view_cosine


# ------------------------------------------------------------------ the robust term

def trust(u: np.ndarray, loss: str | None) -> np.ndarray:
    """The IRLS weight psi(u)/u of a residual ``u`` (in units of the loss's scale):
    ``cauchy`` 1/(1 + u^2), ``huber`` min(1, 1/|u|), ``tukey`` (1 - u^2)^2 inside |u| < 1 and
    0 beyond; None: 1 (a quadratic).

    Examples
    --------
    >>> trust(np.array([0.0, 1.0, 3.0]), "cauchy").tolist()
    [1.0, 0.5, 0.1]
    >>> trust(np.array([0.5, 2.0]), "huber").tolist(), trust(np.array([0.5, 2.0]), "tukey").tolist()
    ([1.0, 0.5], [0.5625, 0.0])
    """
    if loss is None:
        return np.ones_like(u)
    if loss == "cauchy":
        return 1.0 / (1.0 + u * u)
    if loss == "huber":
        return np.minimum(1.0, 1.0 / np.maximum(np.abs(u), 1e-300))
    if loss == "tukey":
        return np.where(np.abs(u) < 1.0, (1.0 - u * u) ** 2, 0.0)
    raise ValueError(f"unknown robust loss '{loss}'; use cauchy, huber, tukey or None")


class RobustPrior:
    """An absolute depth prior's data term that reweights itself from its residual.

    Each measurement of a prior map (a pixel of a full-size map, a block of a map at 1/k)
    has the weight of :meth:`~fnin_cli.prior.DepthPrior.term` times its trust: the robust
    loss's weight (:func:`trust`) of its residual r = mean over the measurement of
    (z - target) less the residuals' smooth field there (:func:`smooth_field`, over
    ``config.smooth_scale`` of the object's size, each residual weighted by its trust), in
    units of ``config.loss_scale`` sigma. The normals' own error is smooth over the object
    and the field takes it up (a right prior is trusted where it corrects it); a wrong
    place (a sensor's flying pixels, an outlier patch, a body model's hand) is a local step
    in the residuals that stands out of the field, and is let go: the normals carry the
    surface across it. Points (a CSV) do not overlap and each may be the only evidence that
    places its region: they keep their full weight.

    A sigma not given (``DepthPrior.sigma_given``) starts as the prior's default and is
    estimated once, at the first update, from that first solve (in which the prior was
    weak): noise is independent from one measurement to the next while the normals' error
    is smooth, so sigma is 1.4826 x the median |r_i - r_j| / sqrt(2) over neighbouring
    measurements i, j (:func:`neighbour_pairs`). A full-size absolute map has it before any
    solve, from its steps against the normals' (:func:`judge_steps`' spread,
    ``config.prior.judge_estimates``), and is then weighed as if it had been given.

    A full-size absolute map with its sigma given is judged before any solve
    (:func:`judge_steps`, ``config.prior.judge_steps``): at full weight the first solve would
    follow a wrong place pixel by pixel, and the rounds would cut along its edge. A piece
    too small for a field of its own (under ``min_pixels``: its deviation is 0, its trust 1
    by construction) keeps that verdict, judged again across the normals' cuts at each
    update (:func:`judge_again`, ``config.prior.judge_small``).

    ``at(None)``: the current weights (the prior's own before any update); ``at(z)``: update
    from z, then the weights. Where the normals are locally more precise than the prior
    (its sigma larger than their error over a pixel, as with every depth sensor), the first
    solve cannot follow a wrong place's edge and the residuals show it. ``trusted()``: the last trust of each prior pixel over the mask.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> from fnin_cli.solvers.system import NormalSystem
    >>> flat = np.dstack([np.zeros((12, 12, 2)), -np.ones((12, 12, 1))])
    >>> depth = np.ones((12, 12)); depth[2:4, 2:4] = 9.0          # a wrong patch
    >>> t = RobustPrior(DepthPrior(depth, np.ones((12, 12)), 0.1),
    ...                 NormalSystem(flat, np.ones((12, 12), bool), Camera(None, 1.0)))
    >>> ratio = (t.at(np.ones(144)).weight[t.has] / t.c0).reshape(12, 12)    # the trust
    >>> bool(ratio[2:4, 2:4].max() < 0.01), bool(ratio[6:, 6:].min() > 0.8)
    (True, True)
    """

    reweights = True
    reads_weights = True

    def __init__(self, prior: DepthPrior, system, config: IntegrationConfig = DEFAULT):
        mask = system.mask
        base = prior.term(mask, system.camera)
        self.system, self.cut = system, float(config.pieces.cut_weight)
        # the occluding contours, from the normals alone: computed once
        self.contour = None if config.rounds.occlusion_cos is None else occluding_edges(system, config.rounds.occlusion_cos)
        self.min_pixels = int(config.pieces.min_pixels)
        self.n = base.target.shape[0]
        self.has = np.flatnonzero(base.weight > 0)
        self.c0 = base.weight[self.has]
        self.target = base.target
        share = prior.share[mask][self.has].astype(np.float64)
        # 1 / sigma_z per prior pixel, in the unknown's units: c0 = share (noise / sigma_z)^2
        self.inv_sigma = np.sqrt(self.c0 / share) / PRIOR_NORMAL_NOISE
        self.measurement = _measurements(prior, mask, self.has)
        self.first = _first_of(self.measurement, self.has.size)   # one pixel per measurement
        self.pairs = neighbour_pairs(prior, mask, self.has, self.measurement) if not prior.sigma_given else None
        rows, cols = np.nonzero(mask)
        self.rc = (rows[self.has], cols[self.has])
        self.shape = mask.shape
        c = config.prior
        self.smooth = float(c.smooth_scale) * np.sqrt(float(mask.sum()))
        self.grid = None                  # smooth_field's grid of these pixels, made on first use
        # a map over-determines the surface (every pixel has a normal and a depth) and a wrong
        # place in it stands out of its neighbours; points do not overlap, and each one may be
        # the only evidence that places its region: they are all kept
        loss, k = (c.loss, c.loss_scale) if prior.sigma_given else (c.estimated_loss, c.estimated_scale)
        self.loss, self.k = (loss if prior.block != 0 else None), float(k)
        self.estimate = not prior.sigma_given
        self.floor = float(c.estimate_floor)
        self.scale = 1.0                  # sigma / the prior's stated (or start) sigma
        self.sigma = float(prior.sigma)   # the prior's sigma in its units, estimated where not given
        self.weights = np.ones(self.has.size)
        self.keep_small, self.graph = bool(c.judge_small), None
        cos = config.rounds.occlusion_cos
        estimating = self.estimate
        if (c.judge_steps and prior.kind == "absolute" and prior.block == 1 and cos is not None
                and (c.judge_estimates if estimating else self.loss is not None)):
            # judged at Tukey's scale; a sigma not given is the steps' own spread, and the map is
            # then weighed as if it had been given (the first solve at that sigma); with no two
            # neighbours both facing the camera it is estimated after the first solve, as before
            graph = {}
            weights = judge_steps(system, self.has, self.target, self.inv_sigma, cos, c.loss_scale, graph,
                                  floor=0.0 if estimating else 1.0, smooth_open=c.judge_open)
            if not estimating or graph["spread"] is not None:
                self.graph, self.weights = graph, weights
                if estimating:
                    self.scale = max(graph["spread"], self.floor)
                    self.sigma *= self.scale
                    self.estimate, self.pairs = False, None
                    self.loss, self.k = c.loss, float(c.loss_scale)

    def at(self, z: np.ndarray | None, weights: dict | None = None) -> DataTerm:
        if z is not None:
            self.update(z, weights)
        w = np.zeros(self.n)
        w[self.has] = self.c0 * self.weights / self.scale ** 2
        return DataTerm(w, self.target)

    def residual(self, z: np.ndarray) -> np.ndarray:
        """Each prior pixel's measurement residual in units of the stated sigma."""
        r = (z[self.has] - self.target[self.has]) * self.inv_sigma
        if self.measurement is None:
            return r
        counts = np.bincount(self.measurement)
        means = np.bincount(self.measurement, r) / np.maximum(counts, 1)
        return means[self.measurement]

    def update(self, z: np.ndarray, weights: dict | None = None) -> None:
        """The trust (and, once, the sigma) from z; ``weights``: the normals term's at z, whose
        pieces (:func:`~fnin_cli.solvers.pieces.cut_pieces`) each get a smooth field of their
        own: a step in the residuals where the normals are cut is the normals' ignorance
        (the prior places the piece), not the prior's error."""
        r = self.residual(z)
        first = self.first
        if self.estimate:
            self.estimate = False
            i, j = self.pairs
            s = 1.4826 * float(np.median(np.abs(r[i] - r[j]))) / np.sqrt(2.0) if i.size else 1.0
            self.scale = max(s, self.floor)
            self.sigma *= self.scale
            self.pairs = None
        if self.loss is not None:
            if self.grid is None:
                self.grid = FieldGrid(self.rc, self.shape, self.smooth)
            raw, piece = self._pieces(weights)
            dev = r - smooth_field(r, self.weights, self.rc, self.shape, self.smooth, piece, self.grid)
            # the spread of the deviations: the prior's sigma, or wider where the normals'
            # error is rough between sparse measurements
            spread = 1.4826 * float(np.median(np.abs(dev[first]))) if first.size else 0.0
            self.weights = trust(dev / (self.k * max(self.scale, spread)), self.loss)
            if self.graph is not None and piece is not None and self.keep_small:
                # a piece too small for a field of its own trusts by construction (dev 0): no
                # evidence against the judge's verdict, judged again across the normals' cuts
                verdict = judge_again(self.graph, raw)
                self.weights = np.where((piece < 0) & (verdict == 0), 0.0, self.weights)

    def _pieces(self, weights: dict | None) -> tuple:
        """(each prior pixel's piece under ``weights`` (mutual cuts), cut also along every
        occluding contour (:func:`occluding_edges`); the same with the pieces under
        ``min_pixels`` each their own, -1); (None, None) without weights."""
        if weights is None:
            return None, None
        # the components alone: the fields need the grouping, not cut_pieces' order by size
        every = components(self.system, weights, self.cut, True, drop=self.contour)[0]
        raw = every[self.has]
        return raw, np.where(np.bincount(every)[raw] >= self.min_pixels, raw, -1)

    def energy(self, z: np.ndarray) -> float:
        """The term's weighted squared residual at z with its current weights."""
        d = z[self.has] - self.target[self.has]
        return float(np.sum(self.c0 * self.weights / self.scale ** 2 * d * d))

    def rejected(self) -> float:
        """The share of the prior's measurements whose trust is below one half."""
        first = self.first
        return float(np.mean(self.weights[first] < 0.5)) if first.size else 0.0

    def trusted(self, mask: np.ndarray) -> np.ndarray:
        """(H, W) float32: each prior pixel's trust in [0, 1], NaN where the prior has none."""
        img = np.full(mask.shape, np.nan, np.float32)
        vals = np.full(self.n, np.nan, np.float32)
        vals[self.has] = self.weights
        img[mask] = vals
        return img


def judge_steps(system, has: np.ndarray, target: np.ndarray, inv_sigma: np.ndarray, cos_min: float,
                k: float, graph: dict | None = None, floor: float = 1.0, smooth_open: bool = True) -> np.ndarray:
    """A full-size prior map's trust (1 or 0 per prior pixel ``has``) before any solve, from
    its own steps where the normals say the surface runs on.

    Each edge between two prior pixels that both face the camera (view cosine at least
    ``cos_min``) has a residual e: the prior's step (``target``, the unknown's units) less
    the normals' (the mean of the two pixels' -n / a), in units of the edge's noise
    (sqrt 2 sigma, ``inv_sigma`` = 1/sigma per prior pixel), or of the edges' own robust
    spread where that is wider (normals less precise than the prior). An edge within ``k``
    links its pixels, one beyond is a conflict; an open edge (a grazing pixel on it: the
    normals say nothing of its step) links where the prior's own step is within ``k``
    (``smooth_open``), and a grazing pixel links to its neighbour with the least prior step
    in any case (it belongs to the surface it grazes). Two linked components whose
    shared conflict edges outnumber their shared open ones (a grazing pixel on either side)
    cannot both be right; the least pixels that leave no such pair both kept are let go (0),
    the rest kept (1): a wrong place of the map (an outlier patch, a flying pixel) steps away
    from the surface all round while the normals run on, and is let go before the first
    solve can follow it; two objects meeting along an occluding contour are both kept.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> from fnin_cli.solvers.system import NormalSystem
    >>> flat = np.dstack([np.zeros((12, 12, 2)), -np.ones((12, 12, 1))])
    >>> depth = np.ones((12, 12)); depth[2:4, 2:4] = 9.0          # a wrong patch
    >>> s = NormalSystem(flat, np.ones((12, 12), bool), Camera(None, 1.0))
    >>> t = judge_steps(s, np.arange(144), depth.ravel(), np.full(144, 10.0), 0.3, 4.685)
    >>> t.reshape(12, 12)[2:4, 2:4].tolist(), float(t.sum())
    ([[0.0, 0.0], [0.0, 0.0]], 140.0)

    ``graph``: a dict that receives the components and the edges between them, for
    :func:`judge_again`, and the edges' robust spread (``spread``, in units of
    ``inv_sigma``'s sigma). ``floor``: the least spread the threshold assumes (1: the stated
    sigma; 0: the edges' own, for a sigma to be estimated).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = has.size
    at = np.full(system.n, -1, np.int32 if system.n < 2 ** 31 else np.int64)
    at[has] = np.arange(n)
    facing = view_cosine(system) >= cos_min
    i, j, u, both = [], [], [], []
    for p, q, a, m in ((system.hp, system.hq, system.a_u, system.nx), (system.vp, system.vq, system.a_v, system.ny)):
        ok = (at[p] >= 0) & (at[q] >= 0)
        p, q = p[ok], q[ok]
        f = facing[p] & facing[q]
        with np.errstate(divide="ignore", invalid="ignore"):
            normals_step = np.where(f, -0.5 * (m[p] / a[p] + m[q] / a[q]), 0.0)
        sig = 0.5 * (inv_sigma[at[p]] + inv_sigma[at[q]]) / np.sqrt(2.0)
        i.append(at[p]); j.append(at[q]); both.append(f)
        u.append((np.abs(target[q] - target[p] - normals_step) * sig).astype(np.float32))
    i, j, u, both = (np.concatenate(x) for x in (i, j, u, both))
    if not both.any():
        if graph is not None:
            graph.update(comp=np.arange(n), i=i[:0], j=j[:0], conflict=both[:0], spread=None)
        return np.ones(n)
    spread = 1.4826 * float(np.median(u[both]))
    # within the threshold: a facing edge links, an open one too where smooth_open
    link = (u <= k * max(floor, spread)) & (both | smooth_open)
    grazing = np.ones(n, bool)
    grazing[i[both]] = False
    grazing[j[both]] = False
    # each grazing pixel's edge of least prior step (u without the normals' step off facing
    # pairs): over the edges that touch one, ordered by pixel then step, each pixel's first
    touch = np.flatnonzero(grazing[i] | grazing[j])
    mine = np.concatenate([i[touch], j[touch]])
    other = np.concatenate([j[touch], i[touch]])
    step = np.concatenate([u[touch], u[touch]])
    keep = grazing[mine]
    mine, other, step = mine[keep], other[keep], step[keep]
    order = np.lexsort((step, mine))
    first = order[np.flatnonzero(np.r_[True, mine[order][1:] != mine[order][:-1]])] if order.size else order
    ends_i = np.concatenate([i[link], mine[first]])
    ends_j = np.concatenate([j[link], other[first]])
    comp = connected_components(coo_matrix((np.ones(ends_i.size, np.int8), (ends_i, ends_j)), shape=(n, n)),
                                directed=False)[1]
    apart = comp[i] != comp[j]
    if graph is not None:
        graph.update(comp=comp, i=i[apart], j=j[apart], conflict=both[apart], spread=spread)
    return _verdict(comp, i[apart], j[apart], both[apart])


def judge_again(graph: dict, piece: np.ndarray) -> np.ndarray:
    """:func:`judge_steps`' verdict again, its conflict edges read as open where they cross
    from one of the normals' pieces (``piece`` per prior pixel, as the rounds' weights cut
    them) to another: there the normals no longer say the surface runs on."""
    i, j = graph["i"], graph["j"]
    return _verdict(graph["comp"], i, j, graph["conflict"] & (piece[i] == piece[j]), graph.setdefault("memo", {}))


def _verdict(comp: np.ndarray, i: np.ndarray, j: np.ndarray, conflict: np.ndarray, memo: dict | None = None) -> np.ndarray:
    """1 per prior pixel kept, 0 let go: over the edges (i, j) between components ``comp``,
    each pair whose conflict edges outnumber its open ones holds one let go, the least pixels;
    ``memo``: a dict that keeps the last pairs and verdict (the rounds' cuts seldom change them)."""
    if i.size == 0:
        return np.ones(comp.size)
    ci, cj = comp[i], comp[j]
    vote = np.where(conflict, 1, -1)             # conflict +1, open -1 (an edge with a grazing pixel)
    pairs, inverse = np.unique(np.stack([np.minimum(ci, cj), np.maximum(ci, cj)], 1), axis=0, return_inverse=True)
    pairs = pairs[np.bincount(inverse.ravel(), vote) > 0]
    if pairs.size == 0:
        return np.ones(comp.size)
    key = pairs.tobytes()
    if memo is not None and memo.get("key") == key:      # the same pairs as last time: the same verdict
        return memo["verdict"]
    verdict = 1.0 - _least_cover(pairs, np.bincount(comp))[comp]
    if memo is not None:
        memo.update(key=key, verdict=verdict)
    return verdict


def _least_cover(pairs: np.ndarray, size: np.ndarray) -> np.ndarray:
    """0/1 per component: the set of least total ``size`` that holds at least one of each
    pair (a minimum-weight vertex cover, exact by mixed-integer programming)."""
    from scipy.optimize import LinearConstraint, milp
    from scipy.sparse import coo_matrix

    nodes, local = np.unique(pairs, return_inverse=True)
    local = local.reshape(pairs.shape)
    m = pairs.shape[0]
    a = coo_matrix((np.ones(2 * m), (np.repeat(np.arange(m), 2), local.ravel())), shape=(m, nodes.size))
    res = milp(size[nodes].astype(np.float64), constraints=LinearConstraint(a, lb=1.0),
               integrality=np.ones(nodes.size), bounds=(0, 1))
    out = np.zeros(size.size)
    x = res.x if res.x is not None else np.zeros(nodes.size)   # no answer: keep them all, as without the judge
    out[nodes] = np.round(x)
    return out


def _measurements(prior: DepthPrior, mask: np.ndarray, has: np.ndarray):
    """The measurement of each prior pixel (``has``, over the masked pixels) for a prior at
    1/k of the map (its block), None where each pixel is its own (full size, points)."""
    if prior.block <= 1:
        return None
    rows, cols = np.nonzero(mask)
    k = int(prior.block)
    key = (rows[has] // k) * (mask.shape[1] // k + 2) + cols[has] // k
    return np.unique(key, return_inverse=True)[1]


def smooth_field(r: np.ndarray, weight: np.ndarray, rc: tuple, shape: tuple, scale: float,
                 piece: np.ndarray | None = None, grid: "FieldGrid | None" = None) -> np.ndarray:
    """The smooth field of residuals ``r`` (at pixels ``rc``, each weighted by ``weight``)
    at those pixels: a normalised Gaussian of standard deviation ``scale`` pixels within
    each ``piece`` (None: one piece; -1: a pixel that is its own field), computed on a grid
    of cells of a quarter of ``scale`` (bilinear back to the pixels), every piece's grid in one
    filter, so its cost does not grow with the map's size nor much with the pieces. ``grid``:
    :class:`FieldGrid` of ``rc``, ``shape`` and ``scale``, where the caller keeps one.

    Examples
    --------
    A constant field is itself; one outlier among many barely moves it:

    >>> rc = (np.repeat(np.arange(20), 20), np.tile(np.arange(20), 20))
    >>> r = np.full(400, 2.0); r[0] = 50.0
    >>> f = smooth_field(r, np.ones(400), rc, (20, 20), 8.0)
    >>> bool(np.all(np.abs(f[1:] - 2.0) < 0.5)), bool(f[0] < 10.0)
    (True, True)

    Two pieces, offset from each other, keep their own levels:

    >>> piece = (rc[1] >= 10).astype(int)
    >>> f = smooth_field(np.where(piece == 1, 9.0, 0.0), np.ones(400), rc, (20, 20), 8.0, piece)
    >>> bool(np.allclose(f, np.where(piece == 1, 9.0, 0.0)))
    True
    """
    from scipy.ndimage import gaussian_filter   # here: `fnin --help` need not load scipy

    grid = FieldGrid(rc, shape, scale) if grid is None else grid
    if piece is None:
        group = np.zeros(r.size, np.int64)
    else:                                          # the pieces present, numbered from 0 in order; -1 stays
        present = np.zeros(int(piece.max()) + 2, bool)
        present[piece[piece >= 0]] = True
        group = np.where(piece >= 0, np.cumsum(present)[np.maximum(piece, 0)] - 1, -1)
    on = group >= 0
    if not on.any():
        return r.astype(np.float64, copy=True)     # every pixel its own field
    n_groups = int(group.max()) + 1
    gh, gw = grid.gh, grid.gw
    # every pixel through the same arithmetic, a stray one in group 0 with no weight (adding
    # 0.0 changes no sum), then put back: no masked copy of the grid's arrays per call
    every = bool(on.all())
    base = (group if every else np.maximum(group, 0)) * (gh * gw)
    at = base + grid.cell_at
    size = n_groups * gh * gw
    w = weight if every else np.where(on, weight, 0.0)
    num = np.bincount(at, w * r if every else np.where(on, weight * r, 0.0), size).reshape(n_groups, gh, gw)
    den = np.bincount(at, w, size).reshape(n_groups, gh, gw)
    s = (0.0, scale / grid.cell, scale / grid.cell)      # every piece's grid at once, none into another
    num, den = gaussian_filter(num, s, mode="constant"), gaussian_filter(den, s, mode="constant")
    field = np.divide(num, den, out=np.zeros_like(num), where=den > 1e-12 * max(float(den.max()), 1e-300))
    flat = field.reshape(-1)
    fy, fx = grid.fy, grid.fx
    i00, i01, i10, i11 = grid.corners
    smooth = ((1 - fy) * ((1 - fx) * flat[base + i00] + fx * flat[base + i01])
              + fy * ((1 - fx) * flat[base + i10] + fx * flat[base + i11]))
    return smooth if every else np.where(on, smooth, r.astype(np.float64))   # a stray pixel: its own field


class FieldGrid:
    """Where each pixel ``rc`` falls on :func:`smooth_field`'s grid of cells (a quarter of
    ``scale``), its bilinear corners and fractions (cell centres; beyond the outer centres,
    the nearest): computed once for a term whose pixels stay."""

    def __init__(self, rc: tuple, shape: tuple, scale: float):
        self.cell = cell = max(1, int(scale // 4))
        self.gh, self.gw = gh, gw = shape[0] // cell + 1, shape[1] // cell + 1
        rr, cc = rc
        self.cell_at = (rr // cell) * gw + cc // cell
        y = np.clip((rr + 0.5) / cell - 0.5, 0.0, gh - 1.0)
        x = np.clip((cc + 0.5) / cell - 0.5, 0.0, gw - 1.0)
        y0 = np.minimum(y.astype(np.int64), gh - 2 if gh > 1 else 0)
        x0 = np.minimum(x.astype(np.int64), gw - 2 if gw > 1 else 0)
        fy, fx = y - y0, x - x0
        y1, x1 = np.minimum(y0 + 1, gh - 1), np.minimum(x0 + 1, gw - 1)
        self.corners = (y0 * gw + x0, y0 * gw + x1, y1 * gw + x0, y1 * gw + x1)
        self.fy, self.fx = fy, fx


def neighbour_pairs(prior: DepthPrior, mask: np.ndarray, has: np.ndarray, measurement) -> tuple:
    """(i, j): pairs of neighbouring measurements as indices into the prior's pixels ``has``
    (one pixel standing for each measurement): for a full-size map the pixels' right and
    lower neighbours that have a value, else each measurement (a block's centre, a point)
    and its nearest other one."""
    rows, cols = np.nonzero(mask)
    r, c = rows[has], cols[has]
    if measurement is None and prior.block == 1:
        at = np.full(mask.shape, -1, np.int64)
        at[r, c] = np.arange(has.size)
        pairs = [(at[:, :-1], at[:, 1:]), (at[:-1, :], at[1:, :])]
        i = np.concatenate([a[(a >= 0) & (b >= 0)] for a, b in pairs])
        j = np.concatenate([b[(a >= 0) & (b >= 0)] for a, b in pairs])
        return i, j
    first = _first_of(measurement, has.size)
    if first.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if measurement is None:
        centres = np.stack([r, c], 1).astype(float)
    else:
        count = np.bincount(measurement)
        centres = np.stack([np.bincount(measurement, r) / count, np.bincount(measurement, c) / count], 1)
    from scipy.spatial import cKDTree   # here, not at import: `fnin --help` need not load scipy

    _, nearest = cKDTree(centres).query(centres, k=2)
    return first, first[nearest[:, 1]]


def _first_of(measurement, size: int) -> np.ndarray:
    """One index per measurement (all of them where each pixel is its own)."""
    if measurement is None:
        return np.arange(size)
    return np.unique(measurement, return_index=True)[1]


# ------------------------------------------------------------------ the kinds


class _Kind:
    """What every kind shares: its prior, the run's configuration, its robust term once made."""

    def __init__(self, prior: DepthPrior, config: IntegrationConfig = DEFAULT):
        self.prior, self.config = prior, config
        self.robust = None

    def report(self, mask: np.ndarray) -> tuple:
        """({"rejected", "sigma_estimated"} for ``--json``, warnings, the (H, W) trust image)."""
        t = self.robust
        out = {"rejected": t.rejected(), "sigma_estimated": not self.prior.sigma_given or self.prior.kind != "absolute"}
        notes = []
        if out["rejected"] > self.config.prior.rejected_warn:
            notes.append(f"the depth prior disagrees with the normals on {out['rejected']:.0%} of its measurements; "
                         "they were not trusted (--prior-weights FILE writes where it was)")
        return out, notes, t.trusted(mask)


class AbsolutePrior(_Kind):
    """Metric depth: a robust data term of every solve (:class:`RobustPrior`), and the
    result's scale or offset."""

    fuses = False       # no solve after the rounds

    def term(self, system):
        self.robust = RobustPrior(self.prior, system, self.config)
        return self.robust

    def fuse(self, run, z: np.ndarray, pieces, placed: dict | None = None) -> tuple:
        """z as it is, the prior with the sigma the run used (estimated where not given), and
        no piece held (the placement does not run under an absolute prior)."""
        return z, replace(self.prior, sigma=self.robust.sigma), []

    def to_depth(self, zimg: np.ndarray, camera, mask: np.ndarray, mean_depth=None, pin=None) -> tuple:
        """(depth, note): in the prior's units, unless a pin fixes the scale or offset."""
        if pin is None:
            return from_prior(zimg, camera, mask)
        return fix_scale(zimg, camera, mask, mean_depth, pin)

    def in_result(self, fitted: DepthPrior, depth, zimg, inp) -> tuple:
        return fitted, ""


class RelativePrior(_Kind):
    """Depth known up to an affine map: fitted robustly to the result and fused after the
    rounds, its term robust too (:class:`RobustPrior`): a monocular network's blur at an
    edge or warp in a corner is let go, and it places what the normals cannot."""

    fuses = True        # solves after the rounds, with their AMG hierarchy
    what = "relative depth prior fitted (affine in depth) and fused"

    def term(self, system):
        return None

    def fit(self, depth: np.ndarray, main: np.ndarray, perspective: bool) -> DepthPrior:
        """The prior as depth on the result's scale (:func:`~fnin_cli.prior.fit_relative`)."""
        return fit_relative(self.prior, depth, main, perspective)[0]

    def fuse(self, run, z: np.ndarray, pieces, placed: dict | None = None) -> tuple:
        """(z, fitted prior, the pieces held where ``placed`` put them (:func:`hold_placed`)):
        the prior fitted to the result z on the result's main piece
        (mutual cuts: whose shape and placement the normals fix, :meth:`fit`), each pixel counting 1/RELATIVE_BLOCK^2 of a
        measurement (a network's neighbouring values are not independent), then minimised
        with the result's weights (fixed), the anchor lam towards z and the fitted prior's
        robust term, at most ``PriorConfig.iterations`` times from z, on the CPU with the
        rounds' AMG hierarchy where there is one."""
        system, camera = run.system, run.system.camera
        zimg = system.to_image(z)
        # the main piece under mutual cuts: a piece held only by one side's extrapolated
        # normals is not placed by them, and would skew the fit
        main = system.to_image((pieces.mutual[0] == 0).astype(float), fill=0.0) > 0
        fitted = self.fit(np.exp(zimg) if camera.perspective else zimg, main, camera.perspective)
        fitted = replace(fitted, share=fitted.share / RELATIVE_BLOCK ** 2, block=1)
        self.robust = RobustPrior(fitted, system, self.config)
        weights = pieces.weights
        c = self.config

        def blur(groups: np.ndarray) -> float:   # the prior's blur, on the pieces' image: measured
            # only where a piece is to be freed or moved against its order
            return blur_scale(fitted.depth, np.exp(zimg) if camera.perspective else zimg, groups.astype(np.int64))

        held, freed = hold_placed(self.robust, z, pieces, placed or {},
                                  c.rounds.occlusion_cos if c.prior.free_widened else None, blur,
                                  c.prior.hold_ordered, c.prior.local_word)
        if held or freed:
            weights = without_edges_of(system, pieces, held + freed)
        objective = anchored(system, FixedWeights(weights), run.lam, z, self.robust)
        z = minimise(objective, z, InnerSolve(run.args.backend.linear, run.config.one_shot.solve_rtol,
                                              run.config.solver.maxiter, run.hierarchy),
                     max_iter=c.prior.iterations, tol=c.prior.tol).z
        return z, replace(fitted, share=fitted.share * RELATIVE_BLOCK ** 2), held

    def to_depth(self, zimg: np.ndarray, camera, mask: np.ndarray, mean_depth=None, pin=None) -> tuple:
        return fix_scale(zimg, camera, mask, mean_depth, pin)

    def in_result(self, fitted: DepthPrior, depth, zimg, inp) -> tuple:
        """The fitted prior (in the unknown's frame) moved as the result was when its scale
        (perspective) or offset (orthographic) was fixed, and the scale note's addition."""
        if inp.camera.perspective:
            factor = float(np.nanmedian(depth / np.exp(zimg)))
            fitted = replace(fitted, depth=fitted.depth * factor, sigma=fitted.sigma * factor)
        else:
            fitted = replace(fitted, depth=fitted.depth + float((depth - zimg)[inp.mask].mean()))
        return fitted, "; " + self.what


class DisparityPrior(RelativePrior):
    """Inverse depth known up to an affine map (a / z + b, as monocular networks give it):
    fitted as depth 1 / (a D + b) (:func:`~fnin_cli.prior.fit_disparity`), then as a relative
    prior."""

    what = "disparity prior fitted (affine in inverse depth) and fused"

    def fit(self, depth: np.ndarray, main: np.ndarray, perspective: bool) -> DepthPrior:
        return fit_disparity(self.prior, depth, main)[0]


KINDS = {"absolute": AbsolutePrior, "relative": RelativePrior, "disparity": DisparityPrior}


def prior_kind(prior: DepthPrior | None, config: IntegrationConfig = DEFAULT):
    """The object for ``prior``'s kind (None for None)."""
    return None if prior is None else KINDS[prior.kind](prior, config)
