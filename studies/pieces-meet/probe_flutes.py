"""Probe: flutes' loose pieces of Stage II's weights: what borders them (piece sizes on the
other side), and at the rows where the ground truth's jump closes, the one-shot's jump."""
import numpy as np
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases
from fnin_cli.pipeline import run_method, integrate
from fnin_cli.solvers.pieces import cut_pieces

with threadpool_limits(1):
    import torch
    torch.set_num_threads(1)
    _, cases = resolve_cases("samples")
    case = [c for c in cases if c.name == "flutes"][0]
    inp, gt = case.load()
    run = run_method(inp, "fnin")
    res = integrate(inp)
s, z, w = run.system, run.out.z, run.out.weights
zg = s.at_pixels(np.log(gt))
for nm, zz, ww in (("one-shot", z, w), ("default", s.at_pixels(res.z), res.pieces_from[1])):
    for mutual in (False, True):
        labels, sizes, _ = cut_pieces(s, ww, mutual=mutual)
        print(f"== {nm} mutual={mutual}: sizes {sizes[:8].tolist()} (+{(sizes < 50).sum()} under 50 px, {sizes[sizes < 50].sum()} px)")
        cols = np.nonzero(s.mask)[1]
        for k in range(len(sizes)):
            if sizes[k] < 50:
                break
            m = labels == k
            off = np.median((zz - zg)[m])
            print(f"   piece {k}: {sizes[k]} px, columns {cols[m].min()}-{cols[m].max()}, log offset vs truth {off:+.4f}")
        # edges across the seams (columns 85|86, 171|172) per row: one-shot jump vs truth
    rows_ = np.nonzero(s.mask)[0]
    for seam in (86, 172):
        p = s.hp[np.nonzero(s.mask)[1][s.hq] == seam]
        q = s.hq[np.nonzero(s.mask)[1][s.hq] == seam]
        for r in (60, 70, 80, 100, 110, 120):
            i = np.flatnonzero(rows_[p] == r)
            if i.size:
                i = i[0]
                print(f"   {nm} seam {seam} row {r}: jump {zz[q[i]] - zz[p[i]]:+.4f} truth {zg[q[i]] - zg[p[i]]:+.4f} "
                      f"w u+ {ww['u+'][p[i]]:.2f} u- {ww['u-'][q[i]]:.2f}")

# the default's final weights: the edges across seam 172 that hold (either weight >= CUT_WEIGHT)
from fnin_cli.solvers.pieces import CUT_WEIGHT  # noqa: E402
ww = res.pieces_from[1]
zz = s.at_pixels(res.z)
cols_ = np.nonzero(s.mask)[1]
sel = cols_[s.hq] == 172
p, q = s.hp[sel], s.hq[sel]
hold = (ww["u+"][p] >= CUT_WEIGHT) | (ww["u-"][q] >= CUT_WEIGHT)
print("seam 172, default's final weights: rows held", rows_[p][hold].tolist())
for i in np.flatnonzero(hold):
    print(f"   row {rows_[p[i]]}: w u+ {ww['u+'][p[i]]:.2f} u- {ww['u-'][q[i]]:.2f} jump {zz[q[i]] - zz[p[i]]:+.4f} truth {zg[q[i]] - zg[p[i]]:+.4f}")
