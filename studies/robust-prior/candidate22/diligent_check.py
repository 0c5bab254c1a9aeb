# DiLiGenT `patches` (seed 0) with a PriorConfig switch FIELD at the default and flipped (22, 22b:
# judge_steps, then off by default; 22d: judge_small), per object: absolute MADE, where the prior was
# right, and seconds; writes NAME.json beside this file (22 ran as diligent_patches, 22b as
# diligent_patches_22b, keys tukey-given / judge-steps; 22e as diligent_patches_22e, the default
# (22e) against judge_small flipped off, 22b; at 76a5b9f, where judge_small was a str).
#   PYTHONPATH=$PWD python studies/robust-prior/candidate22/diligent_check.py NAME FIELD [KIND]
# (23: candidate23/..., `diligent_patches-nosigma_23 judge_estimates patches-nosigma`, written here)
import json, sys, time, warnings
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
out = {}
for c in resolve_cases("diligent", "../shared/data/diligent")[1]:
    inp, gt = c.load()
    p = make_prior(sys.argv[3] if len(sys.argv) > 3 else "patches", gt, inp, case_seed(0, c.name))
    wrong = p.meta["wrong"]
    field = sys.argv[2]
    for on in (False, True):
        value = getattr(DEFAULT.prior, field)
        flipped = (not value) if isinstance(value, bool) else None      # a str switch: off
        cfg = replace(DEFAULT, prior=replace(DEFAULT.prior, **{field: flipped if on else value}))
        t0 = time.perf_counter()
        res = integrate(inp, "fnin", depth_prior=p, config=cfg)
        row = {"abs": absolute_made(res.depth, gt, inp.mask), "right_abs": absolute_made(res.depth, gt, inp.mask & ~wrong),
               "seconds": time.perf_counter() - t0, "rejected": res.prior_residual.get("rejected")}
        out.setdefault(field if on else "default", {})[c.name] = row
    print(c.name, {k: round(v[c.name]["abs"], 3) for k, v in out.items()}, flush=True)
mean = {k: float(np.mean([r["abs"] for r in v.values()])) for k, v in out.items()}
print("mean", mean)
Path(__file__).with_name(sys.argv[1] + ".json").write_text(json.dumps({"cases": out, "mean": mean}, indent=1))
