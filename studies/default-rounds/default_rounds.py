"""Choose fnin's default rounds (docs/decisions.md#default-rounds).

Runs FNIN and then 24 BiNI rounds exactly as ``pipeline.integrate`` runs them (Stage II
before rounds, the shared AMG hierarchy, the edge-net prior and its k) on fresh scenes rendered from the validation
meshes, records each round's per-object error and time, and ``bini`` beside it; then
applies the rule written down before the measurement. Usage::

    python studies/default-rounds/default_rounds.py [--meshes DIR] [--scenes 16] [--size 384] [--width W] [--out results.json] [--seed0 N] [--cost scene-mean|sum]
    python studies/default-rounds/default_rounds.py --records results.json --cost sum   # the rule on recorded trajectories
    python studies/default-rounds/default_rounds.py --compare-stage2   # docs/decisions.md#stage2-before-rounds
    python studies/default-rounds/default_rounds.py --compare-refine-rtol   # docs/decisions.md#refine-rtol
    python studies/default-rounds/default_rounds.py --compare-refresh   # docs/decisions.md#refresh-every
    python studies/default-rounds/default_rounds.py --compare-rebuild   # docs/decisions.md#rounds-rebuild
    python studies/default-rounds/default_rounds.py --compare-refresh-never   # docs/decisions.md#refresh-every
    python studies/default-rounds/default_rounds.py --check   # before measuring: the trajectory is integrate's, the rule's cost per scene
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from fnin_cli.config import DEFAULT, IntegrationConfig
from fnin_cli.data.mesh_scenes import DEFAULT_MESH_DIR, make_mesh_scene
from fnin_cli.pipeline import build_input, classic_lambda, integrate, rounds_prior
from fnin_cli.resources import limit_threads
from fnin_cli.solvers.bini import bini_weights, integrate_bini
from fnin_cli.solvers.fnin import run_fnin
from fnin_cli.solvers.linear import AMGCache
from fnin_cli.solvers.pieces import reattach_slivers
from fnin_cli.solvers.registry import BY_NAME, DEFAULT_METHOD
from fnin_cli.solvers.system import NormalSystem
from fnin_cli.train.config import VAL_SEED0

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/: the shared _lib
from _lib import object_error, validation_meshes, variant  # noqa: E402

MAX_ROUNDS = (0, 2, 4, 6, 8, 12, 16, 24)
TOLS = (0.0, 1e-3, 1e-2)
SEED0 = VAL_SEED0 + 500_000


def trajectory(sc, rounds: int, config: IntegrationConfig = DEFAULT):
    """(one-shot seconds, [(cumulative round seconds, energy change, error, fixed point)],
    bini (seconds, error)).

    The network and Stage II as ``pipeline.integrate`` runs them with ``config`` when
    rounds follow (Stage II to ``config.rounds.stage2_rtol``, its AMG hierarchy kept for
    the rounds), then ``solvers.bini.integrate_bini`` with the config's rounds (the
    edge-net prior, its k, the inner tolerance, the refresh and rebuild schedule) and no
    energy tolerance, the error recorded after each round out of the clock (after the
    pipeline's sliver reattachment, which ``integrate`` applies once the rounds end). Where
    the rounds stop at a fixed point (``integrate`` stops there too), that step is marked
    and the later ones repeat it at no cost."""
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    persp = sc.K is not None
    rc = BY_NAME[DEFAULT_METHOD].rounds(config, None)
    t0 = time.perf_counter()
    system = NormalSystem(inp.normals, inp.mask, inp.camera)
    lam = classic_lambda(inp.camera, inp.shape, config.solver.lam)
    cache = AMGCache(rc.refresh_every, rc.rebuild_after)
    shared = rc.stage2_rtol is not None
    z0, *_, p_img = run_fnin(system, inp, config=config, lam=lam, rtol=rc.stage2_rtol if shared else None,
                             hierarchy=cache if shared else None)
    t_one = time.perf_counter() - t0
    steps = [(0.0, np.inf, object_error(system.to_image(z0), sc, persp), False)]
    bias, k = rounds_prior(system, p_img, config)
    clock = {"rounds": 0.0, "since": time.perf_counter()}

    def record(it, energy, z):
        clock["rounds"] += time.perf_counter() - clock["since"]
        if bias is not None and rc.reattach_pixels:   # as integrate ends the rounds
            z, _ = reattach_slivers(system, z, bini_weights(system, z, k, bias=bias),
                                    max_pixels=rc.reattach_pixels)
        steps.append((clock["rounds"], None, object_error(system.to_image(z), sc, persp), False))
        clock["since"] = time.perf_counter()

    r = integrate_bini(system, k=k, z0=z0, lam=lam, z_prior=z0, max_iter=rounds, tol=0.0, cg_rtol=rc.inner_rtol,
                       cg_maxiter=config.solver.maxiter, solver=rc.solver, hierarchy=cache, callback=record, bias=bias)
    fixed = len(r.history) - 1 < r.iterations          # the last round changed nothing
    energies = r.history + [r.history[-1]] * fixed
    steps[1:] = [(t, abs(e0 - e1) / e0 if e0 > 0 else 0.0, err, fixed and i == len(steps) - 1)
                 for i, ((t, _, err, _), e0, e1) in enumerate(zip(steps[1:], energies, energies[1:]), 1)]
    steps += [steps[-1][:3] + (True,)] * (rounds - r.iterations)
    t0 = time.perf_counter()
    rb = integrate(inp, "bini", config=config)
    t_bini = time.perf_counter() - t0
    return t_one, steps, (t_bini, object_error(rb.z, sc, persp))


def apply_rule(records, cost: str = "scene-mean"):
    """Every candidate's (error, seconds) and the chosen one, by the rule.

    ``cost``: "scene-mean", the mean over scenes of each scene's seconds over bini's on
    it (the rule since stop 27: every scene counts once); "sum", summed seconds over
    bini's summed seconds (the earlier rules')."""
    bini_s = sum(r["bini"][0] for r in records)
    table = []
    for n in MAX_ROUNDS:
        for tol in TOLS:
            errs, secs, ratios = [], 0.0, []
            for r in records:
                k = 0
                while k < n:
                    k += 1
                    if r["steps"][k][1] < tol:
                        break
                errs.append(r["steps"][k][2])
                seconds = r["one_shot"] + r["steps"][k][0]
                secs += seconds
                ratios.append(seconds / r["bini"][0])
            table.append({"max_rounds": n, "tol": tol, "error": float(np.mean(errs)), "seconds": secs,
                          "time_vs_bini": secs / bini_s, "scene_time_vs_bini": float(np.mean(ratios))})
    key = {"scene-mean": "scene_time_vs_bini", "sum": "time_vs_bini"}[cost]
    ok = [c for c in table if c[key] <= 0.25]
    best = min(c["error"] for c in ok)
    chosen = min((c for c in ok if c["error"] <= 1.01 * best), key=lambda c: c[key])
    return {"bini": {"error": float(np.mean([r["bini"][1] for r in records])), "seconds": bini_s},
            "cost": cost, "candidates": table, "chosen": chosen}


def check(meshes) -> None:
    """The script's own checks, run before a measurement (they were tests once; tests do
    not import studies): the trajectory follows ``pipeline.integrate``'s rounds (a
    drifted trajectory once chose the rounds on k = 2 where the pipeline ran k = 3), and
    the stop-27 rule's cost is the mean of per-scene ratios, not the ratio of sums."""
    global MAX_ROUNDS, TOLS
    sc = make_mesh_scene(5, meshes, 128, noise=False)   # objects of at least MIN_OBJECT_PIXELS
    # the shipped rounds, and a hierarchy rebuilt after every round that iterated at all
    for config in (DEFAULT, variant(rounds={"rebuild_after": 0})):
        rc = config.rounds
        _, steps, _ = trajectory(sc, rc.max_rounds, config)
        kept = next(i for i in range(1, len(steps)) if steps[i][1] < rc.tol or steps[i][3] or i == rc.max_rounds)
        res = integrate(build_input(sc.normals, None, sc.mask, sc.K), config=config)
        assert res.rounds == kept, (res.rounds, kept)
        err = object_error(res.z, sc, sc.K is not None)
        assert steps[kept][2] == err and err == err, (steps[kept][2], err)   # equal, and not NaN
    # (cumulative round seconds, energy change, error, fixed point): 2 rounds cost 1 s more
    saved, (MAX_ROUNDS, TOLS) = (MAX_ROUNDS, TOLS), ((0, 2), (0.0,))
    try:
        steps = [(0.0, float("inf"), 0.3, False), (0.5, 0.1, 0.25, False), (1.0, 0.1, 0.2, False)]
        records = [{"one_shot": 0.2, "steps": steps, "bini": (2.0, 0.3)},     # 2 rounds: 0.6x here
                   {"one_shot": 0.2, "steps": steps, "bini": (40.0, 0.3)}]    # and 0.03x here
        assert apply_rule(records, "sum")["chosen"]["max_rounds"] == 2             # 0.057x of the sum
        assert apply_rule(records, "scene-mean")["chosen"]["max_rounds"] == 0      # 0.315x per scene: over the cap
    finally:
        MAX_ROUNDS, TOLS = saved
    print("checks passed: the trajectory stops where integrate does, with its error; the cost is per scene")


def compare_default(meshes, scenes: int, size: int, out: str, field: str, candidates: dict, seed0: int = SEED0,
                    refine=None, width: int | None = None):
    """The default with each configuration of ``candidates`` (name -> IntegrationConfig,
    the first today's; ``field`` names what differs, for the record), interleaved per
    scene, same process; the cheapest candidate within 1% of today's mean error and faster
    than it is adopted. ``refine``: as ``integrate``'s (0: the one-shot); scenes ``size``
    high and ``width`` (default ``size``) wide."""
    res = {name: [] for name in candidates}
    for i in range(scenes):
        sc = make_mesh_scene(seed0 + i, meshes, size, width)
        inp = build_input(sc.normals, None, sc.mask, sc.K)
        for name, config in candidates.items():
            t = time.perf_counter()
            r = integrate(inp, refine=refine, config=config)
            res[name].append((object_error(r.z, sc, sc.K is not None), time.perf_counter() - t, r.rounds))
        print(i, {k: tuple(round(x, 4) for x in v[-1]) for k, v in res.items()}, flush=True)
    summary = {k: {"error": float(np.mean([x[0] for x in v])), "seconds": float(sum(x[1] for x in v))}
               for k, v in res.items()}
    today = summary[next(iter(candidates))]
    ok = [k for k in list(candidates)[1:] if summary[k]["error"] <= 1.01 * today["error"]
          and summary[k]["seconds"] < today["seconds"]]
    summary["adopt"] = min(ok, key=lambda k: summary[k]["seconds"]) if ok else None
    with open(out, "w") as fh:
        json.dump({"constant": field, "per_scene": res, **summary}, fh, indent=1)
    print(summary)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=16)
    ap.add_argument("--size", type=int, default=384, help="scene height (and width unless --width)")
    ap.add_argument("--width", type=int, default=None, help="scene width of the rounds rule (default: --size)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed0", type=int, default=SEED0, help="first scene's seed of the rounds rule")
    ap.add_argument("--cost", choices=("scene-mean", "sum"), default="scene-mean",
                    help="the rule's cost against bini: the mean of per-scene ratios, or the ratio of sums "
                         "(the rules before stop 27)")
    ap.add_argument("--records", default=None, help="apply the rule to the records of an earlier --out file")
    ap.add_argument("--compare-stage2", action="store_true")
    ap.add_argument("--compare-refine-rtol", action="store_true")
    ap.add_argument("--compare-refresh", action="store_true")
    ap.add_argument("--compare-rebuild", action="store_true")
    ap.add_argument("--compare-refresh-never", action="store_true")
    ap.add_argument("--check", action="store_true", help="the script's own checks (a small mesh scene), then exit")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    if a.check:   # the training meshes suffice: the check chooses nothing
        from fnin_cli.data.mesh_scenes import load_meshes

        return check(load_meshes(a.meshes))
    meshes = validation_meshes(a.meshes)
    if a.compare_stage2:   # shipped then: None
        with limit_threads(1):
            compare_default(meshes, a.scenes, a.size, a.out or "studies/default-rounds/results/stage2_before_rounds.json",
                            "rounds.stage2_rtol", {"shipped": variant(rounds={"stage2_rtol": None}),
                                                   "candidate": variant(rounds={"stage2_rtol": 1e-3})})
        return
    if a.compare_refine_rtol:
        with limit_threads(1):
            compare_default(meshes, a.scenes, a.size, a.out or "studies/default-rounds/results/refine_rtol.json",
                            "rounds.inner_rtol", {n: variant(rounds={"inner_rtol": float(n)}) for n in ("1e-3", "3e-3", "1e-2")})
        return
    if a.compare_refresh:   # fresh scenes: seeds no earlier choice used
        with limit_threads(1):
            compare_default(meshes, a.scenes, a.size, a.out or "studies/default-rounds/results/refresh_every.json",
                            "rounds.refresh_every", {str(k): variant(rounds={"refresh_every": k}) for k in (1, 2, 3)},
                            seed0=SEED0 + 100_000)
        return
    if a.compare_rebuild:   # fresh scenes at the size of the time targets
        with limit_threads(1):
            compare_default(meshes, a.scenes, a.size, a.out or "studies/default-rounds/results/rounds_rebuild.json",
                            "rounds.rebuild_after", {n: variant(rounds={"rebuild_after": v}) for n, v in
                                                     (("never", None), ("6", 6), ("8", 8))},
                            seed0=a.seed0, width=a.width)
        return
    if a.compare_refresh_never:   # with the rebuilds, at the size of the time targets
        with limit_threads(1):
            compare_default(meshes, a.scenes, a.size, a.out or "studies/default-rounds/results/refresh_never.json",
                            "rounds.refresh_every", {n: variant(rounds={"refresh_every": v}) for n, v in
                                                     (("3", 3), ("never", None))},
                            seed0=a.seed0, width=a.width)
        return
    if a.records:   # the rule again, on recorded trajectories (e.g. --cost sum on an earlier file)
        with open(a.records) as fh:
            summary = apply_rule(json.load(fh)["records"], a.cost)
        print("chosen", summary["chosen"])
        return
    a.out = a.out or "studies/default-rounds/results/default_rounds.json"
    records = []
    with limit_threads(1):
        # untimed warm-up (the model's load and torch's first call), as `fnin bench` does:
        # otherwise the first scene's seconds carry them (docs/decisions.md#default-rounds)
        trajectory(make_mesh_scene(a.seed0, meshes, a.size, a.width), 1)
        for i in range(a.scenes):
            sc = make_mesh_scene(a.seed0 + i, meshes, a.size, a.width)
            t_one, steps, bini = trajectory(sc, max(MAX_ROUNDS))
            records.append({"seed": a.seed0 + i, "one_shot": t_one, "steps": steps, "bini": bini})
            print(i, f"one-shot {steps[0][2]:.4f} ({t_one:.2f} s)", f"24 rounds {steps[-1][2]:.4f} ({steps[-1][0]:.2f} s)",
                  f"bini {bini[1]:.4f} ({bini[0]:.2f} s)", flush=True)
    summary = apply_rule(records, a.cost)
    with open(a.out, "w") as fh:
        json.dump({"records": records, **summary}, fh, indent=1)
    for c in summary["candidates"]:
        print(c)
    print("bini", summary["bini"])
    print("chosen", summary["chosen"])


if __name__ == "__main__":
    main()
