"""The camera-size mesh benchmark (`fnin bench meshes --size WxH`, fnin_cli.bench.camera_views)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fnin_cli.bench import camera_views
from fnin_cli.errors import FninError

from helpers_cli import run_fnin
from test_mesh_bench_train import _box, _sphere, mesh_dir  # noqa: F401  (the tiny mesh folder fixture)


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


# one render of the camera view in a fresh process under the given thread settings
_RENDER_CHILD = r"""
import json, sys
import numpy as np
cfg = json.loads(sys.argv[1])
if cfg["torch"]:
    import torch
    torch.set_num_threads(cfg["torch"])
from threadpoolctl import threadpool_limits
from fnin_cli.bench import camera_views
with threadpool_limits(limits=cfg["blas"]):
    (_, s, _), = camera_views.camera_view_set(cfg["meshes"], (120, 80), cache=False)
np.savez(cfg["out"], depth=s.depth, normals=s.normals, mask=s.mask, object_id=s.object_id)
"""


def test_camera_view_render_is_bitwise_the_same_under_any_thread_settings(tmp_path):
    # issue 41: the render a `fnin bench` subprocess cached (BLAS limited to one thread) and
    # a fresh one in the test process differed in the last bits (the meshes' rotation was a
    # BLAS matrix product). A fine sphere (33 542 vertices: OpenBLAS splits a product that
    # large over its threads) and a box, rendered in processes with 1 and 2 threads for
    # OpenMP, BLAS and torch, and, on x86-64, another OpenBLAS kernel (SSE3, no fused
    # multiply-add; ignored by other BLAS builds), must agree bit for bit.
    folder = tmp_path / "meshes"
    folder.mkdir()
    V, F = _sphere(130)
    assert len(V) > 30000
    np.savez(folder / "boot.npz", vertices=V * [1, 0.8, 0.6], faces=F)
    V, F = _box()
    np.savez(folder / "hand.npz", vertices=V, faces=F)
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    settings = [{"threads": 1, "torch": 0, "core": None},
                {"threads": 2, "torch": 2, "core": "Prescott" if x86 else None},
                {"threads": 2, "torch": 1, "core": None}]
    renders = []
    for i, st in enumerate(settings):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(camera_views.__file__).parents[2]),
                                                           os.environ.get("PYTHONPATH", "")]))
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(st["threads"])
        env.pop("OPENBLAS_CORETYPE", None)
        if st["core"]:
            env["OPENBLAS_CORETYPE"] = st["core"]
        cfg = {"torch": st["torch"], "blas": st["threads"], "meshes": str(folder), "out": str(tmp_path / f"r{i}.npz")}
        p = subprocess.run([sys.executable, "-c", _RENDER_CHILD, json.dumps(cfg)], capture_output=True, text=True,
                           env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        with np.load(cfg["out"]) as d:
            renders.append({k: d[k] for k in d.files})
    (_, here, _), = camera_views.camera_view_set(folder, (120, 80), cache=False)
    renders.append({"depth": here.depth, "normals": here.normals, "mask": here.mask, "object_id": here.object_id})
    first = renders[0]
    assert first["mask"].sum() > 1000 and set(np.unique(first["object_id"])) == {-1, 0, 1}
    for other in renders[1:]:
        for key in ("depth", "normals", "mask", "object_id"):
            a, b = first[key], other[key]
            assert a.dtype == b.dtype and a.shape == b.shape, key
            differ = int(np.count_nonzero(a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1)))
            assert differ == 0, f"{key}: {differ} bytes differ"


@pytest.mark.parametrize("bad", ["6000", "6000x", "0x10", "x4000", "30000x20000"])
def test_bench_size_errors_are_one_line(bad):
    with pytest.raises(FninError, match="--size"):
        camera_views.parse_frame(bad)
    p = run_fnin(["bench", "meshes", "--size", bad, "--methods", "wls"], timeout=120)
    assert p.returncode != 0 and "Traceback" not in p.stderr and "--size" in p.stderr


def test_bench_size_goes_with_meshes_only():
    p = run_fnin(["bench", "synthetic", "--size", "64x48", "--methods", "wls"], timeout=120)
    assert p.returncode != 0 and "--size goes with" in p.stderr


def test_two_benches_rendering_one_view_at_once_both_write_the_cache(mesh_dir, tmp_path, monkeypatch):  # noqa: F811
    """Regression: two `fnin bench meshes --size` runs started together both wrote the
    render cache through one temporary name, and the second rename failed ("cannot write
    the render cache"). Each write now has a temporary file of its own."""
    monkeypatch.setenv("FNIN_RENDER_CACHE", str(tmp_path / "cache"))
    written = []
    real_savez = np.savez

    def savez(file, **arrays):
        written.append(str(file))
        if len(written) == 1:            # the other bench writes and renames while this one writes
            camera_views.camera_view_set(mesh_dir, (120, 80))
        real_savez(file, **arrays)

    monkeypatch.setattr(np, "savez", savez)
    (_, scene, _), = camera_views.camera_view_set(mesh_dir, (120, 80))
    assert len(written) == 2 and written[0] != written[1]
    cached = list((tmp_path / "cache").glob("*.npz"))
    assert [p.name.startswith("meshes_120x80_") for p in cached] == [True]
    (_, back, _), = camera_views.camera_view_set(mesh_dir, (120, 80))
    assert np.array_equal(back.mask, scene.mask)
