"""The default's whole `fnin integrate` call on a rendered layout folder, two checkouts of
fnin in alternating fresh processes: wall seconds, `--json` stage seconds, peak RSS and
the per-object error against the render's exact depth (issue 30's 2048x1536 target).

    python studies/camera-size/compare_whole_call.py BEFORE_DIR AFTER_DIR [--size 2048x1536] [--pairs 3] \
        [--out studies/camera-size/whole_call_2048x1536.json]

BEFORE_DIR/AFTER_DIR: trees of the package (``git archive <commit> | tar -x -C DIR``); each
runs with DIR first on PYTHONPATH and no method or refine flag (each tree's default;
``--device auto``: a CUDA GPU where there is one). The scene is
``benchmarks/large_load.py``'s (boot and koala, perspective, its fixed seed), or with
``--scene bench`` the view of ``fnin bench meshes --size WxH`` (koala and penguin), written
into a temporary layout folder (16-bit PNG, mask, K.txt) with its ground truth kept beside
the run, not in the folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from large_load import MESHES, render_view  # noqa: E402

from fnin_cli.bench.cases import align_objects  # noqa: E402


class _View:
    """The ground truth a run is scored against: depth, mask, object ids."""

    def __init__(self, depth, mask, object_id, names):
        self.depth, self.mask, self.object_id, self.names = depth, mask, object_id, names


def bench_view(folder: Path, h: int, w: int, meshes_dir) -> _View:
    """``fnin bench meshes --size WxH``'s view written as a layout folder."""
    from fnin_cli.bench.cases import mesh_cases
    from fnin_cli.io import write_normal_map, write_png

    case = mesh_cases(meshes_dir, frame=(w, h))[0]
    inp, gt = case.load()
    object_id, names = case.object_ids()
    folder.mkdir(parents=True, exist_ok=True)
    write_normal_map(folder / "normal_map.png", np.where(inp.mask[..., None], inp.normals, np.nan), force=True)
    write_png(folder / "mask.png", (inp.mask * 255).astype(np.uint8))
    np.savetxt(folder / "K.txt", inp.camera.K)
    return _View(gt, inp.mask, object_id, names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--size", default="2048x1536", help="WxH")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--scene", choices=["large_load", "bench"], default="large_load")
    ap.add_argument("--meshes", default=str(ROOT.parent / "shared" / "data" / "meshes"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.lower().split("x"))
    trees = {"before": Path(a.before).resolve(), "after": Path(a.after).resolve()}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        case = Path(tmp) / "case"
        if a.scene == "bench":
            r = bench_view(case, h, w, a.meshes)
        else:
            rv = render_view(case, h, w, a.meshes)
            r = _View(rv.depth, rv.mask, rv.object_id, list(MESHES))
        for pair in range(a.pairs):
            order = ["before", "after"] if pair % 2 == 0 else ["after", "before"]
            for name in order:
                depth_file = Path(tmp) / f"{name}.npy"
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(trees[name])] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
                t = time.perf_counter()
                p = subprocess.run([sys.executable, "-m", "fnin_cli.cli", "integrate", str(case), "-o", str(depth_file),
                                    "--force", "--quiet", "--json"], capture_output=True, text=True, env=env, cwd=tmp)
                wall = time.perf_counter() - t
                if p.returncode != 0:
                    raise SystemExit(f"{name}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
                rec = json.loads(p.stdout)
                rec = rec[0] if isinstance(rec, list) else rec
                err = align_objects(np.load(depth_file), r.depth, r.mask, r.object_id, True, names=r.names)
                row = {"tree": name, "wall": round(wall, 2), "refine": rec.get("refine"), "seconds": rec["seconds"],
                       "peak_rss_mb": rec.get("peak_rss_mb"), "made_mm": round(err["made"], 4),
                       "objects": {k: round(v["made_mm"], 4) for k, v in err["objects"].items()}}
                runs.append(row)
                print(json.dumps(row), flush=True)
    wall = {n: sum(x["wall"] for x in runs if x["tree"] == n) for n in trees}
    summary = {"size": a.size, "scene": a.scene, "pixels": int(r.mask.sum()), "trees": {n: str(t) for n, t in trees.items()},
               "wall_sum": wall, "ratio": round(wall["after"] / wall["before"], 3)}
    print(json.dumps(summary))
    if a.out:
        Path(a.out).write_text(json.dumps({"summary": summary, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
