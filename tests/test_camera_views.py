"""The camera-size mesh benchmark (`fnin bench meshes --size WxH`, fnin_cli.bench.camera_views)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fnin_cli.bench import camera_views
from fnin_cli.errors import FninError

from helpers_cli import run_fnin
from test_mesh_bench_train import mesh_dir  # noqa: F401  (the tiny mesh folder fixture)


# ------------------------------------------------------------------ bench meshes --size

def test_bench_meshes_size_renders_one_two_object_view_and_caches_it(mesh_dir, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FNIN_RENDER_CACHE", str(tmp_path / "cache"))
    runs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        p = run_fnin(["bench", "meshes", "--meshes", mesh_dir, "--size", "120x80", "--methods", "wls",
                      "--json", out, "--no-warmup"], timeout=300, env={"FNIN_RENDER_CACHE": str(tmp_path / "cache")})
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(out.read_text()))
    cached = list((tmp_path / "cache").glob("meshes_120x80_*.npz"))
    assert len(cached) == 1
    (name, rec), = runs[0]["cases"].items()
    assert name.endswith("_persp_120x80_v12") and "+" in name
    rec = rec["wls"]
    assert rec["status"] == "ok" and len(rec["objects"]) == 2 and rec["peak_rss_mb"] > 0
    assert {"load", "solve"} <= set(rec["stages"])
    if runs[0]["machine"].get("memory_method", "vmhwm") == "vmhwm":      # peaks per stage, the run's the largest
        assert set(rec["stage_peak_rss_mb"]) == {"setup", "solve"}
        assert max(rec["stage_peak_rss_mb"].values()) == pytest.approx(rec["peak_rss_mb"])
    # the second run read the cached render: the same case and the same error
    assert runs[1]["cases"][name]["wls"]["made_mm"] == rec["made_mm"]
    # and the cache holds what a fresh render gives, array for array
    (_, fresh, _), = camera_views.camera_view_set(mesh_dir, (120, 80), cache=False)
    (_, back, _), = camera_views.camera_view_set(mesh_dir, (120, 80))
    for a, b in ((fresh.mask, back.mask), (fresh.object_id, back.object_id), (fresh.K, back.K)):
        assert np.array_equal(a, b)
    for a, b in ((fresh.normals, back.normals), (fresh.depth, back.depth)):
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("bad", ["6000", "6000x", "0x10", "x4000", "30000x20000"])
def test_bench_size_errors_are_one_line(bad):
    with pytest.raises(FninError, match="--size"):
        camera_views.parse_frame(bad)
    p = run_fnin(["bench", "meshes", "--size", bad, "--methods", "wls"], timeout=120)
    assert p.returncode != 0 and "Traceback" not in p.stderr and "--size" in p.stderr


def test_bench_size_goes_with_meshes_only():
    p = run_fnin(["bench", "synthetic", "--size", "64x48", "--methods", "wls"], timeout=120)
    assert p.returncode != 0 and "--size goes with" in p.stderr
