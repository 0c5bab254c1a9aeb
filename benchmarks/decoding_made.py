"""MADE of mis-encoded DiLiGenT copies through the CLI (issue 16's corpus).

Writes the copies of benchmarks/convention_check.py (green-down, BGR, z- and x-flipped
16-bit PNGs, (n+1)/2 and raw float EXRs, OpenCV-frame NPY) under a temporary folder
(never the repo), runs ``fnin integrate <copy> --mask --K --json -o <tmp>.npy`` with the
default method and the default ``--convention auto`` (and with an explicit ``--convention
ps`` for the exit status), and prints a markdown table: decoding used, MADE vs
depth_gt.npz (scale = nanmedian(gt/est) over the mask, MADE = nanmean |scale est - gt|),
ratio to the correct PNG, and the check's seconds from the record.

    python benchmarks/decoding_made.py [--objects bear,reading] [--tmp /tmp/fnin_made]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convention_check import DATA, make_copies  # noqa: E402

from fnin_cli.bench.cases import align_and_errors  # noqa: E402
from fnin_cli.io import read_mask  # noqa: E402


def run(npath: Path, case: Path, out: Path, *extra) -> dict:
    cmd = [sys.executable, "-m", "fnin_cli", "integrate", str(npath), "--mask", str(case / "mask.png"),
           "--K", str(case / "K.txt"), "-o", str(out), "--force", "--json", "--quiet", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    rec = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    rec["exit"] = p.returncode
    rec["stderr"] = p.stderr.strip()
    return rec


def made(case: Path, out: Path) -> float:
    gt = np.load(case / "depth_gt.npz")["depth_gt"].astype(np.float64)
    est = np.load(out).astype(np.float64)
    return align_and_errors(est, gt, read_mask(case / "mask.png", gt.shape), True)["made"]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", default="bear,reading")
    ap.add_argument("--tmp", default="/tmp/fnin_made")
    a = ap.parse_args(argv)
    print("| object | input | decoding used (auto) | MADE mm | vs correct | check ms | explicit `--convention ps` |")
    print("|---|---|---|---:|---:|---:|---|")
    for obj in a.objects.split(","):
        case = DATA / "diligent" / obj
        paths = {"correct.png": case / "normal_map.png", **make_copies(case, Path(a.tmp) / obj)}
        ref = None
        for name, p in paths.items():
            out = Path(a.tmp) / obj / f"out_{name}.npy"
            rec = run(p, case, out)
            strict = run(p, case, Path(a.tmp) / obj / f"strict_{name}.npy", "--convention", "ps")
            st = "exit 0" if strict["exit"] == 0 else f"exit {strict['exit']}: " + _hint(strict["stderr"])
            if rec["exit"] != 0:
                print(f"| {obj} | {name} | refused | | | | {st} |  <!-- {rec['stderr'][:200]} -->")
                continue
            e = made(case, out)
            ref = e if name == "correct.png" else ref
            print(f"| {obj} | {name} | {rec['convention']} | {e:.2f} | {e / ref:.3f} | "
                  f"{1000 * rec['seconds'].get('check', float('nan')):.0f} | {st} |", flush=True)


def _hint(stderr: str) -> str:
    line = stderr.splitlines()[0] if stderr else ""
    for key in ("--float-encoding half", "--channels bgr", "--convention directx", "--convention opencv",
                "--flip x", "--flip z", "face away"):
        if key in line:
            return f"`{key}`"
    return line[:60]


if __name__ == "__main__":
    sys.exit(main())
