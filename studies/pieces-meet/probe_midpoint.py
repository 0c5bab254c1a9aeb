"""Probe: a loose piece placed by least squares with both rows equally weighted over its
bridge edges (those agreeing with both normals within 1 now, or at bridge_shift), against
the ground-truth shift; pieces of Stage II's weights (cut all round)."""
import sys
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))
from figure import agreeing, bridge_shift, outline  # noqa: E402
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases
from fnin_cli.pipeline import run_method
from fnin_cli.solvers.pieces import cut_pieces


def edge_rows(s, z, labels, k):
    A, N, D, S = [], [], [], []
    for p, q, a, n in ((s.hp, s.hq, s.a_u, s.nx), (s.vp, s.vq, s.a_v, s.ny)):
        e = (labels[p] == k) ^ (labels[q] == k)
        pp, qq = p[e], q[e]
        A.append(np.c_[a[pp], a[qq]]); N.append(np.c_[n[pp], n[qq]]); D.append(z[qq] - z[pp])
        S.append(np.where(labels[qq] == k, 1.0, -1.0))
    return np.concatenate(A), np.concatenate(N), np.concatenate(D), np.concatenate(S)


def midpoint_shift(s, z, labels, k, use):
    A, N, D, S = edge_rows(s, z, labels, k)
    A, N, D, S = A[use], N[use], D[use], S[use]
    # residual after shift t of the piece: a (D + S t) + n; LS over both rows
    num = -(A * (A * D[:, None] + N)).sum(1) * S
    den = (A ** 2).sum(1)
    return float(num.sum() / den.sum())


if __name__ == "__main__":
    cases_ = [a.split("/") for a in sys.argv[1:]] or [("samples", "flutes"), ("samples", "dome")]
    with threadpool_limits(1):
        import torch
        torch.set_num_threads(1)
        for src, name in cases_:
            kw = {"data": "/work/shared/data/diligent"} if src == "diligent" else {}
            _, cases = resolve_cases(src, **kw)
            case = [c for c in cases if c.name == name][0]
            inp, gt = case.load()
            run = run_method(inp, "fnin")
            s, z, w = run.system, run.out.z, run.out.weights
            zg = s.at_pixels(np.log(gt) if inp.camera.perspective else gt)
            ok = np.isfinite(zg)
            labels, sizes, _ = cut_pieces(s, w)
            edge = outline(s)
            for k in range(1, len(sizes)):
                if sizes[k] < 50:
                    break
                want = np.median((z - zg)[(labels == 0) & ok]) - np.median((z - zg)[(labels == k) & ok])
                sh, ag, now = bridge_shift(s, z, labels, k)
                before = agreeing(s, z, labels, k)
                zz = z.copy(); zz[labels == k] += sh
                after = agreeing(s, zz, labels, k)
                m_now = midpoint_shift(s, z, labels, k, before) if before.sum() else float("nan")
                m_after = (sh + midpoint_shift(s, zz, labels, k, after)) if after.sum() else float("nan")
                print(f"{name} piece {k} ({sizes[k]} px, outline {edge[labels == k].any()}): GT {want:+.4f}; bridge {sh:+.4f} "
                      f"(agree {ag}, now {now}); midpoint over now-agreeing {m_now:+.4f}, over after-agreeing {m_after:+.4f}", flush=True)
