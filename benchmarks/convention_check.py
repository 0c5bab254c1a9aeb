"""Measure the decoding check (fnin_cli.checks) on real and mis-encoded inputs.

Writes mis-encoded copies of DiLiGenT objects under a temporary folder (never the repo),
runs :func:`check_decoding` on them and on every correct input in ../shared/data and
samples/, and prints a table (scores, outline, decision or refusal, time). The study
studies/decoding-real-maps measures the check on a larger corpus (mirrored maps, 8-bit
copies, maps without masks, renders, noise).

    python benchmarks/convention_check.py [--objects bear,reading] [--tmp /tmp/fnin_conv]
        [--made bear]      # also integrate one copy (wls) with given vs auto decoding
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from fnin_cli.bench.cases import align_and_errors
from fnin_cli.camera import Camera
from fnin_cli.checks import Decoding, check_decoding
from fnin_cli.errors import FninError
from fnin_cli.io import read_array, read_K, read_mask, write_png

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def write_exr(path, rgb):
    import OpenEXR

    hdr = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    chans = {c: np.ascontiguousarray(rgb[..., i], np.float32) for i, c in enumerate("RGB")}
    OpenEXR.File(hdr, chans).write(str(path))


def make_copies(obj_dir: Path, out: Path) -> dict:
    """Mis-encoded copies of a DiLiGenT-layout case; returns {variant: normal-map path}."""
    out.mkdir(parents=True, exist_ok=True)
    raw, bd = read_array(obj_dir / "normal_map.png")
    raw = raw[..., :3]
    top = 2**bd - 1
    v = {}
    g = raw.copy(); g[..., 1] = top - g[..., 1]
    v["green-down.png"] = g
    v["bgr.png"] = np.ascontiguousarray(raw[..., ::-1])
    z = raw.copy(); z[..., 2] = top - z[..., 2]
    v["zflip.png"] = z
    x = raw.copy(); x[..., 0] = top - x[..., 0]
    v["xflip.png"] = x
    paths = {}
    for name, arr in v.items():
        p = out / name
        write_png(p, arr)
        paths[name] = p
    half = raw.astype(np.float32) / top
    write_exr(out / "half.exr", half)
    paths["half.exr"] = out / "half.exr"
    n = 2 * half - 1
    write_exr(out / "raw.exr", n)  # correct float file
    paths["raw-float.exr"] = out / "raw.exr"
    cv = n * np.array([1, -1, -1], np.float32)  # OpenCV frame, read without the flag
    np.save(out / "opencv.npy", cv)
    paths["opencv-noflag.npy"] = out / "opencv.npy"
    return paths


EXPECT = {"green-down.png": "directx", "bgr.png": "ps/bgr", "zflip.png": "ps/flip-z", "xflip.png": "ps/flip-x",
          "half.exr": "ps/half", "raw-float.exr": "ps", "opencv-noflag.npy": "opencv"}


def run_case(label, npath, mask, K, expect="ps", convention="ps"):
    raw, bd = read_array(npath)
    if raw.ndim == 2:
        return None
    cam = Camera(K) if K is not None else Camera()

    def check():
        try:
            return check_decoding(raw, bd, mask, cam, convention=convention, mode="auto"), ""
        except FninError as e:      # refused: two decodings the data cannot tell apart, or noise
            return e.check, str(e)

    chk, refusal = check()
    t = []
    for _ in range(3):
        t0 = time.perf_counter()
        check()
        t.append(time.perf_counter() - t0)
    # the given signs and channels in the data's float encoding (what the scores are keyed by)
    gname = Decoding(chk.given.signs, chk.given.channels, chk.chosen.float_encoding, chk.given.named).name
    given = chk.scores[gname]
    alts = {k: s for k, s in chk.scores.items() if k != gname and np.isfinite(s)
            and chk.facing_away[k] <= max(0.25, chk.facing_away[gname])}
    best = min(alts, key=alts.get)
    used = "refused" if refusal else chk.chosen.name
    ok = used == expect
    print(f"{label:34s} {raw.shape[1]:5d}x{raw.shape[0]:<5d} k={chk.block} cells={chk.cells:6d} "
          f"given={given:6.3f} bestalt={alts[best]:6.3f} ({best:18s}) face={chk.facing_away[gname]:.2f} "
          f"outline={chk.outline.get(gname, 0):+.2f} -> {used:18s} {'OK ' if ok else 'BAD'} "
          f"{chk.reason:24s} {min(t)*1000:6.1f} ms", flush=True)
    if chk.changed or refusal:
        print("    " + (refusal or chk.message))
    return ok, chk, min(t)


def made(case: Path, npath: Path, chk):
    from fnin_cli import integrate, load_input

    gt = np.load(case / "depth_gt.npz")["depth_gt"]
    res = []
    for conv in ("ps", chk.chosen.convention):
        try:
            inp = load_input(str(npath), mask=str(case / "mask.png"), K=str(case / "K.txt"), convention=conv)
            est = integrate(inp, method="wls").depth
            res.append((conv, align_and_errors(est, gt, read_mask(case / "mask.png", gt.shape), True)["made"]))
        except Exception as e:  # noqa: BLE001
            res.append((conv, f"error: {e}"))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", default="bear,reading,cat")
    ap.add_argument("--tmp", default="/tmp/fnin_conv")
    ap.add_argument("--made", default="")
    a = ap.parse_args(argv)
    bad = 0
    print("== correct inputs")
    cases = sorted((DATA / "diligent").iterdir()) + sorted((DATA / "real").iterdir()) + sorted((ROOT / "samples").iterdir())
    for case in cases:
        npath = next(case.glob("normal_map.*"))
        raw, _ = read_array(npath)
        mask = read_mask(case / "mask.png", raw.shape[:2]) if (case / "mask.png").exists() else None
        K = read_K(case / "K.txt") if (case / "K.txt").exists() else None
        r = run_case(f"{case.parent.name}/{case.name}", npath, mask, K)
        bad += r is not None and not r[0]
    print("== mis-encoded copies (given convention ps)")
    for obj in a.objects.split(","):
        case = DATA / "diligent" / obj
        paths = make_copies(case, Path(a.tmp) / obj)
        mask = read_mask(case / "mask.png")
        K = read_K(case / "K.txt")
        for name, p in paths.items():
            r = run_case(f"{obj}/{name}", p, mask, K, expect=EXPECT[name])
            bad += not r[0]
            if obj == a.made and name == "green-down.png":
                print("    MADE (wls) given vs chosen:", made(case, p, r[1]))
    print("failures:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
