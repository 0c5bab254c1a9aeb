"""Measured peak memory against the pre-check's estimate (fnin_cli/batch/memory.py).

Renders perspective views of two validation meshes (benchmarks/large_load.py's
``render_case``) from 0.3 to 24 MP with different mask fractions into ``--tmp`` (never
the repo), runs ``fnin integrate CASE -o x.ply --json`` once per (case, method) in a fresh
process, and stores each record's ``peak_rss_mb``, pixels and shape in ``results.json``.
``--report`` prints the table of estimate / peak from ``results.json`` with the estimate
of the code as it is now (no runs).

    python studies/memory-estimate/run.py [--meshes ../shared/data/meshes] [--tmp /tmp/fnin_mem]
    python studies/memory-estimate/run.py --report
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))

# (width, height, radius as a fraction of the short side, methods, extra options)
CASES = [
    (640, 480, 0.39, ("fnin", "bini", "wls"), ()),
    (1024, 768, 0.45, ("fnin", "bini", "wls"), ()),
    (2048, 1536, 0.25, ("fnin", "wls"), ()),
    (3000, 2000, 0.39, ("fnin",), ()),
    (6000, 4000, 0.2, ("fnin",), ()),
    (6000, 4000, 0.39, ("fnin",), ()),
    (6000, 4000, 0.39, ("fnin",), ("--downsample", "4")),
]


def run(args):
    from large_load import render_case

    from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR

    meshes = args.meshes or str(DEFAULT_MESH_DIR)
    out_path = HERE / "results.json"
    results = json.loads(out_path.read_text()) if out_path.exists() else []
    done = {(r["case"], r["method"], tuple(r["extra"])) for r in results}
    for w, h, radius, methods, extra in CASES:
        case = Path(args.tmp) / f"{w}x{h}_r{radius}"
        if not (case / "normal_map.png").exists():
            render_case(case, h, w, meshes, radius)
        for method in methods:
            if (case.name, method, tuple(extra)) in done:
                continue
            cmd = [sys.executable, "-m", "fnin_cli.cli", "integrate", str(case), "-o", str(Path(args.tmp) / "x.ply"),
                   "--force", "--quiet", "--json", "--method", method, *extra]
            out = subprocess.run(cmd, capture_output=True, text=True)
            rec = json.loads(out.stdout.splitlines()[0]) if out.stdout.strip() else {"error": out.stderr[-300:]}
            row = {"case": case.name, "method": method, "extra": list(extra), "shape": rec.get("input_shape")
                   or rec.get("shape"), "pixels": rec.get("pixels"), "peak_rss_mb": rec.get("peak_rss_mb"),
                   "seconds": (rec.get("seconds") or {}).get("total"), "status": rec.get("status"),
                   "error": rec.get("error")}
            print(json.dumps(row), flush=True)
            results.append(row)
            out_path.write_text(json.dumps(results, indent=1) + "\n")


def report():
    from fnin_cli.batch.memory import estimate_bytes

    results = json.loads((HERE / "results.json").read_text())
    print("| case | method | options | masked px | peak MB | estimate MB | estimate / peak |")
    print("|---|---|---|---|---|---|---|")
    worst = []
    for r in results:
        if r["status"] != "ok":
            print(f"| {r['case']} | {r['method']} | {' '.join(r['extra'])} | failed: {r['error']} |")
            continue
        ds = int(r["extra"][1]) if r["extra"][:1] == ["--downsample"] else 1
        full_px = r["pixels"] * ds * ds            # the reduced pixels stand for ds^2 each
        est = estimate_bytes(r["shape"], r["method"], True, full_px, ds) / 2**20
        ratio = est / r["peak_rss_mb"]
        worst.append(ratio)
        print(f"| {r['case']} | {r['method']} | {' '.join(r['extra'])} | {r['pixels']:,} | {r['peak_rss_mb']:.0f} "
              f"| {est:.0f} | {ratio:.2f} |")
    print(f"\nestimate / peak: {min(worst):.2f} .. {max(worst):.2f} (rule: every case within 0.95 .. 1.5)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=None)
    ap.add_argument("--tmp", default="/tmp/fnin_mem")
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()
    report() if a.report else run(a)
