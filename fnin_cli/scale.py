"""What the normals cannot say: the scale (perspective) or offset (orthographic) of the
result, and of each piece joined to the rest only across cuts.

- :func:`check_scale` checks ``--mean-depth`` and ``--depth-at`` against an input;
- pinning the pieces to ``--depth-at`` pixels is a step (:class:`fnin_cli.solvers.steps.Pins`);
- :func:`from_prior` turns the unknown into depth where an absolute depth prior fixed it;
- :func:`fix_scale` turns the unknown into depth, scaled (or shifted) to a masked mean or
  one known pixel, and says which in its note.
"""

from __future__ import annotations

import numpy as np

from .camera import Camera
from .errors import FninError


def depth_pins(depth_at) -> list:
    """``depth_at`` as a list of (row, col, depth): None, one triple, or a list of them."""
    if depth_at is None:
        return []
    if len(depth_at) == 3 and np.isscalar(depth_at[0]):
        return [tuple(depth_at)]
    return [tuple(p) for p in depth_at]


def check_scale(inp, mean_depth: float | None = None, depth_at: tuple | None = None, prior=None) -> None:
    """The scale/offset anchor of :func:`~fnin_cli.pipeline.integrate` (``--mean-depth``,
    ``--depth-at``) against this input: the pixel inside its mask, a positive depth for a
    perspective camera, no ``--mean-depth`` beside an absolute depth ``prior``. The one
    check of these rules; raises :class:`FninError` naming the input."""
    if mean_depth is not None and prior is not None and prior.kind == "absolute":
        raise FninError("--mean-depth and --depth-prior both set the depth; give one of them", inp.source)
    for r, c, d in depth_pins(depth_at):   # one pin, or several (each further pin places its own piece)
        h, w = inp.shape
        if not (0 <= r < h and 0 <= c < w) or not inp.mask[r, c]:
            raise FninError(f"--depth-at pixel (row {r}, col {c}) is not inside the mask of this "
                            f"{w}x{h} map; pick a pixel on the object", inp.source)
        if inp.camera.perspective and not d > 0:
            raise FninError(f"--depth-at depth must be positive for a perspective camera, got {d:g}", inp.source)
    if mean_depth is not None and inp.camera.perspective and not mean_depth > 0:
        raise FninError(f"--mean-depth must be positive for a perspective camera, got {mean_depth:g}", inp.source)


def from_prior(zimg: np.ndarray, camera: Camera, mask: np.ndarray):
    """(depth, note): depth from an unknown whose scale (perspective) or offset
    (orthographic) an absolute depth prior fixed, NaN outside ``mask``."""
    depth = np.exp(zimg) if camera.perspective else zimg.copy()
    depth[~mask] = np.nan
    what = "scale" if camera.perspective else "offset"
    return depth, f"depth in the depth prior's units (its {what} fixed by the prior, each piece placed by it)"


def fix_scale(zimg: np.ndarray, camera: Camera, mask: np.ndarray, mean_depth=None, depth_at=None):
    """(depth, note): depth from the unknown with the scale (perspective) or offset
    (orthographic) fixed (the anchor as :func:`check_scale` admits it), NaN outside ``mask``.

    Examples
    --------
    >>> depth, note = fix_scale(np.zeros((1, 2)), Camera(None, 1.0), np.ones((1, 2), bool), mean_depth=5.0)
    >>> depth.tolist(), note
    ([[5.0, 5.0]], 'depth up to offset (orthographic), shifted to masked mean 5')
    """
    if camera.perspective:
        # work in log space to avoid overflow, then exponentiate
        if depth_at is not None:
            r, c, d = depth_at
            shift = np.log(d) - zimg[r, c]
            note = f"relative depth, scaled so that pixel (row {r}, col {c}) has depth {d:g}"
        else:
            target = 1.0 if mean_depth is None else float(mean_depth)
            zm = zimg[mask]
            zc = zm - zm.max()
            shift = np.log(target) - zm.max() - np.log(np.mean(np.exp(zc)))
            note = f"relative depth (perspective: known up to scale), scaled to masked mean {target:g}"
        depth = np.exp(zimg + shift)
    else:
        if depth_at is not None:
            r, c, d = depth_at
            shift = d - zimg[r, c]
            note = f"depth up to offset (orthographic), shifted so pixel (row {r}, col {c}) has depth {d:g}"
        else:
            target = 0.0 if mean_depth is None else float(mean_depth)
            shift = target - np.mean(zimg[mask])
            note = f"depth up to offset (orthographic), shifted to masked mean {target:g}"
        depth = zimg + shift
    depth[~mask] = np.nan
    return depth, note
