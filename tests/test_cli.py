"""`fnin integrate` end to end: outputs, names, options, --json, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import trimesh

from fnin_cli import io
from fnin_cli.conventions import from_internal
from fnin_cli.mesh import mesh_arrays
from fnin_cli.pipeline import integrate, load_input
from fnin_cli.resources import limit_threads
from helpers_cli import invoke, run_fnin, write_case, write_folder, write_random_model

JSON_KEYS = {"input", "status", "error", "outputs", "method", "refine", "camera", "shape", "pixels", "seconds",
             "scale_note", "warnings", "peak_rss_mb", "convention",
             "mask_source", "camera_source", "config", "loose_pieces",  # these four: issues 32, 33, 31
             "iterations"}                                             # issue 43


def test_file_with_mask_and_K_writes_mesh_depth_weights_preview(tmp_path):
    c = write_case(tmp_path, seed=2)
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "-o", out / "m.ply", "--depth", out / "d.npy", "--weights", out / "w.exr", "--preview", out / "p.png"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""  # human messages go to stderr only
    assert "ok" in r.stderr

    # the CLI is a thin layer: the depth it writes is the API's, bit for bit
    inp = load_input(c["normals"], mask=c["mask"], K=c["K"])
    res = integrate(inp, method="wls")
    d = np.load(out / "d.npy")
    assert d.dtype == np.float32 and d.shape == (48, 48)
    np.testing.assert_array_equal(d, res.depth)
    assert np.array_equal(np.isfinite(d), res.mask)
    assert (d[res.mask] > 0).all()

    mesh = trimesh.load(out / "m.ply", process=False)
    # one vertex per masked pixel in a triangle (a pixel in none would float, issue 43)
    every = mesh_arrays(res.depth, res.camera, res.mask, normals=inp.normals, keep_lone=True)
    in_face = np.zeros(res.pixels, bool)
    in_face[every.faces] = True
    assert len(mesh.vertices) == in_face.sum() >= res.pixels - 2
    assert len(mesh.faces) > res.pixels  # ~2 triangles per pixel on a mostly smooth scene
    pts = res.camera.back_project(res.depth.astype(np.float64))[res.mask][in_face]
    np.testing.assert_allclose(np.asarray(mesh.vertices), pts, rtol=1e-5, atol=1e-6)

    w, _ = io.read_array(out / "w.exr")
    assert w.shape == (48, 48)
    assert np.array_equal(np.isfinite(w), res.mask)
    assert np.nanmin(w) >= 0 and np.nanmax(w) <= 1

    p, bits = io.read_array(out / "p.png")
    assert bits == 8 and p.ndim == 3 and p.shape[2] == 3
    assert p.shape[1] > 2 * p.shape[0]  # three panels side by side
    # no temporary files left behind
    assert sorted(x.name for x in out.iterdir()) == ["d.npy", "m.ply", "p.png", "w.exr"]


def test_folder_input_uses_its_mask_and_K(tmp_path):
    folder = write_folder(tmp_path / "bunny", seed=4)
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", folder, "--out-dir", out, "--method", "wls", "--json"])
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["status"] == "ok" and rec["camera"] == "perspective"
    assert rec["outputs"] == {"mesh": str(out / "bunny.ply")}
    ref = integrate(load_input(folder), method="wls")
    assert rec["pixels"] == ref.pixels
    mesh = trimesh.load(out / "bunny.ply", process=False)
    assert len(mesh.vertices) == ref.pixels


def test_json_schema_one_object_per_input(tmp_path):
    good = write_case(tmp_path, seed=6, name="good", with_mask=False, with_K=False)["normals"]
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png at all")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", good, bad, "--out-dir", out, "--format", "npy", "--method", "wls", "--json"])
    assert r.exit_code == 1
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2
    recs = [json.loads(x) for x in lines]
    for rec in recs:
        assert set(rec) == JSON_KEYS
        assert rec["method"] == "wls"
        assert isinstance(rec["seconds"], dict) and all(isinstance(v, float) for v in rec["seconds"].values())
        assert isinstance(rec["warnings"], list)
    ok, failed = recs
    assert ok["input"] == str(good) and ok["status"] == "ok" and ok["error"] is None
    assert ok["outputs"] == {"depth": str(out / "good.npy")}
    assert ok["camera"] == "orthographic" and ok["shape"] == [48, 48] and ok["pixels"] > 1000
    assert {"load", "solve", "write", "total"} <= set(ok["seconds"])
    assert "offset" in ok["scale_note"]
    assert ok["peak_rss_mb"] is None or ok["peak_rss_mb"] > 10
    assert failed["status"] == "failed" and failed["outputs"] == {}
    assert failed["error"].startswith(f"{bad}: ") and "corrupt" in failed["error"]
    # human messages on stderr: the error line and the summary table
    assert f"error: {bad}: " in r.stderr
    assert "1 ok, 1 failed" in r.stderr


def test_json_reports_the_methods_own_iterations(tmp_path):
    """Issue 43: --json said "refine": 0 for bini and nothing of its IRLS iterations. Now
    "iterations" is the method's own (bini's IRLS iterations, as the API's Result counts
    them; 1 for one solve) and "refine" the BiNI rounds after it."""
    c = write_case(tmp_path, seed=2)
    inp = load_input(c["normals"], mask=c["mask"], K=c["K"])
    recs = {}
    for method, extra in (("bini", []), ("bini", ["--refine", "2"]), ("wls", []), ("wls", ["--refine", "1"])):
        r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", method, *extra,
                    "-o", tmp_path / f"{method}{len(extra)}.npy", "--json", "--force"])
        assert r.exit_code == 0, r.stderr
        recs[method, len(extra)] = json.loads(r.stdout)
    with limit_threads(1):
        api, api2 = integrate(inp, "bini"), integrate(inp, "bini", refine=2)
    assert api.rounds == 0 and api.iterations > 1
    assert api2.rounds >= 1 and api2.iterations == api.iterations + api2.rounds     # Result counts both
    assert (recs["bini", 0]["iterations"], recs["bini", 0]["refine"]) == (api.iterations, 0)
    assert (recs["bini", 2]["iterations"], recs["bini", 2]["refine"]) == (api.iterations, api2.rounds)
    assert (recs["wls", 0]["iterations"], recs["wls", 0]["refine"]) == (1, 0)
    assert (recs["wls", 2]["iterations"], recs["wls", 2]["refine"]) == (1, 1)


def test_usage_line_reads_input_and_unknown_options_suggest_only_close_names(tmp_path):
    """Issue 43: the usage line read "[INPUT...]..." and "--deph" suggested "--jobs, --out"
    (every long option shares "--"). Now "INPUT..." and close matches only, or none."""
    from fnin_cli.cli.app import close_options

    usage = invoke(["integrate", "--help"]).stdout.splitlines()[0]
    assert usage.endswith(" integrate [OPTIONS] INPUT..."), usage
    assert "[INPUT" not in invoke(["integrate", "--help"]).stdout
    c = write_case(tmp_path, seed=2)
    said = {}
    for cmd, typo in (("integrate", "--deph"), ("integrate", "--ouptut"), ("integrate", "--bini_k"),
                      ("integrate", "--zzz"), ("bench", "--deph"), ("bench", "--mehtods")):
        args = [cmd, c["normals"], typo, "1"] if cmd == "integrate" else [cmd, typo, "1"]
        r = invoke(args)
        assert r.exit_code == 2 and f"No such option: {typo}" in r.output and "Traceback" not in r.output
        line = next(x for x in r.output.splitlines() if "No such option" in x)
        said[cmd, typo] = line.partition("Possible options: ")[2].rstrip(")")
    assert said == {("integrate", "--deph"): "--depth, --depth-at", ("integrate", "--ouptut"): "--out",
                    ("integrate", "--bini_k"): "--bini-k", ("integrate", "--zzz"): "",
                    ("bench", "--deph"): "", ("bench", "--mehtods"): "--methods"}
    assert close_options("--deph", ["--jobs", "--out", "-d"]) == []
    assert close_options("-x", ["--x"]) == []


def test_exit_codes_of_the_real_command(tmp_path):
    c = write_case(tmp_path, seed=7)
    ok = run_fnin(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                   "-o", tmp_path / "a.npy"])
    assert ok.returncode == 0, ok.stderr
    usage = run_fnin(["integrate", c["normals"], c["normals"].with_name("x.png"), "-o", tmp_path / "b.ply",
                      "--method", "wls"])
    assert usage.returncode == 2
    assert usage.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "--out-dir" in usage.stderr
    failed = run_fnin(["integrate", tmp_path / "missing.png", "--method", "wls", "-o", tmp_path / "c.npy"])
    assert failed.returncode == 1
    assert failed.stderr.strip() == f"error: {tmp_path / 'missing.png'}: file not found"
    assert not (tmp_path / "b.ply").exists() and not (tmp_path / "c.npy").exists()


def test_outputs_are_bit_identical_across_runs(tmp_path):
    c = write_case(tmp_path, seed=10)
    digests = []
    for run in ("r1", "r2"):
        d = tmp_path / run
        d.mkdir()
        r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "bini",
                    "-o", d / "m.ply", "--depth", d / "d.npy", "--weights", d / "w.exr"])
        assert r.exit_code == 0, r.stderr
        digests.append([(d / f).read_bytes() for f in ("m.ply", "d.npy", "w.exr")])
    assert digests[0] == digests[1]


def test_fx_options_equal_a_K_file(tmp_path):
    c = write_case(tmp_path, seed=12)
    K = np.loadtxt(c["K"])
    a = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "-o", tmp_path / "a.npy"])
    fx, fy, cx, cy = (repr(float(v)) for v in (K[0, 0], K[1, 1], K[0, 2], K[1, 2]))
    b = invoke(["integrate", c["normals"], "--mask", c["mask"], "--fx", fx, "--fy", fy, "--cx", cx, "--cy", cy,
                "--method", "wls", "-o", tmp_path / "b.npy"])
    assert a.exit_code == 0 and b.exit_code == 0, a.stderr + b.stderr
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()
    # --fx alone: fy = fx and the principal point at the image centre
    centred = K.copy()
    centred[1, 1] = K[0, 0]
    centred[:2, 2] = (48 - 1) / 2
    np.savetxt(tmp_path / "Kc.txt", centred)
    c1 = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", tmp_path / "Kc.txt", "--method", "wls",
                 "-o", tmp_path / "c1.npy"])
    c2 = invoke(["integrate", c["normals"], "--mask", c["mask"], "--fx", fx, "--method", "wls",
                 "-o", tmp_path / "c2.npy"])
    assert c1.exit_code == 0 and c2.exit_code == 0
    assert (tmp_path / "c1.npy").read_bytes() == (tmp_path / "c2.npy").read_bytes()
    assert (tmp_path / "c1.npy").read_bytes() != (tmp_path / "a.npy").read_bytes()


def _ortho_sphere(n=48, radius=30.0, centre_depth=100.0):
    """Exact orthographic sphere cap: depth and internal-frame normals (pixel size 1)."""
    v, u = np.mgrid[0:n, 0:n].astype(np.float64)
    x, y = u - (n - 1) / 2, v - (n - 1) / 2
    r2 = x * x + y * y
    inside = r2 < (0.9 * radius) ** 2
    s = np.sqrt(np.clip(radius**2 - r2, 0, None))
    depth = np.where(inside, centre_depth - s, np.nan)
    normals = np.stack([x, y, -s], -1) / radius
    normals[~inside] = np.nan
    return depth, normals, inside


def test_depth_at_and_mean_depth_fix_the_offset(tmp_path):
    depth, normals, inside = _ortho_sphere()
    io.write_array(tmp_path / "s.npy", from_internal(normals, "ps").astype(np.float32))
    r = invoke(["integrate", tmp_path / "s.npy", "--method", "wls", "--depth-at", f"24,24,{float(depth[24, 24])!r}",
                "-o", tmp_path / "d.npy"])
    assert r.exit_code == 0, r.stderr
    d = np.load(tmp_path / "d.npy")
    assert abs(d[24, 24] - depth[24, 24]) < 1e-3
    # orthographic sphere: the integrated surface is the true one (discretisation error only)
    err = np.abs(d - depth)[inside]
    assert np.median(err) < 0.5 and err.max() < 1.5  # relief is 17 units
    r = invoke(["integrate", tmp_path / "s.npy", "--method", "wls", "--mean-depth", "-5", "-o", tmp_path / "e.npy"])
    assert r.exit_code == 0, r.stderr
    e = np.load(tmp_path / "e.npy")
    assert abs(np.nanmean(e.astype(np.float64)) + 5) < 1e-4
    np.testing.assert_allclose(e - np.nanmean(e), d - np.nanmean(d), atol=1e-4)


def test_both_conventions_give_the_same_depth(tmp_path):
    c = write_case(tmp_path, seed=15)
    n = c["scene"].normals
    io.write_array(tmp_path / "ps.npy", from_internal(n, "ps").astype(np.float32))
    io.write_array(tmp_path / "cv.npy", n.astype(np.float32))
    io.write_array(tmp_path / "dx.npy", from_internal(n, "directx").astype(np.float32))
    for name, conv in (("ps", "ps"), ("cv", "opencv"), ("dx", "green-down")):
        r = invoke(["integrate", tmp_path / f"{name}.npy", "--convention", conv, "--K", c["K"], "--method", "wls",
                    "-o", tmp_path / f"{name}_d.npy"])
        assert r.exit_code == 0, r.stderr
    ref = (tmp_path / "ps_d.npy").read_bytes()
    assert (tmp_path / "cv_d.npy").read_bytes() == ref
    assert (tmp_path / "dx_d.npy").read_bytes() == ref
    # read with the wrong explicit convention, the same file is refused with a hint
    r = invoke(["integrate", tmp_path / "cv.npy", "--convention", "ps", "--K", c["K"], "--method", "wls",
                "-o", tmp_path / "x.npy"])
    assert r.exit_code == 1 and "--convention" in r.stderr
    # the default (auto) decodes it as OpenCV-frame normals and says so
    r = invoke(["integrate", tmp_path / "cv.npy", "--K", c["K"], "--method", "wls", "-o", tmp_path / "a.npy",
                "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["convention"] == "opencv", r.stderr
    assert "--convention opencv" in r.stderr and (tmp_path / "a.npy").read_bytes() == ref


def test_default_output_names(tmp_path):
    # no output option: <name>.ply in the current folder
    c = write_case(tmp_path / "in", seed=18, name="statue")
    work = tmp_path / "work"
    work.mkdir()
    r = invoke(["integrate", c["normals"], "--method", "wls"], cwd=work)
    assert r.exit_code == 0, r.stderr
    assert (work / "statue.ply").exists()
    # generic file names take their folder's name; fnin expands a quoted glob itself
    for obj, seed in (("cat", 19), ("owl", 21)):
        write_folder(tmp_path / "scans" / obj, seed=seed)
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", str(tmp_path / "scans" / "*" / "normal_map.png"), "--out-dir", out, "--method", "wls",
                "--format", "obj", "--depth", ".exr", "--preview", "{stem}-look.png", "--json"])
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["cat-look.png", "cat.obj", "cat_depth.exr",
                                                    "owl-look.png", "owl.obj", "owl_depth.exr"]
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert [rec["outputs"]["mesh"] for rec in recs] == [str(out / "cat.obj"), str(out / "owl.obj")]
    # a layout file reads the K.txt and mask.png beside it, as its folder does (issue 32)
    assert recs[0]["camera"] == "perspective" and recs[0]["camera_source"].endswith("K.txt")
    mesh = trimesh.load(out / "cat.obj", process=False)
    assert len(mesh.vertices) == recs[0]["pixels"]


def test_skip_existing_and_force(tmp_path):
    c = write_case(tmp_path, seed=23, with_mask=False, with_K=False)
    out = tmp_path / "out"
    out.mkdir()
    args = ["integrate", c["normals"], "--out-dir", out, "--method", "wls", "--json"]
    assert invoke(args).exit_code == 0
    target = out / "n.ply"
    target.write_bytes(b"sentinel")
    r = invoke(args)
    assert r.exit_code == 2 and "--force" in r.stderr and target.read_bytes() == b"sentinel"
    r = invoke(args + ["--skip-existing"])
    assert r.exit_code == 0 and json.loads(r.stdout)["status"] == "skipped"
    assert target.read_bytes() == b"sentinel"
    r = invoke(args + ["--force"])
    assert r.exit_code == 0 and target.read_bytes() != b"sentinel"


@pytest.mark.parametrize("pixel_size", [0.5, 1.0, 10.0])
def test_pixel_size_scales_orthographic_depth(tmp_path, pixel_size):
    depth, normals, inside = _ortho_sphere()
    io.write_array(tmp_path / "s.npy", from_internal(normals, "ps").astype(np.float32))
    r = invoke(["integrate", tmp_path / "s.npy", "--pixel-size", repr(pixel_size), "--method", "wls",
                "-o", tmp_path / "d.npy"])
    assert r.exit_code == 0, r.stderr
    d = np.load(tmp_path / "d.npy").astype(np.float64)
    truth = depth * pixel_size
    relief, true_relief = np.nanmax(d) - np.nanmin(d), np.nanmax(truth) - np.nanmin(truth)
    assert abs(relief / true_relief - 1) < 0.05, (relief, true_relief)
    err = np.abs((d - np.nanmean(d)) - (truth - np.nanmean(truth)))[inside]
    assert np.median(err) < 0.02 * true_relief


def test_help_documents_exit_codes_and_outputs():
    r = invoke(["integrate", "--help"])
    assert r.exit_code == 0
    for word in ("--out-dir", "--json", "--jobs", "Exit codes", "--depth-at", "--preview"):
        assert word in r.stdout


def test_fnin_method_with_a_model_file(tmp_path):
    model = write_random_model(tmp_path / "net.safetensors")
    c = write_case(tmp_path, seed=30)
    out = tmp_path / "out"
    out.mkdir()
    args = ["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--model", model, "--out-dir", out,
            "--depth", ".npy", "--weights", ".npy", "--json", "--device", "cpu"]
    r = invoke(args)  # --method fnin is the default
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["method"] == "fnin" and rec["status"] == "ok"
    assert {"network", "solve"} <= set(rec["seconds"])
    w = np.load(out / "n_weights.npy")
    assert np.nanmin(w) >= 0 and np.nanmax(w) <= 1 and np.isfinite(w).sum() == rec["pixels"]
    first = [(out / f).read_bytes() for f in ("n.ply", "n_depth.npy", "n_weights.npy")]
    r = invoke(args + ["--force"])
    assert r.exit_code == 0
    assert [(out / f).read_bytes() for f in ("n.ply", "n_depth.npy", "n_weights.npy")] == first


def test_missing_bundled_weights_is_a_usage_error(tmp_path, monkeypatch):
    from fnin_cli.batch import options
    from fnin_cli.model import weights as model_weights

    assert options.DEFAULT_WEIGHTS is model_weights.DEFAULT_WEIGHTS  # one path, imported, not copied
    monkeypatch.setattr(options, "DEFAULT_WEIGHTS", tmp_path / "absent.safetensors")
    c = write_case(tmp_path, seed=2)
    r = invoke(["integrate", c["normals"], "-o", tmp_path / "m.ply"])
    assert r.exit_code == 2
    assert r.stderr.strip().startswith(f"error: {tmp_path / 'absent.safetensors'}: ")
    assert "--model" in r.stderr and "--method bini" in r.stderr
    assert not (tmp_path / "m.ply").exists()


# ------------------------------------------------------------------ fnin train

TINY_TRAIN = {"seed": 4, "steps": 3, "batch": 2, "res": 32, "warmup": 1, "val_every": 3, "val_scenes": 2,
              "val_res": 32, "ckpt_every": 3, "threads": 1,
              "net": {"width": 8, "modes": 4, "proj": 8, "att_width": 4, "min_side": 16}}


def _tiny_config(tmp_path):
    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(TINY_TRAIN))
    return cfg


def test_train_cli_end_to_end_and_refuses_to_overwrite(tmp_path):
    cfg, out = _tiny_config(tmp_path), tmp_path / "w.safetensors"
    r = invoke(["train", "--config", cfg, "--run-dir", tmp_path / "run", "--out", out, "--json"])
    assert r.exit_code == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["steps_done"] == 3 and out.exists() and (tmp_path / "MODEL_CARD.md").exists()
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["command"].startswith("fnin train") and card["train_config"]["device"] == "cpu"
    before = out.read_bytes()
    # a second run into the same --out stops before training, and leaves the weights alone
    r = invoke(["train", "--config", cfg, "--run-dir", tmp_path / "run2", "--out", out])
    assert r.exit_code == 2 and "--force" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert out.read_bytes() == before and not (tmp_path / "run2").exists()
    r = invoke(["train", "--config", cfg, "--run-dir", tmp_path / "run2", "--out", out, "--force", "--json"])
    assert r.exit_code == 0, r.stderr


def test_train_cli_out_inside_a_new_run_dir(tmp_path):
    """The README's form: --out inside a --run-dir that does not exist yet."""
    run = tmp_path / "runs" / "new"
    r = invoke(["train", "--config", _tiny_config(tmp_path), "--run-dir", run, "--out", run / "w.safetensors",
                "--json"])
    assert r.exit_code == 0, r.stderr
    assert (run / "w.safetensors").exists() and (run / "checkpoint.pt").exists()


@pytest.mark.parametrize("extra, message", [
    (["--workers", "-1"], "--workers"),
    (["--device", "tpu"], "cpu or cuda"),
    (["--out", "weights.pt"], ".safetensors"),
    (["--out", "missing/w.safetensors"], "does not exist"),
])
def test_train_cli_bad_options_are_one_line_errors(tmp_path, extra, message):
    r = invoke(["train", "--config", _tiny_config(tmp_path), "--run-dir", tmp_path / "run", *extra], cwd=tmp_path)
    assert r.exit_code == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_train_cli_cuda_without_a_gpu_is_a_one_line_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    r = invoke(["train", "--config", _tiny_config(tmp_path), "--run-dir", tmp_path / "run", "--device", "cuda"])
    assert r.exit_code == 2 and "CUDA" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_train_cli_bad_config_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = invoke(["train", "--config", bad, "--run-dir", tmp_path / "run"])
    assert r.exit_code == 2 and "bad.json" in r.stderr
    bad.write_text(json.dumps({"no_such_field": 1}))
    r = invoke(["train", "--config", bad, "--run-dir", tmp_path / "run"])
    assert r.exit_code == 2 and "bad config" in r.stderr


def test_train_cli_edges_stage_end_to_end(tmp_path):
    """Stage I, then the edges stage on it (--base), then `integrate --model` with the result."""
    cfg, base = _tiny_config(tmp_path), tmp_path / "base" / "w.safetensors"
    base.parent.mkdir()
    assert invoke(["train", "--config", cfg, "--run-dir", tmp_path / "run", "--out", base]).exit_code == 0
    edges = tmp_path / "edges.json"
    edges.write_text(json.dumps({**TINY_TRAIN, "stage": "edges", "side": 16, "fold_prob": 1.0,
                                 "net": {"edge_width": 4, "edge_dilations": [1, 2, 1]}}))
    out = tmp_path / "e" / "fnin.safetensors"
    r = invoke(["train", "--config", edges, "--base", base, "--run-dir", tmp_path / "e", "--out", out, "--json"])
    assert r.exit_code == 0, r.stderr
    card = json.loads(out.with_suffix(".json").read_text())
    assert card["train_config"]["stage"] == "edges" and "--base" in card["command"]
    assert card["base"]["card"]["weights"] == "w.safetensors"
    c = write_case(tmp_path, seed=31)
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--model", out, "-o",
                tmp_path / "m.ply", "--weights", tmp_path / "w.npy", "--json", "--device", "cpu"])
    assert r.exit_code == 0, r.stderr
    w = np.load(tmp_path / "w.npy")
    assert np.nanmin(w) >= 0 and np.nanmax(w) <= 1


@pytest.mark.parametrize("base, message", [(None, "needs --base"), ("missing.safetensors", "needs --base"),
                                           ("notes.safetensors", "cannot read FNIN weights")])
def test_train_cli_edges_stage_bad_base_is_a_one_line_error(tmp_path, base, message):
    (tmp_path / "notes.safetensors").write_text("not weights")
    edges = tmp_path / "edges.json"
    edges.write_text(json.dumps({**TINY_TRAIN, "stage": "edges", "net": {"edge_width": 4}}))
    extra = [] if base is None else ["--base", tmp_path / base]
    r = invoke(["train", "--config", edges, "--run-dir", tmp_path / "run", *extra], cwd=tmp_path)
    assert r.exit_code == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_network_side_option_reaches_the_network(tmp_path):
    """--network-side N is the API's network_side: bit-identical depth, and a different
    answer from the default cap on an image large enough to have a finer level."""
    from pathlib import Path

    dome = Path(__file__).resolve().parents[1] / "samples" / "dome"   # 192x256: short sides 48, 96, 192
    inp = load_input(dome)
    r = invoke(["integrate", dome, "--network-side", "128", "-o", tmp_path / "m.ply", "--depth", tmp_path / "d.npy"])
    assert r.exit_code == 0, r.stderr
    # the API under the CLI's thread counts (--threads 1): the network's float32 sums depend
    # on torch's thread count (docs/usage.md: results depend on --threads), and this process
    # may have another (OMP_NUM_THREADS/MKL_NUM_THREADS=2 failed here, issue 41)
    with limit_threads(1, torch=True):
        api = integrate(inp, method="fnin", network_side=128).depth
        default = integrate(inp, method="fnin").depth
    np.testing.assert_array_equal(np.load(tmp_path / "d.npy"), api)
    assert not np.array_equal(default[inp.mask], api[inp.mask])
    r = invoke(["integrate", dome, "--network-side", "8", "-o", tmp_path / "x.ply"])
    assert r.exit_code == 2 and "--network-side" in r.stderr and not (tmp_path / "x.ply").exists()


def test_a_broken_model_file_fails_each_network_input_instead_of_using_the_bundled_weights(tmp_path):
    """Regression: a --model that did not load was dropped, and fnin inputs silently ran on
    the bundled weights (exit 0, a mesh written)."""
    dome = Path(__file__).resolve().parents[1] / "samples" / "dome"
    bad = tmp_path / "broken.safetensors"
    bad.write_bytes(b"not a safetensors file")
    r = run_fnin(["integrate", dome, "-o", tmp_path / "m.ply", "--model", bad, "--json"])
    assert r.returncode == 1
    rec = json.loads(r.stdout)
    assert rec["status"] == "failed" and "cannot load FNIN weights" in rec["error"] and str(bad) in rec["error"]
    assert not (tmp_path / "m.ply").exists()
    ok = run_fnin(["integrate", dome, "-o", tmp_path / "w.ply", "--model", bad, "--method", "wls"])
    assert ok.returncode == 0 and (tmp_path / "w.ply").exists()      # no network: the file is not read
