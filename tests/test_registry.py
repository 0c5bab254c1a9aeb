"""The registry of methods (fnin_cli.solvers.registry) and the run functions' interface (solvers.run)."""

from __future__ import annotations

import numpy as np
import pytest

from fnin_cli.config import DEFAULT
from fnin_cli.errors import FninError
from fnin_cli.solvers import registry
from fnin_cli.solvers.objective import FixedTerm, FixedWeights
from fnin_cli.solvers.run import RunArgs, prior_level
from fnin_cli.solvers.system import DataTerm


def test_every_method_is_listed_once_and_the_default_is_fnin():
    assert registry.METHODS == tuple(m.name for m in registry.REGISTRY)
    assert len(set(registry.METHODS)) == len(registry.METHODS)
    assert registry.DEFAULT_METHOD == "fnin" and "fnin" in registry.NETWORK_METHODS
    assert set(registry.NETWORK_METHODS) == {"fnin", "fnin-s", "fnin-stage1"}
    assert "fnin-stage1" not in registry.BENCH_METHODS


def test_an_unknown_method_is_one_error_naming_the_choices():
    with pytest.raises(FninError, match="unknown method 'poisson'; use one of fnin, fnin-s, bini, wls"):
        registry.method_named("poisson")


def test_only_fnin_runs_the_rounds_by_default_and_refine_fixes_their_number():
    fnin, bini = registry.method_named("fnin"), registry.method_named("bini")
    assert fnin.rounds(DEFAULT).max_rounds == DEFAULT.rounds.max_rounds
    assert bini.rounds(DEFAULT).max_rounds == 0
    r = bini.rounds(DEFAULT, 3)
    assert r.max_rounds == 3 and r.tol == 0.0
    assert fnin.rounds(DEFAULT, 0).max_rounds == 0


def test_the_help_marks_the_default_and_lists_rare_methods_apart():
    text = registry.method_help()
    assert "fnin (default)" in text and "rarely needed: fnin-s" in text


def test_run_args_assemble_the_anchor_then_the_prior():
    prior = FixedTerm(DataTerm(np.array([0.0, 2.0, 2.0]), np.array([0.0, 5.0, 7.0])))
    a = RunArgs(1e-3, DEFAULT, prior=prior)
    terms = a.terms()
    assert len(terms) == 2 and terms[1] is prior
    level = prior_level(prior.at(None))
    np.testing.assert_allclose(level, 6.0)                           # the weighted mean target
    np.testing.assert_array_equal(terms[0].at(None).target, level)   # the anchor sits at it
    assert RunArgs(1e-3, DEFAULT).terms()[0].at(None).target is None  # no prior: towards 0
    obj = a.objective(None, FixedWeights(None), np.ones(3))
    np.testing.assert_array_equal(obj.terms[0].at(None).target, np.ones(3))
