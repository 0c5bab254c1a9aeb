"""Stage I of FNIN: a coarse-to-fine Fourier-neural-operator integrator with attention.

Per scale (docs/methods.md, "FNIN Stage I"): the residual between the normals' gradient field g and the
central-difference gradient of the current unknown z^ is fed, with a coordinate grid,
to an FNO; its output is a bounded increment of z^. The *initial* FNO runs at the
coarsest scale (z^ constant), the *iterative* FNO is shared by all finer scales. An
attention net turns the one-sided residuals of the new estimate into a discontinuity
map omega in [0, 1] (min-max normalised inside the mask).

The unknown is log-depth (perspective) or depth in units of the image size
(orthographic). Two deliberate choices beyond the paper, both for CPU training on
synthetic data with random intrinsics:

- gradient-scale equivariance: the residual field is divided by its masked RMS ``s``
  and the increment multiplied by it, so long- and short-focal inputs look alike to
  the network (integration is linear in g, so this costs nothing on smooth parts);
- the attention net sees the four one-sided residuals (normal units, log-compressed)
  in addition to the paper's ``dis`` feature, so it need not learn to cancel the slope.

Beyond the paper, an optional *edge net* (``EdgeNet``, ``NetConfig.edge_width`` > 0) gives
Stage II its weights: dilated convolutions at full resolution over the upsampled z_R and
the normals, trained (``fnin train``, stage ``edges``, Stage I frozen) against BiNI's
weights of the true surface (why: docs/decisions.md#edge-net).

Everything is batched over (B, C, H, W) float32 tensors.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import DEFAULT
from .config import NetConfig
from .geometry import (Level, central_grad, coord_grid, gradient_field, masked_mean, one_sided, pyramid,
                       upsample_to)
from .layers import AttentionNet, EdgeNet, FNO


# ---------------------------------------------------------------- the model

class FNINet(nn.Module):
    """Initial FNO + iterative FNO + attention net over a coarse-to-fine pyramid."""

    def __init__(self, cfg: NetConfig | None = None):
        super().__init__()
        self.cfg = cfg or NetConfig()
        self.initial = FNO(self.cfg)
        self.iterative = FNO(self.cfg)
        self.attention = AttentionNet(self.cfg)
        self.edges = EdgeNet(self.cfg) if self.cfg.edge_width > 0 else None

    def step(self, net: FNO, z_hat, lv: Level):
        """One scale: z_new = z_hat + s * 2 tanh(FNO(residual / s, grid)), mean removed."""
        m = lv.mask
        b, _, h, w = m.shape
        L = max(h, w)
        p, q = gradient_field(lv)
        gu, gv = central_grad(z_hat, m)
        ru, rv = (p - gu) * m, (q - gv) * m
        # residual slope per normalised unit (image spans [-1, 1] along its long side)
        half = (L - 1) / 2.0
        ru_n, rv_n = ru * half, rv * half
        s = torch.sqrt(masked_mean(ru_n ** 2 + rv_n ** 2, m)).clamp_min(1e-6)
        x, y = coord_grid(b, h, w, m.device)
        inp = torch.cat([ru_n / s, rv_n / s, x, y], dim=1)
        delta = 2.0 * s * torch.tanh(net(inp))
        z = z_hat + delta
        z = (z - masked_mean(z, m)) * m
        return z

    def attend(self, z, lv: Level):
        r = one_sided(z, lv)
        dis = (r ** 2).sum(dim=1, keepdim=True)
        feat = torch.cat([torch.log1p(r ** 2), torch.log1p(dis)], dim=1)
        return self.attention(feat, lv.mask)

    def forward(self, lv: Level, max_levels: int | None = None, with_attention: bool | str = True, levels=None):
        """Run on the finest level ``lv``; returns lists (coarse to fine) of (level, z, omega).

        ``max_levels`` caps the pyramid: the network stops at the coarsest ``max_levels``
        levels (None = all). ``levels`` passes a pyramid already built from ``lv``.
        ``with_attention``: True (every level, for the loss), ``"last"`` (the finest only,
        what inference uses; omega is None elsewhere) or False.
        """
        levels = pyramid(lv, self.cfg.min_side) if levels is None else levels
        if max_levels is not None:
            levels = levels[:max_levels]
        outs = []
        z = None
        for i, lvl in enumerate(levels):
            m = lvl.mask
            if i == 0:
                z_hat = torch.zeros_like(m)
                z = self.step(self.initial, z_hat, lvl)
            else:
                z_hat = upsample_to(z, levels[i - 1].mask, m.shape[-2:])
                z_hat = (z_hat - masked_mean(z_hat, m)) * m
                z = self.step(self.iterative, z_hat, lvl)
            want = with_attention is True or (with_attention == "last" and i == len(levels) - 1)
            omega = self.attend(z, lvl) if want else None
            outs.append((lvl, z, omega))
        return outs

    @torch.no_grad()
    def edge_probabilities(self, z, lv: Level, tile: int | None = DEFAULT.one_shot.edge_tile):
        """The edge net's w_u-, w_v- (B,2,H,W) for one image, 0 outside the mask.

        Run tile by tile over the mask's bounding box: each ``tile`` x ``tile`` block
        that holds a masked pixel is computed on its window widened by the receptive
        field's radius (:meth:`EdgeNet.radius`), so its pixels get the same numbers as on
        the whole frame (to float32 rounding: convolutions sum in another order); blocks
        without a masked pixel are 0 and skipped. Small tiles keep the activations in the
        cache (docs/decisions.md#edge-net-tiles); ``tile=None``: one block, the bounding box.
        """
        margin = EdgeNet.radius(self.cfg)
        m = lv.mask[0, 0] > 0
        h, w = m.shape
        out = torch.zeros(1, 2, h, w, device=z.device)
        rows, cols = torch.nonzero(m.any(dim=1)), torch.nonzero(m.any(dim=0))
        if rows.numel() == 0:
            return out
        top, bottom, left, right = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
        step_r = bottom - top if tile is None else int(tile)
        step_c = right - left if tile is None else int(tile)
        persp = (lv.K[:, 0, 0] > 0).to(lv.K.dtype)
        for i in range(top, bottom, step_r):
            i1 = min(i + step_r, bottom)
            for j in range(left, right, step_c):
                j1 = min(j + step_c, right)
                if tile is not None and not bool(m[i:i1, j:j1].any()):
                    continue
                r0, r1 = max(0, i - margin), min(h, i1 + margin)
                c0, c1 = max(0, j - margin), min(w, j1 + margin)
                K = lv.K.clone()
                K[:, 0, 2] -= c0 * persp
                K[:, 1, 2] -= r0 * persp
                sub = Level(lv.normals[..., r0:r1, c0:c1], lv.mask[..., r0:r1, c0:c1], K, lv.pixel)
                p = torch.sigmoid(self.edges(z[..., r0:r1, c0:c1], sub)) * sub.mask
                out[..., i:i1, j:j1] = p[..., i - r0:i1 - r0, j - c0:j1 - c0]
        return out

    def capped(self, lv: Level, side: int, attention: bool = True):
        """Run the pyramid up to the finest level whose short side is <= ``side`` and
        upsample its unknown (and omega) to ``lv``'s resolution: z_R for Stage II."""
        levels = pyramid(lv, self.cfg.min_side)
        keep = max(1, sum(1 for x in levels if min(x.mask.shape[-2:]) <= max(side, self.cfg.min_side)))
        last, z, omega = self(lv, max_levels=keep, levels=levels, with_attention="last" if attention else False)[-1]
        shape = lv.mask.shape[-2:]
        if z.shape[-2:] != shape:
            z = upsample_to(z, last.mask, shape)
            if omega is not None:
                omega = F.interpolate(omega, size=shape, mode="bilinear", align_corners=False)
        return z, omega


def count_parameters(model: nn.Module) -> int:
    """Number of parameters of ``model``."""
    return sum(p.numel() for p in model.parameters())
