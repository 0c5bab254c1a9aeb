"""`fnin bench`: accuracy and speed of the integration methods on data with ground truth.

Protocol (SPEC "Benchmark protocol", the same as BiNI's DiLiGenT evaluation so numbers
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
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .errors import FninError
from .resources import THREAD_ENV, PeakMemory, cuda_synchronize, limit_threads

DILIGENT_OBJECTS = ("bear", "buddha", "cat", "cow", "goblet", "harvest", "pot1", "pot2", "reading")
DILIGENT_SOURCE = ("the data/Fig7_diligent folder of "
                   "https://github.com/xucao-42/bilateral_normal_integration")
DEFAULT_METHODS = ("fnin", "fnin-s", "bini", "wls")
GT_FILE = "depth_gt.npz"
GT_KEY = "depth_gt"

# Built-in synthetic set: (seed, orthographic). 256x256 scenes of synthetic.make_scene with
# noisy normals. Chosen from a survey of seeds 0-29 (perspective) and 0-19 (orthographic)
# to mix one smooth control scene (persp-00: every method should be near 0) with scenes
# whose occlusion jumps separate smooth from discontinuity-aware methods, and so that all
# four methods finish the set in well under a minute on one core. Perspective scenes are
# at mean depth ~1; orthographic ones get a pixel size of 1/256 (the image is 1 unit wide).
SYNTHETIC_SET = ((0, False), (9, False), (15, False), (24, False), (26, False), (27, False),
                 (0, True), (19, True))
SYNTHETIC_SIZE = 256
WARMUP_CASE = (101, False, 64)       # seed, orthographic, size of the untimed warm-up scene
ERROR_CLIP_MM = 5.0                  # error maps saturate here (scene units x 1e-3 for synthetic)


# ------------------------------------------------------------------ metric

def align_and_errors(est, gt, mask, perspective: bool) -> dict:
    """Align ``est`` to ``gt`` (median scale or median offset) and measure the errors.

    Pixels count where ``mask`` is set and both maps are finite. Returns ``made`` (mean
    absolute error), ``median``, ``p95``, ``rmse`` (in gt units), ``scale`` or
    ``offset``, ``pixels`` (evaluated) and ``missing`` (masked GT pixels without an
    estimate), plus ``abs_error`` (an image, NaN where not evaluated).
    """
    est = np.asarray(est, np.float64)
    gt = np.asarray(gt, np.float64)
    if est.shape != gt.shape:
        raise FninError(f"ground truth is {gt.shape[1]}x{gt.shape[0]} but the estimate is "
                        f"{est.shape[1]}x{est.shape[0]}")
    mask = np.asarray(mask, bool)
    has_gt = mask & np.isfinite(gt)
    valid = has_gt & np.isfinite(est)
    out = {"pixels": int(valid.sum()), "missing": int((has_gt & ~valid).sum())}
    if not valid.any():
        raise FninError("no pixel has both ground truth and an estimate inside the mask")
    e, g = est[valid], gt[valid]
    if perspective:
        scale = float(np.median(g / e))
        aligned = scale * e
        out["scale"] = scale
    else:
        offset = float(np.median(g - e))
        aligned = e + offset
        out["offset"] = offset
    err = np.abs(aligned - g)
    out.update(made=float(np.mean(err)), median=float(np.median(err)),
               p95=float(np.percentile(err, 95)), rmse=float(np.sqrt(np.mean(err * err))))
    img = np.full(gt.shape, np.nan)
    img[valid] = err
    out["abs_error"] = img
    return out


def unknown_made(inp, gt, z_img) -> float:
    """MADE of a solve's unknown (an image, as ``NormalSystem.to_image`` gives it) after
    the pipeline's default scale fix: how the benchmark scripts score a bare solve."""
    from .pipeline import fix_scale

    depth, _ = fix_scale(z_img, inp.camera, inp.mask, None, None)
    return align_and_errors(depth, gt, inp.mask, inp.camera.perspective)["made"]


# ------------------------------------------------------------------ cases

@dataclass(frozen=True)
class Case:
    """One benchmark case: a folder with ground truth, or a built-in synthetic scene."""

    name: str
    kind: str                         # "folder" or "synthetic"
    path: str | None = None
    seed: int | None = None
    size: int | None = None
    ortho: bool = False
    pixel_size: float | None = None
    convention: str = "ps"

    def load(self):
        """(Input, ground-truth depth) of this case."""
        from .pipeline import build_input, load_input

        if self.kind == "synthetic":
            from .synthetic import make_scene

            scene = make_scene(self.seed, self.size, self.size, ortho_prob=1.0 if self.ortho else 0.0)
            gt = scene.depth
            pixel_size = None
            if scene.K is None:
                # scaling depth and pixel size together leaves the normals unchanged
                pixel_size = 1.0 / self.size
                gt = gt * pixel_size
            return build_input(scene.normals, mask=scene.mask, K=scene.K, pixel_size=pixel_size,
                               source=self.name), gt
        folder = Path(self.path)
        inp = load_input(folder, pixel_size=self.pixel_size, convention=self.convention)
        gt_path = folder / GT_FILE
        try:
            with np.load(gt_path) as f:
                if GT_KEY not in f:
                    raise FninError(f"no key '{GT_KEY}' (found {', '.join(f.files)})", gt_path)
                gt = np.asarray(f[GT_KEY], np.float64)
        except FninError:
            raise
        except Exception as exc:
            raise FninError(f"cannot read ground truth ({exc})", gt_path) from None
        if gt.shape != inp.shape:
            raise FninError(f"ground truth is {gt.shape[1]}x{gt.shape[0]}, normal map "
                            f"{inp.shape[1]}x{inp.shape[0]}", gt_path)
        return inp, gt

    @property
    def units(self) -> str:
        if self.kind == "synthetic":
            return ("scene units (orthographic, image 1 unit wide)" if self.ortho
                    else "scene units (perspective, mean depth ~1)")
        return "mm (ground-truth units)"


def diligent_dir(data=None) -> Path:
    """The DiLiGenT folder: ``data``, else $FNIN_DILIGENT, else the user cache dir."""
    if data is not None:
        return Path(data).expanduser()
    if os.environ.get("FNIN_DILIGENT"):
        return Path(os.environ["FNIN_DILIGENT"]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "fnin" / "diligent"


def synthetic_cases(seeds=SYNTHETIC_SET, size: int = SYNTHETIC_SIZE) -> list:
    return [Case(f"{'ortho' if o else 'persp'}-{s:02d}", "synthetic", seed=s, size=size, ortho=o)
            for s, o in seeds]


def _is_case_folder(folder: Path) -> bool:
    from .pipeline import FOLDER_NORMALS

    return any((folder / n).exists() for n in FOLDER_NORMALS)


def _folder_case(folder: Path, pixel_size=None, convention="ps") -> Case:
    if pixel_size is None and (folder / "pixel_size.txt").exists():
        try:
            pixel_size = float((folder / "pixel_size.txt").read_text().split()[0])
        except (ValueError, IndexError):
            raise FninError("pixel_size.txt must hold one number", folder / "pixel_size.txt") from None
    return Case(folder.name, "folder", path=str(folder), pixel_size=pixel_size, convention=convention)


def resolve_cases(source: str, data=None, pixel_size=None, convention: str = "ps") -> tuple:
    """``(dataset name, [Case])`` for ``diligent``, ``synthetic`` or a folder of cases.

    Raises :class:`FninError` with a one-line message when the data is missing.
    """
    if source == "synthetic":
        return "synthetic", synthetic_cases()
    if source == "diligent":
        root = diligent_dir(data)
        missing = [o for o in DILIGENT_OBJECTS
                   if not ((root / o / GT_FILE).exists() and _is_case_folder(root / o))]
        if missing:
            where = ("" if data is not None else
                     " (or pass --data DIR, or set FNIN_DILIGENT)")
            what = "not found" if len(missing) == len(DILIGENT_OBJECTS) else f"incomplete (no {', '.join(missing)})"
            raise FninError(f"DiLiGenT data {what} at {root}: get {DILIGENT_SOURCE} and put its 9 object "
                            f"folders ({', '.join(DILIGENT_OBJECTS)}) there{where}")
        return "diligent", [_folder_case(root / o, pixel_size, convention) for o in DILIGENT_OBJECTS]
    root = Path(source).expanduser()
    if not root.is_dir():
        raise FninError(f"unknown benchmark '{source}': use diligent, synthetic or a folder of cases")
    folders = [root] if _is_case_folder(root) else sorted(p for p in root.iterdir() if p.is_dir()
                                                           and _is_case_folder(p))
    cases = [_folder_case(f, pixel_size, convention) for f in folders if (f / GT_FILE).exists()]
    if not cases:
        raise FninError(f"no cases: expected subfolders with normal_map.* and {GT_FILE} (key '{GT_KEY}')", root)
    return str(root), cases


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
    """The device the network methods run on (wls/bini always use the CPU)."""
    if not any(m.startswith("fnin") for m in methods) or device == "cpu":
        return "cpu"
    import torch

    if device in ("auto", "cuda") and torch.cuda.is_available():
        return "cuda"
    if device == "mps" or (device == "auto" and getattr(torch.backends, "mps", None)
                           and torch.backends.mps.is_available()):
        return "mps"
    return "cpu"


def machine_info(threads: int, device: str) -> dict:
    from . import __version__

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

    from .fnin import DEFAULT_WEIGHTS, load_model

    path = Path(model_path) if model_path is not None else DEFAULT_WEIGHTS
    load_model(path, "cpu")   # FninError (one line) for a missing or broken file, before any run
    return {"weights": "bundled" if model_path is None else str(path),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def _model_for(method: str, device: str, model_path):
    """The FNIN weights at ``model_path`` for a network method (None: the bundled ones)."""
    from .pipeline import NETWORK_METHODS

    if model_path is None or method not in NETWORK_METHODS:
        return None
    from .fnin import load_model

    return load_model(model_path, device)


def _warm_up(method: str, device: str, refine: int, model_path=None):
    from .pipeline import integrate

    seed, ortho, size = WARMUP_CASE
    inp, _ = Case("warmup", "synthetic", seed=seed, size=size, ortho=ortho).load()
    integrate(inp, method, refine=refine, device=device, model=_model_for(method, device, model_path))


def run_one(case: Case, method: str, refine: int = 0, device: str = "auto", out_dir=None,
            mesh: bool = False, model_path=None) -> dict:
    """Load, integrate, measure and (optionally) write one case with one method."""
    from .pipeline import integrate

    t0 = time.perf_counter()
    inp, gt = case.load()
    t_load = time.perf_counter() - t0
    model = _model_for(method, device, model_path)   # loading it is not timed (as the bundled one's cache)
    with PeakMemory() as mem:
        t1 = time.perf_counter()
        res = integrate(inp, method, refine=refine, device=device, model=model)
        cuda_synchronize()
        seconds = time.perf_counter() - t1
    err = align_and_errors(res.depth, gt, res.mask, inp.camera.perspective)
    # the same keys for every method: 0 where a method has no such stage or nothing is written
    stages = {"load": t_load, "network": 0.0, "solve": 0.0, "write": 0.0}
    stages.update({k: float(v) for k, v in res.seconds.items() if k != "total"})
    rec = {
        "status": "ok",
        "made_mm": err["made"], "median_mm": err["median"], "p95_mm": err["p95"], "rmse_mm": err["rmse"],
        "seconds": seconds, "stages": stages,
        "peak_rss_mb": (mem.peak or 0) / 1024, "rss_before_mb": mem.base / 1024,
        "pixels": res.pixels, "eval_pixels": err["pixels"], "missing_pixels": err["missing"],
        "iterations": res.iterations,
        "perspective": bool(inp.camera.perspective),
    }
    rec["scale" if inp.camera.perspective else "offset"] = err["scale" if inp.camera.perspective else "offset"]
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


def _child_main():
    """Entry of an ``--isolate`` subprocess: one JSON job on stdin, one record on stdout."""
    job = json.loads(sys.stdin.read())
    # a child of its own: nothing to restore
    threads = limit_threads(job["threads"], torch=True if job["method"].startswith("fnin") else None)
    try:
        if job["warmup"]:
            _warm_up(job["method"], job["device"], job["refine"], job["model"])
            threads.apply()  # libraries the warm-up loaded
        rec = run_one(Case(**job["case"]), job["method"], job["refine"], job["device"],
                      job["out_dir"], job["mesh"], job["model"])
    except FninError as exc:
        rec = {"status": "failed", "error": str(exc)}
    except Exception as exc:  # report, never crash the parent's run
        rec = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(rec) + "\n")


def _run_isolated(case, method, threads, refine, device, out_dir, mesh, warmup, model_path=None) -> dict:
    env = dict(os.environ)
    for var in THREAD_ENV:
        env[var] = str(threads)
    job = {"case": asdict(case), "method": method, "threads": threads, "refine": refine, "device": device,
           "out_dir": None if out_dir is None else str(out_dir), "mesh": mesh, "warmup": warmup,
           "model": None if model_path is None else str(model_path)}
    proc = subprocess.run([sys.executable, "-c", "from fnin_cli.bench import _child_main; _child_main()"],
                          input=json.dumps(job), capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": "failed", "error": f"subprocess exited {proc.returncode}: {tail[:200]}"}
    return json.loads(lines[-1])


# ------------------------------------------------------------------ the benchmark

def run_bench(cases, methods=DEFAULT_METHODS, threads: int = 1, warmup: bool = True, out_dir=None,
              mesh: bool = False, progress=None, refine: int = 0, device: str = "auto",
              isolate: bool = False, dataset: str | None = None, model_path=None) -> dict:
    """Run every method on every case; return the report (SPEC's JSON schema).

    ``cases`` is a list of :class:`Case` or a source name for :func:`resolve_cases`.
    ``progress(done, total, case, method)`` is called before each run and once at the end
    (with ``case=method=None``). ``model_path``: FNIN weights for the network methods
    (default: the bundled ones).
    """
    from .pipeline import METHODS, NETWORK_METHODS

    if isinstance(cases, str):
        dataset, cases = resolve_cases(cases)
    cases = list(cases)
    methods = list(methods)
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise FninError(f"unknown method '{', '.join(bad)}'; use some of {', '.join(METHODS)}")
    if threads < 1:
        raise FninError(f"--threads must be at least 1, got {threads}")
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    dev = resolve_device(device, methods)
    # load the numeric libraries now, so that the thread counts below reach all of them
    import pyamg  # noqa: F401
    import scipy.sparse.linalg  # noqa: F401

    if any(m.startswith("fnin") for m in methods) and not isolate:
        import torch  # noqa: F401
    thread_limit = limit_threads(threads)
    total = len(cases) * len(methods)
    report = {
        "dataset": dataset or ("synthetic" if all(c.kind == "synthetic" for c in cases) else "custom"),
        "machine": machine_info(threads, dev),
        "methods": methods,
        "protocol": ("perspective: scale = nanmedian(gt/est), MADE = nanmean(|scale*est - gt|); "
                     "orthographic: offset = nanmedian(gt - est); over the mask and finite gt"),
        "units": sorted({c.units for c in cases}),
        "timing": ("seconds = wall time of pipeline.integrate (no load/write); cases outer, methods inner; "
                   + ("each case/method in a fresh subprocess" if isolate else "one process")),
        "warmup": None,
        "refine": refine,
        "isolate": isolate,
        "model": _model_info(model_path) if any(m in NETWORK_METHODS for m in methods) else None,
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
            for m in methods:
                if progress is not None:
                    progress(done, total, case.name, m)
                if isolate:
                    rec = _run_isolated(case, m, threads, refine, device, out_dir, mesh, warmup, model_path)
                else:
                    try:
                        rec = run_one(case, m, refine, device, out_dir, mesh, model_path)
                    except FninError as exc:
                        rec = {"status": "failed", "error": str(exc)}
                    except Exception as exc:
                        rec = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
                report["cases"][case.name][m] = rec
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
    if out_dir is not None and cases:
        try:
            summary_png(out_dir / "summary.png", report)
        except Exception as exc:  # a picture must not lose the numbers
            report.setdefault("warnings", []).append(f"summary.png not written: {exc}")
    return report


def failed_runs(report) -> list:
    """``[(method, error, [cases])]``: failures grouped by method and message."""
    groups = {}
    for c, per in report["cases"].items():
        for m, r in per.items():
            if r.get("status") != "ok":
                groups.setdefault((m, r.get("error", "")), []).append(c)
    return [(m, e, cs) for (m, e), cs in groups.items()]


# ------------------------------------------------------------------ outputs

# a perceptually ordered dark-blue -> teal -> yellow ramp (anchor colours, linearly interpolated)
_CMAP_ANCHORS = np.array([[68, 1, 84], [65, 68, 135], [42, 120, 142], [34, 168, 132],
                          [122, 209, 81], [253, 231, 37]], np.float64)


def colourise(values, vmax: float, background=(255, 255, 255)) -> np.ndarray:
    """(H, W) values -> (H, W, 3) uint8: 0..vmax over the colour ramp, NaN = background."""
    v = np.asarray(values, np.float64)
    t = np.clip(np.nan_to_num(v, nan=0.0) / vmax, 0.0, 1.0) if vmax > 0 else np.zeros(v.shape)
    pos = np.linspace(0.0, 1.0, len(_CMAP_ANCHORS))
    rgb = np.stack([np.interp(t, pos, _CMAP_ANCHORS[:, c]) for c in range(3)], axis=-1)
    rgb[~np.isfinite(v)] = background
    return np.round(rgb).astype(np.uint8)


def error_map_png(path, abs_error, vmax: float, label: str):
    """Absolute-error picture with a colour bar underneath (white background)."""
    from PIL import Image, ImageDraw

    from .io import atomic_path

    img = colourise(abs_error, vmax)
    h, w = img.shape[:2]
    bar_w = max(120, min(w, 300))
    canvas = Image.new("RGB", (max(w, bar_w + 20), h + 54), "white")
    canvas.paste(Image.fromarray(img), (0, 0))
    ramp = colourise(np.tile(np.linspace(0, vmax, bar_w), (10, 1)), vmax)
    canvas.paste(Image.fromarray(ramp), (10, h + 6))
    d = ImageDraw.Draw(canvas)
    d.text((10, h + 20), "0", fill="black")
    d.text((10 + bar_w - 40, h + 20), f">={vmax:g}", fill="black")
    d.text((10, h + 36), label[: max(10, (canvas.width - 20) // 6)], fill="black")
    with atomic_path(path) as tmp:
        canvas.save(tmp, format="PNG")


def write_case_outputs(out_dir: Path, case: Case, method: str, res, err: dict, mesh: bool, normals=None):
    """Depth (.npy), error map (.png) and, on request, a mesh for one case and method."""
    from .io import write_array

    folder = out_dir / case.name
    folder.mkdir(parents=True, exist_ok=True)
    outputs = {}
    outputs["depth"] = str(write_array(folder / f"{method}.depth.npy", res.depth, force=True))
    vmax = ERROR_CLIP_MM if case.kind == "folder" else ERROR_CLIP_MM * 1e-3
    unit = "mm" if case.kind == "folder" else "units"
    error_map_png(folder / f"{method}.error.png", err["abs_error"], vmax,
                  f"{case.name} {method} |error| MADE {err['made']:.4g} {unit}")
    outputs["error_map"] = str(folder / f"{method}.error.png")
    warn = None
    if mesh:
        try:
            from . import mesh as mesh_mod
        except ImportError:
            warn = "mesh not written: fnin_cli.mesh is not available in this version"
        else:
            try:
                path = folder / f"{method}.ply"
                m = mesh_mod.build_mesh(res.depth, res.camera, res.mask, normals=normals)
                mesh_mod.write_mesh(path, m, force=True)
                outputs["mesh"] = str(path)
            except Exception as exc:
                warn = f"mesh not written: {type(exc).__name__}: {exc}"
    return outputs, warn


def summary_png(path, report):
    """Per-case MADE bars (log scale) above per-case seconds bars, one colour per method."""
    from .plots import bar_chart, stack_vertical

    cases = list(report["cases"])
    methods = report["methods"]

    def col(key):
        return {m: [float(report["cases"][c][m].get(key, np.nan)) if report["cases"][c][m].get("status") == "ok"
                    else np.nan for c in cases] for m in methods}

    width = max(900, 90 * len(cases) + 100)
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "made.png", Path(tmp) / "seconds.png"
        unit = "mm" if report["dataset"] != "synthetic" else "scene units"
        bar_chart(a, cases, col("made_mm"), title=f"MADE per case ({unit}, log scale; lower is better)",
                  ylabel=unit, logy=True, size=(width, 420))
        bar_chart(b, cases, col("seconds"), title="seconds per case (integrate only)", ylabel="s",
                  size=(width, 360))
        stack_vertical(path, [a, b])


def write_csv(path, report):
    import csv

    from .io import atomic_path

    keys = ["made_mm", "median_mm", "p95_mm", "rmse_mm", "seconds", "peak_rss_mb", "pixels", "iterations"]
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["case", "method", "status", *keys, "error"])
            for c, per in report["cases"].items():
                for m, r in per.items():
                    w.writerow([c, m, r.get("status"), *[r.get(k, "") for k in keys], r.get("error", "")])


def write_json(path, report):
    from .io import atomic_path

    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(report, indent=1) + "\n")


# ------------------------------------------------------------------ table

def fmt_error(v) -> str:
    """3 decimals (DiLiGenT mm), or a compact 2-digit exponent form below 0.01 (``9.3e-5``)."""
    if v is None or not np.isfinite(v):
        return "-"
    if v >= 0.01 or v == 0:
        return f"{v:.3f}"
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant}e{int(exp)}"


def rich_table(report):
    """Rows = cases, columns = MADE and seconds per method; best MADE bold green, fastest starred."""
    from rich import box
    from rich.table import Table

    methods = report["methods"]
    unit = "mm" if report["dataset"] != "synthetic" else "units"
    t = Table(title=f"fnin bench {report['dataset']}  ({report['machine']['threads']} thread(s), "
                    f"{report['machine']['device']})",
              caption=f"MADE in {unit}, [bold green]bold green[/]: most accurate, *: fastest, "
                      "s: seconds of integrate alone (mean row: sum)",
              box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("case", no_wrap=True)
    for m in methods:
        t.add_column(f"{m}\nMADE", justify="right")
        t.add_column(f"{m}\ns", justify="right")

    def row(name, made, secs, end_section=False):
        ok_made = {m: v for m, v in made.items() if v is not None and np.isfinite(v)}
        ok_secs = {m: v for m, v in secs.items() if v is not None and np.isfinite(v)}
        best = min(ok_made, key=ok_made.get) if ok_made else None
        fast = min(ok_secs, key=ok_secs.get) if ok_secs else None
        cells = [name]
        for m in methods:
            e = fmt_error(made[m]) if m in ok_made else ("-" if m in ok_secs else "[red]failed[/]")
            cells.append(f"[bold green]{e}[/]" if m == best else e)
            s = f"{secs[m]:.2f}" if m in ok_secs else "-"
            cells.append(f"[bold]{s}*[/]" if m == fast else s)
        t.add_row(*cells, end_section=end_section)

    names = list(report["cases"])
    for i, c in enumerate(names):
        per = report["cases"][c]
        row(c, {m: per[m].get("made_mm") for m in methods},
            {m: per[m].get("seconds") for m in methods}, end_section=i == len(names) - 1)
    row("mean", {m: report["mean"][m]["made_mm"] for m in methods},
        {m: report["mean"][m]["seconds_total"] if not report["mean"][m]["failed"] else None for m in methods})
    return t
