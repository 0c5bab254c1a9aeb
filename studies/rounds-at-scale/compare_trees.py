"""The default on one `fnin bench meshes` view with two checkouts of fnin, in alternating
fresh processes: seconds per stage, peak memory, page faults and a hash of the depth.

    python studies/rounds-at-scale/compare_trees.py BEFORE_DIR AFTER_DIR [--view 6000x4000 | --view NAME] [--pairs 1] [--out results/x.json]

BEFORE_DIR/AFTER_DIR: trees of the package (e.g. ``git archive <commit> | tar -x -C DIR``).
``--view WxH``: the camera-size view of ``fnin bench meshes --size WxH``; else the first of
the 14 bench views whose name contains NAME (after one untimed warm-up run on it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

MESHES = "/work/shared/data/meshes"
CHILD = r'''
import hashlib, json, resource, sys, time
from fnin_cli.resources import PeakMemory, limit_threads, release_memory
from fnin_cli.bench.cases import mesh_cases
from fnin_cli.pipeline import integrate
view = sys.argv[1]
with limit_threads(1):
    if "x" in view and view.replace("x", "").isdigit():
        case = mesh_cases(%r, frame=tuple(int(v) for v in view.split("x")))[0]
    else:
        case = [c for c in mesh_cases(%r) if view in c.name][0]
    inp, gt = case.load()
    if case.frame is None:
        integrate(inp, "fnin")
    release_memory()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with PeakMemory() as mem:
        t = time.perf_counter()
        res = integrate(inp, "fnin")
        sec = time.perf_counter() - t
    f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({"seconds": sec, "stages": res.seconds, "peak_mb": mem.peak / 1024, "base_mb": mem.base / 1024,
                  "faults": f1 - f0, "depth_sha1": hashlib.sha1(res.depth.tobytes()).hexdigest()}))
''' % (MESHES, MESHES)


def run(tree: str, view: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    out = subprocess.run([sys.executable, "-c", CHILD, view], capture_output=True, text=True, env=env,
                         cwd=tree, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--view", default="6000x4000")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    runs = []
    for i in range(a.pairs):
        order = [("before", a.before), ("after", a.after)]
        for name, tree in (order if i % 2 == 0 else order[::-1]):
            r = dict(run(tree, a.view), tree=name, pair=i)
            runs.append(r)
            print(f"{name:6s} {r['seconds']:7.2f} s  rounds {r['stages'].get('refine', 0):6.2f} s  "
                  f"peak {r['peak_mb']:7.0f} MB  faults {r['faults']:8d}  {r['depth_sha1'][:12]}", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps({"view": a.view, "before": a.before, "after": a.after, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
