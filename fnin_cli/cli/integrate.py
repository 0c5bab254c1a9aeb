"""`fnin integrate`: parse, plan, run, print.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer

from ..batch.options import Options, UsageError, parse_depth_at
from ..batch.plan import expand_inputs, plan_jobs
from ..batch.progress import LiveStatus
from ..batch.runner import (STOP_SIGNALS, all_outputs_complete, not_started_record, record_json,
                             run_jobs, stop_signals)
from ..errors import FninError
from ..config import DEFAULT
from ..io import DEPTH_SUFFIXES, FORMATS, MESH_SUFFIXES, NORMAL_SUFFIXES
from ..io.layout import beside, prior_beside
from ..model import ACCELERATORS, DEVICES
from ..solvers.registry import BY_NAME, DEFAULT_METHOD, method_help
from .app import FninCommand, app, die, stderr_console

# the suffixes the help names, from the io module's format table (one per format for outputs)
_NORMAL = " ".join(NORMAL_SUFFIXES)
_MESH = " ".join(MESH_SUFFIXES)
_DEPTH = " ".join(dict.fromkeys(f.suffixes[0] for f in FORMATS if f.suffixes[0] in DEPTH_SUFFIXES))
_FORMAT_NAMES = [s.lstrip(".") for s in MESH_SUFFIXES + tuple(_DEPTH.split())]

_INTEGRATE_HELP = f"""Integrate normal maps into meshes and depth maps.

INPUT is a normal-map file ({_NORMAL}), a folder in the DiLiGenT/BiNI
layout (normal_map.png, optional mask.png and K.txt) or a glob pattern (quote it to let
fnin expand it). Files named normal_map.* take their folder's name for outputs
and, like the folder, the mask.png and K.txt beside them.

\b
Outputs (all written atomically; an existing file needs --force):
  -o FILE          one input: a mesh ({_MESH}) or a depth map ({_DEPTH})
  --out-dir DIR    any number of inputs: DIR/<name>.<format> (--format, default ply);
                   a missing DIR is created, parents too
  --depth/--weights/--preview  extra files: a path (one input), a suffix such as
                   '.exr' (-> <name>_depth.exr beside the main output; <name> is the
                   stem of -o when given, else the input's name) or a template such
                   as '{{stem}}_d.npy' ({{stem}}: the input's name).
  With no output option at all, <name>{MESH_SUFFIXES[0]} is written to the current folder.

\b
Exit codes: 0 every input done, 1 some input failed (the others are written),
2 usage error (nothing computed), 130 interrupted (143 by SIGTERM, 129 by SIGHUP).
--json prints one JSON object per input on stdout; messages, progress and the
summary go to stderr.
"""


@app.command("integrate", help=_INTEGRATE_HELP, no_args_is_help=True, cls=FninCommand)
def integrate_cmd(
    ctx: typer.Context,
    inputs: Optional[list[str]] = typer.Argument(None, metavar="INPUT...", show_default=False,
                                                 help="normal-map files, DiLiGenT-layout folders or glob patterns "
                                                 "(required but for --show-config)"),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help=f"output file for one input ({_MESH} mesh, "
                                       f"{_DEPTH} depth)"),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="folder for the outputs of several inputs "
                                           "(created if missing)"),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="main output type with --out-dir: "
                                      f"{_FORMAT_NAMES[0]} (default), {', '.join(_FORMAT_NAMES[1:])}"),
    mask: Optional[Path] = typer.Option(None, "--mask", help="mask image (white = object); overrides a folder's"),
    K: Optional[Path] = typer.Option(None, "--K", help="3x3 intrinsics text file (perspective); overrides a folder's"),
    fx: Optional[float] = typer.Option(None, "--fx", help="focal length in pixels (instead of --K)"),
    fy: Optional[float] = typer.Option(None, "--fy", help="vertical focal length (default --fx)"),
    cx: Optional[float] = typer.Option(None, "--cx", help="principal point column (default image centre)"),
    cy: Optional[float] = typer.Option(None, "--cy", help="principal point row (default image centre)"),
    ortho: bool = typer.Option(False, "--ortho", help="orthographic camera (ignore a folder's K.txt)"),
    pixel_size: Optional[float] = typer.Option(None, "--pixel-size",
                                               help="orthographic: size of one pixel (default 1)"),
    convention: str = typer.Option("auto", "--convention", help="normal-map file convention: auto (ps unless the "
                                   "data clearly integrate only under another decoding; says so), ps (x right, y up, "
                                   "z to viewer; DiLiGenT), opencv, directx (aliases opengl, green-up, green-down); "
                                   "an explicit one is checked strictly"),
    channels: Optional[str] = typer.Option(None, "--channels", help="channel order rgb (default) or bgr, or three "
                                           "EXR channel names such as N.X,N.Y,N.Z"),
    float_encoding: str = typer.Option("raw", "--float-encoding", help="float files (EXR/NPY/TIFF): raw normals, or "
                                       "half = stored as (n+1)/2"),
    flip: Optional[str] = typer.Option(None, "--flip", help="negate these normal components after the convention: "
                                       "x (a mirrored map), y, z, or several (xy); none"),
    allow_invalid: bool = typer.Option(False, "--allow-invalid", help="go on when over 2% of the masked normals are "
                                       "invalid (NaN, zero, not unit length); they are dropped"),
    method: str = typer.Option(DEFAULT_METHOD, "--method", "-m", help=method_help()),
    refine: Optional[int] = typer.Option(
        None, "--refine", help="BiNI rounds started from the method's result, after fnin with its edge "
        f"map as a prior (default: fnin's own {DEFAULT.rounds}, none for the others; 0 = FNIN's one-shot)"),
    device: str = typer.Option("auto", "--device", help=f"{', '.join(DEVICES[:-1])} or {DEVICES[-1]} "
                               "(network stage of fnin)"),
    network_side: Optional[int] = typer.Option(None, "--network-side", help="rarely needed: fnin's finest network "
                                               "scale, short side in pixels (default 64; docs/usage.md)"),
    bini_k: Optional[float] = typer.Option(
        None, "--bini-k", metavar="K", help=f"BiNI's sigmoid sharpness k for bini, fnin-s and every refine round "
        f"(default {DEFAULT.solver.k:g}, {DEFAULT.rounds.k:g} in fnin's rounds; larger: sharper weights at depth "
        "jumps)"),
    model: Optional[Path] = typer.Option(None, "--model", help="FNIN weights (.safetensors); default: bundled"),
    depth: Optional[str] = typer.Option(None, "--depth", help="also write the depth map (float32, NaN outside)"),
    weights: Optional[str] = typer.Option(None, "--weights", help="also write the discontinuity map (0..1)"),
    preview: Optional[str] = typer.Option(None, "--preview", help="also write a PNG: normals | shaded | depth"),
    prior_weights: Optional[str] = typer.Option(None, "--prior-weights", metavar="FILE", help="also write where "
                                                "the depth prior was trusted (0..1, NaN: no prior value); needs a "
                                                "depth prior"),
    mean_depth: Optional[float] = typer.Option(None, "--mean-depth", help="scale (perspective) or offset "
                                               "(orthographic) so that the masked mean depth is this"),
    depth_at: Optional[List[str]] = typer.Option(None, "--depth-at", metavar="ROW,COL,DEPTH",
                                                 help="fix the scale/offset by one known pixel depth instead; "
                                                      "repeat it to pin each loose piece (--json lists them)"),
    depth_prior: Optional[str] = typer.Option(None, "--depth-prior", metavar="FILE", help="depth you already have "
                                              "(sensor, SfM points, a model's depth): a depth map at the map's size "
                                              "or 1/k of it (each side rounded down or up), or a .csv with the "
                                              "header row,col,depth (pixel row, column, depth); '{stem}_prior.npy' "
                                              "per input; the result is then in its units"),
    prior_sigma: Optional[float] = typer.Option(None, "--prior-sigma", help="the depth prior's noise (standard "
                                                "deviation, its units; default: estimated from the data, reported as prior_sigma)"),
    prior_kind: str = typer.Option("absolute", "--prior-kind", help="absolute; relative (known up to an "
                                   "affine map of depth, as monocular networks give: fitted, then fused); or "
                                   "disparity (inverse depth up to an affine map a/z + b, perspective maps: fitted, then fused)"),
    colors: bool = typer.Option(True, "--colors/--no-colors", help="mesh vertex colours from the normals"),
    mesh_axes: Optional[str] = typer.Option(
        None, "--mesh-axes", metavar="opencv|opengl", help="axes of .ply/.obj/.stl meshes: opencv (default: the "
        "camera's, x right, y down, z forward) or opengl (x right, y up, z toward the viewer, as most viewers and "
        "glTF; .glb always)"),
    cut: float = typer.Option(1.0, "--cut", help="rarely needed: drop mesh triangles across depth jumps whose "
                              "residual exceeds this (normal units; larger keeps more; docs/usage.md)"),
    force: bool = typer.Option(False, "--force", help="overwrite existing outputs"),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="skip inputs whose outputs all exist "
                                       "(resume a batch)"),
    json_out: bool = typer.Option(False, "--json", help="one JSON object per input on stdout"),
    jobs: int = typer.Option(1, "--jobs", "-j", help="parallel worker processes (outputs identical to --jobs 1)"),
    threads: int = typer.Option(1, "--threads", help="rarely needed: compute threads per worker "
                                   "(results depend only on this; docs/usage.md)"),
    downsample: int = typer.Option(1, "--downsample", help="integrate at 1/N of the size: normals averaged over NxN "
                                   "blocks wholly inside the mask, outputs at the reduced size (a quick look at a "
                                   "huge map)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="only errors and warnings on stderr"),
    debug: bool = typer.Option(False, "--debug", help="print tracebacks of failures"),
    show_config: bool = typer.Option(False, "--show-config", help="print the configuration that would run "
                                     "(with --method/--refine/--network-side; JSON) and exit"),
):
    if not inputs and not show_config:   # INPUT is required but for --show-config: click's own message
        ctx.fail("Missing argument 'INPUT...'.")
    if jobs < 1:
        die(f"--jobs must be 1 or more, got {jobs}")
    try:
        opts = Options(
            mask=None if mask is None else str(mask), K=None if K is None else str(K), fx=fx, fy=fy, cx=cx, cy=cy,
            ortho=ortho, pixel_size=pixel_size, convention=convention, channels=channels,
            float_encoding=float_encoding.lower(), flip=None if flip is None else flip.lower(),
            allow_invalid=allow_invalid, method=method.lower(), refine=refine,
            device=device.lower(), network_side=network_side, bini_k=bini_k, model=None if model is None else str(model),
            mean_depth=mean_depth,
            depth_at=(None if not depth_at else parse_depth_at(depth_at[0]) if len(depth_at) == 1
                      else tuple(parse_depth_at(d) for d in depth_at)), colors=colors, cut=cut, mesh_axes=mesh_axes,
            force=force, debug=debug, threads=threads, downsample=downsample, depth_prior=depth_prior,
            prior_sigma=prior_sigma, prior_kind=prior_kind.lower(),
        ).check()
    except UsageError as exc:
        die(str(exc))
    if show_config:
        typer.echo(json.dumps(opts.run_config(), indent=2))
        raise typer.Exit(0)
    try:
        code = _run_integrate(inputs, opts, out, out_dir, fmt, depth, weights, preview, skip_existing,
                              json_out, jobs, quiet, prior_weights)
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug outside the per-input guard: still one line unless --debug
        if debug:
            raise
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        die(f"internal error ({type(exc).__name__}: {first}); run with --debug for the traceback", 1)
    raise typer.Exit(code)


def _run_integrate(inputs, opts, out, out_dir, fmt, depth, weights, preview, skip_existing, json_out, jobs,
                   quiet, prior_weights=None) -> int:
    console = stderr_console()
    new_dir = out_dir is not None and not Path(out_dir).exists()
    try:
        paths = expand_inputs(inputs)
        plan = plan_jobs(paths, out=out, out_dir=out_dir, fmt=fmt, depth=depth, weights=weights, preview=preview,
                         force=opts.force, skip_existing=skip_existing, options=opts, prior_weights=prior_weights)
    except FninError as exc:
        die(_rerun_hint(str(exc), len(paths) if "paths" in locals() else 1, skip_existing))
    if not quiet:
        if new_dir:
            console.print(f"created the output folder {out_dir}", markup=False, highlight=False, soft_wrap=True)
        for note in (_beside_note(paths, opts), _prior_note(paths, opts)):
            if note:
                console.print(note, markup=False, highlight=False, soft_wrap=True)

    if opts.device in ACCELERATORS and BY_NAME[opts.method].needs_network:
        try:
            from ..model.weights import resolve_device

            resolve_device(opts.device)
        except FninError as exc:
            die(str(exc))
        except ImportError:
            pass

    many = len(plan) > 1
    # the live status: stderr on a terminal only, not with --quiet; each running input's
    # stage (also from --jobs workers), a bar across inputs when there are several
    status = LiveStatus(console, len(plan), enabled=not quiet and console.is_terminal)

    def on_record(i, rec):
        if json_out:
            sys.stdout.write(json.dumps(record_json(rec)) + "\n")
            sys.stdout.flush()
        for w in rec["warnings"]:
            status.print(f"warning: {rec['input']}: {w}")
        if rec["status"] == "failed":
            status.print(f"error: {rec['error']}")
            if opts.debug and rec.get("traceback"):
                status.print(rec["traceback"])
        elif not quiet:
            files = ", ".join(rec["outputs"].values())
            if rec["status"] == "skipped":
                status.print(f"skipped {rec['input']}: outputs exist ({files})")
            elif rec["status"] == "ok":
                px = rec["pixels"] or 0
                status.print(f"ok {rec['input']} -> {files} ({rec['seconds'].get('total', 0):.2f} s, "
                             f"{px:,} px; {rec['scale_note']})")

    t0 = time.perf_counter()
    received = []   # SIGTERM / SIGHUP stop the batch like Ctrl-C; exit 128 + their number
    try:
        with stop_signals(received):
            status.open()
            records = run_jobs(plan, opts, workers=jobs, on_record=on_record, status=status)
    except KeyboardInterrupt as exc:
        status.close()
        records = getattr(exc, "records", None)
        if records is None:  # stopped before the runner had a record for each input
            records = [not_started_record(job, opts) for job in plan]
            for i, rec in enumerate(records):
                on_record(i, rec)
        done = all_outputs_complete(records, plan)
        by = {signal.SIGINT: "", **{s: f" by {signal.Signals(s).name}" for s in STOP_SIGNALS}}
        console.print(f"interrupted{by.get(received[0] if received else signal.SIGINT, '')}: "
                      + ("every output was complete" if done else
                         "finished outputs are complete, nothing partial was left"),
                      markup=False, soft_wrap=True, highlight=False)
        if not done:
            return 128 + (received[0] if received else signal.SIGINT)
        return 1 if any(r["status"] == "failed" for r in records) else 0
    finally:
        status.close()
    wall = time.perf_counter() - t0
    if any(r["status"] in ("interrupted", "not started") for r in records):
        if not all_outputs_complete(records, plan):
            return 128 + (received[0] if received else signal.SIGINT)
    failed = sum(r["status"] == "failed" for r in records)
    if many and not quiet:
        _print_summary(console, records, wall, jobs)
    return 1 if failed else 0


def _rerun_hint(message: str, n_inputs: int, skip_existing: bool) -> str:
    """A rerun of a batch meets its own outputs: name --skip-existing beside --force."""
    if "output exists" in message and n_inputs > 1 and not skip_existing:
        return message + ", or --skip-existing to resume the batch"
    return message


def _prior_note(paths, opts) -> str | None:
    """One line when inputs' layout folders hold a ``depth_prior.*`` that is used (said once
    per run; each ``--json`` record names its ``prior_source``)."""
    if opts.depth_prior is not None:
        return None
    found = sorted({p.name for p in (prior_beside(x) for x in paths) if p is not None})
    if not found:
        return None
    return (f"note: the {' / '.join(found)} in the inputs' folders are used as depth priors (as mask.png is; "
            "the results are in their units)")


def _beside_note(paths, opts) -> str | None:
    """One line when file inputs named like a layout folder's normal map take the
    mask.png / K.txt beside them (README "Inputs"), as the folder form would."""
    found = {"mask.png": False, "K.txt": False}
    for p in paths:
        if Path(p).is_dir():
            continue
        mask, K = beside(p)
        found["mask.png"] |= mask is not None and opts.mask is None
        found["K.txt"] |= K is not None and opts.K is None and opts.fx is None and not opts.ortho
    used = [k for k, v in found.items() if v]
    if not used:
        return None
    return (f"note: normal maps inside DiLiGenT/BiNI-layout folders use the {' and '.join(used)} beside them "
            "(as the folder form does; --mask, --K or --ortho override)")


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
