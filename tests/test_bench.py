"""`fnin bench`: the metric against hand-computed values, the report schema, the CLI, and
(with the shared data) agreement with the Python API on DiLiGenT."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fnin_cli import bench, io
from fnin_cli.bench.cases import align_and_errors, resolve_cases, synthetic_cases
from fnin_cli.bench import report
from fnin_cli.bench.runner import run_bench
from fnin_cli.resources import PeakMemory
from fnin_cli.errors import FninError
from fnin_cli.data.synthetic import make_scene

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DILIGENT = SHARED / "diligent"
TINY = ((1, False), (3, True))      # 48x48: one perspective, one orthographic scene


def need_diligent():
    if (DILIGENT / "cat" / "depth_gt.npz").exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but the shared DiLiGenT data is missing at {DILIGENT}")
    pytest.skip(f"no DiLiGenT data at {DILIGENT}")


def run_cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "fnin_cli.cli", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=timeout)


# ------------------------------------------------------------------ metric

def test_scale_alignment_hand_computed():
    est = np.array([[1.0, 2.0, 4.0], [5.0, 7.0, 100.0]])
    gt = np.array([[2.0, 4.2, 8.0], [10.0, np.nan, -3.0]])
    mask = np.array([[True, True, True], [True, True, False]])
    # evaluated: gt/est = 2, 2.1, 2, 2 -> scale 2; errors 0, 0.2, 0, 0
    # (7 has no GT; 100 is outside the mask)
    e = align_and_errors(est, gt, mask, perspective=True)
    assert e["scale"] == pytest.approx(2.0)
    assert e["made"] == pytest.approx(0.05)
    assert e["median"] == pytest.approx(0.0)
    assert e["p95"] == pytest.approx(0.17)          # linear interpolation at 0.95 * 3 = 2.85
    assert e["rmse"] == pytest.approx(0.1)
    assert e["pixels"] == 4 and e["missing"] == 0
    assert np.isnan(e["abs_error"][1, 1]) and np.isnan(e["abs_error"][1, 2])
    assert e["abs_error"][0, 1] == pytest.approx(0.2)


def test_offset_alignment_hand_computed():
    est = np.array([0.0, 1.0, 2.0, 3.0, 10.0, np.nan])
    gt = np.array([5.0, 6.0, 7.0, 8.0, 0.0, 1.0])
    mask = np.ones(6, bool)
    # gt - est = 5, 5, 5, 5, -10 -> offset 5; errors 0, 0, 0, 0, 15; last pixel has no estimate
    e = align_and_errors(est, gt, mask, perspective=False)
    assert e["offset"] == pytest.approx(5.0)
    assert e["made"] == pytest.approx(3.0)
    assert e["median"] == pytest.approx(0.0)
    assert e["p95"] == pytest.approx(12.0)          # 0.95 * 4 = 3.8 -> 0.8 * 15
    assert e["rmse"] == pytest.approx(math.sqrt(45.0))
    assert e["pixels"] == 5 and e["missing"] == 1


def test_metric_matches_spec_formula_with_nan_gt(rng):
    est = rng.uniform(1, 2, (20, 30))
    gt = 3.0 * est + rng.normal(0, 0.01, est.shape)
    gt[rng.uniform(size=gt.shape) < 0.2] = np.nan
    mask = rng.uniform(size=gt.shape) < 0.8
    g = np.where(mask, gt, np.nan)
    scale = np.nanmedian(g / est)
    made = np.nanmean(np.abs(scale * np.where(mask, est, np.nan) - g))
    e = align_and_errors(est, gt, mask, True)
    assert e["scale"] == scale and e["made"] == pytest.approx(made, rel=1e-12)


def test_metric_rejects_nothing_to_compare():
    with pytest.raises(FninError):
        align_and_errors(np.ones((2, 2)), np.full((2, 2), np.nan), np.ones((2, 2), bool), True)
    with pytest.raises(FninError):
        align_and_errors(np.ones((2, 2)), np.ones((3, 2)), np.ones((2, 2), bool), True)


def test_colour_map_background_and_ends():
    img = report.colourise(np.array([[np.nan, 0.0, 5.0, 50.0]]), 5.0)
    assert img.dtype == np.uint8 and img.shape == (1, 4, 3)
    assert tuple(img[0, 0]) == (255, 255, 255)
    assert tuple(img[0, 1]) == tuple(report._CMAP_ANCHORS[0].astype(int))
    assert tuple(img[0, 2]) == tuple(img[0, 3]) == tuple(report._CMAP_ANCHORS[-1].astype(int))


def test_peak_memory_sees_an_allocation():
    with PeakMemory() as mem:
        a = np.ones(100 * 2**20 // 8)   # 100 MiB, touched
        del a
    assert mem.peak - mem.base > 80 * 1024    # kB


# ------------------------------------------------------------------ report

def _check_schema(report, cases, methods):
    assert isinstance(report["dataset"], str)
    m = report["machine"]
    for key, typ in (("cpu", str), ("logical_cores", int), ("threads", int), ("device", str),
                     ("numpy", str), ("scipy", str), ("date", str), ("memory_method", str)):
        assert isinstance(m[key], typ), key
    assert "torch" in m
    assert report["methods"] == methods
    assert report["warmup"]["excluded"] is True
    assert list(report["cases"]) == cases
    for c in cases:
        assert list(report["cases"][c]) == methods
        for meth in methods:
            r = report["cases"][c][meth]
            assert r["status"] == "ok", r
            for key in ("made_mm", "median_mm", "p95_mm", "rmse_mm", "seconds", "peak_rss_mb"):
                assert isinstance(r[key], float) and math.isfinite(r[key]) and r[key] >= 0, key
            assert isinstance(r["pixels"], int) and r["pixels"] > 0
            assert {"load", "network", "solve", "write"} <= set(r["stages"])
            assert all(isinstance(v, float) for v in r["stages"].values())
            assert r["median_mm"] <= r["p95_mm"] and r["made_mm"] <= r["rmse_mm"] + 1e-15
    for meth in methods:
        mean = report["mean"][meth]
        assert mean["made_mm"] == pytest.approx(np.mean([report["cases"][c][meth]["made_mm"] for c in cases]))
        assert mean["seconds_total"] == pytest.approx(sum(report["cases"][c][meth]["seconds"] for c in cases))
    json.loads(json.dumps(report, allow_nan=False))     # plain JSON, no NaN


def test_report_schema_and_outputs(tmp_path):
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    cases = synthetic_cases(TINY, size=48)
    seen = []
    report = run_bench(cases, ["wls", "bini"], out_dir=tmp_path,
                       progress=lambda done, total, c, m: seen.append((done, total, c, m)))
    _check_schema(report, [c.name for c in cases], ["wls", "bini"])
    assert report["dataset"] == "synthetic"
    assert seen[0] == (0, 4, cases[0].name, "wls") and seen[-1] == (4, 4, None, None)
    assert os.environ.get("OPENBLAS_NUM_THREADS") == before     # thread settings restored
    assert "offset" in report["cases"]["ortho-03"]["bini"] and "scale" in report["cases"]["persp-01"]["bini"]
    depth = np.load(tmp_path / "persp-01" / "bini.depth.npy")
    assert depth.dtype == np.float32 and depth.shape == (48, 48)
    for c in ("persp-01", "ortho-03"):
        for m in ("wls", "bini"):
            assert (tmp_path / c / f"{m}.error.png").stat().st_size > 0
    assert (tmp_path / "summary.png").stat().st_size > 0
    # the same cases and methods give the same errors (deterministic inputs and solvers)
    again = run_bench(cases, ["bini"], warmup=False)
    assert again["warmup"] is None
    assert again["cases"]["persp-01"]["bini"]["made_mm"] == report["cases"]["persp-01"]["bini"]["made_mm"]


def test_mesh_on_request(tmp_path):
    report = run_bench(synthetic_cases(TINY[:1], 48), ["wls"], warmup=False, out_dir=tmp_path, mesh=True)
    rec = report["cases"]["persp-01"]["wls"]
    try:
        import fnin_cli.mesh  # noqa: F401
    except ImportError:
        assert "mesh not written" in rec["warnings"][0]
    else:
        assert Path(rec["outputs"]["mesh"]).stat().st_size > 0 and "warnings" not in rec


def test_isolated_subprocess_gives_the_same_errors():
    cases = synthetic_cases(TINY[:1], size=48)
    a = run_bench(cases, ["wls"], warmup=False)
    b = run_bench(cases, ["wls"], warmup=False, isolate=True)
    assert b["isolate"] is True and b["machine"]["memory_method"].startswith("per-subprocess")
    assert b["cases"]["persp-01"]["wls"]["made_mm"] == a["cases"]["persp-01"]["wls"]["made_mm"]


def test_repeat_keeps_the_fastest_run_and_the_first_runs_errors(tmp_path):
    cases = synthetic_cases(TINY, size=48)
    seen = []
    one = run_bench(cases, ["wls", "bini"], warmup=False)
    rep = run_bench(cases, ["wls", "bini"], warmup=False, repeat=3, out_dir=tmp_path,
                    progress=lambda done, total, c, m: seen.append((done, total, c, m)))
    assert rep["repeat"] == 3 and "best of 3" in rep["timing"]
    # cases outer, then the runs, methods interleaved within each run
    assert [x[2:] for x in seen[:6]] == [(cases[0].name, m) for m in ("wls", "bini")] * 3
    assert seen[-1] == (12, 12, None, None)
    for c in cases:
        for m in ("wls", "bini"):
            r = rep["cases"][c.name][m]
            assert len(r["seconds_all"]) == 3 and r["seconds"] == min(r["seconds_all"])
            assert r["made_mm"] == one["cases"][c.name][m]["made_mm"]     # deterministic runs
    assert rep["mean"]["bini"]["seconds_total"] == pytest.approx(
        sum(rep["cases"][c.name]["bini"]["seconds"] for c in cases))
    assert (tmp_path / "persp-01" / "bini.depth.npy").exists()
    with pytest.raises(FninError, match="repeat"):
        run_bench(cases, ["wls"], repeat=0)


def test_unknown_method_and_bad_threads():
    with pytest.raises(FninError, match="unknown method"):
        run_bench(synthetic_cases(TINY[:1], 48), ["wls", "poisson"])
    with pytest.raises(FninError, match="threads"):
        run_bench(synthetic_cases(TINY[:1], 48), ["wls"], threads=0)


# ------------------------------------------------------------------ folders of cases

def _write_folder_case(folder: Path, seed: int, ortho: bool, gt_scale: float = 1.0):
    """A DiLiGenT-layout case from a synthetic scene; orthographic ones get pixel_size.txt."""
    s = make_scene(seed, 48, ortho_prob=1.0 if ortho else 0.0)
    folder.mkdir(parents=True)
    io.write_normal_map(folder / "normal_map.png", s.normals, force=True)
    io.write_png(folder / "mask.png", (s.mask * 255).astype(np.uint8))
    gt = s.depth * gt_scale
    if s.K is not None:
        np.savetxt(folder / "K.txt", s.K)
    else:
        (folder / "pixel_size.txt").write_text(f"{gt_scale}\n")
    np.savez(folder / "depth_gt.npz", depth_gt=gt.astype(np.float32))
    return s


def test_folder_of_cases(tmp_path):
    _write_folder_case(tmp_path / "a_persp", 1, False)
    _write_folder_case(tmp_path / "b_ortho", 3, True, gt_scale=0.01)
    _write_folder_case(tmp_path / "c_ortho", 3, True, gt_scale=1.0)
    (tmp_path / "d_no_gt").mkdir()
    io.write_png(tmp_path / "d_no_gt" / "normal_map.png", np.zeros((4, 4, 3), np.uint8))
    name, cases = resolve_cases(str(tmp_path))
    assert [c.name for c in cases] == ["a_persp", "b_ortho", "c_ortho"]    # no depth_gt.npz: no case
    assert cases[1].pixel_size == 0.01
    report = run_bench(cases, ["wls"], warmup=False, dataset=name)
    assert report["dataset"] == str(tmp_path)
    r = {c: report["cases"][c]["wls"] for c in ("a_persp", "b_ortho", "c_ortho")}
    assert all(x["status"] == "ok" for x in r.values()), r
    assert r["a_persp"]["perspective"] and not r["b_ortho"]["perspective"]
    assert r["a_persp"]["made_mm"] < 1e-3                     # smooth dome at depth ~1
    # pixel_size.txt is honoured: the same scene at 1/100 of the size has ~1/100 of the error
    # (not exactly: the fixed prior weight lambda matters more at pixel size 1)
    assert r["b_ortho"]["made_mm"] == pytest.approx(0.01 * r["c_ortho"]["made_mm"], rel=0.05)
    # a single case folder is a benchmark of one case
    assert [c.name for c in resolve_cases(str(tmp_path / "a_persp"))[1]] == ["a_persp"]


def test_diligent_location_and_missing_message(tmp_path, monkeypatch):
    monkeypatch.delenv("FNIN_DILIGENT", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(bench.cases, "SHARED_DATA", tmp_path / "shared" / "data")
    assert bench.diligent_dir() == tmp_path / "cache" / "fnin" / "diligent"
    monkeypatch.setenv("FNIN_DILIGENT", str(tmp_path / "env"))
    assert bench.diligent_dir() == tmp_path / "env"
    assert bench.diligent_dir(tmp_path / "x") == tmp_path / "x"
    with pytest.raises(FninError) as exc:
        resolve_cases("diligent")
    msg = str(exc.value)
    assert "\n" not in msg and str(tmp_path / "env") in msg
    assert "Fig7_diligent" in msg and "github.com/xucao-42/bilateral_normal_integration" in msg
    with pytest.raises(FninError, match="unknown benchmark"):
        resolve_cases(str(tmp_path / "nowhere"))


def test_diligent_and_meshes_found_by_one_rule(tmp_path, monkeypatch):
    # issue 51: bench diligent looked only in the cache while bench meshes found ../shared/data
    monkeypatch.delenv("FNIN_DILIGENT", raising=False)
    monkeypatch.delenv("FNIN_MESHES", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shared = tmp_path / "shared" / "data"
    monkeypatch.setattr(bench.cases, "SHARED_DATA", shared)
    for name in ("diligent", "meshes"):
        assert bench.data_dir(name) == tmp_path / "cache" / "fnin" / name
        (shared / name).mkdir(parents=True)
        assert bench.data_dir(name) == shared / name
        monkeypatch.setenv(f"FNIN_{name.upper()}", str(tmp_path / "env"))
        assert bench.data_dir(name) == tmp_path / "env"
        assert bench.data_dir(name, tmp_path / "x") == tmp_path / "x"
    assert bench.diligent_dir() == tmp_path / "env"


# ------------------------------------------------------------------ CLI

def test_cli_synthetic_wls_json(tmp_path):
    out = tmp_path / "out.json"
    csv = tmp_path / "out.csv"
    p = run_cli("bench", "synthetic", "--methods", "wls", "--json", out, "--csv", csv)
    assert p.returncode == 0, p.stderr
    report = json.loads(out.read_text())
    names = [c.name for c in synthetic_cases()]
    _check_schema(report, names, ["wls"])
    assert "mean" in p.stdout and "wls" in p.stdout            # the table goes to stdout (issue 32)
    assert "mean" not in p.stderr                              # progress and messages to stderr
    rows = csv.read_text().splitlines()
    assert rows[0].startswith("case,method,status,made_mm") and len(rows) == 1 + len(names)


def test_cli_usage_errors(tmp_path):
    p = run_cli("bench", "diligent", "--data", tmp_path / "missing", "--methods", "wls")
    assert p.returncode == 2
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Fig7_diligent" in lines[0], p.stderr
    p = run_cli("bench", "synthetic", "--methods", "wls,nope")
    assert p.returncode == 2 and "unknown method" in p.stderr
    p = run_cli("bench", "synthetic", "--methods", "wls", "--mesh")
    assert p.returncode == 2


def test_cli_failed_case_exits_1(tmp_path):
    _write_folder_case(tmp_path / "good", 1, False)
    _write_folder_case(tmp_path / "bad", 3, False)
    np.savez(tmp_path / "bad" / "depth_gt.npz", depth_gt=np.ones((7, 7), np.float32))   # wrong shape
    out = tmp_path / "r.json"
    p = run_cli("bench", tmp_path, "--methods", "wls", "--json", out, "--no-warmup")
    assert p.returncode == 1, p.stderr
    report = json.loads(out.read_text())
    assert report["cases"]["good"]["wls"]["status"] == "ok"
    assert report["cases"]["bad"]["wls"]["status"] == "failed"
    assert "ground truth is 7x7" in report["cases"]["bad"]["wls"]["error"]
    assert report["mean"]["wls"]["made_mm"] is None and report["mean"]["wls"]["failed"] == 1
    assert "error: wls failed on bad" in p.stderr


# ------------------------------------------------------------------ DiLiGenT (shared data)

def test_diligent_cases_resolve():
    need_diligent()
    name, cases = resolve_cases("diligent", data=DILIGENT)
    assert name == "diligent" and [c.name for c in cases] == list(bench.DILIGENT_OBJECTS)


def test_diligent_cli_equals_python_api(tmp_path):
    """`fnin bench` on one DiLiGenT object gives exactly the API's MADE (bini)."""
    need_diligent()
    from fnin_cli.pipeline import integrate, load_input

    out = tmp_path / "cat.json"
    p = run_cli("bench", DILIGENT / "cat", "--methods", "bini", "--json", out, "--no-warmup")
    assert p.returncode == 0, p.stderr
    got = json.loads(out.read_text())["cases"]["cat"]["bini"]

    inp = load_input(DILIGENT / "cat")
    res = integrate(inp, "bini")
    with np.load(DILIGENT / "cat" / "depth_gt.npz") as f:
        gt = f["depth_gt"]
    want = align_and_errors(res.depth, gt, inp.mask, perspective=True)
    assert got["made_mm"] == want["made"]
    assert got["rmse_mm"] == want["rmse"] and got["pixels"] == res.pixels
    assert abs(got["made_mm"] - 0.074) < 0.005            # BiNI's published cat: 0.074 mm


@pytest.mark.slow
def test_diligent_bench_reproduces_bini_and_matches_api(tmp_path):
    """`fnin bench diligent`: BiNI's published mean, and cat exactly as through the API."""
    need_diligent()
    from fnin_cli.pipeline import integrate, load_input

    out = tmp_path / "b.json"
    p = run_cli("bench", "diligent", "--data", DILIGENT, "--methods", "bini", "--json", out)
    assert p.returncode == 0, p.stderr
    report = json.loads(out.read_text())
    assert report["dataset"] == "diligent" and list(report["cases"]) == list(bench.DILIGENT_OBJECTS)
    assert abs(report["mean"]["bini"]["made_mm"] - 1.504) < 0.05
    inp = load_input(DILIGENT / "cat")
    with np.load(DILIGENT / "cat" / "depth_gt.npz") as f:
        want = align_and_errors(integrate(inp, "bini").depth, f["depth_gt"], inp.mask, perspective=True)
    assert report["cases"]["cat"]["bini"]["made_mm"] == want["made"]


def test_model_option_measures_other_weights(tmp_path):
    """--model: the network methods run with the given weights (recorded with its sha256);
    bundled and given weights differ in their numbers; a broken file is a one-line error."""
    sys.path.insert(0, str(Path(__file__).parent))
    from helpers_cli import write_random_model

    model = write_random_model(tmp_path / "net.safetensors")
    cases = synthetic_cases(TINY[:1], size=48)
    mine = run_bench(cases, ["fnin", "wls"], warmup=False, model_path=model)
    bundled = run_bench(cases, ["fnin"], warmup=False)
    assert mine["model"]["weights"] == str(model) and bundled["model"]["weights"] == "bundled"
    assert len(mine["model"]["sha256"]) == 64 and mine["model"]["sha256"] != bundled["model"]["sha256"]
    assert mine["cases"]["persp-01"]["fnin"]["made_mm"] != bundled["cases"]["persp-01"]["fnin"]["made_mm"]
    iso = run_bench(cases, ["fnin"], warmup=False, model_path=model, isolate=True)
    assert iso["cases"]["persp-01"]["fnin"]["made_mm"] == mine["cases"]["persp-01"]["fnin"]["made_mm"]
    assert run_bench(cases, ["wls"], warmup=False, model_path=model)["model"] is None
    broken = tmp_path / "broken.safetensors"
    broken.write_text("no")
    p = run_cli("bench", "synthetic", "--methods", "fnin", "--model", broken)
    assert p.returncode == 2 and len([x for x in p.stderr.splitlines() if x.strip()]) == 1, p.stderr
    assert "broken.safetensors" in p.stderr


def test_the_table_shows_the_piece_by_piece_error_beside_the_whole_one():
    """Issue 43: where a method leaves loose pieces the normals cannot place, the table
    shows its MADE with each piece aligned on its own beside the whole-object MADE (bench
    synthetic persp-09: whole 0.0064, pieces 1.4e-4), so luck in placing them is visible."""
    import io as stdio

    from rich.console import Console

    from fnin_cli.bench.report import fmt_error, rich_table, table_legend

    case = [c for c in resolve_cases("synthetic")[1] if c.name == "persp-09"][0]
    rep = run_bench([case], ["default", "wls"], warmup=False)
    rec = rep["cases"]["persp-09"]["default"]
    assert rec["piece_made_mm"] < 0.1 * rec["made_mm"]
    assert rep["mean"]["default"]["piece_made_mm"] == rec["piece_made_mm"]
    buf = stdio.StringIO()
    Console(file=buf, width=200, color_system=None).print(rich_table(rep))
    text = buf.getvalue()
    assert "piece" in text and fmt_error(rec["piece_made_mm"]) in text
    assert "piece: MADE with each loose piece" in table_legend(rep)
    # a method with no loose piece anywhere gets no piece column
    assert text.count("piece") == 1 + ("piece_made_mm" in rep["mean"]["wls"])
