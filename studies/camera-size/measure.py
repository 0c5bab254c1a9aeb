"""The default at camera size, today's network (edge net in one block) and the tiled one,
interleaved in one process (studies/camera-size/README.md).

Loads the `fnin bench meshes --size WxH` view (cached render), then runs
``pipeline.integrate`` (the default: fnin, its rounds) with the bundled weights twice per
repeat: once with the edge net in one block (a model whose ``edge_probabilities`` always
takes ``tile=None``) and once as shipped (``DEFAULT.one_shot.edge_tile``); stage seconds, peak RSS and the
per-object error of each. One thread. Usage (repository root)::

    PYTHONPATH=$PWD python studies/camera-size/measure.py --size 6000x4000 --json studies/camera-size/r24.json
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from fnin_cli.bench.camera_views import camera_view_set, parse_frame
from fnin_cli.bench.cases import align_objects
from fnin_cli.model.fnin_net import FNINet
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.resources import PeakMemory, limit_threads

MESHES = "/work/shared/data/meshes"


class OneBlock(FNINet):
    """The shipped network with the edge net run in one block (today's before the tiles)."""

    def edge_probabilities(self, z, lv, tile=None):
        return super().edge_probabilities(z, lv, tile=None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="6000x4000")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    t0 = time.perf_counter()
    (name, sc, _), = camera_view_set(MESHES, parse_frame(a.size))
    inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
    res = {"view": name, "pixels": int(inp.mask.sum()), "render_or_cache_seconds": time.perf_counter() - t0,
           "runs": []}
    with limit_threads(1):
        torch.set_num_threads(1)
        tiled = load_model(device="cpu")
        one = load_model(device="cpu")
        one.__class__ = OneBlock
        for rep in range(a.repeat):
            for label, model in ((("one-block", one), ("tiled", tiled)) if rep % 2 == 0
                                 else (("tiled", tiled), ("one-block", one))):
                with PeakMemory() as mem:
                    t = time.perf_counter()
                    r = integrate(inp, model=model)
                    sec = time.perf_counter() - t
                err = align_objects(r.depth, sc.depth, inp.mask, sc.object_id, True)
                rec = {"edge_net": label, "seconds": sec, "stages": {k: float(v) for k, v in r.seconds.items()},
                       "rounds": r.rounds, "peak_rss_mb": (mem.peak or 0) / 1024, "made_mm": err["made"],
                       "objects": {k: v["made_mm"] for k, v in err.get("objects", {}).items()}}
                res["runs"].append(rec)
                print(json.dumps(rec), flush=True)
                with open(a.json, "w") as fh:
                    json.dump(res, fh, indent=1)
                del r


if __name__ == "__main__":
    main()
