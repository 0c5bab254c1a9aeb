"""A stop for the rounds after FNIN that sees a piece being carried away (issue 31, item 2);
a trust-rounds candidate, not adopted (README.md), so it lives with the study, not in the
package. ``integrate(rounds_stop=DriftStop(...))`` runs it.

On DiLiGenT the rounds after the one-shot first refine the surface and then, on several
objects, move a piece round after round past where it belongs while BiNI's energy keeps
falling (docs/decisions.md#loose-pieces), so no stop on the energy sees it. A refinement
that converges takes steps that shrink; a drift takes steps that keep their direction
and size. :class:`DriftStop` stops the rounds once ``patience`` consecutive rounds each
took a step (the change of the unknown, its mean removed) whose cosine with the previous
step exceeds ``cos`` and whose length is at least ``ratio`` times the previous one's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class DriftStop:
    """Callable ``stop(round, z_before, z_after) -> bool`` for ``integrate_bini(stop=)``
    and ``pipeline.integrate(rounds_stop=)``; one instance per run (it keeps the previous
    step: :meth:`fresh` gives a new one)."""

    cos: float = 0.9
    ratio: float = 0.8
    patience: int = 2
    _last: np.ndarray | None = field(default=None, repr=False)
    _streak: int = 0
    stopped_at: int | None = None

    def __call__(self, it: int, z_before: np.ndarray, z_after: np.ndarray) -> bool:
        step = z_after - z_before
        step = step - step.mean()
        last, self._last = self._last, step
        if last is None:
            return False
        nl, ns = float(np.linalg.norm(last)), float(np.linalg.norm(step))
        if nl == 0 or ns == 0:
            self._streak = 0
            return False
        aligned = float(last @ step) / (nl * ns) > self.cos and ns >= self.ratio * nl
        self._streak = self._streak + 1 if aligned else 0
        if self._streak >= self.patience:
            self.stopped_at = it
            return True
        return False

    def fresh(self) -> "DriftStop":
        """A new instance with the same settings (no history)."""
        return DriftStop(self.cos, self.ratio, self.patience)
