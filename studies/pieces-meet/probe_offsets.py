import numpy as np, sys
from threadpoolctl import threadpool_limits
from scipy import ndimage
from fnin_cli.bench.cases import align_and_errors, resolve_cases
from fnin_cli.pipeline import integrate, run_method
from fnin_cli.solvers import pieces as P
name=sys.argv[1]
with threadpool_limits(1):
    import torch; torch.set_num_threads(1)
    _, cases = resolve_cases("synthetic")
    case = [c for c in cases if c.name == name][0]
    inp, gt = case.load()
    res = {m: integrate(inp, m) for m in ("fnin", "bini")}
    run = run_method(inp, "fnin", refine=0)
system = res["fnin"].pieces_from[0]
labels, sizes, _ = P.cut_pieces(system, res["fnin"].pieces_from[1], mutual=True)
piece = system.to_image((labels == 1).astype(float), 0) > 0
main = system.to_image((labels == 0).astype(float), 0) > 0
dist_p = ndimage.distance_transform_edt(~piece); dist_m = ndimage.distance_transform_edt(~main)
lg = np.log(gt)
zs = {"default": res["fnin"].z, "bini": res["bini"].z, "oneshot": system.to_image(run.out.z)}
for m, z in zs.items():
    d = z - lg
    d = d - np.median(d[main])
    print(m, "piece offset med %+.4f" % np.median(d[piece]),
          "main bands (dist to piece 1-3,4-10,11-30,>30):", ["%+.4f" % np.median(d[main & (dist_p >= a) & (dist_p <= b)]) for a, b in ((1, 3), (4, 10), (11, 30), (31, 999))],
          "piece bands:", ["%+.4f" % np.median(d[piece & (dist_m >= a) & (dist_m <= b)]) for a, b in ((1, 3), (4, 10), (11, 30), (31, 999))])
print("mask", inp.mask.shape, inp.mask.sum(), "piece", piece.sum(), "gt piece/main depth", np.median(gt[piece]), np.median(gt[main]))
rows, cols = np.nonzero(piece); print("piece bbox", rows.min(), rows.max(), cols.min(), cols.max())
rows, cols = np.nonzero(main); print("main bbox", rows.min(), rows.max(), cols.min(), cols.max())
inside = labels == 1
for m, zi in zs.items():
    z = system.at_pixels(zi); zg = system.at_pixels(lg)
    for axis, p, q in (("u", system.hp, system.hq), ("v", system.vp, system.vq)):
        e = inside[p] != inside[q]
        sgn = np.where(inside[q[e]], 1.0, -1.0)
        print(m, axis, e.sum(), "cur", np.median(sgn * (z[q[e]] - z[p[e]])), "gt", np.median(sgn * (zg[q[e]] - zg[p[e]])))
from PIL import Image
def norm(x, lo, hi):
    y = np.clip((np.nan_to_num(x, nan=lo) - lo) / (hi - lo), 0, 1); return (y * 255).astype(np.uint8)
tiles = [norm(gt, np.nanmin(gt), np.nanmax(gt)), norm(system.to_image(labels.astype(float), -1), -1, 3)]
for m in zs:
    d = zs[m] - lg; d = d - np.nanmedian(d[main]); tiles.append(norm(d, -0.15, 0.15))
Image.fromarray(np.hstack(tiles)).save("/tmp/pm_p09.png")
