"""BiNI's sharpness k in the rounds that carry the edge-net prior (``pipeline.ROUNDS_K``)
against BiNI's own k = 2, by the rule of docs/decisions.md#rounds-k-with-prior, written
before the run.

On fresh scenes never used for training or an earlier choice (48 validation-mesh scenes
from ``VAL_SEED0 + 2_300_000``, 48 procedural ones from ``VAL_SEED0 + 230_000``, 384 px),
the default with each k, the configurations in a rotated order per scene, one thread
(``rounds_edge_prior.evaluate``)::

    python benchmarks/rounds_k_prior.py [--scenes 48] [--out benchmarks/results/rounds_k_prior.json]

``--dev SEED`` runs the same comparison on scenes from the *training* meshes and
procedural scenes from SEED (a development look; no choice).
"""

from __future__ import annotations

import torch

from candidate_rules import parse_args, report, scene_sets, summarise
from fnin_cli.train.config import VAL_SEED0
from rounds_edge_prior import evaluate

CANDIDATES = (2.5, 3.0)
MESH_SEED0 = VAL_SEED0 + 2_300_000
PROC_SEED0 = VAL_SEED0 + 230_000


def passes(candidate: dict, today: dict) -> bool:
    """The rule's bounds (means over the scenes): the default on the mesh scenes <= 0.98x
    today's, on the procedural ones no worse, seconds of each set <= 1.05x today's."""
    return (candidate["default_meshes"] <= 0.98 * today["default_meshes"]
            and candidate["default_procedural"] <= today["default_procedural"]
            and candidate["seconds_meshes"] <= 1.05 * today["seconds_meshes"]
            and candidate["seconds_procedural"] <= 1.05 * today["seconds_procedural"])


def apply_rule(summary: dict):
    """The adopted k: the lowest mesh error among the candidates that pass (None: none
    passes, the rounds keep k = 2)."""
    ok = [c for c in CANDIDATES if passes(summary[str(c)], summary["off"])]
    return min(ok, key=lambda c: summary[str(c)]["default_meshes"]) if ok else None


def main():
    a = parse_args(__doc__.splitlines()[0], "benchmarks/results/rounds_k_prior.json")
    torch.set_num_threads(1)
    names = ["off"] + [str(c) for c in CANDIDATES]
    seeds, meshes = scene_sets(a, MESH_SEED0, PROC_SEED0)
    rec = evaluate(names, meshes, a.scenes, a.size, *seeds, constant="ROUNDS_K")
    report(a, seeds, rec, summarise(rec, "default_meshes"), apply_rule)


if __name__ == "__main__":
    main()
