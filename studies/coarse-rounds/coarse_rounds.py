"""BiNI rounds on a 2x coarser grid before the fine rounds: a development look
(docs/decisions.md#coarse-rounds).

After FNIN's one-shot, ``nc`` BiNI rounds run on the normal map averaged over 2x2 blocks
(mask: blocks wholly inside; K halved, or the pixel size doubled), their change of the
unknown is carried to every fine pixel (nearest coarse pixel, 2x2 constant) and ``nf``
rounds follow at full resolution; candidates (nc, nf) against ``nf`` fine rounds alone,
on development scenes from the training meshes (seeds 777000 + i)::

    python studies/coarse-rounds/coarse_rounds.py FIRST LAST [SIZE [OUT]]   # scenes FIRST..LAST-1, 384 px
"""
import sys, time, json, numpy as np, torch
from scipy import ndimage
from fnin_cli.camera import Camera
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, is_validation, load_meshes, make_mesh_scene
from fnin_cli.pipeline import build_input, classic_lambda, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import integrate_bini
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.system import NormalSystem
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_error  # noqa: E402

torch.set_num_threads(1)

def coarse_input(normals, mask, cam):
    H, W = mask.shape; h, w = H // 2, W // 2
    n = np.nan_to_num(normals[:2*h, :2*w]).reshape(h, 2, w, 2, 3).sum((1, 3))
    m = mask[:2*h, :2*w].reshape(h, 2, w, 2).all((1, 3))
    nn = np.linalg.norm(n, axis=-1, keepdims=True); m &= nn[..., 0] > 1e-6
    n = n / np.maximum(nn, 1e-12)
    if cam.perspective:
        K = cam.K.copy(); K[0, 0] /= 2; K[1, 1] /= 2; K[0, 2] = (K[0, 2] + 0.5) / 2 - 0.5; K[1, 2] = (K[1, 2] + 0.5) / 2 - 0.5
        c = Camera(K)
    else:
        c = Camera(None, cam.pixel_size * 2)
    return n, m, c

def coarse_then_fine(inp, z_img, nc, nf, lam):
    H, W = inp.mask.shape; h, w = H // 2, W // 2
    n, m, c = coarse_input(inp.normals, inp.mask, inp.camera)
    zf = np.nan_to_num(z_img)
    zc0 = zf[:2*h, :2*w].reshape(h, 2, w, 2).mean((1, 3))
    sc = NormalSystem(n, m, c); lam_c = classic_lambda(c, m.shape)
    r = integrate_bini(sc, z0=zc0[m], z_prior=zc0[m], lam=lam_c, max_iter=nc, tol=0.0, cg_rtol=1e-3, solver="amg",
                       hierarchy=AMGCache(refresh_every=3))
    corr = np.zeros((h, w)); corr[m] = r.z - zc0[m]
    # extend the correction to every coarse cell from its nearest coarse pixel in the mask
    idx = ndimage.distance_transform_edt(~m, return_distances=False, return_indices=True)
    corr = corr[idx[0], idx[1]]
    full = np.repeat(np.repeat(corr, 2, 0), 2, 1)
    full = np.pad(full, ((0, H - 2*h), (0, W - 2*w)), mode="edge")
    sf = NormalSystem(inp.normals, inp.mask, inp.camera)
    z1 = (zf + full)[inp.mask]
    r2 = integrate_bini(sf, z0=z1, z_prior=z1, lam=lam, max_iter=nf, tol=0.0, cg_rtol=1e-3, solver="amg",
                        hierarchy=AMGCache(refresh_every=3))
    return sf.to_image(r2.z)

meshes = {k: v for k, v in load_meshes(DEFAULT_MESH_DIR).items() if not is_validation(k)}
CANDS = [(0, 8), (0, 16), (0, 24), (8, 4), (16, 4), (24, 4), (16, 8)]
res_all = {}
with limit_threads(1):
    for s in range(int(sys.argv[1]), int(sys.argv[2])):
        sc = make_mesh_scene(777000 + s, meshes, int(sys.argv[3]) if len(sys.argv) > 3 else 384)
        inp = build_input(sc.normals, None, sc.mask, sc.K); persp = sc.K is not None
        t = time.perf_counter(); one = integrate(inp, "fnin", refine=0); t_one = time.perf_counter() - t
        lam = classic_lambda(inp.camera, inp.shape)
        rec = {"one": (object_error(one.z, sc, persp), t_one)}
        for nc, nf in CANDS:
            t = time.perf_counter(); z = coarse_then_fine(inp, one.z, nc, nf, lam) if nc else None
            if nc == 0:
                sf = NormalSystem(inp.normals, inp.mask, inp.camera); z1 = one.z[inp.mask]
                r = integrate_bini(sf, z0=z1, z_prior=z1, lam=lam, max_iter=nf, tol=0.0, cg_rtol=1e-3, solver="amg", hierarchy=AMGCache(refresh_every=3))
                z = sf.to_image(r.z)
            rec[f"{nc}+{nf}"] = (object_error(z, sc, persp), time.perf_counter() - t)
        t = time.perf_counter(); b = integrate(inp, "bini"); rec["bini"] = (object_error(b.z, sc, persp), time.perf_counter() - t)
        res_all[s] = rec
        print(s, {k: (round(v[0], 4), round(v[1], 2)) for k, v in rec.items()}, flush=True)
keys = list(next(iter(res_all.values())))
print({k: (round(float(np.mean([r[k][0] for r in res_all.values()])), 4), round(float(sum(r[k][1] for r in res_all.values())), 2)) for k in keys})
json.dump(res_all, open(sys.argv[4] if len(sys.argv) > 4 else "studies/coarse-rounds/results/coarse_rounds_dev.json", "w"), indent=1)
