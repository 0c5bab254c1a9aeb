"""Small PNG charts drawn with Pillow (already installed with imageio): no matplotlib."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from .io.files import atomic_path

COLOURS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
           (140, 86, 75), (227, 119, 194), (127, 127, 127)]


def _save(img: Image.Image, path):
    with atomic_path(path) as tmp:
        img.save(tmp, format="PNG")


def line_plot(path, series: dict, title: str = "", xlabel: str = "", logy: bool = False,
              size=(800, 480)):
    """Lines ``{label: (x, y)}`` on shared axes, legend top right."""
    w, h = size
    left, right, top, bottom = 70, 20, 30, 40
    img = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(img)
    xs = np.concatenate([np.asarray(x, float) for x, _ in series.values()])
    ys = np.concatenate([np.asarray(y, float) for _, y in series.values()])
    ys = ys[np.isfinite(ys)]
    if logy:
        ys = np.log10(np.clip(ys, 1e-12, None))
    x0, x1 = float(xs.min()), float(xs.max()) if xs.size else 1.0
    y0, y1 = (float(ys.min()), float(ys.max())) if ys.size else (0.0, 1.0)
    if x1 <= x0:
        x1 = x0 + 1
    if y1 <= y0:
        y1 = y0 + 1

    def px(x, y):
        y = np.log10(np.clip(y, 1e-12, None)) if logy else y
        return (left + (x - x0) / (x1 - x0) * (w - left - right),
                top + (1 - (y - y0) / (y1 - y0)) * (h - top - bottom))

    d.rectangle([left, top, w - right, h - bottom], outline="black")
    for i in range(5):
        yv = y0 + (y1 - y0) * i / 4
        yy = top + (1 - i / 4) * (h - top - bottom)
        d.text((5, yy - 6), f"{10 ** yv:.3g}" if logy else f"{yv:.3g}", fill="black")
        xv = x0 + (x1 - x0) * i / 4
        d.text((left + i / 4 * (w - left - right) - 10, h - bottom + 5), f"{xv:.4g}", fill="black")
    d.text((w // 2 - 4 * len(title), 8), title, fill="black")
    d.text((w // 2 - 3 * len(xlabel), h - 18), xlabel, fill="black")
    for k, (label, (x, y)) in enumerate(series.items()):
        c = COLOURS[k % len(COLOURS)]
        pts = [px(a, b) for a, b in zip(np.asarray(x, float), np.asarray(y, float)) if np.isfinite(b)]
        if len(pts) > 1:
            d.line(pts, fill=c, width=2)
        elif pts:
            d.ellipse([pts[0][0] - 2, pts[0][1] - 2, pts[0][0] + 2, pts[0][1] + 2], fill=c)
        d.text((w - right - 200, top + 8 + 14 * k), label, fill=c)
    _save(img, path)


def bar_chart(path, groups: list, values: dict, title: str = "", ylabel: str = "", logy: bool = False,
              size=(900, 420)):
    """Grouped bars: ``groups`` on x, one bar per ``values`` key (each a list per group)."""
    w, h = size
    left, right, top, bottom = 70, 20, 40, 50
    img = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(img)
    allv = np.array([v for vals in values.values() for v in vals], float)
    allv = allv[np.isfinite(allv) & (allv > 0 if logy else True)]
    tr = (lambda v: np.log10(v)) if logy else (lambda v: v)
    lo = float(np.floor(tr(allv.min()))) if (logy and allv.size) else 0.0
    hi = float(tr(allv.max())) if allv.size else 1.0
    if hi <= lo:
        hi = lo + 1
    d.rectangle([left, top, w - right, h - bottom], outline="black")
    d.text((w // 2 - 4 * len(title), 10), title, fill="black")
    d.text((5, top - 30), ylabel, fill="black")
    for i in range(5):
        yv = lo + (hi - lo) * i / 4
        yy = top + (1 - i / 4) * (h - top - bottom)
        d.text((5, yy - 6), f"{10 ** yv:.3g}" if logy else f"{yv:.3g}", fill="black")
    ng, nm = len(groups), max(1, len(values))
    gw = (w - left - right) / max(1, ng)
    bw = gw * 0.8 / nm
    for gi, g in enumerate(groups):
        d.text((left + gi * gw + 2, h - bottom + 6), str(g)[:12], fill="black")
        for mi, (label, vals) in enumerate(values.items()):
            v = vals[gi]
            if not np.isfinite(v) or (logy and v <= 0):
                continue
            frac = (tr(v) - lo) / (hi - lo)
            x0 = left + gi * gw + gw * 0.1 + mi * bw
            y0 = top + (1 - min(max(frac, 0), 1)) * (h - top - bottom)
            d.rectangle([x0, y0, x0 + bw - 1, h - bottom], fill=COLOURS[mi % len(COLOURS)])
    # legend in one row above the plot area, so it never covers bars
    x = left
    for mi, label in enumerate(values):
        c = COLOURS[mi % len(COLOURS)]
        d.rectangle([x, top - 14, x + 9, top - 5], fill=c)
        d.text((x + 13, top - 16), label, fill=c)
        x += 13 + 7 * len(label) + 16
    _save(img, path)


def stack_vertical(path, images: list):
    """Stack saved PNGs (paths) into one picture."""
    ims = [Image.open(p).convert("RGB") for p in images]
    w = max(i.width for i in ims)
    out = Image.new("RGB", (w, sum(i.height for i in ims)), "white")
    y = 0
    for i in ims:
        out.paste(i, (0, y))
        y += i.height
    _save(out, path)
