"""Batch use: many inputs, some broken; --jobs; Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from fnin_cli import io
from fnin_cli.conventions import from_internal
from helpers_cli import PERSP_SEEDS, invoke, run_fnin, scene, write_case, write_folder, write_random_model

EXTRA = ["--depth", ".npy", "--weights", ".exr", "--method", "wls"]


def _corpus(root):
    """20 inputs: 10 DiLiGenT-layout folders, 5 .npy/.png files, 5 broken ones."""
    root.mkdir()
    good, bad = [], []
    for i, seed in enumerate(PERSP_SEEDS[:10]):
        good.append(write_folder(root / f"scan{i:02d}", seed=seed))
    for i, seed in enumerate(PERSP_SEEDS[10:15]):
        if i % 2:
            good.append(write_case(root, seed=seed, name=f"file{i}", with_mask=False, with_K=False)["normals"])
        else:
            path = root / f"file{i}.npy"
            np.save(path, from_internal(scene(seed).normals, "ps"))
            good.append(path)
    (root / "broken0.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(200))
    data = (root / "file1.png").read_bytes()
    (root / "broken1.png").write_bytes(data[: len(data) // 2])
    io.write_png(root / "broken2.png", np.zeros((48, 48), np.uint16))
    np.save(root / "broken3.npy", scene(2).normals[..., 0])  # one channel, not a normal map
    # (an OpenCV-frame .npy is no longer broken: --convention auto reads it; issue 16)
    empty = write_folder(root / "broken4", seed=3)
    io.write_png(empty / "mask.png", np.zeros((48, 48), np.uint8))
    bad = [root / "broken0.png", root / "broken1.png", root / "broken2.png", root / "broken3.npy", empty]
    # interleave so failures sit between successes
    inputs = []
    for i in range(5):
        inputs += good[3 * i: 3 * i + 3] + [bad[i]]
    return inputs, good, bad


def _name(p):
    return p.name if p.is_dir() else p.stem


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    inputs, good, bad = _corpus(root / "in")
    single = root / "single"
    single.mkdir()
    for p in good:  # reference: every input on its own, in-process
        r = invoke(["integrate", p, "--out-dir", single, *EXTRA])
        assert r.exit_code == 0, r.stderr
    runs = {}
    for jobs in (1, 2):
        out = root / f"jobs{jobs}"
        out.mkdir()
        t0 = time.perf_counter()
        proc = run_fnin(["integrate", *inputs, "--out-dir", out, "--jobs", jobs, "--json", *EXTRA], timeout=300)
        runs[jobs] = (out, proc, time.perf_counter() - t0)
    return inputs, good, bad, single, runs


@pytest.mark.parametrize("jobs", [1, 2])
def test_batch_writes_the_good_ones_and_exits_1(batch, jobs):
    inputs, good, bad, single, runs = batch
    out, proc, seconds = runs[jobs]
    assert proc.returncode == 1, proc.stderr
    expected = sorted(f"{_name(p)}{suffix}" for p in good for suffix in (".ply", "_depth.npy", "_weights.exr"))
    assert sorted(os.listdir(out)) == expected  # 15 x 3 files, nothing for the broken ones, no temp files
    # byte-identical to running each input alone
    for name in expected:
        assert (out / name).read_bytes() == (single / name).read_bytes(), name


@pytest.mark.parametrize("jobs", [1, 2])
def test_batch_reports(batch, jobs):
    inputs, good, bad, single, runs = batch
    out, proc, seconds = runs[jobs]
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["input"] for r in recs] == [str(p) for p in inputs]  # input order, whatever finished first
    assert [r["status"] for r in recs] == ["failed" if p in bad else "ok" for p in inputs]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 5
    for p, line in zip(bad, errors):
        assert str(p) in line
    assert "15 ok, 5 failed" in proc.stderr and f"--jobs {jobs}" in proc.stderr  # the summary table
    assert "Traceback" not in proc.stderr


def test_jobs_2_is_not_slower_than_a_crawl(batch):
    # 20 tiny inputs: worker start-up dominates; guard against pathological slowness only
    _, _, _, _, runs = batch
    assert runs[1][2] < 60 and runs[2][2] < 60


def test_fnin_workers_load_the_model_and_match_single_runs(tmp_path):
    model = write_random_model(tmp_path / "net.safetensors")
    inputs = [write_folder(tmp_path / "in" / f"obj{i}", seed=s) for i, s in enumerate(PERSP_SEEDS[:4])]
    common = ["--model", model, "--depth", ".npy", "--weights", ".npy", "--device", "cpu"]
    single, pool = tmp_path / "single", tmp_path / "pool"
    single.mkdir()
    pool.mkdir()
    for p in inputs:
        r = invoke(["integrate", p, "--out-dir", single, *common])
        assert r.exit_code == 0, r.stderr
    proc = run_fnin(["integrate", *inputs, "--out-dir", pool, "--jobs", 2, "--json", *common], timeout=300)
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(x) for x in proc.stdout.splitlines()]
    # the network was loaded by the worker initializer, not per input
    assert all(r["seconds"]["load_model"] < 0.05 for r in recs), [r["seconds"] for r in recs]
    names = sorted(os.listdir(single))
    assert len(names) == 12 and sorted(os.listdir(pool)) == names
    for n in names:
        assert (pool / n).read_bytes() == (single / n).read_bytes(), n


def _interrupt(tmp_path, jobs):
    inp = tmp_path / "in"
    inp.mkdir()
    inputs = []
    for i in range(24):
        p = inp / f"s{i:02d}.npy"
        np.save(p, from_internal(scene(PERSP_SEEDS[i % 20], size=96).normals, "ps"))
        inputs.append(p)
    out = tmp_path / "out"
    out.mkdir()
    cmd = [sys.executable, "-c", "from fnin_cli.cli import main; main()", "integrate", *map(str, inputs),
           "--out-dir", str(out), "--method", "bini", "--jobs", str(jobs), "--json"]
    # Ctrl-C's default action restored in the child: a test run started in the background
    # (`cmd &`) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and not any(n.endswith(".ply") for n in os.listdir(out)):
        time.sleep(0.05)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # like Ctrl-C in a terminal: the whole process group
    stdout, stderr = proc.communicate(timeout=60)
    return proc.returncode, stdout, stderr, out


@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_stops_cleanly(tmp_path, jobs):
    import trimesh

    code, stdout, stderr, out = _interrupt(tmp_path, jobs)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    names = os.listdir(out)
    assert 0 < len(names) < 24, names  # stopped early, kept what was finished
    assert not [n for n in names if n.startswith(".") or ".part" in n]  # no partial files
    recs = [json.loads(x) for x in stdout.splitlines()]
    # one record per input, in input order, also for those never started (issue 16)
    assert [r["input"] for r in recs] == [str(p) for p in sorted((tmp_path / "in").iterdir())]
    assert {r["status"] for r in recs} <= {"ok", "interrupted", "not started"}
    assert "ok" in {r["status"] for r in recs} and recs[-1]["status"] == "not started"
    assert all(r["outputs"] == {} for r in recs if r["status"] == "not started")
    # every file there is accounted for by a record (finished before the interrupt)
    assert {os.path.basename(r["outputs"]["mesh"]) for r in recs if r["outputs"]} == set(names)
    for n in names:  # every file there is complete
        mesh = trimesh.load(out / n, process=False)
        assert len(mesh.vertices) > 100
