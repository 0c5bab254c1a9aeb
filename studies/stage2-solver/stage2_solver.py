"""Stage II's linear solver on DiLiGenT: time (AMG setup + PCG, best of 3, 1 thread) and
MADE against the exact (sparse LU) solve of the same system, per tolerance.

The systems are the shipped model's fnin ones (edge-net weights, prior z_R, warm start
z_R). Solvers: ``pyamg-sa`` (pyamg.smoothed_aggregation_solver with the options Stage II
used before its own hierarchy), ``pyamg-sa-csr`` (the same with every level turned into
CSR after setup), ``amg`` (wls.sa_hierarchy, what Stage II uses: symmetric Gauss-Seidel
sweeps before and after the coarse correction) and ``amg-fb`` (the same with one forward
sweep before and one backward sweep after).
This measures solver fidelity and cost, not the method's accuracy: the rule for
fnin.SOLVE_RTOL is the loosest tolerance whose mean MADE is within 0.1% of the exact one
(first among 1e-3 / 3e-4 / 1e-4; with the 1200-step edge net none of those was, and the
same criterion was carried on to 1e-5 / 1e-6).

    python studies/stage2-solver/stage2_solver.py --data ../shared/data/diligent --json studies/stage2-solver/results/stage2_solver.json
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
from scipy.sparse.linalg import spsolve

from fnin_cli.model import inference
from fnin_cli.solvers import linear
from fnin_cli.solvers import stage2
from fnin_cli.solvers.system import NormalSystem
from fnin_cli.model import weights as model_weights

from fnin_cli.bench.cases import resolve_cases, unknown_made
from fnin_cli.pipeline import classic_lambda
from fnin_cli.resources import limit_threads

PYAMG_SA = dict(symmetry="symmetric", max_coarse=100, coarse_solver="splu",
                strength=("symmetric", {"theta": 0.05}), improve_candidates=None)
RTOLS = "1e-3,3e-4,1e-4,1e-5,1e-6"


def _pyamg(A, csr: bool):
    import pyamg

    state = np.random.get_state()
    np.random.seed(0)
    try:
        ml = pyamg.smoothed_aggregation_solver(A, **PYAMG_SA)
    finally:
        np.random.set_state(state)
    if csr:
        for level in ml.levels:
            for name in ("A", "P", "R"):
                if hasattr(level, name):
                    setattr(level, name, getattr(level, name).tocsr())
    return ml.aspreconditioner(cycle="V").matvec


SOLVERS = {
    "pyamg-sa": lambda A: _pyamg(A, False),
    "pyamg-sa-csr": lambda A: _pyamg(A, True),
    "amg": linear.amg_preconditioner,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rtols", default=RTOLS)
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    a = ap.parse_args()
    limit_threads(1).apply()
    torch.set_num_threads(1)
    model = model_weights.load_model(device="cpu")
    _, cases = resolve_cases("diligent", a.data)
    out = {"cases": {}, "mean": {}}
    for case in cases:
        inp, gt = case.load()
        system = NormalSystem(inp.normals, inp.mask, inp.camera)
        lam = classic_lambda(inp.camera, inp.shape)
        z_img, _, p_img = inference.network_outputs(model, inp, torch.device("cpu"))
        zr = z_img[inp.mask]
        w = stage2.edge_weights(system, p_img)
        A = system.matrix(w, lam)
        b_data = system.rhs(w, lam, None)
        b = b_data + lam * zr
        ref = float(np.sqrt(linear._dot(b_data, b_data)))

        def made(z):
            return unknown_made(inp, gt, system.to_image(z))

        rec = {"pixels": system.n, "exact_made": made(spsolve(A.tocsc(), b))}
        for name in a.solvers.split(","):
            build = SOLVERS[name]
            for rtol in (float(r) for r in a.rtols.split(",")):
                best = None
                for _ in range(a.repeats):
                    t0 = time.perf_counter()
                    M = build(A)
                    t1 = time.perf_counter()
                    z, it, _ = linear.pcg(A, b, zr, M, rtol, 5000, ref)
                    t2 = time.perf_counter()
                    if best is None or t2 - t0 < best[0]:
                        best = (t2 - t0, t1 - t0, t2 - t1, it)
                rec[f"{name}@{rtol:g}"] = {"seconds": best[0], "setup_s": best[1], "pcg_s": best[2],
                                            "iterations": best[3], "made": made(z)}
        out["cases"][case.name] = rec
        print(case.name, json.dumps({k: (round(v["seconds"], 3), v["iterations"], round(v["made"], 4))
                                      if isinstance(v, dict) else v for k, v in rec.items()}), flush=True)
    keys = [k for k in next(iter(out["cases"].values())) if "@" in k]
    exact = float(np.mean([c["exact_made"] for c in out["cases"].values()]))
    out["mean"]["exact_made"] = exact
    for k in keys:
        m = float(np.mean([c[k]["made"] for c in out["cases"].values()]))
        out["mean"][k] = {"seconds_total": float(sum(c[k]["seconds"] for c in out["cases"].values())),
                          "iterations_total": int(sum(c[k]["iterations"] for c in out["cases"].values())),
                          "made": m, "off_exact_pct": 100.0 * abs(m - exact) / exact}
        print(k, json.dumps(out["mean"][k]))
    if a.json:
        json.dump(out, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
