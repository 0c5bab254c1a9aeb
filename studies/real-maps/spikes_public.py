"""Isolated depth pixels (issue 51 item 4) on DiLiGenT and the public maps of shared/data/real:
the default against bini (and DiLiGenT's truth). Two counts per map: pixels off the median of
their masked 8-neighbours by more than 0.2 of the depth range (tests/helpers.count_isolated,
the issue's count, with the worst in ranges), and pixels whose *nearest* masked 8-neighbour is
more than 0.1 of the range away (far from every neighbour; the first count also counts pixels
along sharp occlusion edges). A measurement only (round 5, third and fourth sessions).

    PYTHONPATH=$PWD python studies/real-maps/spikes_public.py [--json OUT]
"""

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))

from helpers import count_far, count_isolated  # noqa: E402,F401  (the tests' own counts; spikes_renders reads count_far here)
from fnin_cli.pipeline import integrate, load_input  # noqa: E402

DILIGENT = ("bear", "buddha", "cat", "cow", "goblet", "harvest", "pot1", "pot2", "reading")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    paths = [DATA / "diligent" / o for o in DILIGENT] + sorted(p for p in (DATA / "real").iterdir() if p.is_dir())
    out = {}
    for p in paths:
        inp = load_input(p)
        row = {}
        for name, (depth, mask) in [(m, (r.depth, r.mask)) for m, r in ((m, integrate(inp, m)) for m in ("fnin", "bini"))]:
            n, worst = count_isolated(depth, mask)
            row[name] = {"median_count": n, "worst": round(worst, 3), "far": count_far(depth, mask)}
        gt = p / "depth_gt.npz"
        if gt.exists():
            g = np.load(gt)["depth_gt"]
            m = inp.mask & np.isfinite(g)
            row["truth"] = {"median_count": count_isolated(g, m)[0], "far": count_far(g, m)}
        d, b = row["fnin"], row["bini"]
        over = "  <-- far over bini" if d["far"] > b["far"] else ""
        truth = f"   truth {row['truth']['median_count']:4d} {row['truth']['far']:2d}" if "truth" in row else ""
        print(f"{p.name:14s} default {d['median_count']:4d} {d['worst']:.3f} far {d['far']:2d}   "
              f"bini {b['median_count']:4d} {b['worst']:.3f} far {b['far']:2d}{truth}{over}", flush=True)
        out[p.name] = row
    tot = {k: sum(r[k]["far"] for r in out.values()) for k in ("fnin", "bini")}
    print(f"far total: default {tot['fnin']}, bini {tot['bini']}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
