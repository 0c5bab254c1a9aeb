"""BiNI's sharpness k in the rounds that carry the edge-net prior (``config.RoundsConfig.k``)
against BiNI's own k = 2, by the rule of docs/decisions.md#rounds-k-with-prior, written
before the run.

On fresh scenes never used for training or an earlier choice (48 validation-mesh scenes
from ``VAL_SEED0 + 2_300_000``, 48 procedural ones from ``VAL_SEED0 + 230_000``, 384 px),
the default with each k, the configurations in a rotated order per scene, one thread
(``_lib.evaluate_default``)::

    python studies/rounds-k/rounds_k_prior.py [--scenes 48] [--out studies/rounds-k/results/rounds_k_prior.json]

``--dev SEED`` runs the same comparison on scenes from the *training* meshes and
procedural scenes from SEED (a development look; no choice).
"""

from __future__ import annotations

import torch

from fnin_cli.train.config import VAL_SEED0

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import choose_default, evaluate_default, parse_args, report, scene_sets, summarise, variant  # noqa: E402

CANDIDATES = (2.5, 3.0)
MESH_SEED0 = VAL_SEED0 + 2_300_000
PROC_SEED0 = VAL_SEED0 + 230_000


def apply_rule(summary: dict):
    """The adopted k: the lowest mesh error among the candidates whose default is <= 0.98x
    k = 2's on the mesh scenes, no worse on the procedural ones, and no more than 1.05x as
    slow on each (None: none passes, the rounds keep k = 2)."""
    return choose_default(summary, CANDIDATES, mesh_bound=0.98)


def main():
    a = parse_args(__doc__.splitlines()[0], "studies/rounds-k/results/rounds_k_prior.json")
    torch.set_num_threads(1)
    configs = {"off": variant(rounds={"k": None}), **{str(c): variant(rounds={"k": c}) for c in CANDIDATES}}
    seeds, meshes = scene_sets(a, MESH_SEED0, PROC_SEED0)
    rec = evaluate_default(configs, meshes, a.scenes, a.size, *seeds)
    report(a, seeds, rec, summarise(rec, "default_meshes"), apply_rule)


if __name__ == "__main__":
    main()
