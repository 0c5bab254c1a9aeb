"""The one-shot's AMG strength threshold (``solvers.stage2.ONE_SHOT_THETA``) against
today's (``linear.SA_THETA``), by the rule of docs/decisions.md#one-shot-theta, written
before the run.

On fresh scenes never used for training or an earlier choice (24 validation-mesh scenes
at 612x512 from ``VAL_SEED0 + 2_200_000``), the one-shot (``integrate(inp, refine=0)``)
with each threshold, the configurations in a rotated order per scene, one thread: the
per-object error and the seconds (after one untimed warm-up run that loads the model)::

    python benchmarks/one_shot_theta.py [--scenes 24] [--out benchmarks/results/one_shot_theta.json]

``--dev SEED`` runs the same comparison on scenes from the *training* meshes (a
development look; no choice).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from default_rounds import object_error, validation_meshes
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, is_validation, load_meshes, make_mesh_scene
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.solvers import stage2
from fnin_cli.train.config import VAL_SEED0

CANDIDATES = (0.08, 0.1)
SEED0 = VAL_SEED0 + 2_200_000


def evaluate(names: list, meshes, scenes: int, seed0: int, h: int = 512, w: int = 612) -> dict:
    """Per-scene error and seconds of the one-shot per threshold ("off": None)."""
    shipped = stage2.ONE_SHOT_THETA
    rec = {name: {"error": [], "seconds": []} for name in names}
    with limit_threads(1):
        try:
            warm = make_mesh_scene(seed0, meshes, 64, 64)
            integrate(build_input(warm.normals, None, warm.mask, warm.K), refine=0)
            for i in range(scenes):
                sc = make_mesh_scene(seed0 + i, meshes, h, w)
                inp = build_input(sc.normals, None, sc.mask, sc.K)
                for name in names[i % len(names):] + names[:i % len(names)]:
                    stage2.ONE_SHOT_THETA = None if name == "off" else float(name)
                    t0 = time.perf_counter()
                    r = integrate(inp, refine=0)
                    rec[name]["seconds"].append(time.perf_counter() - t0)
                    rec[name]["error"].append(object_error(r.z, sc, sc.K is not None))
                print(i, {n: (round(rec[n]["error"][-1], 5), round(rec[n]["seconds"][-1], 3)) for n in names},
                      flush=True)
        finally:
            stage2.ONE_SHOT_THETA = shipped
    return rec


def apply_rule(summary: dict):
    """The adopted threshold: the fewest seconds among the candidates whose mean error is
    within 0.1% of today's and whose seconds are at most 0.97x today's (None: today's stays)."""
    o = summary["off"]
    ok = [c for c in CANDIDATES if abs(summary[str(c)]["error"] - o["error"]) <= 1e-3 * o["error"]
          and summary[str(c)]["seconds"] <= 0.97 * o["seconds"]]
    return min(ok, key=lambda c: summary[str(c)]["seconds"]) if ok else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=24)
    ap.add_argument("--out", default="benchmarks/results/one_shot_theta.json")
    ap.add_argument("--dev", type=int, default=None, help="first seed of a development look on training meshes")
    a = ap.parse_args()
    torch.set_num_threads(1)
    names = ["off"] + [str(c) for c in CANDIDATES]
    if a.dev is None:
        seed0, meshes = SEED0, validation_meshes(a.meshes)
    else:
        seed0 = a.dev
        meshes = {k: v for k, v in load_meshes(a.meshes).items() if not is_validation(k)}
    rec = evaluate(names, meshes, a.scenes, seed0)
    summary = {n: {"error": float(np.mean(r["error"])), "seconds": float(np.sum(r["seconds"]))}
               for n, r in rec.items()}
    chosen = apply_rule(summary) if a.dev is None else "development look: no choice"
    with open(a.out, "w") as fh:
        json.dump({"seed0": seed0, "per_scene": rec, "summary": summary, "adopted": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "adopted:", chosen)


if __name__ == "__main__":
    main()
