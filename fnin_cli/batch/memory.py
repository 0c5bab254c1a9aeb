"""The memory pre-check: refuse an input up front instead of dying half-way.
"""

from __future__ import annotations

from ..errors import FninError
from ..resources import available_memory
from ..solvers.registry import BY_NAME, REGISTRY

# Peak bytes per image pixel (reading) and per masked pixel (mesh); each method's own is in
# solvers/registry.py. Measured with VmHWM, rounded up (docs/decisions.md#memory-estimates).
BYTES_LOAD = 60
BYTES_MESH = 150


# ------------------------------------------------------------------ memory

def estimate_bytes(shape, method: str, mesh: bool = True, pixels: int | None = None) -> int:
    """Peak memory estimate for integrating a map of ``shape`` (all pixels masked if unknown)."""
    h, w = int(shape[0]), int(shape[1])
    n = h * w if pixels is None else int(pixels)
    m = BY_NAME.get(method)
    per = (m.bytes_per_pixel if m else max(x.bytes_per_pixel for x in REGISTRY)) + (BYTES_MESH if mesh else 0)
    return h * w * BYTES_LOAD + n * per


def check_memory(shape, method: str, path, mesh: bool = True, workers: int = 1, pixels=None) -> None:
    """Refuse (FninError) an input whose estimated peak memory exceeds what is available."""
    need = estimate_bytes(shape, method, mesh, pixels)
    avail = available_memory()
    if avail is None:
        return
    share = avail // max(1, workers)
    if need > share:
        h, w = int(shape[0]), int(shape[1])
        per_worker = f" per worker (--jobs {workers})" if workers > 1 else ""
        raise FninError(
            f"a {w}x{h} map needs about {need / 2**30:.1f} GiB of memory with --method {method} but only "
            f"{share / 2**30:.1f} GiB is available{per_worker}; crop or downsample the map"
            + (", or use fewer --jobs" if workers > 1 else ""), path)
