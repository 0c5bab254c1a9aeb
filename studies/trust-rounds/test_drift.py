"""The study's drift stop (drift.py; `python -m pytest studies/trust-rounds/test_drift.py`): it stops on steps that keep their direction and
size, not on steps that shrink as a converging refinement's do."""

from __future__ import annotations

import numpy as np

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from drift import DriftStop  # noqa: E402


def _run(stop, steps):
    z = np.zeros(50)
    for it, s in enumerate(steps, 1):
        z_new = z + s
        if stop(it, z, z_new):
            return it
        z = z_new
    return None


def test_a_steady_drift_stops_after_patience_rounds():
    rng = np.random.default_rng(0)
    d = rng.normal(size=50)
    assert _run(DriftStop(0.9, 0.8, 2), [d * (1 + 0.01 * i) for i in range(10)]) == 3
    assert _run(DriftStop(0.9, 0.8, 3), [d] * 10) == 4


def test_shrinking_or_turning_steps_do_not_stop():
    rng = np.random.default_rng(1)
    d = rng.normal(size=50)
    assert _run(DriftStop(), [d * 0.5 ** i for i in range(10)]) is None            # converging
    assert _run(DriftStop(), [rng.normal(size=50) for _ in range(10)]) is None      # no direction
    assert _run(DriftStop(), [np.ones(50) * (i + 1) for i in range(10)]) is None    # a global offset only


def test_fresh_forgets_the_history():
    s = DriftStop(0.9, 0.8, 1)
    d = np.arange(50.0)
    s(1, np.zeros(50), d)
    t = s.fresh()
    assert t(1, np.zeros(50), d) is False and s(2, d, 2 * d) is True
