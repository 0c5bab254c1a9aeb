"""Banded rounds against today's (studies/banded-rounds/README.md).

Per scene: the network and Stage II once (the default's, its AMG hierarchy kept for the
rounds), then today's rounds (``integrate_bini``, the package's own code path) and each
candidate from that same output, in an order rotated per scene, each timed alone and
each from a copy of the Stage II hierarchy; per-object error after the default scale
fix. One thread. Usage (repository root)::

    PYTHONPATH=$PWD:studies/banded-rounds python studies/banded-rounds/measure.py s2k --json studies/banded-rounds/s2k.json
    PYTHONPATH=$PWD:studies/banded-rounds python studies/banded-rounds/measure.py s24 --only today,b2r8c --json studies/banded-rounds/s24.json
    PYTHONPATH=$PWD:studies/banded-rounds python studies/banded-rounds/measure.py s2k --design extrapolated --json studies/banded-rounds/s2k_x.json
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import torch

from fnin_cli.bench.camera_views import camera_view_set, parse_frame
from fnin_cli.bench.cases import align_objects
from fnin_cli.config import DEFAULT
from fnin_cli.data.mesh_scenes import bench_scenes
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input, classic_lambda, fix_scale, rounds_prior
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import integrate_bini
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.registry import BY_NAME, RunArgs
from fnin_cli.solvers.system import NormalSystem

from banded import Banded, Extrapolated, banded_rounds, extrapolated_rounds  # noqa: E402  (this folder, run as a script)

MESHES = "/work/shared/data/meshes"
S2K_VIEWS = [(1536, 2048, False, 1), (1536, 2048, False, 2), (1536, 2048, False, 2), (1536, 2048, False, 1)]
DESIGNS = {
    "banded": ({"today": None, "b2r8": Banded(2, 0.01, 8, False), "b2r8c": Banded(2, 0.01, 8, True),
                "b2r4": Banded(2, 0.01, 4, False)}, 40),
    "extrapolated": ({"today": None, "x0": Extrapolated(None), "x1": Extrapolated(1), "x2": Extrapolated(2)}, 44),
}


def scenes(which, start):
    if which == "s24":
        yield from ((n, sc) for n, sc, _ in camera_view_set(MESHES, parse_frame("6000x4000")))
        return
    for j, view in enumerate(S2K_VIEWS):
        name, sc, _ = bench_scenes(MESHES, views=[view], start=start + j)[0]
        yield name, sc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("set", choices=["s2k", "s24"])
    ap.add_argument("--json", required=True)
    ap.add_argument("--design", choices=list(DESIGNS), default="banded")
    ap.add_argument("--only", default=None, help="comma-separated candidate names")
    a = ap.parse_args()
    CANDIDATES, start = DESIGNS[a.design]
    names = list(CANDIDATES) if a.only is None else a.only.split(",")
    cfg, R = DEFAULT, DEFAULT.rounds
    out = {"set": a.set, "design": a.design, "candidates": {n: str(CANDIDATES[n]) for n in names}, "scenes": {}}
    with limit_threads(1):
        torch.set_num_threads(1)
        model = load_model(device="cpu")
        for j, (name, sc) in enumerate(scenes(a.set, start)):
            inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
            system = NormalSystem(inp.normals, inp.mask, inp.camera)
            lam = classic_lambda(inp.camera, inp.shape, cfg.solver.lam)
            hier = AMGCache(R.refresh_every, R.rebuild_after)
            t = time.perf_counter()
            res = BY_NAME["fnin"].run(system, inp, RunArgs(lam, cfg, "auto", "cpu", model, rtol=R.stage2_rtol,
                                                           hierarchy=hier))
            rec = {"pixels": int(inp.mask.sum()), "method_seconds": time.perf_counter() - t, "runs": {}}
            print(name, rec["pixels"], "px, method", round(rec["method_seconds"], 1), "s", flush=True)
            bias, k = rounds_prior(system, res.edge_p, cfg)
            for cand in names[j % len(names):] + names[:j % len(names)]:
                h2 = copy.copy(hier)   # the Stage II hierarchy as it was: the same start for each
                t = time.perf_counter()
                if CANDIDATES[cand] is None:      # today's code path itself
                    r = integrate_bini(system, k=k, z0=res.z, lam=lam, z_prior=res.z, max_iter=R.max_rounds,
                                       tol=R.tol, cg_rtol=R.inner_rtol, cg_maxiter=cfg.solver.maxiter,
                                       solver=R.solver, hierarchy=h2, bias=bias)
                elif isinstance(CANDIDATES[cand], Extrapolated):
                    r = extrapolated_rounds(system, k, res.z, lam, R.max_rounds, R.tol, R.inner_rtol,
                                            cfg.solver.maxiter, R.solver, h2, bias, CANDIDATES[cand])
                else:
                    r = banded_rounds(system, k, res.z, lam, R.max_rounds, R.tol, R.inner_rtol, cfg.solver.maxiter,
                                      R.solver, h2, bias, CANDIDATES[cand])
                sec = time.perf_counter() - t
                depth, _ = fix_scale(system.to_image(r.z), inp.camera, inp.mask)
                err = align_objects(depth, sc.depth, inp.mask, sc.object_id, True)
                per = {kk: v["made_mm"] for kk, v in err.get("objects", {}).items()} or {"all": err["made"]}
                rec["runs"][cand] = {"seconds": sec, "rounds": r.iterations, "made": err["made"], "objects": per,
                                     "bands": r.seconds.get("bands", [])}
                print(f"  {cand}: {sec:.2f} s, {r.iterations} rounds, made {err['made']:.4f} {per} "
                      f"bands {r.seconds.get('bands', [])}", flush=True)
            out["scenes"][name] = rec
            with open(a.json, "w") as fh:
                json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
