"""Training FNIN on synthetic scenes (`fnin train`).

Two stages, each its own run: ``stage="network"`` trains Stage I (the FNO pyramid and
its attention net) with the detail-weighted loss; ``stage="edges"`` freezes a trained
Stage I (``base``) and trains the full-resolution edge net to give BiNI's weights of the
true surface (``network.bini_targets``) from the network's z_R, selecting on the
end-to-end error of one Stage II solve.

Deterministic on CPU for a given seed and thread count: scene ``i`` of step ``s`` is
``make_scene(seed * 1_000_003 + s * batch + i)``; validation scenes use a disjoint
fixed seed range. Checkpoints (model, optimiser, step, log) go to ``run_dir`` and a
run resumes from them. The final weights are written as safetensors next to a JSON
model card; ``fnin_cli/weights/`` holds the shipped ones.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from .errors import FninError
from .network import (FNINet, Level, NetConfig, bini_targets, count_parameters, detail_weighted_loss,
                      masked_mean, net_config)
from .synthetic import make_scene, scene_arrays

VAL_SEED0 = 900_000_000


@dataclass
class TrainConfig:
    seed: int = 0
    steps: int = 3000
    batch: int = 8
    res: int = 128                    # training resolution (square)
    fine_res: int = 192               # last ``fine_steps`` steps at this resolution (3 scales)
    fine_steps: int = 300
    lr: float = 2e-3
    weight_decay: float = 1e-4
    decay_every: int = 200            # lr *= decay each this many steps (an "epoch")
    decay: float = 0.9
    warmup: int = 50
    gamma: float = 0.25
    grad_clip: float = 1.0
    val_every: int = 100
    val_scenes: int = 24
    val_res: int = 128
    ckpt_every: int = 100
    threads: int = 2
    stack_prob: float = 0.0           # share of stacked scenes (synthetic.make_scene)
    fold_prob: float = 0.0            # share of fold (self-occluding surface) scenes
    device: str = "cpu"               # cpu or cuda (TF32 off, so CPU and GPU losses agree)
    workers: int = 0                  # processes generating scenes ahead (0: in the loop)
    stage: str = "network"            # "network" (Stage I) or "edges" (edge net on a frozen Stage I)
    base: str = ""                    # edges: the weights it starts from
    init_edges: str = ""              # edges: start from this file's edge net (fine-tuning; "" = fresh)
    side: int = 64                    # edges: network cap giving z_R, as fnin.NETWORK_SIDE at inference
    edge_alpha: float = 10.0          # edges: extra loss weight on confident targets (|2t - 1|)
    edge_objective: str = "bce"       # edges: "bce" (BiNI's weights of the true unknown as targets) or
                                      # "solve" (Stage II's error, differentiated through the solve)
    solve_workers: int = 0            # edges, "solve": processes for the per-scene solves (0: in
                                      # the loop; the same numbers either way)
    solve_bce: float = 0.0            # edges, "solve": plus this times the "bce" loss (an anchor to
                                      # BiNI's weights where the solve's error says little)
    net: NetConfig = field(default_factory=NetConfig)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        """A config from its JSON form; keys of removed experiments are accepted at their
        "off" value (``LEGACY_TRAIN_KEYS``) and refused otherwise (ValueError)."""
        d = dict(d)
        net = d.pop("net", {})
        for key, off in LEGACY_TRAIN_KEYS.items():
            if key in d and d.pop(key) not in off:
                raise ValueError(f"train config '{key}': a removed experiment; use one of {off} or drop it")
        try:
            return cls(net=net_config(net), **d)
        except FninError as exc:
            raise ValueError(str(exc)) from None

    def to_dict(self):
        return asdict(self)


# keys of removed experiments (learned rounds, coarse edge branch) and their "off" values
LEGACY_TRAIN_KEYS = {"init_round": ("edges", ""), "edge_train": ("all",)}


def _scene(seed, res, stack_prob, fold_prob=0.0):
    return scene_arrays(make_scene(int(seed), res, stack_prob=stack_prob, fold_prob=fold_prob))


def make_batch(seeds, res, stack_prob: float = 0.0, device="cpu", fold_prob: float = 0.0):
    """The scenes of ``seeds`` as one network input level and the true unknown."""
    return collate([_scene(s, res, stack_prob, fold_prob) for s in seeds], device)


def collate(arrs, device="cpu"):
    """Stack :func:`synthetic.scene_arrays` outputs into (Level, true unknown) on ``device``."""
    n = torch.from_numpy(np.stack([a[0] for a in arrs]))
    m = torch.from_numpy(np.stack([a[1] for a in arrs]))[:, None]
    z = torch.from_numpy(np.stack([a[2] for a in arrs]))[:, None]
    K = torch.from_numpy(np.stack([a[3] for a in arrs]))
    pix = torch.from_numpy(np.stack([a[4] for a in arrs]))
    return Level(n.to(device), m.to(device), K.to(device), pix.to(device)), z.to(device)


class SceneFeed:
    """Training batches in step order. With ``workers`` > 0, a process pool renders the
    scenes of the next ``ahead`` steps while the current one trains; the scenes are the
    same either way (each is a function of its seed), so the run stays deterministic."""

    def __init__(self, cfg: "TrainConfig", ahead: int = 4):
        self.cfg, self.ahead = cfg, ahead
        self.pool = None
        self.pending = {}
        if cfg.workers > 0:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(cfg.workers, mp_context=mp.get_context("spawn"))

    def _spec(self, step):
        cfg = self.cfg
        res = cfg.fine_res if step >= cfg.steps - cfg.fine_steps else cfg.res
        return [cfg.seed * 1_000_003 + step * cfg.batch + i for i in range(cfg.batch)], res

    def batch(self, step):
        cfg = self.cfg
        if self.pool is None:
            seeds, res = self._spec(step)
            return make_batch(seeds, res, cfg.stack_prob, cfg.device, fold_prob=cfg.fold_prob)
        for s in range(step, min(step + self.ahead + 1, cfg.steps)):
            if s not in self.pending:
                seeds, res = self._spec(s)
                self.pending[s] = [self.pool.submit(_scene, x, res, cfg.stack_prob, cfg.fold_prob) for x in seeds]
        return collate([f.result() for f in self.pending.pop(step)], cfg.device)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


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


def _bce_to_bini(logits, lv, z_gt, cfg: "TrainConfig"):
    with torch.no_grad():
        target = bini_targets(z_gt, lv)
    return weighted_bce(logits, target, lv.mask, cfg.edge_alpha)


def weighted_bce(logits, target, mask, alpha: float):
    """Per-scene mean over the mask of BCE weighted by 1 + alpha |2t - 1|, averaged over scenes."""
    import torch.nn.functional as F

    weight = (1.0 + alpha * (2.0 * target - 1.0).abs()) * mask
    bce = F.binary_cross_entropy_with_logits(logits, target, weight=weight, reduction="none")
    return (bce.sum(dim=(1, 2, 3)) / (2.0 * mask.sum(dim=(1, 2, 3)).clamp_min(1.0))).mean()


def _scene_system(lv, b: int, z_r):
    """One scene of a batch as numpy: (its Level, NormalSystem, lam, z_R over the mask)."""
    one = Level(lv.normals[b:b + 1], lv.mask[b:b + 1], lv.K[b:b + 1], lv.pixel[b:b + 1])
    system, lam = _numpy_system(*_scene_numpy(lv, b))
    return one, system, lam, z_r[b, 0].detach().cpu().numpy().astype(np.float64)[system.mask]


def _scene_numpy(lv, b: int) -> tuple:
    """(normals HxWx3, mask, K, pixel size) of scene ``b`` as numpy: what a NormalSystem needs."""
    return (lv.normals[b].permute(1, 2, 0).cpu().numpy(), lv.mask[b, 0].cpu().numpy() > 0,
            lv.K[b].cpu().numpy(), float(lv.pixel[b]))


def _numpy_system(normals, mask, K, pixel):
    """The scene's NormalSystem and its classic prior weight lam."""
    from .camera import Camera
    from .pipeline import classic_lambda
    from .wls import NormalSystem

    K = K.astype(np.float64)
    cam = Camera(K) if K[0, 0] > 0 else Camera(None, pixel)
    return NormalSystem(normals.astype(np.float64), mask, cam), classic_lambda(cam, mask.shape)


def solve_loss(model, lv, z_gt, cfg: "TrainConfig"):
    """The edge net's end-to-end objective: the relative error (``synthetic.relative_error``)
    of Stage II's solution with its weights, sharpened as at inference, differentiated
    through the solve. A(w) z = b(w) gives dL/dw_d = -(a D_d l) r_d(z) with A l = dL/dz
    (``NormalSystem.weight_gradients``): one more solve per scene, same AMG hierarchy.
    Returns a tensor with the batch mean as value and that gradient."""
    z_r, logits = _edge_logits(model, lv, cfg)
    return _solve_error(logits, lv, z_r, z_gt, cfg.solve_workers)


def _solve_error(logits, lv, z_r, z_gt, workers: int = 0):
    from .fnin import EDGE_SHARPNESS

    w = torch.sigmoid(EDGE_SHARPNESS * logits) * lv.mask   # fnin.sharpen of the sigmoid
    w_np = w.detach().double().cpu().numpy()
    batch = w_np.shape[0]
    zr_np = z_r.detach().cpu().numpy()
    zgt_np = z_gt.detach().cpu().numpy()
    jobs = [(*_scene_numpy(lv, b), w_np[b], zr_np[b, 0], zgt_np[b, 0]) for b in range(batch)]
    if workers > 0:
        results = list(solve_pool(workers).map(_scene_solve_error, *zip(*jobs)))
    else:
        results = [_scene_solve_error(*job) for job in jobs]
    grads = np.zeros_like(w_np)
    for b, (_, g) in enumerate(results):
        grads[b] = g / batch
    surrogate = (w * torch.from_numpy(grads).to(w)).sum()
    return surrogate - surrogate.detach() + float(np.mean([loss for loss, _ in results]))


def _scene_solve_error(normals, mask, K, pixel, w, zr_img, zgt_img):
    """One scene of :func:`_solve_error` (numpy in, numpy out, so a worker process can run
    it): its relative error with the weights ``w`` (2 x H x W: w_u-, w_v-) and that error's
    gradient with respect to them."""
    from .solvers import bini_layout
    from .wls import amg_preconditioner, pcg

    system, lam = _numpy_system(normals, mask, K, pixel)
    m = system.mask
    zr = zr_img.astype(np.float64)[m]
    weights = bini_layout(w[0][m], w[1][m])
    A = system.matrix(weights, lam)
    rhs = system.rhs(weights, lam, None)
    M = amg_preconditioner(A)
    z, _, _ = pcg(A, rhs + lam * zr, zr, M, rtol=1e-6, ref_norm=float(np.sqrt(rhs @ rhs)))
    gt = zgt_img.astype(np.float64)[m]
    err = (z - z.mean()) - (gt - gt.mean())
    spread = max(float(np.mean(np.abs(gt - gt.mean()))), 1e-12)
    sgn = np.sign(err)
    dz = (sgn - sgn.mean()) / (err.size * spread)
    adj, _, _ = pcg(A, dz, np.zeros_like(dz), M, rtol=1e-6)
    g = system.weight_gradients(z, adj)
    grad = np.zeros_like(w)
    grad[0][m] = g["u-"] - g["u+"]      # w_u+ = 1 - w_u-
    grad[1][m] = g["v-"] - g["v+"]
    return float(np.mean(np.abs(err))) / spread, grad


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
    while _SOLVE_POOLS:
        _SOLVE_POOLS.popitem()[1].shutdown(wait=True, cancel_futures=True)


@torch.no_grad()
def validate_edges(model, cfg: "TrainConfig") -> float:
    """End-to-end relative error of ``fnin`` (a Stage II solve with the edge net's
    weights) on the fixed validation scenes, as
    :func:`synthetic.relative_error`."""
    from .pipeline import build_input, integrate
    from .synthetic import relative_error

    model.eval()
    errs = []
    for i in range(cfg.val_scenes):
        sc = make_scene(VAL_SEED0 + i, cfg.val_res, stack_prob=cfg.stack_prob, fold_prob=cfg.fold_prob)
        inp = build_input(sc.normals, None, sc.mask, sc.K)
        # Stage II by AMG on the CPU wherever the network trains (as inference on a CPU)
        z = integrate(inp, "fnin", model=model, network_side=cfg.side, solver="amg").z
        errs.append(relative_error(z[inp.mask], sc.unknown[inp.mask]))
    model.train()
    return float(np.mean(errs))


@torch.no_grad()
def validate(model, cfg: TrainConfig):
    """Stage I relative error on the fixed validation scenes (finest scale).

    rel = mean |z - z_gt| / mean |z_gt - mean(z_gt)| after removing means; the trivial
    constant-depth answer scores 1.0.
    """
    model.eval()
    errs = []
    for i in range(0, cfg.val_scenes, 8):
        seeds = range(VAL_SEED0 + i, VAL_SEED0 + min(i + 8, cfg.val_scenes))
        lv, zg = make_batch(seeds, cfg.val_res, cfg.stack_prob, cfg.device, fold_prob=cfg.fold_prob)
        z = model(lv, with_attention=False)[-1][1]
        m = lv.mask
        zc = (zg - masked_mean(zg, m)) * m
        num = masked_mean(((z - masked_mean(z, m)) - zc).abs() * m, m).view(-1)
        den = masked_mean(zc.abs(), m).view(-1).clamp_min(1e-9)
        errs.append((num / den).cpu().numpy())
    model.train()
    return float(np.mean(np.concatenate(errs)))


def lr_at(cfg: TrainConfig, step: int) -> float:
    warm = min(1.0, (step + 1) / max(1, cfg.warmup))
    return cfg.lr * warm * cfg.decay ** (step // cfg.decay_every)


def git_commit() -> str:
    """The commit of this checkout; ``FNIN_COMMIT`` overrides it (for machines whose copy of
    the tree carries no, or a stale, ``.git``: the lent GPU reported an old commit)."""
    import os

    if os.environ.get("FNIN_COMMIT"):
        return os.environ["FNIN_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, timeout=5).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def train(cfg: TrainConfig, run_dir, out=None, resume: bool = True, progress=None, command: str = "",
          max_seconds: float | None = None) -> dict:
    """Train (or resume) and return the summary dict. ``progress(step, loss, val)`` is called each step."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device)
    if device.type == "cuda":
        # full float32 matmuls/convolutions: GPU losses then track the CPU ones (and
        # inference, fnin.stage1, also runs without TF32)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model = build_model(cfg).to(device)  # initialised on the CPU generator, then moved
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=cfg.lr,
                            weight_decay=cfg.weight_decay)
    ckpt = run_dir / "checkpoint.pt"
    log = {"loss": [], "val": [], "seconds": 0.0}
    start = 0
    if resume and ckpt.exists():
        state = torch.load(ckpt, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])  # moves the optimiser state to the parameters' device
        start = int(state["step"])
        log = json.loads((run_dir / "log.json").read_text())
    log.setdefault("commit", git_commit())  # the code the run started from
    if command:
        log.setdefault("commands", []).append(command)   # every invocation of a resumed run
        log.setdefault("command_commits", []).append(git_commit())
    if cfg.stage == "edges":
        # what the run starts from, recorded once: cfg.base may be overwritten (shipped)
        # before a resumed run exports, and the card must name the run's real start
        log.setdefault("base", base_record(cfg.base))
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2))
    best = min((v for _, v in log["val"]), default=math.inf)
    t_start = time.perf_counter() - log["seconds"]
    feed = SceneFeed(cfg)
    try:
        _train_steps(cfg, model, opt, feed, log, run_dir, start, best, t_start, progress, max_seconds)
    finally:
        feed.close()
        close_solve_pools()
    best = min((v for _, v in log["val"]), default=math.inf)
    summary = {"steps_done": len(log["loss"]), "best_val": best, "seconds": log["seconds"]}
    if out is not None:
        best_state = run_dir / "best.pt"
        if best_state.exists():
            model.load_state_dict(torch.load(best_state, map_location=device, weights_only=True))
        summary.update(export(model.cpu(), cfg, log, out, command=command))
    return summary


def read_weights(path) -> tuple:
    """(NetConfig, state) of a weights file; ValueError if ``path`` is not a safetensors
    file with a network config."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as fh:
            net = json.loads((fh.metadata() or {}).get("net", "{}"))
        return net_config(net), load_file(str(path))
    except Exception as exc:
        raise ValueError(f"{path}: cannot read FNIN weights ({str(exc).splitlines()[0][:80]})") from None


def read_base(path) -> tuple:
    """(NetConfig without edge net, Stage I state) of trained weights (any edge net in
    them is dropped: the edges stage trains its own); ValueError as read_weights."""
    from dataclasses import replace

    cfg, state = read_weights(path)
    cfg = replace(cfg, edge_width=0, edge_dilations=NetConfig.edge_dilations)
    return cfg, {k: v for k, v in state.items() if not k.startswith("edges.")}


def build_model(cfg: TrainConfig) -> FNINet:
    """A fresh model for ``cfg``. The edges stage takes Stage I from ``cfg.base`` and
    freezes it (its config replaces ``cfg.net`` except the edge-net fields)."""
    from dataclasses import replace

    if cfg.stage == "network":
        return FNINet(cfg.net)
    if cfg.stage != "edges":
        raise ValueError(f"unknown stage '{cfg.stage}' (network or edges)")
    if cfg.edge_objective not in ("bce", "solve"):
        raise ValueError(f"unknown edge_objective '{cfg.edge_objective}' (bce or solve)")
    base_net, state = read_base(cfg.base)
    cfg.net = replace(base_net, edge_width=cfg.net.edge_width, edge_dilations=cfg.net.edge_dilations)
    model = FNINet(cfg.net)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("edges.") for k in missing):
        raise ValueError(f"{cfg.base}: not Stage I weights of this network")
    if cfg.init_edges:
        try:
            start = _sub_state(cfg.init_edges, "edges.")
            model.edges.load_state_dict(start)
        except Exception as exc:
            raise ValueError(f"{cfg.init_edges}: no edge net of this shape to start from "
                             f"({str(exc).splitlines()[0][:80]})") from None
    _train_only(model, "edges.")
    return model


def _sub_state(path, prefix: str) -> dict:
    from safetensors.torch import load_file

    return {k[len(prefix):]: v for k, v in load_file(str(path)).items() if k.startswith(prefix)}


def _train_only(model, prefix):
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith(prefix))


def step_loss(model, lv, z_gt, cfg: TrainConfig):
    """The training loss of one batch for ``cfg``'s stage (and edge objective)."""
    if cfg.stage != "edges":
        return batch_loss(model, lv, z_gt, cfg.gamma)[0]
    z_r, logits = _edge_logits(model, lv, cfg)       # once, for both parts of the objective
    if cfg.edge_objective != "solve":
        return _bce_to_bini(logits, lv, z_gt, cfg)
    loss = _solve_error(logits, lv, z_r, z_gt, cfg.solve_workers)
    return loss + cfg.solve_bce * _bce_to_bini(logits, lv, z_gt, cfg) if cfg.solve_bce else loss


def _train_steps(cfg, model, opt, feed, log, run_dir, start, best, t_start, progress, max_seconds):
    # max_seconds bounds this invocation; log["seconds"] also counts the runs it resumes
    t_here = time.perf_counter()
    for step in range(start, cfg.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step)
        lv, zg = feed.batch(step)
        loss = step_loss(model, lv, zg, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], cfg.grad_clip)
        opt.step()
        log["loss"].append([step + 1, loss.detach().item()])
        val = None
        if (step + 1) % cfg.val_every == 0 or step + 1 == cfg.steps:
            val = validate(model, cfg) if cfg.stage == "network" else validate_edges(model, cfg)
            log["val"].append([step + 1, val])
            if val < best:
                best = val
                torch.save(model.state_dict(), run_dir / "best.pt")
        log["seconds"] = time.perf_counter() - t_start
        if (step + 1) % cfg.ckpt_every == 0 or step + 1 == cfg.steps:
            _save_checkpoint(run_dir, model, opt, step + 1, log)
        if progress is not None:
            progress(step + 1, log["loss"][-1][1], val)
        if max_seconds is not None and time.perf_counter() - t_here > max_seconds:
            _save_checkpoint(run_dir, model, opt, step + 1, log)
            break


def _save_checkpoint(run_dir, model, opt, step, log):
    tmp = run_dir / "checkpoint.pt.part"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
    tmp.replace(run_dir / "checkpoint.pt")
    (run_dir / "log.json").write_text(json.dumps(log))


def export_paths(out) -> list:
    """Everything :func:`export` writes for weights ``out``."""
    out = Path(out)
    return [out, out.with_suffix(".json"), out.with_name("MODEL_CARD.md"), out.with_name(out.stem + "_curve.png"),
            out.with_name(out.stem + "_stage1_curve.png")]


def export(model, cfg: TrainConfig, log: dict, out, command: str = "") -> dict:
    """Write weights (safetensors), the model card (JSON) and the loss curve (PNG)."""
    from safetensors.torch import save_file

    from .plots import line_plot

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().float() for k, v in model.state_dict().items()}
    save_file(tensors, str(out), metadata={"net": json.dumps(cfg.net.to_dict())})
    sha = hashlib.sha256(out.read_bytes()).hexdigest()
    best_step, best_val = min(log["val"], key=lambda x: x[1]) if log["val"] else (None, None)
    card = {
        "weights": out.name,
        "sha256": sha,
        "parameters": count_parameters(model),
        "net": cfg.net.to_dict(),
        "train_config": cfg.to_dict(),
        "command": (log.get("commands") or [command])[0],
        "resumed_with": (log.get("commands") or [])[1:],
        "commit": log.get("commit") or git_commit(),
        "steps": len(log["loss"]),
        "wall_seconds": round(log["seconds"], 1),
        "machine": _machine(cfg),
        "data": "synthetic scenes from fnin_cli.synthetic.make_scene (seeded, generated on the fly)",
        "selected_step": best_step,
        "val_rel_error": best_val,
        "val_curve": log["val"],
        "first_losses": [x[1] for x in log["loss"][:5]],
    }
    if log.get("provenance_note"):
        card["provenance_note"] = log["provenance_note"]
    if log.get("command_commits"):
        card["resumed_commits"] = log["command_commits"][1:]
    if cfg.stage == "edges":
        base = Path(cfg.base)
        card["base"] = log.get("base") or base_record(base)
        base_is_edges = bool(card["base"]["card"]) and card["base"]["card"]["train_config"].get("stage") == "edges"
        # Stage I's curve: the base's own, or the one a fine-tuned base carries
        base_curve = base.with_name(base.stem + ("_stage1_curve.png" if base_is_edges else "_curve.png"))
        if base_curve.exists():
            out.with_name(out.stem + "_stage1_curve.png").write_bytes(base_curve.read_bytes())
    out.with_suffix(".json").write_text(json.dumps(card, indent=2))
    out.with_name("MODEL_CARD.md").write_text(model_card_markdown(card))
    losses = np.array([x[1] for x in log["loss"]])
    if losses.size:
        k = max(1, losses.size // 100)
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        series = {"train loss (smoothed)": (np.arange(smooth.size) + k, smooth)}
        if log["val"]:
            v = np.array(log["val"])
            series["val rel. error"] = (v[:, 0], v[:, 1])
        title = {"edges": "FNIN edge net training"}.get(cfg.stage, "FNIN training")
        line_plot(out.with_name(out.stem + "_curve.png"), series, title=title, xlabel="step",
                  logy=True)
    return {"weights": str(out), "sha256": sha}


def base_record(path) -> dict:
    """The weights a stage starts from: path, sha256 and their card (None without one)."""
    base = Path(path)
    card = base.with_suffix(".json")
    return {"weights": str(base), "sha256": hashlib.sha256(base.read_bytes()).hexdigest(),
            "card": json.loads(card.read_text()) if card.exists() else None}


def _machine(cfg: TrainConfig) -> str:
    where = f"{platform.processor() or platform.machine()}, {cfg.threads} threads"
    if cfg.device.startswith("cuda") and torch.cuda.is_available():
        where = f"{torch.cuda.get_device_name()} ({where} and {cfg.workers} scene workers)"
    return f"{where}, torch {torch.__version__}"


def model_card_markdown(card: dict) -> str:
    """Human-readable model card from the JSON card written by :func:`export`."""
    cfg = card["train_config"]
    if cfg.get("stage", "network") == "edges":
        return _edges_card_markdown(card)
    val = "\n".join(f"| {s} | {v:.4f} |" for s, v in card["val_curve"])
    return f"""# FNIN Stage I weights — model card

- **Weights**: `{card['weights']}` (safetensors, {card['parameters']:,} parameters,
  sha256 `{card['sha256']}`); loaded with `safetensors` (no pickle).
- **Produced by**: `{card['command']}` at commit `{card['commit']}`{_resumed(card)}, seed {cfg['seed']},
  {card['steps']} steps in {card['wall_seconds'] / 60:.1f} min on {card['machine']}.
- **Data**: {card['data']}. Training resolution {cfg['res']}x{cfg['res']} (pyramid down to
  {card['net']['min_side']}), batch {cfg['batch']}; perspective cameras from f = 0.8 W to 7 W
  and 20% orthographic; normal noise, outliers and zeroed patches on the input.
- **Network**: initial + iterative FNO (width {card['net']['width']}, {card['net']['layers']}
  Fourier layers, {card['net']['modes']} modes, Tucker rank fraction {card['net']['tucker']}),
  attention CNN (width {card['net']['att_width']}).
- **Optimiser**: AdamW, lr {cfg['lr']} with {cfg['warmup']} warm-up steps, x{cfg['decay']} every
  {cfg['decay_every']} steps, weight decay {cfg['weight_decay']}, gradient clip {cfg['grad_clip']};
  detail-weighted loss with gamma {cfg['gamma']}, summed over scales.
- **Selection**: the checkpoint with the lowest validation error on {cfg['val_scenes']} fixed
  synthetic scenes (seeds from {VAL_SEED0}, never trained on): step {card['selected_step']},
  relative Stage I error {card['val_rel_error']:.4f} (mean |z - z_gt| / mean |z_gt - mean|
  after removing means; a constant depth scores 1.0). DiLiGenT was not used for training or
  selection.
- **First losses** (for the determinism test): {', '.join(f'{x:.6f}' for x in card['first_losses'])}.
- **Loss curve**: `fnin_curve.png`.

| step | validation rel. error |
|---|---|
{val}
"""


def _resumed(card: dict) -> str:
    """The invocations that resumed the run, for the model card ('' for a run in one go)."""
    commits = card.get("resumed_commits") or []
    note = f" ({card['provenance_note']})" if card.get("provenance_note") else ""
    return "".join(f", resumed by `{c}`" + (f" at commit `{commits[i]}`" if i < len(commits) else "")
                   for i, c in enumerate(card.get("resumed_with") or [])) + note


def _init(cfg: dict) -> str:
    if not cfg.get("init_edges"):
        return "; edge net fresh"
    return f"; edge net fine-tuned from `{cfg['init_edges']}`"


def _demote(markdown: str) -> str:
    """Every heading one level down (a nested card)."""
    return "\n".join("#" + ln if ln.startswith("#") else ln for ln in markdown.splitlines())


def _selection(card: dict, solves: str) -> str:
    """The selection, first losses and validation table of an edges card."""
    cfg = card["train_config"]
    val = "\n".join(f"| {s} | {v:.4f} |" for s, v in card["val_curve"])
    return f"""- **Selection**: the checkpoint with the lowest end-to-end relative error of `fnin` ({solves})
  on {cfg['val_scenes']} fixed synthetic scenes at {cfg['val_res']}x{cfg['val_res']}
  (seeds from {VAL_SEED0}, never trained on): step {card['selected_step']}, {card['val_rel_error']:.4f}.
  DiLiGenT was not used for training or selection.
- **First losses** (for the determinism test): {', '.join(f'{x:.6f}' for x in card['first_losses'])}.
- **Loss curve**: `fnin_curve.png`.

| step | validation end-to-end rel. error |
|---|---|
{val}"""


def _objective(cfg: dict) -> str:
    if cfg.get("edge_objective", "bce") == "solve":
        anchor = (f", plus {cfg['solve_bce']} x the cross-entropy to BiNI's weights of the true unknown"
                  if cfg.get("solve_bce") else "")
        return ("the relative error of Stage II's solution with these weights (sharpened as at "
                f"inference), differentiated through the solve (`train.solve_loss`){anchor}")
    return (f"BiNI's weights of the *true* unknown (k = 2) as targets, binary cross-entropy "
            f"weighted by 1 + {cfg['edge_alpha']} |2t - 1|")


def _edges_card_markdown(card: dict) -> str:
    cfg = card["train_config"]
    net = card["net"]
    base = card["base"]
    stage1 = ""
    if base.get("card") and base["card"]["train_config"].get("stage") == "edges":
        # fine-tuned: the whole card of the model it started from, one heading level down
        inner = _demote(_edges_card_markdown(base["card"]))
        stage1 = inner.replace("## FNIN weights — model card", "## The model this one was fine-tuned from "
                               "(its Stage I kept, its edge net the starting point)", 1)
    elif base.get("card"):
        stage1 = model_card_markdown(base["card"]).replace("# FNIN Stage I weights — model card",
                                                           "## Stage I (frozen while the edge net trained)", 1)
        stage1 = stage1.replace("`fnin_curve.png`", "`fnin_stage1_curve.png`")
    return f"""# FNIN weights — model card

`{card['weights']}` (safetensors, {card['parameters']:,} parameters, sha256 `{card['sha256']}`;
loaded with `safetensors`, no pickle) holds two stages, trained one after the other by
`fnin train`: Stage I (the FNO pyramid, trained first, below) and the full-resolution
edge net that gives Stage II its weights.

## Edge net

- **Produced by**: `{card['command']}` at commit `{card['commit']}`{_resumed(card)}, seed {cfg['seed']},
  {card['steps']} steps in {card['wall_seconds'] / 60:.1f} min on {card['machine']}.
- **Starts from**: Stage I weights `{base['weights']}` (sha256 `{base['sha256']}`), frozen{_init(cfg)}.
- **Data**: {card['data']}: {cfg['res']}x{cfg['res']}, batch {cfg['batch']}, stacked scenes
  {cfg['stack_prob']:.0%}, fold (self-occluding) scenes {cfg['fold_prob']:.0%}; the same camera,
  noise, outlier and zeroed-patch model as Stage I.
- **Input**: Stage I's unknown z_R at a network cap of {cfg['side']} px, upsampled to full
  resolution, with the normals (`network.edge_features`). **Output**: BiNI's weights
  w_u-, w_v- per pixel. **Objective**: {_objective(cfg)}.
- **Network**: {len(net['edge_dilations'])} dilated 3x3 conv layers (dilations
  {', '.join(str(d) for d in net['edge_dilations'])}), width {net['edge_width']}, GELU, 1x1 output.
- **Optimiser**: AdamW, lr {cfg['lr']} with {cfg['warmup']} warm-up steps, x{cfg['decay']} every
  {cfg['decay_every']} steps, weight decay {cfg['weight_decay']}, gradient clip {cfg['grad_clip']}.
{_selection(card, "one Stage II solve")}

{stage1}"""
