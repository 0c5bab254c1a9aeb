"""Re-attaching pieces the one-shot's weights cut loose: a development look
(docs/decisions.md#piece-reattach; not a choice, nothing of it is in the package).

After the one-shot, the pixels are split into pieces by the edges whose two weights sum
below ``tau``; a piece next to a placed one (the largest first) is shifted by the densest
cluster (width 2 ``eps`` typical neighbour steps) of the continuity mismatches along their
common cut edges, if at least ``min_support`` of those edges (and ``min_count``) agree.
On scenes rendered from the *training* meshes, it prints the one-shot's and the default's
(8 rounds from that start) per-object error with and without it, against bini's::

    python studies/piece-reattach/piece_reattach.py 777008 16 384 '{"a": {}, "t5": {"tau": 0.5}}'
"""

from __future__ import annotations

import json
import sys

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components

from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, is_validation, load_meshes, make_mesh_scene
from fnin_cli.model.weights import load_model
from fnin_cli.pipeline import build_input, classic_lambda, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import integrate_bini
from fnin_cli.solvers.fnin import run_fnin
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.system import NormalSystem

from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_error  # noqa: E402

def edges(system):
    """All neighbour pairs (p, q) and whether each is vertical."""
    p = np.concatenate([system.hp, system.vp]); q = np.concatenate([system.hq, system.vq])
    ax = np.concatenate([np.zeros(system.hp.size, bool), np.ones(system.vp.size, bool)])
    return p, q, ax


def reattach(system, z, weights, tau=0.2, eps=2.0, min_support=0.25, min_count=8, min_piece=50, verbose=False):
    """``z`` with the pieces cut loose by ``weights`` shifted to continue their placed
    neighbours where enough of their common edges agree; returns (z, the shifts made)."""
    p, q, ax = edges(system)
    ap = np.where(ax, system.a_v[p], system.a_u[p]); aq = np.where(ax, system.a_v[q], system.a_u[q])
    np_ = np.where(ax, system.ny[p], system.nx[p]); nq = np.where(ax, system.ny[q], system.nx[q])
    wp = np.where(ax, weights["v+"][p], weights["u+"][p]); wq = np.where(ax, weights["v-"][q], weights["u-"][q])
    strength = wp + wq
    pred = -(ap * np_ + aq * nq) / np.maximum(ap * ap + aq * aq, 1e-30)
    keep = strength >= tau
    n = system.n
    G = sp.coo_matrix((np.ones(keep.sum()), (p[keep], q[keep])), shape=(n, n))
    ncomp, lab = connected_components(G, directed=False)
    size = np.bincount(lab, minlength=ncomp)
    step = np.median(np.abs(pred))          # a typical continuity step between neighbours
    tol = eps * max(step, 1e-12)
    cut = ~keep
    la, lb = lab[p[cut]], lab[q[cut]]
    cross = la != lb
    la, lb = la[cross], lb[cross]
    pc, qc, predc = p[cut][cross], q[cut][cross], pred[cut][cross]
    big = (size[la] >= min_piece) & (size[lb] >= min_piece)
    la, lb, pc, qc, predc = la[big], lb[big], pc[big], qc[big], predc[big]
    z = z.copy()
    placed = np.zeros(ncomp, bool)
    root = int(np.argmax(size)); placed[root] = True
    shifts = []
    while True:
        # boundary edges between a placed and an unplaced piece
        sel = placed[la] ^ placed[lb]
        if not sel.any():
            break
        best = None
        B = np.where(placed[la[sel]], lb[sel], la[sel])          # the unplaced side's piece
        # offset of B relative to A: (z_q - z_p - pred) oriented so that positive means B too high
        d = z[qc[sel]] - z[pc[sel]] - predc[sel]
        d = np.where(placed[la[sel]], d, -d)      # p in A: B = q side
        for b in np.unique(B):
            m = B == b
            db = np.sort(d[m])
            # the densest window of width 2 tol
            j = np.searchsorted(db, db + 2 * tol, side="right")
            cnt = j - np.arange(db.size)
            i = int(np.argmax(cnt))
            c = int(cnt[i])
            mode = float(np.median(db[i:j[i]]))
            frac = c / db.size
            if c >= min_count and frac >= min_support and (best is None or c > best[1]):
                best = (b, c, mode, frac, db.size)
        if best is None:
            break
        b, c, mode, frac, tot = best
        z[lab == b] -= mode
        placed[b] = True
        shifts.append((int(size[b]), c, tot, round(frac, 2), mode / tol))
    if verbose:
        print("pieces", ncomp, "big", int((size >= min_piece).sum()), "shifts", shifts)
    return z, shifts


def main():
    seed0 = int(sys.argv[1]); N = int(sys.argv[2]); size = int(sys.argv[3])
    sets = json.loads(sys.argv[4])
    torch.set_num_threads(1)
    meshes = {k: v for k, v in load_meshes(DEFAULT_MESH_DIR).items() if not is_validation(k)}
    model = load_model(device="cpu")
    res = {name: {"one": [], "dflt": []} for name in ["base"] + list(sets)}
    binis = []
    with limit_threads(1):
        for i in range(N):
            sc = make_mesh_scene(seed0 + i, meshes, size)
            inp = build_input(sc.normals, None, sc.mask, sc.K)
            persp = sc.K is not None
            system = NormalSystem(inp.normals, inp.mask, inp.camera)
            lam = classic_lambda(inp.camera, inp.shape)
            z1, w, *_ = run_fnin(system, inp, model=model, lam=lam)
            e = lambda z: object_error(system.to_image(z), sc, persp)
            def rounds(z0):
                return integrate_bini(system, k=2.0, z0=z0, lam=lam, z_prior=z0, max_iter=8, tol=1e-3, cg_rtol=1e-3,
                                      solver="amg", hierarchy=AMGCache(refresh_every=3)).z
            d1 = e(rounds(z1))
            res["base"]["one"].append(e(z1)); res["base"]["dflt"].append(d1)
            line = [f"{i:2d} base {e(z1):.4f}/{d1:.4f}"]
            for name, prm in sets.items():
                z2, shifts = reattach(system, z1, w, **prm)
                o = e(z2); d = e(rounds(z2)) if shifts else d1
                res[name]["one"].append(o); res[name]["dflt"].append(d)
                line.append(f"{name} {o:.4f}/{d:.4f} n{len(shifts)}")
            b = object_error(integrate(inp, "bini").z, sc, persp)
            binis.append(b)
            print("  ".join(line), f"bini {b:.4f}", flush=True)
    bm = np.mean(binis)
    for name, r in res.items():
        print(f"{name:10s} one {np.mean(r['one'])/bm:.3f}x  default {np.mean(r['dflt'])/bm:.3f}x  "
              f"wins-one {sum(a < b - 1e-6 for a, b in zip(r['one'], res['base']['one']))} "
              f"losses-one {sum(a > b + 1e-6 for a, b in zip(r['one'], res['base']['one']))} "
              f"wins-dflt {sum(a < b - 1e-6 for a, b in zip(r['dflt'], res['base']['dflt']))} "
              f"losses-dflt {sum(a > b + 1e-6 for a, b in zip(r['dflt'], res['base']['dflt']))}")


if __name__ == "__main__":
    main()
