"""Output paths: validation before any work (``check_output``) and atomic writes (``atomic_path``)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import FninError

# ---------------------------------------------------------------- writers

def check_output(path, force: bool = False) -> Path:
    """Validate an output path before any work is done: known folder, writable, not clobbering."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise FninError("output folder does not exist; create it first", parent)
    if not parent.is_dir():
        raise FninError("output folder is not a folder", parent)
    if not os.access(parent, os.W_OK):
        raise FninError("output folder is not writable", parent)
    if path.exists() and not force:
        raise FninError("output exists; pass --force to overwrite it", path)  # force=True in Python
    if path.is_dir():
        raise FninError("output path is a folder", path)
    return path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path`` (same suffix); rename it over ``path`` on success.

    An OS error while writing (a full disk, a quota, a vanished folder) becomes a
    :class:`FninError` naming ``path`` and the cause; the temporary file is removed."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".part{path.suffix}", dir=path.parent or ".")
        os.close(fd)
    except OSError as exc:
        raise write_error(exc, path, _disk_full(exc, path)) from None
    try:
        yield Path(tmp)
        # mkstemp creates 0600; give the result the usual permissions (0666 minus umask)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as exc:
        full = _disk_full(exc, path)   # judged while the partial file still takes its space
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) or full:
            raise write_error(exc, path, full) from None
        raise


def _disk_full(exc: BaseException, path) -> bool:
    """Whether ``exc`` (an OS error, or a library's own error such as OpenEXR's
    RuntimeError or numpy's short write) is a full disk or quota."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, Exception):
        return False
    if "no space left" in str(exc).lower():
        return True
    # numpy and tifffile report a short write without an errno: a full disk when the
    # folder has (almost) nothing left
    with contextlib.suppress(OSError):
        return isinstance(exc, OSError) and shutil.disk_usage(Path(path).parent or ".").free < FULL_BELOW
    return False


# free bytes below which a short write is taken for a full disk
FULL_BELOW = 1 << 20


def write_error(exc: BaseException, path, full: bool = False) -> FninError:
    """The one-line error of a failed write of ``path``: the cause as the OS says it
    ("no space left on device", with the space left after the partial file was removed)."""
    if full:
        cause = "no space left on device"
        with contextlib.suppress(OSError):
            free = shutil.disk_usage(Path(path).parent or ".").free
            cause += f" ({free / 2**20:.1f} MiB free there)"
    else:
        cause = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        cause = cause[:1].lower() + cause[1:]
    return FninError(f"cannot write: {cause}", path)
