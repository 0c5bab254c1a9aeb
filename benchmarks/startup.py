"""Wall time of one `fnin integrate` call against `python -c "import torch"` (issue: start-up).

Runs each command ``--repeat`` times, interleaved, and reports the best of each and the
difference to the torch import. Usage::

    python benchmarks/startup.py [--input ../shared/data/diligent/bear] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wall(cmd) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", default=str(ROOT.parent / "shared" / "data" / "diligent" / "bear"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    fnin = [sys.executable, "-m", "fnin_cli.cli"]
    out = Path(tempfile.mkdtemp()) / "x.ply"
    cmds = {
        "import torch": [sys.executable, "-c", "import torch"],
        "fnin integrate (default)": fnin + ["integrate", a.input, "-o", str(out), "--force", "--quiet"],
        "fnin integrate --refine 0": fnin + ["integrate", a.input, "-o", str(out), "--force", "--quiet", "--refine", "0"],
        "fnin integrate --method wls": fnin + ["integrate", a.input, "-o", str(out), "--force", "--quiet",
                                               "--method", "wls"],
    }
    times = {k: [] for k in cmds}
    for _ in range(a.repeat):
        for k, c in cmds.items():
            times[k].append(wall(c))
    best = {k: min(v) for k, v in times.items()}
    for k, v in best.items():
        print(f"{k:30s} best {v:.2f} s" + ("" if k == "import torch" else f"  (+{v - best['import torch']:.2f} s)"))
    if a.json:
        Path(a.json).write_text(json.dumps({"input": a.input, "repeat": a.repeat, "times": times, "best": best}, indent=1))
    shutil.rmtree(out.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
