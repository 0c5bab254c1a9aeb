"""BiNI's k in the rounds that carry the edge-net prior, chosen by how many objects end
above the issue's per-object bound against ``bini`` (docs/decisions.md#rounds-k-robust),
by a rule written before the run.

On fresh validation-mesh scenes (64 from ``VAL_SEED0 + 2_500_000``, 384 px), per object
(the objects of ``default_rounds.object_errors``): ``bini`` and the default with each k,
the configurations in a rotated order per scene, one thread::

    python studies/rounds-k/rounds_k_robust.py [--scenes 64] [--out studies/rounds-k/results/rounds_k_robust.json]
        [--size H --width W --seed0 N]   # the stop-26 re-run: 512 x 612 from VAL_SEED0 + 3_300_000
"""

from __future__ import annotations

import json
import time

import numpy as np
import torch

from fnin_cli.data.mesh_scenes import make_mesh_scene
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.train.config import VAL_SEED0

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_errors, parse_args, validation_meshes, variant  # noqa: E402

CANDIDATES = (2.0, 2.5, 3.0)
SEED0 = VAL_SEED0 + 2_500_000


def over_bound(err: float, bini: float) -> bool:
    """The issue's per-object bound in relative-error units: max(1.25x bini's, bini's + 0.005)."""
    return err > max(1.25 * bini, bini + 0.005)


def apply_rule(summary: dict, today: float = 3.0):
    """Among the k whose seconds are at most 1.05x today's, the one with the fewest objects
    over their bound; a tie goes to the lower mean error."""
    ok = [k for k in CANDIDATES if summary[str(k)]["seconds"] <= 1.05 * summary[str(today)]["seconds"]]
    return min(ok, key=lambda k: (summary[str(k)]["over_bound"], summary[str(k)]["error"]))


def main():
    a = parse_args(__doc__.splitlines()[0], "studies/rounds-k/results/rounds_k_robust.json", scenes=64, dev=False,
                   seed0=SEED0)
    torch.set_num_threads(1)
    meshes = validation_meshes(a.meshes)
    names = [str(k) for k in CANDIDATES]
    rec = {n: {"errors": [], "seconds": 0.0} for n in names + ["bini"]}
    configs = {n: variant(rounds={"k": float(n)}) for n in names}
    with limit_threads(1):
        for i in range(a.scenes):
            sc = make_mesh_scene(a.seed0 + i, meshes, a.size, a.width)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            persp = sc.K is not None
            for name in ["bini"] + names[i % len(names):] + names[:i % len(names)]:
                t0 = time.perf_counter()
                r = integrate(inp, "bini") if name == "bini" else integrate(inp, config=configs[name])
                rec[name]["seconds"] += time.perf_counter() - t0
                rec[name]["errors"].append(object_errors(r.z, sc, persp))
            print(i, {n: [round(e, 4) for e in rec[n]["errors"][-1]] for n in rec}, flush=True)
    bini = [e for errs in rec["bini"]["errors"] for e in errs]
    summary = {"bini": {"error": float(np.mean(bini)), "objects": len(bini), "seconds": rec["bini"]["seconds"]}}
    for n in names:
        flat = [e for errs in rec[n]["errors"] for e in errs]
        summary[n] = {"error": float(np.mean(flat)), "seconds": rec[n]["seconds"],
                      "over_bound": int(sum(over_bound(e, b) for e, b in zip(flat, bini))),
                      "better_than_bini": int(sum(e < b for e, b in zip(flat, bini)))}
    chosen = apply_rule(summary)
    with open(a.out, "w") as fh:
        json.dump({"seed0": a.seed0, "size": [a.size, a.width or a.size], "per_scene": rec, "summary": summary, "adopted": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "adopted:", chosen)


if __name__ == "__main__":
    main()
