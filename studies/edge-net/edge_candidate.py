"""An edge-net candidate against the shipped weights on fresh real-mesh and procedural
scenes, by the rule of studies/cpu-mesh-edge-net/README.md (the bounds of
``_lib.passes``); each study names its fresh seeds (offsets from VAL_SEED0)::

    python studies/edge-net/edge_candidate.py CANDIDATE.safetensors [--scenes 24] [--size 384] [--out PATH]
        [--mesh-offset 900000] [--proc-offset 90000]
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from fnin_cli.config import DEFAULT
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR
from fnin_cli.model import DEFAULT_WEIGHTS
from fnin_cli.model.weights import load_model
from fnin_cli.train.config import VAL_SEED0

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import evaluate, passes, validation_meshes  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("candidate")
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=24)
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("--out", default="studies/cpu-mesh-edge-net/results/edge_candidate_cpu_meshes.json")
    ap.add_argument("--mesh-offset", type=int, default=900_000, help="first validation-mesh scene: VAL_SEED0 + this")
    ap.add_argument("--proc-offset", type=int, default=90_000, help="first procedural scene: VAL_SEED0 + this")
    a = ap.parse_args()
    torch.set_num_threads(1)
    meshes = validation_meshes(a.meshes)
    configs = {"shipped": (DEFAULT, load_model(DEFAULT_WEIGHTS, "cpu")),
               "candidate": (DEFAULT, load_model(a.candidate, "cpu"))}
    rec = evaluate(configs, meshes, a.scenes, a.size, VAL_SEED0 + a.mesh_offset, VAL_SEED0 + a.proc_offset)
    summary = {n: {k: float(np.mean(v)) for k, v in r.items()} for n, r in rec.items()}
    ships = passes(summary["candidate"], summary["shipped"])
    with open(a.out, "w") as fh:
        json.dump({"candidate": a.candidate, "seeds": [VAL_SEED0 + a.mesh_offset, VAL_SEED0 + a.proc_offset],
                   "per_scene": rec, "summary": summary, "ships": ships}, fh, indent=1)
    print(json.dumps(summary, indent=1), "ships:", ships)


if __name__ == "__main__":
    main()
