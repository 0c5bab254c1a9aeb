"""Forced attachments through one-pixel slivers: a development look
(docs/decisions.md#sliver-attachments; not a choice).

BiNI's weights (and the edge net's) pair each pixel's two sides on an axis,
w+ = 1 - w-, so a pixel that differs from *both* neighbours along an axis (a sliver one
pixel wide between two depth jumps) still connects to one of them with weight ~1, and
can tie a whole object to another one at a different depth. This measures how often
that happens on training scenes, with the weights of the *true* depth: one Stage II
solve with BiNI's weights of the true unknown (the scene's noisy normals, the prior at
the true unknown), per object aligned (``synthetic.object_relative_error``), against
the same solve where a pixel whose both one-sided differences exceed ``T`` on an axis
(|a dz| > T, a smooth gate sigmoid_k(T^2 - min(d+^2, d-^2))) connects on neither side.
The prior sits at the true unknown (``truth``: what a piece cut loose keeps) or at the
uniform-weights solution (``wls``: what the normals alone say; the fair one, since the
offset of a piece cut loose inside an object is not in the normals)::

    python studies/sliver-gate/sliver_oracle.py [--first 777000] [--scenes 40] [--size 384] [--T 2]
        [--json studies/sliver-gate/results/sliver_oracle.json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from fnin_cli.camera import Camera
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, make_mesh_scene
from fnin_cli.data.synthetic import make_scene, object_groups, relative_error
from fnin_cli.pipeline import classic_lambda
from fnin_cli.solvers.bini import bini_weights, sigmoid
from fnin_cli.solvers.system import NormalSystem
from fnin_cli.train.feed import split_meshes


def oracle_errors(sc, T: float) -> dict:
    """Per-object errors of the true-weights solve, without and with both-sided cuts."""
    cam = Camera(sc.K, 1.0)
    lam = classic_lambda(cam, sc.mask.shape)
    z = sc.unknown[sc.mask]
    ids = getattr(sc, "object_id", None)
    groups = object_groups(None if ids is None else ids[sc.mask])
    system = NormalSystem(sc.normals.astype(np.float64), sc.mask, cam)
    d = system.differences(z)
    plain = bini_weights(system, z, 2.0, d)
    gated, cut = dict(plain), 0
    for ax in "uv":
        gate = sigmoid(T * T - np.minimum(d[ax + "+"] ** 2, d[ax + "-"] ** 2), 2.0)
        cut += int((gate < 0.5).sum())
        gated[ax + "+"], gated[ax + "-"] = plain[ax + "+"] * gate, plain[ax + "-"] * gate
    out = {"pixel_axes_cut": cut, "pixel_axes": 2 * system.n}
    z_wls, _ = system.solve(None, lam=lam, z_prior=np.zeros_like(z), rtol=1e-8)
    for prior_name, prior in (("truth", z), ("wls", z_wls)):
        for name, w in (("paired", plain), ("both_sided", gated)):
            zs, _ = system.solve(w, lam=lam, z_prior=prior, rtol=1e-8)
            out[f"{name}_{prior_name}"] = [relative_error(zs[g], z[g]) for g in groups]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--first", type=int, default=777000, help="first training-mesh scene seed")
    ap.add_argument("--scenes", type=int, default=40)
    ap.add_argument("--size", type=int, default=384)
    ap.add_argument("--T", type=float, default=2.0)
    ap.add_argument("--json", default="studies/sliver-gate/results/sliver_oracle.json")
    a = ap.parse_args()
    meshes = split_meshes(str(DEFAULT_MESH_DIR))
    rec = {"mesh": [], "procedural": []}
    for i in range(a.scenes):
        rec["mesh"].append(oracle_errors(make_mesh_scene(a.first + i, meshes, a.size), a.T))
        rec["procedural"].append(oracle_errors(make_scene(a.first + i, a.size, stack_prob=0.2, fold_prob=0.6), a.T))
    summary = {}
    for kind, rows in rec.items():
        summary[kind] = {"objects": sum(len(r["paired_truth"]) for r in rows),
                         "pixel_axes_cut_share": float(sum(r["pixel_axes_cut"] for r in rows)
                                                       / sum(r["pixel_axes"] for r in rows))}
        for prior in ("truth", "wls"):
            paired = np.concatenate([r[f"paired_{prior}"] for r in rows])
            gated = np.concatenate([r[f"both_sided_{prior}"] for r in rows])
            summary[kind][f"prior_{prior}"] = {
                "objects_over_1": [int((paired > 1).sum()), int((gated > 1).sum())],
                "mean": [float(paired.mean()), float(gated.mean())],
                "median": [float(np.median(paired)), float(np.median(gated))],
                "better_worse": [int((gated < paired - 1e-4).sum()), int((gated > paired + 1e-4).sum())],
            }
    with open(a.json, "w") as fh:
        json.dump({"args": vars(a), "summary": summary, "per_scene": rec}, fh, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
