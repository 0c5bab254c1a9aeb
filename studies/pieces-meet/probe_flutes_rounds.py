"""Probe (no choice): flutes and dome under the one-shot alone and under the rounds with other
edge-prior strengths, to see whether the rounds are what glue flutes' seams."""
from dataclasses import replace
import numpy as np
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases, align_and_errors
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import integrate

with threadpool_limits(1):
    import torch
    torch.set_num_threads(1)
    _, cases = resolve_cases("samples")
    for case in cases:
        inp, gt = case.load()
        out = {"default": integrate(inp), "one-shot": integrate(inp, refine=0)}
        for e in (0.6, 1.0):
            out[f"edge_prior {e}"] = integrate(inp, config=replace(DEFAULT, rounds=replace(DEFAULT.rounds, edge_prior=e)))
        print(case.name, {k: round(align_and_errors(r.depth, gt, inp.mask, True if inp.camera.perspective else False)["made"], 4)
                          for k, r in out.items()}, flush=True)
