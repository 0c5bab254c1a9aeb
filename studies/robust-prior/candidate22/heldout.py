# Candidates 22b/22e on wrong-patch priors with other parameters and seeds than the bench's (DiLiGenT):
# the discs shifted forward instead of back, by 10 sigma instead of 30, on a prior of twice the noise,
# seeds 1 and 2; the default against judge_steps off (the term before 22b). Mean abs and right abs per
# variant; writes heldout.json beside this file.
#   PYTHONPATH=$PWD python studies/robust-prior/candidate22/heldout.py
import json, sys, warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from fnin_cli.bench.cases import resolve_cases
from fnin_cli.bench.priors import case_seed, make_prior
from fnin_cli.bench.runner import absolute_made
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import integrate
from fnin_cli.resources import limit_threads

warnings.simplefilter("ignore")
limit_threads(1)
CONFIGS = {"default": DEFAULT, "judge off": replace(DEFAULT, prior=replace(DEFAULT.prior, judge_steps=False))}


def variant(p, gt, mask, name, seed):
    """The bench's `patches` prior ``p`` remade as ``name``."""
    wrong, sigma = p.meta["wrong"], p.sigma
    shift = float(np.nanmedian(p.depth[wrong] - gt[wrong]))
    d = p.depth.astype(np.float64)
    if name == "forward":
        d[wrong] -= 2 * shift
    elif name == "10 sigma":
        d[wrong] += 10 * sigma - shift
    elif name == "2x noise":
        d = d + np.random.default_rng(seed).normal(0.0, np.sqrt(3.0) * sigma, d.shape)
        sigma = 2 * sigma
    return replace(p, depth=np.where(mask, d, np.nan), sigma=sigma)


out = {}
for seed in (1, 2):
    for c in resolve_cases("diligent", "../shared/data/diligent")[1]:
        inp, gt = c.load()
        p = make_prior("patches", gt, inp, case_seed(seed, c.name))
        for name in ("forward", "10 sigma", "2x noise"):
            q = variant(p, gt, inp.mask, name, seed)
            for cname, cfg in CONFIGS.items():
                res = integrate(inp, "fnin", depth_prior=q, config=cfg)
                row = (absolute_made(res.depth, gt, inp.mask), absolute_made(res.depth, gt, inp.mask & ~p.meta["wrong"]))
                out.setdefault(f"{name}, seed {seed}", {}).setdefault(cname, {})[c.name] = row
        print(seed, c.name, flush=True)
summary = {v: {k: {"abs": float(np.mean([r[0] for r in per.values()])), "right_abs": float(np.mean([r[1] for r in per.values()])),
                   "worst": max(per, key=lambda o: per[o][0])} for k, per in cs.items()} for v, cs in out.items()}
for v, s in summary.items():
    print(v, {k: (round(x["abs"], 3), round(x["right_abs"], 3), x["worst"]) for k, x in s.items()})
Path(__file__).with_name("heldout.json").write_text(json.dumps({"cases": out, "summary": summary}, indent=1))
