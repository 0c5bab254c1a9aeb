"""Isolated depth pixels (issue 51 item 4) on rendered views with their truth: the far-pixel
count of ``spikes_public.py`` (nearest masked 8-neighbour more than 0.1 of the depth range
away) for the default and ``bini`` on the views of ``fnin bench meshes`` (clean and
real-like), the truth's own beside. A measurement, for choosing item 4's candidates on
renders (thin silhouettes, 8-bit copies among the real-like ones) rather than on DiLiGenT's
nine counts alone (round 5, seventh session).

    PYTHONPATH=$PWD python studies/real-maps/spikes_renders.py [--sets clean,real-like] [--json OUT]
"""

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spikes_public import count_far  # noqa: E402  (this study's own count)
from fnin_cli.bench.cases import mesh_cases  # noqa: E402
from fnin_cli.pipeline import integrate  # noqa: E402
from fnin_cli.resources import limit_threads  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="clean,real-like")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    limit_threads(1)
    warnings.simplefilter("ignore")
    out, tot = {}, {"fnin": 0, "bini": 0, "truth": 0}
    for set_name in a.sets.split(","):
        for case in mesh_cases(noise=None if set_name == "clean" else set_name):
            inp, gt = case.load()
            mask = inp.mask & np.isfinite(gt)
            row = {m: count_far(integrate(inp, m).depth, inp.mask) for m in ("fnin", "bini")}
            row["truth"] = count_far(gt, mask)
            out[f"{set_name}/{case.name}"] = row
            for k in tot:
                tot[k] += row[k]
            over = "  <-- over bini" if row["fnin"] > row["bini"] else ""
            print(f"{set_name:9s} {case.name:45s} default {row['fnin']:3d}  bini {row['bini']:3d}  truth {row['truth']:3d}{over}",
                  flush=True)
    print(f"far total: default {tot['fnin']}, bini {tot['bini']}, truth {tot['truth']}")
    if a.json:
        a.json.write_text(json.dumps({"rows": out, "total": tot}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
