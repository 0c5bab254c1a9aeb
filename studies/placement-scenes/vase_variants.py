"""Issue 49's vase, tried wider (round 5, third session): the gap to the wall, the foot and the
ends' flatness varied, float and 8-bit normals, orthographic and perspective; the default and
bini's share of the silhouette in front (in_front_share). A measurement: nothing chosen.

    PYTHONPATH=$PWD python studies/placement-scenes/vase_variants.py
"""
import numpy as np, warnings
warnings.simplefilter("ignore")
from fnin_cli.data.placement_scenes import vase_scene, in_front_share
from fnin_cli.pipeline import build_input, integrate
for kind in ("ortho", "persp"):
    for gap in (1.02, 1.1, 1.5, 3.0):
        for foot, cap in ((0.06, 16), (0.0, 4), (0.15, 40)):
            sc = vase_scene(kind, gap=gap, foot=foot, cap=cap)
            n = sc.normals
            q = np.round((np.clip(n, -1, 1) + 1) / 2 * 255) / 255 * 2 - 1      # 8-bit
            q = q / np.linalg.norm(q, axis=-1, keepdims=True)
            res = []
            for name, nn in (("float", n), ("8bit", q.astype(np.float32))):
                inp = build_input(nn, mask=sc.mask, K=sc.camera.K, pixel_size=None if sc.camera.perspective else 1.0)
                for m in ("fnin", "bini"):
                    r = integrate(inp, m)
                    res.append(f"{name}/{m} {in_front_share(r.depth, sc)['share']:.3f}")
            print(kind, gap, foot, cap, " ".join(res), flush=True)
