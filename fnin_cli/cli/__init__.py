"""The `fnin` command line: one module per command, each parses, calls the API, prints.

``main`` is the console script (``[project.scripts]`` in pyproject.toml).
"""

import os

from . import bench, integrate, train  # noqa: F401  (register the commands)
from .app import app


def main():
    """Entry point of the ``fnin`` console script."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    app()


__all__ = ["app", "main"]
