"""FNIN's Stage II: per-direction weights from the network's outputs and one WLS solve.

- ``fnin``: the edge net's weights (BiNI's layout w_u-, w_v-, sharpened by
  ``OneShotConfig.edge_sharpness``, :mod:`fnin_cli.config`) or, for a model without an
  edge net, weights from the attention map omega (the difference towards neighbour q
  weighs 1 - omega(q)); one solve with the prior lam (z - z_R)^2, warm-started at z_R.
- ``fnin-s``: BiNI's sigmoid weights computed once from z_R, one solve.

Numpy only: the network's outputs come in as arrays (:mod:`fnin_cli.model.inference`).
"""

from __future__ import annotations

import numpy as np

from ..config import DEFAULT, OneShotConfig
from .backend import CPU, Backend
from .irls import InnerSolve, minimise
from .objective import FixedTerm, FixedWeights, Objective, bini_layout
from .linear import AMGCache
from .system import DataTerm, NormalSystem


def sharpen(p: np.ndarray, a: float) -> np.ndarray:
    """sigmoid(a * logit p): a > 1 pushes weights towards 0 and 1 (a = 1: unchanged)."""
    if a == 1.0:
        return p
    q = np.clip(p, 1e-7, 1.0 - 1e-7)
    return 0.5 * (1.0 + np.tanh(0.5 * a * np.log(q / (1.0 - q))))


def edge_weights(system: NormalSystem, p_img: np.ndarray, one_shot: OneShotConfig = DEFAULT.one_shot) -> dict:
    """Per-direction weights from the edge net's w_u-, w_v- images (BiNI's layout),
    sharpened by ``one_shot.edge_sharpness`` (:func:`sharpen`), then gated by
    :func:`sliver_gate` when ``one_shot.sliver_gate`` is set."""
    wu, wv = (sharpen(system.at_pixels(p_img[i]), one_shot.edge_sharpness) for i in (0, 1))
    weights = bini_layout(wu, wv)
    gate = one_shot.sliver_gate
    return weights if gate is None else sliver_gate(system, weights, gate)


def edge_prior(system: NormalSystem, p_img: np.ndarray, scale: float) -> dict:
    """The edge net's belief as a bias for the rounds' BiNI weights: ``scale`` times the
    logits of its w_u-, w_v- (probabilities clipped to [1e-6, 1 - 1e-6]) over the masked
    pixels, as :func:`~fnin_cli.solvers.bini.bini_weights` takes them.

    Examples
    --------
    >>> import numpy as np
    >>> from fnin_cli.camera import Camera
    >>> system = NormalSystem(np.dstack([np.zeros((2, 3)), np.zeros((2, 3)), -np.ones((2, 3))]),
    ...                       np.ones((2, 3), bool), Camera(None, 1.0))
    >>> p = np.stack([np.full((2, 3), 0.5), np.full((2, 3), 0.9)])
    >>> bias = edge_prior(system, p, 0.5)
    >>> float(bias["u"][0]), round(float(bias["v"][0]), 4)
    (0.0, 1.0986)
    """
    out = {}
    for i, axis in enumerate(("u", "v")):
        q = np.clip(system.at_pixels(p_img[i]), 1e-6, 1.0 - 1e-6)
        out[axis] = scale * np.log(q / (1.0 - q))
    return out


def sliver_gate(system: NormalSystem, weights: dict, threshold: float) -> dict:
    """Weights where a pixel cut off by both neighbours on an axis connects to neither.

    Paired weights (w+ = 1 - w-) make every pixel connect to one side of each axis,
    so a sliver one pixel wide between two jumps ties the surfaces on either side
    together. The edge between a pixel s and its neighbour q carries two weights: q's
    towards s and s's towards q. Where *both* neighbours' weights towards s are below
    ``threshold``, s's own two weights on that axis are scaled by
    g = max(w_left->s, w_right->s) / threshold (1 elsewhere, and where s has one
    neighbour only on the axis).

    Parameters
    ----------
    system : NormalSystem
        The masked pixels and their edges.
    weights : dict
        Per-direction weights ("u+", "u-", "v+", "v-"), one value per masked pixel.
    threshold : float
        In (0, 1]: a neighbour's weight below it counts as a cut.

    Returns
    -------
    dict
        New per-direction weights; ``weights`` is not modified.

    Examples
    --------
    A row of five pixels: pixels 1 and 3 cut the edges towards pixel 2, which (paired)
    still trusts pixel 1 with weight 0.99; the gate cuts pixel 2 loose on that axis:

    >>> import numpy as np
    >>> from fnin_cli.camera import Camera
    >>> flat = np.dstack([np.zeros((1, 5, 2)), np.ones((1, 5, 1))])
    >>> s = NormalSystem(flat, np.ones((1, 5), bool), Camera(None, 1.0))
    >>> wm = np.array([0.5, 0.99, 0.99, 0.01, 0.5])     # w_u- of each pixel
    >>> w = {"u-": wm, "u+": 1 - wm, "v-": np.full(5, 0.5), "v+": np.full(5, 0.5)}
    >>> g = sliver_gate(s, w, 0.2)
    >>> g["u-"].round(4).tolist()
    [0.5, 0.99, 0.0495, 0.01, 0.5]
    >>> g["u+"].round(4).tolist()
    [0.5, 0.01, 0.0005, 0.99, 0.5]
    """
    out = dict(weights)
    for axis in "uv":
        from_lo, from_hi = neighbour_weights(system, weights, axis)
        gate = np.minimum(np.maximum(from_lo, from_hi) / threshold, 1.0)
        out[axis + "+"] = weights[axis + "+"] * gate
        out[axis + "-"] = weights[axis + "-"] * gate
    return out


def neighbour_weights(system: NormalSystem, weights: dict, axis: str) -> tuple:
    """Per pixel, the weights its lower and its upper neighbour on ``axis`` ("u" or "v")
    give the edge towards it (1 where it has no such neighbour)."""
    lo, hi = (system.hp, system.hq) if axis == "u" else (system.vp, system.vq)
    from_lo, from_hi = np.ones(system.n), np.ones(system.n)
    from_lo[hi] = weights[axis + "+"][lo]
    from_hi[lo] = weights[axis + "-"][hi]
    return from_lo, from_hi


def attention_weights(system: NormalSystem, omega_img: np.ndarray, paired: bool = True) -> dict:
    """Per-direction weights: the difference towards neighbour q weighs 1 - omega(q).

    ``paired``: where a pixel has both one-sided differences along an axis, divide the
    two weights by their sum (as BiNI's w+ + w- = 1), so omega only says which side to
    trust and never cuts a pixel loose on both sides (docs/decisions.md#paired-attention-weights).
    """
    om = system.at_pixels(omega_img)
    w = {d: np.ones(system.n) for d in ("u+", "u-", "v+", "v-")}
    w["u+"][system.hp] = 1.0 - om[system.hq]
    w["u-"][system.hq] = 1.0 - om[system.hp]
    w["v+"][system.vp] = 1.0 - om[system.vq]
    w["v-"][system.vq] = 1.0 - om[system.vp]
    if paired:
        for plus, minus in (("u+", "u-"), ("v+", "v-")):
            both = system.has[plus] & system.has[minus]
            total = np.maximum(w[plus][both] + w[minus][both], 1e-6)
            w[plus][both] /= total
            w[minus][both] /= total
    return w


def model_weights(system: NormalSystem, p_img, omega_img, one_shot: OneShotConfig = DEFAULT.one_shot) -> dict:
    """Stage II's weights from the network's outputs: the edge net's (:func:`edge_weights`)
    when the model has one, else from omega (:func:`attention_weights`)."""
    return edge_weights(system, p_img, one_shot) if p_img is not None else attention_weights(system, omega_img)


def stage2(system: NormalSystem, weights: dict, term, x0: np.ndarray, backend: Backend = CPU,
           rtol: float = DEFAULT.one_shot.solve_rtol, maxiter: int = DEFAULT.solver.maxiter,
           hierarchy: AMGCache | None = None, coarse_scale: float = DEFAULT.solver.grid_coarse_scale,
           notes: list | None = None, max_iter: int = 1, tol: float = 0.0, rtol_after: float | None = None) -> np.ndarray:
    """One WLS solve with fixed ``weights`` started at ``x0`` (z_R): the network's weights
    (:func:`model_weights`; fnin), or BiNI's from z_R (:func:`~fnin_cli.solvers.objective.bini_weights`;
    fnin-s). ``term``: an :class:`~fnin_cli.solvers.objective.Objective`'s data terms (a tuple
    of :class:`~fnin_cli.solvers.objective.Term`), or one :class:`DataTerm` (the anchor
    lam (z - z_R)^2). ``backend``: where it solves (on a grid: ``coarse_scale`` is the
    V-cycle's; where the GPU's memory runs out, on the CPU, and ``notes`` says so);
    ``hierarchy``: see :func:`~fnin_cli.solvers.linear.solve_spd`; ``max_iter``, ``tol``:
    more than one solve where a term reweights itself (:func:`~fnin_cli.solvers.irls.minimise`),
    those after the first to ``rtol_after`` (None: ``rtol``). Returns z."""
    terms = (FixedTerm(term),) if isinstance(term, DataTerm) else tuple(term)
    return minimise(Objective(system, FixedWeights(weights), terms), x0,
                    InnerSolve(None, rtol, maxiter, hierarchy, coarse_scale, rtol_after), backend, max_iter, tol,
                    notes=notes).z
