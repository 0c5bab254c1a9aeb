"""The inner solver of ``--refine`` rounds: the error after each round and the rounds'
cumulative seconds (1 thread), per solver, all started from the same fnin result with the
prior kept there (as pipeline.integrate's refine). On DiLiGenT (MADE, mm) or, with
``--synthetic N``, on N development scenes per layout (seed offset 20000, never a
decision's fresh set; relative error of the unknown, as compare_models.py).

Solvers: ``jacobi`` (BiNI's own Jacobi-PCG), ``amg`` (wls' AMG-PCG), ``torch:cuda``
(Jacobi-PCG in torch on the GPU), ``amg-refresh`` (AMG-PCG whose hierarchy is built in the
first round and refreshed in the next, as pipeline.integrate's rounds do); all to BiNI's
tolerance, 1e-3. ``--no-prior`` puts the
prior back at 0, as BiNI's own rounds (what --refine did before).

    python studies/refine-solver/refine_solver.py --data ../shared/data/diligent --rounds 6 --solvers jacobi,amg \
        --json studies/refine-solver/results/refine_solver.json
    python studies/refine-solver/refine_solver.py --synthetic 8 --res 384 --rounds 6 --solvers jacobi,amg \
        --json studies/refine-solver/results/refine_solver_synthetic.json
    python studies/refine-solver/refine_solver.py --synthetic 4 --res 384 --rounds 12 --solvers amg,amg-refresh \
        --json studies/refine-solver/results/refine_hierarchy.json       # docs/decisions.md#refine-hierarchy
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from fnin_cli.solvers import fnin as solvers_fnin
from fnin_cli.model import weights as model_weights
from fnin_cli.bench.cases import resolve_cases, unknown_made
from fnin_cli.pipeline import build_input, classic_lambda
from fnin_cli.resources import cuda_synchronize
from fnin_cli.solvers.bini import integrate_bini
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.data.synthetic import make_scene, relative_error
from fnin_cli.train.config import VAL_SEED0
from fnin_cli.solvers.system import NormalSystem

LAYOUTS = {"independent": {}, "stacked": {"stack_prob": 1.0}, "fold": {"fold_prob": 1.0}}


def diligent_cases(data):
    """(group, name, Input, error of an unknown z) per DiLiGenT object: MADE in mm."""
    for case in resolve_cases("diligent", data)[1]:
        inp, gt = case.load()
        yield "diligent", case.name, inp, lambda system, z, inp=inp, gt=gt: unknown_made(
            inp, gt, system.to_image(z))


def synthetic_cases(n, res):
    """The same per development scene: relative error of the unknown."""
    for layout, kw in LAYOUTS.items():
        for i in range(n):
            sc = make_scene(VAL_SEED0 + 20_000 + i, res, **kw)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            gt = sc.unknown[inp.mask]
            yield layout, f"{layout}{i}", inp, lambda system, z, gt=gt: relative_error(z, gt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--synthetic", type=int, default=0, help="this many scenes per layout instead of DiLiGenT")
    ap.add_argument("--res", type=int, default=384)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--solvers", default="jacobi,amg")
    ap.add_argument("--device", default="cpu", help="where the network runs")
    ap.add_argument("--no-prior", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = model_weights.load_model(None, a.device)
    solvers = a.solvers.split(",")
    errors, seconds, per_case = {}, {}, {}
    cases = synthetic_cases(a.synthetic, a.res) if a.synthetic else diligent_cases(a.data)
    for group, name, inp, error in cases:
        system = NormalSystem(inp.normals, inp.mask, inp.camera)
        lam = classic_lambda(inp.camera, inp.shape)
        z0, *_ = solvers_fnin.run_fnin(system, inp, model=model, lam=lam)
        for s in solvers:
            solver = "amg" if s == "amg-refresh" else s
            hierarchy = AMGCache() if s == "amg-refresh" else None
            integrate_bini(system, z0=z0, lam=lam, max_iter=1, tol=0.0, solver=solver)   # warm-up
            z, errs, secs = z0, [error(system, z0)], [0.0]
            for _ in range(a.rounds):
                t = time.perf_counter()
                z = integrate_bini(system, z0=z, lam=lam, z_prior=None if a.no_prior else z0,
                                   max_iter=1, tol=0.0, solver=solver, hierarchy=hierarchy).z
                cuda_synchronize()
                secs.append(secs[-1] + time.perf_counter() - t)
                errs.append(error(system, z))
            errors.setdefault(group, {}).setdefault(s, []).append(errs)
            seconds.setdefault(group, {}).setdefault(s, []).append(secs)
            per_case.setdefault(s, {})[name] = errs
            print(name, s, np.round(errs, 4).tolist(), flush=True)
    out = {}
    for group in errors:
        for s in solvers:
            r = out.setdefault(group, {})[s] = {
                "error": np.mean(errors[group][s], axis=0).tolist(),           # mean per round
                "seconds": np.sum(seconds[group][s], axis=0).tolist()}         # total, cumulative
            print(group, s, "mean error per round", np.round(r["error"], 4).tolist(),
                  "cumulative s", np.round(r["seconds"], 2).tolist())
    if a.json:
        json.dump({"args": vars(a), "torch": torch.__version__,
                   "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
                   "results": out, "per_case": per_case}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
