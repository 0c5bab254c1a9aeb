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
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from helpers import plant_normals as plant  # noqa: E402  (the tests' own plant)
from fnin_cli.conventions import from_internal  # noqa: E402
from fnin_cli.checks import check_decoding  # noqa: E402
from fnin_cli.camera import Camera  # noqa: E402
from fnin_cli.errors import FninError  # noqa: E402

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
