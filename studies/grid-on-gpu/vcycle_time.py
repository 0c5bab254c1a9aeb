"""Milliseconds per V-cycle and per stencil product on a camera-size grid, by implementation.

A synthetic 5-point stencil on an ``--size`` grid (two discs of active pixels covering
about a quarter of it, random couplings, as BiNI's weights make them) and one right-hand
side; each implementation's V-cycle and product timed after a warm-up, with device events
on CUDA (median of ``--repeat``):

- ``before``: the package at another checkout (``--before DIR``, e.g. ``git archive`` of
  the commit before the fused passes), loaded from its own files;
- ``torch``: this checkout's passes in torch (``Stencil(fused=False)``);
- ``fused``: this checkout's single-pass kernels (:mod:`fnin_cli.solvers.grid_kernels`;
  CUDA with Triton only), launched one by one;
- ``graph``: the same, the cycle recorded once as a CUDA graph and replayed (the default
  on CUDA).

    python studies/grid-on-gpu/vcycle_time.py [--size 6000x4000] [--device cuda] [--before DIR] [--repeat 10]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from fnin_cli.solvers import grid as grid_now
from fnin_cli.solvers import grid_kernels


def load_before(tree: Path):
    """The grid module of another checkout, as a module of its own (its relative imports
    resolve to this checkout's package, which the grid module only uses for types)."""
    spec = importlib.util.spec_from_file_location("fnin_cli.solvers._grid_before", tree / "fnin_cli/solvers/grid.py")
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "fnin_cli.solvers"
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def synthetic(h: int, w: int, device: str, seed: int = 0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    rr, cc = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij")
    r0 = 0.3 * min(h, w)
    act = (((rr - 0.5 * h) ** 2 + (cc - 0.3 * w) ** 2 < r0 ** 2)
           | ((rr - 0.5 * h) ** 2 + (cc - 0.72 * w) ** 2 < (0.9 * r0) ** 2)).to(torch.float64)
    eh = torch.zeros_like(act)
    eh[:, :-1] = act[:, :-1] * act[:, 1:]
    ev = torch.zeros_like(act)
    ev[:-1] = act[:-1] * act[1:]
    ch = torch.rand(h, w, generator=g, dtype=torch.float64) * eh
    cv = torch.rand(h, w, generator=g, dtype=torch.float64) * ev
    diag = 1e-3 * act + ch + cv
    diag[:, 1:] += ch[:, :-1]
    diag[1:] += cv[:-1]
    b = torch.randn(h, w, generator=g, dtype=torch.float64) * act
    return [t.to(device) for t in (diag, ch, cv, act, b)], int(act.sum())


def timed(fn, device: str, repeat: int) -> float:
    fn()
    out = []
    for _ in range(repeat):
        if device.startswith("cuda"):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            out.append(start.elapsed_time(end))
        else:
            t = time.perf_counter()
            fn()
            out.append(1e3 * (time.perf_counter() - t))
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="6000x4000", help="WxH")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--before", default=None, help="another checkout's tree")
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(1)
    w, h = (int(v) for v in a.size.lower().split("x"))
    (diag, ch, cv, act, b), active = synthetic(h, w, a.device)
    impls = {}
    if a.before:
        before = load_before(Path(a.before))
        impls["before"] = before.Stencil(diag, ch, cv, act)
    impls["torch"] = grid_now.Stencil(diag, ch, cv, act, fused=False)
    if grid_kernels.available(diag):
        impls["fused"] = grid_now.Stencil(diag, ch, cv, act, fused=True)
        impls["graph"] = impls["fused"]
    ref = None
    for name, A in impls.items():
        mg = before.Multigrid(A) if name == "before" else grid_now.Multigrid(A, graph=name == "graph")
        v = mg.vcycle(b).clone()
        ref = v if ref is None else ref
        row = {"impl": name, "size": a.size, "device": a.device, "active": active, "levels": len(mg.levels),
               "vcycle_ms": round(timed(lambda: mg.vcycle(b), a.device, a.repeat), 3),
               "matvec_ms": round(timed(lambda: A @ b, a.device, a.repeat), 3),
               "rel_diff": float((v - ref).abs().max() / ref.abs().max())}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
