"""Over-relaxed rounds against today's at 2048x1536 (studies/relaxed-rounds/README.md)."""

from __future__ import annotations

import argparse
import json
import time

from fnin_cli.bench.cases import align_objects
from fnin_cli.data.mesh_scenes import bench_scenes
from fnin_cli.pipeline import (REFINE_RTOL, STAGE2_BEFORE_ROUNDS, build_input, classic_lambda, fix_scale,
                               rounds_hierarchy, rounds_prior)
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import integrate_bini
from fnin_cli.solvers.registry import BY_NAME, RunArgs
from fnin_cli.solvers.system import NormalSystem

from relaxed import relaxed_rounds  # noqa: E402  (this folder)

MESHES = "/work/shared/data/meshes"
VIEWS = [(1536, 2048, False, 1), (1536, 2048, False, 2), (1536, 2048, False, 2), (1536, 2048, False, 1)]
START = 24
CANDIDATES = {"today": (1.0, 16), "b2r12": (2.0, 12), "b2r10": (2.0, 10)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    names = list(CANDIDATES)
    out = {"candidates": CANDIDATES, "scenes": {}}
    with limit_threads(1):
        for j, view in enumerate(VIEWS):
            name, sc, _ = bench_scenes(MESHES, views=[view], start=START + j)[0]
            inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
            system = NormalSystem(inp.normals, inp.mask, inp.camera)
            lam = classic_lambda(inp.camera, inp.shape)
            hier = rounds_hierarchy()
            res = BY_NAME["fnin"].run(system, inp, RunArgs("fnin", lam, rtol=STAGE2_BEFORE_ROUNDS, hierarchy=hier))
            bias, k = rounds_prior(system, res.edge_p, None)
            rec = {"pixels": int(inp.mask.sum()), "runs": {}}
            print(name, rec["pixels"], flush=True)
            for cand in names[j % len(names):] + names[:j % len(names)]:
                beta, cap = CANDIDATES[cand]
                t = time.perf_counter()
                if beta == 1.0:     # today's code path itself
                    r = integrate_bini(system, k=k, z0=res.z, lam=lam, z_prior=res.z, max_iter=cap, tol=1e-3,
                                       cg_rtol=REFINE_RTOL, solver="amg", hierarchy=dict(hier), bias=bias)
                else:
                    r = relaxed_rounds(system, k, res.z, lam, cap, 1e-3, beta, REFINE_RTOL, "amg", dict(hier), bias)
                sec = time.perf_counter() - t
                depth, _ = fix_scale(system.to_image(r.z), inp.camera, inp.mask)
                err = align_objects(depth, sc.depth, inp.mask, sc.object_id, True)
                rec["runs"][cand] = {"seconds": sec, "rounds": r.iterations, "made": err["made"],
                                     "objects": {kk: v["made_mm"] for kk, v in err.get("objects", {}).items()}}
                print(f"  {cand}: {sec:.2f} s, {r.iterations} rounds, made {err['made']:.4f}", flush=True)
            out["scenes"][name] = rec
            with open(a.json, "w") as fh:
                json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
