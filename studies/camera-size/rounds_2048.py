"""The default's error on the 2048x1536 folder of compare_whole_call.py by the number of
rounds (at most 8 = today's default, at most 16, exactly 1/4/12/16) and the one-shot, one
process, one thread (a look, no choice).

    PYTHONPATH=$PWD python studies/camera-size/rounds_2048.py 2048x1536 > studies/camera-size/rounds_2048x1536.txt
"""
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks")); sys.path.insert(0, str(ROOT / "studies"))
from large_load import render_view, MESHES
from _lib import variant
import fnin_cli
from fnin_cli.bench.cases import align_objects
from fnin_cli.resources import limit_threads
w, h = (int(v) for v in sys.argv[1].split("x"))
with tempfile.TemporaryDirectory() as tmp, limit_threads(1):
    r = render_view(Path(tmp) / "c", h, w, str(ROOT.parent / "shared" / "data" / "meshes"))
    inp = fnin_cli.load_input(Path(tmp) / "c")
    for name, cand in [("8", {}), ("16", {"max_rounds": 16}), ("fixed1", {"max_rounds": 1, "tol": 0.0}), ("fixed4", {"max_rounds": 4, "tol": 0.0}), ("fixed12", {"max_rounds": 12, "tol": 0.0}), ("fixed16", {"max_rounds": 16, "tol": 0.0})]:
        t = time.perf_counter(); res = fnin_cli.integrate(inp, config=variant(rounds=cand)); sec = time.perf_counter() - t
        e = align_objects(res.depth, r.depth, r.mask, r.object_id, True, names=list(MESHES))
        print(name, res.rounds, round(sec, 2), round(e["made"], 4), {k: round(v["made_mm"], 4) for k, v in e["objects"].items()}, flush=True)
    res = fnin_cli.integrate(inp, refine=0)
    e = align_objects(res.depth, r.depth, r.mask, r.object_id, True, names=list(MESHES))
    print("oneshot", round(e["made"], 4), {k: round(v["made_mm"], 4) for k, v in e["objects"].items()})
