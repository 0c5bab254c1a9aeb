"""`fnin integrate` as a Python API: plan outputs, check them, integrate, write, report.

The CLI is a thin layer over three steps::

    from fnin_cli.outputs import Options, expand_inputs, plan_jobs, run_jobs
    opts = Options(method="wls")
    jobs = plan_jobs(expand_inputs(["scans/*/normal_map.png"]), out_dir="out", fmt="ply")
    records = run_jobs(jobs, opts, workers=2)   # one dict per input, in input order

``plan_jobs`` resolves and validates every output path before anything is computed
(folder exists and is writable, no clobbering without ``force``, no two inputs writing
the same file, no output over an input) and raises :class:`UsageError` otherwise.
``run_jobs`` integrates each input in turn (or in ``workers`` processes), never lets one
failure stop the others, and returns a JSON-ready record per input. All writers are
atomic, so an interrupted or failed run leaves no partial file and never touches an
existing one.
"""

from __future__ import annotations

import glob
import os
import signal
import struct
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import io
from .errors import FninError
from .pipeline import FOLDER_NORMALS, METHODS, NETWORK_METHODS, find_in_folder
from .resources import PeakMemory, available_memory, limit_threads

MAIN_SUFFIXES = io.MESH_SUFFIXES + io.DEPTH_SUFFIXES
# file names that say nothing about the object: name the output after the folder instead
GENERIC_STEMS = {"normal_map", "normal", "normals", "normalmap"}

# Rough peak memory per pixel (bytes) to refuse an input up front instead of dying
# half-way. Measured with VmHWM on full-disc orthographic maps (wls: 250 MB at 512^2,
# 770 MB at 1024^2 including ~90 MB of interpreter; bini below wls; the mesh adds
# nothing to the solver's peak), rounded up: reading/decoding per image pixel, the
# solver and mesh per masked pixel. FNIN's network runs at a capped resolution, so its
# extra over the solve is small.
BYTES_LOAD = 60
BYTES_METHOD = {"wls": 650, "bini": 700, "fnin-s": 800, "fnin": 800, "fnin-stage1": 800}
BYTES_MESH = 150


# the network weights shipped with the package (fnin.DEFAULT_WEIGHTS; not imported here
# because that would import torch just to look at a path)
BUNDLED_WEIGHTS = Path(__file__).parent / "weights" / "fnin.safetensors"


class UsageError(FninError):
    """A problem with the command line itself (exit code 2); nothing has been computed."""


# ------------------------------------------------------------------ options & plan

@dataclass
class Options:
    """Everything about *how* to integrate; the same for every input of a run."""

    mask: str | None = None
    K: str | None = None
    fx: float | None = None
    fy: float | None = None
    cx: float | None = None
    cy: float | None = None
    ortho: bool = False
    pixel_size: float | None = None
    convention: str = "ps"
    method: str = "fnin"
    refine: int = 0
    device: str = "auto"
    network_side: int | None = None
    model: str | None = None
    mean_depth: float | None = None
    depth_at: tuple | None = None
    colors: bool = True
    cut: float = 1.0
    force: bool = False
    debug: bool = False
    threads: int = 1

    def check(self) -> "Options":
        """Reject inconsistent option values (UsageError) before any input is read."""
        from .conventions import canonical

        if self.method not in METHODS:
            raise UsageError(f"unknown method '{self.method}'; use one of {', '.join(METHODS)}")
        try:
            self.convention = canonical(self.convention)
        except FninError as exc:
            raise UsageError(exc.message) from None
        if self.device not in ("auto", "cpu", "cuda", "mps"):
            raise UsageError(f"unknown device '{self.device}'; use auto, cpu, cuda or mps")
        if self.refine < 0:
            raise UsageError(f"--refine must be 0 or more, got {self.refine}")
        if self.network_side is not None and self.network_side < 16:
            raise UsageError(f"--network-side must be 16 or more, got {self.network_side}")
        if self.threads < 1:
            raise UsageError(f"--threads must be 1 or more, got {self.threads}")
        has_f = any(v is not None for v in (self.fx, self.fy, self.cx, self.cy))
        if has_f and self.fx is None:
            raise UsageError("--fy/--cx/--cy need --fx (focal length in pixels)")
        if has_f and self.K is not None:
            raise UsageError("--K and --fx/--fy/--cx/--cy both given; use one of them")
        if self.ortho and (self.K is not None or has_f):
            raise UsageError("--ortho and intrinsics (--K or --fx) both given; drop one of them")
        if self.pixel_size is not None:
            if not (np.isfinite(self.pixel_size) and self.pixel_size > 0):
                raise UsageError(f"--pixel-size must be a positive number, got {self.pixel_size}")
            if self.K is not None or has_f:
                raise UsageError("--pixel-size is for orthographic input; it does not go with --K/--fx")
        for name in ("fx", "fy"):
            v = getattr(self, name)
            if v is not None and not (np.isfinite(v) and v > 0):
                raise UsageError(f"--{name} must be a positive focal length in pixels, got {v}")
        for name in ("cx", "cy"):
            v = getattr(self, name)
            if v is not None and not np.isfinite(v):
                raise UsageError(f"--{name} must be a number, got {v}")
        if not (np.isfinite(self.cut) and self.cut > 0):
            raise UsageError(f"--cut must be a positive number, got {self.cut}")
        if self.mean_depth is not None and self.depth_at is not None:
            raise UsageError("--mean-depth and --depth-at both fix the scale; give one of them")
        if self.mean_depth is not None and not np.isfinite(self.mean_depth):
            raise UsageError(f"--mean-depth must be a number, got {self.mean_depth}")
        for opt, p in (("--mask", self.mask), ("--K", self.K), ("--model", self.model)):
            if p is not None and not Path(p).is_file():
                what = "not found" if not Path(p).exists() else "is not a file"
                raise UsageError(f"{opt} file {what}", p)
        if self.method in NETWORK_METHODS and self.model is None and not BUNDLED_WEIGHTS.is_file():
            raise UsageError("the bundled FNIN weights are missing from this installation; pass --model PATH "
                             "(a trained .safetensors) or use --method bini or wls", BUNDLED_WEIGHTS)
        return self


def parse_depth_at(text: str) -> tuple[int, int, float]:
    """'ROW,COL,DEPTH' -> (row, col, depth)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) != 3:
            raise ValueError
        row, col, depth = int(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        raise UsageError(f"--depth-at wants ROW,COL,DEPTH (e.g. 120,200,1.5), got '{text}'") from None
    if not np.isfinite(depth):
        raise UsageError(f"--depth-at depth must be a number, got '{parts[2]}'")
    return row, col, depth


@dataclass
class Job:
    """One input and the files it will produce (kind -> path)."""

    input: str                          # as the user gave it (after glob expansion)
    name: str                           # output base name
    outputs: dict = field(default_factory=dict)
    skip: bool = False                  # all outputs exist and --skip-existing was given


def expand_inputs(args) -> list[str]:
    """Expand glob patterns (for shells that don't), keep order, drop repeats.

    A pattern that matches nothing is a usage error; a plain path that does not exist
    is kept, so it fails on its own ("file not found") without stopping a batch.
    """
    out, seen = [], set()
    for arg in args:
        arg = str(arg)
        if not Path(arg).exists() and glob.has_magic(arg):
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                raise UsageError(f"no file or folder matches the pattern '{arg}'")
        else:
            matches = [arg]
        for m in matches:
            key = os.path.realpath(m)
            if key not in seen:
                seen.add(key)
                out.append(m)
    if not out:
        raise UsageError("no INPUT given")
    return out


def output_name(inp: str) -> str:
    """Base name of the outputs of one input: the folder's name for folders (and for
    generic file names like normal_map.png), else the file's stem."""
    p = Path(inp)
    if p.is_dir():
        return Path(os.path.realpath(p)).name or "root"
    if p.stem.lower() in GENERIC_STEMS:
        parent = Path(os.path.realpath(p)).parent.name
        if parent:
            return parent
    return p.stem


def _template(value: str, name: str, kind: str, base_dir: Path | None) -> Path:
    """An extra output path: a suffix ('.exr' -> <name>_<kind>.exr), a template with
    {stem}, or a literal path. Suffixes and relative templates go into ``base_dir``."""
    value = str(value)
    if value.startswith(".") and "/" not in value and value.count(".") == 1 and len(value) > 1:
        rel = Path(f"{name}_{kind}{value}")
    elif "{stem}" in value:
        rel = Path(value.replace("{stem}", name))
    else:
        return Path(value)
    if base_dir is not None and not rel.is_absolute():
        return base_dir / rel
    return rel


def _suffix_of(value) -> str:
    v = str(value)
    if v.startswith(".") and "/" not in v and v.count(".") == 1:
        return v.lower()
    return Path(v.replace("{stem}", "x")).suffix.lower()


def _is_template(value) -> bool:
    v = str(value)
    return "{stem}" in v or (v.startswith(".") and "/" not in v and v.count(".") == 1 and len(v) > 1)


def plan_jobs(
    inputs: list[str],
    out=None,
    out_dir=None,
    fmt: str | None = None,
    depth=None,
    weights=None,
    preview=None,
    force: bool = False,
    skip_existing: bool = False,
    options: Options | None = None,
) -> list[Job]:
    """Resolve and validate every output path of every input; raise UsageError if any is bad."""
    if out is not None and out_dir is not None:
        raise UsageError("-o and --out-dir both given; use -o for one input, --out-dir for several")
    if out is not None and len(inputs) > 1:
        raise UsageError(f"-o names one file but {len(inputs)} inputs were given; use --out-dir DIR instead")
    if len(inputs) > 1 and out_dir is None:
        raise UsageError(f"{len(inputs)} inputs need --out-dir DIR (outputs are named after each input)")
    if fmt is not None:
        fmt = "." + fmt.lower().lstrip(".")
        if fmt not in MAIN_SUFFIXES:
            raise UsageError(f"unknown --format '{fmt[1:]}'; use one of {', '.join(s[1:] for s in MAIN_SUFFIXES)}")
    if out is not None:
        suf = Path(out).suffix.lower()
        if suf not in MAIN_SUFFIXES:
            raise UsageError(f"-o needs a mesh ({', '.join(io.MESH_SUFFIXES)}) or depth "
                             f"({', '.join(io.DEPTH_SUFFIXES)}) suffix", out)
        if fmt is not None and fmt != suf:
            raise UsageError(f"--format {fmt[1:]} disagrees with the suffix of -o", out)
    for opt, value in (("--depth", depth), ("--weights", weights)):
        if value is not None and _suffix_of(value) not in io.DEPTH_SUFFIXES:
            raise UsageError(f"{opt} needs one of the suffixes {', '.join(io.DEPTH_SUFFIXES)}", value)
    if preview is not None and _suffix_of(preview) != ".png":
        raise UsageError("--preview writes a PNG picture; give it a .png name", preview)
    if len(inputs) > 1:
        for opt, value in (("--depth", depth), ("--weights", weights), ("--preview", preview)):
            if value is not None and not _is_template(value):
                raise UsageError(f"{opt} names one file but {len(inputs)} inputs were given; "
                                 f"give a suffix ({opt} .exr) or a template ({opt} '{{stem}}_x.exr')")
    base_dir = Path(out_dir) if out_dir is not None else (Path(out).parent if out is not None else None)
    main_suffix = fmt or ".ply"
    if out_dir is not None:
        d = Path(out_dir)
        if not d.exists():
            raise UsageError(f"output folder does not exist; create it first (mkdir -p {d})", d)
        if not d.is_dir():
            raise UsageError("--out-dir is not a folder", d)

    jobs = []
    for inp in inputs:
        name = output_name(inp)
        outs = {}
        if out is not None:
            main = Path(out)
        elif out_dir is not None:
            main = Path(out_dir) / f"{name}{main_suffix}"
        elif depth is None and weights is None and preview is None:
            main = Path(f"{name}{main_suffix}")  # nothing asked for: a mesh in the current folder
        else:
            main = None
        if main is not None:
            kind = "mesh" if main.suffix.lower() in io.MESH_SUFFIXES else "depth"
            outs[kind] = main
        for kind, value in (("depth", depth), ("weights", weights), ("preview", preview)):
            if value is None:
                continue
            if kind in outs:
                raise UsageError("the main output (-o / --format) is already the depth map; drop --depth "
                                 "or make the main output a mesh (.ply)")
            outs[kind] = _template(value, name, kind, base_dir)
        jobs.append(Job(inp, name, outs))

    _check_collisions(jobs, options)
    for job in jobs:
        existing = [p for p in job.outputs.values() if p.exists()]
        if skip_existing and not force and existing and len(existing) == len(job.outputs):
            job.skip = True
            continue
        for p in job.outputs.values():
            try:
                io.check_output(p, force)
            except FninError as exc:
                raise UsageError(exc.message, exc.path) from None
    return jobs


def _check_collisions(jobs: list[Job], options: Options | None) -> None:
    owner = {}
    protected = {}
    for job in jobs:
        for p in _input_files(job.input):
            protected[os.path.realpath(p)] = job.input
    if options is not None:
        for p in (options.mask, options.K, options.model):
            if p is not None:
                protected[os.path.realpath(p)] = p
    for job in jobs:
        for kind, p in job.outputs.items():
            key = os.path.realpath(p)
            if key in owner:
                other = owner[key]
                if other == job.input:
                    raise UsageError("two outputs of the same input would write this file; "
                                     "give them different names", p)
                raise UsageError(f"inputs '{other}' and '{job.input}' would both write this file; "
                                 "rename one input or run them separately", p)
            if key in protected:
                raise UsageError(f"output would overwrite an input file ({protected[key]}); choose another name", p)
            owner[key] = job.input


def _input_files(inp: str) -> list[Path]:
    p = Path(inp)
    if p.is_dir():
        return [p / n for n in FOLDER_NORMALS + ("mask.png", "mask.npy", "mask.exr", "K.txt")]
    return [p]


# ------------------------------------------------------------------ memory

def estimate_bytes(shape, method: str, mesh: bool = True, pixels: int | None = None) -> int:
    """Peak memory estimate for integrating a map of ``shape`` (all pixels masked if unknown)."""
    h, w = int(shape[0]), int(shape[1])
    n = h * w if pixels is None else int(pixels)
    per = BYTES_METHOD.get(method, max(BYTES_METHOD.values())) + (BYTES_MESH if mesh else 0)
    return h * w * BYTES_LOAD + n * per


def check_memory(shape, method: str, path, mesh: bool = True, workers: int = 1, pixels=None) -> None:
    """Refuse (FninError) an input whose estimated peak memory exceeds what is available."""
    need = estimate_bytes(shape, method, mesh, pixels)
    avail = available_memory()
    if avail is None:
        return
    share = avail // max(1, workers)
    if need > share:
        h, w = int(shape[0]), int(shape[1])
        per_worker = f" per worker (--jobs {workers})" if workers > 1 else ""
        raise FninError(
            f"a {w}x{h} map needs about {need / 2**30:.1f} GiB of memory with --method {method} but only "
            f"{share / 2**30:.1f} GiB is available{per_worker}; crop or downsample the map"
            + (", or use fewer --jobs" if workers > 1 else ""), path)


def probe_shape(path) -> tuple[int, int] | None:
    """(H, W) of an image file from its header only, without reading the pixels (None if unsure)."""
    path = Path(path)
    suf = path.suffix.lower()
    try:
        if suf == ".png":
            with open(path, "rb") as fh:
                head = fh.read(24)
            if len(head) == 24 and head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
                w, h = struct.unpack(">II", head[16:24])
                return int(h), int(w)
        elif suf == ".npy":
            with open(path, "rb") as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, _, _ = np.lib.format.read_array_header_1_0(fh)
                else:
                    shape, _, _ = np.lib.format.read_array_header_2_0(fh)
            if len(shape) >= 2:
                return int(shape[0]), int(shape[1])
        elif suf in (".tif", ".tiff"):
            import tifffile

            with tifffile.TiffFile(path) as tf:
                shape = tf.pages[0].shape
            if len(shape) >= 2:
                return int(shape[0]), int(shape[1])
        elif suf == ".exr":
            import OpenEXR

            lo, hi = OpenEXR.File(str(path), header_only=True).header()["dataWindow"]
            return int(hi[1] - lo[1] + 1), int(hi[0] - lo[0] + 1)
    except Exception:  # a corrupt header is reported by the real reader
        return None
    return None


# ------------------------------------------------------------------ worker state

_STATE = {"model": None, "in_pool": False, "busy": False, "interrupted": False}


def _sigint(signum, frame):
    # In pool workers: interrupt a running input (its atomic writes clean up), but let an
    # idle worker wait quietly for the pool to shut down instead of dying with a traceback.
    _STATE["interrupted"] = True
    if _STATE["busy"]:
        raise KeyboardInterrupt


def _warm_up() -> None:
    """Import everything an input may need, once, before the first input.

    Besides fairer per-input timings, this keeps Ctrl-C out of imports: trimesh wraps
    failed optional imports (KeyboardInterrupt included) in placeholders, which then
    broke the rest of that process with a TypeError instead of stopping it.
    """
    import io as _bytes_io

    try:
        import pyamg  # noqa: F401
        import scipy.sparse.linalg  # noqa: F401

        from .camera import Camera
        from .mesh import build_mesh

        depth = np.ones((3, 3))
        mesh = build_mesh(depth, Camera(None, 1.0), depth > 0)
        mesh.export(file_obj=_bytes_io.BytesIO(), file_type="ply", encoding="binary")
    except Exception:  # a missing optional piece shows up per input, with its message
        pass


def quiet_library_loggers() -> None:
    """Readers report through FninError; keep libraries' own log lines (tifffile warns
    twice about every corrupt TIFF) off stderr so each failure stays one line."""
    import logging

    for name in ("tifffile", "PIL", "imageio", "trimesh", "pyamg"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def init_worker(options: Options, in_pool: bool = False):
    """Per-process setup: fixed thread counts (results do not depend on --jobs) and the
    FNIN network loaded once. Safe when the network or its weights are unavailable:
    the error then surfaces per input, with its file name. Returns a callable that
    restores the thread settings (for in-process use through the API).

    The counts are set at run time (fnin_cli.resources, which says why a fixed, small
    count matters): the environment variables only work before numpy is imported (the
    CLI sets them), this covers API use and the BLAS libraries loaded since."""
    _STATE["in_pool"] = in_pool
    _STATE["interrupted"] = False
    if in_pool:
        signal.signal(signal.SIGINT, _sigint)
    fnin = options.method in NETWORK_METHODS
    threads = limit_threads(options.threads, torch=fnin, env=False)
    quiet_library_loggers()
    _warm_up()
    threads.apply()  # also the BLAS of scipy/pyamg, loaded by the warm-up
    if fnin:
        _STATE["model"] = load_model_safely(options)

    def restore():
        threads.restore()
        _STATE["model"] = None

    return restore


def load_model_safely(options: Options):
    try:
        from .fnin import load_model
    except Exception:
        return None
    try:
        return load_model(options.model, device=options.device)
    except Exception:
        return None


# ------------------------------------------------------------------ one input

def new_record(job: Job, options: Options) -> dict:
    return {
        "input": job.input, "name": job.name, "status": "failed", "error": None,
        "outputs": {}, "method": options.method, "refine": options.refine,
        "camera": None, "shape": None, "pixels": None, "seconds": {},
        "scale_note": None, "warnings": [], "peak_rss_mb": None,
    }


def process(job: Job, options: Options, workers: int = 1) -> dict:
    """Integrate one input and write its outputs; never raises (except KeyboardInterrupt
    outside pool workers). Returns the JSON-ready record."""
    rec = new_record(job, options)
    if job.skip:
        rec.update(status="skipped", outputs={k: str(p) for k, p in job.outputs.items()})
        return rec
    if _STATE["interrupted"]:  # Ctrl-C reached this worker: start nothing new
        rec.update(status="interrupted", error=f"{job.input}: interrupted")
        return rec
    # peak memory per input: the kernel's high-water mark is reset here (no gc first, which
    # takes ~0.1 s with torch loaded)
    memory = PeakMemory(release=False).start()
    before = {k: _file_id(p) for k, p in job.outputs.items()}
    _STATE["busy"] = True
    t0 = time.perf_counter()
    try:
        _integrate_and_write(job, options, rec, workers)
        rec["status"] = "ok"
    except KeyboardInterrupt:
        if not _STATE["in_pool"]:
            raise
        # list the outputs that were renamed into place (complete) before the interrupt,
        # even if it struck between the rename and the bookkeeping
        for k, p in job.outputs.items():
            now = _file_id(p)
            if now is not None and now != before[k]:
                rec["outputs"][k] = str(p)
        rec.update(status="interrupted", error=f"{job.input}: interrupted")
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
            rec.update(status="interrupted", error=f"{job.input}: interrupted")
            return rec
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


def _file_id(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _make_K(options: Options, shape) -> np.ndarray:
    h, w = shape
    fx = float(options.fx)
    fy = float(options.fy) if options.fy is not None else fx
    cx = float(options.cx) if options.cx is not None else (w - 1) / 2
    cy = float(options.cy) if options.cy is not None else (h - 1) / 2
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


def _normals_file(inp: str) -> Path:
    p = Path(inp)
    return find_in_folder(p)[0] if p.is_dir() else p


def _integrate_and_write(job: Job, options: Options, rec: dict, workers: int) -> None:
    from .pipeline import integrate, load_input

    secs = rec["seconds"]
    t = time.perf_counter()
    npath = _normals_file(job.input)
    if not npath.exists():
        raise FninError("file not found", npath)
    shape = probe_shape(npath)
    mesh_out = "mesh" in job.outputs
    if shape is not None:
        io._check_size(shape, npath)
        check_memory(shape, options.method, npath, mesh_out, workers)
    K = options.K
    if options.fx is not None:
        if shape is None:  # no cheap header: read it (the loader reads it again; rare)
            shape = io.read_array(npath)[0].shape[:2]
        K = _make_K(options, shape)
    inp = load_input(job.input, mask=options.mask, K=K, ortho=options.ortho,
                     pixel_size=options.pixel_size, convention=options.convention)
    if options.fx is not None:
        inp.source = str(npath)
    rec["shape"] = list(inp.shape)
    rec["camera"] = "perspective" if inp.camera.perspective else "orthographic"
    rec["pixels"] = int(inp.mask.sum())
    if shape is None:  # header was not probed: check with the real size now
        check_memory(inp.shape, options.method, npath, mesh_out, workers, rec["pixels"])
    if options.depth_at is not None:
        r, c, d = options.depth_at
        h, w = inp.shape
        if not (0 <= r < h and 0 <= c < w) or not inp.mask[r, c]:
            raise FninError(f"--depth-at pixel (row {r}, col {c}) is not inside the mask of this "
                            f"{w}x{h} map; pick a pixel on the object", npath)
        if inp.camera.perspective and not d > 0:
            raise FninError(f"--depth-at depth must be positive for a perspective camera, got {d:g}", npath)
    if options.mean_depth is not None and inp.camera.perspective and not options.mean_depth > 0:
        raise FninError(f"--mean-depth must be positive for a perspective camera, got {options.mean_depth:g}",
                        npath)
    secs["load"] = round(time.perf_counter() - t, 4)

    res = integrate(inp, method=options.method, refine=options.refine, device=options.device,
                    mean_depth=options.mean_depth, depth_at=options.depth_at, model=_STATE["model"],
                    network_side=options.network_side)
    for k, v in res.seconds.items():
        if k != "total":
            secs[k] = round(float(v), 4)
    secs["integrate"] = round(float(res.seconds.get("total", 0.0)), 4)
    rec["scale_note"] = res.scale_note
    rec["warnings"] = list(res.warnings)
    rec["pixels"] = res.pixels

    t = time.perf_counter()
    write_outputs(job.outputs, inp, res, options, rec)
    secs["write"] = round(time.perf_counter() - t, 4)


def write_outputs(outputs: dict, inp, res, options: Options, rec: dict | None = None) -> dict:
    """Write the mesh / depth / weights / preview of one result (each atomically)."""
    written = rec["outputs"] if rec is not None else {}
    for kind, path in outputs.items():
        if kind == "mesh":
            from .mesh import build_mesh, write_mesh

            t = time.perf_counter()
            mesh = build_mesh(res.depth, res.camera, res.mask, normals=inp.normals, colors=options.colors,
                              cut=options.cut)
            if rec is not None:
                rec["seconds"]["mesh"] = round(time.perf_counter() - t, 4)
            write_mesh(path, mesh, force=options.force)
        elif kind == "depth":
            io.write_array(path, res.depth, force=options.force)
        elif kind == "weights":
            io.write_array(path, res.discontinuity, force=options.force)
        elif kind == "preview":
            path = io.check_output(path, options.force)
            img = preview_image(inp.normals, res.depth, res.discontinuity, res.camera, res.mask)
            with io.atomic_path(path) as tmp:
                io.write_png(tmp, img)
        written[kind] = str(path)
    return written


# ------------------------------------------------------------------ preview picture

PREVIEW_SIDE = 1024
_BACKGROUND = np.array([40, 40, 40], np.uint8)
_LIGHT = np.array([-0.35, -0.45, -0.82])  # from the surface toward a light above-left of the camera


def preview_image(normals, depth, discontinuity, camera, mask) -> np.ndarray:
    """Three panels side by side (uint8 RGB): the input normals (file colours), the
    integrated surface shaded by a light at the camera, and the depth (near = bright,
    histogram-equalised)
    with discontinuities (weight > 0.5) in red. Large maps are decimated to ~1024 px and
    the panels are cropped to the object."""
    from .camera import normals_from_depth
    from .conventions import from_internal

    h, w = mask.shape
    step = max(1, int(np.ceil(max(h, w) / PREVIEW_SIDE)))
    m = mask[::step, ::step]
    n_in = normals[::step, ::step].astype(np.float64)

    # 1: input normals as the usual RGB = (n + 1) / 2 of the photometric-stereo convention
    ps = from_internal(np.nan_to_num(n_in), "ps")
    p1 = _panel(np.clip((ps + 1.0) * 127.5, 0, 255), m)

    # 2: shading of the normals of the integrated depth (input normals where undefined)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_out = normals_from_depth(depth.astype(np.float64), camera)[::step, ::step]
    bad = ~np.isfinite(n_out).all(-1)
    n_out[bad] = n_in[bad]
    light = _LIGHT / np.linalg.norm(_LIGHT)
    shade = np.clip(np.nan_to_num(n_out @ light), 0.0, 1.0)
    grey = 30.0 + 225.0 * shade
    p2 = _panel(np.repeat(grey[..., None], 3, axis=-1), m)

    # 3: depth, near = bright, robust range; discontinuities in red
    d = depth[::step, ::step].astype(np.float64)
    fin = m & np.isfinite(d)
    t = np.zeros_like(d)
    if fin.any():  # histogram-equalised (rank) grey: full contrast whatever the depth range
        vals = d[fin]
        order = np.argsort(vals, kind="stable")
        ranks = np.empty(vals.size)
        ranks[order] = np.arange(vals.size)
        t[fin] = ranks / max(1, vals.size - 1)
    g = 50.0 + 205.0 * (1.0 - t)
    rgb = np.repeat(g[..., None], 3, axis=-1)
    if discontinuity is not None:
        jump = np.nan_to_num(discontinuity[::step, ::step], nan=0.0) > 0.5
        rgb[jump] = (230.0, 40.0, 40.0)
    p3 = _panel(rgb, m)

    # crop to the object (plus a margin) so small objects in big frames stay visible
    rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
    if rows.size:
        pad = 8
        r0, r1 = max(0, rows[0] - pad), min(m.shape[0], rows[-1] + 1 + pad)
        c0, c1 = max(0, cols[0] - pad), min(m.shape[1], cols[-1] + 1 + pad)
        p1, p2, p3 = (p[r0:r1, c0:c1] for p in (p1, p2, p3))
    gap = np.broadcast_to(_BACKGROUND, (p1.shape[0], 4, 3))
    return np.ascontiguousarray(np.concatenate([p1, gap, p2, gap, p3], axis=1), dtype=np.uint8)


def _panel(rgb: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.empty(mask.shape + (3,), np.uint8)
    out[:] = _BACKGROUND
    out[mask] = np.round(rgb[mask]).astype(np.uint8)
    return out


# ------------------------------------------------------------------ many inputs

def run_jobs(jobs: list[Job], options: Options, workers: int = 1, on_record=None, on_start=None) -> list[dict]:
    """Process every job; ``on_record(index, record)`` is called in input order as soon
    as each record (and all before it) is ready. KeyboardInterrupt propagates after the
    pool is shut down cleanly (the records done so far were already reported)."""
    records: list = [None] * len(jobs)
    next_out = [0]

    def deliver(i, rec):
        records[i] = rec
        while next_out[0] < len(jobs) and records[next_out[0]] is not None:
            if on_record is not None:
                on_record(next_out[0], records[next_out[0]])
            next_out[0] += 1

    todo = [i for i, j in enumerate(jobs) if not j.skip]
    for i, j in enumerate(jobs):
        if j.skip:
            deliver(i, process(j, options))
    workers = max(1, min(int(workers), len(todo))) if todo else 1
    if workers == 1:
        restore = init_worker(options, in_pool=False) if todo else (lambda: None)
        try:
            for i in todo:
                if on_start is not None:
                    on_start(i)
                deliver(i, process(jobs[i], options))
        finally:
            restore()
        return records

    import concurrent.futures as cf
    import multiprocessing as mp
    from collections import deque

    def new_pool():
        # spawn: fresh interpreters, no inherited thread pools (fork after torch/OpenMP can hang)
        return cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                      initializer=init_worker, initargs=(options, True))

    # the workers' environment (BLAS and torch counts are set again in init_worker);
    # restored when the pool is gone
    with limit_threads(options.threads, torch=False, blas=False):
        pool = new_pool()
        queue = deque(todo)
        pending = {}  # at most `workers` submitted at a time, so Ctrl-C has nothing queued to drain
        try:
            while queue or pending:
                while queue and len(pending) < workers:
                    i = queue.popleft()
                    pending[pool.submit(process, jobs[i], options, workers)] = i
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
            pool.shutdown(wait=True, cancel_futures=True)
            # report what finished (complete files) or stopped, in input order, skipping the
            # gaps of inputs never started
            for fut, i in pending.items():
                if records[i] is None and fut.done() and not fut.cancelled() and fut.exception() is None:
                    records[i] = fut.result()
            for i in range(next_out[0], len(jobs)):
                if records[i] is not None and on_record is not None:
                    on_record(i, records[i])
            raise
        pool.shutdown(wait=True)
    return records


def record_json(rec: dict) -> dict:
    """The record as printed by --json (no traceback; stable key order)."""
    keys = ("input", "status", "error", "outputs", "method", "refine", "camera", "shape", "pixels",
            "seconds", "scale_note", "warnings", "peak_rss_mb")
    return {k: rec.get(k) for k in keys}


__all__ = ["Options", "Job", "UsageError", "expand_inputs", "plan_jobs", "run_jobs", "process",
           "write_outputs", "preview_image", "probe_shape", "check_memory", "estimate_bytes",
           "available_memory", "parse_depth_at", "record_json"]
