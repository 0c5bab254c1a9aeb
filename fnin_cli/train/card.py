"""The model card: Markdown from the JSON card written with the weights.
"""

from __future__ import annotations

from .config import TEACHER_TARGETS, VAL_SEED0


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
  and 20% orthographic; normal noise, outliers and zeroed patches on the input.{_meshes(card)}
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


def _meshes(card: dict) -> str:
    """The real-mesh data line of a card ('' for procedural scenes only)."""
    cfg = card["train_config"]
    if not cfg.get("meshes"):
        return ""
    m = card.get("meshes") or {}
    train = ", ".join(m.get("train", [])) or "?"
    val = ", ".join(m.get("validation", [])) or "?"
    line = (f"\n- **Meshes**: {cfg.get('mesh_prob', 0.0):.0%} of the scenes rendered from `{cfg['meshes']}` "
            f"(`data.mesh_scenes.make_mesh_scene`, the mesh/procedural choice drawn per seed), training "
            f"split only: {train}. Validation meshes, never trained on: {val}")
    if cfg.get("val_mesh_scenes"):
        line += f" ({cfg['val_mesh_scenes']} validation scenes rendered from them)"
    return line + "."


def _teacher(cfg: dict) -> str:
    target = cfg.get("edge_target", "true")
    if cfg.get("stage") != "edges" or target not in TEACHER_TARGETS:
        return ""
    cache = cfg.get('teacher_cache') or 'runs/teacher_cache'
    if target == "rounds":
        start = cfg.get("init_edges") or cfg.get("base")
        return (f"\n- **Teacher**: BiNI's weights (k = 2) at the end of FNIN with `{start}` followed by "
                f"{cfg.get('teacher_rounds', 16)} BiNI rounds on each training scene's normals "
                f"(`train.feed.teacher_weights`), cached in `{cache}`.")
    return (f"\n- **Teacher**: the weights the project's `bini` (k = 2, from z = 0) converges to on each "
            f"training scene's normals (`train.feed.teacher_weights`), cached in `{cache}`.")


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
  on {cfg['val_scenes']} fixed synthetic scenes{_val_meshes(cfg)} at {cfg['val_res']}x{cfg['val_res']}
  (seeds from {VAL_SEED0}, never trained on): step {card['selected_step']}, {card['val_rel_error']:.4f}.
  DiLiGenT was not used for training or selection.
- **First losses** (for the determinism test): {', '.join(f'{x:.6f}' for x in card['first_losses'])}.
- **Loss curve**: `fnin_curve.png`.

| step | validation end-to-end rel. error |
|---|---|
{val}"""


def _val_meshes(cfg: dict) -> str:
    n = cfg.get("val_mesh_scenes", 0)
    return f" and {n} scenes rendered from the validation meshes (each object aligned on its own)" if n else ""


def _objective(cfg: dict, gate: float | None = None) -> str:
    """The edge net's objective in words; ``gate``: the sliver gate the solve applied."""
    if cfg.get("edge_objective", "bce") == "solve":
        targets = ("the teacher's weights" if cfg.get("edge_target", "true") in TEACHER_TARGETS
                   else "BiNI's weights of the true unknown")
        anchor = f", plus {cfg['solve_bce']} x the cross-entropy to {targets}" if cfg.get("solve_bce") else ""
        objects = (", each object of a mesh scene aligned on its own"
                   if cfg.get("meshes") and cfg.get("mesh_prob", 0) > 0 else "")
        cap = (f" (an object's error above {cfg['solve_cap']} counted as {cfg['solve_cap']}, without gradient)"
               if cfg.get("solve_cap") else "")
        gated = f" and sliver-gated at t = {gate}" if gate is not None else ""
        return (f"the relative error of Stage II's solution with these weights (sharpened{gated} as at "
                f"inference){objects}{cap}, differentiated through the solve (`train.solve_loss`){anchor}")
    if cfg.get("edge_target", "true") in TEACHER_TARGETS:
        return (f"the teacher's weights as targets, binary cross-entropy weighted by "
                f"1 + {cfg['edge_alpha']} |2t - 1|")
    return (f"BiNI's weights of the *true* unknown (k = 2) as targets, binary cross-entropy "
            f"weighted by 1 + {cfg['edge_alpha']} |2t - 1|")


def _method_label(method: str, refine) -> str:
    if method == "default":
        return "`fnin` (the default)"
    if method == "fnin" and refine == 0:
        return "`fnin --refine 0` (one-shot)"
    return f"`{method}`" + (f" `--refine {refine}`" if refine else "")


def _measured(card: dict) -> str:
    """The card's "Measured with these weights" section: ``card["measured"]`` (written by
    ``benchmarks/card_measurements.py`` from `fnin bench` runs of these very weights); ''
    for a card without one (every card `fnin train` writes)."""
    m = card.get("measured")
    if not m:
        return ""
    rows, commands = [], []
    for run in m["runs"]:
        for method, v in run["means"].items():
            rows.append(f"| {run['dataset']} ({v['cases']} cases) | {_method_label(method, run['refine'])} | "
                        f"{v['made_mm']:.3f} | {v['seconds_total']:.2f} |")
        commands.append(f"    {run['command']}    # {run['date'][:10]}, {run['machine']}")
    note = f"\n{m['note']}\n" if m.get("note") else ""
    return ("\n## Measured with these weights\n" + note + """
Mean MADE (mm, each case aligned as in `fnin bench`) and total seconds of `integrate`,
from `fnin bench` runs whose records carry this file's sha256:

| data | method | mean MADE | seconds |
|---|---|---|---|
""" + "\n".join(rows) + "\n\n" + "\n".join(commands) + "\n")


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
  noise, outlier and zeroed-patch model as Stage I.{_meshes(card)}{_teacher(cfg)}
- **Input**: Stage I's unknown z_R at a network cap of {cfg['side']} px, upsampled to full
  resolution, with the normals (`model.layers.edge_features`). **Output**: BiNI's weights
  w_u-, w_v- per pixel. **Objective**: {_objective(cfg, card.get('stage2_sliver_gate'))}.
- **Network**: {len(net['edge_dilations'])} dilated 3x3 conv layers (dilations
  {', '.join(str(d) for d in net['edge_dilations'])}), width {net['edge_width']}, GELU, 1x1 output.
- **Optimiser**: AdamW, lr {cfg['lr']} with {cfg['warmup']} warm-up steps, x{cfg['decay']} every
  {cfg['decay_every']} steps, weight decay {cfg['weight_decay']}, gradient clip {cfg['grad_clip']}.
{_selection(card, "one Stage II solve")}
{_measured(card)}
{stage1}"""
