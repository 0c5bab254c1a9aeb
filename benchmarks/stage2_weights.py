"""Stage II weight formula on the synthetic validation scenes of compare_models.py
(both layouts; never DiLiGenT): ``1 - omega(neighbour)`` as is, or paired (the two
weights along an axis divided by their sum, as BiNI's w+ + w- = 1).

Criterion fixed before running: adopt ``paired`` if its mean end-to-end fnin relative
error over both layouts is lower than the current formula's.

    python benchmarks/stage2_weights.py --scenes 24 --json benchmarks/results/stage2_weights.json
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", default=None, help="model (default: bundled)")
    ap.add_argument("--scenes", type=int, default=24)
    ap.add_argument("--res", type=int, default=128)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = F.load_model(a.weights, "cpu")
    out = {}
    for layout, sp in (("independent", 0.0), ("stacked", 1.0)):
        acc = {"wls": [], "as is": [], "paired": []}
        for i in range(a.scenes):
            sc = make_scene(VAL_SEED0 + 20_000 + i, a.res, stack_prob=sp)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            m = inp.mask
            gt = sc.unknown[m]
            s = NormalSystem(inp.normals, m, inp.camera)
            lam = classic_lambda(inp.camera, inp.shape)
            z_img, om = F.stage1(model, inp, "cpu")
            zr = z_img[m]
            zw, _ = s.solve(None, lam=lam, method="amg", rtol=F.SOLVE_RTOL)
            acc["wls"].append(relative_error(zw, gt))
            for key, paired in (("as is", False), ("paired", True)):
                w = F.attention_weights(s, om, paired=paired)
                z, _ = s.solve(w, lam=lam, z_prior=zr, x0=zr, method="amg", rtol=F.SOLVE_RTOL)
                acc[key].append(relative_error(z, gt))
        out[layout] = {k: float(np.mean(v)) for k, v in acc.items()}
        print(layout, out[layout], flush=True)
    out["mean_fnin"] = {k: float(np.mean([out[x][k] for x in ("independent", "stacked")])) for k in ("as is", "paired")}
    print(out["mean_fnin"])
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
