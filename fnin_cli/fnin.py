"""FNIN end to end: Stage I (the network) then Stage II (one weighted least-squares solve).

``run_fnin`` is what ``pipeline.integrate(method="fnin" | "fnin-s")`` calls.

- Stage I runs the coarse-to-fine network up to a capped finest scale (short side
  ``NETWORK_SIDE`` pixels by default) and upsamples its unknown z_R and discontinuity
  map omega to full resolution; the full-resolution solve carries the detail.
- Stage II, ``fnin``: per-direction weights from the model's edge net (BiNI's layout,
  w_u-, w_v- per pixel, computed at full resolution from z_R and the normals, sharpened
  by ``EDGE_SHARPNESS``) or, for a model without one, from omega (the weight of the
  difference towards neighbour q is 1 - omega(q), paper: "weights at adjacent pixels in
  omega"); one solve of the WLS with the prior lam (z - z_R)^2, warm-started at z_R.
- Stage II, ``fnin-s``: BiNI's sigmoid weights computed once from z_R, one solve.
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from .errors import FninError
from .network import FNINet, Level, net_config
from .solvers import bini_layout, bini_weights
from .wls import NormalSystem

WEIGHTS_DIR = Path(__file__).parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "fnin.safetensors"
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


def resolve_device(device: str = "auto") -> torch.device:
    device = (device or "auto").lower()
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise FninError("--device cuda: no CUDA GPU is available to torch here; use --device cpu or auto")
    if device == "mps" and not (getattr(torch.backends, "mps", None) is not None
                                and torch.backends.mps.is_available()):
        raise FninError("--device mps: Apple MPS is not available here; use --device cpu or auto")
    if device not in ("cpu", "cuda", "mps"):
        raise FninError(f"unknown device '{device}'; use auto, cpu, cuda or mps")
    return torch.device(device)


@lru_cache(maxsize=4)
def _load(path: str, device: str) -> FNINet:
    from safetensors import safe_open
    from safetensors.torch import load_file

    p = Path(path)
    if not p.exists():
        raise FninError("FNIN weights not found; reinstall fnin or pass the path of a trained model", p)
    try:
        with safe_open(str(p), framework="pt") as fh:
            meta = fh.metadata() or {}
        cfg = net_config(json.loads(meta.get("net", "{}")))
        model = FNINet(cfg)
        model.load_state_dict(load_file(str(p)))
    except FninError as exc:
        raise FninError(exc.message, p) from None
    except Exception as exc:
        raise FninError(f"cannot load FNIN weights ({str(exc).splitlines()[0][:100]})", p) from None
    model.eval()
    return model.to(device)


def load_model(path=None, device: str = "auto") -> FNINet:
    """The FNIN network with its weights (the bundled ones by default), cached per process."""
    dev = resolve_device(device)
    return _load(str(path or DEFAULT_WEIGHTS), str(dev))


def _level_from_input(inp, device) -> Level:
    m = torch.from_numpy(np.ascontiguousarray(inp.mask))
    n = torch.from_numpy(np.ascontiguousarray(inp.normals)).to(torch.float32)
    n = torch.where(m[..., None], n, 0.0).permute(2, 0, 1)[None].contiguous()   # NaN outside -> 0
    K = inp.camera.K if inp.camera.perspective else np.zeros((3, 3))
    return Level(n.to(device), m[None, None].to(torch.float32).to(device),
                 torch.from_numpy(np.asarray(K, np.float32)[None]).to(device),
                 torch.tensor([inp.camera.pixel_size], dtype=torch.float32, device=device))


def full_float32():
    """cuDNN convolutions without TF32 (PyTorch's default allows it) for the block.

    With TF32 the H200 gave a DiLiGenT mean MADE of 4.60 mm where the CPU gives 4.88
    (benchmarks/results/device_check.json): the answer must not depend on the device.
    Random 1e-3 perturbations of the network's outputs move it by 0.01 mm only, so the
    shift is systematic; training runs with TF32 off track the CPU losses to 1e-3.
    """
    cd = torch.backends.cudnn
    return cd.flags(enabled=cd.enabled, benchmark=cd.benchmark, deterministic=cd.deterministic,
                    allow_tf32=False)


def stage1(model: FNINet, inp, device="cpu", side: int = NETWORK_SIDE):
    """Run the network; returns (z_R, omega) as full-resolution float64 images (0 outside)."""
    z_img, om_img, _ = network_outputs(model, inp, device, side, edges=False)
    return z_img, om_img


@torch.no_grad()
def network_outputs(model: FNINet, inp, device="cpu", side: int = NETWORK_SIDE, edges: bool = True):
    """(z_R, omega, edge weights) as full-resolution float64 images (0 outside the mask).

    With ``edges`` and a model that has an edge net, the third is its w_u-, w_v- as a
    (2, H, W) image and omega (which Stage II then does not use) is None; else the third
    is None.
    """
    dev = torch.device(device) if not isinstance(device, torch.device) else device
    lv = _level_from_input(inp, dev)
    use_edges = edges and model.edges is not None
    with full_float32():
        z, omega = model.capped(lv, side, attention=not use_edges)
        p = model.edge_probabilities(z, lv)[0].double().cpu().numpy() if use_edges else None
    om_img = omega[0, 0].double().cpu().numpy() if omega is not None else None
    return z[0, 0].double().cpu().numpy(), om_img, p


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


def run_fnin(system: NormalSystem, inp, method="fnin", model=None, device="auto", lam=1e-3,
             solver="auto", k=2.0, side: int = NETWORK_SIDE):
    """Stage I + Stage II. Returns (z, weights, discontinuity per pixel, seconds)."""
    seconds = {}
    t0 = time.perf_counter()
    dev = resolve_device(device)
    model = model if model is not None else load_model(device=str(dev))
    seconds["load_model"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    net_device = next(model.parameters()).device
    z_img, om_img, p_img = network_outputs(model, inp, net_device, side, edges=method != "fnin-s")
    seconds["network"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    weights = None
    if method != "fnin-s":
        weights = model_weights(system, p_img, om_img)
    if method == "fnin-stage1":
        z = z_img[system.mask]
    else:
        lin, rtol, maxiter = pick_solver(solver)
        z, weights = stage2(system, z_img[system.mask], om_img, method, lam, lin, k, rtol, maxiter, weights)
        seconds["solve"] = time.perf_counter() - t2
    disc = om_img[system.mask] if om_img is not None and method != "fnin-s" else None
    return z, weights, disc, seconds


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
