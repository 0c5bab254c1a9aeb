"""`fnin bench meshes` (renders of a mesh folder's validation meshes, per-object alignment),
bench's `default` key, and `fnin train --meshes` (mesh scenes, the split, the bini teacher).

All on a tiny generated mesh folder (spheres and boxes named after meshes of both sides
of the split) at small sizes, so that they run in seconds on the CPU.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from fnin_cli.bench import runner
from fnin_cli.bench.cases import align_and_errors, align_objects, mesh_cases, mesh_view_set, resolve_cases
from fnin_cli.data import mesh_scenes
from fnin_cli.errors import FninError
from fnin_cli.model.config import NetConfig
from fnin_cli.model.weights import DEFAULT_WEIGHTS
from fnin_cli.pipeline import integrate
from fnin_cli.solvers.registry import DEFAULT_METHOD
from fnin_cli.train import feed
from fnin_cli.train.card import model_card_markdown
from fnin_cli.train.config import TrainConfig
from fnin_cli.train.loop import validation_scenes

from helpers_cli import invoke, run_fnin

SIZE, VIEWS = 64, 4      # views 0-3: perspective, perspective, orthographic, two objects


def _sphere(n=20):
    th = np.linspace(0, np.pi, n + 1)[1:-1]
    ph = np.linspace(0, 2 * np.pi, 2 * n, endpoint=False)
    V = [[0, 0, 1]] + [[np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)] for t in th for p in ph]
    V.append([0, 0, -1])
    m, last, F = 2 * n, len(V) - 1, []
    F += [[0, 1 + j, 1 + (j + 1) % m] for j in range(m)]
    for i in range(n - 2):
        a, b = 1 + i * m, 1 + (i + 1) * m
        for j in range(m):
            F += [[a + j, b + j, b + (j + 1) % m], [a + j, b + (j + 1) % m, a + (j + 1) % m]]
    a = 1 + (n - 2) * m
    F += [[a + j, last, a + (j + 1) % m] for j in range(m)]
    return np.array(V, float), np.array(F)


def _box():
    V = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * [1, 0.7, 0.5]
    F = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                  [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return V, F


@pytest.fixture(scope="module")
def mesh_dir(tmp_path_factory) -> Path:
    """boot, hand: validation meshes; armadillo, boat: training meshes."""
    d = tmp_path_factory.mktemp("meshes")
    V, F = _sphere()
    np.savez(d / "boot.npz", vertices=V, faces=F)
    np.savez(d / "armadillo.npz", vertices=V * [1, 0.8, 0.6], faces=F)
    V, F = _box()
    np.savez(d / "hand.npz", vertices=V, faces=F)
    np.savez(d / "boat.npz", vertices=V * [1, 1.2, 1], faces=F)
    return d


# ------------------------------------------------------------------ bench meshes

def test_bench_meshes_report_has_the_bench_schema_and_per_object_errors(mesh_dir, tmp_path):
    out = tmp_path / "r.json"
    p = run_fnin(["bench", "meshes", "--meshes", mesh_dir, "--mesh-size", SIZE, "--mesh-views", VIEWS,
                  "--methods", "wls", "--json", out, "--csv", tmp_path / "r.csv", "--no-warmup"], timeout=300)
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["dataset"] == "meshes" and r["methods"] == ["wls"] and "machine" in r
    names = list(r["cases"])
    assert len(names) == VIEWS and all(n.split("_")[0].split("+")[0] in ("boot", "hand") for n in names)
    assert any("_ortho_" in n for n in names)
    for per in r["cases"].values():
        rec = per["wls"]
        assert rec["status"] == "ok" and rec["made_mm"] >= 0 and rec["seconds"] > 0
    two = [n for n in names if "+" in n]
    assert len(two) == 1
    rec = r["cases"][two[0]]["wls"]
    assert len(rec["objects"]) == 2                     # aligned one by one; made = their mean
    assert rec["made_mm"] == pytest.approx(np.mean([o["made_mm"] for o in rec["objects"].values()]))
    assert set(r["mean"]["wls"]) >= {"made_mm", "seconds_total"}
    assert r["mean"]["wls"]["made_mm"] == pytest.approx(np.mean([r["cases"][c]["wls"]["made_mm"] for c in names]))
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 1 + VIEWS


def test_per_object_alignment_ignores_the_objects_relative_scale_and_offset(mesh_dir):
    views = mesh_view_set(mesh_dir, SIZE, VIEWS)
    name, sc, _ = next(v for v in views if "+" in v[0])
    ids = sc.object_id
    assert set(np.unique(ids[sc.mask])) == {0, 1}
    est = np.where(ids == 1, sc.depth * 1.3, sc.depth)          # perspective: object 1 at another scale
    assert align_and_errors(est, sc.depth, sc.mask, True)["made"] > 1.0
    err = align_objects(est, sc.depth, sc.mask, ids, True, ["a", "b"])
    assert err["made"] < 1e-9 and set(err["objects"]) == {"a", "b"}
    est = np.where(ids == 1, sc.depth + 50.0, sc.depth)          # orthographic: another offset
    assert align_and_errors(est, sc.depth, sc.mask, False)["made"] > 1.0
    assert align_objects(est, sc.depth, sc.mask, ids, False)["made"] < 1e-9
    # a single object: exactly the usual protocol
    one = np.where(sc.mask & (ids == 0), sc.depth, np.nan)
    a = align_objects(one * 2, one, sc.mask & (ids == 0), ids, True)
    assert "objects" not in a and a["made"] < 1e-9


@pytest.mark.parametrize("method", ["wls", "bini"])
def test_exact_normals_of_a_smooth_object_integrate_to_small_error(mesh_dir, method):
    """The sphere (boot) views have exact normals: a smooth integrator is near exact."""
    for case in mesh_cases(mesh_dir, SIZE, VIEWS):
        if not case.name.startswith("boot_"):
            continue
        rec = runner.run_one(case, method, refine=0)
        # objects 100-200 mm across, 64 px high: MADE well below a pixel's depth step
        assert rec["status"] == "ok" and rec["made_mm"] < 1.0, (case.name, rec["made_mm"])


def test_mesh_cases_render_in_an_isolated_child(mesh_dir):
    cases = mesh_cases(mesh_dir, SIZE, 1)
    r = runner.run_bench(cases, ["wls"], isolate=True, warmup=False, dataset="meshes")
    rec = r["cases"][cases[0].name]["wls"]
    assert rec["status"] == "ok", rec
    local = runner.run_one(cases[0], "wls")
    assert rec["made_mm"] == pytest.approx(local["made_mm"], rel=1e-9)


def test_bench_meshes_errors_are_one_line(tmp_path):
    p = invoke(["bench", "meshes", "--meshes", tmp_path / "nope", "--methods", "wls"])
    assert p.exit_code == 2 and p.stderr.strip().startswith("error:") and len(p.stderr.strip().splitlines()) == 1
    (tmp_path / "train_only").mkdir()
    V, F = _box()
    np.savez(tmp_path / "train_only" / "boat.npz", vertices=V, faces=F)
    with pytest.raises(FninError, match="validation split"):
        resolve_cases("meshes", meshes=tmp_path / "train_only")


def test_default_mesh_folder_benchmarks_the_validation_meshes():
    if not mesh_scenes.DEFAULT_MESH_DIR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the mesh pack is not at {mesh_scenes.DEFAULT_MESH_DIR}")
        pytest.skip("shared/data/meshes not here")
    # names only (rendering all 14 views takes seconds): the split decides what is rendered
    names = sorted(p.stem for p in mesh_scenes.DEFAULT_MESH_DIR.glob("*.npz"))
    assert mesh_scenes.split_names(names)[1] == list(mesh_scenes.VALIDATION_MESHES)


# ------------------------------------------------------------------ bench: default and --refine

def test_methods_parse_in_one_place():
    assert runner.parse_methods("default, wls,") == ["default", "wls"]
    with pytest.raises(FninError, match="unknown method 'nope'"):
        runner.parse_methods("wls,nope")
    assert runner.method_call("default", 0) == (DEFAULT_METHOD, None)    # --refine never reaches default
    assert runner.method_call("fnin", 0) == ("fnin", 0)
    assert runner.method_call("bini", None) == ("bini", None)


def test_default_key_runs_what_integrate_runs_without_flags(mesh_dir, monkeypatch):
    calls = []
    real = runner.integrate

    def spy(inp, method, refine=None, **kw):
        calls.append((method, refine))
        return real(inp, method, refine=refine, **kw)

    monkeypatch.setattr(runner, "integrate", spy)
    cases = mesh_cases(mesh_dir, SIZE, 1)
    r = runner.run_bench(cases, ["default", "wls"], refine=0, warmup=False)
    assert calls == [(DEFAULT_METHOD, None), ("wls", 0)]
    assert r["methods"] == ["default", "wls"] and r["refine"] == 0 and "default" in r["mean"]
    calls.clear()
    runner.run_bench(cases, ["wls"], warmup=False)           # no --refine: the method's default (None)
    assert calls == [("wls", None)]
    # the recorded error is that of a plain `integrate(inp, DEFAULT_METHOD, refine=None)`
    monkeypatch.setattr(runner, "integrate", real)
    inp, gt = cases[0].load()
    res = integrate(inp, DEFAULT_METHOD, refine=None)
    want = align_and_errors(res.depth, gt, res.mask, inp.camera.perspective)["made"]
    assert runner.run_one(cases[0], "default", refine=0)["made_mm"] == pytest.approx(want, rel=1e-6)



# ------------------------------------------------------------------ train --meshes

def _tiny(**kw):
    base = dict(seed=3, steps=2, batch=2, res=32, fine_res=32, fine_steps=0, warmup=1, val_every=10**9,
                val_scenes=2, val_res=32, ckpt_every=10**9, threads=1,
                net=NetConfig(width=8, modes=4, proj=8, att_width=4, min_side=16))
    base.update(kw)
    return TrainConfig(**base)


def test_scenes_are_functions_of_their_seed_and_use_training_meshes_only(mesh_dir, monkeypatch):
    folder = str(mesh_dir)
    picks = [feed.is_mesh_seed(s, 0.5) for s in range(40)]
    assert 5 < sum(picks) < 35                                   # a mix, decided per seed
    assert picks == [np.random.default_rng([s, 7]).uniform() < 0.5 for s in range(40)]
    s = picks.index(True)
    a, b = feed.scene_for(s, 32, meshes=folder, mesh_prob=0.5), feed.scene_for(s, 32, meshes=folder, mesh_prob=0.5)
    assert isinstance(a, mesh_scenes.MeshScene)
    for x, y in zip(feed.scene_arrays(a), feed.scene_arrays(b)):
        np.testing.assert_array_equal(x, y)
    assert not isinstance(feed.scene_for(picks.index(False), 32, meshes=folder, mesh_prob=0.5),
                          mesh_scenes.MeshScene)
    used = []
    real = mesh_scenes.make_mesh_scene

    def spy(seed, meshes, *a, **kw):
        used.append(sorted(meshes))
        return real(seed, meshes, *a, **kw)

    monkeypatch.setattr(mesh_scenes, "make_mesh_scene", spy)
    for seed in range(6):
        feed.scene_for(seed, 32, meshes=folder, mesh_prob=1.0)
    assert used and all(u == ["armadillo", "boat"] for u in used)
    used.clear()
    cfg = _tiny(meshes=folder, mesh_prob=0.5, val_mesh_scenes=3)
    scenes = list(validation_scenes(cfg))
    assert len(scenes) == cfg.val_scenes + 3
    assert used == [["boot", "hand"]] * 3                        # validation: never a training mesh


def test_teacher_cache_hit_returns_the_same_arrays(mesh_dir, tmp_path, monkeypatch):
    cache = tmp_path / "teach"
    args = (5, 32, 0.0, 0.0, str(mesh_dir), 1.0)
    first = feed._scene(*args, teacher_cache=str(cache))
    t = first[6]
    assert t.shape == (2, 32, 32) and t.dtype == np.float32 and 0 <= t.min() and t.max() <= 1
    assert [p.name for p in cache.iterdir()] == [feed.teacher_path(cache, *args).name]   # no temp files left

    def boom(*_):
        raise AssertionError("teacher recomputed despite the cache")

    monkeypatch.setattr(feed, "teacher_weights", boom)
    again = feed._scene(*args, teacher_cache=str(cache))
    for x, y in zip(first, again):
        np.testing.assert_array_equal(x, y)
    lv, z, teacher = feed.collate([first, again])
    assert teacher.shape == (2, 2, 32, 32)
    assert lv.objects.shape == (2, 1, 32, 32) and bool((lv.objects[lv.mask > 0] >= 0).all())


def _train_edges(config: dict, mesh_dir, folder: Path):
    """`fnin train` of an edges config on the mesh folder from the bundled weights; the
    result and the weights file it writes in ``folder``."""
    folder.mkdir()
    (folder / "c.json").write_text(json.dumps(config))
    out = folder / "fnin.safetensors"
    p = invoke(["train", "--config", folder / "c.json", "--meshes", mesh_dir, "--base", DEFAULT_WEIGHTS,
                "--run-dir", folder / "run", "--out", out])
    return p, out


def test_train_with_meshes_and_the_bini_teacher(mesh_dir, tmp_path):
    cfg = tmp_path / "c.json"
    tiny = _tiny().to_dict()
    tiny.pop("seed")
    cfg.write_text(json.dumps(tiny))
    out = tmp_path / "w" / "fnin.safetensors"
    out.parent.mkdir()
    p = invoke(["train", "--config", cfg, "--meshes", mesh_dir, "--run-dir", tmp_path / "run", "--out", out])
    assert p.exit_code == 0, p.stderr
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["train_config"]["meshes"] == str(mesh_dir) and card["train_config"]["mesh_prob"] == 0.5
    assert card["meshes"]["validation"] == ["boot", "hand"] and card["meshes"]["train"] == ["armadillo", "boat"]
    md = (out.parent / "MODEL_CARD.md").read_text()
    assert "Meshes" in md and "boot, hand" in md

    # the edge net towards the teacher (BiNI converged on the normals), on the bundled Stage I
    edges = dict(_tiny(stage="edges", edge_target="bini", teacher_cache=str(tmp_path / "teach"),
                       val_mesh_scenes=1).to_dict())
    edges["net"] = {"edge_width": 4, "edge_dilations": [1, 2, 1]}
    p, out2 = _train_edges(edges, mesh_dir, tmp_path / "e")
    assert p.exit_code == 0, p.stderr
    assert len(list((tmp_path / "teach").glob("*.npy"))) == 2 * 2     # batch x steps, one per scene
    md = (out2.parent / "MODEL_CARD.md").read_text()
    assert "Teacher" in md and str(tmp_path / "teach") in md and "boot, hand" in md
    assert "fixed synthetic scenes and 1 scenes rendered from the validation meshes (each object aligned on its own)" in md


def test_rounds_teacher_is_binis_weights_at_the_end_of_fnin_and_its_rounds(mesh_dir, tmp_path):
    """edge_target "rounds": the teacher is BiNI's weights of what `--refine N` reaches
    from FNIN with the run's starting weights, cached under a key of its own."""
    from fnin_cli.pipeline import build_input
    from fnin_cli.solvers.bini import bini_weights
    from fnin_cli.solvers.system import NormalSystem

    sc = feed.scene_for(5, 48, 0.0, 0.0, str(mesh_dir), 1.0)
    t = feed.teacher_weights(sc, 3, str(DEFAULT_WEIGHTS))
    inp = build_input(sc.normals, None, sc.mask, sc.K)
    r = integrate(inp, "fnin", refine=3)
    w = bini_weights(NormalSystem(inp.normals, inp.mask, inp.camera), r.z[inp.mask])
    np.testing.assert_allclose(t[0][inp.mask], w["u-"], atol=1e-6)
    np.testing.assert_allclose(t[1][inp.mask], w["v-"], atol=1e-6)
    assert not t[:, ~inp.mask].any()
    assert np.abs(t - feed.teacher_weights(sc)).max() > 0.5            # not the bini teacher
    assert np.abs(t - feed.teacher_weights(sc, 1, str(DEFAULT_WEIGHTS))).max() > 1e-3   # rounds matter
    args = ("c", 5, 48, 0.0, 0.0, str(mesh_dir), 1.0)
    keys = {feed.teacher_path(*args), feed.teacher_path(*args, 3, str(DEFAULT_WEIGHTS)),
            feed.teacher_path(*args, 4, str(DEFAULT_WEIGHTS))}
    other = tmp_path / "other.safetensors"
    other.write_bytes(Path(DEFAULT_WEIGHTS).read_bytes() + b"\0")
    keys.add(feed.teacher_path(*args, 3, str(other)))                   # other weights, other teacher
    assert len(keys) == 4
    # Stage II's sliver gate changes the rounds' start: a teacher cached without it is another
    from dataclasses import replace

    from fnin_cli import config

    gated, bini = feed.teacher_path(*args, 3, str(DEFAULT_WEIGHTS)), feed.teacher_path(*args)
    d = config.DEFAULT
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(config, "DEFAULT", replace(d, one_shot=replace(d.one_shot, sliver_gate=None)))
        assert feed.teacher_path(*args, 3, str(DEFAULT_WEIGHTS)) != gated
        assert feed.teacher_path(*args) == bini                          # the bini teacher runs no Stage II
    # so does the rounds' edge-net prior (RoundsConfig.edge_prior)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(config, "DEFAULT", replace(d, rounds=replace(d.rounds, edge_prior=None)))
        assert feed.teacher_path(*args, 3, str(DEFAULT_WEIGHTS)) != gated
        assert feed.teacher_path(*args) == bini                          # nor does it change the bini teacher
    cfg = _tiny(stage="edges", edge_target="rounds", teacher_rounds=3, base="b.safetensors", init_edges="e.safetensors")
    assert feed.teacher_args(cfg) == ("runs/teacher_cache", 3, "e.safetensors")
    assert feed.teacher_args(_tiny(stage="edges", edge_target="bini"))[1:] == (0, "")
    assert feed.teacher_args(_tiny(stage="edges"))[0] is None


def test_solve_objectives_anchor_follows_the_teacher():
    """With a teacher, the solve objective's cross-entropy anchor pulls towards the
    teacher's weights (before: always BiNI's weights of the true unknown)."""
    import torch

    from fnin_cli.model.weights import load_model
    from fnin_cli.train.losses import _bce_to_bini, _edge_logits, step_loss

    sc = feed.scene_for(11, 32, 0.0, 0.0)
    lv, z = feed.collate([feed.scene_arrays(sc)])
    model = load_model(DEFAULT_WEIGHTS, device="cpu")
    cfg = _tiny(stage="edges", edge_objective="solve", solve_bce=1.0)
    teacher = torch.full((1, 2, 32, 32), 0.5)
    with torch.no_grad():
        plain = float(step_loss(model, lv, z, cfg))
        taught = float(step_loss(model, lv, z, cfg, teacher))
        _, logits = _edge_logits(model, lv, cfg)
        gap = float(_bce_to_bini(logits, lv, z, cfg, teacher) - _bce_to_bini(logits, lv, z, cfg))
    assert abs(gap) > 1e-3
    assert taught - plain == pytest.approx(gap, rel=1e-5)


def test_train_through_the_solve_anchored_to_the_rounds_teacher(mesh_dir, tmp_path):
    edges = dict(_tiny(stage="edges", edge_objective="solve", solve_bce=1.0, edge_target="rounds", teacher_rounds=2,
                       teacher_cache=str(tmp_path / "teach"), mesh_prob=0.5).to_dict())
    edges["net"] = {"edge_width": 4, "edge_dilations": [1, 2, 1]}     # fresh edges: the teacher runs --base
    p, out = _train_edges(edges, mesh_dir, tmp_path / "e")
    assert p.exit_code == 0, p.stderr
    assert len(list((tmp_path / "teach").glob("*.npy"))) == 2 * 2
    md = " ".join((out.parent / "MODEL_CARD.md").read_text().split())
    assert f"FNIN with `{DEFAULT_WEIGHTS}` followed by 2 BiNI rounds" in md
    assert "plus 1.0 x the cross-entropy to the teacher's weights" in md
    p, _ = _train_edges(dict(edges, teacher_rounds=0), mesh_dir, tmp_path / "e0")
    assert p.exit_code == 2 and "teacher_rounds 0" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_train_meshes_folder_errors_are_one_line(tmp_path):
    for folder in (tmp_path / "missing", tmp_path):
        p = invoke(["train", "--meshes", folder, "--steps", 1, "--run-dir", tmp_path / "run"])
        assert p.exit_code == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and "mesh" in lines[0]


def test_teacher_cache_key_tells_mesh_folders_of_one_name_apart(mesh_dir, tmp_path):
    """Regression: the key held only the folder's name, so two different mesh folders
    called alike shared (wrong) cached teachers."""
    import shutil

    other = tmp_path / "x" / Path(mesh_dir).name
    shutil.copytree(mesh_dir, other)
    same = feed.teacher_path("c", 5, 32, 0.0, 0.0, str(other), 1.0)
    assert same == feed.teacher_path("c", 5, 32, 0.0, 0.0, str(mesh_dir), 1.0)   # same contents
    first = sorted(other.iterdir())[0]
    first.write_bytes(first.read_bytes() + b"\0")
    feed._FOLDER_KEYS.clear()
    assert feed.teacher_path("c", 5, 32, 0.0, 0.0, str(other), 1.0) != same


def test_bundled_model_card_is_the_rendering_of_its_json():
    """MODEL_CARD.md is written from fnin.json (train.card), never edited by hand: the two
    agree, and the card states what the bundled weights were measured at."""
    wdir = DEFAULT_WEIGHTS.parent
    card = json.loads((wdir / "fnin.json").read_text())
    md = (wdir / "MODEL_CARD.md").read_text()
    assert md == model_card_markdown(card)
    assert "\n## Measured with these weights" in md and "| diligent (9 cases) | `bini` |" in md
    for run in card["measured"]["runs"]:
        assert run["dataset"] in ("diligent", "meshes") and set(run["means"]) >= {"default", "bini"}


def test_card_measurements_takes_only_runs_of_the_cards_weights(tmp_path, repo_root, monkeypatch):
    monkeypatch.syspath_prepend(str(repo_root / "benchmarks"))
    card_measurements = importlib.import_module("card_measurements")
    wdir = tmp_path / "weights"
    wdir.mkdir()
    card = json.loads((DEFAULT_WEIGHTS.parent / "fnin.json").read_text())
    card.pop("measured", None)
    assert "\n## Measured" not in model_card_markdown(card)      # what fnin train writes
    (wdir / "fnin.json").write_text(json.dumps(card))
    rec = {"dataset": "meshes", "methods": ["default", "fnin"], "refine": 0, "repeat": 1,
           "model": {"weights": "bundled", "sha256": card["sha256"]},
           "machine": {"cpu": "CPU X", "threads": 2, "device": "cpu", "date": "2030-01-02T03:04:05+00:00"},
           "mean": {"default": {"made_mm": 1.23456, "seconds_total": 7.5, "cases": 14, "failed": 0},
                    "fnin": {"made_mm": 2.5, "seconds_total": 3.25, "cases": 14, "failed": 0}}}
    good, other = tmp_path / "good.json", tmp_path / "other.json"
    good.write_text(json.dumps(rec))
    other.write_text(json.dumps({**rec, "model": {"weights": "x.safetensors", "sha256": "0" * 64}}))
    with pytest.raises(SystemExit, match="not this card's"):
        card_measurements.main([str(other), "--weights-dir", str(wdir)])
    assert "measured" not in json.loads((wdir / "fnin.json").read_text())     # nothing written
    card_measurements.main([str(good), "--weights-dir", str(wdir), "--note", "A note."])
    md = (wdir / "MODEL_CARD.md").read_text()
    assert "A note." in md
    assert "| meshes (14 cases) | `fnin` (the default) | 1.235 | 7.50 |" in md
    assert "| meshes (14 cases) | `fnin --refine 0` (one-shot) | 2.500 | 3.25 |" in md
    assert "fnin bench meshes --methods default,fnin --refine 0    # 2030-01-02, CPU X, 2 threads, cpu" in md
