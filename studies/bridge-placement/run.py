"""bridge-placement: today's default against RoundsConfig.bridge_edges = 3 (README.md).

    PYTHONPATH=$PWD python studies/bridge-placement/run.py --out studies/bridge-placement/results.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np
from threadpoolctl import threadpool_limits

from fnin_cli.bench.cases import align_and_errors, align_objects, resolve_cases
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import integrate

CONFIGS = {"today": DEFAULT, "bridge3": replace(DEFAULT, rounds=replace(DEFAULT.rounds, bridge_edges=3))}
SETS = {"diligent": dict(data="/work/shared/data/diligent"), "meshes": dict(meshes="/work/shared/data/meshes"),
        "real-like": dict(meshes="/work/shared/data/meshes", noise="real-like"), "samples": {}, "synthetic": {}}
BINI_RECORDS = {"diligent": "benchmarks/results/diligent_default.json", "meshes": "benchmarks/results/meshes.json",
                "real-like": "studies/trust-rounds/results/reallike_join30.json"}


def made(case, res, inp, gt):
    object_id, names = case.object_ids()
    if object_id is not None:
        return align_objects(res.depth, gt, inp.mask, object_id, inp.camera.perspective, names)["made"]
    return align_and_errors(res.depth, gt, inp.mask, inp.camera.perspective)["made"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = {}
    with threadpool_limits(1):
        import torch

        torch.set_num_threads(1)
        for name, kw in SETS.items():
            source = "samples" if name == "samples" else ("meshes" if name in ("meshes", "real-like") else name)
            _, cases = resolve_cases(source, **kw)
            bini = json.load(open(BINI_RECORDS[name]))["cases"] if name in BINI_RECORDS else None
            rec = {}
            for case in cases:
                inp, gt = case.load()
                r = {}
                for c, cfg in CONFIGS.items():
                    t = time.perf_counter()
                    res = integrate(inp, config=cfg)
                    r[c] = {"made": made(case, res, inp, gt), "seconds": time.perf_counter() - t}
                if bini is not None:
                    r["bini"] = {"made": bini[case.name]["bini"]["made_mm"]}
                else:
                    res = integrate(inp, "bini")
                    r["bini"] = {"made": made(case, res, inp, gt)}
                rec[case.name] = r
                print(name, case.name, {c: round(v["made"], 4) for c, v in r.items()}, flush=True)
            out[name] = {"cases": rec, "mean": {c: float(np.mean([r[c]["made"] for r in rec.values()]))
                                                for c in ("today", "bridge3", "bini")}}
            print(name, out[name]["mean"], flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
