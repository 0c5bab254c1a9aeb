"""The preview picture: normals | shaded | depth side by side under a title line (input,
a folder by its own name; method with bini's iterations and the rounds; camera), each
panel titled; under the depth panel its colour bar (near/far depth in the map's units,
outliers clipped and counted) and the colour of discontinuities. Text is drawn with
Pillow's default font (no new dependency) and measured: the depth panel is as wide as
its legend and the picture as wide as the title, so no text is cut on small maps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..camera import normals_from_depth
from ..conventions import from_internal
from .plan import GENERIC_STEMS

# ------------------------------------------------------------------ preview picture

PREVIEW_SIDE = 1024
PREVIEW_PIXELS = 2_000_000   # the three panels together at most this many pixels (before cropping)
TITLE_HEIGHT = 30      # strip above the panels: the title line, then the panels' titles
LEGEND_HEIGHT = 60     # strip below: under the depth panel its colour bar, the discontinuity colour, the loose tint
MIN_PANEL_WIDTH = 150  # narrow panels are widened (background) so that their labels fit
# the depth scale spans these percentiles of the masked depth: a few outlier pixels (a
# sliver cut loose at a jump) would otherwise stretch it (human: far 213 where 99.9% lie
# within 86); the pixels beyond are drawn at the ends and counted in the legend
DEPTH_PERCENTILES = (0.5, 99.5)
_TEXT = (230, 230, 230)
_RED = (230.0, 40.0, 40.0)
_BLUE = np.array([60.0, 140.0, 255.0])   # tint of loose pieces (depth unknown from the normals)
_ORANGE = np.array([255.0, 150.0, 30.0])  # where the result and a depth prior disagree (beyond 3 sigma)
_BACKGROUND = np.array([40, 40, 40], np.uint8)
_LIGHT = np.array([-0.35, -0.45, -0.82])  # from the surface toward a light above-left of the camera


def preview_image(normals, depth, discontinuity, camera, mask, title: str = "", loose=None,
                  disagree=None) -> np.ndarray:
    """Three panels side by side (uint8 RGB): the input normals (file colours), the
    integrated surface shaded by a light at the camera, and the depth (near = bright,
    linear between the ``DEPTH_PERCENTILES`` of the masked depth, clipped beyond) with
    discontinuities (weight > 0.5) in red and the loose pieces (``loose`` > 0, the ids of
    ``Result.loose``) tinted blue, and where a depth prior disagrees with the result
    (``disagree``, ``Result.prior_disagree``) in orange. ``title``: the line above the panels
    (:func:`preview_title`). Large maps are decimated (every step-th pixel: at most 1024 px
    a side and 2 MP for the three panels; the shading's normals too, not from the
    full-resolution depth) and the panels are cropped to the object."""
    h, w = mask.shape
    step = max(1, int(np.ceil(max(h, w) / PREVIEW_SIDE)), int(np.ceil(np.sqrt(3 * h * w / PREVIEW_PIXELS))))
    m = mask[::step, ::step]
    n_in = normals[::step, ::step].astype(np.float64)

    # 1: input normals as the usual RGB = (n + 1) / 2 of the photometric-stereo convention
    ps = from_internal(np.nan_to_num(n_in), "ps")
    p1 = _panel(np.clip((ps + 1.0) * 127.5, 0, 255), m)

    # 2: shading of the normals of the integrated depth (input normals where undefined)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_out = normals_from_depth(depth[::step, ::step].astype(np.float64), camera.strided(step))
    bad = ~np.isfinite(n_out).all(-1)
    n_out[bad] = n_in[bad]
    light = _LIGHT / np.linalg.norm(_LIGHT)
    shade = np.clip(np.nan_to_num(n_out @ light), 0.0, 1.0)
    grey = 30.0 + 225.0 * shade
    p2 = _panel(np.repeat(grey[..., None], 3, axis=-1), m)

    # 3: depth, near = bright, linear over a robust range (percentiles of the full-size
    # masked depth), clipped beyond; discontinuities in red
    dfin = depth[mask & np.isfinite(depth)].astype(np.float64)
    span, clipped = None, 0
    if dfin.size:
        lo, hi = (float(v) for v in np.percentile(dfin, DEPTH_PERCENTILES))
        span, clipped = (lo, hi), int(np.count_nonzero((dfin < lo) | (dfin > hi)))
    d = depth[::step, ::step].astype(np.float64)
    fin = m & np.isfinite(d)
    t = np.zeros_like(d)
    if span is not None:
        t[fin] = np.clip((d[fin] - span[0]) / max(span[1] - span[0], 1e-12), 0.0, 1.0)
    g = 50.0 + 205.0 * (1.0 - t)
    rgb = np.repeat(g[..., None], 3, axis=-1)
    if discontinuity is not None:
        jump = np.nan_to_num(discontinuity[::step, ::step], nan=0.0) > 0.5
        rgb[jump] = _RED
    tinted = loose is not None and bool(np.any(loose))
    if tinted:
        lp = loose[::step, ::step] > 0
        rgb[lp] = 0.5 * rgb[lp] + 0.5 * _BLUE
    off = disagree is not None and bool(np.any(disagree))
    if off:
        rgb[disagree[::step, ::step]] = _ORANGE
    p3 = _panel(rgb, m)

    # crop to the object (plus a margin) so small objects in big frames stay visible
    rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
    if rows.size:
        pad = 8
        r0, r1 = max(0, rows[0] - pad), min(m.shape[0], rows[-1] + 1 + pad)
        c0, c1 = max(0, cols[0] - pad), min(m.shape[1], cols[-1] + 1 + pad)
        p1, p2, p3 = (p[r0:r1, c0:c1] for p in (p1, p2, p3))
    p1, p2 = _widen(p1), _widen(p2)
    # the depth panel as wide as its legend (narrower, a 64x48 map's clipped-pixel line is cut)
    p3 = _widen(p3, _legend_width(span, clipped, discontinuity is not None, tinted, off))
    gap = np.broadcast_to(_BACKGROUND, (p1.shape[0], 4, 3))
    body = np.ascontiguousarray(np.concatenate([p1, gap, p2, gap, p3], axis=1), dtype=np.uint8)
    return _label(body, [p1.shape[1], p2.shape[1], p3.shape[1]], span, clipped, discontinuity is not None, title,
                  tinted, off)


def method_iterations(res) -> int:
    """The method's own iterations in a :class:`~fnin_cli.pipeline.Result`: ``bini``'s IRLS
    iterations, 1 for the one-solve methods (``wls``, the fnin methods); the BiNI rounds
    after it (``Result.rounds``) are apart (``Result.iterations`` counts both)."""
    return max(0, int(res.iterations) - int(res.rounds))


def preview_title(inp, res) -> str:
    """The preview's title line: input (a folder by its own name), method with its
    iterations (bini) and rounds, camera."""
    source = Path(inp.source)
    # a layout folder's map is titled with the folder (``scans/cat``, not ``.../normal_map.png``)
    if source.stem.lower() in GENERIC_STEMS and source.parent.name:
        source = source.parent
    shown = str(source) if len(str(source)) <= 40 else str(Path(source.parent.name) / source.name)
    camera = "perspective" if res.camera.perspective else "orthographic"
    parts = [res.method]
    its = method_iterations(res)
    if its > 1:
        parts.append(f"{its} iteration{'s' if its != 1 else ''}")
    if res.rounds or its <= 1:
        parts.append(f"{res.rounds} round{'s' if res.rounds != 1 else ''}")
    return f"{shown} | {', '.join(parts)} | {camera}"


def _widen(p: np.ndarray, width: int = MIN_PANEL_WIDTH) -> np.ndarray:
    """``p`` centred on a background at least ``width`` (and ``MIN_PANEL_WIDTH``) wide."""
    width = max(int(width), MIN_PANEL_WIDTH)
    if p.shape[1] >= width:
        return p
    extra = width - p.shape[1]
    left = np.broadcast_to(_BACKGROUND, (p.shape[0], extra // 2, 3))
    right = np.broadcast_to(_BACKGROUND, (p.shape[0], extra - extra // 2, 3))
    return np.concatenate([left, p, right], axis=1)


_MEASURE: list = []


def _text_width(text: str) -> int:
    """Width in pixels of ``text`` in Pillow's default font (a bitmap font in older Pillow,
    a proportional one since 10.1: measured, not counted)."""
    if not _MEASURE:
        from PIL import Image, ImageDraw

        _MEASURE.append(ImageDraw.Draw(Image.new("RGB", (1, 1))))
    return int(np.ceil(_MEASURE[0].textlength(text)))


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` pixels of the default font (ending in '..' when cut)."""
    if _text_width(text) <= width:
        return text
    n = len(text)
    while n > 2 and _text_width(text[: n - 2] + "..") > width:
        n -= 1
    return text[: max(2, n - 2)] + ".."


def _legend_lines(span, clipped: int, jumps: bool, loose: bool, off: bool = False) -> dict:
    """The legend's texts under the depth panel."""
    lines = {}
    if span is not None:
        lines["near"], lines["far"] = f"near {span[0]:.4g}", f"far {span[1]:.4g}"
    if jumps:
        lines["jumps"] = "discontinuity"
    if clipped:
        lines["clipped"] = f"{clipped:,} px beyond near/far, clipped"
    if loose:
        lines["loose"] = "loose piece (offset unknown)"
    if off:
        lines["off"] = "depth prior disagrees (> 3 sigma)"
    return lines


def _legend_width(span, clipped: int, jumps: bool, loose: bool, off: bool = False) -> int:
    """The depth panel's width that holds its whole legend (texts indented as ``_label``
    draws them: 3 px, 15 px after a colour swatch; near and far 12 px apart)."""
    lines = _legend_lines(span, clipped, jumps, loose, off)
    need = [0]
    if "near" in lines:
        need.append(3 + _text_width(lines["near"]) + 12 + _text_width(lines["far"]) + 3)
    need += [15 + _text_width(lines[k]) + 3 for k in ("jumps", "loose", "off") if k in lines]
    if "clipped" in lines:
        need.append(3 + _text_width(lines["clipped"]) + 3)
    return max(need)


def _label(body: np.ndarray, widths: list, span, clipped: int, jumps: bool, title: str = "",
           loose: bool = False, off: bool = False) -> np.ndarray:
    """The title line and the panels' titles above the panels; under the depth panel its
    colour bar (bright = near, linear between the robust ``span``; ticks at its ends, the
    clipped pixels counted), the discontinuity colour and the loose pieces' tint."""
    from PIL import Image, ImageDraw

    h, w = body.shape[:2]
    width = max(w, _text_width(title) + 6 if title else 0)   # a long title widens the picture
    legend = LEGEND_HEIGHT + (11 if off else 0)       # a fourth line for the depth prior
    img = Image.new("RGB", (width, h + TITLE_HEIGHT + legend), tuple(int(c) for c in _BACKGROUND))
    img.paste(Image.fromarray(body), (0, TITLE_HEIGHT))
    draw = ImageDraw.Draw(img)
    if title:
        draw.text((3, 2), title, fill=_TEXT)
    x0 = [0, widths[0] + 4, widths[0] + widths[1] + 8]
    for x, pw, name in zip(x0, widths, ("normals (input)", "shaded (result)", "depth")):
        draw.text((x + 3, 16), _fit(name, pw - 6), fill=_TEXT)
    # under the depth panel: the panel's grey ramp, bright (near) to dark (far) ...
    x, pw = x0[2], widths[2]
    top = TITLE_HEIGHT + h + 3
    bar_w = max(20, pw - 6)
    ramp = (50.0 + 205.0 * (1.0 - np.linspace(0.0, 1.0, bar_w))).astype(np.uint8)
    img.paste(Image.fromarray(np.repeat(np.repeat(ramp[None, :, None], 8, 0), 3, 2)), (x + 3, top))
    lines = _legend_lines(span, clipped, jumps, loose, off)
    if span is not None:
        draw.text((x + 3, top + 10), lines["near"], fill=_TEXT)
        draw.text((x + 3 + bar_w - _text_width(lines["far"]), top + 10), lines["far"], fill=_TEXT)
    # ... the pixels beyond its ends, the discontinuity colour and the loose pieces' tint
    line = top + 22
    if jumps:
        draw.rectangle([x + 3, line + 1, x + 11, line + 9], fill=tuple(int(c) for c in _RED))
        draw.text((x + 15, line), _fit(lines["jumps"], pw - 18), fill=_TEXT)
    if clipped:  # beyond the percentiles: drawn at the bar's ends
        draw.text((x + 3, line + 11), _fit(lines["clipped"], bar_w), fill=_TEXT)
    if loose:
        draw.rectangle([x + 3, line + 23, x + 11, line + 31], fill=tuple(int(c) for c in _BLUE))
        draw.text((x + 15, line + 22), _fit(lines["loose"], pw - 18), fill=_TEXT)
    if off:
        draw.rectangle([x + 3, line + 34, x + 11, line + 42], fill=tuple(int(c) for c in _ORANGE))
        draw.text((x + 15, line + 33), _fit(lines["off"], pw - 18), fill=_TEXT)
    return np.asarray(img, dtype=np.uint8)


def _panel(rgb: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.empty(mask.shape + (3,), np.uint8)
    out[:] = _BACKGROUND
    out[mask] = np.round(rgb[mask]).astype(np.uint8)
    return out
