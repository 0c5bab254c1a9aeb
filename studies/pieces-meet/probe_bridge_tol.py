import sys, numpy as np
sys.path.insert(0, "studies/pieces-meet")
from bridge import bridge_shift
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases, align_and_errors
from fnin_cli.pipeline import run_method
from fnin_cli.solvers.pieces import cut_pieces
with threadpool_limits(1):
    import torch; torch.set_num_threads(1)
    for src, name in (("synthetic", "persp-15"), ("synthetic", "persp-09"), ("samples", "dome"), ("samples", "flutes")):
        _, cases = resolve_cases(src)
        case = [c for c in cases if c.name == name][0]
        inp, gt = case.load()
        run = run_method(inp, "fnin")
        s, z, w = run.system, run.out.z, run.out.weights
        zg = s.at_pixels(np.log(gt) if inp.camera.perspective else gt)
        labels, sizes, _ = cut_pieces(s, w)
        main = labels == 0
        for k in range(1, len(sizes)):
            if sizes[k] < 50: break
            want = np.median((z - zg)[main]) - np.median((z - zg)[labels == k])
            out = []
            for tol in (1.0, 0.3, 0.1, 0.03):
                sh, ag, now = bridge_shift(s, z, labels, k, tol)
                out.append(f"tol {tol}: shift {sh:+.4f} agree {ag} now {now}")
            print(name, k, sizes[k], f"GT shift {want:+.4f}", " | ".join(out), flush=True)
