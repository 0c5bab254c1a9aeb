"""Output paths: validation before any work (``check_output``) and atomic writes (``atomic_path``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ..errors import FninError

# ---------------------------------------------------------------- writers

def check_output(path, force: bool = False, force_hint: str = "force=True") -> Path:
    """Validate an output path before any work is done: known folder, writable, not clobbering.

    ``force_hint`` is how the caller overwrites: the Python argument by default, ``--force``
    from the command line."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise FninError("output folder does not exist; create it first", parent)
    if not parent.is_dir():
        raise FninError("output folder is not a folder", parent)
    if not os.access(parent, os.W_OK):
        raise FninError("output folder is not writable", parent)
    if path.exists() and not force:
        raise FninError(f"output exists; pass {force_hint} to overwrite it", path)
    if path.is_dir():
        raise FninError("output path is a folder", path)
    return path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path`` (same suffix); rename it over ``path`` on success."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".part{path.suffix}", dir=path.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates 0600; give the result the usual permissions (0666 minus umask)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
