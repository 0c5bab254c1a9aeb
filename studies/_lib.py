"""What the studies share, imported explicitly by each study script::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # studies/
    from _lib import object_error

- the per-object error of rendered scenes (:func:`object_error`, :func:`object_errors`)
  and the validation meshes (:func:`validation_meshes`), the measures of every rule on
  ``data.mesh_scenes`` renders (studies/default-rounds/README.md);
- :func:`variant`: a candidate configuration, ``DEFAULT`` with some fields replaced;
- the candidate-against-today command line, scenes and summary (:func:`parse_args`,
  :func:`scene_pair`, :func:`scene_sets`, :func:`summarise`, :func:`report`), used by
  studies/sliver-gate, studies/rounds-edge-prior and studies/rounds-k;
- the default's errors and seconds with a rounds candidate, its bounds and choice
  (:func:`evaluate_default`, :func:`passes_default`, :func:`choose_default`;
  studies/rounds-edge-prior/README.md), used there and by studies/rounds-k;
- the one-shot / default / procedural evaluation of a weights or Stage II candidate and
  its bounds (:func:`evaluate`, :func:`passes`; studies/edge-sharpness/README.md), used
  by studies/edge-net/edge_candidate.py and studies/sliver-gate;
- the default against rounds candidates on sets of bench cases, one process, rotated
  order (:func:`measure_rounds`, with :func:`run_rounds_case` and :func:`summarise_sets`),
  used by studies/rebuild-at-scale and studies/rebuild-every-round.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from fnin_cli.bench.cases import align_and_errors, align_objects
from fnin_cli.data.mesh_scenes import (DEFAULT_MESH_DIR, is_validation, load_meshes, make_mesh_scene, mesh_files,
                                       split_names)
from fnin_cli.data.synthetic import make_scene, relative_error
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.resources import limit_threads
from fnin_cli.config import DEFAULT, IntegrationConfig

MIN_OBJECT_PIXELS = 200
KEYS = ("default_meshes", "default_procedural", "seconds_meshes", "seconds_procedural")

def variant(solver: dict | None = None, one_shot: dict | None = None, rounds: dict | None = None,
            base: IntegrationConfig = DEFAULT) -> IntegrationConfig:
    """A candidate configuration: ``base`` (the shipped ``DEFAULT``) with the given fields
    of its parts replaced, e.g. ``variant(rounds={"k": 3.0})``. Studies pass it to
    ``integrate(..., config=...)``; none assigns a module global."""
    return replace(base, solver=replace(base.solver, **(solver or {})),
                   one_shot=replace(base.one_shot, **(one_shot or {})),
                   rounds=replace(base.rounds, **(rounds or {})))


def validation_meshes(folder) -> dict:
    """The validation meshes of ``folder``, loaded (the training meshes are not read)."""
    return load_meshes(folder, split_names(mesh_files(folder))[1])


def object_error(z_img, sc, perspective: bool) -> float:
    """Mean over objects of the aligned MADE over the object's depth spread."""
    return float(np.mean(object_errors(z_img, sc, perspective)))


def object_errors(z_img, sc, perspective: bool) -> list:
    """Per object of at least MIN_OBJECT_PIXELS pixels: the aligned MADE over the object's
    depth spread."""
    est = np.exp(z_img) if perspective else z_img
    errs = []
    for o in np.unique(sc.object_id[sc.mask]):
        m = sc.mask & (sc.object_id == o)
        if m.sum() < MIN_OBJECT_PIXELS:
            continue
        gt = np.where(m, sc.depth, np.nan)
        made = align_and_errors(np.where(m, est, np.nan), gt, m, perspective)["made"]
        g = sc.depth[m]
        errs.append(made / max(float(np.mean(np.abs(g - np.median(g)))), 1e-12))
    return errs


def parse_args(description: str, out: str, scenes: int = 48, size: int = 384, dev: bool = True,
               seed0: int | None = None):
    """``--meshes``, ``--scenes``, ``--size``, ``--out``; with ``dev``, ``--dev SEED`` (a
    development look on the training meshes: no choice); with ``seed0``, ``--seed0``
    (default ``seed0``) and ``--width`` (default ``--size``) for a rule's fresh scenes."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--meshes", default=str(DEFAULT_MESH_DIR))
    ap.add_argument("--scenes", type=int, default=scenes)
    ap.add_argument("--size", type=int, default=size)
    ap.add_argument("--out", default=out)
    if dev:
        ap.add_argument("--dev", type=int, default=None, help="first seed of a development look on training meshes")
    if seed0 is not None:
        ap.add_argument("--seed0", type=int, default=seed0, help="first scene's seed")
        ap.add_argument("--width", type=int, default=None, help="scene width (default: --size)")
    return ap.parse_args()


def scene_pair(i: int, meshes, size: int, mesh_seed0: int, proc_seed0: int) -> tuple:
    """Scene ``i`` of a rule's two sets: (mesh scene, its Input, procedural scene, its Input)."""
    sc = make_mesh_scene(mesh_seed0 + i, meshes, size)
    ps = make_scene(proc_seed0 + i, size, stack_prob=0.3, fold_prob=0.5)
    return sc, build_input(sc.normals, None, sc.mask, sc.K), ps, build_input(ps.normals, None, ps.mask, ps.K)


def scene_sets(a, mesh_seed0: int, proc_seed0: int) -> tuple:
    """((mesh seed0, procedural seed0), meshes): the rule's fresh seeds and the validation
    meshes, or with ``--dev`` that seed for both and the training meshes."""
    if a.dev is None:
        return (mesh_seed0, proc_seed0), validation_meshes(a.meshes)
    return (a.dev, a.dev), {k: v for k, v in load_meshes(a.meshes).items() if not is_validation(k)}


def summarise(rec: dict, key: str) -> dict:
    """Per configuration the mean of each recorded list; for each one but "off", its
    ratios to "off" and on how many scenes it is better / worse than "off" on ``key``."""
    summary = {n: {k: float(np.mean(v)) for k, v in r.items()} for n, r in rec.items()}
    off = dict(summary["off"])
    for n in rec:
        if n == "off":
            continue
        s = summary[n]
        s["ratios"] = {k: s[k] / off[k] for k in off}
        pairs = list(zip(rec[n][key], rec["off"][key]))
        s[f"better_worse_{key}"] = [int(sum(c < t - 1e-4 for c, t in pairs)), int(sum(c > t + 1e-4 for c, t in pairs))]
    return summary


def report(a, seeds, rec: dict, summary: dict, apply_rule) -> None:
    """Apply the rule (not on a ``--dev`` look), write the JSON to ``a.out`` and print the summary."""
    chosen = apply_rule(summary) if a.dev is None else "development look: no choice"
    with open(a.out, "w") as fh:
        json.dump({"seeds": list(seeds), "per_scene": rec, "summary": summary, "adopted": chosen}, fh, indent=1)
    print(json.dumps(summary, indent=1), "adopted:", chosen)




def evaluate(configs: dict, meshes, scenes: int, size: int, mesh_seed0: int, proc_seed0: int) -> dict:
    """Per-scene errors of each configuration (name -> (IntegrationConfig, model or
    None: the bundled one)): the one-shot and the default on validation-mesh scenes, the
    one-shot on procedural ones, configurations interleaved per scene; "seconds": the
    three runs' ``integrate`` time per scene (one thread)."""
    keys = ("oneshot_meshes", "default_meshes", "oneshot_procedural", "seconds")
    rec = {name: {k: [] for k in keys} for name in configs}
    with limit_threads(1):
        for i in range(scenes):
            sc, inp, ps, pinp = scene_pair(i, meshes, size, mesh_seed0, proc_seed0)
            persp = sc.K is not None
            for name, (config, model) in configs.items():
                r = rec[name]
                t0 = time.perf_counter()
                one = integrate(inp, refine=0, model=model, config=config).z
                default = integrate(inp, model=model, config=config).z
                proc = integrate(pinp, refine=0, model=model, config=config).z
                r["seconds"].append(time.perf_counter() - t0)
                r["oneshot_meshes"].append(object_error(one, sc, persp))
                r["default_meshes"].append(object_error(default, sc, persp))
                r["oneshot_procedural"].append(relative_error(proc[pinp.mask], ps.unknown[pinp.mask]))
            print(i, {n: tuple(round(v[-1], 4) for v in rec[n].values()) for n in configs}, flush=True)
    return rec


def passes(candidate: dict, today: dict) -> bool:
    """The rule's bounds (mean errors): one-shot on meshes <= 0.95x, one-shot procedural
    <= 1.02x, default on meshes <= 1.01x today's."""
    return (candidate["oneshot_meshes"] <= 0.95 * today["oneshot_meshes"]
            and candidate["oneshot_procedural"] <= 1.02 * today["oneshot_procedural"]
            and candidate["default_meshes"] <= 1.01 * today["default_meshes"])


def evaluate_default(configs: dict, meshes, scenes: int, size: int, mesh_seed0: int, proc_seed0: int) -> dict:
    """Per-scene errors and seconds of the default with each configuration (name ->
    IntegrationConfig; today's is "off"), in a rotated order per scene."""
    names = list(configs)
    rec = {name: {k: [] for k in KEYS} for name in names}
    with limit_threads(1):
        for i in range(scenes):
            sc, inp, ps, pinp = scene_pair(i, meshes, size, mesh_seed0, proc_seed0)
            order = names[i % len(names):] + names[:i % len(names)]
            for name in order:
                r = rec[name]
                t0 = time.perf_counter()
                z = integrate(inp, config=configs[name]).z
                t1 = time.perf_counter()
                zp = integrate(pinp, config=configs[name]).z
                t2 = time.perf_counter()
                r["seconds_meshes"].append(t1 - t0)
                r["seconds_procedural"].append(t2 - t1)
                r["default_meshes"].append(object_error(z, sc, sc.K is not None))
                r["default_procedural"].append(relative_error(zp[pinp.mask], ps.unknown[pinp.mask]))
            print(i, {n: tuple(round(rec[n][k][-1], 4) for k in KEYS[:2]) for n in names}, flush=True)
    return rec


def passes_default(candidate: dict, today: dict, mesh_bound: float = 0.97) -> bool:
    """The rule's bounds (means over the scenes): the default on the mesh scenes <=
    ``mesh_bound`` x today's, on the procedural ones no worse, seconds of each set <=
    1.05x today's."""
    return (candidate["default_meshes"] <= mesh_bound * today["default_meshes"]
            and candidate["default_procedural"] <= today["default_procedural"]
            and candidate["seconds_meshes"] <= 1.05 * today["seconds_meshes"]
            and candidate["seconds_procedural"] <= 1.05 * today["seconds_procedural"])


def choose_default(summary: dict, candidates: tuple, mesh_bound: float = 0.97):
    """The adopted value: the lowest mesh error among the candidates that pass (None: none
    passes, today's stays)."""
    ok = [c for c in candidates if passes_default(summary[str(c)], summary["off"], mesh_bound)]
    return min(ok, key=lambda c: summary[str(c)]["default_meshes"]) if ok else None


def run_rounds_case(case, order: list, candidates: dict, depth_hash: bool = False) -> dict:
    """The default with each rounds candidate (``{name: RoundsConfig fields}``) on one bench
    case (``case.load()``, optional ``case.object_ids()``), run in ``order`` in this
    process: per name the bench's error (objects aligned one by one where the case has
    them), the whole call's seconds, the rounds' seconds and count, and with
    ``depth_hash`` the depth's SHA-1 (bitwise the same depth: the same work)."""
    inp, gt = case.load()
    object_id, objs = case.object_ids() if hasattr(case, "object_ids") else (None, None)
    out = {}
    for name in order:
        cfg = variant(rounds=candidates[name])
        t = time.perf_counter()
        res = integrate(inp, "fnin", config=cfg)
        sec = time.perf_counter() - t
        if object_id is not None:
            err = align_objects(res.depth, gt, res.mask, object_id, inp.camera.perspective, objs)
        else:
            err = align_and_errors(res.depth, gt, res.mask, inp.camera.perspective)
        out[name] = {"made_mm": err["made"], "seconds": sec, "refine": res.seconds.get("refine", 0.0),
                     "rounds": res.rounds}
        if depth_hash:
            out[name]["depth_sha"] = hashlib.sha1(res.depth.tobytes()).hexdigest()
        print(f"  {case.name:45s} {name:6s} {err['made']:.4f} mm {sec:7.2f} s (rounds {res.seconds.get('refine', 0):.2f} s, {res.rounds})",
              flush=True)
    return out


def summarise_sets(sets: dict, names: list) -> dict:
    """Per set and candidate: mean error, its ratio to the first name's (today), the worst
    case's ratio, the summed seconds and their ratio; where the cases carry depth hashes,
    on how many the candidate's depth is today's and the seconds counting today's there
    (``seconds_rule``: identical work is not judged by the machine's noise). Printed too."""
    summary = {}
    today = names[0]
    for s, cs in sets.items():
        today_e = sum(c[today]["made_mm"] for c in cs.values()) / len(cs)
        today_s = sum(c[today]["seconds"] for c in cs.values())
        summary[s] = {}
        for n in names:
            e = sum(c[n]["made_mm"] for c in cs.values()) / len(cs)
            sec = sum(c[n]["seconds"] for c in cs.values())
            worst = max(c[n]["made_mm"] / c[today]["made_mm"] for c in cs.values())
            row = {"mean_mm": e, "mean_ratio": e / today_e, "worst_ratio": worst,
                   "seconds": sec, "seconds_ratio": sec / today_s}
            line = f"{s:10s} {n:6s} mean {e:.4f} ({e / today_e:.4f}x) worst {worst:.3f}x  seconds {sec:.1f} ({sec / today_s:.3f}x)"
            if all("depth_sha" in c[n] for c in cs.values()):
                same = [k for k, c in cs.items() if c[n]["depth_sha"] == c[today]["depth_sha"]]
                sec_rule = sum(c[today if k in same else n]["seconds"] for k, c in cs.items())
                row.update(same_as_today=len(same), seconds_rule=sec_rule, seconds_rule_ratio=sec_rule / today_s)
                line += f"  same as today {len(same)}/{len(cs)}, rule seconds {sec_rule / today_s:.3f}x"
            summary[s][n] = row
            print(line)
    return summary


def measure_rounds(cases, candidates: dict, default_sets: str, large=(), warm_case=None,
                   depth_hash: bool = False) -> None:
    """A rounds study's command line (``--sets``, ``--out``, ``--candidates`` JSON): for each
    set, ``cases(set_name, tmp_dir)``'s cases with every candidate (the first is today's)
    in a rotated order, one process, one thread; the sets in ``large`` in two passes, the
    second in the reverse order, seconds summed. ``warm_case``: run the default once on it
    first, untimed (the process's warm-up). Writes the record after every case, then the
    summary (:func:`summarise_sets`)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=default_sets)
    ap.add_argument("--out", required=True)
    ap.add_argument("--candidates", default=None, help="JSON {name: RoundsConfig fields}, the first today's")
    a = ap.parse_args()
    candidates = candidates if a.candidates is None else json.loads(a.candidates)
    names = list(candidates)
    rec = {"candidates": candidates, "sets": {}}
    rot = 0
    with limit_threads(1), tempfile.TemporaryDirectory() as tmp:
        if warm_case is not None:
            integrate(warm_case().load()[0], "fnin")
        for s in a.sets.split(","):
            rec["sets"][s] = {}
            for case in cases(s, Path(tmp)):
                order = names[rot % len(names):] + names[:rot % len(names)]
                rot += 1
                passes = [order, order[::-1]] if s in large else [order]
                runs = [run_rounds_case(case, o, candidates, depth_hash) for o in passes]
                if len(runs) == 1:
                    rec["sets"][s][case.name] = runs[0]
                else:
                    rec["sets"][s][case.name] = {n: {**runs[0][n], "seconds": sum(r[n]["seconds"] for r in runs),
                                                     "passes": [r[n] for r in runs]} for n in names}
                Path(a.out).write_text(json.dumps(rec, indent=1))
    rec["summary"] = summarise_sets(rec["sets"], names)
    Path(a.out).write_text(json.dumps(rec, indent=1))


def integrate_composed(inp, config=None, rounds_rule=None, rounds_terms=None, **kw):
    """:func:`fnin_cli.pipeline.integrate` composed from the package's public halves
    (``run_method``, ``prepare_rounds``, the rounds' objective, ``finish``), with a study's
    changes to the rounds' objective: ``rounds_rule(system, rule) -> rule`` (the weight rule,
    e.g. other logits or k) and ``rounds_terms(run, start) -> tuple of Term`` (data terms added
    after the run's own). With neither it runs exactly the shipped default
    (tests/test_studies_lib.py). Studies that used the stop and adjust hooks the rounds had
    until f7c0095 (studies/trust-rounds) ran at that commit."""
    from dataclasses import replace as _replace

    from fnin_cli.config import DEFAULT
    from fnin_cli.pipeline import finish, prepare_rounds, run_method, with_overrides
    from fnin_cli.prior import as_prior
    from fnin_cli.resources import kept_heap
    from fnin_cli.scale import check_scale
    from fnin_cli.solvers.rounds import rounds_objective, solve_rounds

    mean_depth, depth_at = kw.pop("mean_depth", None), kw.pop("depth_at", None)
    overrides = {k: kw.pop(k) for k in ("bini_k", "lam", "network_side") if k in kw}
    prior = as_prior(kw.pop("depth_prior", None), inp)
    check_scale(inp, mean_depth, depth_at, prior)
    run = run_method(inp, config=with_overrides(DEFAULT if config is None else config, **overrides), prior=prior,
                     **kw)
    ready = None
    if run.rounds.max_rounds:
        run, ready = prepare_rounds(run)
    with kept_heap():
        rounds = None
        if ready is not None:
            start, terms, notes = ready
            objective = rounds_objective(run.system, run.out.edge_p, terms, run.config)
            if rounds_rule is not None:
                objective = _replace(objective, rule=rounds_rule(run.system, objective.rule))
            if rounds_terms is not None:
                objective = objective.plus(*rounds_terms(run, start))
            rounds = solve_rounds(objective, start, run.config, run.rounds, run.out.backend, run.hierarchy,
                                  kw.get("progress"))
            rounds.notes[:0] = notes
            run.release_hierarchy()
        return finish(inp, run, rounds, mean_depth, depth_at)
