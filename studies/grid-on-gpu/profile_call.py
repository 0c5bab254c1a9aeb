"""Where a camera-size `fnin integrate` call's seconds go: the CLI's work on one folder run
twice in one process (the first warms up CUDA and compiles the kernels), the second under
cProfile. With CUDA_LAUNCH_BLOCKING=1 in the environment every kernel finishes before its
Python call returns, so GPU time is charged to the code that launched it.

    CUDA_LAUNCH_BLOCKING=1 python studies/grid-on-gpu/profile_call.py FOLDER --out calls.prof [--top 45]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

from fnin_cli.cli import app


def call(folder: str, out: str) -> float:
    sys.argv = ["fnin", "integrate", folder, "-o", out, "--force", "--quiet", "--json"]
    t = time.perf_counter()
    try:
        app()
    except SystemExit:
        pass
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--out", required=True)
    ap.add_argument("--top", type=int, default=45)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        depth = str(Path(tmp) / "d.npy")
        print(f"warm-up call {call(a.folder, depth):.2f} s", file=sys.stderr)
        pr = cProfile.Profile()
        pr.enable()
        wall = call(a.folder, depth)
        pr.disable()
    print(f"profiled call {wall:.2f} s", file=sys.stderr)
    pr.dump_stats(a.out)
    pstats.Stats(a.out, stream=sys.stderr).sort_stats("cumulative").print_stats(a.top)


if __name__ == "__main__":
    main()
