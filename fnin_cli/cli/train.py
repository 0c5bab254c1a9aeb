"""`fnin train`: parse, validate, train, print.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ..errors import FninError
from .app import _command_line, _die, _stderr_console, app

@app.command()
def train(
    ctx: typer.Context,
    config: Optional[Path] = typer.Option(None, "--config", help="JSON config (fields of TrainConfig)"),
    steps: Optional[int] = typer.Option(None, "--steps", help="total training steps"),
    out: Optional[Path] = typer.Option(None, "--out", help="final weights (.safetensors); card and curve beside it"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="run folder to resume from"),
    run_dir: Path = typer.Option(Path("runs/fnin"), "--run-dir", help="checkpoints and logs (ignored by git)"),
    seed: Optional[int] = typer.Option(None, "--seed"),
    res: Optional[int] = typer.Option(None, "--res", help="training resolution"),
    batch: Optional[int] = typer.Option(None, "--batch"),
    max_minutes: Optional[float] = typer.Option(None, "--max-minutes",
                                                help="stop (resumably) after this long (this invocation)"),
    device: Optional[str] = typer.Option(None, "--device", help="cpu (default) or cuda"),
    workers: Optional[int] = typer.Option(None, "--workers", help="processes rendering scenes ahead (0: none)"),
    base: Optional[Path] = typer.Option(None, "--base", help="edges stage: the trained weights to start from"),
    force: bool = typer.Option(False, "--force", help="overwrite existing --out weights and their card"),
    json_out: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
):
    """Train FNIN on generated synthetic scenes (CPU friendly, resumable): Stage I; with a
    config of "stage": "edges" and --base, the edge net on a trained Stage I."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ..train.config import TrainConfig
    from ..train.loop import train as run_train

    cfg_dict = {}
    if resume is not None:
        run_dir = resume
        if (resume / "config.json").exists():
            cfg_dict = json.loads((resume / "config.json").read_text())
    if config is not None:
        try:
            cfg_dict.update(json.loads(config.read_text()))
        except (OSError, ValueError) as exc:
            _die(f"{config}: cannot read config ({exc})")
    for key, val in (("steps", steps), ("seed", seed), ("res", res), ("batch", batch), ("device", device),
                     ("workers", workers), ("base", None if base is None else str(base))):
        if val is not None:
            cfg_dict[key] = val
    try:
        cfg = TrainConfig.from_dict(cfg_dict)
    except (TypeError, ValueError) as exc:
        _die(f"bad config: {exc}")
    if cfg.workers < 0:
        _die("--workers must be 0 or more")
    if cfg.stage not in ("network", "edges"):
        _die(f"stage '{cfg.stage}': use network or edges")
    if cfg.stage != "network":
        from ..train.build import build_model

        if not Path(cfg.base).is_file():
            _die(f"{cfg.base or '(none)'}: the {cfg.stage} stage needs --base, the trained weights to start from")
        try:   # --base (and init_edges) fit, before the progress bar; on a copy (it sets cfg.net)
            build_model(TrainConfig.from_dict(cfg.to_dict()))
        except (ValueError, OSError) as exc:
            _die(str(exc))
    if cfg.device not in ("cpu", "cuda") and not cfg.device.startswith("cuda:"):
        _die(f"--device {cfg.device}: training runs on cpu or cuda")
    if cfg.device.startswith("cuda"):
        from ..model.weights import resolve_device

        try:
            resolve_device("cuda")
        except FninError as exc:
            _die(str(exc))
    if out is not None:
        from ..train.loop import export_paths

        if out.suffix != ".safetensors":
            _die(f"{out}: --out must end in .safetensors")
        inside_run = out.parent.resolve() == run_dir.resolve() or run_dir.resolve() in out.parent.resolve().parents
        if not out.parent.is_dir() and not inside_run:
            _die(f"{out.parent}: output folder does not exist; create it first")
        existing = [str(x) for x in export_paths(out) if x.exists()]
        if existing and not force:
            _die(f"{existing[0]} exists; pass --force to overwrite (checked before training starts)")
    command = _command_line(ctx)
    with Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=_stderr_console(), disable=json_out) as prog:
        task = prog.add_task("train", total=cfg.steps, info="")
        last_val = [None]

        def cb(step, loss, val):
            if val is not None:
                last_val[0] = val
            v = f" val {last_val[0]:.4f}" if last_val[0] is not None else ""
            prog.update(task, completed=step, info=f"loss {loss:.4f}{v}")

        summary = run_train(cfg, run_dir, out=out, resume=True, progress=cb, command=command,
                            max_seconds=None if max_minutes is None else max_minutes * 60)
    if json_out:
        print(json.dumps(summary))
    else:
        typer.echo(f"done: {summary}", err=True)
