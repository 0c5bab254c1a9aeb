# DiLiGenT patches with PriorConfig.judge_start (candidates 18, 19; runs at be00b1e, which had it), per object abs:
#   PYTHONPATH=$PWD python studies/robust-prior/candidate18/diligent_check.py none|one|pieces
import sys, json, warnings, numpy as np
warnings.simplefilter("ignore")
from dataclasses import replace
from fnin_cli.bench.cases import resolve_cases
from fnin_cli.bench.priors import make_prior, case_seed
from fnin_cli.bench.runner import absolute_made
from fnin_cli.pipeline import integrate
from fnin_cli.config import DEFAULT
mode = None if sys.argv[1] == "none" else sys.argv[1]
cfg = replace(DEFAULT, prior=replace(DEFAULT.prior, judge_start=mode))
out = {}
for c in resolve_cases("diligent", "../shared/data/diligent")[1]:
    inp, gt = c.load(); p = make_prior("patches", gt, inp, case_seed(0, c.name))
    out[c.name] = absolute_made(integrate(inp, "fnin", depth_prior=p, config=cfg).depth, gt, inp.mask)
print(mode, {k: round(v, 3) for k, v in out.items()}, "mean", round(float(np.mean(list(out.values()))), 4))
