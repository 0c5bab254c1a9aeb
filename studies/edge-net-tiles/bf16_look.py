"""Development look (not a choice): the edge net under torch.autocast(cpu, bfloat16) against float32, on the bench 2048x1536 view; seconds of 3 interleaved runs and the largest/mean |difference| of its probabilities. PYTHONPATH=$PWD python studies/edge-net-tiles/bf16_look.py"""
import time, torch
from fnin_cli.bench.cases import mesh_view_set
from fnin_cli.model.inference import _level_from_input, full_float32
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input
from fnin_cli.resources import limit_threads
name, sc, _ = mesh_view_set("/work/shared/data/meshes")[12]
inp = build_input(sc.normals, mask=sc.mask, K=sc.K, source=name)
with limit_threads(1):
    torch.set_num_threads(1)
    model = load_model(device="cpu")
    with torch.no_grad(), full_float32():
        lv = _level_from_input(inp, torch.device("cpu"))
        z, _ = model.capped(lv, 64, attention=False)
        res = {}
        for rep in range(3):
            for mode in ("fp32", "bf16"):
                t = time.perf_counter()
                if mode == "bf16":
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        p = model.edge_probabilities(z, lv).float()
                else:
                    p = model.edge_probabilities(z, lv)
                res.setdefault(mode, []).append(time.perf_counter() - t)
                if mode == "fp32": ref = p
                else: diff = float((p - ref).abs().max()); mean = float((p - ref).abs()[lv.mask.expand_as(p) > 0].mean())
        print({k: [round(x, 2) for x in v] for k, v in res.items()}, "max diff", diff, "mean diff", mean)
