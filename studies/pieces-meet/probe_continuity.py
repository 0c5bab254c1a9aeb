"""Probe: each loose piece of Stage II's weights (cut all round, >= 50 px) placed by least
squares over its whole boundary with both rows weighted alike (the least-committal,
"no jump on average" placement) against the ground-truth shift; and, after that shift, how
many of its boundary edges lie beyond both normals' predictions on each side (a jump that
changes sign along the boundary: the surfaces cross there)."""
import sys
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))
from figure import outline  # noqa: E402
from probe_midpoint import edge_rows, midpoint_shift  # noqa: E402
from threadpoolctl import threadpool_limits
from fnin_cli.bench.cases import resolve_cases
from fnin_cli.pipeline import run_method
from fnin_cli.solvers.pieces import cut_pieces
from fnin_cli.solvers.placement import jump_sides

with threadpool_limits(1):
    import torch
    torch.set_num_threads(1)
    for arg in sys.argv[1:]:
        src, name = arg.split("/")
        kw = {"data": "/work/shared/data/diligent"} if src == "diligent" else {}
        _, cases = resolve_cases(src, **kw)
        case = [c for c in cases if c.name == name][0]
        inp, gt = case.load()
        run = run_method(inp, "fnin")
        s, z, w = run.system, run.out.z, run.out.weights
        zg = s.at_pixels(np.log(gt) if inp.camera.perspective else gt)
        ok = np.isfinite(zg)
        labels, sizes, _ = cut_pieces(s, w)
        edge = outline(s)
        for k in range(1, len(sizes)):
            if sizes[k] < 50:
                break
            want = np.median((z - zg)[(labels == 0) & ok]) - np.median((z - zg)[(labels == k) & ok])
            use = np.ones(len(edge_rows(s, z, labels, k)[2]), bool)
            ls = midpoint_shift(s, z, labels, k, use)
            zz = z.copy(); zz[labels == k] += ls
            f, b = jump_sides(s, zz, labels, k)
            f0, b0 = jump_sides(s, z, labels, k)
            print(f"{name} piece {k} ({sizes[k]} px, outline {edge[labels == k].any()}): GT {want:+.4f} LS {ls:+.4f}; "
                  f"front/behind now {f0}/{b0}, after LS {f}/{b}", flush=True)
