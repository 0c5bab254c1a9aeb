"""The edge net's prior in the rounds after FNIN (``config.RoundsConfig.edge_prior``) against
BiNI's own weights, by the rule of docs/decisions.md#rounds-edge-prior, written before
the run.

On fresh scenes never used for training or an earlier choice (48 validation-mesh scenes
from ``VAL_SEED0 + 2_000_000``, 48 procedural ones from ``VAL_SEED0 + 200_000``, 384 px),
the default (``pipeline.integrate`` with no flags) with each candidate scale and with
today's rounds, the configurations in a rotated order per scene (none always pays the
scene's first run), one thread: per-object error on the mesh scenes, ``relative_error``
on the procedural ones, seconds of each run::

    python studies/rounds-edge-prior/rounds_edge_prior.py [--scenes 48] [--out studies/rounds-edge-prior/results/rounds_edge_prior.json]

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

CANDIDATES = (0.3, 0.5, 0.7)
MESH_SEED0 = VAL_SEED0 + 2_000_000
PROC_SEED0 = VAL_SEED0 + 200_000


def apply_rule(summary: dict):
    """The adopted value: the lowest mesh error among the candidates that pass
    (``_lib.passes_default``; None: none passes, the rounds keep BiNI's own weights)."""
    return choose_default(summary, CANDIDATES)


def main():
    a = parse_args(__doc__.splitlines()[0], "studies/rounds-edge-prior/results/rounds_edge_prior.json")
    torch.set_num_threads(1)
    configs = {"off": variant(rounds={"edge_prior": None}),
               **{str(c): variant(rounds={"edge_prior": c}) for c in CANDIDATES}}
    seeds, meshes = scene_sets(a, MESH_SEED0, PROC_SEED0)
    rec = evaluate_default(configs, meshes, a.scenes, a.size, *seeds)
    report(a, seeds, rec, summarise(rec, "default_meshes"), apply_rule)


if __name__ == "__main__":
    main()
