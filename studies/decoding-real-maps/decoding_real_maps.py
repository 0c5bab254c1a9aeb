"""The decoding check on real and rendered maps with mis-encodings (issue 43, item 1).

Builds the corpus under a temporary folder (never the repo), loads every file through
``fnin_cli.load_input`` with the default ``--convention auto`` (the command line's
loader, decoding check included) and says, per file, what came out:

- a correct map: ``ok`` (loaded unchanged), ``FALSE-CHANGE`` (re-decoded) or
  ``FALSE-REFUSE`` (refused);
- a mis-encoded map: ``fixed`` (re-decoded to the right normals, with a warning),
  ``refused`` (an error naming options), or ``WRONG`` (loaded with wrong normals: exit 0
  with a wrong surface);
- a noise map: ``refused`` or ``WRONG`` (accepted).

"Right normals" = mean angle to the true internal-frame normals under 3 degrees over the
pixels both masks hold (8-bit codes: about 0.5 degree).

Sets (README "Rule"): ``dev`` (renders of the training meshes, samples/, noise maps
seeds 43000+) chose the thresholds of fnin_cli/checks/decoding.py; ``heldout`` measures
them: DiLiGenT's 9 maps and real/'s 3 (16-bit as published and 8-bit copies), renders of
the validation meshes (the 12 612x512 views of ``fnin bench meshes --noise real-like`` and
16 fresh draws) and noise maps seeds 44000+.

Per map, domains: ``mask`` (its mask given), ``nomask`` (background encoded as the file
has it: white for the public maps, white or black for renders); renders also ``crop`` (the
object's middle, the mask meeting the image border), ``roi`` (a disc inside the object: a
cut, not an outline) and ``flat`` (no mask, background the flat normal (0, 0, 1)). Per
domain, encodings: correct, xflip (n_x negated), mirror (the image mirrored, values
unchanged), yflip, zflip, bgr, xyflip, and for ``mask`` (n+1)/2 floats in a .npy.

    python studies/decoding-real-maps/decoding_real_maps.py --set dev|heldout [--scenes 40] [--noise 6]
        [--seed 43000] [--tmp /tmp/fnin_decoding] [--out studies/decoding-real-maps/results/<set>.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from scipy.ndimage import distance_transform_edt, gaussian_filter

from fnin_cli import load_input
from fnin_cli.conventions import from_internal
from fnin_cli.data.mesh_scenes import (BENCH_VIEWS, DEFAULT_MESH_DIR, TRAIN_MESHES, VALIDATION_MESHES, bench_scenes,
                                       load_meshes, make_mesh_scene)
from fnin_cli.data.real_like import noisy_scene, real_like_scenes
from fnin_cli.data.synthetic import make_scene
from fnin_cli.errors import FninError
from fnin_cli.io import read_array, read_K, read_mask, write_png

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from helpers import plant_normals  # noqa: E402  (the tests' own plant)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
PS = np.array([1.0, -1.0, -1.0])
MODELS = ("clean", "white", "tilt", "ps", "ps8")
RIGHT_DEG = 3.0
DEV_SEED, HELDOUT_SEED = 43_000, 44_000


# ------------------------------------------------------------------ maps

def encode(n, mask, bits, bg="white"):
    """Internal-frame normals as ps colour codes; ``bg`` outside ``mask``."""
    top = 2 ** bits - 1
    code = np.round((np.clip(from_internal(np.nan_to_num(n.astype(np.float64)), "ps"), -1, 1) + 1) / 2 * top)
    code[~mask] = {"white": top, "black": 0, "flat": np.round(np.array([0.5, 0.5, 1.0]) * top)}[bg]
    return code.astype(np.uint8 if bits == 8 else np.uint16)


def internal(code, bits):
    """ps colour codes -> internal-frame unit normals (NaN where not unit length +- 0.25)."""
    n = code[..., :3].astype(np.float64) / (2 ** bits - 1) * 2 - 1
    n = n * PS
    ln = np.linalg.norm(n, axis=-1, keepdims=True)
    return np.where(np.abs(ln - 1) <= 0.25, n / ln, np.nan)


def render_maps(names, seeds, size, rng_seed):
    """[(name, code, bits, mask, K, bg)] of make_mesh_scene renders with PS-like noise."""
    meshes = load_meshes(DEFAULT_MESH_DIR, names=list(names))
    rng = np.random.default_rng(rng_seed)
    out = []
    for i, seed in enumerate(seeds):
        sc = make_mesh_scene(seed, meshes, h=size, w=int(size * 1.25), ortho_prob=0.35, noise=False)
        model = MODELS[i % len(MODELS)]
        noisy, _ = noisy_scene(sc, model, [seed, 7])
        bits = 8 if (model == "ps8" or i % 3 == 0) else 16
        name = f"r{seed}-{model}-{bits}bit-{'ortho' if sc.K is None else 'persp'}"
        out.append((name, noisy.normals, bits, sc.mask, sc.K, "white" if rng.uniform() < 0.5 else "black"))
    return out


def procedural_maps(seeds):
    """[(name, normals, bits, mask, K, bg)] of ``synthetic.make_scene`` (analytic layers,
    walls, holes, the paper's augmentation noise and outliers), 128-256 px."""
    out = []
    rng = np.random.default_rng(seeds[0])
    for i, seed in enumerate(seeds):
        size = (128, 192, 256)[i % 3]
        sc = make_scene(seed, size)
        bits = 8 if i % 4 == 0 else 16
        name = f"p{seed}-{size}-{bits}bit-{'ortho' if sc.K is None else 'persp'}"
        out.append((name, np.where(sc.mask[..., None], sc.normals, np.nan), bits, sc.mask, sc.K,
                    "white" if rng.uniform() < 0.5 else "black"))
    return out


def dome_maps(seeds):
    """[(name, normals, bits, mask, K, bg)]: gently curved domes (spheres of radius 150-800
    px, at least 1.1 times the distance to the frame's farthest corner) filling small frames
    (60x80 to 200x260), 1-5 degrees of white noise, orthographic, no outline (the mask is the
    whole frame): maps where integrability carries little."""
    out = []
    for i, seed in enumerate(seeds):
        rng = np.random.default_rng(seed)
        h, w = ((60, 80), (100, 130), (200, 260))[i % 3]
        radius, noise = rng.uniform(150, 800), rng.uniform(1.0, 5.0)
        v, u = np.mgrid[0:h, 0:w].astype(np.float64)
        x, y = u - w * rng.uniform(0.3, 0.7), v - h * rng.uniform(0.3, 0.7)
        radius = max(radius, 1.1 * float(np.sqrt(x * x + y * y).max()))   # the whole frame on the dome
        zs = np.sqrt(radius ** 2 - x * x - y * y)
        n = np.stack([x / zs, y / zs, -np.ones_like(u)], -1)
        n += rng.normal(0, np.radians(noise), n.shape)
        n /= np.linalg.norm(n, axis=-1, keepdims=True)
        bits = 8 if i % 2 else 16
        out.append((f"d{seed}-{h}x{w}-R{radius:.0f}-{noise:.1f}deg-{bits}bit", n, bits, np.ones((h, w), bool), None,
                    None))
    return out


def plant_maps(seeds):
    """[(name, normals, bits, mask, K, bg)]: dense orthographic 8-bit plants filling a
    480x480 frame (``tests/helpers.plant_normals``: many small leaves over a pot and soil),
    no outline (issue 51 item 3)."""
    return [(f"plant{seed}-8bit", plant_normals(seed), 8, np.ones((480, 480), bool), None, None) for seed in seeds]


def bench_maps():
    """The 12 612x512 real-like views of ``fnin bench meshes`` (validation meshes)."""
    views = bench_scenes(views=[v for v in BENCH_VIEWS if v[0] < 1000])
    out = []
    for name, sc, px in real_like_scenes(views, folds=0):
        bits = 8 if "ps8" in name else 16
        out.append((f"bench-{name}", sc.normals, bits, sc.mask, sc.K, "white"))
    return out


def public_maps(folder_names):
    """[(name, code, bits, mask, K, bg)] of public maps (16-bit as published, 8-bit copies)."""
    out = []
    for case in folder_names:
        raw, bd = read_array(case / "normal_map.png")
        raw = raw[..., :3]
        mask = read_mask(case / "mask.png", raw.shape[:2])
        K = read_K(case / "K.txt") if (case / "K.txt").exists() else None
        cam = "ortho" if K is None else "persp"
        out.append((f"{case.parent.name}-{case.name}-16bit-{cam}", raw, 16, mask, K, None))
        r8 = np.round(raw.astype(np.float64) / 65535 * 255).astype(np.uint8)
        out.append((f"{case.parent.name}-{case.name}-8bit-{cam}", r8, 8, mask, K, None))
    return out


def sample_maps():
    out = []
    for case in sorted((ROOT / "samples").iterdir()):
        npath = next(case.glob("normal_map.*"))
        raw, bd = read_array(npath)
        raw = raw[..., :3]
        mask = read_mask(case / "mask.png", raw.shape[:2])
        K = read_K(case / "K.txt") if (case / "K.txt").exists() else None
        if raw.dtype.kind == "f":   # the float sample as 16-bit codes (its EXR itself: the 'half' row)
            raw = np.round((np.clip(np.nan_to_num(raw, nan=1.0), -1, 1) + 1) / 2 * 65535).astype(np.uint16)
            bd = 16
        out.append((f"samples-{case.name}-{bd}bit-{'ortho' if K is None else 'persp'}", raw, bd, mask, K, None))
    return out


def noise_maps(seeds, size=256):
    """Maps that do not integrate: uniform random codes, and smoothed random unit fields
    facing the camera (sigma 2, 6, 15 px)."""
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        h, w = size, int(size * 1.25)
        bits = 8 if seed % 2 == 0 else 16
        top = 2 ** bits - 1
        code = rng.integers(0, top + 1, (h, w, 3)).astype(np.uint8 if bits == 8 else np.uint16)
        out.append((f"noise{seed}-uniform-{bits}bit", code, bits))
        sig = (2, 6, 15)[seed % 3]
        v = np.stack([gaussian_filter(rng.normal(size=(h, w)), sig) for _ in range(3)], -1)
        v[..., 2] = -np.abs(v[..., 2]) - 0.5 * np.abs(v).max()
        v /= np.linalg.norm(v, axis=-1, keepdims=True)
        out.append((f"noise{seed}-smooth{sig}-{bits}bit", encode(v, np.ones((h, w), bool), bits), bits))
    return out


# ------------------------------------------------------------------ encodings and domains

def variants(code, bits, with_half):
    """{name: (array, mirrored?, truth)}: truth(correct internal normals) -> the normals
    a right decoding of the array gives."""
    top = 2 ** bits - 1
    v = {"correct": (code, False)}
    a = code.copy(); a[..., 0] = top - a[..., 0]; v["xflip"] = (a, False)        # noqa: E702
    v["mirror"] = (np.ascontiguousarray(code[:, ::-1]), True)
    a = code.copy(); a[..., 1] = top - a[..., 1]; v["yflip"] = (a, False)        # noqa: E702
    a = code.copy(); a[..., 2] = top - a[..., 2]; v["zflip"] = (a, False)        # noqa: E702
    v["bgr"] = (np.ascontiguousarray(code[..., ::-1]), False)
    a = code.copy(); a[..., :2] = top - a[..., :2]; v["xyflip"] = (a, False)     # noqa: E702
    if with_half:
        v["half"] = ((code.astype(np.float32) / top).astype(np.float32), False)
    return v


def domains(name, normals, code, bits, mask, K, bg, extra):
    """[(domain, code, mask or None, K)] of one map."""
    out = [("mask", code, mask, K)]
    if bg is None:      # a public map: its file's own background
        out.append(("nomask", code, None, K))
    else:
        out.append(("nomask", encode(normals, mask, bits, bg), None, K))
    if not extra:
        return out
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    r0, r1 = rows[0] + (rows[-1] - rows[0]) // 4, rows[-1] - (rows[-1] - rows[0]) // 4
    c0, c1 = cols[0] + (cols[-1] - cols[0]) // 4, cols[-1] - (cols[-1] - cols[0]) // 4
    if r1 - r0 > 40 and c1 - c0 > 40:
        Kc = None if K is None else K - np.array([[0, 0, c0], [0, 0, r0], [0, 0, 0]])
        out.append(("crop", np.ascontiguousarray(code[r0:r1, c0:c1]), mask[r0:r1, c0:c1], Kc))
    d = distance_transform_edt(mask)
    cy, cx = np.unravel_index(np.argmax(d), d.shape)
    vv, uu = np.mgrid[0:mask.shape[0], 0:mask.shape[1]]
    roi = mask & ((vv - cy) ** 2 + (uu - cx) ** 2 < (0.8 * d.max()) ** 2)
    if roi.sum() > 2000:
        out.append(("roi", encode(normals, roi, bits, "white"), roi, K))
    out.append(("flat", encode(normals, mask, bits, "flat"), None, K))
    return out


def classify(kind, inp, err, truth, tmask):
    """The outcome of one load (see the module docstring)."""
    if err is not None:
        return "refused" if kind != "correct" else "FALSE-REFUSE"
    if kind == "noise":
        return "WRONG"
    m = tmask & inp.mask & np.isfinite(truth).all(-1)
    if not m.any():
        right = False
    else:
        cos = np.clip(np.sum(inp.normals[m].astype(np.float64) * truth[m], -1), -1, 1)
        right = float(np.degrees(np.arccos(cos)).mean()) < RIGHT_DEG
    changed = bool(inp.check and inp.check["changed"])
    if kind == "correct":
        return "ok" if right and not changed else "FALSE-CHANGE"
    return "fixed" if right else "WRONG"


def load(path, mask, K):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return load_input(str(path), mask=mask, K=K, ortho=K is None), None
        except FninError as e:
            return None, str(e)


def run_map(group, name, normals, code, bits, mask, K, bg, extra, tmp, rows):
    truth0 = internal(code, bits) if normals is None else np.where(mask[..., None], normals, np.nan)
    for dom, dcode, dmask, dK in domains(name, normals if normals is not None else truth0, code, bits, mask, K, bg,
                                         extra):
        tm = dmask if dmask is not None else (mask if dom != "crop" else None)
        truth_d = truth0 if dom != "crop" else None
        if dom == "crop":
            rows_, cols_ = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
            r0 = rows_[0] + (rows_[-1] - rows_[0]) // 4
            c0 = cols_[0] + (cols_[-1] - cols_[0]) // 4
            truth_d = truth0[r0:r0 + dcode.shape[0], c0:c0 + dcode.shape[1]]
            tm = dmask
        for var, (arr, mirrored) in variants(dcode, bits, dom == "mask").items():
            truth = truth_d
            vmask = dmask
            tmask = tm
            if mirrored:
                truth = truth_d[:, ::-1] * np.array([-1.0, 1.0, 1.0])
                vmask = None if dmask is None else np.ascontiguousarray(dmask[:, ::-1])
                tmask = tm[:, ::-1]
            p = tmp / (f"{name}_{dom}_{var}" + (".npy" if var == "half" else ".png"))
            if var == "half":
                np.save(p, arr)
            else:
                write_png(p, arr)
            t0 = time.perf_counter()
            inp, err = load(p, vmask, dK)
            secs = time.perf_counter() - t0
            p.unlink()
            outcome = classify(var, inp, err, truth, tmask)
            rows.append({"group": group, "map": name, "domain": dom, "encoding": var, "outcome": outcome,
                         "decoding": None if inp is None else inp.convention,
                         "check_s": None if inp is None else inp.check["seconds"], "load_s": round(secs, 4),
                         "message": err or (inp.warnings[0] if inp is not None and inp.warnings else "")})


def run_noise(group, maps, tmp, rows):
    for name, code, bits in maps:
        h, w = code.shape[:2]
        vv, uu = np.mgrid[0:h, 0:w]
        disc = (vv - h / 2) ** 2 + (uu - w / 2) ** 2 < (0.4 * h) ** 2
        for dom, m in (("mask", disc), ("nomask", None)):
            p = tmp / f"{name}_{dom}.png"
            write_png(p, code)
            inp, err = load(p, m, None)
            p.unlink()
            rows.append({"group": group, "map": name, "domain": dom, "encoding": "noise",
                         "outcome": "refused" if err else "WRONG", "decoding": None if inp is None else inp.convention,
                         "check_s": None if inp is None else inp.check["seconds"], "load_s": None,
                         "message": err or ""})


def summarise(rows):
    table = defaultdict(Counter)
    for r in rows:
        table[f"{r['group']}|{r['domain']}|{r['encoding']}"][r["outcome"]] += 1
    return {k: dict(v) for k, v in sorted(table.items())}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=("dev", "heldout"), required=True)
    ap.add_argument("--scenes", type=int, default=None, help="renders of the set's meshes (dev 40, heldout 16)")
    ap.add_argument("--noise", type=int, default=6, help="noise seeds (each a uniform and a smoothed map)")
    ap.add_argument("--seed", type=int, default=None, help=f"first seed (dev {DEV_SEED}, heldout {HELDOUT_SEED})")
    ap.add_argument("--plants", type=int, default=4, help="dense plant maps (seeds from the first seed)")
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    out = Path(a.out or Path(__file__).parent / "results" / f"{a.set}.json")
    tmp = Path(a.tmp or tempfile.mkdtemp(prefix="fnin_decoding_"))
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    t0 = time.perf_counter()
    seed = a.seed if a.seed is not None else DEV_SEED if a.set == "dev" else HELDOUT_SEED
    if a.set == "dev":
        for m in sample_maps():
            run_map("samples", m[0], None, m[1], m[2], m[3], m[4], m[5], False, tmp, rows)
        print("samples done", flush=True)
        run_noise("noise", noise_maps(range(seed, seed + a.noise)), tmp, rows)
        for name, n, bits, mask, K, bg in render_maps(TRAIN_MESHES, range(seed, seed + (a.scenes or 40)), 256, 5):
            run_map("renders", name, n, encode(n, mask, bits), bits, mask, K, bg, True, tmp, rows)
            print(name, flush=True)
        for name, n, bits, mask, K, bg in procedural_maps(list(range(seed, seed + (a.scenes or 40)))):
            run_map("procedural", name, n, encode(n, mask, bits), bits, mask, K, bg, False, tmp, rows)
            print(name, flush=True)
        for name, n, bits, mask, K, bg in dome_maps(list(range(seed, seed + (a.scenes or 40)))):
            run_map("domes", name, n, encode(n, mask, bits), bits, mask, K, bg, False, tmp, rows)
        for name, n, bits, mask, K, bg in plant_maps(range(seed, seed + a.plants)):
            run_map("plants", name, n, encode(n, mask, bits), bits, mask, K, bg, False, tmp, rows)
    else:
        for m in public_maps(sorted((DATA / "diligent").iterdir())):
            run_map("diligent", m[0], None, m[1], m[2], m[3], m[4], m[5], False, tmp, rows)
        print("diligent done", flush=True)
        for m in public_maps(sorted((DATA / "real").iterdir())):
            run_map("real", m[0], None, m[1], m[2], m[3], m[4], m[5], False, tmp, rows)
        print("real done", flush=True)
        run_noise("noise", noise_maps(range(seed, seed + a.noise)), tmp, rows)
        for name, n, bits, mask, K, bg in bench_maps():
            run_map("bench-views", name, n, encode(n, mask, bits), bits, mask, K, bg, False, tmp, rows)
            print(name, flush=True)
        for name, n, bits, mask, K, bg in render_maps(VALIDATION_MESHES,
                                                      range(seed, seed + (a.scenes or 16)), 384, 6):
            run_map("renders", name, n, encode(n, mask, bits), bits, mask, K, bg, True, tmp, rows)
            print(name, flush=True)
        for name, n, bits, mask, K, bg in dome_maps(list(range(seed, seed + (a.scenes or 16)))):
            run_map("domes", name, n, encode(n, mask, bits), bits, mask, K, bg, False, tmp, rows)
        for name, n, bits, mask, K, bg in plant_maps(range(seed, seed + a.plants)):
            run_map("plants", name, n, encode(n, mask, bits), bits, mask, K, bg, False, tmp, rows)
    summary = summarise(rows)
    bad = [r for r in rows if r["outcome"] in ("WRONG", "FALSE-CHANGE", "FALSE-REFUSE")]
    secs = [r["check_s"] for r in rows if r["check_s"] is not None]
    examples = {}    # the first message of each (encoding, outcome): what users read
    for r in rows:
        if r["message"] and r["outcome"] in ("fixed", "refused"):
            examples.setdefault(f"{r['encoding']}|{r['outcome']}", f"{r['map']} ({r['domain']}): {r['message']}")
    cols = ["group", "map", "domain", "encoding", "outcome", "decoding", "check_s"]
    rec = {"set": a.set, "scenes": a.scenes, "noise": a.noise, "seed": seed,
           "seconds": round(time.perf_counter() - t0, 1),
           "check_seconds_max": max(secs) if secs else None, "summary": summary,
           "examples": examples, "columns": cols, "rows": [[r[c] for c in cols] for r in rows]}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rec, default=float, separators=(",", ":")).replace("],[", "],\n["))
    for k, v in summary.items():
        print(f"{k:40s} " + " ".join(f"{o}={c}" for o, c in sorted(v.items())))
    print(f"{len(bad)} wrong surfaces or false alarms; written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
