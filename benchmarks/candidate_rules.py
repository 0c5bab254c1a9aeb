"""What the candidate-against-today benchmarks share (``sliver_gate.py``,
``rounds_edge_prior.py``): their command line, the scenes they run on, and the summary
their rules read."""

from __future__ import annotations

import argparse
import json

import numpy as np

from default_rounds import validation_meshes
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, is_validation, load_meshes, make_mesh_scene
from fnin_cli.data.synthetic import make_scene
from fnin_cli.pipeline import build_input


def parse_args(description: str, out: str, scenes: int = 48, size: int = 384, dev: bool = True,
               seed0: int | None = None):
    """``--meshes``, ``--scenes``, ``--size``, ``--out``; with ``dev``, ``--dev SEED`` (a
    development look on the training meshes: no choice); with ``seed0``, ``--seed0``
    (default ``seed0``) and ``--width`` (default ``--size``) for a rule's fresh scenes."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=scenes)
    ap.add_argument("--size", type=int, default=size)
    ap.add_argument("--out", default=out)
    if dev:
        ap.add_argument("--dev", type=int, default=None, help="first seed of a development look on training meshes")
    if seed0 is not None:
        ap.add_argument("--seed0", type=int, default=seed0, help="first scene's seed")
        ap.add_argument("--width", type=int, default=None, help="scene width (default: --size)")
    return ap.parse_args()


def scene_pair(i: int, meshes, size: int, mesh_seed0: int, proc_seed0: int) -> tuple:
    """Scene ``i`` of a rule's two sets: (mesh scene, its Input, procedural scene, its Input)."""
    sc = make_mesh_scene(mesh_seed0 + i, meshes, size)
    ps = make_scene(proc_seed0 + i, size, stack_prob=0.3, fold_prob=0.5)
    return sc, build_input(sc.normals, None, sc.mask, sc.K), ps, build_input(ps.normals, None, ps.mask, ps.K)


def scene_sets(a, mesh_seed0: int, proc_seed0: int) -> tuple:
    """((mesh seed0, procedural seed0), meshes): the rule's fresh seeds and the validation
    meshes, or with ``--dev`` that seed for both and the training meshes."""
    if a.dev is None:
        return (mesh_seed0, proc_seed0), validation_meshes(a.meshes)
    return (a.dev, a.dev), {k: v for k, v in load_meshes(a.meshes).items() if not is_validation(k)}


def summarise(rec: dict, key: str) -> dict:
    """Per configuration the mean of each recorded list; for each one but "off", its
    ratios to "off" and on how many scenes it is better / worse than "off" on ``key``."""
    summary = {n: {k: float(np.mean(v)) for k, v in r.items()} for n, r in rec.items()}
    off = dict(summary["off"])
    for n in rec:
        if n == "off":
            continue
        s = summary[n]
        s["ratios"] = {k: s[k] / off[k] for k in off}
        pairs = list(zip(rec[n][key], rec["off"][key]))
        s[f"better_worse_{key}"] = [int(sum(c < t - 1e-4 for c, t in pairs)), int(sum(c > t + 1e-4 for c, t in pairs))]
    return summary


def report(a, seeds, rec: dict, summary: dict, apply_rule) -> None:
    """Apply the rule (not on a ``--dev`` look), write the JSON to ``a.out`` and print the summary."""
    chosen = apply_rule(summary) if a.dev is None else "development look: no choice"
    with open(a.out, "w") as fh:
        json.dump({"seeds": list(seeds), "per_scene": rec, "summary": summary, "adopted": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "adopted:", chosen)
