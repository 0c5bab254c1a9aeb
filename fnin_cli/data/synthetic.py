"""Synthetic scenes with exact ground truth, generated on the fly and deterministic per seed.

A scene is a z-buffered stack of analytic height layers seen by a random camera:
domes (ellipsoids, superquadrics), bumpy blobs, tori (with holes), tilted planar
patches and an optional background wall that the objects occlude, so the mask holds
real depth jumps, islands and holes. Depth is a closed-form function of the pixel
coordinates; normals come from its derivative (central differences of the closed form
with a 1e-3 pixel step, float64), so depth and normals agree to ~1e-7.

Perspective cameras range from long focal (DiLiGenT-like, f ~ 6 W) to wide angle
(f ~ 0.8 W); about one scene in five is orthographic. Normal noise, outliers and
zeroed patches (as in the paper's augmentation) are added to the *input* only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..camera import Camera
from .analytic import normals_from_gradient


@dataclass
class Scene:
    """One generated scene: normals, mask, camera and the true unknown."""

    normals: np.ndarray      # (H, W, 3) float32 internal frame, NaN outside the mask (noisy input)
    mask: np.ndarray         # (H, W) bool input domain
    depth: np.ndarray        # (H, W) float64 true depth (NaN outside the support)
    K: np.ndarray | None     # 3x3 or None (orthographic, pixel size 1)
    clean_normals: np.ndarray  # (H, W, 3) exact normals

    @property
    def unknown(self) -> np.ndarray:
        """The integrated unknown: log-depth (perspective) or depth (orthographic)."""
        return np.log(self.depth) if self.K is not None else self.depth


def _rot(u, v, cu, cv, theta):
    c, s = np.cos(theta), np.sin(theta)
    du, dv = u - cu, v - cv
    return c * du + s * dv, -s * du + c * dv


class _Layer:
    """A closed-form depth layer: depth(u, v) and its support, in pixel coordinates."""

    def __init__(self, rng, kind, h, w, persp, f, base):
        L = max(h, w)
        self.kind = kind
        self.cu = rng.uniform(0.1, 0.9) * w
        self.cv = rng.uniform(0.1, 0.9) * h
        self.ru = rng.uniform(0.12, 0.45) * L
        self.rv = self.ru * rng.uniform(0.5, 1.5)
        self.theta = rng.uniform(0, np.pi)
        self.base = base
        # metric size of one pixel at this depth: base / f (perspective) or 1 (orthographic)
        self.px = base / f if persp else 1.0
        self.height = rng.uniform(0.3, 1.2) * self.ru * self.px
        self.p = rng.uniform(1.5, 4.0)              # superquadric exponent
        self.tilt = rng.uniform(-0.8, 0.8, 2) * self.px
        self.rho_max = rng.uniform(0.9, 0.985)
        nb = rng.integers(2, 7)
        self.bumps = [
            (rng.uniform(-0.6, 0.6), rng.uniform(-0.6, 0.6), rng.uniform(0.08, 0.3),
             rng.uniform(-0.25, 0.25)) for _ in range(nb)]
        self.ring = rng.uniform(0.45, 0.7)           # torus: ring radius (in rho units)
        self.tube = rng.uniform(0.15, 0.3)
        self.sides = rng.integers(3, 8)
        self.poly_phase = rng.uniform(0, 2 * np.pi)
        self.poly_r = rng.uniform(0.6, 1.0, self.sides)
        # fold: flaps of the same surface that lift towards the camera and end in an
        # occluding contour (an arc) whose jump tapers to zero at the arc's ends
        # (drawn last and only for folds: the other kinds' scenes stay as they were)
        self.tears = [] if kind != "fold" else [
            (rng.uniform(-0.4, 0.4), rng.uniform(-0.4, 0.4), rng.uniform(0.25, 0.6),   # arc centre, radius
             rng.uniform(0, 2 * np.pi), rng.uniform(0.5, 1.4) * np.pi,                 # start angle, span
             rng.uniform(0.3, 0.8), rng.uniform(1.5, 4.0),                             # jump (x height), rise
             rng.uniform(0.2, 0.7), rng.uniform(0.05, 0.2))                            # roll-off share, width
            for _ in range(int(rng.integers(1, 4)))]

    def __call__(self, u, v):
        x, y = _rot(u, v, self.cu, self.cv, self.theta)
        x, y = x / self.ru, y / self.rv
        rho2 = x * x + y * y
        k = self.kind
        if k == "plane":
            ang = np.arctan2(y, x) - self.poly_phase
            sector = 2 * np.pi / self.sides
            idx = np.floor(ang / sector).astype(int) % self.sides
            rad = self.poly_r[idx] * np.cos(sector / 2) / np.cos((ang % sector) - sector / 2)
            support = np.sqrt(rho2) < rad
            z = self.base + self.tilt[0] * (u - self.cu) + self.tilt[1] * (v - self.cv)
            return z, support
        if k == "torus":
            rho = np.sqrt(rho2)
            t = (rho - self.ring) / self.tube
            support = np.abs(t) < self.rho_max
            g = np.sqrt(np.clip(1 - t * t, 0, None))
            return self.base - self.height * self.tube * g, support
        if k == "superquadric":
            r = (np.abs(x) ** self.p + np.abs(y) ** self.p) ** (1 / self.p)
            support = r < self.rho_max
            g = np.clip(1 - r ** self.p, 0, None) ** (1 / self.p)
        else:  # dome / bumpy
            support = rho2 < self.rho_max ** 2
            g = np.sqrt(np.clip(1 - rho2, 0, None))
        z = self.base - self.height * g
        if k == "fold":
            for acx, acy, R, a0, span, J, rise, roll, width in self.tears:
                dx, dy = x - acx, y - acy
                r = np.sqrt(dx * dx + dy * dy)
                t = np.mod(np.arctan2(dy, dx) - a0, 2 * np.pi) / span
                inside = (t < 1) & (r < R)
                amp = J * self.height * np.sin(np.pi * np.clip(t, 0, 1))
                # rises from the arc's centre (connected there) to the arc, where it curves
                # away from the camera (grazing normals) and ends above what lies outside
                e = np.clip((R - r) / (width * R), 0, 1)
                curl = roll * (1 - np.sqrt(np.clip(1 - (1 - e) ** 2, 0, None)))
                z = z - np.where(inside, amp * ((r / R) ** rise - curl), 0.0)
            return z, support
        if k == "bumpy":
            for bx, by, bs, ba in self.bumps:
                z = z - ba * self.height * np.exp(-((x - bx) ** 2 + (y - by) ** 2) / (2 * bs * bs)) * g
        return z, support


KINDS = ("dome", "bumpy", "superquadric", "torus", "plane")
KIND_P = [0.25, 0.3, 0.2, 0.1, 0.15]


def _stacked_layers(rng, h, w, persp, f, base0, px, size) -> list:
    """Back-to-front layers, each resting a little in front of the surface behind its centre."""
    L = max(h, w)
    layers = []
    if rng.uniform() < 0.6:  # a supporting wall or floor-like plane
        back = _Layer(rng, "plane", h, w, persp, f, base0 + size * rng.uniform(0.3, 1.0))
        back.ru = back.rv = 3 * L
        back.cu, back.cv = w / 2, h / 2
        back.tilt = rng.uniform(-0.5, 0.5, 2) * px
        layers.append(back)
    for _ in range(int(rng.integers(1, 5))):
        kind = KINDS[rng.choice(len(KINDS), p=KIND_P)]
        layer = _Layer(rng, kind, h, w, persp, f, base0)
        cu, cv = np.array([layer.cu]), np.array([layer.cv])
        behind = [z[0] for z, sup in (lay(cu, cv) for lay in layers) if sup[0]]
        if behind:
            layer.base = min(behind) - layer.height * rng.uniform(0.0, 0.6)
        else:
            layer.base = base0 + size * rng.uniform(-0.5, 0.5)
        layers.append(layer)
    return layers


def random_camera(rng, h: int, w: int, ortho_prob: float):
    """A scene camera drawn from ``rng``: ``(K, base depth, f)`` for a pinhole camera
    with f = L * exp(U(ln 0.8, ln 7)) (L the long side) and the principal point within
    5% of the centre, base depth 1; or ``(None, 2 L, f)``, orthographic with pixel size
    1, with probability ``ortho_prob`` (f is drawn either way, so the draws that follow
    do not depend on the camera kind)."""
    L = max(h, w)
    persp = rng.uniform() >= ortho_prob
    f = L * float(np.exp(rng.uniform(np.log(0.8), np.log(7.0))))
    if not persp:
        return None, 2.0 * L, f
    K = np.array([[f, 0, (w - 1) / 2 + rng.uniform(-0.05, 0.05) * w],
                  [0, f, (h - 1) / 2 + rng.uniform(-0.05, 0.05) * h],
                  [0, 0, 1.0]])
    return K, 1.0, f


def make_scene(seed: int, h: int = 128, w: int | None = None, ortho_prob: float = 0.2,
               noise: bool = True, stack_prob: float = 0.0, fold_prob: float = 0.0) -> Scene:
    """One random scene; the same ``seed`` (and ``stack_prob``) always gives the same arrays.

    With probability ``stack_prob`` the scene is *stacked*: objects are placed back to
    front, each resting just in front of whatever lies behind its centre, so occlusion
    jumps are about the occluder's own relief (as for an arm in front of a torso) rather
    than arbitrary; otherwise object depths are independent (the original generator).
    With probability ``fold_prob`` (drawn apart from ``stack_prob``) it is a *fold* scene:
    one or two large connected surfaces whose flaps end in occluding contours whose jumps
    taper to zero (self-occlusion within one surface, as on a statue), optionally in front
    of a wall.
    """
    rng = np.random.default_rng(seed)
    w = h if w is None else w
    L = max(h, w)
    K, base0, f = random_camera(rng, h, w, ortho_prob)
    persp = K is not None
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    layers = []
    px = base0 / f if persp else 1.0
    # objects sit at depths that differ by about their own size, so occlusion jumps
    # are of the order of the objects' relief (as in self-occluding statues)
    size = 0.3 * L * px
    stacked = stack_prob > 0 and np.random.default_rng([seed, 7]).uniform() < stack_prob
    folded = not stacked and fold_prob > 0 and np.random.default_rng([seed, 11]).uniform() < fold_prob
    if stacked:
        layers = _stacked_layers(rng, h, w, persp, f, base0, px, size)
    if folded:
        for _ in range(int(rng.integers(1, 3))):
            layer = _Layer(rng, "fold", h, w, persp, f, base0 + size * rng.uniform(-0.5, 0.5))
            layer.ru, layer.rv = layer.ru * 1.6, layer.rv * 1.6   # large surfaces
            layer.cu, layer.cv = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
            layers.append(layer)
    for _ in range(0 if (stacked or folded) else int(rng.integers(1, 5))):
        kind = KINDS[rng.choice(len(KINDS), p=KIND_P)]
        layers.append(_Layer(rng, kind, h, w, persp, f, base0 + size * rng.uniform(-1.0, 1.0)))
    if not stacked and rng.uniform() < 0.35:  # background wall occluded by the objects
        wall = _Layer(rng, "plane", h, w, persp, f, base0 + size * rng.uniform(1.2, 3.0))
        wall.ru = wall.rv = 3 * L
        wall.cu, wall.cv = w / 2, h / 2
        wall.tilt = rng.uniform(-0.3, 0.3, 2) * px
        layers.append(wall)

    eps = 1e-3
    depth = np.full((h, w), np.inf)
    zu = np.zeros((h, w))
    zv = np.zeros((h, w))
    for layer in layers:
        z, sup = layer(u, v)
        nearer = sup & (z < depth) & (z > 0)
        if not nearer.any():
            continue
        uu, vv = u[nearer], v[nearer]
        depth[nearer] = z[nearer]
        zu[nearer] = (layer(uu + eps, vv)[0] - layer(uu - eps, vv)[0]) / (2 * eps)
        zv[nearer] = (layer(uu, vv + eps)[0] - layer(uu, vv - eps)[0]) / (2 * eps)
    mask = np.isfinite(depth)
    # holes and cut-outs
    for _ in range(int(rng.integers(0, 3)) if rng.uniform() < 0.4 else 0):
        hu, hv = rng.uniform(0, w), rng.uniform(0, h)
        hr = rng.uniform(0.03, 0.12) * L
        mask &= (u - hu) ** 2 + (v - hv) ** 2 * rng.uniform(0.5, 2) > hr * hr
    depth[~mask] = np.nan

    # exact normals: X_v x X_u from the closed-form derivatives
    n = normals_from_gradient(np.where(mask, depth, 0.0), zu, zv, Camera(K))
    n[~mask] = np.nan
    clean = n.astype(np.float32)

    noisy = n.copy()
    inp_mask = mask.copy()
    if noise:
        sigma = rng.uniform(0, 0.03)
        noisy = noisy + rng.normal(0, sigma, noisy.shape)
        out = rng.uniform(size=(h, w)) < rng.uniform(0, 0.004)
        rand = rng.normal(size=(h, w, 3))
        rand[..., 2] = -np.abs(rand[..., 2])
        noisy[out] = rand[out]
        noisy /= np.linalg.norm(noisy, axis=-1, keepdims=True)
        for _ in range(int(rng.integers(0, 3))):  # zeroed patches (paper: 50x50 at 512)
            s = max(2, int(L * rng.uniform(0.04, 0.1)))
            pu, pv = rng.integers(0, max(1, w - s)), rng.integers(0, max(1, h - s))
            inp_mask[pv:pv + s, pu:pu + s] = False
        # keep facing the camera
        noisy[..., 2] = np.minimum(noisy[..., 2], -1e-3)
        noisy /= np.linalg.norm(noisy, axis=-1, keepdims=True)
    noisy[~inp_mask] = np.nan
    return Scene(noisy.astype(np.float32), inp_mask, depth, K, clean)


# objects smaller than this are not scored on their own in training (as studies/_lib.py object_error)
MIN_OBJECT_PIXELS = 200


def relative_error(z: np.ndarray, gt: np.ndarray) -> float:
    """Mean |z - gt| over the mean spread of gt, both with their means removed: the
    synthetic validation metric (a constant depth scores 1.0)."""
    zc, gc = z - z.mean(), gt - gt.mean()
    return float(np.mean(np.abs(zc - gc)) / max(np.mean(np.abs(gc)), 1e-12))


def object_groups(objects: np.ndarray | None, min_pixels: int = MIN_OBJECT_PIXELS) -> list:
    """Index arrays of the objects a scene is scored on, given its object id per masked
    pixel (None: one object): the objects of at least ``min_pixels`` pixels, or all pixels
    as one group where none is that large."""
    if objects is None:
        return [slice(None)]
    ids, counts = np.unique(objects[objects >= 0], return_counts=True)
    return [np.flatnonzero(objects == o) for o, c in zip(ids, counts) if c >= min_pixels] or [slice(None)]


def object_relative_error(z: np.ndarray, gt: np.ndarray, objects: np.ndarray | None = None) -> float:
    """:func:`relative_error` per object (``objects``: id per pixel), averaged over the
    objects of :func:`object_groups`: separate objects' offsets are unknowable from
    normals, so each is aligned on its own (as ``fnin bench meshes`` scores them)."""
    return float(np.mean([relative_error(z[g], gt[g]) for g in object_groups(objects)]))


def scene_arrays(scene: Scene):
    """Arrays for a training batch: normals (3,H,W) with 0 outside, mask, unknown, K, pixel,
    object ids (-1 outside the mask; one object for procedural scenes)."""
    m = scene.mask
    n = np.where(m[..., None], scene.normals, 0.0).transpose(2, 0, 1).astype(np.float32)
    z = np.where(m, scene.unknown, 0.0).astype(np.float32)
    K = scene.K if scene.K is not None else np.zeros((3, 3))
    ids = getattr(scene, "object_id", None)
    objects = np.where(m, 0 if ids is None else ids, -1).astype(np.int32)
    return n, m.astype(np.float32), z, K.astype(np.float32), np.float32(1.0), objects
