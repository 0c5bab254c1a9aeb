"""Multiscale rounds against today's rounds (studies/multiscale-rounds/README.md).

Per scene: the network and Stage II run once (the default's method output, its AMG
hierarchy kept), then today's rounds and each candidate's from that same output, in a
rotated order, each timed alone; per-object error after the default scale fix. One
thread. Usage (from the repository root)::

    PYTHONPATH=$PWD:studies/multiscale-rounds python studies/multiscale-rounds/measure.py s2k --json studies/multiscale-rounds/s2k.json
    PYTHONPATH=$PWD:studies/multiscale-rounds python studies/multiscale-rounds/measure.py s24 --json studies/multiscale-rounds/s24.json
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import numpy as np

from fnin_cli.bench.cases import align_objects
from fnin_cli.data.mesh_scenes import bench_scenes
from fnin_cli.pipeline import build_input, classic_lambda, fix_scale, rounds_hierarchy, STAGE2_BEFORE_ROUNDS
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.registry import BY_NAME, DEFAULT_ROUNDS, RunArgs
from fnin_cli.solvers.system import NormalSystem

from multiscale import Multiscale, run_rounds  # noqa: E402  (this folder, run as a script)

MESHES = "/work/shared/data/meshes"
S2K = ([(1536, 2048, False, 1), (1536, 2048, False, 2), (1536, 2048, False, 2), (1536, 2048, False, 1)], 20)
S24 = ([(4000, 6000, False, 2)], 12)    # the `fnin bench meshes --size 6000x4000` view
TODAY = Multiscale(factor=1)
CANDIDATES = {"today": TODAY, "f2n1": Multiscale(2, 1, 0), "f2n2": Multiscale(2, 2, 0),
              "f4n1": Multiscale(4, 1, 0), "f4n2": Multiscale(4, 2, 0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("set", choices=["s2k", "s24"])
    ap.add_argument("--json", required=True)
    ap.add_argument("--only", default=None, help="comma-separated candidate names")
    a = ap.parse_args()
    names = list(CANDIDATES) if a.only is None else a.only.split(",")
    views, start = S2K if a.set == "s2k" else S24
    results = {"set": a.set, "candidates": {n: str(CANDIDATES[n]) for n in names}, "scenes": {}}
    with limit_threads(1):
        for j, (h, w, o, nobj) in enumerate(views):
            t = time.perf_counter()
            name, sc, _ = bench_scenes(MESHES, views=[(h, w, o, nobj)], start=start + j)[0]
            inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
            print(name, int(inp.mask.sum()), "px, render", round(time.perf_counter() - t, 1), "s", flush=True)
            system = NormalSystem(inp.normals, inp.mask, inp.camera)
            lam = classic_lambda(inp.camera, inp.shape)
            hier = rounds_hierarchy()
            t = time.perf_counter()
            out = BY_NAME["fnin"].run(system, inp, RunArgs("fnin", lam, rtol=STAGE2_BEFORE_ROUNDS, hierarchy=hier))
            pre = time.perf_counter() - t
            rec = {"pixels": int(inp.mask.sum()), "method_seconds": pre, "method_stage_seconds": out.seconds,
                   "runs": {}}
            order = names[j % len(names):] + names[:j % len(names)]
            for cand in order:
                h2 = dict(hier)       # the Stage II hierarchy as it was: the same start for each
                t = time.perf_counter()
                r = run_rounds(system, inp.normals, out.z, out.edge_p, DEFAULT_ROUNDS, lam, None, h2,
                               multiscale=CANDIDATES[cand])
                sec = time.perf_counter() - t
                depth, _ = fix_scale(system.to_image(r.z), inp.camera, inp.mask)
                err = align_objects(depth, sc.depth, inp.mask, sc.object_id, True)
                per = {k: v["made_mm"] for k, v in err.get("objects", {}).items()} or {"all": err["made"]}
                rec["runs"][cand] = {"seconds": sec, "rounds": r.iterations, "made": err["made"], "objects": per,
                                     "scale_seconds": {k: v for k, v in r.seconds.items() if k != "solve"}}
                print(f"  {cand}: {sec:.2f} s, {r.iterations} rounds, made {err['made']:.4f} {per}", flush=True)
            results["scenes"][name] = rec
            with open(a.json, "w") as fh:
                json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
