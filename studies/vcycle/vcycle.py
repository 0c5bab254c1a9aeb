"""The project's V-cycle against pyamg's on the same levels (docs/decisions.md#vcycle).

Builds the AMG hierarchy of one DiLiGenT object's uniform-weight system, wraps its levels
in a pyamg ``MultilevelSolver`` (Gauss-Seidel as ``linear.VCYCLE_SWEEPS``, splu at the bottom), checks
that both V-cycles return the same vector and times one application of each::

    python studies/vcycle/vcycle.py [--object harvest] [--repeat 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from pyamg.multilevel import MultilevelSolver
from pyamg.relaxation.smoothing import change_smoothers

from fnin_cli.bench.cases import diligent_dir
from fnin_cli.pipeline import classic_lambda, load_input
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.linear import VCYCLE_SWEEPS, sa_hierarchy
from fnin_cli.solvers.system import NormalSystem


def pyamg_vcycle(ml):
    """pyamg's V-cycle on the levels of the project's hierarchy ``ml`` (the reference
    ``tests/test_linear.py`` compares against)."""
    levels = []
    for own in ml.levels:
        level = MultilevelSolver.Level()
        level.A = own.A
        if own.P is not None:
            level.P, level.R = own.P, own.R
        levels.append(level)
    ref = MultilevelSolver(levels, coarse_solver="splu")
    if VCYCLE_SWEEPS == "symmetric":
        pre = post = ("gauss_seidel", {"sweep": "symmetric"})
    else:   # one-each
        pre, post = ("gauss_seidel", {"sweep": "forward"}), ("gauss_seidel", {"sweep": "backward"})
    change_smoothers(ref, pre, post)
    return ref.aspreconditioner(cycle="V").matvec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--object", default="harvest")
    ap.add_argument("--data", default=None)
    ap.add_argument("--repeat", type=int, default=100)
    a = ap.parse_args()
    inp = load_input(f"{diligent_dir(a.data)}/{a.object}")
    with limit_threads(1):
        system = NormalSystem(inp.normals, inp.mask, inp.camera)
        ml = sa_hierarchy(system.matrix(None, classic_lambda(inp.camera, inp.shape)))
        r = np.random.default_rng(0).random(system.n)
        ref = pyamg_vcycle(ml)
        print("same vector:", bool(np.array_equal(ml.vcycle(r), ref(r))))
        for name, M in (("pyamg", ref), ("own", ml.vcycle)):
            best = np.inf
            for _ in range(3):
                t = time.perf_counter()
                for _ in range(a.repeat):
                    M(r)
                best = min(best, (time.perf_counter() - t) / a.repeat)
            print(f"{name:6s} {best * 1e3:.2f} ms per V-cycle ({system.n} unknowns, {len(ml.levels)} levels)")


if __name__ == "__main__":
    main()
