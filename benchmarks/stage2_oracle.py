"""Oracle ablation on synthetic validation scenes: Stage II with the true discontinuity map
and/or the true depth as prior, vs the network's. Shows which Stage I output limits FNIN.

    python benchmarks/stage2_oracle.py
"""
import numpy as np, torch
from fnin_cli import fnin as F
from fnin_cli.pipeline import build_input, classic_lambda
from fnin_cli.synthetic import make_scene, relative_error
from fnin_cli.train import VAL_SEED0
from fnin_cli.wls import NormalSystem, DIRECTIONS
torch.set_num_threads(1)
m=F.load_model(None,'cpu')
R={}
for i in range(12):
    sc=make_scene(VAL_SEED0+5000+i,128); inp=build_input(sc.normals,None,sc.mask,sc.K); mk=inp.mask; gt=sc.unknown[mk]
    s=NormalSystem(inp.normals,mk,inp.camera); lam=classic_lambda(inp.camera,inp.shape)
    z,om=F.stage1(m,inp,'cpu',128); zr=z[mk]
    sc_clean=NormalSystem(np.nan_to_num(sc.clean_normals),mk,inp.camera)
    res=sc_clean.residuals(gt); disc=np.zeros(s.n,bool)
    for d in DIRECTIONS: disc|=np.abs(res[d])>0.5
    omt=s.to_image(disc.astype(float),fill=0.0)
    for name,(w,prior) in {'wls':(None,zr),'net-omega':(F.attention_weights(s,om),zr),'true-omega+netzR':(F.attention_weights(s,omt),zr),'true-omega+gtzR':(F.attention_weights(s,omt),gt)}.items():
        for lm in (1,1e6):
            zz,_=s.solve(w,lam=lam*lm,z_prior=prior,x0=prior,method='amg',rtol=1e-3)
            R.setdefault((name,lm),[]).append(relative_error(zz,gt))
for k,v in R.items(): print(k, round(np.mean(v),4), round(np.median(v),4))
