import sys, numpy as np
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases
from fnin_cli.pipeline import run_method
from fnin_cli.solvers.pieces import cut_pieces
from fnin_cli.solvers.rounds import view_cosine
def rows(s, z, labels, k, shift, c):
    zz = z.copy(); zz[labels == k] += shift
    R = []
    for p, q, a, n in ((s.hp, s.hq, s.a_u, s.nx), (s.vp, s.vq, s.a_v, s.ny)):
        e = (labels[p] == k) ^ (labels[q] == k)
        pp, qq = p[e], q[e]
        dz = zz[qq] - zz[pp]
        R.append(np.c_[np.abs(a[pp] * dz + n[pp]), np.abs(a[qq] * dz + n[qq]), c[pp], c[qq]])
    return np.concatenate(R)
with threadpool_limits(1):
    import torch; torch.set_num_threads(1)
    for src, name, br in (("synthetic", "persp-15", -0.0198), ("samples", "dome", -0.0284)):
        _, cases = resolve_cases(src)
        case = [c for c in cases if c.name == name][0]
        inp, gt = case.load()
        run = run_method(inp, "fnin")
        s, z, w = run.system, run.out.z, run.out.weights
        c = view_cosine(s)
        labels, sizes, _ = cut_pieces(s, w)
        R = rows(s, z, labels, 1, br, c)
        ag = np.maximum(R[:, 0], R[:, 1]) <= 1
        mc = np.minimum(R[:, 2], R[:, 3])
        print(name, "agreeing", ag.sum(), "min view cos of agreeing: pct 10/50/90", np.percentile(mc[ag], [10, 50, 90]).round(3),
              "n with both >= 0.3:", (ag & (mc >= 0.3)).sum(), ">=0.2:", (ag & (mc >= 0.2)).sum(), "; all boundary min-cos median", np.median(mc).round(3))
        # agreement count at the best shift when only non-grazing edges count
        R0 = rows(s, z, labels, 1, 0.0, c)
        for tolc in (0.3, 0.2):
            best = max(((np.maximum(*rows(s, z, labels, 1, sh, c)[:, :2].T) <= 1) & (mc >= tolc)).sum() for sh in [0.0])
        shs = np.linspace(-0.15, 0.15, 301)
        cnt = [((np.maximum(*rows(s, z, labels, 1, sh, c)[:, :2].T) <= 1) & (mc >= 0.3)).sum() for sh in shs]
        i = int(np.argmax(cnt)); print("   non-grazing(0.3) best shift %+.4f count %d now %d" % (shs[i], cnt[i], cnt[150]))
