"""Which weights would make the one-shot right on real-mesh scenes: one Stage II solve
(the shipped network's z_R as prior and start, as ``fnin --refine 0``) with

- ``edge``: the shipped edge net's weights (the one-shot itself);
- ``true``: BiNI's weights of the true unknown (the edge net's cross-entropy target);
- ``teacher``: the weights BiNI converges to on the scene's normals
  (``train.feed.teacher_weights``, the ``edge_target: "bini"`` target);

beside ``bini`` and the default, on scenes rendered from the validation meshes at
development seeds (VAL_SEED0 + 1,200,000 on; a diagnosis for the next training target,
it chooses nothing)::

    python studies/context-edge-net/weight_oracle_meshes.py [--scenes 16] [--size 384] [--out studies/context-edge-net/results/weight_oracle_meshes.json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from fnin_cli.config import DEFAULT
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, make_mesh_scene
from fnin_cli.model.inference import network_outputs
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input, classic_lambda, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import bini_layout, bini_weights
from fnin_cli.solvers.stage2 import model_weights, stage2
from fnin_cli.solvers.system import NormalSystem
from fnin_cli.train.config import VAL_SEED0
from fnin_cli.train.feed import teacher_weights

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_error, validation_meshes  # noqa: E402

SEED0 = VAL_SEED0 + 1_200_000


def one_solve(system, z_r, lam, weights) -> np.ndarray:
    """The one-shot's Stage II with the given weights; the unknown as an image."""
    z, _ = stage2(system, z_r, weights, lam, "amg", DEFAULT.one_shot.solve_rtol)
    return system.to_image(z)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=16)
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("--out", default="studies/context-edge-net/results/weight_oracle_meshes.json")
    a = ap.parse_args()
    torch.set_num_threads(1)
    meshes = validation_meshes(a.meshes)
    model = load_model(None, "cpu")
    rec = {k: [] for k in ("edge", "true", "teacher", "bini", "default")}
    with limit_threads(1):
        for i in range(a.scenes):
            sc = make_mesh_scene(SEED0 + i, meshes, a.size)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            persp = sc.K is not None
            system = NormalSystem(inp.normals, inp.mask, inp.camera)
            z_img, om_img, p_img = network_outputs(model, inp, torch.device("cpu"), DEFAULT.one_shot.network_side)
            z_r = z_img[inp.mask]
            lam = classic_lambda(inp.camera, inp.shape)
            unknown = sc.unknown[inp.mask]
            teach = teacher_weights(sc)
            weights = {"edge": model_weights(system, p_img, om_img),
                       "true": bini_weights(system, unknown, 2.0),
                       "teacher": bini_layout(teach[0][inp.mask], teach[1][inp.mask])}
            for k, w in weights.items():
                rec[k].append(object_error(one_solve(system, z_r, lam, w), sc, persp))
            rec["bini"].append(object_error(integrate(inp, "bini").z, sc, persp))
            rec["default"].append(object_error(integrate(inp).z, sc, persp))
            print(i, {k: round(v[-1], 4) for k, v in rec.items()}, flush=True)
    summary = {k: float(np.mean(v)) for k, v in rec.items()}
    with open(a.out, "w") as fh:
        json.dump({"seed0": SEED0, "size": a.size, "per_scene": rec, "summary": summary}, fh, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
