"""Pictures and (n+1)/2 floats through the loader (issue 51 items 1 and 2).

Writes, under a temporary folder (never the repository): procedural colour "photos"
(portraits, landscapes, still lifes: shading, texture, noise; never a normal map) as
``normal_map.png`` in a folder without a mask and with a full mask, and DiLiGenT's 9
objects as float EXRs holding (n + 1) / 2 with grey (n = 0), white and black backgrounds,
no mask. Each is read by ``fnin_cli.load_input`` (the command line's loader, ``--convention
auto``): a picture must be refused; an EXR decoded as ``ps/half`` with the object's pixels
as its domain. Also prints the share of unit-length vectors (1 +- 0.1) in the loader's
domain (1 +- 0.25) without a mask for the pictures, DiLiGenT, real/ and samples/.

    python studies/real-maps/pictures.py [--out studies/real-maps/results/pictures.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"

from fnin_cli.checks.cues import domain  # noqa: E402
from fnin_cli.checks.decodings import Decoding, decode  # noqa: E402
from fnin_cli.errors import FninError  # noqa: E402
from fnin_cli.io import read_array, read_mask  # noqa: E402
from fnin_cli.pipeline import load_input  # noqa: E402


def smooth_noise(rng, h, w, scale, ch=1):
    small = rng.random((max(2, h // scale), max(2, w // scale), ch))
    img = np.asarray(Image.fromarray((small * 255).astype(np.uint8).squeeze()).resize((w, h), Image.BICUBIC),
                     float) / 255
    return img.reshape(h, w, ch) if ch > 1 else img


def portrait(seed, h=480, w=360):
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:h, 0:w].astype(float)
    img = np.stack([0.25 + 0.2 * smooth_noise(rng, h, w, 60), 0.3 + 0.1 * u / w, 0.45 + 0.2 * v / h], -1)
    cx, cy, a, b = w * 0.5, h * 0.42, w * 0.24, h * 0.26
    x, y = (u - cx) / a, (v - cy) / b
    r2 = x ** 2 + y ** 2
    head = r2 < 1
    shade = np.clip(0.3 + 0.7 * (-0.4 * x - 0.5 * y + 0.75 * np.sqrt(np.clip(1 - r2, 0, 1))), 0, 1)
    skin = np.array([0.92, 0.70, 0.58]) * (0.9 + 0.1 * smooth_noise(rng, h, w, 8))[..., None]
    img[head] = (skin * shade[..., None])[head]
    hair = head & (y < -0.35 + 0.15 * np.sin(u / 9))
    img[hair] = (np.array([0.25, 0.15, 0.08]) * (0.6 + 0.4 * smooth_noise(rng, h, w, 3))[..., None])[hair]
    for ex in (-0.38, 0.38):
        img[((x - ex) ** 2 / 0.02 + (y + 0.05) ** 2 / 0.006) < 1] = [0.2, 0.25, 0.3]
    img[(x ** 2 / 0.08 + (y - 0.5) ** 2 / 0.004) < 1] = [0.7, 0.3, 0.3]
    shirt = (v > h * 0.72) & (np.abs(u - cx) < w * 0.45 + (v - h) * 0.2)
    img[shirt] = (np.array([0.2, 0.35, 0.7]) * (0.7 + 0.3 * smooth_noise(rng, h, w, 20))[..., None])[shirt]
    return np.clip(img + rng.normal(0, 0.01, img.shape), 0, 1)


def landscape(seed, h=400, w=600):
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:h, 0:w].astype(float)
    horizon = h * 0.45 + 30 * smooth_noise(rng, 1, w, 40)[0]
    sky = np.stack([0.45 + 0.2 * v / h, 0.6 + 0.2 * v / h, 0.95 - 0.1 * v / h], -1)
    cloud = smooth_noise(rng, h, w, 50) ** 3
    sky = sky * (1 - cloud[..., None]) + cloud[..., None]
    grass = np.stack([0.25 + 0.1 * smooth_noise(rng, h, w, 5), 0.45 + 0.2 * smooth_noise(rng, h, w, 7), 0.15 + 0 * u],
                     -1)
    img = np.where((v > horizon)[..., None], grass * (0.6 + 0.4 * v / h)[..., None], sky)
    return np.clip(img + rng.normal(0, 0.01, img.shape), 0, 1)


def still_life(seed, h=420, w=420):
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:h, 0:w].astype(float)
    wood = np.stack([0.55 + 0.1 * np.sin(u / 7 + 5 * smooth_noise(rng, h, w, 30)), 0.35 + 0 * u, 0.2 + 0 * u], -1)
    img = wood * (0.5 + 0.5 * v / h)[..., None]
    for cx, cy, r, col in ((140, 200, 90, (0.85, 0.1, 0.1)), (300, 260, 70, (0.95, 0.55, 0.1))):
        x, y = (u - cx) / r, (v - cy) / r
        r2 = x ** 2 + y ** 2
        lit = -0.5 * x - 0.5 * y + 0.7 * np.sqrt(np.clip(1 - r2, 0, 1))
        c = np.array(col)[None, None] * np.clip(0.15 + 0.85 * lit, 0, 1)[..., None] + (np.clip(lit, 0, 1) ** 40)[..., None]
        img[r2 < 1] = c[r2 < 1]
    return np.clip(img + rng.normal(0, 0.01, img.shape), 0, 1)


def write_exr(path, rgb):
    import OpenEXR

    hdr = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}
    OpenEXR.File(hdr, {c: np.ascontiguousarray(rgb[..., i], np.float32) for i, c in enumerate("RGB")}).write(str(path))


def unit_share(path):
    raw, bd = read_array(path)
    raw = raw[..., :3]
    bd = None if raw.dtype.kind == "f" else bd
    dom = domain(raw, bd, Decoding(), 0.25)[1]
    length = np.linalg.norm(decode(raw, bd, Decoding())[dom], axis=-1)
    return round(float(dom.mean()), 4), round(float(np.mean(np.abs(length - 1) <= 0.1)), 4)


def load(path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            inp = load_input(path, **kw)
        except FninError as e:
            return {"outcome": "refused", "message": str(e)}
    return {"outcome": "loaded", "convention": inp.convention, "pixels": int(inp.mask.sum()),
            "warnings": len(caught)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    tmp = Path(a.tmp or tempfile.mkdtemp(prefix="fnin_pictures_"))
    rows = []
    for name, fn in (("portrait", portrait), ("landscape", landscape), ("stilllife", still_life)):
        for seed in (0, 1):
            img = (fn(seed) * 255).round().astype(np.uint8)
            for masked in (False, True):
                d = tmp / f"{name}{seed}{'-mask' if masked else ''}"
                d.mkdir(parents=True, exist_ok=True)
                Image.fromarray(img).save(d / "normal_map.png")
                if masked:
                    Image.fromarray(np.full(img.shape[:2], 255, np.uint8)).save(d / "mask.png")
                row = {"set": "pictures", "map": d.name, **load(d)}
                if not masked:
                    row["domain"], row["unit_share"] = unit_share(d / "normal_map.png")
                rows.append(row)
                print(json.dumps(row)[:220], flush=True)
    for obj in sorted((DATA / "diligent").iterdir()):
        raw, bd = read_array(obj / "normal_map.png")
        half = raw[..., :3].astype(np.float64) / (2 ** bd - 1)
        mask = read_mask(obj / "mask.png")
        for bg_name, bg in (("grey", 0.5), ("white", 1.0), ("black", 0.0)):
            h = half.copy()
            h[~mask] = bg
            p = tmp / f"{obj.name}_half_{bg_name}.exr"
            write_exr(p, h.astype(np.float32))
            row = {"set": "diligent-half", "map": p.name, "mask_pixels": int(mask.sum()), **load(p, K=obj / "K.txt")}
            rows.append(row)
            print(json.dumps(row)[:220], flush=True)
    for folder in [*sorted((DATA / "diligent").iterdir()), *sorted((DATA / "real").iterdir()),
                   *sorted((ROOT / "samples").iterdir())]:
        f = next(folder.glob("normal_map.*"))
        dom, share = unit_share(f)
        rows.append({"set": "maps", "map": folder.name, "domain": dom, "unit_share": share})
        print(json.dumps(rows[-1]), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
