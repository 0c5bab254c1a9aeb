"""Wall time and peak memory of one `fnin integrate` call on a 2048x1536 map (issue: large inputs).

Writes the 2048x1536 perspective view of `fnin bench meshes` (koala, 646k pixels) as a
DiLiGenT-layout folder (16-bit normal_map.png, mask.png, K.txt) in a temporary folder,
then runs `fnin integrate DIR -o x.ply` ``--repeat`` times in fresh processes. Usage::

    python benchmarks/large_input.py [--meshes ../shared/data/meshes] [--repeat 2] [-- extra fnin options]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, bench_scenes
from fnin_cli.io import write_normal_map, write_png


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("extra", nargs="*", help="more fnin integrate options (after --)")
    a = ap.parse_args()
    name, sc, _ = next(c for c in bench_scenes(a.meshes) if c[1].mask.shape == (1536, 2048) and c[1].K is not None)
    tmp = Path(tempfile.mkdtemp())
    case = tmp / name
    case.mkdir()
    write_normal_map(case / "normal_map.png", np.where(sc.mask[..., None], sc.normals, np.nan), force=True)
    write_png(case / "mask.png", (sc.mask * 255).astype(np.uint8))
    np.savetxt(case / "K.txt", sc.K)
    walls = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fnin_cli.cli", "integrate", str(case), "-o", str(tmp / "x.ply"),
                        "--force", "--quiet", *a.extra], check=True)
        walls.append(time.perf_counter() - t)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{name}: {int(sc.mask.sum())} px; wall best {min(walls):.2f} s (all {[round(w, 2) for w in walls]}); "
          f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
