"""The memory pre-check: refuse an input up front instead of dying half-way.

The estimate of a job's peak resident memory (what ``--json`` reports as ``peak_rss_mb``)
is::

    BASE (the interpreter, plus torch and the model for the network methods)
    + BYTES_LOAD x image pixels          (the raw map, the float32 normals, the mask)
    + (BYTES_FRAME [+ BYTES_NETWORK_FRAME]) x frame pixels   (the map after --downsample)
    + (method bytes + BYTES_MESH) x masked pixels            (after --downsample, if any)
    [+ BYTES_PRIOR_IMAGE x image pixels + BYTES_PRIOR x masked pixels, with a depth prior]

checked against measured peaks from 0.3 to 24 MP (studies/memory-estimate/: every
estimate within 1.0-1.5x of the peak; with a prior, studies/memory-prior/). Before reading the map the masked pixels come from
the mask file; without one, only the reading is checked then, and the whole estimate
again once the map is loaded and its valid normals are known.
"""

from __future__ import annotations

from ..errors import FninError
from ..resources import available_memory, rss_kb
from ..solvers.registry import BY_NAME, REGISTRY

# Peak bytes (studies/memory-estimate/README.md: fitted to VmHWM peaks from 0.3 to 24 MP,
# then raised ~15-20 %): the process before any input (the interpreter; torch and the
# model for the network methods); per pixel of the map as read (the raw array, the float32
# normals, the mask); per pixel of the frame integrated (the map after --downsample: the
# solver's full-frame images, plus the edge net's for the network methods); per masked
# pixel for a mesh. Each method's own per masked pixel is in solvers/registry.py.
BASE_NETWORK = 400 * 2**20
BASE_CLASSIC = 120 * 2**20
BYTES_LOAD = 24
BYTES_FRAME = 24
BYTES_NETWORK_FRAME = 24
BYTES_MESH = 150
# A depth prior (studies/memory-prior/README.md: measured with a full-size map from 0.8 to
# 24 MP, two terms fitted, raised 20 %): per pixel of the map (its values and share as read)
# and per masked pixel (the term, the robust term's state, the judge of its steps).
BYTES_PRIOR_IMAGE = 32
BYTES_PRIOR = 170
DOWNSAMPLE_MAX = 16   # the largest --downsample the refusal suggests


# ------------------------------------------------------------------ memory

def estimate_bytes(shape, method: str, mesh: bool = True, pixels: int | None = None, downsample: int = 1,
                   prior: bool = False) -> int:
    """Peak memory estimate (bytes) for integrating a map of ``shape``.

    ``pixels``: masked pixels at full resolution (None: every pixel; 0: reading only);
    ``downsample``: the ``--downsample`` factor (the solve and mesh then see about
    ``pixels / downsample**2`` pixels); ``prior``: whether a depth prior is given.
    """
    h, w = int(shape[0]), int(shape[1])
    n = h * w if pixels is None else int(pixels)
    m = BY_NAME.get(method)
    per = (m.bytes_per_pixel if m else max(x.bytes_per_pixel for x in REGISTRY)) + (BYTES_MESH if mesh else 0)
    network = m is None or m.needs_network
    base = BASE_NETWORK if network else BASE_CLASSIC
    ds = max(1, int(downsample))
    # the map is read at full size, the frame integrated is the reduced one with --downsample
    image = h * w * BYTES_LOAD + (h // ds) * (w // ds) * (BYTES_FRAME + (BYTES_NETWORK_FRAME if network else 0))
    if prior:
        image += h * w * BYTES_PRIOR_IMAGE
        per += BYTES_PRIOR
    return base + image + (n * per) // ds**2


def check_memory(shape, method: str, path, mesh: bool = True, workers: int = 1, pixels=None,
                 downsample: int = 1, prior: bool = False) -> None:
    """Refuse (FninError) an input whose estimated peak memory exceeds what is available.

    The refusal names the masked pixels, the estimate and the free memory, and suggests
    the smallest ``--downsample`` that would fit.
    """
    avail = available_memory()
    if avail is None:
        return
    # the estimate's base (interpreter, torch, model) is resident already in this process:
    # only the rest has to be free
    m = BY_NAME.get(method)
    base = BASE_NETWORK if (m is None or m.needs_network) else BASE_CLASSIC
    held = min(base, (rss_kb() or 0) * 1024) if workers <= 1 else 0
    need = estimate_bytes(shape, method, mesh, pixels, downsample, prior)
    share = avail // max(1, workers)
    if need - held <= share:
        return
    h, w = int(shape[0]), int(shape[1])
    per_worker = f" per worker (--jobs {workers})" if workers > 1 else ""
    masked = "every pixel" if pixels is None else f"{int(pixels):,} masked pixels"
    if downsample > 1:
        masked += f" (before --downsample {downsample})"
    fit = next((n for n in range(max(2, downsample + 1), DOWNSAMPLE_MAX + 1)
                if estimate_bytes(shape, method, mesh, pixels, n, prior) - held <= share), None)
    hint = (f"try --downsample {fit} (about {estimate_bytes(shape, method, mesh, pixels, fit, prior) / 2**30:.1f} GiB)"
            f" or crop the map" if fit else "crop the map")
    raise FninError(
        f"a {w}x{h} map with {masked} needs about {need / 2**30:.1f} GiB of memory with --method {method}"
        f"{' and a depth prior' if prior else ''} but only {share / 2**30:.1f} GiB is free{per_worker}; {hint}"
        + (", or use fewer --jobs" if workers > 1 else ""), path)
