"""The edge weights' sharpness at inference, on real-mesh and procedural scenes
(docs/decisions.md#edge-sharpness).

For each candidate ``config.OneShotConfig.edge_sharpness`` (the first is today's), on fresh
scenes never used for training or an earlier choice: the one-shot (``refine=0``) and the
default on 24 scenes rendered from the validation meshes (per-object error of
``default_rounds.object_error``) and the one-shot on 24 procedural scenes (the synthetic
validation metric, ``data.synthetic.relative_error``), candidates interleaved per scene;
then the rule written down before the run::

    python studies/edge-sharpness/edge_sharpness.py [--scenes 24] [--size 384] [--out studies/edge-sharpness/results/edge_sharpness_meshes.json]
"""

from __future__ import annotations

import json

import numpy as np
import torch

from fnin_cli.train.config import VAL_SEED0

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import evaluate, parse_args, passes, validation_meshes, variant  # noqa: E402

CANDIDATES = (2.0, 3.0, 4.0)
MESH_SEED0 = VAL_SEED0 + 800_000
PROC_SEED0 = VAL_SEED0 + 80_000


def apply_rule(summary: dict) -> float:
    """The chosen sharpness: the lowest one-shot mesh error among the candidates that
    pass (:func:`passes`) against today's."""
    today = summary[str(CANDIDATES[0])]
    ok = [a for a in CANDIDATES[1:] if passes(summary[str(a)], today)]
    return min(ok, key=lambda a: summary[str(a)]["oneshot_meshes"]) if ok else CANDIDATES[0]


def main():
    a = parse_args(__doc__.splitlines()[0], "studies/edge-sharpness/results/edge_sharpness_meshes.json", scenes=24, dev=False)
    torch.set_num_threads(1)
    meshes = validation_meshes(a.meshes)
    rec = evaluate({str(c): (variant(one_shot={"edge_sharpness": c}), None) for c in CANDIDATES}, meshes, a.scenes, a.size, MESH_SEED0, PROC_SEED0)
    summary = {c: {k: float(np.mean(v)) for k, v in r.items()} for c, r in rec.items()}
    chosen = apply_rule(summary)
    with open(a.out, "w") as fh:
        json.dump({"per_scene": rec, "summary": summary, "chosen": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "chosen:", chosen)


if __name__ == "__main__":
    main()
