"""The preview picture: normals | shaded | depth side by side.
"""

from __future__ import annotations

import numpy as np

from ..camera import normals_from_depth
from ..conventions import from_internal

# ------------------------------------------------------------------ preview picture

PREVIEW_SIDE = 1024
_BACKGROUND = np.array([40, 40, 40], np.uint8)
_LIGHT = np.array([-0.35, -0.45, -0.82])  # from the surface toward a light above-left of the camera


def preview_image(normals, depth, discontinuity, camera, mask) -> np.ndarray:
    """Three panels side by side (uint8 RGB): the input normals (file colours), the
    integrated surface shaded by a light at the camera, and the depth (near = bright,
    histogram-equalised)
    with discontinuities (weight > 0.5) in red. Large maps are decimated to ~1024 px and
    the panels are cropped to the object."""
    h, w = mask.shape
    step = max(1, int(np.ceil(max(h, w) / PREVIEW_SIDE)))
    m = mask[::step, ::step]
    n_in = normals[::step, ::step].astype(np.float64)

    # 1: input normals as the usual RGB = (n + 1) / 2 of the photometric-stereo convention
    ps = from_internal(np.nan_to_num(n_in), "ps")
    p1 = _panel(np.clip((ps + 1.0) * 127.5, 0, 255), m)

    # 2: shading of the normals of the integrated depth (input normals where undefined)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_out = normals_from_depth(depth.astype(np.float64), camera)[::step, ::step]
    bad = ~np.isfinite(n_out).all(-1)
    n_out[bad] = n_in[bad]
    light = _LIGHT / np.linalg.norm(_LIGHT)
    shade = np.clip(np.nan_to_num(n_out @ light), 0.0, 1.0)
    grey = 30.0 + 225.0 * shade
    p2 = _panel(np.repeat(grey[..., None], 3, axis=-1), m)

    # 3: depth, near = bright, robust range; discontinuities in red
    d = depth[::step, ::step].astype(np.float64)
    fin = m & np.isfinite(d)
    t = np.zeros_like(d)
    if fin.any():  # histogram-equalised (rank) grey: full contrast whatever the depth range
        vals = d[fin]
        order = np.argsort(vals, kind="stable")
        ranks = np.empty(vals.size)
        ranks[order] = np.arange(vals.size)
        t[fin] = ranks / max(1, vals.size - 1)
    g = 50.0 + 205.0 * (1.0 - t)
    rgb = np.repeat(g[..., None], 3, axis=-1)
    if discontinuity is not None:
        jump = np.nan_to_num(discontinuity[::step, ::step], nan=0.0) > 0.5
        rgb[jump] = (230.0, 40.0, 40.0)
    p3 = _panel(rgb, m)

    # crop to the object (plus a margin) so small objects in big frames stay visible
    rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
    if rows.size:
        pad = 8
        r0, r1 = max(0, rows[0] - pad), min(m.shape[0], rows[-1] + 1 + pad)
        c0, c1 = max(0, cols[0] - pad), min(m.shape[1], cols[-1] + 1 + pad)
        p1, p2, p3 = (p[r0:r1, c0:c1] for p in (p1, p2, p3))
    gap = np.broadcast_to(_BACKGROUND, (p1.shape[0], 4, 3))
    return np.ascontiguousarray(np.concatenate([p1, gap, p2, gap, p3], axis=1), dtype=np.uint8)


def _panel(rgb: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.empty(mask.shape + (3,), np.uint8)
    out[:] = _BACKGROUND
    out[mask] = np.round(rgb[mask]).astype(np.uint8)
    return out
