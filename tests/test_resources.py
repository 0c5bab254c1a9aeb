"""fnin_cli.resources: thread limits are applied and restored; peak memory is seen."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (a second BLAS, scipy's own OpenBLAS)
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from fnin_cli.resources import THP_ENV, THREAD_ENV, PeakMemory, available_memory, limit_threads, torch_hugepages


def blas_threads():
    counts = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert counts, "no BLAS found by threadpoolctl"
    return counts


@pytest.fixture
def two_threads(monkeypatch):
    """Start from 2 threads everywhere (conftest pins BLAS to 1, the value to restore must differ)."""
    torch_before = torch.get_num_threads()
    for var in THREAD_ENV:
        monkeypatch.setenv(var, "2")
    monkeypatch.delenv("MKL_NUM_THREADS")
    torch.set_num_threads(2)
    with threadpool_limits(limits=2, user_api="blas"):
        yield
    torch.set_num_threads(torch_before)


def test_limit_threads_limits_and_restores(two_threads):
    before = blas_threads()
    with limit_threads(1):
        assert blas_threads() == [1] * len(before)
        assert torch.get_num_threads() == 1
        assert all(os.environ[v] == "1" for v in THREAD_ENV)
    assert blas_threads() == before
    assert torch.get_num_threads() == 2
    assert os.environ["OMP_NUM_THREADS"] == "2" and "MKL_NUM_THREADS" not in os.environ


def test_apply_again_keeps_the_first_state(two_threads):
    before = blas_threads()
    lim = limit_threads(1, torch=False, env=False)
    lim.apply()                     # as after loading more libraries
    assert blas_threads() == [1] * len(before)
    assert torch.get_num_threads() == 2 and os.environ["OMP_NUM_THREADS"] == "2"
    lim.restore()
    assert blas_threads() == before


def test_peak_memory_sees_200_mb():
    with PeakMemory() as mem:
        a = np.ones(200 * 2**20 // 8)   # 200 MiB, touched
        del a
    assert PeakMemory.method in ("vmhwm", "sampling", "maxrss")
    assert mem.peak - mem.base > 160 * 1024    # kB
    assert mem.peak_mb == mem.peak / 1024


def test_peak_memory_sampling_fallback(monkeypatch):
    """Regression: 200 MB from np.ones could come from heap pages already resident (the
    kept heap of an earlier in-process run, docs/decisions.md#kept-heap), raising no peak;
    fresh anonymous pages, each touched, always do."""
    import mmap

    monkeypatch.setattr(PeakMemory, "method", "sampling")
    with PeakMemory(release=False) as mem:
        buf = mmap.mmap(-1, 200 * 2**20)
        a = np.frombuffer(buf, dtype=np.uint8)
        a[::4096] = 1                   # touch every page
        time.sleep(0.05)                # resident for a few samples
        del a
        buf.close()
    assert mem.peak - mem.base > 160 * 1024


def test_available_memory():
    avail = available_memory()
    assert avail is None or avail > 2**20


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA")
def test_peak_memory_on_cuda():
    torch.zeros(1, device="cuda")
    with PeakMemory() as mem:
        x = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")
        del x
    assert mem.device_peak >= 64


def test_torch_hugepages_sets_the_switch_unless_the_user_did(monkeypatch):
    monkeypatch.delenv(THP_ENV, raising=False)
    assert torch_hugepages() is True and os.environ[THP_ENV] == "1"
    monkeypatch.setenv(THP_ENV, "0")
    assert torch_hugepages() is False and os.environ[THP_ENV] == "0"


@pytest.mark.parametrize("given, expected", [(None, "1"), ("0", "0")])
def test_network_modules_switch_huge_pages_on_before_torch_loads(given, expected):
    # a fresh process: the switch must be set when torch is first imported by fnin
    env = {k: v for k, v in os.environ.items() if k != THP_ENV}
    if given is not None:
        env[THP_ENV] = given
    code = ("import os, sys; import fnin_cli.model.weights; assert 'torch' in sys.modules; "
            f"print(os.environ.get('{THP_ENV}'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


def test_kept_heap_keeps_freed_pages_and_hands_them_back(monkeypatch):
    """Inside kept_heap a freed 64 MB array's pages are reused (no new page faults for the
    next one); at its end they are handed back (the RSS drops: whether later arrays fault
    afresh depends on the process's malloc history, which the full suite changes); the
    depth is the same with or without it; nested blocks restore once, also on an error."""
    import resource

    from fnin_cli import pipeline, resources
    from fnin_cli.resources import kept_heap

    def faults_of_second_array():
        a = np.ones(8_000_000)
        del a
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        b = np.ones(8_000_000)
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        del b
        return f1 - f0

    def rss_kb():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    with kept_heap():
        with pytest.raises(ZeroDivisionError), kept_heap():
            1 / 0
        assert resources._KEPT_HEAP["depth"] == 1
        kept = faults_of_second_array()
        a = np.ones(8_000_000)
        del a
        inside = rss_kb()          # the freed 64 MB stay mapped
    assert resources._KEPT_HEAP["depth"] == 0
    after = rss_kb()               # handed back at the block's end
    assert kept < 100
    assert inside - after > 30_000

    from helpers import camera, step_surface

    cam = camera("persp")
    surf, _ = step_surface(cam)
    inp = pipeline.build_input(surf.normals, None, surf.support, cam.K)
    with_heap = pipeline.integrate(inp, "fnin").depth

    class Nothing:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(pipeline, "kept_heap", Nothing)
    np.testing.assert_array_equal(pipeline.integrate(inp, "fnin").depth, with_heap)
