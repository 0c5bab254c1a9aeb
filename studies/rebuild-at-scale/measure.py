"""Today's default against rounds candidates (RoundsConfig fields) on bench meshes' views:
the candidates of README.md, or ``--candidates '{"today": {}, "X": {"field": value}}'``
(studies/vcycle-single uses it).

    PYTHONPATH=$PWD python studies/rebuild-at-scale/measure.py --sets clean,real-like,2k --out results/small_2k.json
    PYTHONPATH=$PWD python studies/rebuild-at-scale/measure.py --sets 24mp --out results/24mp.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/

from _lib import variant  # noqa: E402

from fnin_cli.bench.cases import align_and_errors, align_objects, mesh_cases  # noqa: E402
from fnin_cli.pipeline import integrate  # noqa: E402
from fnin_cli.resources import limit_threads  # noqa: E402

MESHES = "/work/shared/data/meshes"
CANDIDATES = {
    "today": {},
    "C1": {"rebuild_after": None},
    "C2": {"rebuild_after": 16},
    "C3": {"rebuild_after": 12},
}
SETS = {
    "clean": lambda: mesh_cases(MESHES),
    "real-like": lambda: mesh_cases(MESHES, noise="real-like"),
    "2k": lambda: mesh_cases(MESHES, frame=(2048, 1536)),
    "24mp": lambda: mesh_cases(MESHES, frame=(6000, 4000)),
}


def run_case(case, names: list, rot: int, candidates: dict) -> dict:
    inp, gt = case.load()
    object_id, objs = case.object_ids()
    out = {}
    order = names[rot % len(names):] + names[:rot % len(names)]
    for name in order:
        cfg = variant(rounds=candidates[name])
        t = time.perf_counter()
        res = integrate(inp, "fnin", config=cfg)
        sec = time.perf_counter() - t
        if object_id is not None:
            err = align_objects(res.depth, gt, res.mask, object_id, inp.camera.perspective, objs)
        else:
            err = align_and_errors(res.depth, gt, res.mask, inp.camera.perspective)
        out[name] = {"made_mm": err["made"], "seconds": sec, "refine": res.seconds.get("refine", 0.0),
                     "rounds": res.rounds}
        print(f"  {case.name:45s} {name:6s} {err['made']:.4f} mm {sec:7.2f} s (rounds {res.seconds.get('refine', 0):.2f} s, {res.rounds})",
              flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="clean,real-like,2k")
    ap.add_argument("--out", required=True)
    ap.add_argument("--candidates", default=None, help="JSON {name: RoundsConfig fields}, the first today's")
    a = ap.parse_args()
    candidates = CANDIDATES if a.candidates is None else json.loads(a.candidates)
    names = list(candidates)
    rec = {"candidates": candidates, "sets": {}}
    rot = 0
    with limit_threads(1):
        for s in a.sets.split(","):
            rec["sets"][s] = {}
            for case in SETS[s]():
                rec["sets"][s][case.name] = run_case(case, names, rot, candidates)
                rot += 1
                Path(a.out).write_text(json.dumps(rec, indent=1))
    summary = {}
    for s, cases in rec["sets"].items():
        today_e = sum(c[names[0]]["made_mm"] for c in cases.values()) / len(cases)
        today_s = sum(c[names[0]]["seconds"] for c in cases.values())
        summary[s] = {}
        for n in names:
            e = sum(c[n]["made_mm"] for c in cases.values()) / len(cases)
            sec = sum(c[n]["seconds"] for c in cases.values())
            worst = max(c[n]["made_mm"] / c[names[0]]["made_mm"] for c in cases.values())
            summary[s][n] = {"mean_mm": e, "mean_ratio": e / today_e, "worst_ratio": worst,
                             "seconds": sec, "seconds_ratio": sec / today_s}
            print(f"{s:10s} {n:6s} mean {e:.4f} ({e / today_e:.4f}x) worst {worst:.3f}x  seconds {sec:.1f} ({sec / today_s:.3f}x)")
    rec["summary"] = summary
    Path(a.out).write_text(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
