"""A look (development, no choice): does BiNI's unweighted energy tell a round that refines
from one that carries a piece away? Per DiLiGenT object, the plain least-squares energy of
each round's unknown relative to the rounds' start, and the error after exactly n rounds.

    PYTHONPATH=$PWD python studies/trust-rounds/look_plain_energy.py > studies/trust-rounds/results/look_plain_energy.txt

The rounds' start and system come through ``integrate(rounds_adjust=...)`` (returning the
unknown unchanged); no module global is assigned.
"""
import sys, numpy as np
from dataclasses import replace
from fnin_cli.config import DEFAULT
sys.path.insert(0, "studies")
from _lib import integrate_hooked  # the rounds hooks: studies/_lib.py
from fnin_cli.bench.cases import resolve_cases, align_and_errors
from fnin_cli.resources import limit_threads

class Rec:
    def __init__(self): self.sys = None; self.z0 = None; self.e = []
    def adjust_factory(self, z_start, system):
        self.sys, self.z0 = system, z_start.copy()
        self.e0 = system.energy(z_start)
        def adjust(it, z, w):
            self.e.append(system.energy(z) / self.e0)
            return z
        return adjust

with limit_threads(1):
    _, cases = resolve_cases("diligent", data="/work/shared/data/diligent")
    for case in cases:
        inp, gt = case.load()
        r = Rec()
        res = integrate_hooked(inp, rounds_adjust=r.adjust_factory)
        errs = []
        for n in range(0, 9):
            cfg = replace(DEFAULT, rounds=DEFAULT.rounds.fixed(n)) if n else None
            rr = integrate_hooked(inp, config=cfg, refine=0 if n == 0 else None)
            errs.append(align_and_errors(rr.depth, gt, inp.mask, inp.camera.perspective)["made"])
        print(case.name, "E1/E1_0:", " ".join(f"{x:.3f}" for x in r.e))
        print(" " * len(case.name), "err r0..8:", " ".join(f"{x:.3f}" for x in errs), flush=True)
