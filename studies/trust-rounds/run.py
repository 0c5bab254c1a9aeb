"""Issue 31 items 2-3: rounds that do not carry a piece away, chosen under the DiLiGenT guard.

Usage (one thread; the rule is in README.md, committed before this ran):

    PYTHONPATH=$PWD python studies/trust-rounds/run.py choose  --out studies/trust-rounds/results/choose.json
    PYTHONPATH=$PWD python studies/trust-rounds/run.py guard   --out studies/trust-rounds/results/guard.json

Every configuration is built through ``pipeline.integrate``'s parameters (``rounds``,
``rounds_stop``); no module global is assigned. (Measured with the stop in the package as
``solvers.drift`` and ``integrate(drift_stop=)``, which made a fresh copy per call as
``_fresh`` does now; moved here unchanged once it was not adopted.) Configurations run interleaved per scene.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from fnin_cli.bench.cases import align_and_errors, mesh_view_set, resolve_cases  # noqa: E402
from fnin_cli.data import mesh_scenes, real_like  # noqa: E402
from fnin_cli.pipeline import build_input  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import integrate_hooked  # noqa: E402
from dataclasses import replace  # noqa: E402

from fnin_cli.config import DEFAULT  # noqa: E402
from fnin_cli.train.config import VAL_SEED0  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drift import DriftStop  # noqa: E402
from hold import PieceHold  # noqa: E402



def rounds(n: int, tol: float = 1e-3):
    """The default configuration with at most ``n`` rounds (a study builds a config)."""
    return replace(DEFAULT, rounds=replace(DEFAULT.rounds, max_rounds=n, tol=tol))


CONFIGS = {
    "today": {"config": rounds(16)},   # the default when this was measured
    "rounds8": {"config": rounds(8)},
    "rounds4": {"config": rounds(4)},
    "drift": {"config": rounds(16), "rounds_stop": DriftStop(cos=0.9, ratio=0.8, patience=2)},
}
# the second rule (README "Second rule: piece hold"), after 8 rounds were adopted
HOLD_CONFIGS = {
    "today": {"config": rounds(8)},
    "hold02": {"config": rounds(8), "rounds_adjust": PieceHold(strength=1.0, min_pixels=50, threshold=0.2)},
    "hold05": {"config": rounds(8), "rounds_adjust": PieceHold(strength=1.0, min_pixels=50, threshold=0.5)},
}
SUITE_SEED = 31_001                 # the real-like suite's views with fresh error draws
MESH_SEED0 = VAL_SEED0 + 3_131_000  # fresh validation-mesh scenes
MESH_SCENES, MESH_SIZE = 16, 384
MIN_OBJECT = 200
MESH_DIR = "/work/shared/data/meshes"   # DEFAULT_MESH_DIR assumes the repository sits next to shared/


def _fresh(kw: dict) -> dict:
    """The configuration's keywords with a stop that has no history from earlier runs."""
    return {k: (v.fresh() if hasattr(v, "fresh") else v) for k, v in kw.items()}


def object_errors(depth, gt, mask, oid, persp) -> float:
    """Mean over objects (>= 200 px) of MADE / mean absolute deviation of the true depth."""
    errs = []
    for k in np.unique(oid[mask]):
        m = mask & (oid == k) & np.isfinite(gt)
        if k < 0 or m.sum() < MIN_OBJECT:
            continue
        e = align_and_errors(depth, gt, m, persp)["made"]
        g = gt[m]
        errs.append(e / max(np.mean(np.abs(g - g.mean())), 1e-12))
    return float(np.mean(errs)) if errs else float("nan")


def run_scene(inp, score, out, name):
    rec = {}
    order = list(CONFIGS)
    shift = len(out) % len(order)   # rotated order per scene
    for c in order[shift:] + order[:shift]:
        t = time.perf_counter()
        res = integrate_hooked(inp, **_fresh(CONFIGS[c]))
        sec = time.perf_counter() - t
        rec[c] = {"error": score(res.depth), "seconds": sec, "rounds": res.rounds}
    out[name] = rec
    print(name, {c: round(v["error"], 4) for c, v in rec.items()}, flush=True)


def choose(args):
    out = {"suite": {}, "meshes": {}}
    views = mesh_view_set(MESH_DIR)
    for name, sc, px in real_like.real_like_scenes(views, real_like.SUITE, args.suite_seed):
        inp = build_input(sc.normals, mask=sc.mask, K=sc.K, pixel_size=None if sc.K is not None else px)
        persp = sc.K is not None
        run_scene(inp, lambda d, sc=sc, persp=persp: object_errors(d, sc.depth, sc.mask, sc.object_id, persp),
                  out["suite"], name)
    meshes = mesh_scenes.load_meshes(MESH_DIR, names=list(mesh_scenes.VALIDATION_MESHES))
    for i in range(MESH_SCENES):
        seed = args.mesh_seed0 + i
        sc = mesh_scenes.make_mesh_scene(seed, meshes, MESH_SIZE, noise=False)
        model = real_like.SUITE_CYCLE[i % len(real_like.SUITE_CYCLE)]
        sc, params = real_like.noisy_scene(sc, model, [seed, 31])
        inp = build_input(sc.normals, mask=sc.mask, K=sc.K)
        persp = sc.K is not None
        run_scene(inp, lambda d, sc=sc, persp=persp: object_errors(d, sc.depth, sc.mask, sc.object_id, persp),
                  out["meshes"], f"{seed}-{real_like.label(params)}")
    summary = {}
    for part in ("suite", "meshes"):
        recs = out[part].values()
        summary[part] = {c: {"mean_error": float(np.mean([r[c]["error"] for r in recs])),
                             "seconds": float(np.sum([r[c]["seconds"] for r in recs]))} for c in CONFIGS}
        for c in CONFIGS:
            summary[part][c]["ratio"] = summary[part][c]["mean_error"] / summary[part]["today"]["mean_error"]
    out["summary"] = summary
    print(json.dumps(summary, indent=1))
    return out


def guard(args):
    _, cases = resolve_cases("diligent", data=args.data)
    out = {"objects": {}}
    for case in cases:
        inp, gt = case.load()
        rec = {}
        for c in CONFIGS:
            t = time.perf_counter()
            res = integrate_hooked(inp, **_fresh(CONFIGS[c]))
            sec = time.perf_counter() - t
            rec[c] = {"made_mm": align_and_errors(res.depth, gt, inp.mask, inp.camera.perspective)["made"],
                      "seconds": sec, "rounds": res.rounds}
        out["objects"][case.name] = rec
        print(case.name, {c: round(v["made_mm"], 3) for c, v in rec.items()}, flush=True)
    bini = json.load(open(args.bini))["cases"]
    summary = {}
    for c in CONFIGS:
        over = []
        for o, rec in out["objects"].items():
            b = bini[o]["bini"]["made_mm"]
            if rec[c]["made_mm"] > max(1.25 * b, b + 0.05):
                over.append(o)
        summary[c] = {"mean_mm": float(np.mean([r[c]["made_mm"] for r in out["objects"].values()])),
                      "seconds": float(np.sum([r[c]["seconds"] for r in out["objects"].values()])),
                      "over_bound": over}
    summary["bini_mean_mm"] = float(np.mean([bini[o]["bini"]["made_mm"] for o in out["objects"]]))
    out["summary"] = summary
    print(json.dumps(summary, indent=1))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["choose", "guard"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", choices=["first", "hold"], default="first")
    ap.add_argument("--suite-seed", type=int, default=SUITE_SEED)
    ap.add_argument("--mesh-seed0", type=int, default=MESH_SEED0)
    ap.add_argument("--data", default="/work/shared/data/diligent")
    ap.add_argument("--bini", default="studies/trust-rounds/results/diligent_base.json",
                    help="a `fnin bench diligent --methods default,bini,wls --json` record (bini is unchanged)")
    args = ap.parse_args()
    if args.configs == "hold":   # the script's own table, not a package global
        CONFIGS.clear()
        CONFIGS.update(HOLD_CONFIGS)
    with threadpool_limits(1):
        import torch

        torch.set_num_threads(1)
        result = choose(args) if args.what == "choose" else guard(args)
    result["configs"] = {c: {k: str(v) for k, v in kw.items()} for c, kw in CONFIGS.items()}
    result["command"] = " ".join(sys.argv)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
