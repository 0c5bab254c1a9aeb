"""Item 3 of issue 51, measured only: a procedural dense 8-bit orthographic plant map (300
small tilted, slightly curved leaves over a pot and a bumpy soil, filling the frame) and its
x-flipped, y-flipped and mirrored copies through the decoding check, with and without a full
mask; prints each outcome and the integrability scores.

    python studies/real-maps/plant.py [SEEDS]
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from fnin_cli.conventions import from_internal  # noqa: E402
from fnin_cli.checks import check_decoding  # noqa: E402
from fnin_cli.camera import Camera  # noqa: E402
from fnin_cli.errors import FninError  # noqa: E402

def plant(seed, H=480, W=480, leaves=300):
    rng = np.random.default_rng(seed)
    v, u = np.mgrid[0:H, 0:W].astype(float)
    # soil: a gently bumpy plane seen from above-front, z grows downwards in the image (tilted ground)
    z = 1000 + 0.3 * v + 3 * np.sin(u / 17) * np.cos(v / 23)
    p = np.zeros((H, W)); q = 0.3 + 3 * np.cos(u / 17) * -np.sin(v / 23) / 23
    p = 3 * np.cos(u / 17) / 17 * np.cos(v / 23)
    # pot: a cylinder (axis vertical) in the lower middle
    cx, r = W / 2, W * 0.22
    pot = (v > H * 0.62) & (np.abs(u - cx) < r)
    dx = np.clip((u - cx) / r, -0.999, 0.999)
    zp = 900 - r * np.sqrt(1 - dx ** 2)
    pp = r * dx / np.sqrt(1 - dx ** 2) / r
    sel = pot & (zp < z)
    z[sel], p[sel], q[sel] = zp[sel], pp[sel], 0.0
    # leaves: small tilted, slightly curved ellipses above the pot
    for _ in range(leaves):
        lu, lv = rng.uniform(0.1 * W, 0.9 * W), rng.uniform(0.05 * H, 0.7 * H)
        a, b = rng.uniform(6, 18), rng.uniform(3, 8)
        th = rng.uniform(0, np.pi)
        du, dv = u - lu, v - lv
        x1 = du * np.cos(th) + dv * np.sin(th); y1 = -du * np.sin(th) + dv * np.cos(th)
        inside = (x1 / a) ** 2 + (y1 / b) ** 2 < 1
        gu, gv = rng.normal(0, 1.0, 2)           # slope (tilt up to ~60 deg)
        c = rng.uniform(-0.03, 0.03)             # curvature
        zl = rng.uniform(600, 880) + gu * du + gv * dv + c * (x1 ** 2)
        pl = gu + 2 * c * x1 * np.cos(th); ql = gv + 2 * c * x1 * np.sin(th)
        sel = inside & (zl < z)
        z[sel], p[sel], q[sel] = zl[sel], pl[sel], ql[sel]
    n = np.stack([p, q, -np.ones_like(p)], -1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return n

def enc(n):
    return np.round((np.clip(from_internal(n, "ps"), -1, 1) + 1) / 2 * 255).astype(np.uint8)

def main():
    for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        code = enc(plant(seed))
        x = code.copy()
        x[..., 0] = 255 - x[..., 0]
        y = code.copy()
        y[..., 1] = 255 - y[..., 1]
        for name, c in (("correct", code), ("xflip", x), ("yflip", y), ("mirror", np.ascontiguousarray(code[:, ::-1]))):
            for m in (None, np.ones(code.shape[:2], bool)):
                try:
                    chk = check_decoding(c, 8, m, Camera())
                    res = f"{chk.chosen.name:14s} {chk.reason}"
                except FninError as e:
                    chk, res = e.check, "REFUSED " + e.check.reason
                sc = {k: chk.scores.get(k, np.nan) for k in ("ps", "ps/flip-x")}
                print(seed, name, "mask" if m is not None else "nomask", res,
                      " ".join(f"{k}={v:.3f}" for k, v in sc.items()), "outline blocks", chk.outline_blocks)


if __name__ == "__main__":
    main()
