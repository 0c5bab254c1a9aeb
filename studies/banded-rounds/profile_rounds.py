# Profile of today's 16 rounds on v40 (studies/banded-rounds/README.md, "Why"); saves the Stage II
# output to /tmp/v40_*.npy|pkl for diagnose.py. Run: PYTHONPATH=$PWD python studies/banded-rounds/profile_rounds.py
import cProfile, pstats, copy, time, sys
import numpy as np, torch
sys.path.insert(0, "studies/banded-rounds")
from fnin_cli.config import DEFAULT
from fnin_cli.data.mesh_scenes import bench_scenes
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input, classic_lambda, rounds_prior
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import integrate_bini
from fnin_cli.solvers import linear
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.registry import BY_NAME, RunArgs
from fnin_cli.solvers.system import NormalSystem
cfg, R = DEFAULT, DEFAULT.rounds
its = []
orig = linear.pcg
def pcg2(*a, **k):
    out = orig(*a, **k); its.append(out[1]); return out
linear.pcg = pcg2
with limit_threads(1):
    torch.set_num_threads(1)
    name, sc, _ = bench_scenes("/work/shared/data/meshes", views=[(1536, 2048, False, 1)], start=40)[0]
    inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    lam = classic_lambda(inp.camera, inp.shape, cfg.solver.lam)
    hier = AMGCache(R.refresh_every, R.rebuild_after)
    res = BY_NAME["fnin"].run(system, inp, RunArgs(lam, cfg, "auto", "cpu", load_model(device="cpu"), rtol=R.stage2_rtol, hierarchy=hier))
    bias, k = rounds_prior(system, res.edge_p, cfg)
    np.save("/tmp/v40_z.npy", res.z); 
    import pickle; pickle.dump((bias, k, lam), open("/tmp/v40_bias.pkl", "wb"))
    its.clear()
    pr = cProfile.Profile(); pr.enable()
    r = integrate_bini(system, k=k, z0=res.z, lam=lam, z_prior=res.z, max_iter=16, tol=1e-3, cg_rtol=1e-3, solver="amg", hierarchy=copy.copy(hier), bias=bias)
    pr.disable()
    print("pcg its", its)
    pstats.Stats(pr).sort_stats("cumtime").print_stats(25)
