"""The one-shot's speed: today's edge-net inference against the windowed one
(docs/decisions.md#edge-net-windows).

On the views of ``fnin bench meshes`` (rendered from the validation meshes), the one-shot
(``refine=0``) runs with each variant, interleaved per view, memory released before each
run as ``fnin bench`` does (so each run touches its pages afresh, as a new process
would), best of ``--repeat`` runs on one thread. Reports per view the seconds, the MADE
and the largest relative difference of the depth maps; then the rule::

    python benchmarks/oneshot_speed.py [--meshes ../shared/data/meshes] [--repeat 3] \\
        [--out benchmarks/results/oneshot_speed.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F

from fnin_cli.bench.cases import align_and_errors, align_objects, resolve_cases
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR
from fnin_cli.model.fnin_net import FNINet
from fnin_cli.model.geometry import Level
from fnin_cli.model.layers import EdgeNet
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import integrate
from fnin_cli.resources import limit_threads, release_memory

SHIPPED = FNINet.edge_probabilities


@torch.no_grad()
def whole_box(self, z, lv: Level):
    """The edge net as before the windows: every layer on the mask's box plus 23 px."""
    margin = EdgeNet.radius(self.cfg)
    m = lv.mask[0, 0] > 0
    rows, cols = torch.nonzero(m.any(dim=1)), torch.nonzero(m.any(dim=0))
    h, w = m.shape
    r0, r1 = max(0, int(rows[0]) - margin), min(h, int(rows[-1]) + 1 + margin)
    c0, c1 = max(0, int(cols[0]) - margin), min(w, int(cols[-1]) + 1 + margin)
    K = lv.K.clone()
    persp = (K[:, 0, 0] > 0).to(K.dtype)
    K[:, 0, 2] -= c0 * persp
    K[:, 1, 2] -= r0 * persp
    sub = Level(lv.normals[..., r0:r1, c0:c1], lv.mask[..., r0:r1, c0:c1], K, lv.pixel)
    p = torch.sigmoid(self.edges(z[..., r0:r1, c0:c1], sub)) * sub.mask
    return F.pad(p, (c0, w - c1, r0, h - r1))


VARIANTS = {"today": whole_box, "windowed": SHIPPED}


def made(case, res, gt) -> float:
    object_id, names = case.object_ids()
    if object_id is not None:
        return align_objects(res.depth, gt, res.mask, object_id, res.camera.perspective, names)["made"]
    return align_and_errors(res.depth, gt, res.mask, res.camera.perspective)["made"]


def run(meshes, repeat: int) -> dict:
    _, cases = resolve_cases("meshes", meshes=meshes)
    model = load_model(device="cpu")
    rec = {}
    with limit_threads(1):
        for case in cases:
            inp, gt = case.load()
            for fn in VARIANTS.values():          # warm-up: one-off costs of this frame size
                FNINet.edge_probabilities = fn
                integrate(inp, refine=0, model=model)
            best = {name: np.inf for name in VARIANTS}
            out = {}
            for _ in range(repeat):
                for name, fn in VARIANTS.items():
                    FNINet.edge_probabilities = fn
                    release_memory()
                    t0 = time.perf_counter()
                    res = integrate(inp, refine=0, model=model)
                    best[name] = min(best[name], time.perf_counter() - t0)
                    out[name] = res
            FNINet.edge_probabilities = SHIPPED
            a, b = out["today"].depth, out["windowed"].depth
            fin = np.isfinite(a)
            rel = float(np.max(np.abs(b[fin] - a[fin]) / np.maximum(np.abs(a[fin]), 1e-30)))
            rec[case.name] = {name: {"seconds": best[name], "made": made(case, out[name], gt)} for name in VARIANTS}
            rec[case.name]["max_rel_depth_diff"] = rel
            print(f"{case.name:36s} " + "  ".join(
                f"{n} {rec[case.name][n]['seconds']:.3f} s {rec[case.name][n]['made']:.4f}" for n in VARIANTS)
                + f"  rel diff {rel:.1e}", flush=True)
    return rec


def rule(rec: dict) -> dict:
    """docs/decisions.md#edge-net-windows: the same surfaces (rtol 1e-5, MADE to 1e-4
    relative) and fewer seconds in all."""
    same = all(r["max_rel_depth_diff"] <= 1e-5 for r in rec.values()) and all(
        abs(r["windowed"]["made"] - r["today"]["made"]) <= 1e-4 * abs(r["today"]["made"]) for r in rec.values())
    secs = {n: float(sum(r[n]["seconds"] for r in rec.values())) for n in VARIANTS}
    return {"same_surfaces": bool(same), "seconds": secs,
            "adopted": bool(same and secs["windowed"] < secs["today"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rec = run(a.meshes, a.repeat)
    verdict = rule(rec)
    print(json.dumps(verdict, indent=1))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump({"views": rec, "rule": verdict, "repeat": a.repeat}, fh, indent=1)


if __name__ == "__main__":
    main()
