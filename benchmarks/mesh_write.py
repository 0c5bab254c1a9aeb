"""Seconds and memory of writing a 6 M-vertex mesh as PLY and OBJ (issue 30, outputs at scale).

A 2000x3000 grid of vertices (12 M faces, RGBA colours) is written with
``mesh.write_mesh`` in a fresh process per format; prints the seconds and the peak RSS
growth during the write. Files go to a temporary folder (or ``--out``)::

    python benchmarks/mesh_write.py [--out DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile

CHILD = r"""
import resource, sys, time
import numpy as np
from fnin_cli.mesh import MeshArrays, write_mesh
h, w = 2000, 3000
v, u = np.mgrid[0:h, 0:w]
V = np.stack([u * 0.1, v * 0.1, 1000 + np.sin(u / 50.0)], -1).reshape(-1, 3).astype(np.float64)
idx = np.arange(h * w).reshape(h, w)
a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel()
F = np.concatenate([np.stack([a, c, b], -1), np.stack([b, c, d], -1)]).astype(np.int64)
C = np.random.default_rng(0).integers(0, 256, (V.shape[0], 4)).astype(np.uint8)
del v, u, idx, a, b, c, d
mesh = MeshArrays(V, F, C)
with open("/proc/self/clear_refs", "w") as fh:   # reset VmHWM to the current RSS
    fh.write("5")
t = time.perf_counter()
write_mesh(sys.argv[1], mesh, force=True)
dt = time.perf_counter() - t
rss = hwm = 0
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"): rss = int(line.split()[1]) / 1024
    if line.startswith("VmHWM:"): hwm = int(line.split()[1]) / 1024
print(f"{sys.argv[1].rsplit('.', 1)[1]}: {len(V)} vertices, {len(F)} faces: {dt:.2f} s, "
      f"peak RSS {hwm:.0f} MB (arrays {(V.nbytes + F.nbytes + C.nbytes) / 1e6:.0f} MB, RSS after {rss:.0f} MB)")
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp()
    for suffix in ("ply", "obj"):
        subprocess.run([sys.executable, "-c", CHILD, f"{out}/mesh.{suffix}"], check=True)


if __name__ == "__main__":
    main()
