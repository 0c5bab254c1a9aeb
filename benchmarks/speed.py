"""Speed and memory benchmark: DiLiGenT and large synthetic normal maps, fnin vs bini.

Each (case, method) runs in a fresh subprocess (``fnin bench --isolate`` machinery), so
the peak RSS is that run's own; times exclude loading and writing (stages are in the
JSON). Results go to ``benchmarks/results/speed.json`` and a Markdown table
``benchmarks/results/speed.md``.

    python benchmarks/speed.py                       # everything (bini on 4096x3072 skipped)
    python benchmarks/speed.py --cases diligent --methods fnin,bini
"""
from __future__ import annotations

import argparse
import datetime
import json
import tempfile
from pathlib import Path

import numpy as np

from fnin_cli import bench, io
from fnin_cli.data.synthetic import make_scene

HERE = Path(__file__).parent
# seeds whose masks cover ~22% of the frame: ~700k pixels at 2048x1536
BIG = {"synthetic-2048x1536": (10_093, 1536, 2048), "synthetic-4096x3072": (10_093, 3072, 4096)}


def write_case(folder: Path, seed: int, h: int, w: int) -> Path:
    """A DiLiGenT-layout folder (EXR normals, mask, K, depth_gt) for one big scene."""
    folder.mkdir(parents=True, exist_ok=True)
    sc = make_scene(seed, h, w, ortho_prob=0.0)
    io.write_normal_map(folder / "normal_map.exr", sc.normals, force=True)
    io.write_png(folder / "mask.png", (sc.mask * 255).astype(np.uint8))
    np.savetxt(folder / "K.txt", sc.K)
    np.savez_compressed(folder / "depth_gt.npz", depth_gt=np.where(sc.mask, sc.depth, np.nan).astype(np.float32))
    return folder


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="diligent,synthetic-2048x1536,synthetic-4096x3072")
    ap.add_argument("--methods", default="fnin,bini")
    ap.add_argument("--data", default=None, help="DiLiGenT folder (default: as fnin bench)")
    ap.add_argument("--bini-max-pixels", type=int, default=1_000_000,
                    help="skip bini above this many masked pixels (it needs many minutes)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(HERE / "results"))
    a = ap.parse_args()
    methods = a.methods.split(",")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"date": datetime.date.today().isoformat(), "threads": a.threads, "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.cases.split(","):
            if name == "diligent":
                _, cases = bench.resolve_cases("diligent", data=a.data)
            else:
                seed, h, w = BIG[name]
                cases = [bench.Case(name, "folder", path=str(write_case(Path(tmp) / name, seed, h, w)))]
            for case in cases:
                inp, _ = case.load()
                run_methods = [m for m in methods
                               if not (m == "bini" and inp.mask.sum() > a.bini_max_pixels)]
                rep = bench.run_bench([case], run_methods, threads=a.threads, isolate=True,
                                      dataset=name)
                report["machine"] = rep["machine"]
                report["runs"][case.name] = {"pixels": int(inp.mask.sum()), "shape": list(inp.shape),
                                             **rep["cases"][case.name]}
                print(case.name, json.dumps({m: {k: r.get(k) for k in ("made_mm", "seconds", "peak_rss_mb")}
                                             for m, r in rep["cases"][case.name].items()}), flush=True)
    (out / "speed.json").write_text(json.dumps(report, indent=1, default=float))
    (out / "speed.md").write_text(markdown(report, methods))
    print(markdown(report, methods))


def markdown(report, methods) -> str:
    m = report.get("machine", {})
    lines = [f"Speed benchmark, {report['date']}: {m.get('cpu', '?')}, {m.get('logical_cores', '?')} logical CPUs, "
             f"{report['threads']} thread(s), device {m.get('device', 'cpu')}, torch {m.get('torch', '?')}.",
             "Seconds = integrate() wall time (no file I/O); peak RSS of a fresh process per run.", "",
             "| case | pixels | " + " | ".join(f"{x} MADE | {x} s | {x} peak MB" for x in methods) + " |",
             "|---|---|" + "---|---|---|" * len(methods)]
    tot = {x: 0.0 for x in methods}
    for name, r in report["runs"].items():
        cells = []
        for x in methods:
            rec = r.get(x)
            if rec is None or rec.get("status") != "ok":
                cells += ["—", "not run" if rec is None else "failed", "—"]
                continue
            tot[x] += rec["seconds"] if name not in BIG else 0.0
            cells += [f"{rec['made_mm']:.4g}", f"{rec['seconds']:.2f}", f"{rec['peak_rss_mb']:.0f}"]
        lines.append(f"| {name} | {r['pixels']:,} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("DiLiGenT total seconds: " + ", ".join(f"{x} {tot[x]:.2f}" for x in methods))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
