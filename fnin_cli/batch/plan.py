"""Planning a batch: expand inputs, name and validate every output before any work.
"""

from __future__ import annotations

import contextlib
import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import io
from ..errors import FninError
from ..io.layout import FOLDER_FILES, beside
from ..mesh import GLB_AXES
from .options import Options, UsageError

MAIN_SUFFIXES = io.MESH_SUFFIXES + io.DEPTH_SUFFIXES
# file names that say nothing about the object: name the output after the folder instead
GENERIC_STEMS = {"normal_map", "normal", "normals", "normalmap"}


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


def _template(value: str, name: str, kind: str, base_dir: Path | None, side_name: str | None = None) -> Path:
    """An extra output path: a suffix ('.exr' -> <side_name>_<kind>.exr), a template with
    {stem} (the input's name), or a literal path. Suffixes and relative templates go into
    ``base_dir``. ``side_name`` is the stem of ``-o`` when given, else the input's name."""
    value = str(value)
    if _is_bare_suffix(value):
        rel = Path(f"{side_name or name}_{kind}{value}")
    elif "{stem}" in value:
        rel = Path(value.replace("{stem}", name))
    else:
        return Path(value)
    if base_dir is not None and not rel.is_absolute():
        return base_dir / rel
    return rel


def _is_bare_suffix(value) -> bool:
    """'.exr': a suffix alone, named after the input (or -o's stem) by :func:`_template`."""
    v = str(value)
    return v.startswith(".") and "/" not in v and v.count(".") == 1 and len(v) > 1


def _suffix_of(value) -> str:
    v = str(value)
    if _is_bare_suffix(v):
        return v.lower()
    return Path(v.replace("{stem}", "x")).suffix.lower()


def _is_template(value) -> bool:
    return "{stem}" in str(value) or _is_bare_suffix(value)


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
    prior_weights=None,
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
    written = Path(out).suffix.lower() if out is not None else (fmt or ".ply")
    if options is not None and options.mesh_axes == "opencv" and written == ".glb":
        raise UsageError(GLB_AXES)
    for opt, value in (("--depth", depth), ("--weights", weights), ("--prior-weights", prior_weights)):
        if value is not None and _suffix_of(value) not in io.DEPTH_SUFFIXES:
            raise UsageError(f"{opt} needs one of the suffixes {', '.join(io.DEPTH_SUFFIXES)}", value)
    if preview is not None and _suffix_of(preview) != ".png":
        raise UsageError("--preview writes a PNG picture; give it a .png name", preview)
    if len(inputs) > 1:
        for opt, value in (("--depth", depth), ("--weights", weights), ("--preview", preview),
                           ("--prior-weights", prior_weights)):
            if value is not None and not _is_template(value):
                raise UsageError(f"{opt} names one file but {len(inputs)} inputs were given; "
                                 f"give a suffix ({opt} .exr) or a template ({opt} '{{stem}}_x.exr')")
    base_dir = Path(out_dir) if out_dir is not None else (Path(out).parent if out is not None else None)
    main_suffix = fmt or ".ply"
    missing = []   # the folders of --out-dir to create (parents too), after every check passed
    if out_dir is not None:
        d = Path(out_dir)
        if d.exists() and not d.is_dir():
            raise UsageError("--out-dir is not a folder", d)
        missing = _missing_folders(d)

    jobs = []
    for inp in inputs:
        name = output_name(inp)
        # a bare suffix follows -o's stem (-o dome_bini.ply --depth .npy -> dome_bini_depth.npy),
        # else the input's name (--out-dir)
        side_name = Path(out).stem if out is not None else name
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
        for kind, value in (("depth", depth), ("weights", weights), ("preview", preview),
                            ("prior_weights", prior_weights)):
            if value is None:
                continue
            if kind in outs:
                raise UsageError("the main output (-o / --format) is already the depth map; drop --depth "
                                 "or make the main output a mesh (.ply)")
            outs[kind] = _template(value, name, kind, base_dir, side_name)
        jobs.append(Job(inp, name, outs))

    _check_collisions(jobs, options)
    _make_folders(missing)
    try:
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
    except UsageError:
        for folder in reversed(missing):  # nothing was computed: leave no empty folder behind
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return jobs


def _missing_folders(d: Path) -> list[Path]:
    """The folders of ``d`` that do not exist yet, outermost first; a usage error when
    the nearest existing one is not a writable folder."""
    missing = []
    while not d.exists():
        missing.insert(0, d)
        if d.parent == d:
            break
        d = d.parent
    if missing:
        if not d.is_dir():
            raise UsageError("cannot create --out-dir inside something that is not a folder", d)
        if not os.access(d, os.W_OK | os.X_OK):
            raise UsageError("cannot create --out-dir here: the folder is not writable", d)
    return missing


def _make_folders(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.mkdir()
        except FileExistsError:
            pass
        except OSError as exc:
            raise UsageError(f"cannot create the output folder ({exc.strerror or exc})", folder) from None


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
        return [p / n for n in FOLDER_FILES]
    return [p, *(f for f in beside(p) if f is not None)]
