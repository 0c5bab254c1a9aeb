"""The studies' harness (studies/_lib.py) runs exactly the shipped default when it changes nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from fnin_cli.pipeline import build_input, integrate

from helpers import camera, step_surface

# the harness only (studies/_lib.py), never a study's own script (tests/test_docs.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "studies"))
from _lib import integrate_composed  # noqa: E402


@pytest.mark.parametrize("kind", ["persp", "ortho"])
@pytest.mark.parametrize("refine", [None, 0, 2])
def test_the_harness_is_integrate(kind, refine):
    cam = camera(kind)
    surf, _ = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, cam.K if cam.perspective else None,
                      pixel_size=None if cam.perspective else cam.pixel_size)
    ref = integrate(inp, refine=refine)
    res = integrate_composed(inp, refine=refine)
    np.testing.assert_array_equal(res.depth, ref.depth)
    assert res.loose_pieces == ref.loose_pieces and res.rounds == ref.rounds


def test_a_study_changes_the_rounds_objective_through_the_harness():
    """A rule of its own (here BiNI's k of 6 in the rounds) changes the result; nothing else does."""
    from dataclasses import replace

    cam = camera("ortho")
    surf, _ = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, None, pixel_size=cam.pixel_size)
    ref = integrate(inp)
    res = integrate_composed(inp, rounds_rule=lambda system, rule: replace(rule, k=6.0))
    assert not np.array_equal(res.depth, ref.depth)
