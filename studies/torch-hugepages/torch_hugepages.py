"""PyTorch's transparent huge pages for the network's tensors, against today's
(docs/decisions.md#torch-hugepages), by the rule written before the run.

Processes with ``THP_MEM_ALLOC_ENABLE`` at 0 (today) and 1 (the candidate) alternate,
``--repeat`` of each. Each runs the one-shot (``refine=0``) and the default over the
views of ``fnin bench meshes`` on one thread, memory released before each run as ``fnin
bench`` does, after one untimed warm-up on the first view; per view and configuration
the best of the processes counts (seconds, minor page faults), peak memory the largest.
The views are rendered once, before the processes start::

    python studies/torch-hugepages/torch_hugepages.py [--meshes DIR] [--repeat 3] [--out studies/torch-hugepages/results/torch_hugepages.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CONFIGS = {"one-shot": {"refine": 0}, "default": {}}
VARIANTS = {"today": "0", "candidate": "1"}


def render_views(meshes, path: Path) -> list:
    """Render the bench views once into ``path`` (npz per view); their names."""
    from fnin_cli.bench.cases import resolve_cases

    _, cases = resolve_cases("meshes", meshes=meshes)
    names = []
    for i, case in enumerate(cases):
        inp, _ = case.load()
        K = inp.camera.K if inp.camera.perspective else np.zeros((3, 3))
        np.savez(path / f"{i:02d}.npz", normals=inp.normals, mask=inp.mask, K=K,
                 pixel_size=inp.camera.pixel_size, name=case.name)
        names.append(case.name)
    return names


def child(views: Path, out: Path) -> None:
    """One process: every view, each configuration once, memory released before each run."""
    import torch

    from fnin_cli.model.weights import load_model
    from fnin_cli.pipeline import build_input, integrate
    from fnin_cli.resources import PeakMemory, limit_threads

    torch.set_num_threads(1)
    model = load_model(device="cpu")
    inputs = []
    for f in sorted(views.glob("*.npz")):
        with np.load(f) as d:
            K = d["K"] if d["K"].any() else None
            inputs.append((str(d["name"]), build_input(d["normals"], mask=d["mask"], K=K,
                                                       pixel_size=None if K is not None else float(d["pixel_size"]))))
    rec = {}
    with limit_threads(1):
        for kw in CONFIGS.values():                       # warm-up
            integrate(inputs[0][1], model=model, **kw)
        for name, inp in inputs:
            rec[name] = {}
            for cfg, kw in CONFIGS.items():
                with PeakMemory(release=True) as pm:
                    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    t0 = time.perf_counter()
                    res = integrate(inp, model=model, **kw)
                    dt = time.perf_counter() - t0
                    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
                rec[name][cfg] = {"seconds": dt, "faults": faults, "peak_mb": (pm.peak or 0) / 1024,
                                  "depth_sha1": hashlib.sha1(np.ascontiguousarray(res.depth).tobytes()).hexdigest()}
    out.write_text(json.dumps({"thp": os.environ.get("THP_MEM_ALLOC_ENABLE"), "views": rec}))


def apply_rule(best: dict, identical: bool, big: list) -> dict:
    """The four conditions of docs/decisions.md#torch-hugepages."""
    sec = {v: {c: float(sum(r[c]["seconds"] for r in best[v].values())) for c in CONFIGS} for v in VARIANTS}
    mem = {name: best["candidate"][name]["default"]["peak_mb"] / best["today"][name]["default"]["peak_mb"]
           for name in big}
    checks = {
        "identical": identical,
        "one_shot_ratio": sec["candidate"]["one-shot"] / sec["today"]["one-shot"],
        "default_ratio": sec["candidate"]["default"] / sec["today"]["default"],
        "peak_ratio_2048": mem,
    }
    checks["adopted"] = bool(identical and checks["one_shot_ratio"] <= 0.97 and checks["default_ratio"] <= 1.0
                             and all(r <= 1.10 for r in mem.values()))
    return {"seconds": sec, **checks}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="studies/torch-hugepages/results/torch_hugepages.json")
    ap.add_argument("--child", nargs=2, metavar=("VIEWS", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(Path(a.child[0]), Path(a.child[1]))
        return
    from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR

    runs = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        views = Path(tmp) / "views"
        views.mkdir()
        render_views(a.meshes or str(DEFAULT_MESH_DIR), views)
        for i in range(a.repeat):
            for v, flag in VARIANTS.items():
                out = Path(tmp) / f"{v}{i}.json"
                env = dict(os.environ, THP_MEM_ALLOC_ENABLE=flag)
                subprocess.run([sys.executable, __file__, "--child", str(views), str(out)], env=env, check=True)
                runs[v].append(json.loads(out.read_text())["views"])
                s = {c: sum(r[c]["seconds"] for r in runs[v][-1].values()) for c in CONFIGS}
                print(f"{v:9s} process {i}: " + "  ".join(f"{c} {t:.3f} s" for c, t in s.items()), flush=True)
    names = list(runs["today"][0])
    best = {v: {n: {c: {"seconds": min(r[n][c]["seconds"] for r in runs[v]),
                        "faults": min(r[n][c]["faults"] for r in runs[v]),
                        "peak_mb": max(r[n][c]["peak_mb"] for r in runs[v])} for c in CONFIGS}
                for n in names} for v in VARIANTS}
    hashes = {(n, c, r[n][c]["depth_sha1"]) for v in VARIANTS for r in runs[v] for n in names for c in CONFIGS}
    identical = len(hashes) == len(names) * len(CONFIGS)
    big = [n for n in names if "2048" in n]
    verdict = apply_rule(best, identical, big)
    for n in names:
        print(f"{n:40s} " + "  ".join(f"{v} {c} {best[v][n][c]['seconds']:.3f} s {best[v][n][c]['faults']} f"
                                      for v in VARIANTS for c in CONFIGS))
    print(json.dumps(verdict, indent=1))
    with open(a.out, "w") as fh:
        json.dump({"repeat": a.repeat, "best": best, "rule": verdict}, fh, indent=1)


if __name__ == "__main__":
    main()
