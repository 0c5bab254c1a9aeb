"""GPU check: the CUDA path end to end, and which Stage II solve pays on the GPU.

Runs in one process on a machine with a CUDA GPU (the `device` tool's machine here):

1. DiLiGenT, per object: Stage I (and the edge net) on the GPU once, then Stage II
   solved by AMG-PCG on the CPU (at 1e-3 and at the CPU default, config.OneShotConfig.solve_rtol), sparse
   LU (exact), and torch Jacobi-PCG on the GPU at several tolerances: MADE, seconds and
   iterations of each, so the GPU default's solver and tolerance are chosen by cost and
   accuracy against the exact solve.
2. DiLiGenT end to end through ``pipeline.integrate``: fnin on cuda (its default solve,
   and with the AMG solve on the CPU) and on the CPU, fnin --refine 3 on both, and bini
   (CPU), after one untimed warm-up each.
3. Synthetic 2048x1536 and 4096x3072 (the speed issue's cases): fnin on cuda (and the
   2048 case on the CPU): seconds, MADE, peak GPU memory.

    python benchmarks/device_check.py --data ../shared/data/diligent --out results.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import time

import numpy as np
import torch

from fnin_cli import bench
from fnin_cli.config import DEFAULT
from fnin_cli.model import inference
from fnin_cli.solvers import stage2
from fnin_cli.model import weights as model_weights
from fnin_cli import pipeline as P
from fnin_cli.data.synthetic import make_scene
from fnin_cli.solvers.system import NormalSystem

GPU_RTOLS = (1e-3, 1e-4, 1e-5, 1e-6)
BIG = {"synthetic-2048x1536": (10_093, 1536, 2048), "synthetic-4096x3072": (10_093, 3072, 4096)}


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def stage2_solvers(inp, gt, model, gpu: str) -> dict:
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    lam = P.classic_lambda(inp.camera, inp.shape)
    sync()
    t = time.perf_counter()
    z_img, om_img, p_img = inference.network_outputs(model, inp, torch.device(gpu))
    sync()
    out = {"pixels": system.n, "network_s": time.perf_counter() - t}
    z_r = z_img[system.mask]
    weights = stage2.model_weights(system, p_img, om_img)
    runs = ([("amg", 1e-3), ("amg", DEFAULT.one_shot.solve_rtol), ("direct", 0.0)]
            + [(f"torch:{gpu}", r) for r in GPU_RTOLS])
    for method, rtol in runs:
        t = time.perf_counter()
        z, info = system.solve(weights, lam=lam, z_prior=z_r, x0=z_r, method=method, rtol=rtol,
                               maxiter=DEFAULT.one_shot.gpu_maxiter)
        sync()
        out[f"{method.split(':')[0]}@{rtol:g}"] = {
            "seconds": time.perf_counter() - t, "iterations": info.iterations,
            "made": bench.unknown_made(inp, gt, system.to_image(z))}
    return out


WEIGHTS = None   # --weights: the model file (None: the bundled one)


def end_to_end(inp, gt, method, device, refine=0, solver="auto") -> dict:
    model = model_weights.load_model(WEIGHTS, device) if method.startswith("fnin") else None
    P.integrate(inp, method, device=device, refine=refine, solver=solver, model=model)  # warm-up
    sync()
    torch.cuda.reset_peak_memory_stats() if torch.cuda.is_available() else None
    t = time.perf_counter()
    r = P.integrate(inp, method, device=device, refine=refine, solver=solver, model=model)
    sync()
    sec = time.perf_counter() - t
    rec = {"seconds": sec, "made": bench.align_and_errors(r.depth, gt, r.mask, inp.camera.perspective)["made"],
           "stages": {k: round(float(v), 4) for k, v in r.seconds.items()}}
    if torch.cuda.is_available():
        rec["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--big", default="synthetic-2048x1536,synthetic-4096x3072")
    ap.add_argument("--objects", type=int, default=9, help="first N DiLiGenT objects (a dry run: 1)")
    ap.add_argument("--weights", default=None, help="model file (default: the bundled one)")
    a = ap.parse_args()
    global WEIGHTS
    WEIGHTS = a.weights
    torch.set_num_threads(1)
    gpu = "cuda" if torch.cuda.is_available() else "cpu"   # cpu: a dry run of the script
    report = {"date": datetime.date.today().isoformat(),
              "gpu": torch.cuda.get_device_name() if gpu == "cuda" else "none (dry run)",
              "cpu": platform.processor() or platform.machine(), "torch": torch.__version__,
              "threads": 1, "weights": a.weights or "bundled",
              "stage2": {}, "end_to_end": {}, "big": {}}
    model = model_weights.load_model(a.weights, gpu)
    _, cases = bench.resolve_cases("diligent", data=a.data)
    loaded = [(c.name, *c.load()) for c in cases[:a.objects]]
    stage2_solvers(loaded[0][1], loaded[0][2], model, gpu)  # warm-up
    for name, inp, gt in loaded:
        report["stage2"][name] = stage2_solvers(inp, gt, model, gpu)
        print(name, json.dumps(report["stage2"][name]), flush=True)
    for label, method, device, refine, solver in (
            ("fnin cuda", "fnin", gpu, 0, "auto"), ("fnin cuda, amg solve", "fnin", gpu, 0, "amg"),
            ("fnin cpu", "fnin", "cpu", 0, "auto"), ("fnin --refine 3 cuda", "fnin", gpu, 3, "auto"),
            ("fnin --refine 3 cpu", "fnin", "cpu", 3, "auto"), ("bini cpu", "bini", "cpu", 0, "auto")):
        per = {name: end_to_end(inp, gt, method, device, refine, solver) for name, inp, gt in loaded}
        report["end_to_end"][label] = {"total_s": sum(r["seconds"] for r in per.values()),
                                       "mean_made": float(np.mean([r["made"] for r in per.values()])),
                                       "per_object": per}
        print(label, {k: v for k, v in report["end_to_end"][label].items() if k != "per_object"}, flush=True)
    for name in [b for b in a.big.split(",") if b]:
        seed, h, w = BIG[name]
        sc = make_scene(seed, h, w, ortho_prob=0.0)
        inp = P.build_input(sc.normals, None, sc.mask, sc.K)
        gt = np.where(sc.mask, sc.depth, np.nan)
        rec = {"pixels": int(sc.mask.sum()), "fnin cuda": end_to_end(inp, gt, "fnin", gpu),
               "fnin cuda, amg solve": end_to_end(inp, gt, "fnin", gpu, solver="amg")}
        if h <= 1536:
            rec["fnin cpu"] = end_to_end(inp, gt, "fnin", "cpu")
        report["big"][name] = rec
        print(name, json.dumps(rec), flush=True)
    with open(a.out, "w") as fh:
        json.dump(report, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
