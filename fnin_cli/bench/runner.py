"""`fnin bench`: accuracy and speed of the integration methods on data with ground truth.

Protocol (docs/methods.md#benchmark-protocol, the same as BiNI's DiLiGenT evaluation so numbers
compare): for each case, est = the method's depth; over the mask and finite ground truth,
perspective: scale = nanmedian(gt / est), MADE = nanmean(|scale * est - gt|);
orthographic: offset = nanmedian(gt - est), MADE = nanmean(|est + offset - gt|).
The median, 95th percentile and RMSE of the same absolute errors are reported too.

Timing: ``seconds`` is the wall time of :func:`fnin_cli.pipeline.integrate` alone (no
loading, no writing). Every method first runs once on a small built-in scene that is not
timed (imports, first-call overheads). Cases are the outer loop and methods the inner one,
so drift (thermal, background load) hits all methods alike. One fixed thread count is used
for every method: torch's intra-op threads and the BLAS thread pools (set at run time
through threadpoolctl, and the environment for subprocesses; ``fnin_cli.resources``).

Memory: ``peak_rss_mb`` is the process's peak resident memory while the method ran. The
kernel's high-water mark (VmHWM) is reset just before the method (``/proc/self/clear_refs``)
after freed memory was returned to the OS (``gc`` + ``malloc_trim``); where that reset is
not allowed, a thread samples the RSS every 5 ms instead (``machine.memory_method`` says
which; :class:`fnin_cli.resources.PeakMemory`). ``--isolate`` runs each case/method in a
fresh subprocess, so nothing a previous method allocated or cached can hide in the number.
``stage_peak_rss_mb``: the peak per stage (setup, network, solve, refine), the
high-water mark reset at each stage's start (VmHWM only; empty where it is sampled).
On CUDA ``peak_device_mb`` is ``torch.cuda.max_memory_allocated`` of the run.

Python API::

    from fnin_cli.bench import resolve_cases, run_bench
    report = run_bench(resolve_cases("synthetic"), ["wls", "bini"])
    report["mean"]["bini"]["made_mm"]
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .. import __version__
from ..errors import FninError, FninWarning
from ..pipeline import integrate
from ..resources import PeakMemory, THREAD_ENV, cuda_synchronize, limit_threads, reset_hwm, rss_kb
from ..solvers.registry import BENCH_METHODS, BY_NAME, DEFAULT_METHOD, METHODS
from .cases import Case, align_and_errors, align_objects, piece_made, resolve_cases
from .report import summary_png, write_case_outputs

DEFAULT_METHODS = BENCH_METHODS      # the methods a bench runs by default (registry: Method.bench)
WARMUP_CASE = (101, False, 64)       # seed, orthographic, size of the untimed warm-up scene
DEFAULT_KEY = "default"              # what `fnin integrate` runs with no method or refine flags
# with --prior: the prior alone (upsampled), and the default without the prior
PRIOR_KEY, NO_PRIOR_KEY = "prior", "noprior"
PRIOR_METHODS = (DEFAULT_KEY, "bini", PRIOR_KEY, NO_PRIOR_KEY)    # what `fnin bench --prior` runs by default


def parse_methods(text, prior: bool = False) -> list:
    """``--methods``: a comma-separated string (or a list) of method names and ``default``
    (with ``prior``: also ``prior``, the prior alone, and ``noprior``, the default without
    it); raises :class:`FninError` naming the unknown ones."""
    wanted = [m.strip() for m in text.split(",")] if isinstance(text, str) else [str(m).strip() for m in text]
    wanted = [m for m in wanted if m]
    extra = (PRIOR_KEY, NO_PRIOR_KEY) if prior else ()
    bad = [m for m in wanted if m != DEFAULT_KEY and m not in METHODS and m not in extra]
    if bad or not wanted:
        raise FninError(f"unknown method '{', '.join(bad)}'; use some of {DEFAULT_KEY}, {', '.join(METHODS)}")
    return wanted


def method_call(method: str, refine):
    """(registry method, refine) that a bench entry runs: ``default`` is exactly what
    ``fnin integrate`` runs with no method or refine flags (``DEFAULT_METHOD``, refine None =
    the method's default rounds), whatever the bench's ``--refine``; any other method runs
    with the bench's ``refine`` (None = its default rounds, 0 = none)."""
    if method in (DEFAULT_KEY, NO_PRIOR_KEY):
        return DEFAULT_METHOD, None
    return method, refine


def _needs_network(method: str) -> bool:
    return method != PRIOR_KEY and BY_NAME[method_call(method, None)[0]].needs_network


# ------------------------------------------------------------------ machine

def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def resolve_device(device: str, methods) -> str:
    """The device the network methods run on (wls/bini always use the CPU; an unavailable
    device falls back to the CPU)."""
    if not any(_needs_network(m) for m in methods) or device == "cpu":
        return "cpu"
    from ..model.weights import resolve_device as torch_device   # torch only for network methods

    return torch_device(device, fallback=True).type


def machine_info(threads: int, device: str) -> dict:
    """The ``machine`` block of a report: CPU, threads, device, library versions."""
    info = {
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "threads": threads,
        "device": device,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "fnin": __version__,
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "pyamg": _version("pyamg"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cores"] = len(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        info["load_average_1min"] = round(os.getloadavg()[0], 2)
    if device == "cuda":
        import torch

        info["gpu"] = torch.cuda.get_device_name(0)
    return info


# ------------------------------------------------------------------ one run

def _model_info(model_path) -> dict:
    """Which FNIN weights a report measured: path and sha256 (an unreadable file fails here)."""
    import hashlib

    from ..model.weights import DEFAULT_WEIGHTS, load_model

    path = Path(model_path) if model_path is not None else DEFAULT_WEIGHTS
    load_model(path, "cpu")   # FninError (one line) for a missing or broken file, before any run
    return {"weights": "bundled" if model_path is None else str(path),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def _model_for(method: str, device: str, model_path):
    """The FNIN weights at ``model_path`` for a network method (None: the bundled ones)."""

    if model_path is None or not _needs_network(method):
        return None
    from ..model.weights import load_model

    return load_model(model_path, device)


def _integrate(inp, method: str, refine, device, model, stage=None, prior=None):
    name, rounds = method_call(method, refine)
    return integrate(inp, name, refine=rounds, device=device, model=model, stage=stage,
                     depth_prior=None if method == NO_PRIOR_KEY else prior)


class StagePeaks:
    """Peak RSS per stage of one integrate call (``stage`` callback): at each new stage
    the kernel's high-water mark so far is the previous stage's peak, then it is reset.
    Only where :class:`PeakMemory` measures by VmHWM (else ``peaks`` stays empty)."""

    def __init__(self):
        self.peaks, self._current = {}, "setup"

    def __call__(self, name, step=None, total=None):
        if name != self._current:
            self._close()
            self._current = name

    def _close(self):
        if PeakMemory.method == "vmhwm":
            hwm = rss_kb("VmHWM")
            if hwm is not None:
                self.peaks[self._current] = max(self.peaks.get(self._current, 0.0), hwm / 1024)
            reset_hwm()

    def finish(self) -> dict:
        """The peaks (MB) by stage, the last one closed."""
        self._close()
        return self.peaks


def _warm_up(method: str, device: str, refine, model_path=None):
    seed, ortho, size = WARMUP_CASE
    inp, _ = Case("warmup", "synthetic", seed=seed, size=size, ortho=ortho).load()
    _integrate(inp, method, refine, device, _model_for(method, device, model_path))


def run_one(case: Case, method: str, refine=None, device: str = "auto", out_dir=None,
            mesh: bool = False, model_path=None, prior: tuple | None = None) -> dict:
    """Load, integrate, measure and (optionally) write one case with one method
    (``default`` or a registry method; ``refine`` None = the method's default rounds).
    ``prior``: (kind, seed) of a depth prior drawn from the case's ground truth
    (:mod:`.priors`): every method but ``noprior`` gets it, ``prior`` is the prior alone,
    and with an absolute prior the record adds ``abs_made_mm`` (nothing fitted; a relative
    prior and ``noprior`` leave the depth known up to scale or offset, so none)."""
    t0 = time.perf_counter()
    inp, gt = case.load()
    object_id, names = case.object_ids()
    depth_prior = None
    if prior is not None:
        from .priors import case_seed, make_prior

        depth_prior = make_prior(prior[0], gt, inp, case_seed(prior[1], case.name))
        if method == PRIOR_KEY:
            return _prior_alone_record(depth_prior, inp, gt, object_id, names, time.perf_counter() - t0)
    t_load = time.perf_counter() - t0
    model = _model_for(method, device, model_path)   # loading it is not timed (as the bundled one's cache)
    peaks = StagePeaks()
    with PeakMemory() as mem:
        t1 = time.perf_counter()
        res = _integrate(inp, method, refine, device, model, stage=peaks, prior=depth_prior)
        cuda_synchronize()
        seconds = time.perf_counter() - t1
        stage_peaks = peaks.finish()
    if stage_peaks:      # VmHWM was reset at each stage: the run's peak is the largest stage's
        # (the stages cover the whole integrate call; what the block's exit reads on top is
        # this function's own bookkeeping, about 0.1 MB)
        mem.peak = max(v * 1024 for v in stage_peaks.values())
    if object_id is not None:
        err = align_objects(res.depth, gt, res.mask, object_id, inp.camera.perspective, names)
    else:
        err = align_and_errors(res.depth, gt, res.mask, inp.camera.perspective)
    # the same keys for every method: 0 where a method has no such stage or nothing is written
    stages = {"load": t_load, "network": 0.0, "solve": 0.0, "write": 0.0}
    stages.update({k: float(v) for k, v in res.seconds.items() if k != "total"})
    rec = {
        "status": "ok",
        "made_mm": err["made"], "median_mm": err["median"], "p95_mm": err["p95"], "rmse_mm": err["rmse"],
        "seconds": seconds, "stages": stages,
        "peak_rss_mb": (mem.peak or 0) / 1024, "rss_before_mb": mem.base / 1024,
        "stage_peak_rss_mb": stage_peaks,
        "pixels": res.pixels, "eval_pixels": err["pixels"], "missing_pixels": err["missing"],
        "iterations": res.iterations,
        "perspective": bool(inp.camera.perspective),
    }
    rec["scale" if inp.camera.perspective else "offset"] = err["scale" if inp.camera.perspective else "offset"]
    if "objects" in err:   # aligned one by one; made_mm is the mean of the objects' MADEs
        rec["objects"] = err["objects"]
    if depth_prior is not None and depth_prior.kind == "absolute" and method != NO_PRIOR_KEY:
        rec["abs_made_mm"] = absolute_made(res.depth, gt, res.mask)
    if depth_prior is not None:
        rec.update(_where_right(depth_prior, res.depth, gt, res.mask, err["abs_error"],
                                "abs_made_mm" in rec))
    if res.loose.any() and object_id is None:   # what the normals could not place, aligned piece by piece
        rec["piece_made_mm"] = piece_made(res.depth, gt, res.mask, res.loose, inp.camera.perspective)
    if method in (DEFAULT_KEY, NO_PRIOR_KEY):
        rec["runs"] = {"method": DEFAULT_METHOD, "refine": None}
    if mem.device_peak is not None:
        rec["peak_device_mb"] = mem.device_peak
    if out_dir is not None:
        t2 = time.perf_counter()
        rec["outputs"], warn = write_case_outputs(Path(out_dir), case, method, res, err, mesh,
                                                    inp.normals)
        stages["write"] = time.perf_counter() - t2
        if warn:
            rec["warnings"] = [warn]
    return rec


def absolute_made(est, gt, mask) -> float:
    """Mean |est - gt| over the mask and finite ground truth, nothing fitted (the depth
    prior fixes the scale or offset)."""
    m = mask & np.isfinite(gt) & np.isfinite(est)
    return float(np.mean(np.abs(est[m] - gt[m]))) if m.any() else float("nan")


def _where_right(prior, est, gt, mask, abs_error, absolute: bool) -> dict:
    """``right_made_mm`` (and with ``absolute`` ``right_abs_made_mm``): the errors over the
    pixels where a prior drawn wrong in places (``meta["wrong"]``, the ``patches`` kind)
    was right; nothing for other priors."""
    wrong = prior.meta.get("wrong")
    if wrong is None:
        return {}
    right = mask & ~wrong
    out = {"right_made_mm": float(np.nanmean(abs_error[right]))}
    if absolute:
        out["right_abs_made_mm"] = absolute_made(est, gt, right)
    return out


def _prior_alone_record(prior, inp, gt, object_id, names, t_load) -> dict:
    """The bench record of a depth prior alone (:func:`.priors.prior_alone`): a relative
    or disparity prior first takes its best affine fit to the truth (:func:`.priors.fit_to_truth`,
    ``prior_fit`` says which), then the protocol's scale or offset as every method;
    ``made_mm`` over the mask (filled by nearest values), ``cover_made_mm`` over the pixels
    where the prior has values."""
    from dataclasses import replace

    from .priors import fit_to_truth, prior_alone

    persp = inp.camera.perspective
    fitted, how = fit_to_truth(prior, gt, inp.mask)
    est = prior_alone(replace(prior, depth=fitted), inp.mask)
    err = (align_objects(est, gt, inp.mask, object_id, persp, names) if object_id is not None
           else align_and_errors(est, gt, inp.mask, persp))
    covered = prior.valid & inp.mask
    rec = {"status": "ok", "made_mm": err["made"], "median_mm": err["median"], "p95_mm": err["p95"],
           "rmse_mm": err["rmse"], "seconds": 0.0,
           "stages": {"load": t_load}, "pixels": int(inp.mask.sum()), "eval_pixels": err["pixels"],
           "missing_pixels": err["missing"], "perspective": bool(persp), "prior": prior.describe(),
           "prior_fit": ((how + ", then ") if how else "") + ("median scale" if persp else "median offset"),
           "cover_made_mm": float(np.nanmean(err["abs_error"][covered])) if covered.any() else float("nan")}
    if prior.kind == "absolute":
        rec["abs_made_mm"] = absolute_made(est, gt, inp.mask)
    rec.update(_where_right(prior, est, gt, inp.mask, err["abs_error"], prior.kind == "absolute"))
    if "objects" in err:
        rec["objects"] = err["objects"]
    return rec


def _write_case_prior(case: Case, prior: tuple, out_dir: Path) -> str:
    """Write ``case``'s depth prior into ``out_dir`` as ``<case>_depth_prior.npy`` (or .csv)."""
    from .priors import case_seed, make_prior, write_prior

    inp, gt = case.load()
    return write_prior(out_dir / f"{case.name}_depth_prior", make_prior(prior[0], gt, inp, case_seed(prior[1], case.name)))


def child_main():
    """Entry of an ``--isolate`` subprocess: one JSON job on stdin, one record on stdout."""
    job = json.loads(sys.stdin.read())
    warnings.simplefilter("ignore", FninWarning)   # reported in the record, as in the parent
    # a child of its own: nothing to restore
    threads = limit_threads(job["threads"], torch=True if _needs_network(job["method"]) else None)
    try:
        if job["warmup"]:
            _warm_up(job["method"], job["device"], job["refine"], job["model"])
            threads.apply()  # libraries the warm-up loaded
        rec = run_one(Case(**job["case"]), job["method"], job["refine"], job["device"],
                      job["out_dir"], job["mesh"], job["model"], None if job["prior"] is None else tuple(job["prior"]))
    except FninError as exc:
        rec = {"status": "failed", "error": str(exc)}
    except Exception as exc:  # report, never crash the parent's run
        rec = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(rec) + "\n")


def _run_isolated(case, method, threads, refine, device, out_dir, mesh, warmup, model_path=None,
                  prior=None) -> dict:
    env = dict(os.environ)
    for var in THREAD_ENV:
        env[var] = str(threads)
    job = {"case": asdict(case), "method": method, "threads": threads, "refine": refine, "device": device,
           "out_dir": None if out_dir is None else str(out_dir), "mesh": mesh, "warmup": warmup,
           "model": None if model_path is None else str(model_path), "prior": prior}
    proc = subprocess.run([sys.executable, "-c", "from fnin_cli.bench import child_main; child_main()"],
                          input=json.dumps(job), capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": "failed", "error": f"subprocess exited {proc.returncode}: {tail[:200]}"}
    return json.loads(lines[-1])


# ------------------------------------------------------------------ the benchmark

def run_bench(cases, methods=DEFAULT_METHODS, threads: int = 1, warmup: bool = True, out_dir=None,
              mesh: bool = False, progress=None, refine=None, device: str = "auto",
              isolate: bool = False, dataset: str | None = None, model_path=None, repeat: int = 1,
              prior: tuple | None = None) -> dict:
    """Run every method on every case; return the report (the ``--json`` record of ``fnin bench``).

    ``cases`` is a list of :class:`Case` or a source name for :func:`resolve_cases`.
    ``progress(done, total, case, method)`` is called before each run and once at the end
    (with ``case=method=None``). ``model_path``: FNIN weights for the network methods
    (default: the bundled ones). ``methods`` may hold ``default`` (what ``fnin integrate``
    runs with no method or refine flags); ``refine``: BiNI rounds after every other method
    (None = each method's default, 0 = none). ``repeat``: runs per case and method (the
    methods interleaved within a case); ``seconds`` is the fastest, ``seconds_all`` all of
    them, the errors and outputs are the first run's, ``peak_rss_mb`` the largest.
    ``prior``: (kind, seed) of a depth prior drawn from each case's ground truth
    (:mod:`.priors`; ``methods`` may then hold ``prior`` and ``noprior``); with ``out_dir``
    each case's prior is written there as a user would give it.
    """

    if isinstance(cases, str):
        dataset, cases = resolve_cases(cases)
    cases = list(cases)
    methods = parse_methods(list(methods), prior is not None)
    if prior is not None:
        from .priors import KINDS as PRIOR_KINDS

        if prior[0] not in PRIOR_KINDS:
            raise FninError(f"unknown --prior '{prior[0]}'; use one of {', '.join(PRIOR_KINDS)}")
    if threads < 1:
        raise FninError(f"--threads must be at least 1, got {threads}")
    if repeat < 1:
        raise FninError(f"--repeat must be at least 1, got {repeat}")
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    dev = resolve_device(device, methods)
    # load the numeric libraries now, so that the thread counts below reach all of them
    import pyamg  # noqa: F401
    import scipy.sparse.linalg  # noqa: F401

    if any(_needs_network(m) for m in methods) and not isolate:
        import torch  # noqa: F401
    thread_limit = limit_threads(threads)
    total = len(cases) * len(methods) * repeat
    report = {
        "dataset": dataset or ("synthetic" if all(c.kind == "synthetic" for c in cases) else "custom"),
        "machine": machine_info(threads, dev),
        "methods": methods,
        "protocol": ("perspective: scale = nanmedian(gt/est), MADE = nanmean(|scale*est - gt|); "
                     "orthographic: offset = nanmedian(gt - est); over the mask and finite gt"),
        "units": sorted({c.units for c in cases}),
        "timing": ("seconds = wall time of pipeline.integrate (no load/write); cases outer, methods inner; "
                   + ("each case/method in a fresh subprocess" if isolate else "one process")
                   + (f"; best of {repeat} runs, methods interleaved" if repeat > 1 else "")),
        "repeat": repeat,
        "warmup": None,
        "refine": refine,
        "isolate": isolate,
        "model": _model_info(model_path) if any(_needs_network(m) for m in methods) else None,
        "prior": None if prior is None else {"kind": prior[0], "seed": prior[1]},
        "cases": {},
        "mean": {},
    }
    if warmup:
        seed, ortho, size = WARMUP_CASE
        report["warmup"] = {"case": f"synthetic seed {seed}, {size}x{size}, "
                                    f"{'orthographic' if ortho else 'perspective'}",
                            "methods": methods, "excluded": True,
                            "where": "in every subprocess" if isolate else "once per method"}
        if not isolate:
            for m in methods:
                if m == PRIOR_KEY:
                    continue
                try:
                    _warm_up(m, device, refine, model_path)
                except Exception:  # the timed run will report the failure properly
                    pass
            # libraries loaded during the warm-up (scipy's BLAS, torch) get the same count
            thread_limit.apply()
    try:
        done = 0
        for case in cases:
            report["cases"][case.name] = {}
            if prior is not None and out_dir is not None:
                _write_case_prior(case, prior, out_dir)
            for r in range(repeat):
                for m in methods:
                    if progress is not None:
                        progress(done, total, case.name, m)
                    write_to = out_dir if r == 0 else None   # the outputs of the first run
                    if isolate:
                        rec = _run_isolated(case, m, threads, refine, device, write_to, mesh, warmup, model_path,
                                            prior)
                    else:
                        try:
                            rec = run_one(case, m, refine, device, write_to, mesh, model_path, prior)
                        except FninError as exc:
                            rec = {"status": "failed", "error": str(exc)}
                        except Exception as exc:
                            rec = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
                    first = report["cases"][case.name].get(m)
                    report["cases"][case.name][m] = rec if first is None else _merge_repeat(first, rec)
                    done += 1
        if progress is not None:
            progress(done, total, None, None)
    finally:
        thread_limit.restore()
    report["machine"]["memory_method"] = (
        "per-subprocess " if isolate else "") + (PeakMemory.method or "vmhwm")
    for m in methods:
        recs = [report["cases"][c.name][m] for c in cases]
        ok = [r for r in recs if r.get("status") == "ok"]
        failed = len(recs) - len(ok)
        report["mean"][m] = {
            "made_mm": float(np.mean([r["made_mm"] for r in ok])) if ok and not failed else None,
            "seconds_total": float(sum(r["seconds"] for r in ok)),
            "cases": len(ok), "failed": failed,
        }
        for key in ("abs_made_mm", "right_made_mm", "right_abs_made_mm", "cover_made_mm"):
            if ok and not failed and all(key in r for r in ok):
                report["mean"][m][key] = float(np.mean([r[key] for r in ok]))
        if ok and not failed and any("piece_made_mm" in r for r in ok):
            # a case with no loose piece counts with its MADE: aligned piece by piece it is the same
            report["mean"][m]["piece_made_mm"] = float(np.mean([r.get("piece_made_mm", r["made_mm"]) for r in ok]))
    if out_dir is not None and cases:
        try:
            summary_png(out_dir / "summary.png", report)
        except Exception as exc:  # a picture must not lose the numbers
            report.setdefault("warnings", []).append(f"summary.png not written: {exc}")
    return report


def _merge_repeat(first: dict, again: dict) -> dict:
    """The record of a case and method after one more run: the fastest seconds (its stages
    too), every run's seconds in ``seconds_all``, the largest peak memory; a failed run
    fails the record."""
    if first.get("status") != "ok":
        return first
    if again.get("status") != "ok":
        return again
    merged = dict(first)
    merged["seconds_all"] = first.get("seconds_all", [first["seconds"]]) + [again["seconds"]]
    if again["seconds"] < first["seconds"]:
        merged["seconds"] = again["seconds"]
        merged["stages"] = {**again["stages"], "write": first["stages"].get("write", 0.0)}
    merged["peak_rss_mb"] = max(first["peak_rss_mb"], again["peak_rss_mb"])
    return merged


def failed_runs(report) -> list:
    """``[(method, error, [cases])]``: failures grouped by method and message."""
    groups = {}
    for c, per in report["cases"].items():
        for m, r in per.items():
            if r.get("status") != "ok":
                groups.setdefault((m, r.get("error", "")), []).append(c)
    return [(m, e, cs) for (m, e), cs in groups.items()]
