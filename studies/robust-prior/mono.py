"""Candidates 20b-20n of studies/robust-prior/README.md on rendered views: the default with a
monocular-like prior (``mono-depth``, ``mono-disparity``), today and each candidate in one
run, no prior beside; median-scaled MADE as ``fnin bench`` reports it (per object on views
with several).

    PYTHONPATH=$PWD python studies/robust-prior/mono.py --sets clean,real-like --out studies/robust-prior/candidate20/renders.json

Candidates 20b-20h ran at ab21146 (README, candidate 20h), 20i-20m at b890965, 20n at 5098b55 (PriorConfig.fuse_pieces, which the next commit removed): run it there; 20o with PriorConfig.place_fused.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from fnin_cli.bench.cases import align_and_errors, align_objects, mesh_cases
from fnin_cli.bench.priors import case_seed, make_prior
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import integrate
from fnin_cli.resources import limit_threads

# 20s, 20u ran with candidate20s/candidate20s.patch, candidate20u/candidate20u.patch;
# PriorConfig fields per candidate. 20b-20h ran at ab21146, 20i-20m at b890965, 20n at 5098b55
# (their fields are gone; the records name them); "today": the fuse before candidate 20o,
# "20o": the placement after the rounds under a fused prior, its evidence held (place_fused).
# 20p ran with candidate20p/candidate20p.patch applied, as "20o" (free_widened=False added to
# it) against "20p" (free_widened=True); the field went with the patch
CANDIDATES = {
    "today": dict(place_fused=False, free_widened=False, place_before_fused=False, hold_ordered=False, local_word=False),
    "20o": dict(place_fused=True, free_widened=False, place_before_fused=False, hold_ordered=False, local_word=False),
    "20q": dict(place_fused=True, free_widened=True, place_before_fused=False, hold_ordered=False, local_word=False),
    "20r": dict(place_fused=True, free_widened=True, place_before_fused=True, hold_ordered=False, local_word=False),
    "20v": dict(place_fused=True, free_widened=True, place_before_fused=True, hold_ordered=True, local_word=True),
}
PRIORS = ("mono-depth", "mono-disparity")


def made(case, inp, gt, depth) -> float:
    object_id, names = case.object_ids()
    persp = inp.camera.perspective
    err = (align_objects(depth, gt, inp.mask, object_id, persp, names) if object_id is not None
           else align_and_errors(depth, gt, inp.mask, persp))
    return float(err["made"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--sets", default="clean,real-like")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    limit_threads(1)
    warnings.simplefilter("ignore")
    names = a.candidates.split(",")
    rec = {"candidates": {n: CANDIDATES[n] for n in names}, "seed": a.seed, "sets": {}}
    for set_name in a.sets.split(","):
        out = rec["sets"][set_name] = {}
        for case in mesh_cases(noise=None if set_name == "clean" else set_name):
            inp, gt = case.load()
            row = out[case.name] = {"noprior": made(case, inp, gt, integrate(inp).depth)}
            for kind in PRIORS:
                if kind == "mono-disparity" and not inp.camera.perspective:
                    continue            # disparity needs a perspective camera (the CLI refuses it)
                prior = make_prior(kind, gt, inp, case_seed(a.seed, case.name))
                row[kind] = {n: made(case, inp, gt, integrate(inp, depth_prior=prior, config=replace(
                    DEFAULT, prior=replace(DEFAULT.prior, **CANDIDATES[n]))).depth) for n in names}
            print(set_name, case.name, round(row["noprior"], 4),
                  {k: {n: round(v, 4) for n, v in row[k].items()} for k in PRIORS if k in row}, flush=True)
            Path(a.out).write_text(json.dumps(rec, indent=1))
    summary = {}
    for s, cases in rec["sets"].items():
        for kind in PRIORS:
            for n in names:
                on = [c for c in cases.values() if kind in c]
                vals = [c[kind][n] for c in on]
                worse = sum(c[kind][n] > max(1.1 * c["noprior"], c["noprior"] + 0.05) for c in on)
                summary.setdefault(s, {}).setdefault(kind, {})[n] = {"mean": float(np.mean(vals)), "worse": worse}
        summary[s]["noprior"] = float(np.mean([c["noprior"] for c in cases.values()]))
    rec["summary"] = summary
    Path(a.out).write_text(json.dumps(rec, indent=1))
    for s, per in summary.items():
        print(s, "noprior", round(per["noprior"], 4))
        for kind in PRIORS:
            print(" ", kind, {n: (round(v["mean"], 4), v["worse"]) for n, v in per[kind].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
