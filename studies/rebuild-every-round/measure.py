"""Today's default against AMG-rebuild candidates (RoundsConfig fields) on the project's
own renders, and DiLiGenT as the guard: errors and whole-``integrate`` seconds, every
case loaded once and its candidates run in one process, one thread, in a rotated order;
the large views in two passes, the second in the reverse order (README.md). Since the
second rule the process first warms up (one untimed call) and each run records its depth's
SHA-1: a candidate whose depth is bitwise today's computed what today does, and the rule
counts today's seconds for it there (``seconds_rule``).

    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --sets clean,real-like --out studies/rebuild-every-round/results/small.json
    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --sets 2k,24mp,folder24 --out studies/rebuild-every-round/results/large.json
    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --sets diligent --out studies/rebuild-every-round/results/diligent.json
    C='{"today": {}, "S12": {"rebuild_all_after": 12}}'   # the second rule
    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --candidates "$C" --sets clean,real-like,diligent --out studies/rebuild-every-round/results/s12_small.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "studies"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _lib import variant  # noqa: E402
from large_load import MESHES as FOLDER_MESHES, render_view  # noqa: E402

from fnin_cli.bench.cases import align_and_errors, align_objects, mesh_cases, resolve_cases  # noqa: E402
from fnin_cli.inputs import load_input  # noqa: E402
from fnin_cli.pipeline import integrate  # noqa: E402
from fnin_cli.resources import limit_threads  # noqa: E402

MESHES = str(ROOT.parent / "shared" / "data" / "meshes")
DILIGENT = str(ROOT.parent / "shared" / "data" / "diligent")
CANDIDATES = {"today": {}, "EVERY": {"rebuild_after": 0}, "R4": {"rebuild_after": 4}}
LARGE = {"2k", "24mp", "folder24"}


class _Folder:
    """The 6000x4000 layout folder of benchmarks/large_load.py (boot and koala), read as
    ``fnin integrate DIR`` reads it, scored per object against the render."""

    name = "large_load_6000x4000"

    def __init__(self, tmp: Path):
        self.dir = tmp / "case"
        self.view = render_view(self.dir, 4000, 6000, MESHES)

    def load(self):
        inp = load_input(self.dir / "normal_map.png", mask=self.dir / "mask.png", K=self.dir / "K.txt")
        return inp, self.view.depth

    def object_ids(self):
        return self.view.object_id, list(FOLDER_MESHES)


def cases(name: str, tmp: Path):
    if name == "clean":
        return mesh_cases(MESHES)
    if name == "real-like":
        return mesh_cases(MESHES, noise="real-like")
    if name == "2k":
        return mesh_cases(MESHES, frame=(2048, 1536))
    if name == "24mp":
        return mesh_cases(MESHES, frame=(6000, 4000))
    if name == "folder24":
        return [_Folder(tmp)]
    if name == "diligent":
        return resolve_cases("diligent", DILIGENT)[1]
    raise SystemExit(f"unknown set {name}")


def run_case(case, order: list, candidates: dict) -> dict:
    inp, gt = case.load()
    object_id, objs = case.object_ids() if hasattr(case, "object_ids") else (None, None)
    out = {}
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
                     "rounds": res.rounds, "depth_sha": hashlib.sha1(res.depth.tobytes()).hexdigest()}
        print(f"  {case.name:45s} {name:6s} {err['made']:.4f} mm {sec:7.2f} s (rounds {res.seconds.get('refine', 0):.2f} s, {res.rounds})",
              flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="clean,real-like")
    ap.add_argument("--out", required=True)
    ap.add_argument("--candidates", default=None, help="JSON {name: RoundsConfig fields}, the first today's")
    a = ap.parse_args()
    candidates = CANDIDATES if a.candidates is None else json.loads(a.candidates)
    names = list(candidates)
    rec = {"candidates": candidates, "sets": {}}
    rot = 0
    with limit_threads(1), tempfile.TemporaryDirectory() as tmp:
        warm = mesh_cases(MESHES)[0].load()[0]
        integrate(warm, "fnin")                 # the process's warm-up (model load), untimed
        for s in a.sets.split(","):
            rec["sets"][s] = {}
            for case in cases(s, Path(tmp)):
                order = names[rot % len(names):] + names[:rot % len(names)]
                rot += 1
                passes = [order, order[::-1]] if s in LARGE else [order]
                runs = [run_case(case, o, candidates) for o in passes]
                rec["sets"][s][case.name] = {n: {**runs[0][n], "seconds": sum(r[n]["seconds"] for r in runs),
                                                 "passes": [r[n] for r in runs]} for n in names}
                Path(a.out).write_text(json.dumps(rec, indent=1))
    summary = {}
    for s, cs in rec["sets"].items():
        today = names[0]
        today_e = sum(c[today]["made_mm"] for c in cs.values()) / len(cs)
        today_s = sum(c[today]["seconds"] for c in cs.values())
        summary[s] = {}
        for n in names:
            e = sum(c[n]["made_mm"] for c in cs.values()) / len(cs)
            sec = sum(c[n]["seconds"] for c in cs.values())
            same = [k for k, c in cs.items() if c[n].get("depth_sha") and c[n]["depth_sha"] == c[today]["depth_sha"]]
            sec_rule = sum(c[today if k in same else n]["seconds"] for k, c in cs.items())
            worst = max(c[n]["made_mm"] / c[today]["made_mm"] for c in cs.values())
            summary[s][n] = {"mean_mm": e, "mean_ratio": e / today_e, "worst_ratio": worst,
                             "seconds": sec, "seconds_ratio": sec / today_s, "same_as_today": len(same),
                             "seconds_rule": sec_rule, "seconds_rule_ratio": sec_rule / today_s}
            print(f"{s:10s} {n:6s} mean {e:.4f} ({e / today_e:.4f}x) worst {worst:.3f}x  seconds {sec:.1f} ({sec / today_s:.3f}x)"
                  f"  same as today {len(same)}/{len(cs)}, rule seconds {sec_rule / today_s:.3f}x")
    rec["summary"] = summary
    Path(a.out).write_text(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
