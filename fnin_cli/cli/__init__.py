"""The `fnin` command line: one module per command, each parses, calls the API, prints.

``main`` is the console script (``[project.scripts]`` in pyproject.toml).
"""

import logging
import os
import sys

from . import bench, integrate, train  # noqa: F401  (register the commands)
from .app import app


def main():
    """Entry point of the ``fnin`` console script.

    ``fnin integrate`` leaves the process with ``os._exit`` once its outputs are written
    and its streams flushed: the interpreter's teardown of torch, scipy and pyamg takes
    about 0.6 s of a single call's wall time, more than the work on a DiLiGenT object
    (docs/decisions.md#start-up). Other commands exit normally (bench and train clean
    up temporary folders and worker pools at exit).
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    fast = len(sys.argv) > 1 and sys.argv[1] == "integrate"
    try:
        app()
    except SystemExit as exc:
        if not fast:
            raise
        code = exc.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        _leave(code)


def _leave(code: int) -> None:
    """Flush what the user is owed, then end the process without the interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:   # a closed pipe (fnin ... | head) has nothing left to flush into
            pass
    logging.shutdown()
    os._exit(code)


__all__ = ["app", "main"]
