"""Stage II's AMG-PCG tolerance for the one-shot (``config.OneShotConfig.solve_rtol``) chosen on
validation-mesh scenes against the exact (sparse LU) solve, by the rule of
docs/decisions.md#solve-rtol (stop 24), written before the run.

On 32 fresh validation-mesh scenes at 612x512 (from ``VAL_SEED0 + 2_600_000``), the
one-shot (``integrate(inp, refine=0)``) with each tolerance and with ``solver="direct"``,
one thread, after one untimed warm-up: per-object error and seconds::

    python studies/stage2-solver/solve_rtol_meshes.py [--scenes 32] [--out studies/stage2-solver/results/solve_rtol_meshes.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, make_mesh_scene
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.train.config import VAL_SEED0

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_error, validation_meshes, variant  # noqa: E402

CANDIDATES = (1e-3, 1e-4, 1e-5, 1e-6)
SEED0 = VAL_SEED0 + 2_600_000


def close_to_exact(errors: list, exact: list) -> bool:
    """The rule's test: the mean within 0.1% of the exact solve's, and no scene off by more
    than both 2% and 0.002 of its error."""
    e, x = np.asarray(errors), np.asarray(exact)
    dev = np.abs(e - x)
    return bool(abs(e.mean() - x.mean()) <= 1e-3 * x.mean() and not np.any((dev > 0.02 * x) & (dev > 0.002)))


def apply_rule(rec: dict):
    """The loosest candidate that is close to the exact solve (None: none is)."""
    ok = [c for c in CANDIDATES if close_to_exact(rec[str(c)]["error"], rec["direct"]["error"])]
    return max(ok) if ok else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=32)
    ap.add_argument("--out", default="studies/stage2-solver/results/solve_rtol_meshes.json")
    ap.add_argument("--seed0", type=int, default=SEED0, help="first scene's seed (the rule's: the default)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    meshes = validation_meshes(a.meshes)
    names = ["direct"] + [str(c) for c in CANDIDATES]
    rec = {n: {"error": [], "seconds": []} for n in names}
    configs = {n: variant() if n == "direct" else variant(one_shot={"solve_rtol": float(n)}) for n in names}
    with limit_threads(1):
        warm = make_mesh_scene(a.seed0, meshes, 64, 64)
        integrate(build_input(warm.normals, None, warm.mask, warm.K), refine=0)
        for i in range(a.scenes):
            sc = make_mesh_scene(a.seed0 + i, meshes, 512, 612)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            for name in names[i % len(names):] + names[:i % len(names)]:
                t0 = time.perf_counter()
                r = integrate(inp, refine=0, solver="direct" if name == "direct" else "auto", config=configs[name])
                rec[name]["seconds"].append(time.perf_counter() - t0)
                rec[name]["error"].append(object_error(r.z, sc, sc.K is not None))
            print(i, {n: round(rec[n]["error"][-1], 5) for n in names}, flush=True)
    summary = {n: {"error": float(np.mean(r["error"])), "seconds": float(np.sum(r["seconds"])),
                   "close_to_exact": n == "direct" or close_to_exact(r["error"], rec["direct"]["error"])}
               for n, r in rec.items()}
    chosen = apply_rule(rec)
    with open(a.out, "w") as fh:
        json.dump({"seed0": a.seed0, "per_scene": rec, "summary": summary, "adopted": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "adopted:", chosen)


if __name__ == "__main__":
    main()
