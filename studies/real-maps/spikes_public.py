"""Isolated depth pixels (issue 51 item 4) on DiLiGenT and the public maps of shared/data/real:
the default against bini, by tests/helpers.count_isolated (count, worst in depth ranges). A
measurement only (round 5, third session).

    PYTHONPATH=$PWD python studies/real-maps/spikes_public.py
"""

import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))

from helpers import count_isolated  # noqa: E402  (the tests' own count)
from fnin_cli.pipeline import integrate, load_input  # noqa: E402

DILIGENT = ("bear", "buddha", "cat", "cow", "goblet", "harvest", "pot1", "pot2", "reading")


def main() -> int:
    warnings.simplefilter("ignore")
    paths = [DATA / "diligent" / o for o in DILIGENT] + sorted(p for p in (DATA / "real").iterdir() if p.is_dir())
    for p in paths:
        inp = load_input(p)
        (n_d, w_d), (n_b, w_b) = (count_isolated(r.depth, r.mask) for r in (integrate(inp, m) for m in ("fnin", "bini")))
        over = "  <-- over" if n_d > n_b or w_d > w_b else ""
        print(f"{p.name:14s} default {n_d:4d} {w_d:.3f}   bini {n_b:4d} {w_b:.3f}{over}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
