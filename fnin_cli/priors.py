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

from .prior import DepthPrior, fit_relative
from .scale import fix_scale, from_prior
from .solvers.irls import InnerSolve, minimise
from .solvers.objective import FixedTerm, FixedWeights, anchored


class AbsolutePrior:
    """Metric depth: a fixed data term of every solve, and the result's scale or offset."""

    fuses = False       # no solve after the rounds

    def __init__(self, prior: DepthPrior):
        self.prior = prior

    def term(self, mask: np.ndarray, camera):
        return FixedTerm(self.prior.term(mask, camera))

    def fuse(self, run, z: np.ndarray, pieces) -> tuple:
        return z, self.prior

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

    def __init__(self, prior: DepthPrior):
        self.prior = prior

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


KINDS = {"absolute": AbsolutePrior, "relative": RelativePrior}


def prior_kind(prior: DepthPrior | None):
    """The object for ``prior``'s kind (None for None)."""
    return None if prior is None else KINDS[prior.kind](prior)
