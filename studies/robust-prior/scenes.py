"""Candidates 20i-20o: the scene check (studies/robust-prior/README.md): the vase in front of its
wall (orthographic and perspective) and the stripes meeting their floor, each with a
``mono-depth`` prior (seed 0), today's fuse and the candidate's in one run. 20i-20m ran at
b890965, 20n at 5098b55 (as candidate20n/scenes.py, PriorConfig.fuse_pieces): run it there;
20o with PriorConfig.place_fused, 20q with PriorConfig.free_widened.

    PYTHONPATH=$PWD python studies/robust-prior/scenes.py --out studies/robust-prior/candidate20o/scenes.json
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import replace
from pathlib import Path

from fnin_cli.bench.priors import case_seed, make_prior
from fnin_cli.config import DEFAULT
from fnin_cli.data import placement_scenes as ps
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.resources import limit_threads

CANDIDATES = {"today": dict(place_fused=False, free_widened=False), "20o": dict(place_fused=True, free_widened=False),
              "20q": dict(place_fused=True, free_widened=True)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="mono-depth")
    a = ap.parse_args(argv)
    limit_threads(1)
    warnings.simplefilter("ignore")
    rec = {"seed": a.seed, "scenes": {}}
    for scene in (ps.vase_scene("ortho"), ps.vase_scene("persp"), ps.stripes_scene()):
        cam = scene.camera
        inp = build_input(scene.normals, None, scene.mask, cam.K if cam.perspective else None,
                          pixel_size=None if cam.perspective else scene.pixel_size)
        row = rec["scenes"][scene.name] = {}
        for kind in a.kinds.split(","):
            prior = make_prior(kind, scene.depth, inp, case_seed(a.seed, scene.name))
            for name, fields in CANDIDATES.items():
                cfg = replace(DEFAULT, prior=replace(DEFAULT.prior, **fields))
                depth = integrate(inp, depth_prior=prior, config=cfg).depth
                row[f"{kind} {name}"] = (ps.fold_jumps(depth, scene) if scene.fold_row is not None
                                         else ps.in_front_share(depth, scene))
        print(scene.name, json.dumps(row), flush=True)
    Path(a.out).write_text(json.dumps(rec, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
