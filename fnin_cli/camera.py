"""Camera geometry: perspective (pinhole K) and orthographic projection.

Conventions (OpenCV): u = column, v = row, a 3D point is X = z K^-1 (u, v, 1)^T for a
pinhole camera and X = (s u, s v, z) for an orthographic one with pixel size s.

The integrated unknown is the log-depth z~ = ln z (perspective) or the depth z
(orthographic). Both obey the same residual form per one-sided difference

    a_u(p) * (z(q) - z(p)) * sign + n_x(p) = 0     (u direction, q the neighbour)

with a_u = f_x (n . r) for perspective (r the pixel's ray) and a_u = n_z / s for
orthographic; likewise a_v with f_y and n_y. Residuals are in "normal units" (a unit
normal component), which keeps grazing normals finite and makes the BiNI weights
scale-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import FninError


@dataclass(frozen=True)
class Camera:
    """A pinhole camera (``K`` given) or an orthographic one (``K`` is None)."""

    K: np.ndarray | None = None
    pixel_size: float = 1.0

    @property
    def perspective(self) -> bool:
        return self.K is not None

    @property
    def focal(self) -> float:
        """Mean focal length in pixels (perspective), or 1 / pixel size (orthographic)."""
        if self.K is None:
            return 1.0 / self.pixel_size
        return float(np.sqrt(self.K[0, 0] * self.K[1, 1]))

    def validate(self, shape, source=None) -> "Camera":
        """Reject intrinsics that cannot belong to an image of ``shape`` (H, W)."""
        if self.K is None:
            if not (np.isfinite(self.pixel_size) and self.pixel_size > 0):
                raise FninError(f"pixel size must be a positive number, got {self.pixel_size}", source)
            if not 1e-8 <= self.pixel_size <= 1e8:  # the solver squares 1/pixel size
                raise FninError(f"pixel size {self.pixel_size:g} is out of range (1e-8 to 1e8); "
                                "express it in other units", source)
            return self
        K = np.asarray(self.K, dtype=np.float64)
        if K.shape != (3, 3) or not np.all(np.isfinite(K)):
            raise FninError("intrinsics must be a finite 3x3 matrix", source)
        h, w = shape
        fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
        if fx <= 0 or fy <= 0:
            raise FninError(f"focal lengths must be positive (fx={fx:g}, fy={fy:g})", source)
        if not (1e-3 <= fx <= 1e9 and 1e-3 <= fy <= 1e9):
            raise FninError(f"focal lengths (fx={fx:g}, fy={fy:g}) are out of range for pixels "
                            "(1e-3 to 1e9); is K in pixel units?", source)
        if abs(K[1, 0]) > 1e-9 or abs(K[2, 0]) > 1e-9 or abs(K[2, 1]) > 1e-9 or abs(K[2, 2] - 1) > 1e-6:
            raise FninError("intrinsics must be [[fx,s,cx],[0,fy,cy],[0,0,1]]; is the matrix transposed?", source)
        if not (-w <= cx <= 2 * w and -h <= cy <= 2 * h):
            hint = " (is cx/cy swapped with the image size, or K meant for another resolution?)"
            raise FninError(f"principal point ({cx:g}, {cy:g}) is far outside the {w}x{h} image{hint}", source)
        return self

    def rays(self, shape, origin=(0, 0)) -> np.ndarray:
        """(H, W, 3) rays r with r_z = 1 (perspective) or (0, 0, 1) (orthographic);
        ``origin``: the (row, col) in the image of the array's first pixel (a crop)."""
        h, w = shape
        if self.K is None:
            r = np.zeros((h, w, 3), np.float64)
            r[..., 2] = 1.0
            return r
        Kinv = np.linalg.inv(self.K)
        r0, c0 = origin
        v, u = np.mgrid[r0:r0 + h, c0:c0 + w].astype(np.float64)
        pix = np.stack([u, v, np.ones_like(u)], axis=-1)
        return pix @ Kinv.T

    def residual_coefficients(self, normals: np.ndarray, mask: np.ndarray | None = None, origin=(0, 0)):
        """Per-pixel (a_u, a_v, n_x, n_y) of the residual form (float64, NaN-free inside valid).

        With ``mask``: 1-D arrays for the masked pixels in row-major order (what the WLS
        system needs; no work outside the mask). ``origin``: as in :meth:`rays`."""
        if mask is not None:
            v, u = np.nonzero(mask)
            n = normals[v, u].astype(np.float64)
        else:   # a column of rows and a row of columns, broadcast
            h, w = normals.shape[:2]
            v, u = np.arange(h)[:, None], np.arange(w)[None, :]
            n = normals.astype(np.float64)
        if origin != (0, 0):
            v, u = v + origin[0], u + origin[1]
        if self.K is None:
            a = n[..., 2] / self.pixel_size
            return a, a.copy(), n[..., 0], n[..., 1]
        K = self.K
        u, v = u.astype(np.float64), v.astype(np.float64)
        # n . r with r = ((u - cx)/fx, (v - cy)/fy, 1) (zero skew assumed; skew folded into cx)
        ndotr = n[..., 0] * (u - K[0, 2]) / K[0, 0] + n[..., 1] * (v - K[1, 2]) / K[1, 1] + n[..., 2]
        return K[0, 0] * ndotr, K[1, 1] * ndotr, n[..., 0], n[..., 1]

    def gradients(self, normals: np.ndarray):
        """Gradients (p, q) of the unknown per pixel: d/du and d/dv of ln z or z."""
        a_u, a_v, nx, ny = self.residual_coefficients(normals)
        with np.errstate(divide="ignore", invalid="ignore"):
            return -nx / a_u, -ny / a_v

    def depth_from_unknown(self, z: np.ndarray) -> np.ndarray:
        """Depth from the integrated unknown (exp of log-depth for perspective)."""
        return np.exp(z) if self.K is not None else z

    def unknown_from_depth(self, depth: np.ndarray) -> np.ndarray:
        if self.K is None:
            return depth
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(depth)

    def back_project(self, depth: np.ndarray, origin=(0, 0)) -> np.ndarray:
        """(H, W, 3) camera-frame points from a depth map (NaN stays NaN); ``origin``: as
        in :meth:`rays`."""
        h, w = depth.shape
        if self.K is None:
            r0, c0 = origin
            v, u = np.mgrid[r0:r0 + h, c0:c0 + w].astype(np.float64)
            return np.stack([u * self.pixel_size, v * self.pixel_size, depth], axis=-1)
        return self.rays((h, w), origin) * depth[..., None]

    def scaled(self, factor: float) -> "Camera":
        """The same camera for an image resampled by ``factor`` (0.5 = half size).

        Pixel centres map as u' = factor * (u + 0.5) - 0.5.
        """
        if self.K is None:
            return Camera(None, self.pixel_size / factor)
        K = self.K.copy()
        K[0, 0] *= factor
        K[1, 1] *= factor
        K[0, 2] = factor * (K[0, 2] + 0.5) - 0.5
        K[1, 2] = factor * (K[1, 2] + 0.5) - 0.5
        return Camera(K, self.pixel_size)

    def strided(self, step: int) -> "Camera":
        """The same camera for the image ``img[::step, ::step]`` (pixel u' is pixel
        step u': every pixel kept, none averaged, unlike :meth:`scaled`)."""
        if step == 1:
            return self
        if self.K is None:
            return Camera(None, self.pixel_size * step)
        K = self.K.copy()
        K[:2] /= step
        return Camera(K, self.pixel_size)


def intrinsics(shape, fx: float, fy: float | None = None, cx: float | None = None, cy: float | None = None) -> np.ndarray:
    """K from focal lengths in pixels (``--fx/--fy/--cx/--cy``): fy defaults to fx, the
    principal point to the image centre ((w - 1) / 2, (h - 1) / 2).

    Examples
    --------
    >>> intrinsics((480, 640), 500.0).tolist()
    [[500.0, 0.0, 319.5], [0.0, 500.0, 239.5], [0.0, 0.0, 1.0]]
    """
    h, w = shape
    fx = float(fx)
    fy = float(fy) if fy is not None else fx
    cx = float(cx) if cx is not None else (w - 1) / 2
    cy = float(cy) if cy is not None else (h - 1) / 2
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


def normals_from_depth(depth: np.ndarray, camera: Camera) -> np.ndarray:
    """Unit normals (OpenCV frame, facing the camera) of a depth map by central differences."""
    P = camera.back_project(depth)
    du = np.gradient(P, axis=1)
    dv = np.gradient(P, axis=0)
    n = np.cross(dv, du)  # x right, y down: dv x du points toward the camera
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return n
