"""Held-out monocular-like priors with other parameters than the bench's `mono-depth` (warp 6%
and blur 6 px; warp 2% and blur 1.5 px; draw seed 3), on DiLiGenT: no prior, candidate 20o
(`free_widened` off) and 20q, the median-scaled MADE (the bench's measure). A measurement after
20q's adoption (round 5, eighth session); after 20v's (ninth session) 20q against 20v:

    PYTHONPATH=$PWD python studies/robust-prior/heldout_params.py > studies/robust-prior/candidate20v/heldout_params.txt
"""
import sys, warnings, numpy as np
warnings.simplefilter("ignore")
from pathlib import Path
from dataclasses import replace
from fnin_cli.blur import masked_blur
from fnin_cli.config import DEFAULT
from fnin_cli.prior import DepthPrior
from fnin_cli.pipeline import integrate, load_input
from fnin_cli.bench.cases import align_and_errors
from fnin_cli.bench.priors import case_seed
def mono(gt, mask, rng, median, span, warp_frac, blur):
    h, w = gt.shape
    yy, xx = np.mgrid[:h, :w] / max(h, w)
    warp = np.zeros(gt.shape)
    for _ in range(3):
        f, angle, phase = rng.uniform(1.0, 2.0), rng.uniform(0, np.pi), rng.uniform(0, 2 * np.pi)
        warp += np.cos(2 * np.pi * f * (xx * np.cos(angle) + yy * np.sin(angle)) + phase)
    warp *= warp_frac * span / max(float(np.max(np.abs(warp[mask]))), 1e-12)
    z = masked_blur(gt + warp, mask, blur)
    a = float(np.exp(rng.uniform(np.log(0.5), np.log(2.0)))); b = float(rng.uniform(-0.3, 0.3)) * median
    values = a * z + b
    values[~(np.isfinite(values) & (values > 0))] = np.nan
    return DepthPrior(values, np.isfinite(values).astype(float), 0.1 * float(np.nanstd(values)), "relative", "mono", 1)
D = Path("../shared/data/diligent")
for warp_frac, blur in ((0.06, 6.0), (0.02, 1.5)):
    rows = {"noprior": [], "20q": [], "20v": []}
    for obj in ["bear","buddha","cat","cow","goblet","harvest","pot1","pot2","reading"]:
        inp = load_input(D/obj); gt = np.load(D/obj/"depth_gt.npz")["depth_gt"]
        m = inp.mask & np.isfinite(gt); v = gt[m]
        prior = mono(gt, m, np.random.default_rng(case_seed(3, obj)), float(np.median(v)), float(np.percentile(v, 95) - np.percentile(v, 5)), warp_frac, blur)
        rows["noprior"].append(align_and_errors(integrate(inp).depth, gt, inp.mask, True)["made"])
        for n, fields in (("20q", dict(place_before_fused=False, hold_ordered=False, local_word=False)), ("20v", {})):
            cfg = replace(DEFAULT, prior=replace(DEFAULT.prior, free_widened=True, **fields))
            rows[n].append(align_and_errors(integrate(inp, depth_prior=prior, config=cfg).depth, gt, inp.mask, True)["made"])
    print(f"warp {warp_frac} blur {blur}:", {k: round(float(np.mean(v)), 4) for k, v in rows.items()},
          "goblet", [round(rows[k][4], 3) for k in rows], "worse than no prior (20v):",
          [o for o, a, b in zip(["bear","buddha","cat","cow","goblet","harvest","pot1","pot2","reading"], rows["20v"], rows["noprior"]) if a > max(1.1 * b, b + 0.05)], flush=True)
