"""The rounds after FNIN with their first rounds solved to a looser tolerance, against
every round at ``REFINE_RTOL`` (docs/decisions.md#rounds-rtol-schedule), by the rule
written before the run.

On fresh validation-mesh scenes (32 from ``VAL_SEED0 + 2_800_000``, 384 px), per object
(the objects of ``default_rounds.object_errors``): ``bini`` and the default with each
``pipeline.ROUNDS_EARLY_RTOL``, the schedules in a rotated order per scene, one thread::

    python benchmarks/rounds_rtol_schedule.py [--scenes 32] [--out benchmarks/results/rounds_rtol_schedule.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from default_rounds import object_errors, validation_meshes
from fnin_cli import pipeline
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, make_mesh_scene
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.train.config import VAL_SEED0
from rounds_k_robust import over_bound

CANDIDATES = {"today": None, "1e-2x6": (1e-2, 6), "1e-2x8": (1e-2, 8)}
SEED0 = VAL_SEED0 + 2_800_000


def apply_rule(summary: dict):
    """The cheapest candidate within 1.01x today's error and 0.95x its seconds that puts no
    more objects over the per-object bound; None: today's stays."""
    today = summary["today"]
    ok = [n for n in CANDIDATES if n != "today" and summary[n]["error"] <= 1.01 * today["error"]
          and summary[n]["seconds"] <= 0.95 * today["seconds"] and summary[n]["over_bound"] <= today["over_bound"]]
    return min(ok, key=lambda n: summary[n]["seconds"]) if ok else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=32)
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("--out", default="benchmarks/results/rounds_rtol_schedule.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    meshes = validation_meshes(a.meshes)
    names = list(CANDIDATES)
    rec = {n: {"errors": [], "seconds": 0.0} for n in names + ["bini"]}
    shipped = pipeline.ROUNDS_EARLY_RTOL
    with limit_threads(1):
        try:
            for i in range(a.scenes):
                sc = make_mesh_scene(SEED0 + i, meshes, a.size)
                inp = build_input(sc.normals, None, sc.mask, sc.K)
                for name in ["bini"] + names[i % len(names):] + names[:i % len(names)]:
                    if name != "bini":
                        pipeline.ROUNDS_EARLY_RTOL = CANDIDATES[name]
                    t0 = time.perf_counter()
                    r = integrate(inp, "bini") if name == "bini" else integrate(inp)
                    rec[name]["seconds"] += time.perf_counter() - t0
                    rec[name]["errors"].append(object_errors(r.z, sc, sc.K is not None))
                print(i, {n: [round(e, 4) for e in rec[n]["errors"][-1]] for n in rec}, flush=True)
        finally:
            pipeline.ROUNDS_EARLY_RTOL = shipped
    bini = [e for errs in rec["bini"]["errors"] for e in errs]
    summary = {"bini": {"error": float(np.mean(bini)), "objects": len(bini), "seconds": rec["bini"]["seconds"]}}
    for n in names:
        flat = [e for errs in rec[n]["errors"] for e in errs]
        summary[n] = {"error": float(np.mean(flat)), "seconds": rec[n]["seconds"],
                      "over_bound": int(sum(over_bound(e, b) for e, b in zip(flat, bini)))}
    chosen = apply_rule(summary)
    with open(a.out, "w") as fh:
        json.dump({"seed0": SEED0, "per_scene": rec, "summary": summary, "adopted": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "adopted:", chosen)


if __name__ == "__main__":
    main()
