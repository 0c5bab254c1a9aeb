"""The cues a normal map's data give about its decoding, each cheap: one pass over the image,
the rest on a coarse grid (:func:`~fnin_cli.checks.decoding.check_decoding` decides from them).

1. Block means. The raw array is block-averaged (k x k blocks fully inside the mask and
   finite; k grows with the image so that about 5 000 blocks remain). Every candidate
   decoding is affine per channel, so decoding the block means equals block-averaging the
   decoded normals: all candidates are evaluated on the small grid, and on grids of 2k
   and 4k blocks.
2. Integrability score per candidate (its lowest over the scales): per 2x2 cell of blocks
   (not grazing, |cos(n, ray)| >= 0.15), c = dp/dv - dq/du (the curl) and
   s = dp/dv + dq/du, where (p, q) are the gradients of the unknown (orthographic
   -n_x/n_z, -n_y/n_z; perspective the log-depth gradients, less the mixed derivative
   2 n_x n_y / (f_x f_y (n.r)^2) that every plane has there); the score is the weighted
   mean of |c| / (|c| + |s|): 0 integrable, 0.5 noise, ~1 a y- or x-flipped field (a flip
   swaps c and s). A cell weighs how much the normals turn across it (capped at the 90th
   percentile), the same for every candidate: flat cells, where every decoding is a
   plane, weigh little.
3. Facing: the fraction of blocks whose normal faces away from its ray (n . r > 0.05 |r|).
4. Outline: blocks of the grid on the mask's outline (not on the image border); the
   outward direction o of the mask there; the fraction of them whose normal's image-plane
   part points out (n_xy . o >= 0.5) minus the fraction pointing in. At an occluding
   contour normals point out of the silhouette; flipping x and y together turns them in.
5. Coherence: the fraction of horizontally neighbouring pixels whose normals are within
   20 degrees (a surface: most; random values: a few per cent).
6. Unit length (float data): whether the file holds n or (n + 1) / 2; without a mask, the
   share of the domain's vectors (length 1 +- :mod:`.decoding`'s ``DOMAIN_TOL``) within ``UNIT_TOL`` of 1.
7. Integrability at pixel scale (:func:`fine_score`, only where the blocks cannot tell): the
   curl's share of the energy over the 2x2 pixel cells with no jump and no grazing pixel
   inside; a map of many small pieces (foliage) has no block without a jump.
"""

from __future__ import annotations

import numpy as np

from .. import conventions
from ..camera import Camera
from .decodings import Decoding, decode

# --- thresholds, chosen on the development set of studies/decoding-real-maps (renders of
# the training meshes, procedural scenes, samples/, noise; never DiLiGenT or real/) -------
GRAZING = 0.15     # |cos(normal, ray)| below this: cell ignored
COHERENT_DEG = 20.0  # neighbouring normals within this angle are coherent
OUTWARD = 0.5      # an outline normal points out (in) when n_xy . o >= (<= -) this
BLOCK_TARGET = 5000  # about this many valid blocks (block size 2..16)
UNIT_TOL = 0.1     # unit-length tolerance for the (n+1)/2 test
COHERENT_PAIRS = 100_000  # about this many neighbour pairs sampled for the coherence
FINE_DEG = 5.0     # a pixel cell whose normals lie within this angle of each other: no jump inside it
FINE_CELLS = 200_000  # at most about this many pixel cells for the fine score (about 0.1 s)


def block_means(raw: np.ndarray, mask: np.ndarray, k: int):
    """Block means (Hc, Wc, 3) float64 of raw channels over k x k blocks fully valid."""
    h, w = mask.shape
    hc, wc = h // k, w // k
    a = raw[: hc * k, : wc * k, :3]
    m = mask[: hc * k, : wc * k]
    if a.dtype.kind == "f":
        m = m & np.isfinite(a).all(axis=-1)
    # k strided slices added, first along rows then columns: 8x faster than a reduction
    # over axes (1, 3). Row sums in float32 are exact for 16-bit codes (k <= 16).
    mk = m.reshape(hc * k, wc, k)
    fm = mk[:, :, 0].copy()
    for j in range(1, k):
        fm &= mk[:, :, j]
    fm = fm.reshape(hc, k, wc)
    full = fm[:, 0].copy()
    for j in range(1, k):
        full &= fm[:, j]
    ak = a.reshape(hc * k, wc, k, 3)
    rows = ak[:, :, 0].astype(np.float32)
    for j in range(1, k):
        rows += ak[:, :, j]
    rk = rows.reshape(hc, k, wc, 3)
    means = rk[:, 0].astype(np.float64)
    for j in range(1, k):
        means += rk[:, j]
    means /= float(k * k)
    means[~full] = np.nan
    return means, full


class Grid:
    """Valid blocks of the coarse grid, their rays and the 2x2 cells between them (1-D)."""

    def __init__(self, full: np.ndarray, camera: Camera, origin=(0, 0)):
        self.idx = np.flatnonzero(full)
        r = camera.rays(full.shape, origin).reshape(-1, 3)[self.idx]
        self.r = r
        self.rnorm = np.linalg.norm(r, axis=-1)
        self.perspective = camera.K is not None
        if camera.K is not None:
            self.fx, self.fy = float(camera.K[0, 0]), float(camera.K[1, 1])
        else:
            self.fx = self.fy = 1.0
        pos = np.full(full.size, -1, np.int64)
        pos[self.idx] = np.arange(self.idx.size)
        pos = pos.reshape(full.shape)
        a, b, c, d = pos[:-1, :-1], pos[:-1, 1:], pos[1:, :-1], pos[1:, 1:]
        cell = (a >= 0) & (b >= 0) & (c >= 0) & (d >= 0)
        self.corners = [x[cell] for x in (a, b, c, d)]  # (v,u) (v,u+1) (v+1,u) (v+1,u+1)


def cell_weights(vec: np.ndarray, grid: Grid) -> np.ndarray:
    """Weight of each 2x2 cell of ``grid``: how much the unit normals turn across it,
    |n_d - n_a| + |n_c - n_b|, capped at its 90th percentile. Sign flips and channel
    orders are orthogonal maps of the vectors: every candidate gets the same weights, so
    flat cells (where every decoding is a plane) weigh little for all of them alike."""
    n = vec / np.maximum(np.linalg.norm(vec, axis=-1, keepdims=True), 1e-12)
    a, b, c, d = grid.corners
    kappa = np.linalg.norm(n[d] - n[a], axis=-1) + np.linalg.norm(n[c] - n[b], axis=-1)
    if kappa.size:
        kappa = np.minimum(kappa, np.partition(kappa, int(0.9 * (kappa.size - 1)))[int(0.9 * (kappa.size - 1))])
    return kappa


def curl_and_sym(n: list, r: list, fx: float, fy: float, perspective: bool) -> tuple:
    """(c, s) per 2x2 cell from its corners' unit normals ``n`` and rays ``r`` (lists of
    four (m, 3) arrays: (v,u), (v,u+1), (v+1,u), (v+1,u+1)): c = dp/dv - dq/du, the curl,
    and s = dp/dv + dq/du, with (p, q) the unknown's gradients (orthographic -n_x/n_z,
    perspective the log-depth ones). Under perspective s is taken less the mixed derivative
    every plane has in log depth, 2 n_x n_y / (f_x f_y (n.r)^2): left in, it makes decodings
    that tilt flat cells look more integrable."""
    ndr = [np.sum(a * b, -1) for a, b in zip(n, r)]
    p = [-a[:, 0] / (fx * x) for a, x in zip(n, ndr)]
    q = [-a[:, 1] / (fy * x) for a, x in zip(n, ndr)]
    pv = 0.5 * (p[2] + p[3] - p[0] - p[1])
    qu = 0.5 * (q[1] + q[3] - q[0] - q[2])
    s = pv + qu
    if perspective:
        nm = 0.25 * (n[0] + n[1] + n[2] + n[3])
        rm = 0.25 * (r[0] + r[1] + r[2] + r[3])
        s = s - 2.0 * nm[:, 0] * nm[:, 1] / (fx * fy * np.sum(nm * rm, -1) ** 2)
    return pv - qu, s


def grid_score(vec: np.ndarray, grid: Grid, weights: np.ndarray | None = None) -> tuple[float, int, float]:
    """(integrability score, cells, facing-away fraction) of coarse vectors (N, 3); facing
    away: n . r > 0.05 |r| (the ray r of the block's centre). ``weights``: per cell of
    ``grid`` (default :func:`cell_weights` of ``vec``)."""
    nrm = np.linalg.norm(vec, axis=-1)
    ok = nrm > 1e-6
    n = vec / np.where(ok, nrm, 1.0)[:, None]
    if weights is None:
        weights = cell_weights(vec, grid)
    ndr = np.sum(n * grid.r, axis=-1)
    facing = float(np.mean(ndr[ok] > 0.05 * grid.rnorm[ok])) if ok.any() else 0.0
    good = ok & (np.abs(ndr) >= GRAZING * grid.rnorm)
    cell = good[grid.corners[0]] & good[grid.corners[1]] & good[grid.corners[2]] & good[grid.corners[3]]
    ncell = int(cell.sum())
    if ncell == 0:
        return float("nan"), 0, facing
    at = [x[cell] for x in grid.corners]
    c, s = curl_and_sym([n[x] for x in at], [grid.r[x] for x in at], grid.fx, grid.fy, grid.perspective)
    c, wgt = np.abs(c), weights[cell]
    m = c + np.abs(s)
    keep = (m > 0) & (wgt > 0)
    if not keep.any():
        return 0.5, ncell, facing
    c, m, wgt = c[keep], m[keep], wgt[keep]
    return float(np.sum(wgt * c / m) / np.sum(wgt)), ncell, facing


def fine_cells(raw: np.ndarray, mask: np.ndarray, camera: Camera, max_cells: int = FINE_CELLS) -> tuple:
    """The 2x2 pixel cells of :func:`fine_score`: (the raw values at their four corners, each
    (m, 3), in the order (v,u), (v,u+1), (v+1,u), (v+1,u+1); the corners' rays; (f_x, f_y)
    or None for orthographic). Only cells whose four pixels are in ``mask``, on a lattice of
    stride s, the smallest keeping at most ``max_cells``."""
    full = mask[:-1, :-1] & mask[:-1, 1:] & mask[1:, :-1] & mask[1:, 1:]
    s = max(1, int(np.ceil(np.sqrt(full.sum() / max_cells)))) if full.size else 1
    r, c = np.nonzero(full[::s, ::s])
    r, c = r * s, c * s
    at = [(r + a, c + b) for a, b in ((0, 0), (0, 1), (1, 0), (1, 1))]
    values = tuple(raw[i, j, :3] for i, j in at)
    if camera.K is None:
        ray = np.zeros((r.size, 3))
        ray[:, 2] = 1.0
        return values, (ray,) * 4, None
    kinv = np.linalg.inv(camera.K)
    rays = tuple(np.stack([j, i, np.ones(r.size)], -1).astype(np.float64) @ kinv.T for i, j in at)
    return values, rays, (float(camera.K[0, 0]), float(camera.K[1, 1]))


def fine_score(corners: tuple, rays: tuple, f: tuple, max_deg: float = FINE_DEG) -> tuple[float, int]:
    """(integrability at pixel scale, smooth cells) of one decoding: over the 2x2 pixel cells
    whose four unit normals (``corners``: (v,u), (v,u+1), (v+1,u), (v+1,u+1), each (m, 3))
    lie within ``max_deg`` of each other and do not graze (so that no jump and no edge-on
    pixel is inside), the energy share of the curl, sum c^2 / (sum c^2 + sum s^2), with c
    and s of :func:`curl_and_sym` (``rays``: each corner's ray, ``f``: (f_x, f_y), None
    for orthographic). 0: integrable; 0.5: noise; near 1: x or y flipped. A sum, not a
    mean of per-cell ratios: the cells where the surface twists carry the signal, the many
    flat ones only noise."""
    cosmin = np.min(np.stack([np.sum(corners[i] * corners[j], -1) for i in range(4) for j in range(i + 1, 4)]), 0)
    ndr = [np.sum(n * r, -1) for n, r in zip(corners, rays)]
    rn = [np.linalg.norm(r, axis=-1) for r in rays]
    ok = cosmin >= np.cos(np.radians(max_deg))
    for x, y in zip(ndr, rn):
        ok &= np.abs(x) >= GRAZING * y
    m = int(ok.sum())
    if m == 0:
        return float("nan"), 0
    fx, fy = f if f is not None else (1.0, 1.0)
    curl, sym = curl_and_sym([n[ok] for n in corners], [r[ok] for r in rays], fx, fy, f is not None)
    cc, ss = float(np.sum(curl * curl)), float(np.sum(sym * sym))
    return (cc / (cc + ss) if cc + ss > 0 else 0.5), m


def spread_deg(vec: np.ndarray) -> float:
    """95th percentile angle (degrees) between the unit vectors and their mean direction."""
    n = vec / np.maximum(np.linalg.norm(vec, axis=-1, keepdims=True), 1e-12)
    n = n[np.isfinite(n).all(-1)]
    if not n.size:
        return 0.0
    m = n.mean(axis=0)
    m /= max(np.linalg.norm(m), 1e-12)
    return float(np.degrees(np.arccos(np.clip(np.percentile(n @ m, 5), -1, 1))))


def unit_fraction(vec: np.ndarray, tol: float = UNIT_TOL) -> float:
    """Fraction of the vectors that :func:`conventions.normalise` keeps with tolerance ``tol``."""
    return float(np.mean(conventions.normalise(vec, tol)[1])) if vec.size else 0.0


def integrability_score(normals: np.ndarray, mask: np.ndarray, camera: Camera | None = None,
                        block: int | None = None) -> float:
    """Integrability score of internal-frame normals (0 integrable, 0.5 noise, ~1 y-flipped).

    Parameters
    ----------
    normals : (H, W, 3) array
        Internal (OpenCV-frame) vectors, unit or not.
    mask : (H, W) bool array
    camera : Camera, optional
        Orthographic when omitted.
    block : int, optional
        Block size of the coarse grid (default: chosen from the number of valid pixels).
    """
    camera = camera or Camera()
    mask = np.asarray(mask, bool)
    k = block or block_size(int(mask.sum()))
    means, full = block_means(np.asarray(normals), mask, k)
    cam = camera.scaled(1.0 / k) if k > 1 else camera
    return grid_score(means.reshape(-1, 3)[np.flatnonzero(full)], Grid(full, cam))[0]


def span(any_: np.ndarray, align: int) -> tuple[int, int]:
    """[start, stop) of the True entries of ``any_``, the start rounded down and the
    length up to multiples of ``align`` (stop at most the end)."""
    on = np.flatnonzero(any_)
    if not on.size:
        return 0, any_.size
    start = int(on[0]) // align * align
    stop = start + -(-(int(on[-1]) + 1 - start) // align) * align
    return start, min(stop, any_.size)


def block_size(valid: int) -> int:
    return int(np.clip(round(np.sqrt(valid / BLOCK_TARGET)), 2, 16))


def outline_blocks(full: np.ndarray, border: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Outline blocks of the grid ``full`` and their outward unit directions (N, 2) as
    (x, y) = (columns, rows). An outline block is a full block with a 4-neighbour outside
    the mask, where outside is the background around the mask or reaching the grid's edge:
    holes inside it (missing data, zeroed patches) are not an object's outline. ``border`` = (top, bottom, left,
    right): whether that side of the grid is the image's border (what lies beyond it is
    unknown, not background). The outward direction is the sum of the offsets (weighted
    1 / distance^2) to the outside blocks within 2."""
    R = 2
    hc, wc = full.shape
    out = np.zeros((hc + 2 * R, wc + 2 * R), bool)    # True: inside the image, outside the mask
    out[R:R + hc, R:R + wc] = ~full
    top, bottom, left, right = border
    out[:R, :] = not top
    out[R + hc:, :] = not bottom
    out[:, :R] = not left
    out[:, R + wc:] = not right
    if top:
        out[:R, :] = False
    if bottom:
        out[R + hc:, :] = False
    # the background reachable from around the grid or from its edge rows and columns
    # (the image's frame cuts the background, not a hole), 4-connected through blocks not full
    seed = out.copy()
    seed[R + 1:R + hc - 1, R + 1:R + wc - 1] = False
    reach = seed
    while True:
        grown = reach.copy()
        grown[1:] |= reach[:-1]
        grown[:-1] |= reach[1:]
        grown[:, 1:] |= reach[:, :-1]
        grown[:, :-1] |= reach[:, 1:]
        grown &= out
        if np.array_equal(grown, reach):
            break
        reach = grown
    out = reach
    ox = np.zeros((hc, wc))
    oy = np.zeros((hc, wc))
    edge = np.zeros((hc, wc), bool)
    for dy in range(-R, R + 1):
        for dx in range(-R, R + 1):
            if dx == 0 and dy == 0:
                continue
            o = out[R + dy:R + dy + hc, R + dx:R + dx + wc]
            w = 1.0 / (dx * dx + dy * dy)
            ox += o * (dx * w)
            oy += o * (dy * w)
            if abs(dx) + abs(dy) == 1:
                edge |= o
    norm = np.hypot(ox, oy)
    on = full & edge & (norm > 0)
    o = np.stack([ox[on], oy[on]], -1) / norm[on][:, None]
    return on, o


def outline_score(vec: np.ndarray, o: np.ndarray) -> float:
    """Fraction of outline normals (N, 3) pointing out of the mask minus those pointing in."""
    if not len(o):
        return 0.0
    n = vec / np.maximum(np.linalg.norm(vec, axis=-1, keepdims=True), 1e-12)
    dot = n[:, 0] * o[:, 0] + n[:, 1] * o[:, 1]
    return float(np.mean(dot >= OUTWARD) - np.mean(dot <= -OUTWARD))


def coherence(raw: np.ndarray, mask: np.ndarray, bd, decoding: Decoding, valid: int) -> float:
    """Fraction of sampled horizontal neighbour pairs (both in ``mask``) whose normals are
    within ``COHERENT_DEG``; NaN with too few pairs. Signs and channel order do not change
    angles, so any of the candidates gives the same number."""
    st = max(1, int(np.sqrt(valid / COHERENT_PAIRS)))
    h, w = mask.shape
    if w < 2:
        return float("nan")
    a_m, b_m = mask[::st, 0:w - 1:st], mask[::st, 1::st][:, : (w - 1 + st - 1) // st]
    pair = a_m & b_m
    if int(pair.sum()) < 100:
        return float("nan")
    a = decode(raw[::st, 0:w - 1:st][pair], bd, decoding).astype(np.float64)
    b = decode(raw[::st, 1::st][:, : pair.shape[1]][pair], bd, decoding).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return float(np.mean(cos >= np.cos(np.radians(COHERENT_DEG))))


def unit_share(raw: np.ndarray, mask: np.ndarray, bd, decoding: Decoding, valid: int) -> float:
    """Share of the vectors in ``mask`` (sampled: about 200 000) whose length under
    ``decoding`` is within ``UNIT_TOL`` of 1. Signs and channel order do not change lengths."""
    st = max(1, int(np.sqrt(valid / 200_000.0)))
    vec = decode(raw[::st, ::st][mask[::st, ::st]], bd, decoding).astype(np.float64)
    if not len(vec):
        return 1.0
    return float(np.mean(np.abs(np.linalg.norm(vec, axis=-1) - 1.0) <= UNIT_TOL))


def domain(raw: np.ndarray, bitdepth, decoding: Decoding, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """(finite and longer than 0.1, finite with length within 1 +- ``tol``) of the vectors
    under ``decoding``, a band of rows at a time (no full-size float array). Signs and
    channel order do not change lengths."""
    nonzero = np.empty(raw.shape[:2], bool)
    unit = np.empty(raw.shape[:2], bool)
    step = max(1, (1 << 20) // max(1, raw.shape[1]))
    lo, hi = np.float32((1 - tol) ** 2), np.float32((1 + tol) ** 2)
    for r in range(0, raw.shape[0], step):
        vec = decode(raw[r:r + step], bitdepth, decoding)
        with np.errstate(invalid="ignore", over="ignore"):
            sq = np.einsum("...i,...i->...", vec, vec)
            nonzero[r:r + step] = np.isfinite(sq) & (sq > np.float32(0.01))
            unit[r:r + step] = (sq >= lo) & (sq <= hi)
    return nonzero, unit


def unit_fractions_unmasked(raw: np.ndarray) -> dict:
    """{'raw': ..., 'half': ...}: the share of the pixels that hold a unit vector under
    either float encoding that hold one under each (tolerance ``UNIT_TOL``; 'half' only
    when every finite value lies in [0, 1]). Without a mask the pixels a map's encoding
    cannot explain are its background, whatever its colour: a (n + 1) / 2 file's grey
    (n = 0) or white background is no unit vector under 2x - 1 but may be one, or not,
    under n itself, so the shares are taken over the union, not over the given encoding's
    domain (which holds that background)."""
    stride = max(1, int(np.sqrt(raw.shape[0] * raw.shape[1] / 200000.0)))
    sub = raw[::stride, ::stride].reshape(-1, 3).astype(np.float64)
    sub = sub[np.isfinite(sub).all(-1)]
    if not sub.size:
        return {"raw": 0.0, "half": 0.0}
    in01 = float(sub.min()) >= -1e-3 and float(sub.max()) <= 1.0 + 1e-3
    ok_raw = conventions.normalise(sub, UNIT_TOL)[1]
    ok_half = conventions.normalise(2.0 * sub - 1.0, UNIT_TOL)[1] if in01 else np.zeros(len(sub), bool)
    either = int(np.sum(ok_raw | ok_half))
    if either == 0:
        return {"raw": 0.0, "half": 0.0}
    return {"raw": float(ok_raw.sum()) / either, "half": float(ok_half.sum()) / either}
