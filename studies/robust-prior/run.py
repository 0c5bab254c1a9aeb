"""The robust prior's loss on rendered views (studies/robust-prior/README.md).

Builds each candidate as a configuration (``DEFAULT`` with ``PriorConfig.loss`` and
``loss_scale`` replaced) and runs the default with each bench prior drawn from the views'
truth; prints and writes the absolute MADE per candidate, prior and set.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from fnin_cli.bench.cases import mesh_cases  
from fnin_cli.bench.priors import case_seed, make_prior  
from fnin_cli.bench.runner import absolute_made  
from fnin_cli.config import DEFAULT  
from fnin_cli.pipeline import integrate  
from fnin_cli.resources import limit_threads  

CANDIDATES = {"quadratic": (None, 1.0), "cauchy": ("cauchy", 2.385), "huber": ("huber", 1.345),
              "tukey": ("tukey", 4.685),
              # written after run 2: Cauchy where sigma is given, Huber where it is estimated
              "cauchy-given": (("cauchy", 2.385), ("huber", 1.345)),
              # written in round 5's third session (candidate 12): Tukey where sigma is given
              # (candidate 13, `tukey-given-weak`, ran at a18ee89, whose PriorConfig.weak_start is gone)
              "tukey-given": (("tukey", 4.685), ("huber", 1.345))}
# candidates 16-19 (start-one, start-pieces: PriorConfig.judge_start "one" / "pieces") ran at
# be00b1e, whose judge_start is gone (README, candidates 16-19)
# candidate 22 (round 5, fifth session): tukey-given with PriorConfig.judge_steps
# (22d, `judge-small`, its first verdict kept in small pieces, ran at 76a5b9f as judge_small="first")
SWITCHES = {"judge-steps": ("tukey-given", {"judge_steps": True, "judge_small": False}),
            # candidate 22e: the verdict judged again across the normals' cuts, kept in small pieces
            "judge-again": ("tukey-given", {"judge_steps": True, "judge_small": True}),
            # candidate 23: a full-size map without a sigma has it estimated from its steps first
            "judge-estimates": ("tukey-given", {"judge_estimates": True}),
            # candidate 22f: today's judge with open edges linked where the prior's own step is small
            "judge-open": ("tukey-given", {"judge_open": True})}
PRIORS = ("patches", "dense8", "sparse", "dense8-nosigma", "sparse-nosigma", "patches-nosigma")


def config_of(name: str):
    """The candidate's configuration: one loss for every prior, or (given, estimated) pairs."""
    base, switches = SWITCHES.get(name, (name, {}))
    c = CANDIDATES[base]
    given, estimated = c if isinstance(c[0], tuple) else (c, c)
    return replace(DEFAULT, prior=replace(DEFAULT.prior, loss=given[0], loss_scale=given[1],
                                          estimated_loss=estimated[0], estimated_scale=estimated[1], **switches))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--candidates", default=",".join(CANDIDATES))
    ap.add_argument("--priors", default=",".join(PRIORS))
    ap.add_argument("--sets", default="clean,real-like")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    limit_threads(1)
    names, priors = a.candidates.split(","), a.priors.split(",")
    rec = {"candidates": {n: CANDIDATES.get(n) or SWITCHES[n] for n in names}, "seed": a.seed, "sets": {}}
    for set_name in a.sets.split(","):
        cases = mesh_cases(noise=None if set_name == "clean" else set_name)
        out = rec["sets"][set_name] = {}
        for case in cases:
            inp, gt = case.load()
            for kind in priors:
                prior = make_prior(kind, gt, inp, case_seed(a.seed, case.name))
                wrong = prior.meta.get("wrong")
                for n in names:
                    t0 = time.perf_counter()
                    res = integrate(inp, config=config_of(n), depth_prior=prior)
                    row = {"abs": absolute_made(res.depth, gt, inp.mask), "seconds": time.perf_counter() - t0,
                           "rejected": res.prior_residual.get("rejected")}
                    if wrong is not None:
                        row["right_abs"] = absolute_made(res.depth, gt, inp.mask & ~wrong)
                    out.setdefault(kind, {}).setdefault(n, {})[case.name] = row
                print(set_name, case.name, kind, {n: round(out[kind][n][case.name]["abs"], 4) for n in names},
                      flush=True)
        Path(a.out).write_text(json.dumps(rec, indent=1))
    rec["mean"] = {s: {k: {n: float(np.mean([r["abs"] for r in v.values()])) for n, v in per.items()}
                       for k, per in sets.items()} for s, sets in rec["sets"].items()}
    Path(a.out).write_text(json.dumps(rec, indent=1))
    for s, per in rec["mean"].items():
        for k, m in per.items():
            print(s, k, {n: round(v, 4) for n, v in m.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
