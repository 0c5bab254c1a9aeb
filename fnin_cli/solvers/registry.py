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

from ..config import FninVariant, IntegrationConfig, RoundsConfig
from ..errors import FninError
from .bini import run_bini
from .run import MethodOutput, RunArgs, prior_level  # noqa: F401  (the run functions' interface)
from .wls import run_wls


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


def _run_fnin(variant: FninVariant, system, inp, a: RunArgs) -> MethodOutput:
    # imported here so that wls and bini runs never import torch (tests/test_layout.py)
    from .fnin import run_fnin

    z, weights, disc, seconds, p_img, backend, notes = run_fnin(system, inp, variant, a)
    return MethodOutput(z, weights, disc, 1, seconds, p_img if variant.edge_prior else None, backend, tuple(notes))


# bytes per masked pixel: measured peaks, raised ~15-20 % (studies/memory-estimate/;
# fnin-s and fnin-stage1 were not measured and take fnin's)
REGISTRY = (
    Method("fnin", partial(_run_fnin, FninVariant()), True, 650, "fnin", own_rounds=True),
    Method("fnin-s", partial(_run_fnin, FninVariant(edges=False, bini_weights=True, edge_prior=False)), True, 650,
           "fnin-s", rare=True),
    Method("bini", run_bini, False, 300, "bini"),
    Method("wls", run_wls, False, 300, "wls (smooth)"),
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
