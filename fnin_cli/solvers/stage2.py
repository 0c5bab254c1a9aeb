"""FNIN's Stage II: per-direction weights from the network's outputs and one WLS solve.

- ``fnin``: the edge net's weights (BiNI's layout w_u-, w_v-, sharpened by
  ``EDGE_SHARPNESS``) or, for a model without an edge net, weights from the attention
  map omega (the difference towards neighbour q weighs 1 - omega(q)); one solve with
  the prior lam (z - z_R)^2, warm-started at z_R.
- ``fnin-s``: BiNI's sigmoid weights computed once from z_R, one solve.

Numpy only: the network's outputs come in as arrays (:mod:`fnin_cli.model.inference`).
"""

from __future__ import annotations

import numpy as np

from .bini import bini_layout, bini_weights
from .system import NormalSystem

# finest network scale: short side <= this. With the paired Stage II weights the end-to-end
# error on synthetic validation scenes was within 0.5% across 64/128/256 (best at 64 on
# 512^2 scenes, benchmarks/results/network_side.json) while 64 halves the network's time;
# rule fixed before measuring: the cheapest side within 1% of the best. (At 64 only the
# pyramid's coarsest level runs for most inputs: the initial FNO and the attention net.)
NETWORK_SIDE = 64
# AMG-PCG: the loosest tolerance whose DiLiGenT MADE is within 0.1% of the exact (LU)
# solve's (benchmarks/stage2_solver.py). With the 200-step solve-trained edge net 1e-3 was
# 2.6% off and 1e-4 0.03%; with the 1200-step one, 1e-3 to 1e-4 all stop 1.0% off (goblet:
# a piece attached by weights of ~1e-11, whose offset converges last) and 1e-5 is 0.0006%.
SOLVE_RTOL = 1e-5
# torch Jacobi-PCG (Stage II on a GPU when asked for, solver="torch:cuda") leaves more
# smooth error at the same residual than AMG. Chosen when it was the GPU default: at 1e-4
# it matched the exact solve's DiLiGenT MADE to 4 digits; with today's edge net no
# tolerance reaches goblet's nearly free piece (device_check.json).
GPU_SOLVE_RTOL = 1e-4
GPU_MAXITER = 20000
# Stage II uses the edge net's weights sharpened, sigmoid(a * logit w) with a = 2: mean
# end-to-end error on the synthetic validation scenes (24 per layout at 512 px) 0.4572 vs
# 0.4927 as trained (fold scenes 0.369 vs 0.484); grid 0.5..4 and the >= 1% rule fixed
# beforehand (benchmarks/edge_temperature.py, results/edge_temperature.json).
EDGE_SHARPNESS = 2.0


def pick_solver(solver: str) -> tuple:
    """(linear solver, rtol, maxiter) for Stage II. ``auto`` is AMG-PCG on the CPU whatever
    device ran the network: on a lent H100 machine the 9 DiLiGenT objects took 0.87 s
    with it against 1.31 s with torch Jacobi-PCG on the GPU at GPU_SOLVE_RTOL, whose MADE
    was 7% off the exact solve's there (benchmarks/results/device_check.json; rule fixed
    beforehand in 18620d6). An explicit ``torch[:device]`` gets GPU_SOLVE_RTOL."""
    if solver == "auto":
        return "amg", SOLVE_RTOL, 5000
    if solver.startswith("torch"):
        return solver, GPU_SOLVE_RTOL, GPU_MAXITER
    return solver, SOLVE_RTOL, 5000


def sharpen(p: np.ndarray, a: float) -> np.ndarray:
    """sigmoid(a * logit p): a > 1 pushes weights towards 0 and 1 (a = 1: unchanged)."""
    if a == 1.0:
        return p
    q = np.clip(p, 1e-7, 1.0 - 1e-7)
    return 0.5 * (1.0 + np.tanh(0.5 * a * np.log(q / (1.0 - q))))


def edge_weights(system: NormalSystem, p_img: np.ndarray, sharpness: float = EDGE_SHARPNESS) -> dict:
    """Per-direction weights from the edge net's w_u-, w_v- images (BiNI's layout),
    sharpened by ``sharpness`` (:func:`sharpen`)."""
    wu, wv = (sharpen(p_img[i][system.mask], sharpness) for i in (0, 1))
    return bini_layout(wu, wv)


def attention_weights(system: NormalSystem, omega_img: np.ndarray, paired: bool = True) -> dict:
    """Per-direction weights: the difference towards neighbour q weighs 1 - omega(q).

    ``paired``: where a pixel has both one-sided differences along an axis, divide the
    two weights by their sum (as BiNI's w+ + w- = 1), so omega only says which side to
    trust and never cuts a pixel loose on both sides.
    """
    om = omega_img[system.mask]
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


def model_weights(system: NormalSystem, p_img, omega_img) -> dict:
    """Stage II's weights from the network's outputs: the edge net's (:func:`edge_weights`)
    when the model has one, else from omega (:func:`attention_weights`)."""
    return edge_weights(system, p_img) if p_img is not None else attention_weights(system, omega_img)


def stage2(system: NormalSystem, z_r: np.ndarray, omega_img: np.ndarray | None, method: str = "fnin",
           lam: float = 1e-3, solver: str = "amg", k: float = 2.0, rtol: float = SOLVE_RTOL,
           maxiter: int = 5000, weights: dict | None = None):
    """One WLS solve with the prior z_R: weights from omega (fnin) or BiNI's from z_R (fnin-s);
    ``weights`` given (the edge net's) are used as they are."""
    if weights is None and method == "fnin":
        # paired weights: 0.5125 vs 0.5194 end-to-end on the synthetic validation scenes
        # (benchmarks/stage2_weights.py, criterion fixed beforehand)
        weights = attention_weights(system, omega_img)
    elif weights is None:
        weights = bini_weights(system, z_r, k)
    z, _ = system.solve(weights, lam=lam, z_prior=z_r, x0=z_r, method=solver, rtol=rtol, maxiter=maxiter)
    return z, weights
