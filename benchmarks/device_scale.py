"""GPU at camera size: the default with Stage II and the rounds on the GPU's pixel grid
(:mod:`fnin_cli.solvers.grid`) against the same run with them on the CPU's AMG, and against
the CPU alone (configurations: ``cuda-grid``, the grid at every size; ``cuda-amg``, never;
``cuda``, the shipped default, the grid from ``SolverConfig.gpu_grid_pixels``; ``cpu``).

On a machine with a CUDA GPU (the `device` tool's here), in one process, after one untimed
warm-up per configuration: DiLiGenT's nine objects (``bini`` on the CPU beside them, for
the seconds' scale) and the camera-size views of ``fnin bench meshes --size`` (exact ground
truth, errors per object). Per case and configuration: seconds per stage, MADE, rounds, peak
GPU memory. Writes one JSON file.

    python benchmarks/device_scale.py --data DIR --meshes DIR --out results.json
        [--frames 2048x1536,6000x4000] [--cpu-frames 2048x1536] [--configs cuda-grid,cuda-amg,cpu]
        [--big-configs cuda-grid,cuda-amg]
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from dataclasses import replace

import numpy as np
import torch

from fnin_cli.bench.cases import align_and_errors, align_objects, mesh_cases, resolve_cases
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import integrate

CONFIGS = {
    "cuda-grid": ("cuda", replace(DEFAULT, solver=replace(DEFAULT.solver, gpu_grid_pixels=0))),
    "cuda-amg": ("cuda", replace(DEFAULT, solver=replace(DEFAULT.solver, gpu_grid_pixels=None))),
    "cuda": ("cuda", DEFAULT),
    "cpu": ("cpu", DEFAULT),
}


def run(inp, gt, object_id, names, config_name, method="fnin"):
    device, config = CONFIGS[config_name]
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    res = integrate(inp, method, device=device, config=config)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t
    if object_id is not None:
        err = align_objects(res.depth, gt, res.mask, object_id, inp.camera.perspective, names)
    else:
        err = align_and_errors(res.depth, gt, res.mask, inp.camera.perspective)
    rec = {"config": config_name, "method": method, "seconds": round(seconds, 3),
           "stages": {k: round(float(v), 3) for k, v in res.seconds.items()},
           "made_mm": err["made"], "rounds": res.rounds, "pixels": res.pixels}
    if "objects" in err:
        rec["objects"] = {k: v["made_mm"] for k, v in err["objects"].items()}
    if device == "cuda":
        rec["peak_device_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps({k: rec[k] for k in ("config", "method", "seconds", "made_mm", "rounds", "stages")}),
          flush=True)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="DiLiGenT's nine object folders")
    ap.add_argument("--meshes", required=True, help="the mesh pack (validation meshes are rendered)")
    ap.add_argument("--frames", default="2048x1536,6000x4000")
    ap.add_argument("--cpu-frames", default="2048x1536", help="frames also run on the CPU alone")
    ap.add_argument("--configs", default="cuda-grid,cuda-amg,cpu", help="of " + ", ".join(CONFIGS))
    ap.add_argument("--big-configs", default="cuda-grid,cuda-amg", help="configurations for frames of 10 MP or more")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "gpu": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "cpu": platform.processor() or platform.machine(), "threads": 1,
              "cases": []}
    _, dil = resolve_cases("diligent", a.data)
    loaded = [(c.name, *c.load()) for c in dil]
    configs = a.configs.split(",")
    for name in configs:              # warm-up: CUDA context, kernels, the weights
        run(loaded[0][1], loaded[0][2], None, None, name)
    for name, inp, gt in loaded:
        for cfg in configs:
            report["cases"].append({"case": name, **run(inp, gt, None, None, cfg)})
        report["cases"].append({"case": name, **run(inp, gt, None, None, "cpu", method="bini")})
        json.dump(report, open(a.out, "w"), indent=1)
    cpu_frames = set(a.cpu_frames.split(",")) if a.cpu_frames else set()
    for frame in a.frames.split(","):
        w, h = (int(v) for v in frame.split("x"))
        t = time.perf_counter()
        case = mesh_cases(a.meshes, frame=(w, h))[0]
        inp, gt = case.load()
        object_id, names = case.object_ids()
        print(f"{case.name}: rendered/loaded in {time.perf_counter() - t:.1f} s", flush=True)
        for cfg in configs if w * h < 10_000_000 else a.big_configs.split(","):
            if cfg == "cpu" and frame not in cpu_frames:
                continue
            report["cases"].append({"case": case.name, **run(inp, gt, object_id, names, cfg)})
            json.dump(report, open(a.out, "w"), indent=1)
    for cfg in configs:
        rows = [r for r in report["cases"] if r["config"] == cfg and r["method"] == "fnin" and "objects" not in r]
        if rows:
            print(cfg, "DiLiGenT mean MADE", round(float(np.mean([r["made_mm"] for r in rows])), 4),
                  "seconds", round(sum(r["seconds"] for r in rows), 2))
    bini = [r for r in report["cases"] if r["method"] == "bini"]
    print("bini (cpu) DiLiGenT mean MADE", round(float(np.mean([r["made_mm"] for r in bini])), 4),
          "seconds", round(sum(r["seconds"] for r in bini), 2))


if __name__ == "__main__":
    main()
