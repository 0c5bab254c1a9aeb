"""Seconds with and without a full-size prior on camera-size views, today's hierarchy schedule
and a candidate's (`--candidate N`: its `prior_rebuild_after`; studies/prior-rebuild/README.md), one
process, one thread.

Reads the views and priors ``studies/memory-prior/run.py`` rendered into ``--tmp``. Runs at 3e6ccc4, whose
``RoundsConfig.prior_rebuild_after`` the candidates set (removed after them).

    PYTHONPATH=$PWD python studies/prior-rebuild/run.py --out OUT.json --candidate N [--tmp /tmp/fnin_mem_prior]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import integrate, load_input
from fnin_cli.prior import read_prior
from fnin_cli.resources import limit_threads

CASES = ("2048x1536_r0.39", "3000x2000_r0.39")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tmp", default="/tmp/fnin_mem_prior")
    ap.add_argument("--candidate", type=int, default=0, help="the candidate's prior_rebuild_after")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    limit_threads(1)
    configs = {"today": DEFAULT, "candidate": replace(DEFAULT, rounds=replace(DEFAULT.rounds, prior_rebuild_after=a.candidate))}
    out = {}
    for name in CASES:
        inp = load_input(Path(a.tmp) / name)
        prior = read_prior(Path(a.tmp) / f"{name}_prior.npy", inp.shape, inp.camera, 1.0)
        integrate(inp)                                   # warm-up, not timed
        t = time.perf_counter()
        integrate(inp)
        without = time.perf_counter() - t
        row = {"without": without}
        for label, cfg in configs.items():
            t = time.perf_counter()
            integrate(inp, depth_prior=prior, config=cfg)
            row[label] = time.perf_counter() - t
            row[label + " ratio"] = row[label] / without
        out[name] = row
        print(name, {k: round(v, 2) for k, v in row.items()}, flush=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
