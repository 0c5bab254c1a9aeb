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

Each has ``fuses`` (whether a solve follows the rounds), ``term(mask, camera)`` (its
:class:`~fnin_cli.solvers.objective.Term` for every solve, or None), ``fuse(run, z, pieces)``
(z after it, and the prior as fitted to the result), ``to_depth(zimg, camera, mask,
mean_depth, pin)`` and ``in_result(fitted, depth, zimg, inp)`` (the fitted prior in the
result's frame, for the disagreement report).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .config import DEFAULT, PriorConfig
from .prior import PRIOR_NORMAL_NOISE, DepthPrior, fit_relative
from .scale import fix_scale, from_prior
from .solvers.irls import InnerSolve, minimise
from .solvers.objective import FixedTerm, FixedWeights, anchored
from .solvers.system import DataTerm


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

    Each prior measurement (a pixel of a full-size map, a point, a block of a map at 1/k)
    has the weight of :meth:`~fnin_cli.prior.DepthPrior.term` times its trust, the
    robust loss's weight (:func:`trust`) of its residual r = mean over the measurement of
    (z - target), in units of ``config.loss_scale`` sigma. Wrong places (a sensor's flying
    pixels, an outlier patch) are let go and the normals carry the surface across them.
    A sigma not given (``DepthPrior.sigma_given``) starts as the prior's default and is
    estimated once, at the first update, from the residuals against that first solve, in
    which the prior was weak: 1.4826 x their median absolute value.

    ``at(None)``: the current weights (full trust before any update); ``at(z)``: update from
    z, then the weights. ``trusted()``: the last trust of each prior pixel over the mask.

    Examples
    --------
    >>> from fnin_cli.camera import Camera
    >>> p = DepthPrior(np.array([[1.0, 1.0, 1.0, 9.0]]), np.ones((1, 4)), 0.1)
    >>> t = RobustPrior(p, np.ones((1, 4), bool), Camera(None, 1.0))
    >>> w0 = t.at(None).weight
    >>> (t.at(np.ones(4)).weight / w0).round(3).tolist()
    [1.0, 1.0, 1.0, 0.0]
    """

    reweights = True

    def __init__(self, prior: DepthPrior, mask: np.ndarray, camera, config: PriorConfig = DEFAULT.prior):
        base = prior.term(mask, camera)
        self.n = base.target.shape[0]
        self.has = np.flatnonzero(base.weight > 0)
        self.c0 = base.weight[self.has]
        self.target = base.target
        share = prior.share[mask][self.has].astype(np.float64)
        # 1 / sigma_z per prior pixel, in the unknown's units: c0 = share (noise / sigma_z)^2
        self.inv_sigma = np.sqrt(self.c0 / share) / PRIOR_NORMAL_NOISE
        self.measurement = _measurements(prior, mask, self.has)
        self.loss, self.k = config.loss, float(config.loss_scale)
        self.estimate = not prior.sigma_given
        self.floor = float(config.estimate_floor)
        self.scale = 1.0                  # sigma / the prior's stated (or start) sigma
        self.sigma = float(prior.sigma)   # the prior's sigma in its units, estimated where not given
        self.weights = np.ones(self.has.size)

    def at(self, z: np.ndarray | None) -> DataTerm:
        if z is not None:
            self.update(z)
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

    def update(self, z: np.ndarray) -> None:
        r = self.residual(z)
        if self.estimate:
            self.estimate = False
            first = _first_of(self.measurement, r.size)
            s = 1.4826 * float(np.median(np.abs(r[first]))) if first.size else 1.0
            self.scale = max(s, self.floor)
            self.sigma *= self.scale
        if self.loss is not None:
            self.weights = trust(r / (self.k * self.scale), self.loss)

    def energy(self, z: np.ndarray) -> float:
        """The term's weighted squared residual at z with its current weights."""
        d = z[self.has] - self.target[self.has]
        return float(np.sum(self.c0 * self.weights / self.scale ** 2 * d * d))

    def rejected(self) -> float:
        """The share of the prior's measurements whose trust is below one half."""
        first = _first_of(self.measurement, self.weights.size)
        return float(np.mean(self.weights[first] < 0.5)) if first.size else 0.0

    def trusted(self, mask: np.ndarray) -> np.ndarray:
        """(H, W) float32: each prior pixel's trust in [0, 1], NaN where the prior has none."""
        img = np.full(mask.shape, np.nan, np.float32)
        vals = np.full(self.n, np.nan, np.float32)
        vals[self.has] = self.weights
        img[mask] = vals
        return img


def _measurements(prior: DepthPrior, mask: np.ndarray, has: np.ndarray):
    """The measurement of each prior pixel (``has``, over the masked pixels) for a prior at
    1/k of the map (its block), None where each pixel is its own (full size, points)."""
    if prior.block <= 1:
        return None
    rows, cols = np.nonzero(mask)
    k = int(prior.block)
    key = (rows[has] // k) * (mask.shape[1] // k + 2) + cols[has] // k
    return np.unique(key, return_inverse=True)[1]


def _first_of(measurement, size: int) -> np.ndarray:
    """One index per measurement (all of them where each pixel is its own)."""
    if measurement is None:
        return np.arange(size)
    return np.unique(measurement, return_index=True)[1]


# ------------------------------------------------------------------ the kinds


class AbsolutePrior:
    """Metric depth: a robust data term of every solve (:class:`RobustPrior`), and the
    result's scale or offset."""

    fuses = False       # no solve after the rounds

    def __init__(self, prior: DepthPrior, config: PriorConfig = DEFAULT.prior):
        self.prior, self.config = prior, config
        self.robust = None

    def term(self, mask: np.ndarray, camera):
        self.robust = RobustPrior(self.prior, mask, camera, self.config)
        return self.robust

    def fuse(self, run, z: np.ndarray, pieces) -> tuple:
        """z as it is, and the prior with the sigma the run used (estimated where not given)."""
        return z, replace(self.prior, sigma=self.robust.sigma)

    def report(self, mask: np.ndarray) -> tuple:
        """({"rejected", "sigma_estimated"} for ``--json``, warnings, the (H, W) trust image)."""
        t = self.robust
        out = {"rejected": t.rejected(), "sigma_estimated": not self.prior.sigma_given}
        notes = []
        if out["rejected"] > self.config.rejected_warn:
            notes.append(f"the depth prior disagrees with the normals on {out['rejected']:.0%} of its measurements; "
                         "they were not trusted (--prior-weights FILE writes where it was)")
        return out, notes, t.trusted(mask)

    def to_depth(self, zimg: np.ndarray, camera, mask: np.ndarray, mean_depth=None, pin=None) -> tuple:
        """(depth, note): in the prior's units, unless a pin fixes the scale or offset."""
        if pin is None:
            return from_prior(zimg, camera, mask)
        return fix_scale(zimg, camera, mask, mean_depth, pin)

    def in_result(self, fitted: DepthPrior, depth, zimg, inp) -> tuple:
        return fitted, ""


class RelativePrior:
    """Depth known up to an affine map: fitted to the result and fused in one more solve."""

    fuses = True        # one more solve after the rounds, with their AMG hierarchy

    def __init__(self, prior: DepthPrior, config: PriorConfig = DEFAULT.prior):
        self.prior, self.config = prior, config

    def term(self, mask: np.ndarray, camera):
        return None

    def fuse(self, run, z: np.ndarray, pieces) -> tuple:
        """(z, fitted prior): the prior fitted to the result z by an affine map of depth
        (:func:`~fnin_cli.prior.fit_relative`) on the result's main piece (whose shape the
        normals fix), then one solve with the result's weights (fixed), the anchor lam
        towards z and the fitted prior's term (:meth:`~fnin_cli.prior.DepthPrior.relative_term`),
        started at z, on the CPU with the rounds' AMG hierarchy where there is one."""
        system, camera = run.system, run.system.camera
        zimg = system.to_image(z)
        main = system.to_image((pieces.plain[0] == 0).astype(float), fill=0.0) > 0
        fitted, _ = fit_relative(self.prior, np.exp(zimg) if camera.perspective else zimg, main, camera.perspective)
        objective = anchored(system, FixedWeights(pieces.weights), run.lam, z,
                             FixedTerm(fitted.relative_term(system.mask, camera)))
        z = minimise(objective, z, InnerSolve(run.args.backend.linear, run.config.one_shot.solve_rtol,
                                              run.config.solver.maxiter, run.hierarchy)).z
        return z, fitted

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
        return fitted, "; relative depth prior fitted (affine in depth) and fused"

    def report(self, mask: np.ndarray) -> tuple:
        return {}, [], None


KINDS = {"absolute": AbsolutePrior, "relative": RelativePrior}


def prior_kind(prior: DepthPrior | None, config: PriorConfig = DEFAULT.prior):
    """The object for ``prior``'s kind (None for None)."""
    return None if prior is None else KINDS[prior.kind](prior, config)
