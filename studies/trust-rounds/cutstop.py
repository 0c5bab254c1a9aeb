"""One round on maps the edge net cuts little (issue 31, item 2: "fewer or weaker rounds"
by the cut density; trust-rounds' fourth rule, README.md).

A look on DiLiGenT (development, README "Look") found the objects whose error the rounds
raise after the first (bear, cat, cow, pot2, reading) to be the smooth ones, whose edge-net
cuts are short for their size, and those the rounds keep improving (buddha, harvest, pot1)
the ones with many real steps. :class:`CutStop` measures s = (edges the net cuts) /
sqrt(masked pixels), a cut length in units of the map's size (about the same at any
resolution), and on maps with s < ``tau`` ends the rounds after the first.

Built through the package's hooks only: :meth:`CutStop.bias` is ``integrate(rounds_bias=)``
(it reads the net's cuts, ``gapstop.cut_edges``, and returns the prior unchanged),
:meth:`CutStop.stop` is ``integrate(rounds_stop=)``.
"""

from __future__ import annotations

import numpy as np

from fnin_cli.config import DEFAULT
from fnin_cli.solvers.system import NormalSystem

from gapstop import cut_edges


def cut_length(system: NormalSystem, bias: dict, prior_scale: float = DEFAULT.rounds.edge_prior) -> float:
    """s: the number of edges the net cuts over sqrt(masked pixels)."""
    cut = sum(len(p) for p, _ in cut_edges(system, bias, prior_scale))
    return cut / np.sqrt(system.n)


class CutStop:
    """The module's stop: ``integrate(inp, rounds_bias=c.bias, rounds_stop=c.stop)``; each
    ``bias`` call (one per ``integrate`` with rounds) measures the map anew."""

    def __init__(self, tau: float, prior_scale: float = DEFAULT.rounds.edge_prior):
        self.tau, self.prior_scale = float(tau), float(prior_scale)
        self.s = None   # the last map's cut length (a record)

    def bias(self, system: NormalSystem, bias: dict) -> dict:
        self.s = cut_length(system, bias, self.prior_scale)
        return bias

    def stop(self, it: int, z_before: np.ndarray, z_after: np.ndarray) -> bool:
        return self.s is not None and self.s < self.tau

    def __repr__(self) -> str:
        return f"CutStop(tau={self.tau}, prior_scale={self.prior_scale})"
