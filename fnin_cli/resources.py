"""Threads and memory of this process: thread limits and peak-memory measurement.

Threads: :func:`limit_threads` holds torch's intra-op threads and every loaded BLAS
(through threadpoolctl: OpenBLAS, MKL, BLIS, FlexiBLAS) to a fixed count, and sets
``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/``MKL_NUM_THREADS`` for child processes;
everything is put back on exit. Multi-threaded BLAS on a loaded 2-vCPU machine can be
orders of magnitude slower (measured: 4 s instead of milliseconds for pyamg's coarse-grid
pseudo-inverse of a 48x48 map; AMG setup 10-30x slower), and a fixed count keeps results
independent of ``--jobs``::

    with limit_threads(1):
        ...
    lim = limit_threads(4)     # applied now, like threadpoolctl.threadpool_limits
    import scipy.linalg        # loads another BLAS ...
    lim.apply()                # ... which gets the same count
    lim.restore()

Memory: :class:`PeakMemory` measures the peak resident memory of a ``with`` block (the
kernel's high-water mark VmHWM, reset through ``/proc/self/clear_refs``; where that is
not allowed a thread samples the RSS every 5 ms; without ``/proc`` the process's lifetime
peak from ``getrusage``) and, when torch has CUDA initialised, the peak device memory.
:func:`available_memory` is what a new allocation can get. :func:`torch_hugepages` lets
PyTorch's CPU tensors of 2 MB or more use transparent huge pages; :class:`kept_heap` keeps
freed memory mapped for reuse during a block (the rounds).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading

THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# ------------------------------------------------------------------ threads

class ThreadLimit:
    """``n`` threads for torch, the loaded BLAS libraries and (env) child processes.

    ``torch``: True sets torch's intra-op threads (importing torch), None only if torch is
    already imported, False leaves torch alone. ``blas`` and ``env`` switch the BLAS
    limit and the environment variables. Created through :func:`limit_threads`.
    """

    def __init__(self, n: int, torch: bool | None = None, blas: bool = True, env: bool = True):
        self.n = int(n)
        self._torch, self._blas, self._env = torch, blas, env
        self._env_before: dict | None = None
        self._torch_before: int | None = None
        self._limiters: list = []

    def apply(self) -> "ThreadLimit":
        """Set the count; again after more libraries were loaded to cover them too.

        Only the state before the first call is restored (for each library, the count it
        had before it was first limited here).
        """
        if self._env:
            if self._env_before is None:
                self._env_before = {v: os.environ.get(v) for v in THREAD_ENV}
            for var in THREAD_ENV:
                os.environ[var] = str(self.n)
        if self._blas:
            try:
                self._limiters.append(_blas_controller().limit(limits=self.n, user_api="blas"))
            except Exception:  # a BLAS threadpoolctl cannot drive: run on, unlimited
                pass
        if self._torch or (self._torch is None and "torch" in sys.modules):
            try:
                import torch

                if self._torch_before is None:
                    self._torch_before = torch.get_num_threads()
                torch.set_num_threads(self.n)
            except Exception:  # torch missing or broken: the network methods report it
                pass
        return self

    def restore(self) -> None:
        """Put back the counts and variables from before the first :meth:`apply`."""
        # newest first, so each library ends at its count from before it was first limited
        while self._limiters:
            self._limiters.pop().restore_original_limits()
        if self._torch_before is not None:
            sys.modules["torch"].set_num_threads(self._torch_before)
            self._torch_before = None
        if self._env_before is not None:
            for var, val in self._env_before.items():
                if val is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = val
            self._env_before = None

    def __enter__(self) -> "ThreadLimit":
        return self

    def __exit__(self, *exc) -> bool:
        self.restore()
        return False


_CONTROLLER: list = [None, -1]


def _blas_controller():
    """threadpoolctl's view of the loaded native libraries, rebuilt only when more Python
    modules were imported (a fresh scan costs ~1 ms, once per solve otherwise)."""
    from threadpoolctl import ThreadpoolController

    if _CONTROLLER[0] is None or _CONTROLLER[1] != len(sys.modules):
        _CONTROLLER[0] = ThreadpoolController()
        _CONTROLLER[1] = len(sys.modules)
    return _CONTROLLER[0]


def limit_threads(n: int, *, torch: bool | None = None, blas: bool = True, env: bool = True) -> ThreadLimit:
    """Use ``n`` threads from now on (see :class:`ThreadLimit`); a context manager that
    restores the previous settings on exit, or call ``.restore()``."""
    return ThreadLimit(n, torch=torch, blas=blas, env=env).apply()


# ------------------------------------------------------------------ memory

# PyTorch's switch for transparent huge pages under its CPU tensors of 2 MB or more; read
# at its first such allocation (docs/decisions.md#torch-hugepages)
THP_ENV = "THP_MEM_ALLOC_ENABLE"


def torch_hugepages() -> bool:
    """Set ``THP_MEM_ALLOC_ENABLE=1`` for this process unless it is already set, so that
    PyTorch's large CPU tensors ask the kernel for transparent huge pages: fewer page
    faults when memory starts fresh, the same numbers (docs/decisions.md#torch-hugepages).
    It takes effect only before PyTorch's first tensor of 2 MB or more. Returns whether
    the variable is on."""
    os.environ.setdefault(THP_ENV, "1")
    return os.environ[THP_ENV] == "1"


# glibc's mallopt parameters (malloc(3)); while the rounds run, freed memory stays in the heap
# so that each round's large temporaries reuse pages already mapped instead of faulting fresh
# ones in (docs/decisions.md#kept-heap). Setting them ends glibc's dynamic mmap threshold for
# the process, so afterwards they are set where that threshold settles in a warmed process
# (its ceiling, 32 MiB, and trimming at twice it): fixed at glibc's initial 128 KiB, every
# later array over 128 KiB would be mapped and faulted in afresh
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_AFTER = ((_M_MMAP_THRESHOLD, 32 * 1024 * 1024), (_M_TRIM_THRESHOLD, 64 * 1024 * 1024))
_KEPT_HEAP = {"depth": 0}
_KEPT_HEAP_LOCK = threading.Lock()


class kept_heap:
    """A ``with`` block during which glibc keeps freed memory for reuse: no allocation is
    served by its own ``mmap`` and the heap is never trimmed; on leaving the outermost
    block the thresholds go to where glibc's own dynamic ones settle (``_AFTER``) and the
    freed memory is handed back to the OS (``malloc_trim``). The arithmetic is unchanged; work that allocates and frees arrays
    of tens of megabytes over and over takes fewer page faults (docs/decisions.md#kept-heap).
    Does nothing where glibc is not
    the C library."""

    def __enter__(self):
        with _KEPT_HEAP_LOCK:
            _KEPT_HEAP["depth"] += 1
            if _KEPT_HEAP["depth"] == 1:
                _mallopt((_M_MMAP_THRESHOLD, 2**30), (_M_TRIM_THRESHOLD, 2**31 - 1))
        return self

    def __exit__(self, *exc):
        with _KEPT_HEAP_LOCK:
            _KEPT_HEAP["depth"] -= 1
            if _KEPT_HEAP["depth"] == 0:
                _mallopt(*_AFTER)
                _malloc_trim()   # no gc.collect(): 0.1 s with torch loaded, and the rounds free by refcount
        return False


def _mallopt(*settings) -> None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        for param, value in settings:
            libc.mallopt(ctypes.c_int(param), ctypes.c_int(value))
    except (OSError, AttributeError):
        pass


def _malloc_trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def rss_kb(field: str = "VmRSS") -> int | None:
    """A memory field of ``/proc/self/status`` in kB (VmRSS, VmHWM, ...), None without /proc."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _maxrss_kb() -> int | None:
    """The process's lifetime peak RSS from getrusage, in kB (None where unavailable)."""
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    except Exception:
        return None
    return peak // 1024 if sys.platform == "darwin" else peak  # macOS reports bytes


def release_memory() -> None:
    """Collect garbage and hand freed heap memory back to the OS (glibc ``malloc_trim``)."""
    gc.collect()
    _malloc_trim()


def reset_hwm() -> bool:
    try:  # Linux >= 4.0: writing 5 resets VmHWM to the current RSS
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def cuda_in_use() -> bool:
    """Whether torch is imported and has initialised CUDA (never initialises it)."""
    torch = sys.modules.get("torch")
    try:
        return torch is not None and torch.cuda.is_initialized()
    except Exception:
        return False


def cuda_synchronize() -> None:
    """Wait for queued CUDA work (for timings), if CUDA is in use."""
    if cuda_in_use():
        sys.modules["torch"].cuda.synchronize()


class PeakMemory:
    """Peak resident memory over a ``with`` block, in kB.

    After the block: ``peak`` (kB, the process's peak RSS during the block; None if it
    cannot be measured), ``base`` (kB, RSS at the start, 0 if unknown), ``peak_mb``, and
    ``device_peak`` (MiB, ``torch.cuda.max_memory_allocated`` of the block; None unless
    CUDA is in use). ``release=True`` first returns freed memory to the OS (``gc`` +
    ``malloc_trim``, ~0.1 s with torch loaded) so that it cannot hide in the number.

    ``PeakMemory.method`` says how the peak was measured: ``vmhwm`` (kernel high-water
    mark reset per block), ``sampling`` (RSS sampled every 5 ms where the reset is not
    allowed) or ``maxrss`` (no /proc: the process's lifetime peak). The choice is made on
    first use and kept.
    """

    method: str | None = None

    def __init__(self, release: bool = True):
        self.release = release
        self.base = 0
        self.peak = None
        self.device_peak = None
        self._thread = None

    def __enter__(self) -> "PeakMemory":
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def start(self) -> "PeakMemory":
        """Begin measuring (what ``with`` does on entry)."""
        if self.release:
            release_memory()
        self.base = rss_kb() or 0
        if PeakMemory.method in (None, "vmhwm"):
            if reset_hwm():
                PeakMemory.method = "vmhwm"
            else:
                PeakMemory.method = "sampling" if rss_kb() is not None else "maxrss"
        if PeakMemory.method == "sampling":
            self._peak = self.base
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        if cuda_in_use():
            torch = sys.modules["torch"]
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self._peak = max(self._peak, rss_kb() or 0)

    def stop(self) -> None:
        """End measuring and set ``peak`` and ``device_peak`` (``with`` does this on exit)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.peak = max(self._peak, rss_kb() or 0)
        elif PeakMemory.method == "vmhwm":
            self.peak = rss_kb("VmHWM")
        else:
            self.peak = _maxrss_kb()
        # CUDA initialised inside the block counts from zero, so its peak is this block's too
        if cuda_in_use():
            torch = sys.modules["torch"]
            torch.cuda.synchronize()
            self.device_peak = torch.cuda.max_memory_allocated() / 2**20

    @property
    def peak_mb(self) -> float | None:
        return None if self.peak is None else self.peak / 1024


__all__ = ["THREAD_ENV", "THP_ENV", "torch_hugepages", "ThreadLimit", "limit_threads", "available_memory", "rss_kb",
           "release_memory", "cuda_in_use", "cuda_synchronize", "PeakMemory"]
