"""The method registry: the one list of integration methods and their properties.

Each :class:`Method` names a run function, whether it needs the FNIN network (weights,
torch), its peak memory per pixel (the batch memory pre-check) and its help text.
``METHODS``, ``NETWORK_METHODS`` and ``DEFAULT_METHOD`` derive from ``REGISTRY``; the
pipeline, the CLI, the batch runner and the benchmark read them from here.

Adding a method: write its run function (a module in this package) and add one
``Method`` to ``REGISTRY``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .bini import integrate_bini
from .stage2 import NETWORK_SIDE
from .wls import integrate_wls


@dataclass(frozen=True)
class RunArgs:
    """What :func:`fnin_cli.pipeline.integrate` passes to every run function."""

    method: str
    lam: float                 # the prior weight in the system's units (pipeline.classic_lambda)
    solver: str = "auto"
    k: float = 2.0             # BiNI's sigmoid sharpness
    device: str = "auto"
    model: object = None       # an FNINet, or None for the bundled weights
    network_side: int | None = None
    progress: Callable | None = None
    stage: Callable | None = None  # stage(name, step, total) when a stage starts (pipeline.integrate)
    rtol: float | None = None      # Stage II's tolerance instead of its own (rounds follow)
    hierarchy: dict | None = None  # AMG hierarchy to keep for the rounds that follow (solvers.linear)


@dataclass(frozen=True)
class MethodOutput:
    """A run function's result over the masked pixels."""

    z: object                  # (n,) unknown: log-depth (perspective) or depth
    weights: dict | None       # per-direction weights used last (None: uniform)
    discontinuity: object      # (n,) in [0, 1], or None to derive it from ``weights``
    iterations: int
    seconds: dict
    edge_p: object = None      # fnin's edge net w_u-, w_v- as a (2, H, W) image (the rounds' prior), or None


@dataclass(frozen=True)
class Rounds:
    """BiNI rounds after a method's result (``--refine``): at most ``max_rounds``,
    stopping early once the relative change of BiNI's energy falls below ``tol`` (0: all
    of them, as an explicit ``--refine N``, but for a round that changes nothing, where
    every later one would be the same)."""

    max_rounds: int
    tol: float = 0.0

    def __str__(self) -> str:
        """As the help text says it: "12 rounds" or "at most 16 rounds, ... below 0.001"."""
        if self.tol > 0:
            return f"at most {self.max_rounds} rounds, stopping once BiNI's energy changes by less than {self.tol:g}"
        return f"{self.max_rounds} rounds"


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
    rounds : Rounds
        The BiNI rounds it runs when ``--refine`` is not given.
    """

    name: str
    run: Callable
    needs_network: bool
    bytes_per_pixel: int
    label: str
    rounds: Rounds = Rounds(0)


def _run_wls(system, inp, a: RunArgs) -> MethodOutput:
    r = integrate_wls(system, lam=a.lam, solver=a.solver)
    return MethodOutput(r.z, None, None, 1, {"solve": r.seconds["solve"]})


def _run_bini(system, inp, a: RunArgs) -> MethodOutput:
    r = integrate_bini(system, k=a.k, lam=a.lam, callback=(lambda i, e, z: a.progress(i)) if a.progress else None)
    return MethodOutput(r.z, r.weights, None, r.iterations, {"solve": r.seconds["solve"]})


def _run_fnin(system, inp, a: RunArgs) -> MethodOutput:
    # imported here so that wls and bini runs never import torch (tests/test_layout.py)
    from .fnin import run_fnin

    z, weights, disc, seconds, p_img = run_fnin(system, inp, method=a.method, model=a.model, device=a.device,
                                                lam=a.lam, solver=a.solver, k=a.k,
                                                side=a.network_side or NETWORK_SIDE, stage=a.stage, rtol=a.rtol,
                                                hierarchy=a.hierarchy)
    return MethodOutput(z, weights, disc, 1, seconds, p_img if a.method == "fnin" else None)


# fnin's rounds when --refine is not given: the most accurate rule within a quarter of
# bini's time, scene by scene, on fresh validation-mesh scenes (docs/decisions.md#default-rounds).
DEFAULT_ROUNDS = Rounds(16, 1e-3)

# bytes per masked pixel: measured peaks, raised ~15-20 % (studies/memory-estimate/;
# fnin-s and fnin-stage1 were not measured and take fnin's)
REGISTRY = (
    Method("fnin", _run_fnin, True, 650, "fnin", DEFAULT_ROUNDS),
    Method("fnin-s", _run_fnin, True, 650, "fnin-s"),
    Method("bini", _run_bini, False, 300, "bini"),
    Method("wls", _run_wls, False, 300, "wls (smooth)"),
    Method("fnin-stage1", _run_fnin, True, 650, "fnin-stage1 (network only, no solve)"),
)
BY_NAME = {m.name: m for m in REGISTRY}
METHODS = tuple(BY_NAME)
NETWORK_METHODS = tuple(m.name for m in REGISTRY if m.needs_network)
DEFAULT_METHOD = "fnin"


def method_help() -> str:
    """The ``--method`` help line: every method, the default marked."""
    labels = [m.label + (" (default)" if m.name == DEFAULT_METHOD else "") for m in REGISTRY]
    return ", ".join(labels[:-1]) + " or " + labels[-1]
