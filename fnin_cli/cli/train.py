"""`fnin train`: parse, validate, train, print.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from .app import FninCommand, app, command_line, die, stderr_console


@app.command(cls=FninCommand)
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
    meshes: Optional[Path] = typer.Option(None, "--meshes", help="folder of meshes: render scenes from its "
                                          "training split (mixed with procedural ones; mesh_prob 0.5 unless "
                                          "the config sets it)"),
    force: bool = typer.Option(False, "--force", help="overwrite existing --out weights and their card"),
    json_out: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
):
    """Train FNIN on generated synthetic scenes (CPU friendly, resumable): Stage I; with a
    config of "stage": "edges" and --base, the edge net on a trained Stage I."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ..train.build import check_config
    from ..train.config import load_config
    from ..train.loop import check_out, train as run_train

    if resume is not None:
        run_dir = resume
    overrides = {"steps": steps, "seed": seed, "res": res, "batch": batch, "device": device, "workers": workers,
                 "base": None if base is None else str(base)}
    if meshes is not None:
        overrides["meshes"] = str(meshes)
    try:
        cfg = load_config(config, resume, overrides)
        if meshes is not None and cfg.mesh_prob == 0.0:
            cfg.mesh_prob = 0.5
        check_config(cfg)
        if out is not None:
            check_out(out, run_dir, force)
    except ValueError as exc:
        die(str(exc))
    command = command_line(ctx)
    with Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[info]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=stderr_console(), disable=json_out) as prog:
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
        typer.echo(f"done: {summary}")   # the result on stdout, progress on stderr
