"""Over-relaxed and other accelerated rounds after FNIN: a development look
(docs/decisions.md#refine-relax; not a choice).

On scenes rendered from the *training* meshes (384 px), from the one-shot: BiNI rounds
(k = 2, AMG to 1e-3, the coarse operators refreshed every third round) with each step
over-relaxed, z <- z + beta (solve - z), or Anderson-mixed (depth ``anderson``); a step
that raises BiNI's energy is replaced by the plain one. ``ks`` gives BiNI's k for the
first rounds (softer starts). Prints the mean per-object error against bini's after each
of the CHECK rounds::

    python studies/refine-relax/rounds_dev.py 777000 12 '{"plain": {}, "b15": {"beta": 1.5}, "and2": {"anderson": 2}}' '[4, 8, 12, 16]'
    python studies/refine-relax/rounds_dev.py 777000 12 '{"plain": {}, "soft1": {"ks": [1.0]}}' '[4, 8, 12]'
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch

from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, is_validation, load_meshes, make_mesh_scene
from fnin_cli.pipeline import build_input, classic_lambda, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import _weights_and_energy
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.system import NormalSystem

from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_error  # noqa: E402


def rounds(system, z0, lam, beta=1.0, anderson=0, ks=(), check=(4, 8)) -> dict:
    """The iterate after each round in ``check`` ({round: z})."""
    z, cache, out = z0.copy(), AMGCache(refresh_every=3), {}
    w, energy = _weights_and_energy(system, z, ks[0] if ks else 2.0)
    hist_g, hist_x = [], []
    for it in range(1, max(check) + 1):
        s, _ = system.solve(w, lam=lam, z_prior=z0, x0=z, method="amg", rtol=1e-3, hierarchy=cache)
        g = s - z
        step = z + beta * g
        if anderson:
            hist_g, hist_x = (hist_g + [g])[-(anderson + 1):], (hist_x + [z])[-(anderson + 1):]
            if len(hist_g) > 1:
                dg = np.stack([b - a for a, b in zip(hist_g, hist_g[1:])], 1)
                dx = np.stack([b - a for a, b in zip(hist_x, hist_x[1:])], 1)
                gamma = np.linalg.lstsq(dg, g, rcond=None)[0]
                step = z + g - (dx + dg) @ gamma
        k = ks[it] if it < len(ks) else 2.0
        w_new, e_new = _weights_and_energy(system, step, k)
        if e_new > energy and (beta != 1.0 or anderson):       # the plain step instead
            step = s
            w_new, e_new = _weights_and_energy(system, step, k)
            hist_g, hist_x = [], []
        z, w, energy = step, w_new, e_new
        if it in check:
            out[it] = z.copy()
    return out


def main():
    seed0, n_scenes = int(sys.argv[1]), int(sys.argv[2])
    candidates = json.loads(sys.argv[3])           # name -> {"beta": .., "anderson": m, "ks": [...]}
    check = json.loads(sys.argv[4]) if len(sys.argv) > 4 else [4, 8, 12, 16]
    torch.set_num_threads(1)
    meshes = {k: v for k, v in load_meshes(DEFAULT_MESH_DIR).items() if not is_validation(k)}
    res = {name: {c: [] for c in check} for name in candidates}
    bini = []
    with limit_threads(1):
        for i in range(n_scenes):
            sc = make_mesh_scene(seed0 + i, meshes, 384)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            persp = sc.K is not None
            system = NormalSystem(inp.normals, inp.mask, inp.camera)
            lam = classic_lambda(inp.camera, inp.shape)
            z0 = integrate(inp, refine=0).z[inp.mask]
            for name, prm in candidates.items():
                outs = rounds(system, z0, lam, check=check, **prm)
                for c in check:
                    res[name][c].append(object_error(system.to_image(outs[c]), sc, persp))
            bini.append(object_error(integrate(inp, "bini").z, sc, persp))
            print(i, {n: [round(r[c][-1], 3) for c in check] for n, r in res.items()}, "bini", round(bini[-1], 3),
                  flush=True)
    ref = np.mean(bini)
    for name, r in res.items():
        print(f"{name:10s} " + "  ".join(f"{c}: {np.mean(r[c]) / ref:.3f}x" for c in check))


if __name__ == "__main__":
    main()
