"""The network's layers: spectral convolution (truncated DFT matrices), the FNO, the
attention CNN and the full-resolution edge net with its input features.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import NetConfig
from .geometry import add_normals, square_contrast, minmax_in_mask, one_sided_differences, view_cosine

# ---------------------------------------------------------------- spectral conv

# output channels per step of the spectral layer's channel mix at inference (docs/decisions.md#fresh-pages)
MIX_CHUNK = 8


def _dft_mats(n: int, modes: int, device, dtype=torch.float32):
    """Forward rows (kept frequencies x n) of the DFT along one axis, as cos/sin."""
    k = torch.arange(modes, device=device, dtype=torch.float64)
    x = torch.arange(n, device=device, dtype=torch.float64)
    ang = 2 * math.pi * torch.outer(k, x) / n
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


class SpectralConv2d(nn.Module):
    """Spectral convolution: keep the lowest ``modes`` frequencies (both signs along H,
    non-negative along W, as in rfft2), multiply by complex weights, transform back.

    The transforms are multiplications with truncated DFT matrices (only the kept
    modes), which equals rfft2 -> truncate -> irfft2 and is ~2x faster on CPU at these
    sizes. ``tucker`` > 0 stores the weight tensor as a Tucker decomposition.
    """

    def __init__(self, cin: int, cout: int, modes: int, tucker: float = 0.0):
        super().__init__()
        self.cin, self.cout, self.modes = cin, cout, modes
        self.tucker = tucker
        shape = (cin, cout, 2 * modes, modes)
        scale = 1.0 / (cin * cout)
        if tucker > 0:
            ranks = [max(1, int(round(tucker * s))) for s in shape]
            self.core = nn.Parameter(scale ** 0.5 * torch.randn(2, *ranks))
            self.factors = nn.ParameterList(
                [nn.Parameter(torch.randn(2, s, r) / math.sqrt(r) * scale ** 0.125)
                 for s, r in zip(shape, ranks)])
        else:
            self.weight = nn.Parameter(scale * torch.randn(2, *shape))
        self._mats = {}

    def complex_weight(self) -> torch.Tensor:
        """The (cin, cout, 2 modes, modes) complex weights; cached for inference.

        Rebuilding the Tucker product costs as much as the layer at 128^2, so without
        autograd the result is kept until a parameter changes (tracked by version).
        """
        if torch.is_grad_enabled():
            return self._build_weight()
        key = tuple((p.data_ptr(), p._version) for p in self.parameters())
        cached = getattr(self, "_weight_cache", None)
        if cached is None or cached[0] != key:
            self._weight_cache = (key, self._build_weight())
        return self._weight_cache[1]

    def _build_weight(self) -> torch.Tensor:
        if self.tucker > 0:
            core = torch.complex(self.core[0], self.core[1])
            f = [torch.complex(p[0], p[1]) for p in self.factors]
            return torch.einsum("abcd,ia,ob,xc,yd->ioxy", core, f[0], f[1], f[2], f[3])
        return torch.complex(self.weight[0], self.weight[1])

    def _truncated_weight(self, mh, mw):
        """The weights of the kept modes when the input has fewer than ``modes``."""
        W = self.complex_weight()
        if mh < self.modes or mw < self.modes:
            rows = torch.cat([torch.arange(mh), torch.arange(2 * self.modes - mh, 2 * self.modes)])
            W = W[:, :, rows, :mw]
        return W

    def _split_weight(self, mh, mw):
        """Real and imaginary parts of :meth:`_truncated_weight`, cached (inference only:
        ``complex_weight`` returns the same tensor until a parameter changes)."""
        base = self.complex_weight()
        cached = getattr(self, "_split_cache", None)
        if cached is None or cached[0] is not base or cached[1] != (mh, mw):
            W = self._truncated_weight(mh, mw)
            self._split_cache = (base, (mh, mw), W.real.contiguous(), W.imag.contiguous())
        return self._split_cache[2], self._split_cache[3]

    def _transform(self, h, w, mh, mw, device):
        key = (h, w, mh, mw, device)
        if key not in self._mats:
            ch, sh = _dft_mats(h, h, device)
            rows = torch.cat([torch.arange(mh), torch.arange(h - mh, h)]) if mh < h else torch.arange(h)
            ch, sh = ch[rows], sh[rows]                       # (2mh, h)
            cw, sw = _dft_mats(w, mw, device)                 # (mw, w)
            # inverse along W for a half spectrum: weight 2 except DC (and Nyquist)
            cinv = torch.full((mw,), 2.0, device=device)
            cinv[0] = 1.0
            if w % 2 == 0 and mw == w // 2 + 1:
                cinv[-1] = 1.0
            self._mats[key] = (ch, sh, cw, sw, cinv / (h * w))
            if len(self._mats) > 16:
                self._mats.pop(next(iter(self._mats)))
        return self._mats[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        mh = min(self.modes, h // 2)
        mw = min(self.modes, w // 2 + 1)
        ch, sh, cw, sw, cinv = self._transform(h, w, mh, mw, x.device)
        # forward DFT: X = sum x * exp(-i(.)) = (C - iS) along W, then along H
        xr = x @ cw.T                                      # (b,c,h,mw)
        xi = -(x @ sw.T)
        yr = ch @ xr + sh @ xi                             # (C - iS)(xr + i xi)
        yi = ch @ xi - sh @ xr
        if b == 1 and not torch.is_grad_enabled():
            # one image at inference: the per-frequency channel mix as broadcast real
            # products summed over input channels is ~4x faster than the complex einsum
            # in chunks of output channels: the same sums, 2 MB products cut to a quarter
            # (docs/decisions.md#fresh-pages)
            Wr, Wi = self._split_weight(mh, mw)            # (cin, cout, 2mh, mw) each
            a, c = yr.unsqueeze(2), yi.unsqueeze(2)        # (1, cin, 1, 2mh, mw)
            Yr = yr.new_empty((1, self.cout, 2 * mh, mw))
            Yi = yr.new_empty((1, self.cout, 2 * mh, mw))
            for o in range(0, self.cout, MIX_CHUNK):
                wr, wi = Wr[:, o:o + MIX_CHUNK], Wi[:, o:o + MIX_CHUNK]
                torch.sum(a * wr - c * wi, 1, out=Yr[:, o:o + MIX_CHUNK])
                torch.sum(a * wi + c * wr, 1, out=Yi[:, o:o + MIX_CHUNK])
        else:
            Y = torch.einsum("bixy,ioxy->boxy", torch.complex(yr, yi), self._truncated_weight(mh, mw))
            Yr, Yi = Y.real, Y.imag
        # inverse: real part of sum_k Y exp(+i(.)), with the half-spectrum weights
        Yr, Yi = Yr * cinv, Yi * cinv
        zr = ch.T @ Yr - sh.T @ Yi                         # (C + iS)^T along H
        zi = ch.T @ Yi + sh.T @ Yr
        return zr @ cw - zi @ sw                            # real part along W


def spectral_conv_reference(x: torch.Tensor, layer: SpectralConv2d) -> torch.Tensor:
    """The same operation via torch.fft (for tests)."""
    b, c, h, w = x.shape
    mh = min(layer.modes, h // 2)
    mw = min(layer.modes, w // 2 + 1)
    X = torch.fft.rfft2(x)
    W = layer.complex_weight()
    out = torch.zeros(b, layer.cout, h, w // 2 + 1, dtype=X.dtype)
    out[:, :, :mh, :mw] = torch.einsum("bixy,ioxy->boxy", X[:, :, :mh, :mw], W[:, :, :mh, :mw])
    out[:, :, h - mh:, :mw] = torch.einsum(
        "bixy,ioxy->boxy", X[:, :, h - mh:, :mw], W[:, :, 2 * layer.modes - mh:, :mw])
    return torch.fft.irfft2(out, s=(h, w))


# ---------------------------------------------------------------- FNO, attention

class FNO(nn.Module):
    """Lifting MLP -> Fourier layers (spectral conv + pointwise skip, GELU) -> projection."""

    def __init__(self, cfg: NetConfig, cin: int = 4, cout: int = 1):
        super().__init__()
        self.lift = nn.Sequential(nn.Conv2d(cin, cfg.proj, 1), nn.GELU(), nn.Conv2d(cfg.proj, cfg.width, 1))
        self.spectral = nn.ModuleList(
            [SpectralConv2d(cfg.width, cfg.width, cfg.modes, cfg.tucker) for _ in range(cfg.layers)])
        self.skip = nn.ModuleList([nn.Conv2d(cfg.width, cfg.width, 1) for _ in range(cfg.layers)])
        self.project = nn.Sequential(nn.Conv2d(cfg.width, cfg.proj, 1), nn.GELU(), nn.Conv2d(cfg.proj, cout, 1))
        self.pad = cfg.pad

    def forward(self, x):
        v = self.lift(x)
        h, w_ = v.shape[-2:]
        ph, pw = int(round(self.pad * h)), int(round(self.pad * w_))
        if ph or pw:
            v = F.pad(v, (0, pw, 0, ph))
        for i, (k, w) in enumerate(zip(self.spectral, self.skip)):
            v = k(v) + w(v)
            if i < len(self.spectral) - 1:
                v = F.gelu(v)
        return self.project(v[..., :h, :w_])


class AttentionNet(nn.Module):
    """Three-layer conv extractor + three-layer conv regressor -> omega in [0, 1]."""

    def __init__(self, cfg: NetConfig, cin: int = 5):
        super().__init__()
        c = cfg.att_width
        self.extract = nn.Sequential(
            nn.Conv2d(cin, c, 3, padding=1), nn.GELU(),
            nn.Conv2d(c, c, 3, padding=1), nn.GELU(),
            nn.Conv2d(c, c, 3, padding=1), nn.GELU())
        self.regress = nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1), nn.GELU(),
            nn.Conv2d(c, c, 3, padding=1), nn.GELU(),
            nn.Conv2d(c, 1, 3, padding=1))

    def forward(self, feat, mask):
        raw = self.regress(self.extract(feat))
        return minmax_in_mask(raw, mask)


EDGE_FEATURES = 15


class EdgeNet(nn.Module):
    """Full-resolution discontinuity net: BiNI's per-axis weights from z_R and the normals.

    Input (:func:`edge_features`): the one-sided residuals of the network's upsampled z_R
    at two compressions, BiNI's comparison of its squared differences, the normals, the
    cosine between normal and viewing ray (small at occluding contours) and the mask.
    Dilated 3x3 convolutions (receptive field 45 px at the default dilations) locate the
    jump that z_R smears over a coarse pixel's width. Output: logits of w_u-, w_v-
    (BiNI's convention: w_u+ = 1 - w_u-), trained against BiNI's weights computed from
    the true unknown (:func:`bini_targets`) or through the solve.
    """

    def __init__(self, cfg: NetConfig):
        super().__init__()
        layers, cin = [], EDGE_FEATURES
        for d in cfg.edge_dilations:
            layers += [nn.Conv2d(cin, cfg.edge_width, 3, padding=int(d), dilation=int(d)), nn.GELU()]
            cin = cfg.edge_width
        layers.append(nn.Conv2d(cin, 2, 1))
        self.net = nn.Sequential(*layers)
    @staticmethod
    def radius(cfg: NetConfig) -> int:
        """Pixels beyond which the input does not change an output (crop margin)."""
        return sum(int(d) for d in cfg.edge_dilations) + 1

    def forward(self, z, lv: "Level"):
        """Logits of w_u-, w_v- (B,2,H,W), 0 outside the mask."""
        feat = edge_features(z, lv)
        # channels-last: faster in oneDNN, same output (docs/decisions.md#edge-net)
        x = feat.contiguous(memory_format=torch.channels_last)
        return self.net(x).contiguous() * lv.mask


def edge_features(z, lv: "Level"):
    """The edge net's input (B, EDGE_FEATURES, H, W), 0 outside the mask.

    Without autograd (inference) the same numbers are written into one tensor with
    in-place steps: a third of the temporaries, which a new process pays for in page
    faults (docs/decisions.md#fresh-pages).
    """
    m = lv.mask
    d, has = one_sided_differences(z, lv)
    r = add_normals(d, has, lv)
    cmp = torch.tanh(square_contrast(d))
    if torch.is_grad_enabled():
        return torch.cat([_asinh(r), _asinh(20.0 * r), cmp, lv.normals, view_cosine(lv) * m, m], dim=1)
    # channels-last from the start: the edge net's layout, no copy (docs/decisions.md#edge-net)
    out = torch.empty((m.shape[0], EDGE_FEATURES) + tuple(m.shape[2:]), dtype=r.dtype, device=r.device,
                      memory_format=torch.channels_last)
    _asinh_into(r, out[:, 0:4])
    _asinh_into(r.mul_(20.0), out[:, 4:8])
    out[:, 8:10] = cmp
    out[:, 10:13] = lv.normals
    torch.mul(view_cosine(lv), m, out=out[:, 13:14])
    out[:, 14:15] = m
    return out


def _asinh_into(x, out):
    """:func:`_asinh` of ``x`` written into ``out``: the same operations, in place where
    they can be (no autograd)."""
    a = x.abs()
    q = a * a
    den = q + 1.0
    den.sqrt_().add_(1.0)
    q.div_(den).add_(a).log1p_()
    torch.mul(torch.sign(x), q, out=out)


def _asinh(x):
    """asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): equal to torch.asinh to
    float32 rounding (3e-8) and 2.6x faster on the CPU (torch's asinh: 3.8 ms per 0.4M values)."""
    a = x.abs()
    return torch.sign(x) * torch.log1p(a + a * a / (1.0 + torch.sqrt(1.0 + a * a)))
