# Development looks after the decision (not choices): cheaper *full* rounds on v40, from the
# Stage II output saved by profile_rounds.py. Each variant from a fresh AMGCache (the
# default's refresh_every / rebuild_after); error after the default scale fix.
# Run: PYTHONPATH=$PWD python studies/banded-rounds/looks.py
import copy, pickle, sys, time
import numpy as np
from fnin_cli.bench.cases import align_objects
from fnin_cli.config import DEFAULT
from fnin_cli.data.mesh_scenes import bench_scenes
from fnin_cli.pipeline import build_input, fix_scale
from fnin_cli.resources import limit_threads
from fnin_cli.solvers import linear
from fnin_cli.solvers.bini import IntegrationResult, _weights_and_energy, integrate_bini
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.system import NormalSystem

R = DEFAULT.rounds
its = []
_pcg = linear.pcg
def counted(*a, **k):
    out = _pcg(*a, **k); its.append(out[1]); return out
linear.pcg = counted


def extrapolated(system, k, z0, lam, max_iter, tol, hierarchy, bias, beta=1.0, maxiter=5000):
    """Today's rounds, each solve warm-started at z + beta (z - z_previous) instead of z."""
    z = z0.copy(); prev = None
    weights, energy = _weights_and_energy(system, z, k, bias)
    it = 0
    for it in range(1, max_iter + 1):
        x0 = z if prev is None else z + beta * (z - prev)
        zn, info = system.solve(weights, lam=lam, z_prior=z0, x0=x0, method="amg", rtol=R.inner_rtol,
                                maxiter=maxiter, hierarchy=hierarchy)
        if info.iterations == 0:
            break
        hierarchy.after_solve(info.iterations)
        prev, z = z, zn
        weights, e2 = _weights_and_energy(system, z, k, bias)
        rel = abs(energy - e2) / energy; energy = e2
        if rel < tol:
            break
    return IntegrationResult(z, weights, it)


with limit_threads(1):
    name, sc, _ = bench_scenes("/work/shared/data/meshes", views=[(1536, 2048, False, 1)], start=40)[0]
    inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    z0 = np.load("/tmp/v40_z.npy"); bias, k, lam = pickle.load(open("/tmp/v40_bias.pkl", "rb"))
    def err(z):
        d, _ = fix_scale(system.to_image(z), inp.camera, inp.mask)
        return align_objects(d, sc.depth, inp.mask, sc.object_id, True)["made"]
    variants = {
        "today": lambda h: integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0, max_iter=16, tol=1e-3,
                                          cg_rtol=R.inner_rtol, solver="amg", hierarchy=h, bias=bias),
        "extrapolated start": lambda h: extrapolated(system, k, z0, lam, 16, 1e-3, h, bias),
        "2 PCG its a round, <= 16": lambda h: integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0, max_iter=16,
                                          tol=1e-3, cg_rtol=R.inner_rtol, cg_maxiter=2, solver="amg", hierarchy=h,
                                          bias=bias),
        "2 PCG its a round, <= 24": lambda h: integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0, max_iter=24,
                                          tol=1e-3, cg_rtol=R.inner_rtol, cg_maxiter=2, solver="amg", hierarchy=h,
                                          bias=bias),
        "extrapolated start, 2 PCG its, <= 16": lambda h: extrapolated(system, k, z0, lam, 16, 1e-3, h, bias, maxiter=2),
        "extrapolated start, 3 PCG its, <= 16": lambda h: extrapolated(system, k, z0, lam, 16, 1e-3, h, bias, maxiter=3),
        "2 PCG its, no coarse refresh, <= 16": lambda h: integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0,
                                          max_iter=16, tol=1e-3, cg_rtol=R.inner_rtol, cg_maxiter=2, solver="amg",
                                          hierarchy=AMGCache(None, None), bias=bias),
        "extrapolated start, 1 PCG it, <= 16": lambda h: extrapolated(system, k, z0, lam, 16, 1e-3, h, bias, maxiter=1),
        "1 PCG it, <= 16": lambda h: integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0, max_iter=16,
                                          tol=1e-3, cg_rtol=R.inner_rtol, cg_maxiter=1, solver="amg", hierarchy=h,
                                          bias=bias),
    }
    only = sys.argv[1:]
    variants = {n: f for n, f in variants.items() if not only or n in only}
    print("stage II", f"{err(z0):.4f}")
    for name_, f in variants.items():
        its.clear()
        t = time.perf_counter()
        r = f(AMGCache(R.refresh_every, R.rebuild_after))
        print(f"{name_}: {time.perf_counter() - t:.1f} s, {r.iterations} rounds, PCG its {sum(its)} {its}, "
              f"error {err(r.z):.4f}", flush=True)
