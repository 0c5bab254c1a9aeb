"""The grid V-cycle's two constants: PCG iterations of Stage II on the camera-size view.

Renders (or reads from the render cache) the 2048x1536 view of `fnin bench meshes --size`,
takes every ``--stride``-th pixel (a smaller view, same scene), runs FNIN's network and
Stage II's weights once, then solves Stage II on the grid (CPU) to 1e-3 with each
(coarse_scale, sweeps) pair given, each from the network's z_R: iterations and seconds.

    python studies/grid-on-gpu/sweep.py [--stride 4] [--pairs 1.0/1,1.5/1,1.5/2,1.8/1]
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from fnin_cli.bench.camera_views import camera_view_set
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR
from fnin_cli.model.inference import network_outputs
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input, classic_lambda
from fnin_cli.solvers.grid import GridSystem, Multigrid, pcg
from fnin_cli.solvers.stage2 import model_weights
from fnin_cli.solvers.system import NormalSystem
from fnin_cli.config import DEFAULT


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--stride", type=int, default=4)
    ap.add_argument("--pairs", default="1.0/1,1.5/1,1.5/2,1.8/1")
    a = ap.parse_args()
    torch.set_num_threads(1)
    _, sc, _ = camera_view_set(a.meshes, (2048, 1536))[0]
    s = a.stride
    K = sc.K.copy()
    K[:2] /= s
    inp = build_input(sc.normals[::s, ::s], sc.mask[::s, ::s], K=K)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    lam = classic_lambda(inp.camera, inp.shape, DEFAULT.solver.lam)
    z_img, om, p = network_outputs(load_model(device="cpu"), inp, torch.device("cpu"),
                                   DEFAULT.one_shot.network_side, edge_tile=DEFAULT.one_shot.edge_tile)
    weights = model_weights(system, p, om, DEFAULT.one_shot)
    grid = GridSystem(system, "cpu")
    w = grid.weights_images(weights)
    prior = grid.image(z_img[system.mask])
    A = grid.stencil(w, lam)
    b = grid.rhs(w)
    ref = float(torch.linalg.vector_norm(b))
    b = b + lam * prior * grid.active
    for pair in a.pairs.split(","):
        scale, sweeps = pair.split("/")
        t = time.perf_counter()
        mg = Multigrid(A, float(scale), int(sweeps))
        _, it, res = pcg(A, b, prior, mg.vcycle, 1e-3, 5000, ref)
        print(json.dumps({"pixels": system.n, "coarse_scale": float(scale), "sweeps": int(sweeps),
                          "iterations": it, "residual": res, "seconds": round(time.perf_counter() - t, 2)}))


if __name__ == "__main__":
    main()
