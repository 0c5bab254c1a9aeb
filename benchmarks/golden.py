"""Golden outputs: run the bundled samples through every method and compare two runs.

Used to check that a refactoring changes no result::

    python benchmarks/golden.py record /tmp/golden_before
    ... change the code ...
    python benchmarks/golden.py record /tmp/golden_after
    python benchmarks/golden.py compare /tmp/golden_before /tmp/golden_after

With ``--diligent DIR`` (DiLiGenT's object folders) each object also runs the default,
the one-shot (``--refine 0``), ``bini`` and ``wls`` (those are DIR's ``<object>_<run>``)::

    python benchmarks/golden.py record /tmp/golden_before --diligent ../shared/data/diligent

Each sample x method writes ``<sample>_<method>.ply`` (mesh), ``_depth.npy`` and
``_weights.npy`` with ``--threads 1``, and the ``--json`` record to ``.json``.
Compare: depth and weights with rtol 1e-5, the JSON records' keys identical and their
status, loose pieces, warnings, rounds, iterations and scale note equal, meshes byte for
byte (reported, not required).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RUNS = {
    "wls": ["--method", "wls"],
    "bini": ["--method", "bini"],
    "fnin": ["--method", "fnin"],
    "fnin-s": ["--method", "fnin-s"],
    "fnin-stage1": ["--method", "fnin-stage1"],
    "fnin-refine0": ["--method", "fnin", "--refine", "0"],
    "fnin-refine3": ["--method", "fnin", "--refine", "3"],
}


DILIGENT_RUNS = {name: RUNS[name] for name in ("fnin", "fnin-refine0", "bini", "wls")}


def record(out: Path, diligent: Path | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cases = [(sample, RUNS) for sample in sorted((ROOT / "samples").iterdir())]
    if diligent is not None:
        cases += [(obj, DILIGENT_RUNS) for obj in sorted(diligent.iterdir()) if (obj / "normal_map.png").exists()]
    for sample, runs in cases:
        for name, args in runs.items():
            stem = out / f"{sample.name}_{name}"
            cmd = [sys.executable, "-c", "from fnin_cli.cli import main; main()", "integrate", str(sample), "-o", f"{stem}.ply",
                   "--depth", f"{stem}_depth.npy", "--weights", f"{stem}_weights.npy", "--threads", "1",
                   "--json", "--force", "--device", "cpu", *args]
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            Path(f"{stem}.json").write_text(p.stdout)
            print(f"{sample.name:8s} {name:14s} rc={p.returncode}", flush=True)


def compare(a: Path, b: Path) -> int:
    bad = 0
    for ja in sorted(a.glob("*.json")):
        jb = b / ja.name
        stem = ja.stem
        ra, rb = json.loads(ja.read_text()), json.loads(jb.read_text())
        notes = []
        if sorted(ra) != sorted(rb):
            notes.append(f"json keys differ {sorted(set(ra) ^ set(rb))}")
        for key in ("status", "loose_pieces", "warnings", "refine", "iterations", "scale_note"):
            if ra.get(key) != rb.get(key):
                notes.append(f"{key} differs")
        for kind in ("depth", "weights"):
            x, y = np.load(a / f"{stem}_{kind}.npy"), np.load(b / f"{stem}_{kind}.npy")
            if not np.allclose(x, y, rtol=1e-5, atol=0, equal_nan=True):
                notes.append(f"{kind} max rel diff {np.nanmax(np.abs(x - y) / np.abs(x)):.3g}")
        mesh_same = (a / f"{stem}.ply").read_bytes() == (b / f"{stem}.ply").read_bytes()
        bad += bool(notes)
        print(f"{stem:24s} {'OK' if not notes else 'DIFF'} mesh {'identical' if mesh_same else 'differs'} "
              + "; ".join(notes))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("record", "compare"):
        sys.exit(__doc__)
    if sys.argv[1] == "record":
        extra = sys.argv[3:]
        if extra and (len(extra) != 2 or extra[0] != "--diligent"):
            sys.exit(__doc__)
        record(Path(sys.argv[2]), Path(extra[1]) if extra else None)
    else:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
