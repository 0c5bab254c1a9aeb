"""Reading and checking a camera-size normal map: `fnin integrate --json` seconds "load" (which includes "check").

Renders two validation meshes (boot and koala, from ``--meshes``) into a perspective
``--size`` view (default 6000x4000, about 5.5 M masked pixels) with exact normals, writes
it as a DiLiGenT-layout folder (16-bit ``normal_map.png``, ``mask.png``, ``K.txt``) in
``--out`` (default: a temporary folder; the big files are never committed), then runs
``fnin integrate DIR --json`` ``--repeat`` times in fresh processes (``fnin_cli`` as
found on PYTHONPATH, not the current folder: compare trees with PYTHONPATH=...) and prints the
seconds of its "load" and "check" stages, the whole call's wall time and peak RSS.

Usage::

    python benchmarks/large_load.py [--size 6000x4000] [--meshes ../shared/data/meshes]
        [--out DIR] [--repeat 2] [-- extra fnin integrate options, default --method wls]

The same seed always gives the same map. With ``--out`` an existing folder is reused
(rendering 24 MP takes about half a minute).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, _layout, _render_scene, load_meshes
from fnin_cli.io import write_normal_map, write_png

SEED = 30          # issue 30
MESHES = ("boot", "koala")


def render_case(folder: Path, h: int, w: int, meshes_dir, radius: float = 0.39) -> int:
    """Write the view into ``folder``; returns the number of masked pixels. ``radius``:
    the first object's radius as a fraction of the shorter side (0.39: ~24 % masked)."""
    return int(render_view(folder, h, w, meshes_dir, radius).mask.sum())


def render_view(folder: Path, h: int, w: int, meshes_dir, radius: float = 0.39):
    """:func:`render_case`'s work, returning the render (its exact ``depth``, ``mask`` and
    ``object_id`` as well: studies/camera-size/compare_whole_call.py scores against them)."""
    meshes = load_meshes(meshes_dir, names=list(MESHES))
    items = [(n, meshes[n]) for n in MESHES]
    rng = np.random.default_rng(SEED)
    r0 = radius * min(h, w)                # first object's radius in pixels
    D0 = 1500.0                            # mm
    f = r0 * D0 / 75.0                     # 150 mm across
    K = np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1.0]])
    placement = _layout(rng, 2, h, w, True, f, 1.0, D0, r0, lambda g: 0.9 * r0)
    r = _render_scene(items, np.array([0, 1]), rng, placement, (h, w), K, 1.0, fill=True)
    folder.mkdir(parents=True, exist_ok=True)
    write_normal_map(folder / "normal_map.png", np.where(r.mask[..., None], r.normals, np.nan), force=True)
    write_png(folder / "mask.png", (r.mask * 255).astype(np.uint8))
    np.savetxt(folder / "K.txt", K)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="6000x4000", help="WxH")
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--out", default=None, help="folder for the case (reused when it exists)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("extra", nargs="*", help="fnin integrate options (after --); default --method wls")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.lower().split("x"))
    case = Path(a.out) if a.out else Path(tempfile.mkdtemp()) / f"large_{w}x{h}"
    if not (case / "normal_map.png").exists():
        t = time.perf_counter()
        px = render_case(case, h, w, a.meshes)
        print(f"rendered {case}: {w}x{h}, {px} masked pixels in {time.perf_counter() - t:.1f} s")
    extra = a.extra or ["--method", "wls"]
    for _ in range(a.repeat):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "fnin_cli.cli", "integrate", str(case), "-o",
                              str(case.parent / "depth.npy"), "--force", "--quiet", "--json", *extra],
                             check=True, capture_output=True, text=True, cwd=case.parent).stdout
        wall = time.perf_counter() - t
        rec = json.loads(out)
        rec = rec[0] if isinstance(rec, list) else rec.get("results", [rec])[0] if "results" in rec else rec
        s = rec["seconds"]
        print(json.dumps({"size": f"{w}x{h}", "pixels": rec.get("pixels"), "check": s.get("check"),
                          "load": s.get("load"),   # "load" includes "check"
                          "wall": round(wall, 2), "peak_rss_mb": rec.get("peak_rss_mb")}))


if __name__ == "__main__":
    main()
