"""Diagnosis: default vs bini at the boundary of the default's loose pieces.

    PYTHONPATH=$PWD python studies/pieces-meet/diag.py synthetic persp-09

For each loose piece of the default (and bini's), per boundary edge row (the inside and the
outside pixel's one-sided rows), its weight under each method's final weights, its
requested jump -n/a, the ground-truth jump and the result's jump; the piece's shift that
each method's boundary rows would ask for (weighted least squares over them) against the
shift that puts the piece where the ground truth has it.
"""
import sys

import numpy as np
from threadpoolctl import threadpool_limits

from fnin_cli.bench.cases import align_and_errors, resolve_cases
from fnin_cli.pipeline import integrate
from fnin_cli.solvers import pieces as P

src, name = sys.argv[1], sys.argv[2]
with threadpool_limits(1):
    import torch
    torch.set_num_threads(1)
    _, cases = resolve_cases(src)
    case = [c for c in cases if c.name == name][0]
    inp, gt = case.load()
    persp = inp.camera.perspective
    res = {m: integrate(inp, m) for m in ("fnin", "bini")}
system = res["fnin"].pieces_from[0]
W = {m: r.pieces_from[1] for m, r in res.items()}
Z = {m: system.at_pixels(r.z) for m, r in res.items()}
zg = np.log(system.at_pixels(gt)) if persp else system.at_pixels(gt)
for m, r in res.items():
    print(m, "made", align_and_errors(r.depth, gt, inp.mask, persp)["made"],
          "loose", [(p["pixels"], p["placed"][:20], p["cut_edges"]) for p in r.loose_pieces])
for src_m in ("fnin", "bini"):
    labels, sizes, _ = P.cut_pieces(system, W[src_m], mutual=True)
    print(f"\n== pieces of {src_m}'s weights (mutual): sizes {sizes[:6].tolist()}")
    for k in range(1, len(sizes)):
        if sizes[k] < 50:
            break
        inside = labels == k
        print(f"-- piece {k}: {sizes[k]} px")
        for m in ("fnin", "bini"):
            z, w = Z[m], W[m]
            # offset of the piece vs main in each result, vs ground truth
            main = labels == 0
            off = lambda zz: np.median(zz[inside]) - np.median(zz[main])
            want = (np.median((z - zg)[main]) - np.median((z - zg)[inside]))  # shift that fixes it
            rows = []
            for axis, p, q in (("u", system.hp, system.hq), ("v", system.vp, system.vq)):
                a = system.a_u if axis == "u" else system.a_v
                nn = system.nx if axis == "u" else system.ny
                e = inside[p] != inside[q]
                pp, qq = p[e], q[e]
                sgn = np.where(inside[qq], 1.0, -1.0)   # dz across, from outside to inside
                for pix, wd in ((pp, w[axis + "+"][pp]), (qq, w[axis + "-"][qq])):
                    req = -nn[pix] / a[pix]
                    cur = z[qq] - z[pp]
                    g = zg[qq] - zg[pp]
                    own = inside[pix]
                    rows.append(np.c_[wd, a[pix] ** 2, sgn * req, sgn * cur, sgn * g, own, sgn * (req - cur)])
            R = np.concatenate(rows)
            wt = R[:, 0] * R[:, 1]
            s_ls = (wt * R[:, 6]).sum() / wt.sum()
            ins, outs = R[:, 5] == 1, R[:, 5] == 0
            print(f"   {m:5s}: shift to GT {want:+.4f}; boundary rows {len(R)}; w-sum inside-rows {R[ins,0].sum():.1f} "
                  f"outside-rows {R[outs,0].sum():.1f}; LS shift asked {s_ls:+.4f}; "
                  f"rows with w>0.5: in {(R[ins,0]>0.5).sum()} out {(R[outs,0]>0.5).sum()}; "
                  f"|req-gt|<0.01: in {(np.abs(R[ins,2]-R[ins,4])<0.01).sum()} out {(np.abs(R[outs,2]-R[outs,4])<0.01).sum()}")
            np.save(f"/tmp/pm_{name}_{src_m}_{k}_{m}.npy", R)
