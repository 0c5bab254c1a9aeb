"""What every method's run function takes and returns (:mod:`fnin_cli.solvers.registry`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..config import IntegrationConfig
from .backend import CPU, Backend
from .linear import AMGCache
from .objective import FixedTerm, Objective, Term
from .system import DataTerm


@dataclass(frozen=True)
class RunArgs:
    """What :func:`fnin_cli.pipeline.integrate` passes to every run function."""

    lam: float                 # the anchor's weight in the system's units (solvers.system.classic_lambda)
    config: IntegrationConfig  # every other constant (fnin_cli.config)
    backend: Backend = CPU     # where the solves run (solvers.backend, chosen once per run)
    device: str = "auto"
    model: object = None       # an FNINet, or None for the bundled weights
    progress: Callable | None = None
    stage: Callable | None = None  # stage(name, step, total) when a stage starts (pipeline.integrate)
    rtol: float | None = None      # Stage II's tolerance instead of its own (rounds follow)
    hierarchy: AMGCache | None = None  # AMG hierarchy to keep for the rounds that follow (solvers.linear)
    prior: Term | None = None      # a depth prior's data term, carried by every solve (fnin_cli.prior)
    rounds_follow: bool = False    # rounds follow the method (they iterate a term that reweights itself)

    def objective(self, system, rule, target=None) -> Objective:
        """The run's objective: the normals term with ``rule`` and :meth:`terms`."""
        return Objective(system, rule, self.terms(target))

    def terms(self, target=None) -> tuple:
        """The run's data terms: the anchor lam towards ``target`` (None: the depth prior's
        level, else 0), then the depth prior's term where there is one."""
        if target is None:
            target = self.prior_level()
        return (FixedTerm(DataTerm(self.lam, target)),) + (() if self.prior is None else (self.prior,))

    def iterations(self, objective: Objective) -> tuple:
        """(max_iter, tol) of a solve with fixed weights: one, or where a data term reweights
        itself and no rounds follow, ``PriorConfig.iterations`` stopping at its ``tol``; where
        rounds follow and the depth prior's sigma is still to be estimated, two: the second
        weighs the prior at its estimate, so the rounds start from a surface it held
        (docs/decisions.md#robust-prior)."""
        if objective.reweights and not self.rounds_follow:
            return self.config.prior.iterations, self.config.prior.tol
        if objective.reweights and getattr(self.prior, "estimate", False):
            return 2, 0.0
        return 1, 0.0

    def second_rtol(self, own: float) -> float | None:
        """The tolerance of Stage II's solves after its first where it solves twice for a
        prior map (its sigma estimated, then its trust): the method's ``own``, since at the
        rounds' looser one the second solve stops before it has travelled from the first
        (docs/decisions.md#robust-prior); None: as the first."""
        twice = getattr(self.prior, "estimate", False) and getattr(self.prior, "loss", None) is not None
        return own if twice and self.rounds_follow else None

    def prior_level(self):
        """The depth prior's level over the masked pixels (:func:`prior_level`), None without one."""
        return None if self.prior is None else prior_level(self.prior.at(None))


@dataclass(frozen=True)
class MethodOutput:
    """A run function's result over the masked pixels."""

    z: object                  # (n,) unknown: log-depth (perspective) or depth
    weights: dict | None       # per-direction weights used last (None: uniform)
    discontinuity: object      # (n,) in [0, 1], or None to derive it from ``weights``
    iterations: int
    seconds: dict
    edge_p: object = None      # fnin's edge net w_u-, w_v- as a (2, H, W) image (the rounds' prior), or None
    backend: Backend = CPU     # where the method's solve ran (a grid's GPU may have fallen back): the rounds' too
    warnings: tuple = ()       # what the run tells the user (the grid fell back to the CPU)


def prior_level(prior: DataTerm) -> np.ndarray:
    """A depth prior's level over the masked pixels: its weighted mean target everywhere
    (where a start or a default target should sit, so that solves need not travel to it)."""
    w = np.broadcast_to(prior.weight, prior.target.shape)
    return np.full(prior.target.shape, float(np.sum(w * prior.target) / np.sum(w)))


