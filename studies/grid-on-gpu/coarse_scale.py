"""The rule in README.md ("grid_coarse_scale 2.1 against 1.5"): the default with Stage II
and the rounds on the grid, run on the CPU (``solver="grid:cpu"``, one thread), each
scale in its own fresh process, alternating, on camera-size views with exact depth:
seconds of Stage II and the rounds and per-object MADE.

    python studies/grid-on-gpu/coarse_scale.py [--scales 1.5,2.1] [--pairs 2]
        [--views large_load:2048x1536,large_load:3000x2000,bench:3000x2000] [--out FILE.json]

A view is ``large_load:WxH`` (``benchmarks/large_load.py``'s boot and koala) or
``bench:WxH`` (the view of ``fnin bench meshes --size WxH``: koala and penguin).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MESHES = ROOT.parent / "shared" / "data" / "meshes"


def view(spec: str, folder: Path):
    """(input, exact depth, object ids, object names) of one view."""
    from fnin_cli.bench.cases import mesh_cases
    from fnin_cli.inputs import load_input

    kind, size = spec.split(":")
    w, h = (int(v) for v in size.lower().split("x"))
    if kind == "bench":
        case = mesh_cases(MESHES, frame=(w, h))[0]
        inp, gt = case.load()
        object_id, names = case.object_ids()
        return inp, gt, object_id, names
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from large_load import MESHES as NAMES, render_view

    r = render_view(folder, h, w, MESHES)
    return load_input(folder), r.depth, r.object_id, list(NAMES)


def one(spec: str, scale: float) -> dict:
    """One run in this process: the view, then the default on the grid with ``scale``."""
    import torch

    from fnin_cli.bench.cases import align_objects
    from fnin_cli.config import DEFAULT
    from fnin_cli.pipeline import integrate

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        inp, gt, object_id, names = view(spec, Path(tmp) / "case")
    config = replace(DEFAULT, solver=replace(DEFAULT.solver, grid_coarse_scale=scale))
    t = time.perf_counter()
    res = integrate(inp, device="cpu", solver="grid:cpu", config=config)
    wall = time.perf_counter() - t
    err = align_objects(res.depth, gt, inp.mask, object_id, inp.camera.perspective, names)
    return {"view": spec, "scale": scale, "pixels": int(inp.mask.sum()), "rounds": res.rounds,
            "solve": round(res.seconds["solve"], 3), "refine": round(res.seconds.get("refine", 0.0), 3),
            "integrate": round(wall, 3), "made_mm": round(err["made"], 4),
            "objects": {k: round(v["made_mm"], 4) for k, v in err["objects"].items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="1.5,2.1")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--views", default="large_load:2048x1536,large_load:3000x2000,bench:3000x2000")
    ap.add_argument("--out", default=None)
    ap.add_argument("--one", nargs=2, metavar=("VIEW", "SCALE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], float(a.one[1]))), flush=True)
        return
    scales = [float(s) for s in a.scales.split(",")]
    runs = []
    for spec in a.views.split(","):
        for pair in range(a.pairs):
            for scale in (scales if pair % 2 == 0 else scales[::-1]):
                p = subprocess.run([sys.executable, __file__, "--one", spec, str(scale)], capture_output=True, text=True)
                if p.returncode != 0:
                    raise SystemExit(f"{spec} {scale}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
                runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
                print(json.dumps(runs[-1]), flush=True)
    summary = []
    for spec in a.views.split(","):
        rows = {s: [r for r in runs if r["view"] == spec and r["scale"] == s] for s in scales}
        secs = {s: sum(r["solve"] + r["refine"] for r in rows[s]) for s in scales}
        objs = {s: rows[s][0]["objects"] for s in scales}
        base, cand = scales[0], scales[-1]
        summary.append({"view": spec, "seconds": secs, "ratio": round(secs[cand] / secs[base], 3),
                        "worst_object_ratio": round(max(objs[cand][k] / objs[base][k] for k in objs[base]), 4),
                        "objects": objs})
        print(json.dumps(summary[-1]), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
