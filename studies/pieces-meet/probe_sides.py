import sys, numpy as np
sys.path.insert(0, "studies/pieces-meet")
from bridge import bridge_shift
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases
from fnin_cli.pipeline import run_method
from fnin_cli.solvers.pieces import cut_pieces
def signs(s, z, labels, k, shift):
    zz = z.copy(); zz[labels == k] += shift
    out = []
    for p, q, a, n in ((s.hp, s.hq, s.a_u, s.nx), (s.vp, s.vq, s.a_v, s.ny)):
        e = (labels[p] == k) ^ (labels[q] == k)
        pp, qq = p[e], q[e]
        dz = zz[qq] - zz[pp]
        agree = np.maximum(np.abs(a[pp] * dz + n[pp]), np.abs(a[qq] * dz + n[qq])) <= 1
        sgn = np.where(labels[qq] == k, 1.0, -1.0)     # + : piece farther
        # jump beyond both normals' predictions: the piece's side minus what the normals allow
        out.append(np.c_[sgn * dz, agree, sgn * (-n[pp] / a[pp]), sgn * (-n[qq] / a[qq])])
    return np.concatenate(out)
cases_ = [("synthetic", "persp-15"), ("synthetic", "persp-09"), ("samples", "dome"), ("diligent", "buddha"), ("diligent", "harvest"), ("diligent", "pot1")]
with threadpool_limits(1):
    import torch; torch.set_num_threads(1)
    for src, name in cases_:
        kw = {"data": "/work/shared/data/diligent"} if src == "diligent" else {}
        _, cases = resolve_cases(src, **kw)
        case = [c for c in cases if c.name == name][0]
        inp, gt = case.load()
        run = run_method(inp, "fnin")
        s, z, w = run.system, run.out.z, run.out.weights
        zg = s.at_pixels(np.log(gt) if inp.camera.perspective else gt)
        labels, sizes, _ = cut_pieces(s, w)
        for k in range(1, len(sizes)):
            if sizes[k] < 50: break
            sh, ag, now = bridge_shift(s, z, labels, k)
            if not (ag >= 3 and ag > now): continue
            ok = np.isfinite(zg)
            want = np.median((z - zg)[(labels == 0) & ok]) - np.median((z - zg)[(labels == k) & ok])
            S = signs(s, z, labels, k, sh)
            rest = S[S[:, 1] == 0]
            # a jump beyond what either normal predicts, by sign
            lo = np.minimum(rest[:, 2], rest[:, 3]); hi = np.maximum(rest[:, 2], rest[:, 3])
            far = (rest[:, 0] > hi).sum(); near = (rest[:, 0] < lo).sum()
            print(f"{name} piece {k} ({sizes[k]} px): shift {sh:+.4f} GT {want:+.4f} agree {ag} now {now}; rest {len(rest)}: piece farther {far}, nearer {near}", flush=True)
