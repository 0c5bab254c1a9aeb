"""Isolated depth pixels (issue 51 item 4): renders of human figures (thin limbs, fingers),
orthographic and perspective, 8-bit; the default against ``bini``.

An isolated pixel is a masked pixel whose depth is off the median of its masked
8-neighbours by more than 20 % of the map's depth range (1st-99th percentile), as
``count_isolated`` in tests/helpers.py (the tests' own, imported here).

    python studies/real-maps/spikes.py [--methods fnin,bini] [--out studies/real-maps/results/spikes.json]

Maps are written to a temporary folder (never the repository) and read back through
``fnin_cli.load_input``, as the command line reads them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fnin_cli.conventions import from_internal  # noqa: E402
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, load_meshes  # noqa: E402
from fnin_cli.data import real_like  # noqa: E402
from fnin_cli.data.render import render  # noqa: E402
from fnin_cli.io import write_png  # noqa: E402
from fnin_cli.pipeline import integrate, load_input  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from helpers import count_isolated  # noqa: E402  (the tests' own count, so both read one rule)

def human_view(name: str, height: int, yaw_deg: float, ortho: bool, model: str = "clean", seed: int = 0):
    """(internal normals, mask, K, true depth) of a front-ish view of a standing figure, with
    the real-like errors of ``model`` (``data.real_like``)."""
    V, F = load_meshes(DEFAULT_MESH_DIR, names=[name])[name]
    V = np.asarray(V, np.float64)
    V = V - (V.min(0) + V.max(0)) / 2
    a = np.radians(yaw_deg)
    R = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
    V = V @ R.T
    Vc = np.stack([V[:, 0], -V[:, 1], -V[:, 2]], -1)     # y up -> rows down, facing the camera
    size = V[:, 1].max() - V[:, 1].min()
    w = int(height * 1.2)
    if ortho:
        s = 1.1 * size / height
        Vc[:, 0] += s * (w - 1) / 2
        Vc[:, 1] += s * (height - 1) / 2
        Vc[:, 2] += 5.0
        r = render(Vc, F, (height, w), None, s)
        K = None
    else:
        f = 2.0 * height
        Vc[:, 2] += f / height * 1.1 * size
        K = np.array([[f, 0, (w - 1) / 2], [0, f, (height - 1) / 2], [0, 0, 1.0]])
        r = render(Vc, F, (height, w), K)
    normals = np.nan_to_num(r.normals.astype(np.float64))
    if model != "clean":
        rng = np.random.default_rng(seed)
        normals = real_like.apply_noise(normals, r.mask, K, real_like.draw_params(model, rng), rng)
    return normals, r.mask, K, r.depth


def write_case(folder: Path, normals, mask, K, depth, bits=8):
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "depth_true.npy", depth)
    top = 2 ** bits - 1
    code = np.round((np.clip(from_internal(np.nan_to_num(normals.astype(np.float64)), "ps"), -1, 1) + 1) / 2 * top)
    code[~mask] = top
    write_png(folder / "normal_map.png", code.astype(np.uint8 if bits == 8 else np.uint16))
    write_png(folder / "mask.png", (mask * 255).astype(np.uint8))
    if K is not None:
        np.savetxt(folder / "K.txt", K)


CASES = [("human_man", 480, 0.0, True, "clean"), ("human_man", 480, 30.0, True, "clean"),
         ("human_neutral", 480, 0.0, True, "clean"), ("human_neutral", 480, -20.0, False, "clean"),
         ("human_man", 720, 0.0, True, "clean"), ("human_man", 480, 0.0, True, "ps8"),
         ("human_neutral", 480, 15.0, True, "ps8"), ("human_man", 480, -30.0, True, "white"),
         ("human_neutral", 600, 0.0, True, "tilt"), ("human_man", 480, 10.0, False, "ps8")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--methods", default="fnin,bini")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--extra", nargs="*", default=[], help="more case folders (normal_map.png, mask.png, K.txt)")
    a = ap.parse_args(argv)
    tmp = Path(a.tmp or tempfile.mkdtemp(prefix="fnin_spikes_"))
    folders = []
    for i, (name, h, yaw, ortho, model) in enumerate(CASES):
        d = tmp / f"{name}-{h}-yaw{yaw:+.0f}-{'ortho' if ortho else 'persp'}-{model}"
        if not (d / "normal_map.png").exists():
            write_case(d, *human_view(name, h, yaw, ortho, model, 5100 + i))
        folders.append(d)
    folders += [Path(p) for p in a.extra]
    rows = []
    for d in folders:
        inp = load_input(d)
        if (d / "depth_true.npy").exists():
            n, worst = count_isolated(np.load(d / "depth_true.npy"), inp.mask)
            rows.append({"map": d.name, "method": "truth", "pixels": int(inp.mask.sum()), "isolated": n,
                         "worst_ranges": round(worst, 3), "seconds": 0.0})
            print(json.dumps(rows[-1]), flush=True)
        for m in a.methods.split(","):
            t0 = time.perf_counter()
            res = integrate(inp, method=m)
            n, worst = count_isolated(res.depth, res.mask)
            rows.append({"map": d.name, "method": m, "pixels": int(res.mask.sum()), "isolated": n,
                         "worst_ranges": round(worst, 3), "seconds": round(time.perf_counter() - t0, 2)})
            print(json.dumps(rows[-1]), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
