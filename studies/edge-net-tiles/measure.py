"""The edge net tile by tile against one block (studies/edge-net-tiles/README.md).

Per view: the network's z_R once, then ``FNINet.edge_probabilities`` with each tile side
(None = the mask's bounding box in one block, today's), interleaved, ``--repeat`` times;
seconds (the fastest), peak RSS growth and the largest difference to tile=None inside the
mask. One thread. Usage (repository root)::

    PYTHONPATH=$PWD python studies/edge-net-tiles/measure.py --size 2048x1536 --json studies/edge-net-tiles/r2k.json
    PYTHONPATH=$PWD python studies/edge-net-tiles/measure.py --size 6000x4000 --json studies/edge-net-tiles/r24.json
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from fnin_cli.bench.camera_views import camera_view_set, parse_frame
from fnin_cli.model.inference import _level_from_input, full_float32
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input
from fnin_cli.resources import PeakMemory, limit_threads

MESHES = "/work/shared/data/meshes"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="2048x1536")
    ap.add_argument("--tiles", default="none,128,256,512,1024")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", required=True)
    ap.add_argument("--bench-view", type=int, default=None,
                    help="instead of --size: this view of `fnin bench meshes` (12: the 2048x1536 perspective one)")
    a = ap.parse_args()
    tiles = [None if t == "none" else int(t) for t in a.tiles.split(",")]
    if a.bench_view is not None:
        from fnin_cli.bench.cases import mesh_view_set

        name, sc, _ = mesh_view_set(MESHES)[a.bench_view]
    else:
        (name, sc, _), = camera_view_set(MESHES, parse_frame(a.size))
    inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
    res = {"view": name, "pixels": int(inp.mask.sum()), "runs": {}}
    with limit_threads(1):
        torch.set_num_threads(1)
        model = load_model(device="cpu")
        with torch.no_grad(), full_float32():
            lv = _level_from_input(inp, torch.device("cpu"))
            z, _ = model.capped(lv, 64, attention=False)
            ref = None
            for rep in range(a.repeat):
                for t in (tiles if rep % 2 == 0 else tiles[::-1]):
                    with PeakMemory() as mem:
                        t0 = time.perf_counter()
                        p = model.edge_probabilities(z, lv, tile=t)
                        sec = time.perf_counter() - t0
                    key = str(t)
                    r = res["runs"].setdefault(key, {"seconds_all": [], "peak_mb": 0.0})
                    r["seconds_all"].append(sec)
                    r["peak_mb"] = max(r["peak_mb"], (mem.peak or 0) / 1024 - mem.base / 1024)
                    if t is None and ref is None:
                        ref = p
                    if ref is not None:
                        r["max_abs_diff"] = max(r.get("max_abs_diff", 0.0), float((p - ref).abs().max()))
                    print(name, key, round(sec, 2), "s", flush=True)
    for r in res["runs"].values():
        r["seconds"] = min(r["seconds_all"])
        r["seconds_median"] = float(sorted(r["seconds_all"])[len(r["seconds_all"]) // 2])
    with open(a.json, "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps({k: (round(v["seconds"], 2), round(v["peak_mb"]), v.get("max_abs_diff")) for k, v in res["runs"].items()}))


if __name__ == "__main__":
    main()
