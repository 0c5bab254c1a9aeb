"""Training losses: the detail-weighted loss of Stage I, the edge net's weighted BCE to
BiNI's weights of the true surface, and the Stage II error through the solve.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .. import config as integration
from ..camera import Camera
from ..data.synthetic import object_groups
from ..model.geometry import Level, backproject_t, bini_targets, masked_mean, point_normals
from ..solvers.objective import FixedWeights, anchored, bini_layout
from ..solvers.linear import amg_preconditioner, pcg
from ..solvers.stage2 import neighbour_weights, sliver_gate
from ..solvers.system import NormalSystem, classic_lambda
from .config import TrainConfig


def detail_weighted_loss(z, omega, z_gt, lv: Level, gamma: float = 0.25):
    """(1 - omega)|z - z_gt| + gamma * omega * |n(x) - n(x_gt)|, mean over valid pixels.

    Both unknowns are compared after removing their masked means (depth is relative).
    """
    m = lv.mask
    zg = (z_gt - masked_mean(z_gt, m)) * m
    zz = (z - masked_mean(z, m)) * m
    # inner pixels only for normals (central differences need both neighbours)
    inner = m * F.pad(m[..., 1:-1, 2:] * m[..., 1:-1, :-2] * m[..., 2:, 1:-1] * m[..., :-2, 1:-1], (1, 1, 1, 1))
    ref = masked_mean(z_gt, m)
    n_est = point_normals(backproject_t(zz + ref, lv))
    n_gt = point_normals(backproject_t(zg + ref, lv))
    dn = (n_est - n_gt).abs().sum(dim=1, keepdim=True) * inner
    dz = (zz - zg).abs()
    om = omega if omega is not None else torch.zeros_like(m)
    per = ((1 - om) * dz + gamma * om * dn) * m
    return per.sum(dim=(1, 2, 3)) / m.sum(dim=(1, 2, 3)).clamp_min(1.0)


def gt_pyramid(z_full, levels):
    """Ground-truth unknown at each level's resolution (masked 2x2 averages)."""
    import torch.nn.functional as F

    out = {levels[-1].mask.shape[-2:]: z_full}
    z, m = z_full, levels[-1].mask
    for lv in reversed(levels[:-1]):
        h, w = z.shape[-2:]
        if h % 2 or w % 2:
            z = F.pad(z, (0, w % 2, 0, h % 2))
            m = F.pad(m, (0, w % 2, 0, h % 2))
        z = F.avg_pool2d(z * m, 2) / F.avg_pool2d(m, 2).clamp_min(1e-6)
        m = lv.mask
        out[lv.mask.shape[-2:]] = z
    return out


def batch_loss(model, lv, z_gt, gamma):
    """Stage I loss of a batch: the detail-weighted loss summed over the pyramid's scales."""
    outs = model(lv)
    gts = gt_pyramid(z_gt, [o[0] for o in outs])
    total = 0.0
    for lvl, z, omega in outs:
        zg = gts[lvl.mask.shape[-2:]]
        # normalise by the scene's depth spread so every scene weighs alike
        spread = masked_mean((zg - masked_mean(zg, lvl.mask)).abs(), lvl.mask).view(-1).clamp_min(1e-6)
        total = total + (detail_weighted_loss(z / spread.view(-1, 1, 1, 1), omega,
                                              zg / spread.view(-1, 1, 1, 1), lvl, gamma)).mean()
    return total, outs


def edge_loss(model, lv, z_gt, cfg: "TrainConfig"):
    """Weighted BCE of the edge net's w_u-, w_v- against BiNI's weights of the true unknown."""
    _, logits = _edge_logits(model, lv, cfg)
    return _bce_to_bini(logits, lv, z_gt, cfg)


def _edge_logits(model, lv, cfg: "TrainConfig"):
    """(z_R of the frozen Stage I, the edge net's logits on it) for a batch."""
    with torch.no_grad():
        z_r, _ = model.capped(lv, cfg.side, attention=False)
    return z_r, model.edges(z_r, lv)


def _bce_to_bini(logits, lv, z_gt, cfg: "TrainConfig", teacher=None):
    with torch.no_grad():
        target = teacher if teacher is not None else bini_targets(z_gt, lv)
    return weighted_bce(logits, target, lv.mask, cfg.edge_alpha)


def weighted_bce(logits, target, mask, alpha: float):
    """Per-scene mean over the mask of BCE weighted by 1 + alpha |2t - 1|, averaged over scenes."""
    import torch.nn.functional as F

    weight = (1.0 + alpha * (2.0 * target - 1.0).abs()) * mask
    bce = F.binary_cross_entropy_with_logits(logits, target, weight=weight, reduction="none")
    return (bce.sum(dim=(1, 2, 3)) / (2.0 * mask.sum(dim=(1, 2, 3)).clamp_min(1.0))).mean()


def _scene_numpy(lv, b: int) -> tuple:
    """(normals HxWx3, mask, K, pixel size) of scene ``b`` as numpy: what a NormalSystem needs."""
    return (lv.normals[b].permute(1, 2, 0).cpu().numpy(), lv.mask[b, 0].cpu().numpy() > 0,
            lv.K[b].cpu().numpy(), float(lv.pixel[b]))


def _scene_objects(lv, b: int):
    """Scene ``b``'s object id image as numpy (None: one object)."""
    return None if lv.objects is None else lv.objects[b, 0].cpu().numpy()


def _numpy_system(normals, mask, K, pixel):
    """The scene's NormalSystem and its classic prior weight lam."""
    K = K.astype(np.float64)
    cam = Camera(K) if K[0, 0] > 0 else Camera(None, pixel)
    return NormalSystem(normals.astype(np.float64), mask, cam), classic_lambda(cam, mask.shape)


def solve_loss(model, lv, z_gt, cfg: "TrainConfig"):
    """The edge net's end-to-end objective: the relative error (``synthetic.relative_error``)
    of Stage II's solution with its weights, sharpened and sliver-gated as at inference
    (``TrainConfig.solve_gate``, inference's ``OneShotConfig.sliver_gate``), differentiated
    through the solve. A(w) z = b(w) gives dL/dw_d = -(a D_d l) r_d(z) with A l = dL/dz
    (``NormalSystem.weight_gradients``): one more solve per scene, same AMG hierarchy.
    Returns a tensor with the batch mean as value and that gradient."""
    z_r, logits = _edge_logits(model, lv, cfg)
    return _solve_error(logits, lv, z_r, z_gt, cfg.solve_workers, cfg.solve_cap, cfg.solve_gate)


def _solve_error(logits, lv, z_r, z_gt, workers: int = 0, cap: float = 0.0,
                 gate: float | None = integration.DEFAULT.one_shot.sliver_gate):
    sharpness = integration.DEFAULT.one_shot.edge_sharpness     # as inference applies it
    w = torch.sigmoid(sharpness * logits) * lv.mask   # stage2.sharpen of the sigmoid
    w_np = w.detach().double().cpu().numpy()
    batch = w_np.shape[0]
    zr_np = z_r.detach().cpu().numpy()
    zgt_np = z_gt.detach().cpu().numpy()
    jobs = [(*_scene_numpy(lv, b), w_np[b], zr_np[b, 0], zgt_np[b, 0], _scene_objects(lv, b), cap, gate)
            for b in range(batch)]
    if workers > 0:
        results = list(solve_pool(workers).map(_scene_solve_error, *zip(*jobs)))
    else:
        results = [_scene_solve_error(*job) for job in jobs]
    grads = np.zeros_like(w_np)
    for b, (_, g) in enumerate(results):
        grads[b] = g / batch
    surrogate = (w * torch.from_numpy(grads).to(w)).sum()
    return surrogate - surrogate.detach() + float(np.mean([loss for loss, _ in results]))


def _scene_solve_error(normals, mask, K, pixel, w, zr_img, zgt_img, objects_img=None, cap: float = 0.0,
                       gate: float | None = None):
    """One scene of :func:`_solve_error` (numpy in, numpy out, so a worker process can run
    it): its relative error with the weights ``w`` (2 x H x W: w_u-, w_v-) and that error's
    gradient with respect to them. With an object id image, each object is aligned on its
    own (:func:`synthetic.object_relative_error`): the offsets between objects are not
    the edge net's to learn (studies/object-aligned-edge-net/README.md). ``cap`` > 0: an
    object whose error exceeds it counts as ``cap`` with no gradient (errors no paired
    weights can mend, docs/decisions.md#sliver-attachments). ``gate``: the threshold of
    :func:`~fnin_cli.solvers.stage2.sliver_gate` applied to the weights (None: paired)."""
    system, lam = _numpy_system(normals, mask, K, pixel)
    m = system.mask
    zr = zr_img.astype(np.float64)[m]
    paired = bini_layout(w[0][m], w[1][m])
    weights = paired if gate is None else sliver_gate(system, paired, gate)
    A, b, ref = anchored(system, FixedWeights(weights), lam, zr).normal_equations()   # Stage II's objective
    M = amg_preconditioner(A)
    z, _, _ = pcg(A, b, zr, M, rtol=1e-6, ref_norm=ref)
    gt = zgt_img.astype(np.float64)[m]
    groups = object_groups(None if objects_img is None else objects_img[m])
    loss, dz = 0.0, np.zeros_like(z)
    for g in groups:
        err = (z[g] - z[g].mean()) - (gt[g] - gt[g].mean())
        spread = max(float(np.mean(np.abs(gt[g] - gt[g].mean()))), 1e-12)
        e = float(np.mean(np.abs(err))) / spread
        if cap and e > cap:
            loss += cap / len(groups)
            continue
        sgn = np.sign(err)
        loss += e / len(groups)
        dz[g] = (sgn - sgn.mean()) / (err.size * spread * len(groups))
    grad = np.zeros_like(w)
    if not dz.any():            # every object capped: no gradient
        return loss, grad
    adj, _, _ = pcg(A, dz, np.zeros_like(dz), M, rtol=1e-6)
    g = system.weight_gradients(z, adj)
    if gate is not None:
        g = _sliver_gate_backward(system, paired, gate, g)
    grad[0][m] = g["u-"] - g["u+"]      # w_u+ = 1 - w_u-
    grad[1][m] = g["v-"] - g["v+"]
    return loss, grad


def _sliver_gate_backward(system: NormalSystem, paired: dict, threshold: float, upstream: dict) -> dict:
    """dL/d(paired weights) given dL/d(gated weights) ``upstream``: the chain rule through
    :func:`~fnin_cli.solvers.stage2.sliver_gate` (gate = min(max(a, b) / t, 1), a and b
    the neighbours' paired weights towards the pixel)."""
    out = dict(upstream)
    for axis, lo, hi in (("u", system.hp, system.hq), ("v", system.vp, system.vq)):
        plus, minus = axis + "+", axis + "-"
        a, b = neighbour_weights(system, paired, axis)
        top = np.maximum(a, b)
        gate = np.minimum(top / threshold, 1.0)
        out[plus] = upstream[plus] * gate
        out[minus] = upstream[minus] * gate
        d_top = (upstream[plus] * paired[plus] + upstream[minus] * paired[minus]) * (top < threshold) / threshold
        from_a = d_top * (a >= b)                  # the pixel's gate followed its lower neighbour
        from_b = d_top * (b > a)
        out[plus][lo] += from_a[hi]
        out[minus][hi] += from_b[lo]
    return out


_SOLVE_POOLS: dict = {}


def solve_pool(workers: int):
    """A process pool (spawned once per size, one BLAS thread each) for the solve objective's
    per-scene solves; :func:`close_solve_pools` ends them."""
    if workers not in _SOLVE_POOLS:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        _SOLVE_POOLS[workers] = ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"),
                                                    initializer=_one_thread)
    return _SOLVE_POOLS[workers]


def _one_thread():
    torch.set_num_threads(1)


def close_solve_pools():
    """Shut down the worker pools of the solve objective."""
    while _SOLVE_POOLS:
        _SOLVE_POOLS.popitem()[1].shutdown(wait=True, cancel_futures=True)


def step_loss(model, lv, z_gt, cfg: TrainConfig, teacher=None):
    """The training loss of one batch for ``cfg``'s stage (and edge objective)."""
    if cfg.stage != "edges":
        return batch_loss(model, lv, z_gt, cfg.gamma)[0]
    z_r, logits = _edge_logits(model, lv, cfg)       # once, for both parts of the objective
    if cfg.edge_objective != "solve":
        return _bce_to_bini(logits, lv, z_gt, cfg, teacher)
    loss = _solve_error(logits, lv, z_r, z_gt, cfg.solve_workers, cfg.solve_cap, cfg.solve_gate)
    # the anchor's targets: the teacher's weights where the run has one, else the true unknown's
    return loss + cfg.solve_bce * _bce_to_bini(logits, lv, z_gt, cfg, teacher) if cfg.solve_bce else loss
