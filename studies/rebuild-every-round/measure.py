"""Today's default against AMG-rebuild candidates (RoundsConfig fields) on the project's
own renders, and DiLiGenT as the guard: errors and whole-``integrate`` seconds, every
case loaded once and its candidates run in one process, one thread, in a rotated order;
the large views in two passes, the second in the reverse order (README.md). Since the
second rule the process first warms up (one untimed call) and each run records its depth's
SHA-1: a candidate whose depth is bitwise today's computed what today does, and the rule
counts today's seconds for it there (``seconds_rule``).

    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --sets clean,real-like --out studies/rebuild-every-round/results/small.json
    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --sets 2k,24mp,folder24 --out studies/rebuild-every-round/results/large.json
    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --sets diligent --out studies/rebuild-every-round/results/diligent.json
    C='{"today": {}, "S12": {"rebuild_all_after": 12}}'   # the second rule
    PYTHONPATH=$PWD python studies/rebuild-every-round/measure.py --candidates "$C" --sets clean,real-like,diligent --out studies/rebuild-every-round/results/s12_small.json
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "studies"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _lib import measure_rounds  # noqa: E402
from large_load import MESHES as FOLDER_MESHES, render_view  # noqa: E402

from fnin_cli.bench.cases import mesh_cases, resolve_cases  # noqa: E402
from fnin_cli.inputs import load_input  # noqa: E402

MESHES = str(ROOT.parent / "shared" / "data" / "meshes")
DILIGENT = str(ROOT.parent / "shared" / "data" / "diligent")
CANDIDATES = {"today": {}, "EVERY": {"rebuild_after": 0}, "R4": {"rebuild_after": 4}}
LARGE = {"2k", "24mp", "folder24"}


class _Folder:
    """The 6000x4000 layout folder of benchmarks/large_load.py (boot and koala), read as
    ``fnin integrate DIR`` reads it, scored per object against the render."""

    name = "large_load_6000x4000"

    def __init__(self, tmp: Path):
        self.dir = tmp / "case"
        self.view = render_view(self.dir, 4000, 6000, MESHES)

    def load(self):
        inp = load_input(self.dir / "normal_map.png", mask=self.dir / "mask.png", K=self.dir / "K.txt")
        return inp, self.view.depth

    def object_ids(self):
        return self.view.object_id, list(FOLDER_MESHES)


def cases(name: str, tmp: Path):
    if name == "clean":
        return mesh_cases(MESHES)
    if name == "real-like":
        return mesh_cases(MESHES, noise="real-like")
    if name == "2k":
        return mesh_cases(MESHES, frame=(2048, 1536))
    if name == "24mp":
        return mesh_cases(MESHES, frame=(6000, 4000))
    if name == "folder24":
        return [_Folder(tmp)]
    if name == "diligent":
        return resolve_cases("diligent", DILIGENT)[1]
    raise SystemExit(f"unknown set {name}")


def main():
    measure_rounds(cases, CANDIDATES, "clean,real-like", large=LARGE, depth_hash=True,
                   warm_case=lambda: mesh_cases(MESHES)[0])


if __name__ == "__main__":
    main()
