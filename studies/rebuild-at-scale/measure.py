"""Today's default against rounds candidates (RoundsConfig fields) on bench meshes' views:
the candidates of README.md, or ``--candidates '{"today": {}, "X": {"field": value}}'``
(studies/vcycle-single uses it).

    PYTHONPATH=$PWD python studies/rebuild-at-scale/measure.py --sets clean,real-like,2k --out results/small_2k.json
    PYTHONPATH=$PWD python studies/rebuild-at-scale/measure.py --sets 24mp --out results/24mp.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/

from _lib import measure_rounds  # noqa: E402

from fnin_cli.bench.cases import mesh_cases  # noqa: E402

MESHES = "/work/shared/data/meshes"
CANDIDATES = {
    "today": {},
    "C1": {"rebuild_after": None},
    "C2": {"rebuild_after": 16},
    "C3": {"rebuild_after": 12},
}
SETS = {
    "clean": lambda: mesh_cases(MESHES),
    "real-like": lambda: mesh_cases(MESHES, noise="real-like"),
    "2k": lambda: mesh_cases(MESHES, frame=(2048, 1536)),
    "24mp": lambda: mesh_cases(MESHES, frame=(6000, 4000)),
}


def main():
    measure_rounds(lambda name, tmp: SETS[name](), CANDIDATES, "clean,real-like,2k")


if __name__ == "__main__":
    main()
