"""Integration methods and the linear algebra under them.

- :mod:`.registry` — the method registry (``METHODS``, ``DEFAULT_METHOD``, run functions).
- :mod:`.system` — :class:`~.system.NormalSystem`, the weighted least-squares system of one normal map.
- :mod:`.linear` — PCG, the AMG hierarchy, ``solve_spd``, torch PCG.
- :mod:`.wls`, :mod:`.bini` — smooth least squares and BiNI's IRLS.
- :mod:`.stage2` — FNIN's Stage II weights and solve (numpy); :mod:`.fnin` — Stage I + II (torch).
"""

from .registry import DEFAULT_METHOD, METHODS, NETWORK_METHODS

__all__ = ["DEFAULT_METHOD", "METHODS", "NETWORK_METHODS"]
