"""The sliver gate in Stage II (``config.OneShotConfig.sliver_gate``) against today's paired
weights, by the rule of docs/decisions.md#sliver-gate, written before the run.

On fresh scenes never used for training or an earlier choice (48 validation-mesh scenes
from ``VAL_SEED0 + 1_800_000``, 48 procedural ones from ``VAL_SEED0 + 180_000``, 384 px),
each candidate threshold and today's (off) interleaved per scene, one thread: the
one-shot and the default on the mesh scenes (per-object error), the one-shot on the
procedural ones, and the seconds of the three runs::

    python studies/sliver-gate/sliver_gate.py [--scenes 48] [--out studies/sliver-gate/results/sliver_gate.json]

``--dev SEED`` runs the same comparison on scenes from the *training* meshes and
procedural scenes from SEED (the development look before the rule; no choice).
"""

from __future__ import annotations

import torch

from fnin_cli.train.config import VAL_SEED0

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import evaluate, parse_args, report, scene_sets, summarise, variant  # noqa: E402

CANDIDATES = (0.2, 0.5)
MESH_SEED0 = VAL_SEED0 + 1_800_000
PROC_SEED0 = VAL_SEED0 + 180_000


def passes(candidate: dict, today: dict) -> bool:
    """The rule's bounds (means over the scenes): one-shot on meshes <= 0.98x today's,
    one-shot procedural and default on meshes no worse, seconds <= 1.03x."""
    return (candidate["oneshot_meshes"] <= 0.98 * today["oneshot_meshes"]
            and candidate["oneshot_procedural"] <= today["oneshot_procedural"]
            and candidate["default_meshes"] <= today["default_meshes"]
            and candidate["seconds"] <= 1.03 * today["seconds"])


def apply_rule(summary: dict):
    """The adopted threshold: the lowest one-shot mesh error among the candidates that
    pass against today's (None: none passes, the gate stays off)."""
    ok = [t for t in CANDIDATES if passes(summary[str(t)], summary["off"])]
    return min(ok, key=lambda t: summary[str(t)]["oneshot_meshes"]) if ok else None


def main():
    a = parse_args(__doc__.splitlines()[0], "studies/sliver-gate/results/sliver_gate.json")
    torch.set_num_threads(1)
    configs = {"off": (variant(one_shot={"sliver_gate": None}), None),
               **{str(t): (variant(one_shot={"sliver_gate": t}), None) for t in CANDIDATES}}
    seeds, meshes = scene_sets(a, MESH_SEED0, PROC_SEED0)
    rec = evaluate(configs, meshes, a.scenes, a.size, *seeds)
    report(a, seeds, rec, summarise(rec, "oneshot_meshes"), apply_rule)


if __name__ == "__main__":
    main()
