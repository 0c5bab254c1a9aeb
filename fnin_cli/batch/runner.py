"""Running a batch: one input per job, in this process or a pool of workers.

``process`` integrates and writes one input and never raises (a failure becomes the
record's ``error``); ``run_jobs`` runs them all (``--jobs``), delivers records in input
order and handles Ctrl-C (exit 130), and SIGTERM/SIGHUP alike within :func:`stop_signals`
(the CLI exits 143/129). Per-worker state: the network loaded once, signals, thread limits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback
import warnings

from ..errors import FninError, FninWarning, use_cli_messages
from ..pipeline import integrate
from ..prepare import prepare
from ..resources import PeakMemory, limit_threads
from ..solvers.registry import BY_NAME
from .options import Options
from .plan import Job
from .preview import method_iterations
from .progress import QueueStatus
from .write import write_outputs

# ------------------------------------------------------------------ worker state

_STATE = {"model": None, "in_pool": False, "busy": False, "interrupted": False, "reports": None}


def _sigint(signum, frame):
    # In pool workers: interrupt a running input (its atomic writes clean up), but let an
    # idle worker wait quietly for the pool to shut down instead of dying with a traceback.
    # SIGTERM and SIGHUP (a batch system ending the job, a closed terminal) do the same.
    _STATE["interrupted"] = True
    if _STATE["busy"]:
        raise KeyboardInterrupt


# the signals a batch stops on like Ctrl-C: SIGTERM (Slurm, kill) and SIGHUP (terminal
# closed); the exit code is 128 + the signal's number (130 Ctrl-C, 129 SIGHUP, 143 SIGTERM)
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def stop_signals(received: list):
    """Within the block, SIGTERM and SIGHUP raise KeyboardInterrupt like Ctrl-C (the first
    one; later ones are only noted), appending their number to ``received``; the previous
    handlers come back at its end. Main thread only (elsewhere the block runs as is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        received.append(signum)
        if len(received) == 1:
            raise KeyboardInterrupt

    previous = {}
    try:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, handler)
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


def _warm_up(obj: bool = False) -> None:
    """Import everything an input may need, once, before the first input.

    Besides fairer per-input timings, this keeps Ctrl-C out of imports: trimesh wraps
    failed optional imports (KeyboardInterrupt included) in placeholders, which then
    broke the rest of that process with a TypeError instead of stopping it. trimesh is
    imported only when an .obj, .stl or .glb mesh will be written (PLY is written without
    it: about a second of a single call's start-up, docs/decisions.md#start-up).
    """
    try:
        import pyamg  # noqa: F401
        import scipy.sparse.linalg  # noqa: F401

        if obj:
            import trimesh  # noqa: F401
    except Exception:  # a missing optional piece shows up per input, with its message
        pass


@contextlib.contextmanager
def _sigint_deferred():
    """Hold a Ctrl-C (or a SIGTERM/SIGHUP under :func:`stop_signals`) arriving inside the
    block and raise it as KeyboardInterrupt at its end. Only where the signal raises
    KeyboardInterrupt (Python's own handler or stop_signals', main thread); elsewhere the
    block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # Ctrl-C under Python's own handler, and SIGTERM/SIGHUP under stop_signals' (which raise)
    raising = [sig for sig in (signal.SIGINT, *STOP_SIGNALS)
               if signal.getsignal(sig) is signal.default_int_handler
               or getattr(signal.getsignal(sig), "__qualname__", "").startswith("stop_signals.")]
    caught = []
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append((signum, frame))) for sig in raising}
    try:
        yield
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
        for signum, frame in caught[:1]:  # the held signal, through its own handler (which raises)
            previous[signum](signum, frame)


def _writes_obj(jobs) -> bool:
    """Whether a mesh is written through trimesh (.obj, .stl, .glb; PLY is written without it)."""
    return any(str(p).lower().endswith((".obj", ".stl", ".glb")) for j in jobs for p in j.outputs.values())


def quiet_library_loggers() -> None:
    """Readers report through FninError; keep libraries' own log lines (tifffile warns
    twice about every corrupt TIFF) off stderr so each failure stays one line."""
    import logging

    for name in ("tifffile", "PIL", "imageio", "trimesh", "pyamg"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def init_worker(options: Options, in_pool: bool = False, obj: bool = False, reports=None):
    """Per-process setup: fixed thread counts (results do not depend on --jobs) and the
    FNIN network loaded once. Safe when the network or its weights are unavailable:
    the error then surfaces per input, with its file name. Returns a callable that
    restores the thread settings (for in-process use through the API).

    The counts are set at run time (fnin_cli.resources, which says why a fixed, small
    count matters): the environment variables only work before numpy is imported (the
    CLI sets them), this covers API use and the BLAS libraries loaded since."""
    _STATE["in_pool"] = in_pool
    _STATE["interrupted"] = False
    _STATE["reports"] = reports   # the live status's queue (pool workers on a terminal)
    if in_pool:
        for sig in (signal.SIGINT, *STOP_SIGNALS):
            signal.signal(sig, _sigint)
        warnings.simplefilter("ignore", FninWarning)  # reported in the records
        use_cli_messages()   # this process serves the command line: messages name its options
    fnin = BY_NAME[options.method].needs_network
    threads = limit_threads(options.threads, torch=fnin, env=False)
    quiet_library_loggers()
    _warm_up(obj)
    threads.apply()  # also the BLAS of scipy/pyamg, loaded by the warm-up
    if fnin:
        _STATE["model"] = load_model_safely(options)

    def restore():
        threads.restore()
        _STATE["model"] = None

    return restore


def load_model_safely(options: Options):
    """The network for a worker's network inputs, or the FninError each such input reports
    (a broken weights file fails every fnin input, not the batch, and is never replaced
    by the bundled weights)."""
    try:
        from ..model.weights import load_model

        return load_model(options.model, device=options.device)
    except FninError as exc:
        return exc
    except Exception as exc:  # torch missing or broken: say so per input, with the file name
        return FninError(f"cannot load the FNIN network ({str(exc).splitlines()[0][:100]})", options.model)


# ------------------------------------------------------------------ one input

def new_record(job: Job, options: Options) -> dict:
    """A fresh ``--json`` record for ``job`` (status ``failed`` until it succeeds)."""
    return {
        "input": job.input, "name": job.name, "status": "failed", "error": None,
        "outputs": {}, "method": options.method, "refine": options.refine, "iterations": None,
        "camera": None, "shape": None, "pixels": None, "seconds": {},
        "scale_note": None, "warnings": [], "peak_rss_mb": None, "convention": None,
        "mask_source": None, "camera_source": None,
        "config": options.run_config(),
    }


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`run_jobs`; ``records`` holds one record per input (``ok``,
    ``failed``, ``skipped``, ``interrupted`` or ``not started``), all already reported."""

    def __init__(self, records):
        super().__init__()
        self.records = records


_STOPPED = {"interrupted": "interrupted", "not started": "not started (interrupted before it)"}


def _stopped(rec: dict, job: Job, status: str) -> dict:
    """Mark ``rec`` as stopped by Ctrl-C: ``interrupted`` (it was running) or ``not started``."""
    rec.update(status=status, error=f"{job.input}: {_STOPPED[status]}")
    return rec


def not_started_record(job: Job, options: Options) -> dict:
    """The record of an input that an interrupt kept from starting."""
    return _stopped(new_record(job, options), job, "not started")


def all_outputs_complete(records: list, jobs: list[Job]) -> bool:
    """Whether every planned output of every input was completed (after an interrupt:
    exit 0 rather than 130). Failed inputs count as done: their failure is reported."""
    for rec, job in zip(records, jobs):
        if rec is None or rec["status"] == "not started":
            return False
        if rec["status"] == "interrupted" and set(rec["outputs"]) != set(job.outputs):
            return False
    return True


def process(job: Job, options: Options, workers: int = 1, status=None, catch_interrupt: bool = False) -> dict:
    """Integrate one input and write its outputs; never raises (except KeyboardInterrupt
    outside pool workers, unless ``catch_interrupt``: then the record says
    ``interrupted``). Returns the JSON-ready record. ``status`` (a
    :class:`~.progress.LiveStatus`) is told the stages."""
    rec = new_record(job, options)
    if job.skip:
        rec.update(status="skipped", outputs={k: str(p) for k, p in job.outputs.items()})
        return rec
    if _STATE["interrupted"]:  # Ctrl-C reached this worker: start nothing new
        return _stopped(rec, job, "not started")
    # peak memory per input: the kernel's high-water mark is reset here (no gc first, which
    # takes ~0.1 s with torch loaded)
    memory = PeakMemory(release=False).start()
    before = {k: _file_id(p) for k, p in job.outputs.items()}
    _STATE["busy"] = True
    t0 = time.perf_counter()
    try:
        _integrate_and_write(job, options, rec, workers, status)
        rec["status"] = "ok"
    except KeyboardInterrupt:
        if not (_STATE["in_pool"] or catch_interrupt):
            raise
        _STATE["interrupted"] = True
        # list the outputs that were renamed into place (complete) before the interrupt,
        # even if it struck between the rename and the bookkeeping
        for k, p in job.outputs.items():
            now = _file_id(p)
            if now is not None and now != before[k]:
                rec["outputs"][k] = str(p)
        _stopped(rec, job, "interrupted")
    except FninError as exc:
        where = exc.path or job.input
        msg = exc.message
        if exc.path and os.path.realpath(exc.path) != os.path.realpath(job.input) and not msg.endswith(")"):
            msg = f"{msg} (input {job.input})"
        rec["error"] = f"{where}: {msg}"
        if options.debug:
            rec["traceback"] = traceback.format_exc()
    except MemoryError:
        rec["error"] = f"{job.input}: ran out of memory; crop or downsample the map, or use fewer --jobs"
    except Exception as exc:  # a bug or an unforeseen input: one line, the rest of the batch goes on
        if _STATE["interrupted"]:  # a library swallowed the interrupt and failed later
            return _stopped(rec, job, "interrupted")
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        rec["error"] = (f"{job.input}: internal error ({type(exc).__name__}: {first}); "
                        "run with --debug for the traceback and please report it")
        rec["traceback"] = traceback.format_exc()
    finally:
        _STATE["busy"] = False
        rec["seconds"]["total"] = round(time.perf_counter() - t0, 4)
        memory.stop()
        rec["peak_rss_mb"] = None if memory.peak_mb is None else round(memory.peak_mb, 1)
    return rec


def _pool_process(job: Job, options: Options, workers: int, key: int) -> dict:
    """:func:`process` in a pool worker, its stages reported to the parent's live status
    when there is one (``init_worker``'s ``reports``)."""
    reports = _STATE["reports"]
    return process(job, options, workers, status=None if reports is None else QueueStatus(reports, key))


def _file_id(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _integrate_and_write(job: Job, options: Options, rec: dict, workers: int, status=None) -> None:
    """Prepare ``job``'s input (:func:`fnin_cli.prepare.prepare`), integrate it and write
    its outputs, filling ``rec`` as each step ends (a failure leaves what was known)."""
    if isinstance(_STATE["model"], FninError):
        raise _STATE["model"]
    if status is not None:
        status.stage("load")
    ready = prepare(job.input, options, name=job.name, mesh="mesh" in job.outputs, workers=workers, record=rec)
    inp, secs = ready.inp, rec["seconds"]
    if "prior_weights" in job.outputs and ready.prior is None:
        raise FninError("--prior-weights writes where the depth prior was trusted, and this input has none "
                        "(--depth-prior FILE, or a depth_prior.* beside it)", job.input)

    res = integrate(inp, method=options.method, refine=options.refine, device=options.device,
                    mean_depth=options.mean_depth, depth_at=ready.depth_at, model=_STATE["model"],
                    depth_prior=ready.prior,
                    network_side=options.network_side, bini_k=options.bini_k,
                    stage=None if status is None else status.stage,
                    progress=None if status is None else status.iteration)
    for k, v in res.seconds.items():
        if k != "total":
            secs[k] = round(float(v), 4)
    secs["integrate"] = round(float(res.seconds.get("total", 0.0)), 4)
    rec["refine"] = res.rounds          # rounds actually run (the default stops by its rule)
    rec["iterations"] = method_iterations(res)   # the method's own (bini: its IRLS iterations)
    rec["scale_note"] = res.scale_note
    rec["warnings"] = list(res.warnings)
    rec["pixels"] = res.pixels
    rec["loose_pieces"] = res.loose_pieces
    if res.prior_residual is not None:
        rec["prior_residual"] = res.prior_residual
        # the share of the prior's measurements not trusted, and the sigma used (estimated where not given)
        rec["prior_rejected"] = res.prior_residual.get("rejected")
        rec["prior_sigma"] = res.prior_residual.get("sigma")

    t = time.perf_counter()
    write_outputs(job.outputs, inp, res, options, rec, status)
    secs["write"] = round(time.perf_counter() - t, 4)


# ------------------------------------------------------------------ many inputs

def run_jobs(jobs: list[Job], options: Options, workers: int = 1, on_record=None, on_start=None,
             status=None) -> list[dict]:
    """Process every job; ``on_record(index, record)`` is called in input order as soon
    as each record (and all before it) is ready. On Ctrl-C, :class:`Interrupted` (a
    KeyboardInterrupt) is raised after the pool is shut down cleanly and one record per
    input was reported (``interrupted`` for those running, ``not started`` for the rest).
    ``status``: a :class:`~.progress.LiveStatus` told each input's start, stages, end."""
    records: list = [None] * len(jobs)
    next_out = [0]

    def deliver(i, rec):
        records[i] = rec
        while next_out[0] < len(jobs) and records[next_out[0]] is not None:
            # a Ctrl-C between reporting a record and counting it reported it twice
            with _sigint_deferred():
                if on_record is not None:
                    on_record(next_out[0], records[next_out[0]])
                next_out[0] += 1

    todo = [i for i, j in enumerate(jobs) if not j.skip]
    for i, j in enumerate(jobs):
        if j.skip:
            deliver(i, process(j, options))
    workers = max(1, min(int(workers), len(todo))) if todo else 1
    obj = _writes_obj(jobs)

    def report_the_rest():
        # after Ctrl-C: one record per input, in input order: those finished or stopped,
        # then the inputs never started
        for i in range(next_out[0], len(jobs)):
            if records[i] is None:
                records[i] = not_started_record(jobs[i], options)
            if on_record is not None:
                on_record(i, records[i])
        next_out[0] = len(jobs)

    if workers == 1:
        restore = lambda: None  # noqa: E731
        try:
            if todo:  # inside the try: a signal while torch loads still reports every input
                restore = init_worker(options, in_pool=False, obj=obj)
            for i in todo:
                if on_start is not None:
                    on_start(i)
                if status is not None:
                    status.start_input(jobs[i].name)
                rec = process(jobs[i], options, status=status, catch_interrupt=True)
                if status is not None:
                    status.input_done()
                deliver(i, rec)
                if rec["status"] == "interrupted":
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            report_the_rest()
            raise Interrupted(records)
        finally:
            restore()
        return records

    import concurrent.futures as cf
    import multiprocessing as mp
    from collections import deque

    ctx = mp.get_context("spawn")
    # the workers' stages reach the live status through a queue (only when it is shown)
    reports = ctx.Queue() if status is not None and status.enabled else None
    following = status.follow(reports) if reports is not None else None

    def new_pool():
        # spawn: fresh interpreters, no inherited thread pools (fork after torch/OpenMP can hang)
        return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                      initializer=init_worker, initargs=(options, True, obj, reports))

    # the workers' environment (BLAS and torch counts are set again in init_worker);
    # restored when the pool is gone
    with limit_threads(options.threads, torch=False, blas=False):
        pool = None
        queue = deque(todo)
        pending = {}  # at most `workers` submitted at a time, so Ctrl-C has nothing queued to drain
        try:
            pool = new_pool()
            while queue or pending:
                while queue and len(pending) < workers:
                    i = queue.popleft()
                    if status is not None:
                        status.start_input(jobs[i].name, key=i)
                    pending[pool.submit(_pool_process, jobs[i], options, workers, i)] = i
                done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                broken = False
                for fut in sorted(done, key=pending.get):
                    i = pending.pop(fut)
                    try:
                        rec = fut.result()
                    except Exception as exc:  # the worker died (killed, out of memory): report, go on
                        broken |= isinstance(exc, cf.process.BrokenProcessPool)
                        rec = new_record(jobs[i], options)
                        rec["error"] = (f"{jobs[i].input}: the worker process died ({type(exc).__name__}); "
                                        "out of memory? try fewer --jobs")
                    if status is not None:
                        status.input_done(key=i)
                    deliver(i, rec)
                if broken:
                    pool.shutdown(wait=False, cancel_futures=True)
                    pool = new_pool()
        except KeyboardInterrupt:
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                try:  # workers in our process group got the signal too; harmless if twice
                    os.kill(proc.pid, signal.SIGINT)
                except (OSError, AttributeError):
                    pass
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            # report what finished (complete files) or stopped, then the inputs never started,
            # one record per input in input order
            for fut, i in pending.items():
                if records[i] is not None:
                    continue
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    records[i] = fut.result()
                elif not fut.cancelled():  # it was running: its worker stopped it
                    records[i] = _stopped(new_record(jobs[i], options), jobs[i], "interrupted")
            report_the_rest()
            raise Interrupted(records) from None
        finally:
            if following is not None:
                following.set()
        pool.shutdown(wait=True)
    return records


def record_json(rec: dict) -> dict:
    """The record as printed by --json (no traceback; stable key order; ``downsample`` and
    ``input_shape`` (the map's own size) only with --downsample; ``prior_source``,
    ``prior_residual``, ``prior_rejected`` and ``prior_sigma`` only with a depth prior)."""
    keys = ("input", "status", "error", "outputs", "method", "refine", "iterations", "camera", "shape", "pixels",
            "seconds", "scale_note", "warnings", "peak_rss_mb", "convention", "mask_source", "camera_source",
            "config", "loose_pieces")
    optional = ("downsample", "input_shape", "prior_source", "prior_residual", "prior_rejected", "prior_sigma")
    return {k: rec.get(k) for k in keys} | {k: rec[k] for k in optional if k in rec}
