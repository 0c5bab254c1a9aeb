import sys, numpy as np
sys.path.insert(0, "studies/pieces-meet")
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases
from fnin_cli.pipeline import run_method
from fnin_cli.solvers.pieces import cut_pieces
def rows(s, z, labels, k, shift):
    zz = z.copy(); zz[labels == k] += shift
    R = []
    for p, q, a, n in ((s.hp, s.hq, s.a_u, s.nx), (s.vp, s.vq, s.a_v, s.ny)):
        e = (labels[p] == k) ^ (labels[q] == k)
        pp, qq = p[e], q[e]
        dz = zz[qq] - zz[pp]
        R.append(np.c_[np.abs(a[pp] * dz + n[pp]), np.abs(a[qq] * dz + n[qq]), np.abs(a[pp]), np.abs(n[pp]), np.abs(n[qq])])
    return np.concatenate(R)
from PIL import Image
with threadpool_limits(1):
    import torch; torch.set_num_threads(1)
    for src, name in (("synthetic", "persp-15"), ("samples", "dome")):
        _, cases = resolve_cases(src)
        case = [c for c in cases if c.name == name][0]
        inp, gt = case.load()
        run = run_method(inp, "fnin")
        s, z, w = run.system, run.out.z, run.out.weights
        zg = s.at_pixels(np.log(gt) if inp.camera.perspective else gt)
        labels, sizes, _ = cut_pieces(s, w)
        k = 1
        want = np.median((z - zg)[labels == 0]) - np.median((z - zg)[labels == k])
        for nm, sh in (("now", 0.0), ("gt", want), ("bridge", -0.0198 if name == "persp-15" else -0.0284)):
            R = rows(s, z, labels, k, sh)
            both = np.maximum(R[:, 0], R[:, 1])
            print(name, nm, f"{sh:+.4f}", "edges", len(R), "agree@1", (both <= 1).sum(), "@0.3", (both <= .3).sum(), "@0.1", (both <= .1).sum(), "median max-res %.3f" % np.median(both), "|a| med %.1f" % np.median(R[:, 2]))
        lab = s.to_image(labels.astype(float), -1)
        g = gt.copy(); g = (np.nan_to_num((g - np.nanmin(g)) / (np.nanmax(g) - np.nanmin(g))) * 255).astype(np.uint8)
        Image.fromarray(np.hstack([g, (np.clip(lab + 1, 0, 4) * 60).astype(np.uint8)])).save(f"/tmp/pm_{name}.png")
