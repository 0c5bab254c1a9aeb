"""BiNI's sharpness k in the rounds after FNIN: a development look (docs/decisions.md#rounds-k).

On development scenes rendered from the *training* meshes (seeds 777000 + i, 384 px;
never used for a choice), runs FNIN's one-shot and then 24 BiNI rounds with a fixed k
(1, 2, 4, 8) or one rising from 2 to 8 (x1.5 per round), and records the per-object
error of ``default_rounds.object_error`` after 2, 4, 8, 12, 16 and 24 rounds, with
``bini`` (k = 2 from its own start) beside it::

    python studies/rounds-k/rounds_k.py [--scenes 6] [--out studies/rounds-k/results/rounds_k_dev.json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, is_validation, load_meshes, make_mesh_scene
from fnin_cli.pipeline import build_input, classic_lambda, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import bini_weights
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.system import NormalSystem

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_error  # noqa: E402

SCHEDULES = {"k1": lambda i: 1.0, "k2": lambda i: 2.0, "k4": lambda i: 4.0, "k8": lambda i: 8.0,
             "ramp2-8": lambda i: min(8.0, 2.0 * 1.5 ** i)}
CHECK = (2, 4, 8, 12, 16, 24)


def scene_record(sc) -> dict:
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    persp = sc.K is not None
    res = integrate(inp, "fnin", refine=0)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    lam = classic_lambda(inp.camera, inp.shape)
    z0 = res.z[inp.mask]
    rec = {"one": object_error(res.z, sc, persp)}
    for name, k_of in SCHEDULES.items():
        z, cache, errs = z0.copy(), AMGCache(), {}
        w = bini_weights(system, z, k_of(0))
        for i in range(1, max(CHECK) + 1):
            z, _ = system.solve(w, lam=lam, z_prior=z0, x0=z, method="amg", rtol=1e-3, hierarchy=cache)
            w = bini_weights(system, z, k_of(i))
            if i in CHECK:
                errs[i] = object_error(system.to_image(z), sc, persp)
        rec[name] = errs
    rec["bini"] = object_error(integrate(inp, "bini").z, sc, persp)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=6)
    ap.add_argument("--out", default="studies/rounds-k/results/rounds_k_dev.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    meshes = {k: v for k, v in load_meshes(a.meshes).items() if not is_validation(k)}
    out = {}
    with limit_threads(1):
        for s in range(a.scenes):
            out[s] = scene_record(make_mesh_scene(777000 + s, meshes, 384))
            print(s, {k: round(v, 4) if isinstance(v, float) else round(v[8], 4) for k, v in out[s].items()}, flush=True)
    for name in SCHEDULES:
        print(name, {n: round(float(np.mean([r[name][n] for r in out.values()])), 4) for n in (8, 24)})
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
