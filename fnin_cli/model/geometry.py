"""The torch twin of the camera maths (:mod:`fnin_cli.camera`, :mod:`fnin_cli.solvers.system`):
pyramid levels, residual coefficients, one-sided differences, BiNI targets,
resampling and back-projection, batched over (B, C, H, W) float32 tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..config import DEFAULT


def view_cosine(lv: "Level"):
    """cos(normal, viewing ray) per pixel (B,1,H,W); n_z for orthographic cameras."""
    n = lv.normals
    b, _, h, w = n.shape
    K = lv.K
    fx, fy = K[:, 0, 0].view(b, 1, 1, 1), K[:, 1, 1].view(b, 1, 1, 1)
    cx, cy = K[:, 0, 2].view(b, 1, 1, 1), K[:, 1, 2].view(b, 1, 1, 1)
    persp = fx > 0
    u = torch.arange(w, device=n.device, dtype=n.dtype).view(1, 1, 1, w)
    v = torch.arange(h, device=n.device, dtype=n.dtype).view(1, 1, h, 1)
    rx = torch.where(persp, (u - cx) / torch.where(persp, fx, 1.0), torch.zeros_like(u))
    ry = torch.where(persp, (v - cy) / torch.where(persp, fy, 1.0), torch.zeros_like(v))
    dot = n[:, 0:1] * rx + n[:, 1:2] * ry + n[:, 2:3]
    return dot / torch.sqrt(rx * rx + ry * ry + 1.0)


def minmax_in_mask(x, mask, eps=1e-6):
    """Min-max normalise ``x`` to [0, 1] over the mask, per sample; 0 outside."""
    big = torch.finfo(x.dtype).max
    lo = torch.where(mask > 0, x, torch.full_like(x, big)).amin(dim=(2, 3), keepdim=True)
    hi = torch.where(mask > 0, x, torch.full_like(x, -big)).amax(dim=(2, 3), keepdim=True)
    return ((x - lo) / (hi - lo + eps)).clamp(0, 1) * mask


# ---------------------------------------------------------------- geometry in torch

@dataclass
class Level:
    """One pyramid level: tensors (B, ., H, W) and per-sample camera numbers."""

    normals: torch.Tensor   # (B,3,H,W) internal frame, 0 outside mask
    mask: torch.Tensor      # (B,1,H,W) float {0,1}
    K: torch.Tensor         # (B,3,3); fx = 0 marks orthographic
    pixel: torch.Tensor     # (B,) orthographic pixel size in unknown units
    objects: torch.Tensor | None = None   # (B,1,H,W) int object ids (-1 outside; training); None: one object


def residual_coeffs(lv: Level):
    """a_u, a_v (B,1,H,W): f (n.r) for perspective, n_z / pixel for orthographic."""
    n = lv.normals
    b, _, h, w = n.shape
    K = lv.K
    fx, fy = K[:, 0, 0].view(b, 1, 1, 1), K[:, 1, 1].view(b, 1, 1, 1)
    cx, cy = K[:, 0, 2].view(b, 1, 1, 1), K[:, 1, 2].view(b, 1, 1, 1)
    persp = (fx > 0).float()
    u = torch.arange(w, device=n.device, dtype=n.dtype).view(1, 1, 1, w)
    v = torch.arange(h, device=n.device, dtype=n.dtype).view(1, 1, h, 1)
    safe_fx, safe_fy = torch.where(fx > 0, fx, 1.0), torch.where(fy > 0, fy, 1.0)
    ndotr = n[:, 0:1] * (u - cx) / safe_fx + n[:, 1:2] * (v - cy) / safe_fy + n[:, 2:3]
    pix = lv.pixel.view(b, 1, 1, 1)
    a_u = persp * safe_fx * ndotr + (1 - persp) * n[:, 2:3] / pix
    a_v = persp * safe_fy * ndotr + (1 - persp) * n[:, 2:3] / pix
    return a_u, a_v


def gradient_field(lv: Level, max_slope: float = 10.0):
    """Per-pixel gradient (p, q) of the unknown, grazing normals clamped to ``max_slope``."""
    a_u, a_v = residual_coeffs(lv)
    b = a_u.shape[0]
    K = lv.K
    fx, fy = K[:, 0, 0].view(b, 1, 1, 1), K[:, 1, 1].view(b, 1, 1, 1)
    pix = lv.pixel.view(b, 1, 1, 1)
    fu = torch.where(fx > 0, fx, 1.0 / pix)
    fv = torch.where(fy > 0, fy, 1.0 / pix)
    floor_u, floor_v = fu / max_slope, fv / max_slope
    au = torch.where(a_u.abs() < floor_u, torch.where(a_u < 0, -floor_u, floor_u), a_u)
    av = torch.where(a_v.abs() < floor_v, torch.where(a_v < 0, -floor_v, floor_v), a_v)
    p = -lv.normals[:, 0:1] / au * lv.mask
    q = -lv.normals[:, 1:2] / av * lv.mask
    return p, q


def one_sided_differences(z, lv: Level):
    """a * (one-sided difference of z) per direction (B,4,H,W): u+, u-, v+, v-; 0 where undefined.

    The same numbers as ``NormalSystem.differences`` (the rows of the data term without
    the n_x / n_y part), which BiNI's weights compare.
    """
    a_u, a_v = residual_coeffs(lv)
    m = lv.mask
    dzr = F.pad(z[..., :, 1:] - z[..., :, :-1], (0, 1))      # z(u+1) - z(u) at u
    mr = F.pad(m[..., :, 1:] * m[..., :, :-1], (0, 1))
    dzl = F.pad(z[..., :, 1:] - z[..., :, :-1], (1, 0))      # z(u) - z(u-1) at u
    ml = F.pad(m[..., :, 1:] * m[..., :, :-1], (1, 0))
    dzd = F.pad(z[..., 1:, :] - z[..., :-1, :], (0, 0, 0, 1))
    md = F.pad(m[..., 1:, :] * m[..., :-1, :], (0, 0, 0, 1))
    dzt = F.pad(z[..., 1:, :] - z[..., :-1, :], (0, 0, 1, 0))
    mt = F.pad(m[..., 1:, :] * m[..., :-1, :], (0, 0, 1, 0))
    d = torch.cat([a_u * dzr * mr, a_u * dzl * ml, a_v * dzd * md, a_v * dzt * mt], dim=1)
    return d, torch.cat([mr, ml, md, mt], dim=1)


def add_normals(d, has, lv: Level):
    """Residuals from :func:`one_sided_differences`' output: d + n_x (u) / n_y (v) where defined."""
    n = torch.cat([lv.normals[:, 0:1], lv.normals[:, 0:1], lv.normals[:, 1:2], lv.normals[:, 1:2]], dim=1)
    return d + n * has


def one_sided(z, lv: Level):
    """Residuals a * (one-sided difference) + n per direction (B,4,H,W), 0 where undefined."""
    d, has = one_sided_differences(z, lv)
    return add_normals(d, has, lv)


def square_contrast(d):
    """d+^2 - d-^2 per axis (B,2,H,W): what BiNI's weights are a sigmoid of."""
    sq = d * d
    return torch.cat([sq[:, 0:1] - sq[:, 1:2], sq[:, 2:3] - sq[:, 3:4]], dim=1)


def bini_targets(z, lv: Level, k: float = DEFAULT.solver.k):
    """BiNI's w_u-, w_v- (B,2,H,W) from the unknown z: sigmoid_k(d+^2 - d-^2) per axis
    (``solvers.bini.bini_weights`` in torch); w_u+ = 1 - w_u-, w_v+ = 1 - w_v-."""
    d, _ = one_sided_differences(z, lv)
    return torch.sigmoid(k * square_contrast(d))


def central_grad(z, m):
    """Central differences of z per pixel, using filled values across the mask border."""
    zp = F.pad(z, (1, 1, 1, 1), mode="replicate")
    gu = 0.5 * (zp[..., 1:-1, 2:] - zp[..., 1:-1, :-2])
    gv = 0.5 * (zp[..., 2:, 1:-1] - zp[..., :-2, 1:-1])
    return gu * m, gv * m


def masked_mean(x, m):
    """Mean of ``x`` over the mask ``m``, per sample and channel (B, C, 1, 1)."""
    return (x * m).sum(dim=(2, 3), keepdim=True) / m.sum(dim=(2, 3), keepdim=True).clamp_min(1.0)


def fill_outside(z, m):
    """Replace values outside the mask by the masked mean (used before resampling)."""
    return z * m + masked_mean(z, m) * (1 - m)


def downsample(lv: Level) -> Level:
    """Halve a level: area-average masked normals (renormalised), mask by majority."""
    n, m = lv.normals, lv.mask
    h, w = m.shape[-2:]
    if h % 2 or w % 2:  # pad to even with zeros (outside the mask)
        n = F.pad(n, (0, w % 2, 0, h % 2))
        m = F.pad(m, (0, w % 2, 0, h % 2))
    s = F.avg_pool2d(n * m, 2)
    cnt = F.avg_pool2d(m, 2)
    length = torch.sqrt((s * s).sum(dim=1, keepdim=True))  # faster than .norm on CPU
    nn_ = s / length.clamp_min(1e-8)
    mc = ((cnt >= 0.5) & (length > 1e-8)).float()
    K = lv.K.clone()
    K[:, 0, 0] *= 0.5
    K[:, 1, 1] *= 0.5
    K[:, 0, 2] = 0.5 * (K[:, 0, 2] + 0.5) - 0.5
    K[:, 1, 2] = 0.5 * (K[:, 1, 2] + 0.5) - 0.5
    return Level(nn_ * mc, mc, K, lv.pixel * 2.0)


def upsample_to(z, m_coarse, shape):
    """Mask-aware bilinear upsampling of the unknown to ``shape``."""
    zf = fill_outside(z, m_coarse)
    return F.interpolate(zf, size=shape, mode="bilinear", align_corners=False)


def pyramid(lv: Level, min_side: int) -> list:
    """Levels from coarsest to finest; halve until the short side is <= ``min_side``."""
    levels = [lv]
    while min(levels[-1].mask.shape[-2:]) > min_side:
        levels.append(downsample(levels[-1]))
    return levels[::-1]


def coord_grid(b, h, w, device):
    """Pixel coordinates normalised to [-1, 1]: (x, y), each (B, 1, H, W)."""
    y = torch.linspace(-1, 1, h, device=device).view(1, 1, h, 1).expand(b, 1, h, w)
    x = torch.linspace(-1, 1, w, device=device).view(1, 1, 1, w).expand(b, 1, h, w)
    return x, y


# ---------------------------------------------------------------- loss

def backproject_t(z, lv: Level):
    """Points (B,3,H,W) from the unknown (log-depth or orthographic depth)."""
    b, _, h, w = z.shape
    K = lv.K
    fx, fy = K[:, 0, 0].view(b, 1, 1, 1), K[:, 1, 1].view(b, 1, 1, 1)
    cx, cy = K[:, 0, 2].view(b, 1, 1, 1), K[:, 1, 2].view(b, 1, 1, 1)
    persp = (fx > 0).float()
    u = torch.arange(w, device=z.device, dtype=z.dtype).view(1, 1, 1, w).expand(b, 1, h, w)
    v = torch.arange(h, device=z.device, dtype=z.dtype).view(1, 1, h, 1).expand(b, 1, h, w)
    depth_p = torch.exp(z.clamp(-20, 20))
    sfx, sfy = torch.where(fx > 0, fx, 1.0), torch.where(fy > 0, fy, 1.0)
    pix = lv.pixel.view(b, 1, 1, 1)
    xp = depth_p * (u - cx) / sfx
    yp = depth_p * (v - cy) / sfy
    X = persp * xp + (1 - persp) * u * pix
    Y = persp * yp + (1 - persp) * v * pix
    Z = persp * depth_p + (1 - persp) * z
    return torch.cat([X, Y, Z], dim=1)


def point_normals(P):
    """Unit normals of a point map (B, 3, H, W) by central differences."""
    pp = F.pad(P, (1, 1, 1, 1), mode="replicate")
    du = 0.5 * (pp[..., 1:-1, 2:] - pp[..., 1:-1, :-2])
    dv = 0.5 * (pp[..., 2:, 1:-1] - pp[..., :-2, 1:-1])
    n = torch.cross(dv, du, dim=1)
    return n / n.norm(dim=1, keepdim=True).clamp_min(1e-12)
