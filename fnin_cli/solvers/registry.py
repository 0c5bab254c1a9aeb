"""The method registry: the one list of integration methods and their properties.

Each :class:`Method` names a run function (for the FNIN family one run function and a
:class:`~fnin_cli.config.FninVariant` that says how it uses the network), whether it
needs the FNIN network (weights, torch), its peak memory per pixel (the batch memory
pre-check), its help text and whether it runs the configuration's rounds by default. The constants they use live in
:mod:`fnin_cli.config`.
``METHODS``, ``NETWORK_METHODS`` and ``DEFAULT_METHOD`` derive from ``REGISTRY``; the
pipeline, the CLI, the batch runner and the benchmark read them from here.

Adding a method: write its run function (a module in this package) and add one
``Method`` to ``REGISTRY``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from ..config import FninVariant, IntegrationConfig, RoundsConfig
from ..errors import FninError
from .backend import CPU, Backend
from .bini import integrate_bini
from .linear import AMGCache
from .system import DataTerm
from .wls import integrate_wls


@dataclass(frozen=True)
class RunArgs:
    """What :func:`fnin_cli.pipeline.integrate` passes to every run function."""

    lam: float                 # the prior weight in the system's units (solvers.system.classic_lambda)
    config: IntegrationConfig  # every other constant (fnin_cli.config)
    backend: Backend = CPU     # where the solves run (solvers.backend, chosen once per run)
    device: str = "auto"
    model: object = None       # an FNINet, or None for the bundled weights
    progress: Callable | None = None
    stage: Callable | None = None  # stage(name, step, total) when a stage starts (pipeline.integrate)
    rtol: float | None = None      # Stage II's tolerance instead of its own (rounds follow)
    hierarchy: AMGCache | None = None  # AMG hierarchy to keep for the rounds that follow (solvers.linear)
    prior: DataTerm | None = None  # a depth prior's term, carried by every solve (fnin_cli.prior)

    def term(self, target=None) -> DataTerm:
        """The run's data term: the prior ``lam`` towards ``target`` (None: the depth prior's
        level, else 0), plus the depth prior's term where there is one."""
        if self.prior is None:
            return DataTerm(self.lam, target)
        return DataTerm(self.lam, prior_level(self.prior) if target is None else target).plus(self.prior)


@dataclass(frozen=True)
class MethodOutput:
    """A run function's result over the masked pixels."""

    z: object                  # (n,) unknown: log-depth (perspective) or depth
    weights: dict | None       # per-direction weights used last (None: uniform)
    discontinuity: object      # (n,) in [0, 1], or None to derive it from ``weights``
    iterations: int
    seconds: dict
    edge_p: object = None      # fnin's edge net w_u-, w_v- as a (2, H, W) image (the rounds' prior), or None
    backend: Backend = CPU     # where the method's solve ran (a grid's GPU may have fallen back): the rounds' too
    warnings: tuple = ()       # what the run tells the user (the grid fell back to the CPU)


@dataclass(frozen=True)
class Method:
    """One integration method.

    Attributes
    ----------
    name : str
        The ``--method`` value.
    run : callable
        ``run(system, inp, args: RunArgs) -> MethodOutput``.
    needs_network : bool
        Whether it runs the FNIN network (weights file, torch, ``--device``).
    bytes_per_pixel : int
        Peak memory per masked pixel beyond loading (measured; ``batch.memory``).
    label : str
        How ``--help`` lists it.
    own_rounds : bool
        Whether it runs the configuration's rounds (``IntegrationConfig.rounds``) when
        ``--refine`` is not given (else none).
    bench : bool
        Whether ``fnin bench`` runs it by default.
    rare : bool
        Rarely needed (an ablation or a preview): ``--help`` lists it apart and
        docs/usage.md#rarely-needed explains it.
    """

    name: str
    run: Callable
    needs_network: bool
    bytes_per_pixel: int
    label: str
    own_rounds: bool = False
    bench: bool = True
    rare: bool = False

    def rounds(self, config: IntegrationConfig, refine: int | None = None) -> RoundsConfig:
        """The rounds this method runs after its result: ``refine`` of them (``--refine``,
        no energy-change stop), or with None its own (``config.rounds`` or none)."""
        if refine is not None:
            return config.rounds.fixed(refine)
        return config.rounds if self.own_rounds else config.rounds.fixed(0)


def prior_level(prior: DataTerm) -> np.ndarray:
    """A depth prior's level over the masked pixels: its weighted mean target everywhere
    (where a start or a default target should sit, so that solves need not travel to it)."""
    w = np.broadcast_to(prior.weight, prior.target.shape)
    return np.full(prior.target.shape, float(np.sum(w * prior.target) / np.sum(w)))


def _run_wls(system, inp, a: RunArgs) -> MethodOutput:
    r = integrate_wls(system, a.term(), solver=a.backend.linear, rtol=a.config.solver.wls_rtol)
    return MethodOutput(r.z, None, None, 1, {"solve": r.seconds["solve"]})


def _run_bini(system, inp, a: RunArgs) -> MethodOutput:
    s = a.config.solver
    if a.stage is not None:   # the progress shows BiNI's iteration out of its cap
        a.stage("solve", None, s.max_iter)
    # BiNI starts at 0 (its own start), or at the depth prior's level: a constant changes no weight
    r = integrate_bini(system, k=s.k, z0=None if a.prior is None else prior_level(a.prior), term=a.term(), max_iter=s.max_iter, tol=s.tol, cg_rtol=s.inner_rtol,
                       cg_maxiter=s.maxiter, solver=s.inner_solver,
                       callback=(lambda i, e, z: a.progress(i)) if a.progress else None)
    return MethodOutput(r.z, r.weights, None, r.iterations, {"solve": r.seconds["solve"]})


def _run_fnin(variant: FninVariant, system, inp, a: RunArgs) -> MethodOutput:
    # imported here so that wls and bini runs never import torch (tests/test_layout.py)
    from .fnin import run_fnin

    z, weights, disc, seconds, p_img, backend, notes = run_fnin(
        system, inp, variant, a.config, model=a.model, device=a.device, lam=a.lam, backend=a.backend,
        stage=a.stage, rtol=a.rtol, hierarchy=a.hierarchy, prior=a.prior)
    return MethodOutput(z, weights, disc, 1, seconds, p_img if variant.edge_prior else None, backend, tuple(notes))


# bytes per masked pixel: measured peaks, raised ~15-20 % (studies/memory-estimate/;
# fnin-s and fnin-stage1 were not measured and take fnin's)
REGISTRY = (
    Method("fnin", partial(_run_fnin, FninVariant()), True, 650, "fnin", own_rounds=True),
    Method("fnin-s", partial(_run_fnin, FninVariant(edges=False, bini_weights=True, edge_prior=False)), True, 650,
           "fnin-s", rare=True),
    Method("bini", _run_bini, False, 300, "bini"),
    Method("wls", _run_wls, False, 300, "wls (smooth)"),
    Method("fnin-stage1", partial(_run_fnin, FninVariant(solve=False, edge_prior=False)), True, 650,
           "fnin-stage1 (network only, no solve)", bench=False, rare=True),
)
BY_NAME = {m.name: m for m in REGISTRY}
METHODS = tuple(BY_NAME)
NETWORK_METHODS = tuple(m.name for m in REGISTRY if m.needs_network)
BENCH_METHODS = tuple(m.name for m in REGISTRY if m.bench)    # what `fnin bench` runs by default
DEFAULT_METHOD = "fnin"


def method_named(name: str) -> Method:
    """The registry entry called ``name``, or the one error for an unknown method."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise FninError(f"unknown method '{name}'; use one of {', '.join(METHODS)}") from None


def method_help() -> str:
    """The ``--method`` help line: every method, the default marked."""
    labels = [m.label + (" (default)" if m.name == DEFAULT_METHOD else "") for m in REGISTRY if not m.rare]
    rare = [m.label for m in REGISTRY if m.rare]
    text = ", ".join(labels[:-1]) + " or " + labels[-1]
    return text + (f"; rarely needed: {', '.join(rare)} (docs/usage.md)" if rare else "")
