"""Where should the network stop? Stage I and FNIN error and time vs the finest network
scale (short side), on synthetic validation-range scenes at 512x512 (not DiLiGenT).

    python benchmarks/network_side.py --scenes 8 --res 512 --sides 64,128,256,512
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from fnin_cli import fnin as F
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.synthetic import make_scene, relative_error
from fnin_cli.train import VAL_SEED0




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=8)
    ap.add_argument("--res", type=int, default=512)
    ap.add_argument("--sides", default="64,128,256,512")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = F.load_model(None, "cpu")
    sides = [int(s) for s in a.sides.split(",")]
    rows = {s: {"stage1": [], "fnin": [], "fnin-s": [], "net_s": []} for s in sides}
    for i in range(a.scenes):
        sc = make_scene(VAL_SEED0 + 7000 + i, a.res)
        inp = build_input(sc.normals, None, sc.mask, sc.K)
        gt = sc.unknown[inp.mask]
        for s in sides:
            t = time.perf_counter()
            z, _ = F.stage1(model, inp, "cpu", s)
            rows[s]["net_s"].append(time.perf_counter() - t)
            rows[s]["stage1"].append(relative_error(z[inp.mask], gt))
            for m in ("fnin", "fnin-s"):
                r = integrate(inp, m, model=model, network_side=s)
                rows[s][m].append(relative_error(r.z[inp.mask], gt))
    out = {s: {k: float(np.mean(v)) for k, v in r.items()} for s, r in rows.items()}
    for s, r in out.items():
        print(f"side {s:4d}: " + ", ".join(f"{k} {v:.4f}" for k, v in r.items()))
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
