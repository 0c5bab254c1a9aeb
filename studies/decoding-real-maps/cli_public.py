"""The issue's measurement through the command line: public maps, mis-encoded, integrated.

For each public map (real/'s three, 16-bit as published and 8-bit copies; DiLiGenT's nine,
16-bit) writes the correct file and copies with red and blue swapped (bgr), x flipped
(n_x negated), mirrored (the image and its mask reversed, values kept) and y flipped under a
temporary folder (never the repo), runs ``python -m fnin_cli integrate <copy> --mask
--K --json -o <tmp>.npy`` with the default method and the default ``--convention auto``, and
compares each depth with the correct file's (mirrored back for the mirrored copy): after a
median scale (perspective) or offset (orthographic), the mean |difference| over the mask
as a share of the correct depth's range (issue 43 reported 19-121 % for the wrong surfaces
that exited 0).

    python studies/decoding-real-maps/cli_public.py [--out studies/decoding-real-maps/results/cli_public.json]
        [--tmp DIR] [--method default]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from fnin_cli.io import read_array, read_mask, write_png

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"


def copies(raw, bits, mask):
    top = 2 ** bits - 1
    out = {"correct": (raw, mask, False)}
    out["bgr"] = (np.ascontiguousarray(raw[..., ::-1]), mask, False)
    a = raw.copy()
    a[..., 0] = top - a[..., 0]
    out["xflip"] = (a, mask, False)
    out["mirror"] = (np.ascontiguousarray(raw[:, ::-1]), np.ascontiguousarray(mask[:, ::-1]), True)
    a = raw.copy()
    a[..., 1] = top - a[..., 1]
    out["yflip"] = (a, mask, False)
    return out


def run(npath, mpath, K, out, method):
    cmd = [sys.executable, "-m", "fnin_cli", "integrate", str(npath), "--mask", str(mpath), "-o", str(out),
           "--force", "--json", "--quiet"] + (["--K", str(K)] if K is not None else ["--ortho"])
    if method != "default":
        cmd += ["--method", method]
    p = subprocess.run(cmd, capture_output=True, text=True)
    rec = json.loads(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else {}
    return p.returncode, rec, p.stderr.strip()


def difference(est, ref, mask, perspective):
    m = mask & np.isfinite(est) & np.isfinite(ref)
    e, r = est[m].astype(np.float64), ref[m].astype(np.float64)
    e = e * np.median(r / e) if perspective else e + np.median(r - e)
    return float(np.mean(np.abs(e - r)) / (r.max() - r.min()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "cli_public.json"))
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--method", default="default")
    a = ap.parse_args(argv)
    tmp = Path(a.tmp or tempfile.mkdtemp(prefix="fnin_cli_public_"))
    tmp.mkdir(parents=True, exist_ok=True)
    cases = [(c, 16) for c in sorted((DATA / "real").iterdir())] + [(c, 8) for c in sorted((DATA / "real").iterdir())]
    cases += [(c, 16) for c in sorted((DATA / "diligent").iterdir())]
    rows = []
    print("| map | bits | copy | exit | decoding used | depth difference to the correct file's (% of range) "
          "| message |")
    print("|---|---:|---|---:|---|---:|---|")
    for case, bits in cases:
        raw, _ = read_array(case / "normal_map.png")
        raw = raw[..., :3]
        if bits == 8:
            raw = np.round(raw.astype(np.float64) / 65535 * 255).astype(np.uint8)
        mask = read_mask(case / "mask.png", raw.shape[:2])
        K = case / "K.txt" if (case / "K.txt").exists() else None
        ref = None
        for name, (arr, m, mirrored) in copies(raw, bits, mask).items():
            stem = tmp / f"{case.name}_{bits}_{name}"
            write_png(stem.with_suffix(".png"), arr)
            write_png(Path(f"{stem}_mask.png"), (m * 255).astype(np.uint8))
            code, rec, err = run(stem.with_suffix(".png"), Path(f"{stem}_mask.png"), K, stem.with_suffix(".npy"),
                                 a.method)
            diff = None
            if code == 0:
                depth = np.load(stem.with_suffix(".npy"))
                if mirrored:
                    depth = depth[:, ::-1]
                if name == "correct":
                    ref = depth
                diff = difference(depth, ref, mask, K is not None)
            msg = err.splitlines()[0] if err else ""
            rows.append({"map": case.name, "bits": bits, "copy": name, "exit": code,
                         "decoding": rec.get("convention"), "difference": diff, "message": msg})
            d = "" if diff is None else f"{100 * diff:.2f}"
            print(f"| {case.parent.name}/{case.name} | {bits} | {name} | {code} | {rec.get('convention', '')} | {d} | "
                  f"{msg[:110]} |", flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"method": a.method, "rows": rows}, indent=1))
    wrong = [r for r in rows if r["exit"] == 0 and r["copy"] != "correct" and (r["difference"] or 0) > 0.01]
    print(f"{len(wrong)} exit 0 with a depth more than 1% of its range from the correct file's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
