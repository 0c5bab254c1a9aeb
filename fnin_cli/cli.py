"""`fnin` command line: a thin Typer layer over the Python API."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Integrate surface-normal maps into depth maps and meshes (FNIN, BiNI, WLS).")


@app.callback()
def _root():
    """fnin: normal integration from the shell."""


def _die(message: str, code: int = 2):
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@app.command()
def train(
    config: Optional[Path] = typer.Option(None, "--config", help="JSON config (fields of TrainConfig)"),
    steps: Optional[int] = typer.Option(None, "--steps", help="total training steps"),
    out: Optional[Path] = typer.Option(None, "--out", help="final weights (.safetensors); card and curve beside it"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="run folder to resume from"),
    run_dir: Path = typer.Option(Path("runs/fnin"), "--run-dir", help="checkpoints and logs (ignored by git)"),
    seed: Optional[int] = typer.Option(None, "--seed"),
    res: Optional[int] = typer.Option(None, "--res", help="training resolution"),
    batch: Optional[int] = typer.Option(None, "--batch"),
    max_minutes: Optional[float] = typer.Option(None, "--max-minutes", help="stop (resumably) after this long"),
    json_out: bool = typer.Option(False, "--json", help="print a JSON summary on stdout"),
):
    """Train the Stage I network on generated synthetic scenes (CPU friendly, resumable)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .train import TrainConfig, train as run_train

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
    for key, val in (("steps", steps), ("seed", seed), ("res", res), ("batch", batch)):
        if val is not None:
            cfg_dict[key] = val
    try:
        cfg = TrainConfig.from_dict(cfg_dict)
    except TypeError as exc:
        _die(f"bad config: {exc}")
    command = "fnin " + " ".join(shlex.quote(a) for a in sys.argv[1:])
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


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def main():
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    app()


if __name__ == "__main__":
    main()
