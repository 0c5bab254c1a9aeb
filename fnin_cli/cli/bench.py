"""`fnin bench`: parse, run the benchmark, print and write the reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import FninError
from ..model import DEVICES
from .app import FninCommand, app, die, stderr_console, stdout_console


@app.command(no_args_is_help=True, cls=FninCommand)
def bench(
    source: str = typer.Argument(..., metavar="diligent|meshes|synthetic|DIR",
                                 help="diligent, meshes (renders of --meshes' validation meshes), synthetic, "
                                      "or a folder of cases with depth_gt.npz"),
    data: Optional[Path] = typer.Option(None, "--data", help="DiLiGenT folder (default: $FNIN_DILIGENT, "
                                        "else ../shared/data/diligent next to the repository if there, "
                                        "else ~/.cache/fnin/diligent)"),
    meshes: Optional[Path] = typer.Option(None, "--meshes", help="bench meshes: the mesh folder (default: "
                                          "$FNIN_MESHES, else ../shared/data/meshes next to the repository "
                                          "if there, else ~/.cache/fnin/meshes)"),
    size: Optional[str] = typer.Option(None, "--size", help="bench meshes: one two-object perspective view at "
                                       "this WIDTHxHEIGHT (e.g. 6000x4000, camera size) instead of the 14 "
                                       "views; rendered once, cached in ~/.cache/fnin/renders"),
    mesh_size: Optional[int] = typer.Option(None, "--mesh-size", hidden=True,
                                            help="bench meshes: render the views at this height (tests)"),
    mesh_views: Optional[int] = typer.Option(None, "--mesh-views", hidden=True,
                                             help="bench meshes: only the first N views (tests)"),
    noise: Optional[str] = typer.Option(None, "--noise", metavar="white|tilt|ps|ps8|real-like",
                                        help="bench meshes: normal errors as real captures have them: white "
                                             "(per pixel), tilt (a smooth 1-6 deg rotation field), ps (tilt + "
                                             "white + 16-bit), ps8 (8-bit); real-like: the suite (models in "
                                             "turn, plus procedural folds)"),
    noise_seed: Optional[int] = typer.Option(None, "--noise-seed", help="bench meshes --noise: the seed of "
                                             "the errors (default: the suite's fixed one)"),
    methods: str = typer.Option("default,bini,wls", "--methods",
                                help="comma-separated methods: default (what `fnin integrate` runs "
                                     "with no method or refine flags), fnin, bini, wls; rarely needed: "
                                     "fnin-s, fnin-stage1 (docs/usage.md)"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="write the full report as JSON"),
    csv_path: Optional[Path] = typer.Option(None, "--csv", help="write one row per case and method"),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="depth, error maps, summary.png"),
    mesh: bool = typer.Option(False, "--mesh", help="also write a mesh per case and method (with --out-dir)"),
    threads: int = typer.Option(1, "--threads", help="torch and BLAS threads, the same for every method"),
    refine: Optional[int] = typer.Option(None, "--refine", help="BiNI rounds after each method (default: "
                                         "each method's own; 0: none, FNIN's one-shot); not applied to default"),
    device: str = typer.Option("auto", "--device", help="network device: " + ", ".join(DEVICES)),
    pixel_size: Optional[float] = typer.Option(None, "--pixel-size", help="orthographic cases without "
                                               "pixel_size.txt"),
    convention: str = typer.Option("ps", "--convention", help="normal-map file convention of folder cases"),
    isolate: bool = typer.Option(False, "--isolate", help="rarely needed: each case and method in a fresh "
                                 "subprocess (docs/usage.md)"),
    warmup: bool = typer.Option(True, "--warmup/--no-warmup", help="untimed warm-up run per method (--no-warmup: "
                               "rarely needed, docs/usage.md)"),
    repeat: int = typer.Option(1, "--repeat", help="runs per case and method, interleaved; seconds: the "
                               "fastest (errors: the first run's)"),
    model: Optional[Path] = typer.Option(None, "--model", help="FNIN weights for the network methods "
                                         "(default: the bundled ones)"),
    prior: Optional[str] = typer.Option(None, "--prior", metavar="KIND",
                                        help="give every method a depth prior drawn from the ground truth: "
                                             "dense8 (a sensor's 1/8 map), sparse (200 SfM points), relative (a "
                                             "smoothed relative depth), patches (a full map with three wrong "
                                             "discs), mono-depth, mono-disparity (a monocular network's warped, "
                                             "blurred output), dense8-nosigma, sparse-nosigma, patches-nosigma (sigma "
                                             "not given); "
                                             "adds the absolute error and the methods prior (alone) and noprior "
                                             "(the default without it); --out-dir also gets each prior"),
    prior_seed: int = typer.Option(0, "--prior-seed", help="the seed of the --prior draws"),
):
    """Accuracy (MADE after median scale/offset) and speed of the methods on data with ground truth."""
    # imported when the command runs: the bench package (Pillow, the reports) would be ~50 ms
    # of every `fnin integrate` start-up (docs/decisions.md#start-up)
    from ..bench.cases import resolve_cases
    from ..bench.report import rich_table, table_heading, table_legend, write_csv, write_json
    from ..bench.runner import failed_runs, parse_methods, run_bench

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn


    try:
        if prior is None and prior_seed != 0:
            raise FninError("--prior-seed goes with --prior")
        if prior is not None and methods == "default,bini,wls":   # the command's own default
            methods = "default,bini,prior,noprior"
        wanted = parse_methods(methods, prior is not None)
    except FninError as exc:
        die(str(exc))
    if refine is not None and refine < 0:
        die(f"--refine must be 0 or more, got {refine}")
    if mesh and out_dir is None:
        die("--mesh needs --out-dir")
    for p in (json_path, csv_path):
        if p is not None and not p.parent.is_dir():
            die(f"{p.parent}: output folder does not exist; create it first")
    try:
        if meshes is not None and source != "meshes":
            raise FninError("--meshes goes with `fnin bench meshes`")
        if size is not None and source != "meshes":
            raise FninError("--size goes with `fnin bench meshes`")
        if (noise is not None or noise_seed is not None) and source != "meshes":
            raise FninError("--noise and --noise-seed go with `fnin bench meshes`")
        frame = None
        if size is not None:
            from ..bench.camera_views import parse_frame

            frame = parse_frame(size)
        dataset, cases = resolve_cases(source, data=data, pixel_size=pixel_size, convention=convention,
                                       meshes=meshes, mesh_size=mesh_size, mesh_views=mesh_views, mesh_frame=frame,
                                       noise=noise, noise_seed=noise_seed)
        if model is not None:
            from ..model.weights import load_model

            load_model(model, "cpu")   # a missing or broken file stops here, before the progress bar
    except FninError as exc:
        die(str(exc))
    console = stderr_console()
    with Progress(TextColumn("[bold]bench"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console) as prog:
        task = prog.add_task("bench", total=len(cases) * len(wanted), info="warm-up")

        def cb(done, total, case, method):
            prog.update(task, completed=done, info="" if case is None else f"{case} {method}")

        try:
            report = run_bench(cases, wanted, threads=threads, warmup=warmup, out_dir=out_dir, mesh=mesh,
                               progress=cb, refine=refine, device=device, isolate=isolate, dataset=dataset,
                               model_path=model, repeat=repeat,
                               prior=None if prior is None else (prior.lower(), prior_seed))
        except FninError as exc:
            die(str(exc))
    out = stdout_console()   # the result on stdout, progress and messages on stderr
    out.print(table_heading(report), markup=False, highlight=False, soft_wrap=True)
    out.print(rich_table(report))
    out.print(table_legend(report), markup=False, highlight=False, soft_wrap=True)
    failed = failed_runs(report)
    for method, error, failed_cases in failed:
        which = failed_cases[0] if len(failed_cases) == 1 else f"{len(failed_cases)} cases ({', '.join(failed_cases)})"
        typer.echo(f"error: {method} failed on {which}: {error}", err=True)
    warnings = list(report.get("warnings", []))
    for per in report["cases"].values():
        warnings += [w for r in per.values() for w in r.get("warnings", []) if w not in warnings]
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
    try:
        if json_path is not None:
            write_json(json_path, report)
        if csv_path is not None:
            write_csv(csv_path, report)
    except FninError as exc:   # a full disk: one line naming the file and the cause
        die(str(exc), 1)
    if out_dir is not None:
        typer.echo(f"outputs in {out_dir}", err=True)
    raise typer.Exit(1 if failed else 0)
