"""relative-prior: the shipped fuse of a relative depth prior against candidates (README.md).

Each case runs the default once (method and rounds, the product's); every fuse is then one
more solve from the same rounds' result, scored as `fnin bench` scores (median scale or
offset, objects aligned one by one on mesh scenes).

    PYTHONPATH=$PWD python studies/relative-prior/run.py --sets meshes,real-like,diligent \
        --fuses shipped,split,... --out studies/relative-prior/results/NAME.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from fnin_cli.bench.cases import align_and_errors, align_objects, resolve_cases
from fnin_cli.bench.priors import case_seed, make_prior
from fnin_cli.pipeline import run_method
from fnin_cli.prior import fit_relative
from fnin_cli.solvers.pieces import CUT_WEIGHT, REPORT_MIN_PIXELS, cut_pieces
from fnin_cli.solvers.rounds import run_rounds
from fnin_cli.solvers.system import DataTerm

sys.path.insert(0, str(Path(__file__).parent))      # this folder's relative.py
from relative import cut_moved  # noqa: E402  (candidate 1's cuts: moved pieces from other large ones)

SETS = {"diligent": ("diligent", dict(data="/work/shared/data/diligent")),
        "meshes": ("meshes", dict(meshes="/work/shared/data/meshes")),
        "real-like": ("meshes", dict(meshes="/work/shared/data/meshes", noise="real-like")),
        # a fresh draw of the real-like errors (candidate 4: chosen after the suite was seen)
        "real-like-44044": ("meshes", dict(meshes="/work/shared/data/meshes", noise="real-like", noise_seed=44044))}


# ------------------------------------------------------------------ the candidates' pieces

def mutual_pieces(system, weights):
    """Pieces of cut_pieces(mutual=True); pieces under REPORT_MIN_PIXELS get -1."""
    labels, sizes, _ = cut_pieces(system, weights, CUT_WEIGHT, mutual=True)
    return np.where(sizes[labels] >= REPORT_MIN_PIXELS, labels, -1)


def fitted_term(run, z, labels):
    system, camera = run.system, run.system.camera
    zimg = system.to_image(z)
    main = system.to_image((labels == 0).astype(float), fill=0.0) > 0
    fitted, _ = fit_relative(run.prior, np.exp(zimg) if camera.perspective else zimg, main, camera.perspective)
    return fitted, fitted.relative_term(system.mask, camera)


def solve(run, z, weights, term):
    z2, _ = run.system.solve(weights, DataTerm(run.lam, z).plus(term), x0=z, method="amg",
                             rtol=run.config.one_shot.solve_rtol)
    return z2


# ------------------------------------------------------------------ the fuses

def fuse_shipped(run, z, weights):
    """The fuse shipped before candidate 5 (7c09e02): fitted on the main piece of the plain
    cuts, one solve with the rounds' weights and the fitted prior's term."""
    system, camera = run.system, run.system.camera
    zimg = system.to_image(z)
    main = system.to_image((cut_pieces(system, weights)[0] == 0).astype(float), fill=0.0) > 0
    fitted, _ = fit_relative(run.prior, np.exp(zimg) if camera.perspective else zimg, main, camera.perspective)
    return solve(run, z, weights, fitted.relative_term(system.mask, camera))


def fuse_split(run, z, weights):
    """Candidate 1: every piece of the mutual cuts cut loose, the prior places each."""
    labels = mutual_pieces(run.system, weights)
    _, term = fitted_term(run, z, labels)
    n = int(labels.max()) + 1
    return solve(run, z, cut_moved(run.system, weights, labels, np.arange(n) > 0), term)


def fuse_deblur(run, z, weights):
    """Candidates 3-6: relative.fuse_relative, this folder's (README.md; the package's
    fnin_cli/relative.py at f3c491c)."""
    from relative import fuse_relative as fuse

    def solve_with(w, term, x0):
        return run.system.solve(w, term, x0=x0, method="amg", rtol=run.config.one_shot.solve_rtol)

    return fuse(run.system, z, weights, run.prior, run.lam, solve_with)[0]


FUSES = {"shipped": fuse_shipped, "split": fuse_split, "deblur": fuse_deblur}


# ------------------------------------------------------------------ running

def score(case, z_img, inp, gt):
    depth = np.exp(z_img) if inp.camera.perspective else z_img
    object_id, names = case.object_ids()
    if object_id is not None:
        return align_objects(depth, gt, inp.mask, object_id, inp.camera.perspective, names)["made"]
    return align_and_errors(depth, gt, inp.mask, inp.camera.perspective)["made"]


def run_case(case, fuses, seed=0):
    inp, gt = case.load()
    prior = make_prior("relative", gt, inp, case_seed(seed, case.name)).on_mask(inp.mask)
    run = run_method(inp, prior=prior)
    rounds = run_rounds(run.system, run.out.z, run.out.edge_p, run.args.term(run.out.z), run.config, run.rounds,
                        run.out.backend, run.hierarchy)
    out = {"noprior": score(case, run.system.to_image(rounds.z), inp, gt)}
    for name in fuses:
        t = time.perf_counter()
        z = FUSES[name](run, rounds.z, rounds.weights)
        out[name] = score(case, run.system.to_image(z), inp, gt)
        out[name + "_s"] = time.perf_counter() - t
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="meshes,real-like,diligent")
    ap.add_argument("--fuses", default="shipped,split")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--out")
    args = ap.parse_args()
    fuses = args.fuses.split(",")
    only = set(filter(None, args.cases.split(",")))
    out = {}
    with threadpool_limits(1):
        import torch

        torch.set_num_threads(1)
        for s in args.sets.split(","):
            source, kw = SETS[s]
            _, cases = resolve_cases(source, **kw)
            rec = {}
            for case in cases:
                if only and case.name not in only:
                    continue
                rec[case.name] = run_case(case, fuses)
                print(s, case.name, {k: round(v, 4) for k, v in rec[case.name].items() if not k.endswith("_s")},
                      flush=True)
            keys = ["noprior"] + fuses
            out[s] = {"cases": rec, "mean": {k: float(np.mean([r[k] for r in rec.values()])) for k in keys}}
            print(s, {k: round(v, 4) for k, v in out[s]["mean"].items()}, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
