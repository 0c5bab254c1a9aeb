"""Benchmark reports: CSV, JSON, PNG error maps and summary chart, the terminal table.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from ..io.files import atomic_path
from ..io.formats import write_array
from ..plots import bar_chart, stack_vertical
from .cases import Case

ERROR_CLIP_MM = 5.0                  # error maps saturate here (scene units x 1e-3 for synthetic)


# ------------------------------------------------------------------ outputs

# a perceptually ordered dark-blue -> teal -> yellow ramp (anchor colours, linearly interpolated)
_CMAP_ANCHORS = np.array([[68, 1, 84], [65, 68, 135], [42, 120, 142], [34, 168, 132],
                          [122, 209, 81], [253, 231, 37]], np.float64)


def colourise(values, vmax: float, background=(255, 255, 255)) -> np.ndarray:
    """(H, W) values -> (H, W, 3) uint8: 0..vmax over the colour ramp, NaN = background."""
    v = np.asarray(values, np.float64)
    t = np.clip(np.nan_to_num(v, nan=0.0) / vmax, 0.0, 1.0) if vmax > 0 else np.zeros(v.shape)
    pos = np.linspace(0.0, 1.0, len(_CMAP_ANCHORS))
    rgb = np.stack([np.interp(t, pos, _CMAP_ANCHORS[:, c]) for c in range(3)], axis=-1)
    rgb[~np.isfinite(v)] = background
    return np.round(rgb).astype(np.uint8)


def error_map_png(path, abs_error, vmax: float, label: str):
    """Absolute-error picture with a colour bar underneath (white background)."""
    from PIL import Image, ImageDraw

    img = colourise(abs_error, vmax)
    h, w = img.shape[:2]
    bar_w = max(120, min(w, 300))
    canvas = Image.new("RGB", (max(w, bar_w + 20), h + 54), "white")
    canvas.paste(Image.fromarray(img), (0, 0))
    ramp = colourise(np.tile(np.linspace(0, vmax, bar_w), (10, 1)), vmax)
    canvas.paste(Image.fromarray(ramp), (10, h + 6))
    d = ImageDraw.Draw(canvas)
    d.text((10, h + 20), "0", fill="black")
    d.text((10 + bar_w - 40, h + 20), f">={vmax:g}", fill="black")
    d.text((10, h + 36), label[: max(10, (canvas.width - 20) // 6)], fill="black")
    with atomic_path(path) as tmp:
        canvas.save(tmp, format="PNG")


def write_case_outputs(out_dir: Path, case: Case, method: str, res, err: dict, mesh: bool, normals=None):
    """Depth (.npy), error map (.png) and, on request, a mesh for one case and method."""
    folder = out_dir / case.name
    folder.mkdir(parents=True, exist_ok=True)
    outputs = {}
    outputs["depth"] = str(write_array(folder / f"{method}.depth.npy", res.depth, force=True))
    vmax = ERROR_CLIP_MM if case.kind in ("folder", "mesh") else ERROR_CLIP_MM * 1e-3
    unit = "mm" if case.kind in ("folder", "mesh") else "units"
    error_map_png(folder / f"{method}.error.png", err["abs_error"], vmax,
                  f"{case.name} {method} |error| MADE {err['made']:.4g} {unit}")
    outputs["error_map"] = str(folder / f"{method}.error.png")
    warn = None
    if mesh:
        try:
            from fnin_cli import mesh as mesh_mod
        except ImportError:
            warn = "mesh not written: fnin_cli.mesh is not available in this version"
        else:
            try:
                path = folder / f"{method}.ply"
                m = mesh_mod.build_mesh(res.depth, res.camera, res.mask, normals=normals)
                mesh_mod.write_mesh(path, m, force=True)
                outputs["mesh"] = str(path)
            except Exception as exc:
                warn = f"mesh not written: {type(exc).__name__}: {exc}"
    return outputs, warn


def summary_png(path, report):
    """Per-case MADE bars (log scale) above per-case seconds bars, one colour per method."""
    cases = list(report["cases"])
    methods = report["methods"]

    def col(key):
        return {m: [float(report["cases"][c][m].get(key, np.nan)) if report["cases"][c][m].get("status") == "ok"
                    else np.nan for c in cases] for m in methods}

    width = max(900, 90 * len(cases) + 100)
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "made.png", Path(tmp) / "seconds.png"
        unit = "mm" if report["dataset"] != "synthetic" else "scene units"
        bar_chart(a, cases, col("made_mm"), title=f"MADE per case ({unit}, log scale; lower is better)",
                  ylabel=unit, logy=True, size=(width, 420))
        bar_chart(b, cases, col("seconds"), title="seconds per case (integrate only)", ylabel="s",
                  size=(width, 360))
        stack_vertical(path, [a, b])


def write_csv(path, report):
    """Write ``report`` as CSV: one row per case and method (atomic)."""
    import csv

    keys = ["made_mm", "piece_made_mm", "abs_made_mm", "right_made_mm", "right_abs_made_mm", "cover_made_mm",
            "median_mm", "p95_mm", "rmse_mm", "seconds", "peak_rss_mb", "pixels",
            "iterations"]
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["case", "method", "status", *keys, "error"])
            for c, per in report["cases"].items():
                for m, r in per.items():
                    w.writerow([c, m, r.get("status"), *[r.get(k, "") for k in keys], r.get("error", "")])


def write_json(path, report):
    """Write ``report`` as JSON (the bench schema: dataset, machine, methods, cases, mean; atomic)."""
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(report, indent=1) + "\n")


# ------------------------------------------------------------------ table

def fmt_error(v) -> str:
    """3 decimals (DiLiGenT mm), or a compact 2-digit exponent form below 0.01 (``9.3e-5``)."""
    if v is None or not np.isfinite(v):
        return "-"
    if v >= 0.01 or v == 0:
        return f"{v:.3f}"
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant}e{int(exp)}"


def table_heading(report) -> str:
    """The line above :func:`rich_table`: dataset, threads, device."""
    return (f"fnin bench {report['dataset']}  ({report['machine']['threads']} thread(s), "
            f"{report['machine']['device']})")


def _absolute(report) -> bool:
    """Whether a depth prior fixed the depth (an ``abs`` column): an absolute prior kind
    (:data:`.priors.ABSOLUTE_KINDS`)."""
    from .priors import ABSOLUTE_KINDS

    return bool(report.get("prior")) and report["prior"]["kind"] in ABSOLUTE_KINDS


def _right(report) -> list:
    """The methods with an error where the prior was right (a ``right`` column each: a
    prior drawn wrong in places, ``patches``)."""
    means = report.get("mean") or {}
    return [m for m in report.get("methods", []) if "right_made_mm" in (means.get(m) or {})]


def _pieces(report) -> list:
    """The methods that left a loose piece in some case (a ``piece`` column each)."""
    means = report.get("mean") or {}
    return [m for m in report.get("methods", []) if "piece_made_mm" in (means.get(m) or {})]


def table_legend(report) -> str:
    """The line under :func:`rich_table`: units and marks, readable without colour."""
    unit = "mm" if report["dataset"] != "synthetic" else "units"
    line = f"MADE in {unit} (+: most accurate), s: seconds of integrate alone (*: fastest; mean row: sum)"
    if _pieces(report):
        line += ("; piece: MADE with each loose piece (what the normals cannot place) aligned on its own, "
                 "-: no loose piece")
    if report.get("prior"):
        p = report["prior"]
        if _absolute(report):
            line += (f"; abs: MADE with nothing fitted (the {p['kind']} depth prior, seed {p['seed']}, fixes the "
                     "depth)")
        else:
            line += f"; with the {p['kind']} depth prior (seed {p['seed']}), fitted: the depth stays relative"
        if _right(report):
            line += "; right: MADE over the pixels where the prior was right"
        fits = {r.get("prior_fit") for per in report.get("cases", {}).values() for r in per.values()} - {None}
        line += ("; prior: the prior alone" + (f" ({', '.join(sorted(fits))})" if fits else "")
                 + "; noprior: the default without it")
    return line


def rich_table(report):
    """Rows = cases, columns = MADE and seconds per method (with a depth prior also the
    absolute MADE, nothing fitted; where a method left loose pieces, its MADE aligned piece
    by piece); the best MADE marked ``+`` (and bold green on a
    terminal), the fastest ``*``: the marks read without colour."""
    from rich import box
    from rich.table import Table

    methods = report["methods"]
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False)  # title and legend: table_heading, table_legend
    t.add_column("case", no_wrap=True)
    absolute = _absolute(report)
    pieces = _pieces(report)
    rights = _right(report)
    for m in methods:
        t.add_column(f"{m}\nMADE", justify="right")
        if absolute:
            t.add_column(f"{m}\nabs", justify="right")
        if m in rights:
            t.add_column(f"{m}\nright", justify="right")
        if m in pieces:
            t.add_column(f"{m}\npiece", justify="right")
        t.add_column(f"{m}\ns", justify="right")

    def row(name, made, secs, end_section=False, absolute_made=None, piece=None, right=None):
        ok_made = {m: v for m, v in made.items() if v is not None and np.isfinite(v)}
        ok_secs = {m: v for m, v in secs.items() if v is not None and np.isfinite(v)}
        best = min(ok_made, key=ok_made.get) if ok_made else None
        fast = min(ok_secs, key=ok_secs.get) if ok_secs else None
        cells = [name]
        for m in methods:
            e = fmt_error(made[m]) if m in ok_made else ("-" if m in ok_secs else "[red]failed[/]")
            cells.append(f"[bold green]{e}+[/]" if m == best else e)
            if absolute:
                a = (absolute_made or {}).get(m)
                cells.append(fmt_error(a) if a is not None and np.isfinite(a) else "-")
            if m in rights:
                r = (right or {}).get(m)
                cells.append(fmt_error(r) if r is not None and np.isfinite(r) else "-")
            if m in pieces:
                p = (piece or {}).get(m)
                cells.append(fmt_error(p) if p is not None and np.isfinite(p) else "-")
            s = f"{secs[m]:.2f}" if m in ok_secs else "-"
            cells.append(f"[bold]{s}*[/]" if m == fast else s)
        t.add_row(*cells, end_section=end_section)

    names = list(report["cases"])
    for i, c in enumerate(names):
        per = report["cases"][c]
        row(c, {m: per[m].get("made_mm") for m in methods},
            {m: per[m].get("seconds") for m in methods}, end_section=i == len(names) - 1,
            absolute_made={m: per[m].get("abs_made_mm") for m in methods},
            piece={m: per[m].get("piece_made_mm") for m in methods},
            right={m: per[m].get("right_made_mm") for m in methods})
    row("mean", {m: report["mean"][m]["made_mm"] for m in methods},
        {m: report["mean"][m]["seconds_total"] if not report["mean"][m]["failed"] else None for m in methods},
        absolute_made={m: report["mean"][m].get("abs_made_mm") for m in methods},
        piece={m: report["mean"][m].get("piece_made_mm") for m in methods},
        right={m: report["mean"][m].get("right_made_mm") for m in methods})
    return t
