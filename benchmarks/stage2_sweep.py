"""Stage II design sweep: prior weight lambda and weight formula, on synthetic validation
scenes (never DiLiGenT, the test set) and optionally on DiLiGenT for the final report.

    python benchmarks/stage2_sweep.py --state runs/fnin_v1/best.pt --scenes 12 --res 256
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from fnin_cli import fnin as F
from fnin_cli.network import FNINet
from fnin_cli.pipeline import build_input
from fnin_cli.solvers import bini_weights, integrate_bini
from fnin_cli.synthetic import make_scene, relative_error
from fnin_cli.train import VAL_SEED0
from fnin_cli.wls import NormalSystem




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", default=None, help="state dict (.pt) or safetensors; default bundled")
    ap.add_argument("--scenes", type=int, default=12)
    ap.add_argument("--res", type=int, default=256)
    ap.add_argument("--lams", default="1,1e3,1e6,1e9", help="multiples of the default lambda")
    ap.add_argument("--side", type=int, default=F.NETWORK_SIDE)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.state and a.state.endswith(".pt"):
        model = FNINet()
        model.load_state_dict(torch.load(a.state, map_location="cpu", weights_only=True))
        model.eval()
    else:
        model = F.load_model(a.state, "cpu")
    lams = [float(x) for x in a.lams.split(",")]
    rows = []
    for i in range(a.scenes):
        sc = make_scene(VAL_SEED0 + 5000 + i, a.res)
        inp = build_input(sc.normals, None, sc.mask, sc.K, pixel_size=1.0)
        m = inp.mask
        gt = sc.unknown[m]
        sys_ = NormalSystem(inp.normals, m, inp.camera)
        z_img, om = F.stage1(model, inp, "cpu", a.side)
        zr = z_img[m]
        row = {"stage1": relative_error(zr, gt)}
        zw, _ = sys_.solve(None, lam=1e-3, method="amg", rtol=1e-8)
        row["wls"] = relative_error(zw, gt)
        row["bini"] = relative_error(integrate_bini(sys_).z, gt)
        from fnin_cli.pipeline import classic_lambda

        lam0 = classic_lambda(inp.camera, inp.shape)
        for lam in lams:
            for name, w in (("fnin", F.attention_weights(sys_, om)), ("fnin-s", bini_weights(sys_, zr))):
                z, _ = sys_.solve(w, lam=lam * lam0, z_prior=zr, x0=zr, method="amg", rtol=1e-6)
                row[f"{name}@{lam:g}"] = relative_error(z, gt)
        rows.append(row)
        print(i, {k: round(v, 4) for k, v in row.items()}, flush=True)
    keys = rows[0].keys()
    mean = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    med = {k: float(np.median([r[k] for r in rows])) for k in keys}
    print("mean  ", {k: round(v, 4) for k, v in mean.items()})
    print("median", {k: round(v, 4) for k, v in med.items()})
    if a.json:
        json.dump({"rows": rows, "mean": mean, "median": med}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
