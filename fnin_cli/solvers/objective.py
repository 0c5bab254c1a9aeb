"""What every solve minimises: one :class:`Objective`.

Over the masked pixels' unknown z (log-depth or depth) an objective is

    E(z) = sum_p sum_d  w_d,p / 2 (a_d D_d z + n_d)^2          the normals term
         + sum_t sum_p  c_t,p(z) / 2 (z_p - t_t,p(z))^2       its data terms

(:mod:`fnin_cli.solvers.system` has the rows). It holds the two parts apart:

- the normals term's **weight rule**: :class:`FixedWeights` (Stage II's weights from the
  network, or all 1 for ``wls``) or :class:`BilateralWeights` (BiNI's, recomputed from z,
  with the per-axis logits of the edge net's prior and the fold join where the rounds after
  fnin carry them);
- a tuple of **data terms**, each a :class:`Term`: ``at(z)`` gives its weight and target at
  z as a :class:`~fnin_cli.solvers.system.DataTerm`. A fixed term (:class:`FixedTerm`: the
  anchor lam (z - z_start)^2, an absolute depth prior) returns the same whatever z; a term
  that reweights itself from z (a robust prior) returns new weights, and the IRLS driver
  (:mod:`fnin_cli.solvers.irls`) asks it once per iteration.

The same description is assembled on the CPU (:meth:`NormalSystem.normal_equations`) and
on the pixel grid (:class:`~fnin_cli.solvers.grid.GridSystem`); the training loss reads the
weights the same way (:func:`fnin_cli.train.losses`). Writing a new data term: a class with
``reweights`` and ``at(z)``, and an entry in :mod:`fnin_cli.config` for its constants.

Examples
--------
>>> from fnin_cli.camera import Camera
>>> from fnin_cli.solvers.system import DataTerm, NormalSystem
>>> flat = np.dstack([np.zeros((2, 3, 2)), -np.ones((2, 3, 1))])
>>> s = NormalSystem(flat, np.ones((2, 3), bool), Camera(None, 1.0))
>>> obj = Objective(s, FixedWeights(None), (FixedTerm(DataTerm(1e-3, np.ones(6))),))
>>> obj.data(np.zeros(6)).target.tolist()
[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
>>> obj.energy(np.zeros(6))
0.0
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from .system import DIRECTIONS, DataTerm, NormalSystem


def sigmoid(x: np.ndarray, k: float) -> np.ndarray:
    """1 / (1 + exp(-k x)), computed without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * k * x))  # = 1 / (1 + exp(-k x)), overflow-free


def bini_layout(wu_minus: np.ndarray, wv_minus: np.ndarray) -> dict:
    """Per-direction weights from w_u-, w_v- over the masked pixels (w+ = 1 - w-)."""
    return {"u+": 1.0 - wu_minus, "u-": wu_minus, "v+": 1.0 - wv_minus, "v-": wv_minus}


def bini_weights(system: NormalSystem, z: np.ndarray, k: float = 2.0, differences: dict | None = None,
                 bias: dict | None = None) -> dict:
    """BiNI's bilateral weights from the current z (docs/methods.md#equations).

    Per pixel, the one-sided difference (times a) with the larger square gets the
    smaller weight (k: BiNI's sharpness, 2 as published): w_u- = sigmoid_k((A_u+ z)^2 - (A_u- z)^2), w_u+ = 1 - w_u-.
    ``differences``: ``system.differences(z)``, if already computed. ``bias``: per-axis
    logits ``{"u": ..., "v": ...}`` over the masked pixels added to the sigmoid's
    argument, w_u- = sigmoid(k ((A_u+ z)^2 - (A_u- z)^2) + bias_u) (the edge net's prior
    in the rounds after FNIN, :func:`fnin_cli.solvers.stage2.edge_prior`).
    """
    d = system.differences(z) if differences is None else differences
    xu, xv = d["u+"] ** 2 - d["u-"] ** 2, d["v+"] ** 2 - d["v-"] ** 2
    if bias is None:
        return bini_layout(sigmoid(xu, k), sigmoid(xv, k))
    return bini_layout(sigmoid(k * xu + bias["u"], 1.0), sigmoid(k * xv + bias["v"], 1.0))


# ------------------------------------------------------------------ the normals term's weights

@dataclass(frozen=True)
class FixedWeights:
    """The normals term with weights that do not depend on z: ``weights`` per direction
    over the masked pixels (Stage II's), or None for all 1 (``wls``)."""

    weights: dict | None

    reweights = False

    def at(self, system: NormalSystem, z: np.ndarray) -> dict | None:
        return self.weights


@dataclass(frozen=True)
class BilateralWeights:
    """BiNI's bilateral weights of z (:func:`bini_weights`) with sharpness ``k`` and
    per-axis logits ``bias`` (None: BiNI's own weights)."""

    k: float
    bias: dict | None = None

    reweights = True

    def at(self, system: NormalSystem, z: np.ndarray, differences: dict | None = None) -> dict:
        return bini_weights(system, z, self.k, differences, self.bias)


# ------------------------------------------------------------------ data terms

class Term(Protocol):
    """A data term sum_p c_p(z) / 2 (z_p - t_p(z))^2: ``at(z)`` updates it from z and gives
    its weight and target; ``at(None)`` gives them as they are (before any update: the
    term's own). ``reweights`` False says that they never change (asked once per solve); a
    term that reweights also has ``energy(z)``, its weighted squared residual at z."""

    reweights: bool

    def at(self, z: np.ndarray | None) -> DataTerm: ...


class TermOfWeights(Term, Protocol):
    """A term that reweights from z and from the normals term's weights at z
    (``reads_weights`` True): ``at(z, weights)``."""

    reads_weights: bool

    def at(self, z: np.ndarray | None, weights: dict | None = None) -> DataTerm: ...


@dataclass(frozen=True)
class FixedTerm:
    """A data term whose weight and target do not depend on z."""

    term: DataTerm

    reweights = False

    def at(self, z: np.ndarray) -> DataTerm:
        return self.term


# ------------------------------------------------------------------ the objective

@dataclass(frozen=True)
class Objective:
    """The normals term of ``system`` with its weight rule, plus ``terms``.

    Attributes
    ----------
    system : NormalSystem
    rule : FixedWeights or BilateralWeights
        How the normals term's weights follow from z.
    terms : tuple of Term
        The data terms, summed in this order (:meth:`DataTerm.plus`).
    """

    system: NormalSystem
    rule: FixedWeights | BilateralWeights
    terms: tuple = ()

    @property
    def terms_reweight(self) -> bool:
        """Whether a data term changes with z."""
        return any(t.reweights for t in self.terms)

    @property
    def reweights(self) -> bool:
        """Whether any part changes with z (the IRLS driver then iterates)."""
        return self.rule.reweights or self.terms_reweight

    def weights(self, z: np.ndarray, differences: dict | None = None) -> dict | None:
        """The normals term's weights at z."""
        if self.rule.reweights:
            return self.rule.at(self.system, z, differences)
        return self.rule.at(self.system, z)

    def data(self, z: np.ndarray | None = None, weights: dict | None = None) -> DataTerm:
        """All data terms at z as one (weights summed, targets weighted); with none, a zero
        term. ``weights``: the normals term's at z, for a term that reads them (its
        ``reads_weights``: a robust prior tells the normals' pieces apart)."""
        out = None
        for t in self.terms:
            term = t.at(z, weights) if getattr(t, "reads_weights", False) else t.at(z)
            out = term if out is None else out.plus(term)
        return DataTerm(0.0) if out is None else out

    def energy(self, z: np.ndarray, weights: dict | None = None, differences: dict | None = None) -> float:
        """The energy whose relative change stops the iterations: the normals term's weighted
        residual (Az - b)^T W (Az - b) at z with ``weights`` (None: the rule's at z), plus the
        weighted residual of each data term that reweights itself (its ``energy(z)``, with its
        current weights); fixed terms do not count, as in BiNI's own rule."""
        if weights is None:
            weights = self.weights(z, differences)
        return self.system.energy(z, weights, self.system.residuals(z, differences)) + self.terms_energy(z)

    def terms_energy(self, z: np.ndarray) -> float:
        """The weighted residual of the data terms that reweight themselves, at z."""
        return float(sum(t.energy(z) for t in self.terms if t.reweights))

    def weights_and_energy(self, z: np.ndarray) -> tuple:
        """(weights at z, energy at z) from one pass of differences."""
        d = self.system.differences(z)
        weights = self.weights(z, d)
        return weights, self.energy(z, weights, d)

    def normal_equations(self, z: np.ndarray | None = None) -> tuple:
        """(A, b, ref) of the weighted system at z (:meth:`NormalSystem.normal_equations`):
        the normals term's weights and the data terms at z assembled; ``ref`` the norm of
        the data's part of b, to which solves measure their tolerance."""
        return self.system.normal_equations(self.weights(z), self.data(z))

    def plus(self, *terms) -> "Objective":
        """This objective with more data terms after its own."""
        return replace(self, terms=self.terms + tuple(terms))


def anchored(system: NormalSystem, rule, lam: float, target=None, *terms) -> Objective:
    """The objective every method solves: the normals term with ``rule``, the anchor
    lam/2 (z - target)^2 (target None: 0) that settles what the normals leave free
    (docs/methods.md#equations), then ``terms`` (a depth prior's)."""
    return Objective(system, rule, (FixedTerm(DataTerm(lam, target)),) + tuple(terms))


__all__ = ["DIRECTIONS", "BilateralWeights", "FixedTerm", "FixedWeights", "Objective", "Term", "anchored",
           "bini_layout", "bini_weights", "sigmoid"]
