"""The edge net's prior in the rounds after FNIN (``pipeline.ROUNDS_EDGE_PRIOR``) against
BiNI's own weights, by the rule of docs/decisions.md#rounds-edge-prior, written before
the run.

On fresh scenes never used for training or an earlier choice (48 validation-mesh scenes
from ``VAL_SEED0 + 2_000_000``, 48 procedural ones from ``VAL_SEED0 + 200_000``, 384 px),
the default (``pipeline.integrate`` with no flags) with each candidate scale and with
today's rounds, the configurations in a rotated order per scene (none always pays the
scene's first run), one thread: per-object error on the mesh scenes, ``relative_error``
on the procedural ones, seconds of each run::

    python benchmarks/rounds_edge_prior.py [--scenes 48] [--out benchmarks/results/rounds_edge_prior.json]

``--dev SEED`` runs the same comparison on scenes from the *training* meshes and
procedural scenes from SEED (a development look; no choice).
"""

from __future__ import annotations

import time

import torch

from candidate_rules import parse_args, report, scene_pair, scene_sets, summarise
from default_rounds import object_error
from fnin_cli import pipeline
from fnin_cli.data.synthetic import relative_error
from fnin_cli.pipeline import integrate
from fnin_cli.resources import limit_threads
from fnin_cli.train.config import VAL_SEED0

CANDIDATES = (0.3, 0.5, 0.7)
MESH_SEED0 = VAL_SEED0 + 2_000_000
PROC_SEED0 = VAL_SEED0 + 200_000
KEYS = ("default_meshes", "default_procedural", "seconds_meshes", "seconds_procedural")


def evaluate(names: list, meshes, scenes: int, size: int, mesh_seed0: int, proc_seed0: int,
             constant: str = "ROUNDS_EDGE_PRIOR") -> dict:
    """Per-scene errors and seconds of the default with ``pipeline.<constant>`` at each
    value of ``names`` ("off": None)."""
    shipped = getattr(pipeline, constant)
    rec = {name: {k: [] for k in KEYS} for name in names}
    with limit_threads(1):
        try:
            for i in range(scenes):
                sc, inp, ps, pinp = scene_pair(i, meshes, size, mesh_seed0, proc_seed0)
                order = names[i % len(names):] + names[:i % len(names)]
                for name in order:
                    setattr(pipeline, constant, None if name == "off" else float(name))
                    r = rec[name]
                    t0 = time.perf_counter()
                    z = integrate(inp).z
                    t1 = time.perf_counter()
                    zp = integrate(pinp).z
                    t2 = time.perf_counter()
                    r["seconds_meshes"].append(t1 - t0)
                    r["seconds_procedural"].append(t2 - t1)
                    r["default_meshes"].append(object_error(z, sc, sc.K is not None))
                    r["default_procedural"].append(relative_error(zp[pinp.mask], ps.unknown[pinp.mask]))
                print(i, {n: tuple(round(rec[n][k][-1], 4) for k in KEYS[:2]) for n in names}, flush=True)
        finally:
            setattr(pipeline, constant, shipped)
    return rec


def passes(candidate: dict, today: dict, mesh_bound: float = 0.97) -> bool:
    """The rule's bounds (means over the scenes): the default on the mesh scenes <=
    ``mesh_bound`` x today's, on the procedural ones no worse, seconds of each set <=
    1.05x today's."""
    return (candidate["default_meshes"] <= mesh_bound * today["default_meshes"]
            and candidate["default_procedural"] <= today["default_procedural"]
            and candidate["seconds_meshes"] <= 1.05 * today["seconds_meshes"]
            and candidate["seconds_procedural"] <= 1.05 * today["seconds_procedural"])


def apply_rule(summary: dict, candidates: tuple = CANDIDATES, mesh_bound: float = 0.97):
    """The adopted value: the lowest mesh error among the candidates that pass (None: none
    passes, today's stays: for this script's prior, BiNI's own weights)."""
    ok = [c for c in candidates if passes(summary[str(c)], summary["off"], mesh_bound)]
    return min(ok, key=lambda c: summary[str(c)]["default_meshes"]) if ok else None


def main():
    a = parse_args(__doc__.splitlines()[0], "benchmarks/results/rounds_edge_prior.json")
    torch.set_num_threads(1)
    names = ["off"] + [str(c) for c in CANDIDATES]
    seeds, meshes = scene_sets(a, MESH_SEED0, PROC_SEED0)
    rec = evaluate(names, meshes, a.scenes, a.size, *seeds)
    report(a, seeds, rec, summarise(rec, "default_meshes"), apply_rule)


if __name__ == "__main__":
    main()
