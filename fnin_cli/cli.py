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


_INTEGRATE_HELP = """Integrate normal maps into meshes and depth maps.

INPUT is a normal-map file (.exr .png .npy .tif .tiff), a folder in the DiLiGenT/BiNI
layout (normal_map.png, optional mask.png and K.txt) or a glob pattern (quote it to let
fnin expand it). Files named normal_map.* take their folder's name for outputs.

\b
Outputs (all written atomically; an existing file needs --force):
  -o FILE          one input: a mesh (.ply .obj) or a depth map (.exr .npy .png .tif)
  --out-dir DIR    any number of inputs: DIR/<name>.<format> (--format, default ply)
  --depth/--weights/--preview  extra files: a path (one input), a suffix such as
                   '.exr' (-> <name>_depth.exr beside the main output) or a template
                   such as '{stem}_d.npy'.
  With no output option at all, <name>.ply is written to the current folder.

\b
Exit codes: 0 every input done, 1 some input failed (the others are written),
2 usage error (nothing computed), 130 interrupted. --json prints one JSON object
per input on stdout; messages, progress and the summary go to stderr.
"""


@app.command("integrate", help=_INTEGRATE_HELP, no_args_is_help=True)
def integrate_cmd(
    inputs: list[str] = typer.Argument(..., metavar="INPUT...", show_default=False,
                                       help="normal-map files, DiLiGenT-layout folders or glob patterns"),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="output file for one input (.ply .obj mesh, "
                                       ".exr .npy .png .tif depth)"),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="folder for the outputs of several inputs"),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="main output type with --out-dir: "
                                      "ply (default), obj, exr, npy, png, tif"),
    mask: Optional[Path] = typer.Option(None, "--mask", help="mask image (white = object); overrides a folder's"),
    K: Optional[Path] = typer.Option(None, "--K", help="3x3 intrinsics text file (perspective); overrides a folder's"),
    fx: Optional[float] = typer.Option(None, "--fx", help="focal length in pixels (instead of --K)"),
    fy: Optional[float] = typer.Option(None, "--fy", help="vertical focal length (default --fx)"),
    cx: Optional[float] = typer.Option(None, "--cx", help="principal point column (default image centre)"),
    cy: Optional[float] = typer.Option(None, "--cy", help="principal point row (default image centre)"),
    ortho: bool = typer.Option(False, "--ortho", help="orthographic camera (ignore a folder's K.txt)"),
    pixel_size: Optional[float] = typer.Option(None, "--pixel-size",
                                               help="orthographic: size of one pixel (default 1)"),
    convention: str = typer.Option("ps", "--convention", help="normal-map file convention: ps (x right, y up, "
                                   "z to viewer; DiLiGenT), opencv, directx (aliases opengl, green-up, green-down)"),
    method: str = typer.Option("fnin", "--method", "-m", help="fnin (default), fnin-s, bini, wls (smooth) or fnin-stage1 (network only, no solve)"),
    refine: int = typer.Option(0, "--refine", help="extra BiNI rounds started from the method's result"),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda or mps (network stage of fnin)"),
    network_side: Optional[int] = typer.Option(None, "--network-side", help="fnin: finest network scale, short "
                                               "side in pixels (default 64; larger is slower, see README)"),
    model: Optional[Path] = typer.Option(None, "--model", help="FNIN weights (.safetensors); default: bundled"),
    depth: Optional[str] = typer.Option(None, "--depth", help="also write the depth map (float32, NaN outside)"),
    weights: Optional[str] = typer.Option(None, "--weights", help="also write the discontinuity map (0..1)"),
    preview: Optional[str] = typer.Option(None, "--preview", help="also write a PNG: normals | shaded | depth"),
    mean_depth: Optional[float] = typer.Option(None, "--mean-depth", help="scale (perspective) or offset "
                                               "(orthographic) so that the masked mean depth is this"),
    depth_at: Optional[str] = typer.Option(None, "--depth-at", metavar="ROW,COL,DEPTH",
                                           help="fix the scale/offset by one known pixel depth instead"),
    colors: bool = typer.Option(True, "--colors/--no-colors", help="mesh vertex colours from the normals"),
    cut: float = typer.Option(1.0, "--cut", help="mesh: drop triangles across depth jumps whose residual "
                              "exceeds this (normal units; larger keeps more)"),
    force: bool = typer.Option(False, "--force", help="overwrite existing outputs"),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="skip inputs whose outputs all exist "
                                       "(resume a batch)"),
    json_out: bool = typer.Option(False, "--json", help="one JSON object per input on stdout"),
    jobs: int = typer.Option(1, "--jobs", "-j", help="parallel worker processes (outputs identical to --jobs 1)"),
    threads: int = typer.Option(1, "--threads", help="compute threads per worker (results depend only on this)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="only errors and warnings on stderr"),
    debug: bool = typer.Option(False, "--debug", help="print tracebacks of failures"),
):
    from .outputs import Options, UsageError, parse_depth_at

    if jobs < 1:
        _die(f"--jobs must be 1 or more, got {jobs}")
    try:
        opts = Options(
            mask=None if mask is None else str(mask), K=None if K is None else str(K), fx=fx, fy=fy, cx=cx, cy=cy,
            ortho=ortho, pixel_size=pixel_size, convention=convention, method=method.lower(), refine=refine,
            device=device.lower(), network_side=network_side, model=None if model is None else str(model),
            mean_depth=mean_depth,
            depth_at=None if depth_at is None else parse_depth_at(depth_at), colors=colors, cut=cut, force=force,
            debug=debug, threads=threads,
        ).check()
    except UsageError as exc:
        _die(str(exc))
    try:
        code = _run_integrate(inputs, opts, out, out_dir, fmt, depth, weights, preview, skip_existing,
                              json_out, jobs, quiet)
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug outside the per-input guard: still one line unless --debug
        if debug:
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        _die(f"internal error ({type(exc).__name__}: {first}); run with --debug for the traceback", 1)
    raise typer.Exit(code)


def _run_integrate(inputs, opts, out, out_dir, fmt, depth, weights, preview, skip_existing, json_out, jobs,
                   quiet) -> int:
    import time

    from .errors import FninError
    from .outputs import expand_inputs, plan_jobs, record_json, run_jobs

    console = _stderr_console()
    try:
        paths = expand_inputs(inputs)
        plan = plan_jobs(paths, out=out, out_dir=out_dir, fmt=fmt, depth=depth, weights=weights, preview=preview,
                         force=opts.force, skip_existing=skip_existing, options=opts)
    except FninError as exc:
        _die(str(exc))
    from .pipeline import NETWORK_METHODS

    if opts.device in ("cuda", "mps") and opts.method in NETWORK_METHODS:
        try:
            from .fnin import resolve_device

            resolve_device(opts.device)
        except FninError as exc:
            _die(str(exc))
        except ImportError:
            pass

    many = len(plan) > 1
    progress = None
    if many and not quiet and console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(TextColumn("[bold]integrate"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console,
                            transient=True)
        task = progress.add_task("integrate", total=len(plan), info="")
        progress.start()

    def on_start(i):
        if progress is not None:
            progress.update(task, info=plan[i].name)

    def on_record(i, rec):
        if json_out:
            sys.stdout.write(json.dumps(record_json(rec)) + "\n")
            sys.stdout.flush()
        out_console = progress.console if progress is not None else console
        for w in rec["warnings"]:
            out_console.print(f"warning: {rec['input']}: {w}", markup=False, highlight=False, soft_wrap=True)
        if rec["status"] == "failed":
            out_console.print(f"error: {rec['error']}", markup=False, highlight=False, soft_wrap=True)
            if opts.debug and rec.get("traceback"):
                out_console.print(rec["traceback"], markup=False, highlight=False, soft_wrap=True)
        elif not quiet:
            files = ", ".join(rec["outputs"].values())
            if rec["status"] == "skipped":
                out_console.print(f"skipped {rec['input']}: outputs exist ({files})", markup=False, soft_wrap=True,
                                  highlight=False)
            elif rec["status"] == "ok":
                px = rec["pixels"] or 0
                out_console.print(f"ok {rec['input']} -> {files} ({rec['seconds'].get('total', 0):.2f} s, "
                                  f"{px:,} px; {rec['scale_note']})", markup=False, highlight=False, soft_wrap=True)
        if progress is not None:
            progress.update(task, advance=1)

    t0 = time.perf_counter()
    try:
        records = run_jobs(plan, opts, workers=jobs, on_record=on_record, on_start=on_start)
    except KeyboardInterrupt:
        if progress is not None:
            progress.stop()
        console.print("interrupted: finished outputs are complete, nothing partial was left", markup=False,
                      soft_wrap=True, highlight=False)
        return 130
    finally:
        if progress is not None:
            progress.stop()
    wall = time.perf_counter() - t0
    if any(r["status"] == "interrupted" for r in records):
        return 130
    failed = sum(r["status"] == "failed" for r in records)
    if many and not quiet:
        _print_summary(console, records, wall, jobs)
    return 1 if failed else 0


def _print_summary(console, records, wall, jobs):
    from rich.table import Table
    from rich.text import Text

    ok = sum(r["status"] == "ok" for r in records)
    skipped = sum(r["status"] == "skipped" for r in records)
    failed = len(records) - ok - skipped
    table = Table(title=f"{ok} ok, {failed} failed" + (f", {skipped} skipped" if skipped else "")
                  + f" in {wall:.1f} s (--jobs {jobs})", title_justify="left")
    table.add_column("input", overflow="fold")
    table.add_column("status")
    table.add_column("seconds", justify="right")
    table.add_column("output / error", overflow="fold")
    for r in records:
        status = {"ok": "[green]ok[/]", "failed": "[red]failed[/]"}.get(r["status"], r["status"])
        detail = ", ".join(r["outputs"].values()) if r["status"] != "failed" else r["error"]
        secs = r["seconds"].get("total")
        table.add_row(Text(r["input"]), Text.from_markup(status),
                      "" if secs is None or r["status"] == "skipped" else f"{secs:.2f}", Text(detail or ""))
    console.print(table)


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
        from .train import build_model

        if not Path(cfg.base).is_file():
            _die(f"{cfg.base or '(none)'}: the {cfg.stage} stage needs --base, the trained weights to start from")
        try:   # --base (and init_edges) fit, before the progress bar; on a copy (it sets cfg.net)
            build_model(TrainConfig.from_dict(cfg.to_dict()))
        except (ValueError, OSError) as exc:
            _die(str(exc))
    if cfg.device not in ("cpu", "cuda") and not cfg.device.startswith("cuda:"):
        _die(f"--device {cfg.device}: training runs on cpu or cuda")
    if cfg.device.startswith("cuda"):
        from .errors import FninError
        from .fnin import resolve_device

        try:
            resolve_device("cuda")
        except FninError as exc:
            _die(str(exc))
    if out is not None:
        from .train import export_paths

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


@app.command(no_args_is_help=True)
def bench(
    source: str = typer.Argument(..., metavar="diligent|synthetic|DIR",
                                 help="diligent, synthetic, or a folder of cases with depth_gt.npz"),
    data: Optional[Path] = typer.Option(None, "--data", help="DiLiGenT folder (default: $FNIN_DILIGENT, "
                                        "else ~/.cache/fnin/diligent)"),
    methods: str = typer.Option("fnin,fnin-s,bini,wls", "--methods", help="comma-separated methods"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="write the full report as JSON"),
    csv_path: Optional[Path] = typer.Option(None, "--csv", help="write one row per case and method"),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="depth, error maps, summary.png"),
    mesh: bool = typer.Option(False, "--mesh", help="also write a mesh per case and method (with --out-dir)"),
    threads: int = typer.Option(1, "--threads", help="torch and BLAS threads, the same for every method"),
    refine: int = typer.Option(0, "--refine", help="BiNI rounds after each method"),
    device: str = typer.Option("auto", "--device", help="network device: auto, cpu, cuda, mps"),
    pixel_size: Optional[float] = typer.Option(None, "--pixel-size", help="orthographic cases without "
                                               "pixel_size.txt"),
    convention: str = typer.Option("ps", "--convention", help="normal-map file convention of folder cases"),
    isolate: bool = typer.Option(False, "--isolate", help="each case and method in a fresh subprocess"),
    warmup: bool = typer.Option(True, "--warmup/--no-warmup", help="untimed warm-up run per method"),
    model: Optional[Path] = typer.Option(None, "--model", help="FNIN weights for the network methods "
                                         "(default: the bundled ones)"),
):
    """Accuracy (MADE after median scale/offset) and speed of the methods on data with ground truth."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from .bench import failed_runs, resolve_cases, rich_table, run_bench, write_csv, write_json
    from .errors import FninError

    wanted = [m.strip() for m in methods.split(",") if m.strip()]
    if mesh and out_dir is None:
        _die("--mesh needs --out-dir")
    for p in (json_path, csv_path):
        if p is not None and not p.parent.is_dir():
            _die(f"{p.parent}: output folder does not exist; create it first")
    try:
        dataset, cases = resolve_cases(source, data=data, pixel_size=pixel_size, convention=convention)
        if model is not None:
            from .fnin import load_model

            load_model(model, "cpu")   # a missing or broken file stops here, before the progress bar
    except FninError as exc:
        _die(str(exc))
    console = _stderr_console()
    with Progress(TextColumn("[bold]bench"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console) as prog:
        task = prog.add_task("bench", total=len(cases) * len(wanted), info="warm-up")

        def cb(done, total, case, method):
            prog.update(task, completed=done, info="" if case is None else f"{case} {method}")

        try:
            report = run_bench(cases, wanted, threads=threads, warmup=warmup, out_dir=out_dir, mesh=mesh,
                               progress=cb, refine=refine, device=device, isolate=isolate, dataset=dataset,
                               model_path=model)
        except FninError as exc:
            _die(str(exc))
    console.print(rich_table(report))
    failed = failed_runs(report)
    for method, error, failed_cases in failed:
        which = failed_cases[0] if len(failed_cases) == 1 else f"{len(failed_cases)} cases ({', '.join(failed_cases)})"
        typer.echo(f"error: {method} failed on {which}: {error}", err=True)
    warnings = list(report.get("warnings", []))
    for per in report["cases"].values():
        warnings += [w for r in per.values() for w in r.get("warnings", []) if w not in warnings]
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
    if json_path is not None:
        write_json(json_path, report)
    if csv_path is not None:
        write_csv(csv_path, report)
    if out_dir is not None:
        typer.echo(f"outputs in {out_dir}", err=True)
    raise typer.Exit(1 if failed else 0)


def _command_line(ctx) -> str:
    """The running command as a shell line, rebuilt from its parsed options (what the
    model card records; also right when the CLI is invoked in-process)."""
    words = [ctx.command_path if ctx.command_path.startswith("fnin") else f"fnin {ctx.info_name}"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value is False or value == param.default or not getattr(param, "opts", None):
            continue
        words.append(param.opts[0])
        if value is not True:
            words.append(shlex.quote(str(value)))
    return " ".join(words)


def _stderr_console():
    """Rich console on stderr; when stderr is not a terminal (logs, CI), 160 columns
    instead of rich's 80, so the bench and summary tables are not truncated."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=True, width=160)
    return console


def main():
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    app()


if __name__ == "__main__":
    main()
