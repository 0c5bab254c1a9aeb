"""The edge weights' sharpness at inference, on real-mesh and procedural scenes
(docs/decisions.md#edge-sharpness).

For each candidate ``solvers.stage2.EDGE_SHARPNESS`` (the first is today's), on fresh
scenes never used for training or an earlier choice: the one-shot (``refine=0``) and the
default on 24 scenes rendered from the validation meshes (per-object error of
``default_rounds.object_error``) and the one-shot on 24 procedural scenes (the synthetic
validation metric, ``data.synthetic.relative_error``), candidates interleaved per scene;
then the rule written down before the run::

    python benchmarks/edge_sharpness.py [--scenes 24] [--size 384] [--out benchmarks/results/edge_sharpness_meshes.json]
"""

from __future__ import annotations

import json
import time

import numpy as np
import torch

from candidate_rules import parse_args, scene_pair
from default_rounds import object_error, validation_meshes
from fnin_cli.data.synthetic import relative_error
from fnin_cli.pipeline import integrate
from fnin_cli.resources import limit_threads
from fnin_cli.solvers import stage2
from fnin_cli.train.config import VAL_SEED0

CANDIDATES = (2.0, 3.0, 4.0)
MESH_SEED0 = VAL_SEED0 + 800_000
PROC_SEED0 = VAL_SEED0 + 80_000


def apply_rule(summary: dict) -> float:
    """The chosen sharpness: the lowest one-shot mesh error among the candidates that
    pass (:func:`passes`) against today's."""
    today = summary[str(CANDIDATES[0])]
    ok = [a for a in CANDIDATES[1:] if passes(summary[str(a)], today)]
    return min(ok, key=lambda a: summary[str(a)]["oneshot_meshes"]) if ok else CANDIDATES[0]


def evaluate(configs: dict, meshes, scenes: int, size: int, mesh_seed0: int, proc_seed0: int) -> dict:
    """Per-scene errors of each configuration (name -> (sharpness, model or None[, sliver
    gate])): the one-shot and the default on validation-mesh scenes, the one-shot on
    procedural ones, configurations interleaved per scene; "seconds": the three runs'
    ``integrate`` time per scene (one thread)."""
    shipped = stage2.EDGE_SHARPNESS, stage2.SLIVER_GATE
    keys = ("oneshot_meshes", "default_meshes", "oneshot_procedural", "seconds")
    rec = {name: {k: [] for k in keys} for name in configs}
    with limit_threads(1):
        try:
            for i in range(scenes):
                sc, inp, ps, pinp = scene_pair(i, meshes, size, mesh_seed0, proc_seed0)
                persp = sc.K is not None
                for name, (sharpness, model, *gate) in configs.items():
                    stage2.EDGE_SHARPNESS = sharpness
                    stage2.SLIVER_GATE = gate[0] if gate else shipped[1]
                    r = rec[name]
                    t0 = time.perf_counter()
                    one = integrate(inp, refine=0, model=model).z
                    default = integrate(inp, model=model).z
                    proc = integrate(pinp, refine=0, model=model).z
                    r["seconds"].append(time.perf_counter() - t0)
                    r["oneshot_meshes"].append(object_error(one, sc, persp))
                    r["default_meshes"].append(object_error(default, sc, persp))
                    r["oneshot_procedural"].append(relative_error(proc[pinp.mask], ps.unknown[pinp.mask]))
                print(i, {n: tuple(round(v[-1], 4) for v in rec[n].values()) for n in configs}, flush=True)
        finally:
            stage2.EDGE_SHARPNESS, stage2.SLIVER_GATE = shipped
    return rec


def passes(candidate: dict, today: dict) -> bool:
    """The rule's bounds (mean errors): one-shot on meshes <= 0.95x, one-shot procedural
    <= 1.02x, default on meshes <= 1.01x today's."""
    return (candidate["oneshot_meshes"] <= 0.95 * today["oneshot_meshes"]
            and candidate["oneshot_procedural"] <= 1.02 * today["oneshot_procedural"]
            and candidate["default_meshes"] <= 1.01 * today["default_meshes"])


def main():
    a = parse_args(__doc__.splitlines()[0], "benchmarks/results/edge_sharpness_meshes.json", scenes=24, dev=False)
    torch.set_num_threads(1)
    meshes = validation_meshes(a.meshes)
    rec = evaluate({str(c): (c, None) for c in CANDIDATES}, meshes, a.scenes, a.size, MESH_SEED0, PROC_SEED0)
    summary = {c: {k: float(np.mean(v)) for k, v in r.items()} for c, r in rec.items()}
    chosen = apply_rule(summary)
    with open(a.out, "w") as fh:
        json.dump({"per_scene": rec, "summary": summary, "chosen": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "chosen:", chosen)


if __name__ == "__main__":
    main()
