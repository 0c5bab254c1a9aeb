"""The pipeline (fnin_cli.pipeline): integrate is a short orchestration of run_method, the
rounds and finish; the backend is chosen once; no study hooks in the API."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from fnin_cli import pipeline
from fnin_cli.config import DEFAULT
from fnin_cli.pipeline import build_input, finish, integrate, prepare_rounds, run_method
from fnin_cli.solvers.rounds import run_rounds
from fnin_cli.solvers.system import DataTerm

from helpers import camera, step_surface

PACKAGE = Path(pipeline.__file__).parent


def _step_input():
    cam = camera("persp")
    surf, _ = step_surface(cam)
    return build_input(surf.normals, None, surf.support, cam.K)


def test_integrate_takes_no_study_hooks_and_fits_on_a_screen():
    params = inspect.signature(integrate).parameters
    assert not [p for p in params if p.startswith("rounds_")]
    node = ast.parse(inspect.getsource(integrate)).body[0]
    body = node.body[1:]                                   # without the docstring
    assert body[-1].end_lineno - body[0].lineno + 1 <= 30


@pytest.mark.parametrize("refine", [None, 0, 2])
def test_integrate_is_run_method_the_rounds_and_finish(refine):
    inp = _step_input()
    ref = integrate(inp, refine=refine)
    run = run_method(inp, "fnin", refine, DEFAULT)
    rounds = None
    if run.rounds.max_rounds:
        run, (start, terms, notes) = prepare_rounds(run)
        rounds = run_rounds(run.system, start, run.out.edge_p, terms, run.config, run.rounds, run.out.backend,
                            run.hierarchy)
        rounds.notes[:0] = notes
    res = finish(inp, run, rounds)
    np.testing.assert_array_equal(res.depth, ref.depth)
    assert res.rounds == ref.rounds and (res.rounds > 0) == (refine != 0)


def test_the_backend_is_chosen_once_per_run(monkeypatch):
    calls = []
    real = pipeline.choose_backend
    monkeypatch.setattr(pipeline, "choose_backend", lambda *a, **k: calls.append(a) or real(*a, **k))
    integrate(_step_input())
    assert len(calls) == 1


def test_only_the_backend_reads_a_grid_device_from_a_string():
    """``grid:DEVICE`` is parsed where the backend is chosen and nowhere else (issue 41)."""
    readers = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
               if 'startswith("grid' in p.read_text()]
    assert readers == ["solvers/backend.py"]
