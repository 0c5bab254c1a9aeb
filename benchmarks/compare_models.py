"""Compare FNIN weight files on synthetic validation sets (never DiLiGenT): Stage I and
end-to-end fnin / fnin-s relative error per layout (independent, stacked, fold).

    python benchmarks/compare_models.py fnin_cli/weights/fnin.safetensors runs/fnin_v3/fnin.safetensors
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from fnin_cli.model import weights as model_weights
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.data.synthetic import make_scene, relative_error
from fnin_cli.train.config import VAL_SEED0




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights", nargs="+")
    ap.add_argument("--scenes", type=int, default=24)
    ap.add_argument("--res", type=int, default=128)
    ap.add_argument("--json", default=None)
    ap.add_argument("--network-side", type=int, default=None, help="network cap (default: the pipeline's)")
    ap.add_argument("--refine", type=int, default=0, help="BiNI rounds after each method (as fnin --refine)")
    ap.add_argument("--seed-offset", type=int, default=20_000,
                    help="scene i is VAL_SEED0 + offset + i (20000: the scenes of every decision so far; "
                         "40000: fresh ones, for the next edge-net candidate's rule, 2d20981)")
    ap.add_argument("--layouts", default="independent,stacked",
                    help="comma-separated: independent, stacked, fold (self-occluding surfaces)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = {}
    for wpath in a.weights:
        model = model_weights.load_model(wpath, "cpu")
        res = {}
        layouts = {"independent": (0.0, 0.0), "stacked": (1.0, 0.0), "fold": (0.0, 1.0)}
        chosen = a.layouts.split(",")
        for layout in chosen:
            sp, fp = layouts[layout]
            acc = {"stage1": [], "fnin": [], "fnin-s": []}
            for i in range(a.scenes):
                sc = make_scene(VAL_SEED0 + a.seed_offset + i, a.res, stack_prob=sp, fold_prob=fp)
                inp = build_input(sc.normals, None, sc.mask, sc.K)
                gt = sc.unknown[inp.mask]
                for m, key in (("fnin-stage1", "stage1"), ("fnin", "fnin"), ("fnin-s", "fnin-s")):
                    acc[key].append(relative_error(
                        integrate(inp, m, model=model, network_side=a.network_side, refine=a.refine).z[inp.mask], gt))
            res[layout] = {k: float(np.mean(v)) for k, v in acc.items()}
        res["mean_fnin"] = float(np.mean([res[x]["fnin"] for x in chosen]))
        out[wpath] = res
        print(wpath, json.dumps(res), flush=True)
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
