"""Stage II solver and tolerance vs DiLiGenT MADE and time (fnin, fnin-s): python benchmarks/stage2_tolerance.py"""
import time, numpy as np, torch
from fnin_cli.pipeline import load_input
from fnin_cli import fnin as F
from fnin_cli.wls import NormalSystem
torch.set_num_threads(1)
m=F.load_model(None,'cpu')
objs=['bear','buddha','cat','cow','goblet','harvest','pot1','pot2','reading']
agg={}
for o in objs:
    inp=load_input(f'../shared/data/diligent/{o}'); mk=inp.mask
    gt=np.load(f'../shared/data/diligent/{o}/depth_gt.npz')['depth_gt'][mk]
    s=NormalSystem(inp.normals,mk,inp.camera); z,om=F.stage1(m,inp,'cpu',128); zr=z[mk]
    for meth in ('fnin','fnin-s'):
        for solver in ('amg','amg-rs','jacobi'):
            for rtol in (1e-3,1e-4,1e-6):
                t=time.perf_counter(); zz,_=F.stage2(s,zr,om,meth,lam=1e-3,solver=solver,rtol=rtol); dt=time.perf_counter()-t
                d=np.exp(zz-zz.mean()); sc=np.nanmedian(gt/d); made=np.nanmean(np.abs(sc*d-gt))
                a=agg.setdefault((meth,solver,rtol),[0,0]); a[0]+=made/9; a[1]+=dt
for k,v in agg.items(): print(k, round(v[0],4), round(v[1],3))
