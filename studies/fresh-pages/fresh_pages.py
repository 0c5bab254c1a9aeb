"""The one-shot with fewer temporaries against today's (docs/decisions.md#fresh-pages).

On the views of ``fnin bench meshes``, the one-shot (``refine=0``) runs with today's
edge-net features and spectral channel mix and with the candidate's, interleaved per
view, memory released before each run as ``fnin bench`` does, best of ``--repeat`` on
one thread; reports seconds, page faults and whether the depth maps are identical::

    python studies/fresh-pages/fresh_pages.py [--meshes DIR] [--repeat 3] [--out studies/fresh-pages/results/fresh_pages.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import torch

from fnin_cli.bench.cases import resolve_cases
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR
from fnin_cli.model import layers
from fnin_cli.model.geometry import add_normals, square_contrast, one_sided_differences, view_cosine
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import integrate
from fnin_cli.resources import limit_threads, release_memory

CANDIDATE = (layers.edge_features, layers.SpectralConv2d.forward)


def features_today(z, lv):
    m = lv.mask
    d, has = one_sided_differences(z, lv)
    r = add_normals(d, has, lv)
    cmp = torch.tanh(square_contrast(d))
    return torch.cat([layers._asinh(r), layers._asinh(20.0 * r), cmp, lv.normals, view_cosine(lv) * m, m], dim=1)


def spectral_today(self, x):
    b, c, h, w = x.shape
    mh, mw = min(self.modes, h // 2), min(self.modes, w // 2 + 1)
    ch, sh, cw, sw, cinv = self._transform(h, w, mh, mw, x.device)
    xr, xi = x @ cw.T, -(x @ sw.T)
    yr, yi = ch @ xr + sh @ xi, ch @ xi - sh @ xr
    if b == 1 and not torch.is_grad_enabled():
        Wr, Wi = self._split_weight(mh, mw)
        a, c = yr.unsqueeze(2), yi.unsqueeze(2)
        Yr, Yi = (a * Wr - c * Wi).sum(1), (a * Wi + c * Wr).sum(1)
    else:
        Y = torch.einsum("bixy,ioxy->boxy", torch.complex(yr, yi), self._truncated_weight(mh, mw))
        Yr, Yi = Y.real, Y.imag
    Yr, Yi = Yr * cinv, Yi * cinv
    zr, zi = ch.T @ Yr - sh.T @ Yi, ch.T @ Yi + sh.T @ Yr
    return zr @ cw - zi @ sw


VARIANTS = {"today": (features_today, spectral_today), "candidate": CANDIDATE}


def use(variant):
    layers.edge_features, layers.SpectralConv2d.forward = VARIANTS[variant]


def run(meshes, repeat: int) -> dict:
    _, cases = resolve_cases("meshes", meshes=meshes)
    model = load_model(device="cpu")
    rec = {}
    try:
        with limit_threads(1):
            for case in cases:
                inp, _ = case.load()
                for name in VARIANTS:                    # warm-up
                    use(name)
                    integrate(inp, refine=0, model=model)
                best, depth = {}, {}
                for _ in range(repeat):
                    for name in VARIANTS:
                        use(name)
                        release_memory()
                        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                        t0 = time.perf_counter()
                        res = integrate(inp, refine=0, model=model)
                        dt = time.perf_counter() - t0
                        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
                        if dt < best.get(name, (np.inf,))[0]:
                            best[name] = (dt, faults)
                        depth[name] = res.depth
                same = bool(np.array_equal(depth["today"], depth["candidate"], equal_nan=True))
                rec[case.name] = {n: {"seconds": best[n][0], "faults": best[n][1]} for n in VARIANTS}
                rec[case.name]["identical"] = same
                print(f"{case.name:36s} " + "  ".join(f"{n} {best[n][0]:.3f} s {best[n][1]} faults" for n in VARIANTS)
                      + f"  identical {same}", flush=True)
    finally:
        use("candidate")
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="studies/fresh-pages/results/fresh_pages.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    rec = run(a.meshes, a.repeat)
    secs = {n: float(sum(r[n]["seconds"] for r in rec.values())) for n in VARIANTS}
    same = all(r["identical"] for r in rec.values())
    verdict = {"identical": same, "seconds": secs, "adopted": bool(same and secs["candidate"] < secs["today"])}
    print(json.dumps(verdict))
    with open(a.out, "w") as fh:
        json.dump({"views": rec, "rule": verdict, "repeat": a.repeat}, fh, indent=1)


if __name__ == "__main__":
    main()
