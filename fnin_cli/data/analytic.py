"""Closed-form surfaces with exact normals, for tests and the shipped samples.

Every surface is a depth map ``z(u, v)`` over the pixel grid (u = column, v = row)
plus its exact partial derivatives, so the normals are exact too (no finite
differences): with X(u, v) the back-projected point,

    perspective:   X = z K^-1 (u, v, 1)^T,  X_u = z_u r + z K^-1[:, 0],  X_v = z_v r + z K^-1[:, 1]
    orthographic:  X = (s u, s v, z),       X_u = (s, 0, z_u),           X_v = (0, s, z_v)

and n = X_v x X_u / |...| (OpenCV frame, facing the camera: n_z < 0). Spheres are
ray-cast and use n = (X - C) / R directly.

Surfaces compose by z-buffering (:func:`nearest`), which is how the depth
discontinuities of the samples arise (a dome floating in front of a wall).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..camera import Camera


@dataclass
class Surface:
    """An analytic test surface: depth, normals, mask and camera with exact values."""

    depth: np.ndarray     # (H, W) float64, NaN outside the support
    normals: np.ndarray   # (H, W, 3) float64 unit normals (OpenCV frame), NaN outside
    support: np.ndarray   # (H, W) bool


def pixel_grid(shape):
    """(u, v) float64 grids: u = column, v = row."""
    v, u = np.mgrid[0:shape[0], 0:shape[1]].astype(np.float64)
    return u, v


def normals_from_gradient(depth, z_u, z_v, camera: Camera) -> np.ndarray:
    """Exact unit normals of a depth map from its analytic derivatives dz/du, dz/dv."""
    depth = np.asarray(depth, np.float64)
    u, v = pixel_grid(depth.shape)
    if camera.perspective:
        Kinv = np.linalg.inv(camera.K)
        r = np.stack([u, v, np.ones_like(u)], -1) @ Kinv.T
        Xu = z_u[..., None] * r + depth[..., None] * Kinv[:, 0]
        Xv = z_v[..., None] * r + depth[..., None] * Kinv[:, 1]
    else:
        s = camera.pixel_size
        zero, one = np.zeros_like(u), np.ones_like(u)
        Xu = np.stack([s * one, zero, z_u], -1)
        Xv = np.stack([zero, s * one, z_v], -1)
    n = np.cross(Xv, Xu)
    with np.errstate(invalid="ignore", divide="ignore"):
        return n / np.linalg.norm(n, axis=-1, keepdims=True)


def from_depth_function(shape, camera: Camera, fn, support=None) -> Surface:
    """A surface from ``fn(u, v) -> (z, z_u, z_v)`` (closed form, float64)."""
    u, v = pixel_grid(shape)
    z, zu, zv = fn(u, v)
    z = np.broadcast_to(np.asarray(z, np.float64), shape).copy()
    zu = np.broadcast_to(np.asarray(zu, np.float64), shape)
    zv = np.broadcast_to(np.asarray(zv, np.float64), shape)
    sup = np.isfinite(z) & (z > 0) if support is None else support & np.isfinite(z) & (z > 0)
    n = normals_from_gradient(np.where(sup, z, 1.0), zu, zv, camera)
    z[~sup] = np.nan
    n[~sup] = np.nan
    return Surface(z, n, sup)


def paraboloid(shape, camera: Camera, z0: float, k: float, center=None) -> Surface:
    """z = z0 + k ((u - u0)^2 + (v - v0)^2): a bowl (k > 0) or a dome (k < 0) in pixels."""
    h, w = shape
    u0, v0 = ((w - 1) / 2, (h - 1) / 2) if center is None else center
    return from_depth_function(shape, camera, lambda u, v: (
        z0 + k * ((u - u0) ** 2 + (v - v0) ** 2), 2 * k * (u - u0), 2 * k * (v - v0)))


def plane(shape, camera: Camera, normal, point) -> Surface:
    """The plane through ``point`` (3D) with unit ``normal`` (OpenCV frame, facing the camera)."""
    nrm = np.asarray(normal, np.float64)
    nrm = nrm / np.linalg.norm(nrm)
    d = float(nrm @ np.asarray(point, np.float64))
    u, v = pixel_grid(shape)
    if camera.perspective:
        r = np.stack([u, v, np.ones_like(u)], -1) @ np.linalg.inv(camera.K).T
        with np.errstate(divide="ignore"):
            z = d / (r @ nrm)
    else:
        s = camera.pixel_size
        z = (d - nrm[0] * s * u - nrm[1] * s * v) / nrm[2]
    sup = np.isfinite(z) & (z > 0)
    z[~sup] = np.nan
    n = np.broadcast_to(nrm, shape + (3,)).copy()
    n[~sup] = np.nan
    return Surface(z, n, sup)


def sphere(shape, camera: Camera, center, radius: float, max_angle_deg: float = 90.0) -> Surface:
    """The camera-facing side of a sphere, cut to the cap whose normals are within
    ``max_angle_deg`` of the direction toward the camera (a shell: its rim is a jump)."""
    C = np.asarray(center, np.float64)
    u, v = pixel_grid(shape)
    if camera.perspective:
        r = np.stack([u, v, np.ones_like(u)], -1) @ np.linalg.inv(camera.K).T
        # |t r - C|^2 = R^2, nearest root t (depth, since r_z = 1)
        a = np.sum(r * r, -1)
        b = r @ C
        c = C @ C - radius ** 2
        disc = b * b - a * c
        with np.errstate(invalid="ignore"):
            z = (b - np.sqrt(disc)) / a
        X = r * z[..., None]
        view = -r / np.linalg.norm(r, axis=-1, keepdims=True)
    else:
        s = camera.pixel_size
        x, y = s * u, s * v
        with np.errstate(invalid="ignore"):
            z = C[2] - np.sqrt(radius ** 2 - (x - C[0]) ** 2 - (y - C[1]) ** 2)
        X = np.stack([x, y, z], -1)
        view = np.broadcast_to(np.array([0.0, 0.0, -1.0]), shape + (3,))
    n = (X - C) / radius
    cos_view = np.sum(n * view, -1)
    with np.errstate(invalid="ignore"):
        sup = np.isfinite(z) & (z > 0) & (cos_view > np.cos(np.radians(max_angle_deg)))
    z = np.where(sup, z, np.nan)
    n[~sup] = np.nan
    return Surface(z, n, sup)


def nearest(*surfaces: Surface) -> Surface:
    """Z-buffer: at each pixel the surface nearest to the camera wins."""
    depth = np.full(surfaces[0].depth.shape, np.inf)
    normals = np.full(surfaces[0].normals.shape, np.nan)
    for s in surfaces:
        closer = s.support & (s.depth < depth)
        depth[closer] = s.depth[closer]
        normals[closer] = s.normals[closer]
    sup = np.isfinite(depth)
    depth[~sup] = np.nan
    return Surface(depth, normals, sup)


def restrict(surface: Surface, mask: np.ndarray) -> Surface:
    """The surface on ``mask`` only (NaN elsewhere)."""
    m = surface.support & mask
    depth = np.where(m, surface.depth, np.nan)
    normals = np.where(m[..., None], surface.normals, np.nan)
    return Surface(depth, normals, m)


def disc_mask(shape, center, radius: float) -> np.ndarray:
    """A disc mask of ``shape`` around ``center`` (column, row) with ``radius`` pixels."""
    u, v = pixel_grid(shape)
    return (u - center[0]) ** 2 + (v - center[1]) ** 2 <= radius ** 2
