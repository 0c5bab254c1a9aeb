"""Test setup shared by all test files.

BLAS threads are capped at 1 before numpy is imported: on these 2-vCPU machines
multi-threaded BLAS under load is pathologically slow (SPEC, measured facts).
"""

import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `import helpers`

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import assert_equal_up_to  # noqa: E402,F401  (re-exported for tests)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def repo_root() -> Path:
    return REPO
