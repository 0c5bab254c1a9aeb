"""How much would a perfect discontinuity map give FNIN's one solve on real data?

For each DiLiGenT object, Stage II is solved once with the network's z_R as prior (as
`fnin` does) and, as weights: the edge net's (what `fnin` uses), the paired attention
map's (what `fnin` used before the edge net), BiNI's converged weights, BiNI's weights of
the true depth (the edge net's training target), and all ones. A test-set *diagnosis*,
not a tuning run: nothing here feeds a default.

    python benchmarks/diligent_weight_oracle.py --data ../shared/data/diligent --json out.json
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from fnin_cli import bench
from fnin_cli import fnin as F
from fnin_cli import pipeline as P
from fnin_cli.solvers import bini_weights, integrate_bini
from fnin_cli.wls import NormalSystem


def made(inp, gt, system, z):
    return bench.unknown_made(inp, gt, system.to_image(z))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = F.load_model(None, "cpu")
    _, cases = bench.resolve_cases("diligent", data=a.data)
    rows = {}
    for case in cases:
        inp, gt = case.load()
        s = NormalSystem(inp.normals, inp.mask, inp.camera)
        lam = P.classic_lambda(inp.camera, inp.shape)
        z_img, om = F.stage1(model, inp, "cpu")
        _, _, p = F.network_outputs(model, inp, "cpu")
        zr = z_img[s.mask]
        b = integrate_bini(s, lam=lam)
        valid = inp.mask & np.isfinite(gt) & (gt > 0)
        z_true = np.log(np.where(valid, gt, 1.0))[s.mask] if inp.camera.perspective else None
        row = {"bini": made(inp, gt, s, b.z)}
        options = [("fnin (edge net weights)", F.edge_weights(s, p)),
                   ("fnin with the attention map's weights", F.attention_weights(s, om)),
                   ("fnin with BiNI's weights", b.weights),
                   ("fnin with all weights 1", None)]
        if z_true is not None:
            options.append(("fnin with BiNI's weights of the true depth", bini_weights(s, z_true)))
        for name, w in options:
            z, _ = s.solve(w, lam=lam, z_prior=zr, x0=zr, method="amg", rtol=F.SOLVE_RTOL)
            row[name] = made(inp, gt, s, z)
        rows[case.name] = row
        print(case.name, {k: round(v, 3) for k, v in row.items()}, flush=True)
    keys = set.intersection(*(set(r) for r in rows.values()))
    mean = {k: float(np.mean([r[k] for r in rows.values()])) for k in sorted(keys)}
    print("mean", {k: round(v, 3) for k, v in mean.items()})
    if a.json:
        json.dump({"per_object": rows, "mean": mean}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
