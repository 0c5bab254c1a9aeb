"""pieces-meet: today's default against the candidates (README.md), bini in the same run.

    PYTHONPATH=$PWD python studies/pieces-meet/run.py --out studies/pieces-meet/results.json [--sets a,b]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behind import place_behind, place_behind_final  # noqa: E402
from crease import place_creases  # noqa: E402
from figure import place_figures  # noqa: E402

from dataclasses import replace  # noqa: E402

from fnin_cli.bench.cases import align_and_errors, align_objects, resolve_cases  # noqa: E402
from fnin_cli.config import DEFAULT  # noqa: E402
from fnin_cli.pipeline import finish, integrate, run_method  # noqa: E402
from fnin_cli.solvers.rounds import rounds_start, run_rounds  # noqa: E402

SETS = {"diligent": dict(data="/work/shared/data/diligent"), "meshes": dict(meshes="/work/shared/data/meshes"),
        "real-like": dict(meshes="/work/shared/data/meshes", noise="real-like"), "samples": {}, "synthetic": {}}


def with_start(start):
    """integrate(inp) (the default) with the rounds started at start(system, z, weights)."""
    def run(inp):
        r = run_method(inp, "fnin")
        z, info = r.out.z, None
        if r.out.edge_p is not None and r.out.weights is not None and r.args.prior is None:
            z, info = start(r.system, r.out.z, r.out.weights)
        rounds = run_rounds(r.system, z, r.out.edge_p, r.args.term(z), r.config, r.rounds, r.out.backend,
                            r.hierarchy)
        return finish(inp, r, rounds), info
    return run


def creases(inp):
    """Candidate 3: the package's default with crease pieces placed at the rounds' start."""
    r = run_method(inp, "fnin")
    start, moved = r.out.z, None
    if r.out.edge_p is not None and r.out.weights is not None and r.prior is None:
        # the package's start before candidate 3 was adopted: bridges only
        bridges_only = replace(r.rounds, crease_cos=None)
        bridged = rounds_start(r.system, r.out.z, r.out.edge_p, r.out.weights, bridges_only)[0]
        start, moved = place_creases(r.system, r.out.z, bridged, r.out.weights)
    rounds = run_rounds(r.system, start, r.out.edge_p, r.rounds_term(start), r.config, r.rounds, r.out.backend,
                        r.hierarchy)
    return finish(inp, r, rounds), moved or None


def behind(inp, mostly=False):
    """Candidate 4 (5: ``mostly``): the package's default with occluded pieces moved behind
    their occluders."""
    r = run_method(inp, "fnin")
    start, moved = r.out.z, None
    if r.out.edge_p is not None and r.out.weights is not None and r.prior is None:
        placed = rounds_start(r.system, r.out.z, r.out.edge_p, r.out.weights, r.rounds)[0]
        start, moved = place_behind(r.system, r.out.z, placed, r.out.weights, mostly=mostly)
    rounds = run_rounds(r.system, start, r.out.edge_p, r.rounds_term(start), r.config, r.rounds, r.out.backend,
                        r.hierarchy)
    return finish(inp, r, rounds), moved or None


def behind_final(inp):
    """Candidate 6: the package's default with the final result's occluded loose pieces moved
    behind their occluders after the rounds."""
    r = run_method(inp, "fnin")
    start = r.out.z
    if r.out.edge_p is not None and r.out.weights is not None and r.prior is None:
        start = rounds_start(r.system, r.out.z, r.out.edge_p, r.out.weights, r.rounds)[0]
    rounds = run_rounds(r.system, start, r.out.edge_p, r.rounds_term(start), r.config, r.rounds, r.out.backend,
                        r.hierarchy)
    z, moved = place_behind_final(r.system, rounds.z, rounds.weights)
    rounds = replace(rounds, z=z)
    return finish(inp, r, rounds), moved or None


# today's default: the package before this study (bridge_edges did not exist: None is the same)
TODAY = replace(DEFAULT, rounds=replace(DEFAULT.rounds, bridge_edges=None, crease_cos=None))
CANDIDATES = {"today": lambda inp: (integrate(inp, config=TODAY), None),
              # the package's default once candidate 2 was adopted (its own code, to check it matches)
              "package": lambda inp: (integrate(inp), None),
              "figure": with_start(place_figures),
              "closing": with_start(lambda s, z, w: place_figures(s, z, w, closing=True)),
              "crease": creases,
              "behind": behind,
              "mostly": lambda inp: behind(inp, mostly=True),
              "final": behind_final}


def made(case, res, inp, gt):
    object_id, names = case.object_ids()
    if object_id is not None:
        return align_objects(res.depth, gt, inp.mask, object_id, inp.camera.perspective, names)["made"]
    return align_and_errors(res.depth, gt, inp.mask, inp.camera.perspective)["made"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--bini-from", help="a results file of this script whose bini MADE is read instead of run")
    args = ap.parse_args()
    names = args.candidates.split(",")
    bini_from = json.load(open(args.bini_from)) if args.bini_from else None
    out = {}
    with threadpool_limits(1):
        import torch

        torch.set_num_threads(1)
        for name in args.sets.split(","):
            kw = SETS[name]
            source = "samples" if name == "samples" else ("meshes" if name in ("meshes", "real-like") else name)
            _, cases = resolve_cases(source, **kw)
            rec = {}
            for case in cases:
                inp, gt = case.load()
                r = {}
                for c in names:
                    t = time.perf_counter()
                    res, info = CANDIDATES[c](inp)
                    r[c] = {"made": made(case, res, inp, gt), "seconds": time.perf_counter() - t}
                    if info is not None:
                        r[c]["moved"] = info
                t = time.perf_counter()
                if bini_from is not None:
                    r["bini"] = bini_from[name]["cases"][case.name]["bini"]
                else:
                    r["bini"] = {"made": made(case, integrate(inp, "bini"), inp, gt), "seconds": time.perf_counter() - t}
                rec[case.name] = r
                print(name, case.name, {c: round(v["made"], 4) for c, v in r.items()},
                      {c: v.get("moved") for c, v in r.items() if v.get("moved")}, flush=True)
            out[name] = {"cases": rec, "mean": {c: float(np.mean([r[c]["made"] for r in rec.values()]))
                                                for c in names + ["bini"]}}
            print(name, out[name]["mean"], flush=True)
            with open(args.out, "w") as f:
                json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
