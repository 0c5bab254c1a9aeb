# Where today's later rounds move z (studies/banded-rounds/README.md, "Why"); needs profile_rounds.py run first.
# Run: PYTHONPATH=$PWD python studies/banded-rounds/diagnose.py
import copy, pickle, sys
import numpy as np
sys.path.insert(0, "studies/banded-rounds")
from banded import dilate
from fnin_cli.bench.cases import align_objects
from fnin_cli.data.mesh_scenes import bench_scenes
from fnin_cli.pipeline import build_input, fix_scale
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import integrate_bini, _weights_and_energy
from fnin_cli.solvers.system import NormalSystem, DIRECTIONS
with limit_threads(1):
    name, sc, _ = bench_scenes("/work/shared/data/meshes", views=[(1536, 2048, False, 1)], start=40)[0]
    inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    z0 = np.load("/tmp/v40_z.npy"); bias, k, lam = pickle.load(open("/tmp/v40_bias.pkl", "rb"))
    zs = {}
    r = integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0, max_iter=16, tol=1e-3, cg_rtol=1e-3, solver="amg",
                       bias=bias, callback=lambda i, e, z: zs.__setitem__(i, z.copy()))
    def err(z):
        d, _ = fix_scale(system.to_image(z), inp.camera, inp.mask)
        return align_objects(d, sc.depth, inp.mask, sc.object_id, True)["made"]
    W = lambda z: np.stack([v for v in (lambda w: [w[d] for d in DIRECTIONS])(_weights_and_energy(system, z, k, bias)[0])])
    w2, w16 = W(zs[2]), W(zs[16])
    for tau, rad in ((0.01, 8), (0.01, 32), (0.001, 8)):
        band = dilate(system, (np.abs(w16 - w2) > tau).any(0), rad)
        dz = zs[16] - zs[2]
        mix = np.where(band, zs[16], zs[2])
        print(f"tau {tau} r {rad}: band {band.mean():.3f} of px; share of |dz|^2 outside {np.sum(dz[~band]**2)/np.sum(dz**2):.3f}; "
              f"err z2 {err(zs[2]):.4f} z16 {err(zs[16]):.4f} z16-in-band/z2-outside {err(mix):.4f}")
    dzc = dz - dz.mean()
    print("median |dz| outside/inside band", np.median(np.abs(dz[~band])), np.median(np.abs(dz[band])))
