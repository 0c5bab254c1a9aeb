"""Training FNIN on synthetic scenes (`fnin train`).

Two stages, each its own run: ``stage="network"`` trains Stage I (the FNO pyramid and
its attention net) with the detail-weighted loss; ``stage="edges"`` freezes a trained
Stage I (``base``) and trains the full-resolution edge net to give BiNI's weights of the
true surface (``model.geometry.bini_targets``) from the network's z_R, selecting on the
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
from pathlib import Path

import numpy as np
import torch

from ..data.synthetic import make_scene, object_relative_error
from ..model.fnin_net import count_parameters
from ..model.geometry import masked_mean
from ..pipeline import build_input, integrate
from ..plots import line_plot
from .build import build_model
from .card import model_card_markdown
from .config import TrainConfig, VAL_SEED0
from .feed import SceneFeed, make_batch, split_meshes
from .losses import close_solve_pools, step_loss


def validation_scenes(cfg: "TrainConfig", offset: int = 0):
    """The fixed validation scenes: ``val_scenes`` procedural ones, then ``val_mesh_scenes``
    rendered from the validation meshes only (never trained on)."""
    for i in range(cfg.val_scenes):
        yield make_scene(VAL_SEED0 + offset + i, cfg.val_res, stack_prob=cfg.stack_prob, fold_prob=cfg.fold_prob)
    if cfg.val_mesh_scenes and cfg.meshes:
        from ..data.mesh_scenes import make_mesh_scene

        val = split_meshes(cfg.meshes, validation=True)   # read once per process, not per validation
        for i in range(cfg.val_mesh_scenes):
            yield make_mesh_scene(VAL_SEED0 + offset + i, val, cfg.val_res)


@torch.no_grad()
def validate_edges(model, cfg: "TrainConfig") -> float:
    """End-to-end relative error of ``fnin`` (a Stage II solve with the edge net's
    weights) on the fixed validation scenes, as :func:`synthetic.relative_error`, each
    object of a mesh scene aligned on its own (:func:`synthetic.object_relative_error`)."""
    model.eval()
    errs = []
    for sc in validation_scenes(cfg):
        inp = build_input(sc.normals, None, sc.mask, sc.K)
        # Stage II by AMG on the CPU wherever the network trains (as inference on a CPU)
        z = integrate(inp, "fnin", model=model, network_side=cfg.side, solver="amg", refine=0).z
        ids = getattr(sc, "object_id", None)
        errs.append(object_relative_error(z[inp.mask], sc.unknown[inp.mask], None if ids is None else ids[inp.mask]))
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
    """Learning rate at ``step``: linear warm-up, then x ``decay`` every ``decay_every`` steps."""
    warm = min(1.0, (step + 1) / max(1, cfg.warmup))
    return cfg.lr * warm * cfg.decay ** (step // cfg.decay_every)


def git_commit() -> str:
    """The commit of this checkout; ``FNIN_COMMIT`` overrides it (for machines whose copy of
    the tree carries no ``.git``, or a stale one)."""
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


def _train_steps(cfg, model, opt, feed, log, run_dir, start, best, t_start, progress, max_seconds):
    # max_seconds bounds this invocation; log["seconds"] also counts the runs it resumes
    t_here = time.perf_counter()
    for step in range(start, cfg.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step)
        lv, zg, *teacher = feed.batch(step)
        loss = step_loss(model, lv, zg, cfg, teacher[0] if teacher else None)
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
        "data": "synthetic scenes from fnin_cli.data.synthetic.make_scene (seeded, generated on the fly)"
                + (f" and real-mesh scenes from {cfg.meshes}" if cfg.meshes and cfg.mesh_prob > 0 else ""),
        "selected_step": best_step,
        "val_rel_error": best_val,
        "val_curve": log["val"],
        "first_losses": [x[1] for x in log["loss"][:5]],
    }
    if cfg.meshes:
        card["meshes"] = mesh_split(cfg.meshes)
    if log.get("provenance_note"):
        card["provenance_note"] = log["provenance_note"]
    if log.get("command_commits"):
        card["resumed_commits"] = log["command_commits"][1:]
    if cfg.stage == "edges":
        if cfg.edge_objective == "solve":
            card["stage2_sliver_gate"] = cfg.solve_gate     # what the solve objective applied
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


def mesh_split(folder) -> dict:
    """The mesh folder of a run and its split: {"folder", "train": [...], "validation": [...]}."""
    from ..data.mesh_scenes import mesh_files, split_names

    train, val = split_names(mesh_files(folder))
    return {"folder": str(folder), "train": train, "validation": val}


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


def check_out(out, run_dir, force: bool = False) -> None:
    """Check the ``--out`` weights path before training (suffix, folder, no clobbering).

    Raises
    ------
    ValueError
        With the one-line message the CLI prints.
    """
    out, run_dir = Path(out), Path(run_dir)
    if out.suffix != ".safetensors":
        raise ValueError(f"{out}: --out must end in .safetensors")
    inside_run = out.parent.resolve() == run_dir.resolve() or run_dir.resolve() in out.parent.resolve().parents
    if not out.parent.is_dir() and not inside_run:
        raise ValueError(f"{out.parent}: output folder does not exist; create it first")
    existing = [str(x) for x in export_paths(out) if x.exists()]
    if existing and not force:
        raise ValueError(f"{existing[0]} exists; pass --force to overwrite (checked before training starts)")
