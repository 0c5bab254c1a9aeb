"""Stop the rounds once they open the edge net's cuts (issue 31, item 2; trust-rounds'
third rule, README.md).

On DiLiGenT the first round joins what the one-shot left apart (bear 0.653 -> 0.100 mm)
and the later rounds carry a piece away across a steep fold the net cut (0.100 -> 0.596
after eight): round after round the depth step across the net's cuts grows. On renders
the rounds mostly undo the one-shot's misplaced pieces (a 2048x1536 view: 10.1 mm one-shot,
5.96 after one round, 2.53 after sixteen), which closes steps across wrong cuts as often
as it grows real ones. :class:`GapStop` measures G(z), the summed |z_q - z_p| over the
edges the net cuts (its probabilities say neither side joins: max(w_q->p, w_p->q) < 0.5,
``fold.joined_belief`` on every edge), and from the second round on, a round
whose solution raises G by more than ``eps`` (relative) is undone and the rounds stop.

Built through the package's hooks only: :meth:`GapStop.bias` is ``integrate(rounds_bias=)``
(it reads the net's cuts and returns the prior unchanged), :meth:`GapStop.adjust` is
``integrate(rounds_adjust=)`` and :meth:`GapStop.stop` ``integrate(rounds_stop=)``.
"""

from __future__ import annotations

import numpy as np

from fnin_cli.config import DEFAULT
from fnin_cli.solvers.system import NormalSystem

from fold import joined_belief


def cut_edges(system: NormalSystem, bias: dict, prior_scale: float) -> list:
    """[(p, q)] per axis: the edges whose two sides the net's probabilities
    sigmoid(bias / prior_scale) both lean away from (max(w_q->p, w_p->q) < 0.5)."""
    out = []
    for axis, p, q in (("u", system.hp, system.hq), ("v", system.vp, system.vq)):
        cut = joined_belief(bias[axis], p, q, prior_scale) < 0.5
        out.append((p[cut], q[cut]))
    return out


def gap(z: np.ndarray, edges: list) -> float:
    """G(z): the summed |z_q - z_p| over ``edges``."""
    return float(sum(np.abs(z[q] - z[p]).sum() for p, q in edges))


class GapStop:
    """The module's stop. Use as ``integrate(inp, rounds_bias=g.bias, rounds_adjust=g.adjust,
    rounds_stop=g.stop)``; every ``bias`` call (one per ``integrate`` with rounds) resets it.

    Parameters
    ----------
    eps : float
        A round (from the second on) that raises G by more than this fraction is undone
        and ends the rounds.
    prior_scale : float
        The edge prior's scale (``RoundsConfig.edge_prior``), to read the net's
        probabilities back from the prior's logits.
    """

    def __init__(self, eps: float = 0.0, prior_scale: float = DEFAULT.rounds.edge_prior):
        self.eps, self.prior_scale = float(eps), float(prior_scale)
        self.stopped_at = None   # the round undone in the last run (a record)

    def bias(self, system: NormalSystem, bias: dict) -> dict:
        self._edges = cut_edges(system, bias, self.prior_scale)
        self._stop, self.stopped_at = False, None
        return bias

    def adjust(self, z_start: np.ndarray, system: NormalSystem):
        state = {"z": np.asarray(z_start, np.float64), "g": gap(np.asarray(z_start, np.float64), self._edges)}

        def adjust(it, z, weights):
            g = gap(z, self._edges)
            if it >= 2 and g > (1.0 + self.eps) * state["g"]:
                self._stop, self.stopped_at = True, it
                return state["z"]
            state["z"], state["g"] = z, g
            return z

        return adjust

    def stop(self, it: int, z_before: np.ndarray, z_after: np.ndarray) -> bool:
        return self._stop

    def __repr__(self) -> str:
        return f"GapStop(eps={self.eps}, prior_scale={self.prior_scale})"
