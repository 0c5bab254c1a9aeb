"""Where today's methods place the pieces the normals cannot place (issue 49, item 4).

Usage (from the repository root, one thread)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD \\
        python studies/placement-scenes/run.py --out studies/placement-scenes/results.json

Cases: the renders of ``fnin_cli.data.placement_scenes`` (vase in front of a wall,
orthographic and perspective; stripes meeting a floor at a fold), the samples dome and
flutes, and the two test scenes of tests/test_pieces.py (two spheres, two islands 40 units
apart; the goblet-like sheet held by one extrapolated normal, perspective). Methods: the
default (fnin and its rounds), the one-shot (``refine=0``), bini and wls. Per run: MADE
after the bench's alignment, the vase's in-front share, the stripes' fold jumps, the loose
pieces (pixels and how each was placed), the warnings, the rounds and the seconds.
``--variants`` also runs the default on four more vase renders (foot, ends, size, gap).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from fnin_cli.bench.cases import align_and_errors, resolve_cases
from fnin_cli.data import placement_scenes as ps
from fnin_cli.pipeline import build_input, integrate

REPO = Path(__file__).resolve().parents[2]
METHODS = {"default": dict(method="fnin"), "one-shot": dict(method="fnin", refine=0),
           "bini": dict(method="bini"), "wls": dict(method="wls")}
VARIANTS = {"vase-ortho-foot0.15-cap64": dict(foot=0.15, cap=64), "vase-ortho-tall-wide-foot": dict(
    height=0.97, foot=0.2, cap=64), "vase-ortho-small": dict(height=0.5), "vase-ortho-gap1.05": dict(gap=1.05)}


def scene_case(scene):
    return scene.name, build_input(scene.normals, mask=scene.mask, K=scene.K, pixel_size=scene.pixel_size), \
        scene.depth, scene


def test_scene_cases():
    """The two-spheres and goblet-like scenes, built by the tests' own functions."""
    sys.path.insert(0, str(REPO / "tests"))
    from helpers import camera, rim_step_surface
    from test_pieces import _two_spheres

    surf, inp = _two_spheres()
    yield "two-spheres", inp, surf.depth, None
    cam = camera("persp")
    surf, _ = rim_step_surface(cam, 80.0)
    yield "goblet-like", build_input(surf.normals, None, surf.support, cam.K), surf.depth, None


def cases(variants: bool):
    yield scene_case(ps.vase_scene("ortho"))
    yield scene_case(ps.vase_scene("persp"))
    yield scene_case(ps.stripes_scene())
    for c in resolve_cases(str(REPO / "samples"))[1]:
        if c.name in ("dome", "flutes"):
            inp, gt = c.load()
            yield c.name, inp, gt, None
    yield from test_scene_cases()
    if variants:
        for name, kw in VARIANTS.items():
            s = ps.vase_scene("ortho", **kw)
            yield (name,) + scene_case(s)[1:]


def measure(inp, gt, scene, kw) -> dict:
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = integrate(inp, **kw)
    rec = {"seconds": round(time.perf_counter() - t, 2), "rounds": res.rounds,
           "made": align_and_errors(res.depth, gt, inp.mask, inp.camera.perspective)["made"],
           "loose_pieces": [{"pixels": p["pixels"], "placed": p["placed"]} for p in res.loose_pieces],
           "warnings": list(res.warnings)}
    if scene is not None and scene.body is not None:
        rec["in_front"] = ps.in_front_share(res.depth, scene)
    if scene is not None and scene.fold_row is not None:
        rec["fold"] = ps.fold_jumps(res.depth, scene)
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--variants", action="store_true", help="also the default on four more vase renders")
    args = ap.parse_args(argv)
    out = {}
    for name, inp, gt, scene in cases(args.variants):
        methods = {"default": METHODS["default"]} if name in VARIANTS else METHODS
        out[name] = {}
        if scene is not None:
            out[name]["truth"] = ({"in_front": ps.in_front_share(scene.depth, scene)} if scene.body is not None
                                  else {"fold": ps.fold_jumps(scene.depth, scene)})
        for label, kw in methods.items():
            out[name][label] = rec = measure(inp, gt, scene, kw)
            extra = rec.get("in_front", rec.get("fold", ""))
            print(f"{name:28s} {label:9s} made {rec['made']:.4g} loose {[p['pixels'] for p in rec['loose_pieces']]} "
                  f"{extra} warnings {len(rec['warnings'])} {rec['seconds']}s", flush=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
