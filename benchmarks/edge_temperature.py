"""Does sharpening (or softening) the edge net's weights help Stage II? Synthetic only.

Each weight w in (0, 1) the edge net gives becomes sigmoid(a * logit(w)) for a temperature
factor a (a = 1: as trained), optionally kept in [floor, 1 - floor] (``--floors``: no
neighbour pair cut completely), then fnin's one solve runs as usual. Scenes and metric are
those of compare_models.py (synthetic validation seeds, never DiLiGenT):

    python benchmarks/edge_temperature.py --scenes 24 --res 512 --layouts independent,stacked,fold \
        --factors 0.5,0.75,1,1.5,2,3 --json benchmarks/results/edge_temperature.json
    python benchmarks/edge_temperature.py --factors 2 --floors 0,0.003,0.01,0.03 --seed-offset 40000
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from fnin_cli import fnin as F
from fnin_cli.pipeline import build_input, classic_lambda
from fnin_cli.synthetic import make_scene, relative_error
from fnin_cli.train import VAL_SEED0
from fnin_cli.wls import NormalSystem

LAYOUTS = {"independent": (0.0, 0.0), "stacked": (1.0, 0.0), "fold": (0.0, 1.0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", default=None)
    ap.add_argument("--scenes", type=int, default=24)
    ap.add_argument("--res", type=int, default=512)
    ap.add_argument("--layouts", default="independent,stacked,fold")
    ap.add_argument("--factors", default="0.5,0.75,1,1.5,2,3")
    ap.add_argument("--floors", default="0")
    ap.add_argument("--seed-offset", type=int, default=20_000)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = F.load_model(a.weights, "cpu")
    grid = [(float(f), float(fl)) for f in a.factors.split(",") for fl in a.floors.split(",")]
    key = (lambda f, fl: str(f)) if a.floors == "0" else (lambda f, fl: f"{f}/{fl}")
    chosen = a.layouts.split(",")
    res = {}
    for layout in chosen:
        sp, fp = LAYOUTS[layout]
        errs = {key(f, fl): [] for f, fl in grid}
        for i in range(a.scenes):
            sc = make_scene(VAL_SEED0 + a.seed_offset + i, a.res, stack_prob=sp, fold_prob=fp)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            gt = sc.unknown[inp.mask]
            s = NormalSystem(inp.normals, inp.mask, inp.camera)
            lam = classic_lambda(inp.camera, inp.shape)
            z_img, _, p = F.network_outputs(model, inp, "cpu")
            zr = z_img[s.mask]
            for f, fl in grid:
                w = F.edge_weights(s, p, sharpness=f, floor=fl)
                z, _ = F.stage2(s, zr, None, "fnin", lam, "amg", weights=w)
                errs[key(f, fl)].append(relative_error(z, gt))
        res[layout] = {k: float(np.mean(v)) for k, v in errs.items()}
        print(layout, json.dumps(res[layout]), flush=True)
    res["mean"] = {k: float(np.mean([res[x][k] for x in chosen])) for k in res[chosen[0]]}
    print("mean", json.dumps(res["mean"]))
    if a.json:
        json.dump({"args": vars(a), "results": res}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
