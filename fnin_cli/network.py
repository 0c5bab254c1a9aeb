"""Stage I of FNIN: a coarse-to-fine Fourier-neural-operator integrator with attention.

Per scale (SPEC "Stage I"): the residual between the normals' gradient field g and the
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
  in addition to SPEC's ``dis`` feature, so it need not learn to cancel the slope.

Beyond the paper, an optional *edge net* (``EdgeNet``, ``NetConfig.edge_width`` > 0) gives
Stage II its weights: dilated convolutions at full resolution over the upsampled z_R and
the normals, trained (``fnin train``, stage ``edges``, Stage I frozen) against BiNI's
weights of the true surface. Why: the attention map above, learnt only through the
detail-weighted loss, left Stage II no better than uniform weights on DiLiGenT (4.216 vs
4.226 mm), while BiNI's weights of the true depth with the network's z_R give 1.72 mm.

Everything is batched over (B, C, H, W) float32 tensors.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .errors import FninError


@dataclass
class NetConfig:
    width: int = 32          # hidden channels of the FNO
    modes: int = 16          # kept Fourier modes per dimension (per corner along rows)
    layers: int = 4          # Fourier layers
    proj: int = 64           # hidden width of lifting / projection MLPs
    tucker: float = 0.5      # 0 = dense spectral weights; else Tucker rank fraction per mode
    att_width: int = 16      # attention CNN width
    min_side: int = 64       # pyramid: halve until the short side is <= this
    pad: float = 0.0         # zero-pad the FNO's hidden field by this fraction of each side
                             # (the domain is not periodic; 0 = the shipped model)
    edge_width: int = 0      # full-resolution edge net width (0: none; Stage II uses omega)
    edge_dilations: tuple = (1, 2, 4, 8, 4, 2, 1)   # its 3x3 conv layers (receptive field 45 px)

    def to_dict(self):
        return asdict(self)


# Config keys of experiments that were never shipped (learned reweighting rounds, the edge
# net's coarse branch). Weights written while they existed carry them at their "off" value.
LEGACY_NET_KEYS = ("edge_rounds", "edge_coarse", "edge_coarse_dilations")


def net_config(net: dict) -> NetConfig:
    """A :class:`NetConfig` from its JSON form (weights metadata, train configs).

    Lists become tuples. Legacy keys (``LEGACY_NET_KEYS``) are accepted at their "off"
    value (0; any dilations when ``edge_coarse`` is 0) and dropped.

    Raises
    ------
    FninError
        If a legacy key switches on a removed feature, or a key is unknown.
    """
    net = dict(net)
    legacy = {k: net.pop(k) for k in LEGACY_NET_KEYS if k in net}
    for key in ("edge_rounds", "edge_coarse"):
        if legacy.get(key, 0) not in (0, None):
            raise FninError(f"network config '{key}': {legacy[key]} needs a feature removed from fnin "
                            f"(learned rounds / coarse edge branch); only 0 is supported")
    unknown = sorted(set(net) - set(NetConfig.__dataclass_fields__))
    if unknown:
        raise FninError(f"unknown network config key(s) {', '.join(unknown)}")
    return NetConfig(**{k: tuple(v) if k.endswith("dilations") else v for k, v in net.items()})


# ---------------------------------------------------------------- spectral conv

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
            Wr, Wi = self._split_weight(mh, mw)            # (cin, cout, 2mh, mw) each
            a, c = yr.unsqueeze(2), yi.unsqueeze(2)        # (1, cin, 1, 2mh, mw)
            Yr = (a * Wr - c * Wi).sum(1)
            Yi = (a * Wi + c * Wr).sum(1)
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
        # channels-last: the 12-channel convolutions run faster in oneDNN that way (edge
        # net on the 9 DiLiGenT objects, 1 thread: 0.60 -> 0.46 s, same output)
        x = feat.contiguous(memory_format=torch.channels_last)
        return self.net(x).contiguous() * lv.mask


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


def edge_features(z, lv: "Level"):
    """The edge net's input (B, EDGE_FEATURES, H, W), 0 outside the mask."""
    m = lv.mask
    d, has = one_sided_differences(z, lv)
    r = _add_normals(d, has, lv)
    cmp = torch.tanh(_square_contrast(d))
    return torch.cat([_asinh(r), _asinh(20.0 * r), cmp, lv.normals, view_cosine(lv) * m, m], dim=1)


def _asinh(x):
    """asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): equal to torch.asinh to
    float32 rounding (3e-8) and 2.6x faster on the CPU (torch's asinh: 3.8 ms per 0.4M values)."""
    a = x.abs()
    return torch.sign(x) * torch.log1p(a + a * a / (1.0 + torch.sqrt(1.0 + a * a)))


def minmax_in_mask(x, mask, eps=1e-6):
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


def _add_normals(d, has, lv: Level):
    """Residuals from :func:`one_sided_differences`' output: d + n_x (u) / n_y (v) where defined."""
    n = torch.cat([lv.normals[:, 0:1], lv.normals[:, 0:1], lv.normals[:, 1:2], lv.normals[:, 1:2]], dim=1)
    return d + n * has


def one_sided(z, lv: Level):
    """Residuals a * (one-sided difference) + n per direction (B,4,H,W), 0 where undefined."""
    d, has = one_sided_differences(z, lv)
    return _add_normals(d, has, lv)


def _square_contrast(d):
    """d+^2 - d-^2 per axis (B,2,H,W): what BiNI's weights are a sigmoid of."""
    sq = d * d
    return torch.cat([sq[:, 0:1] - sq[:, 1:2], sq[:, 2:3] - sq[:, 3:4]], dim=1)


def bini_targets(z, lv: Level, k: float = 2.0):
    """BiNI's w_u-, w_v- (B,2,H,W) from the unknown z: sigmoid_k(d+^2 - d-^2) per axis
    (``solvers.bini_weights`` in torch); w_u+ = 1 - w_u-, w_v+ = 1 - w_v-."""
    d, _ = one_sided_differences(z, lv)
    return torch.sigmoid(k * _square_contrast(d))


def central_grad(z, m):
    """Central differences of z per pixel, using filled values across the mask border."""
    zp = F.pad(z, (1, 1, 1, 1), mode="replicate")
    gu = 0.5 * (zp[..., 1:-1, 2:] - zp[..., 1:-1, :-2])
    gv = 0.5 * (zp[..., 2:, 1:-1] - zp[..., :-2, 1:-1])
    return gu * m, gv * m


def masked_mean(x, m):
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
    y = torch.linspace(-1, 1, h, device=device).view(1, 1, h, 1).expand(b, 1, h, w)
    x = torch.linspace(-1, 1, w, device=device).view(1, 1, 1, w).expand(b, 1, h, w)
    return x, y


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
    def edge_probabilities(self, z, lv: Level):
        """The edge net's w_u-, w_v- (B,2,H,W) for one image, run on the mask's bounding
        box widened by the receptive field's radius: the same numbers inside the mask as
        on the whole frame (which costs up to 2-3x more on DiLiGenT's frames).
        """
        margin = EdgeNet.radius(self.cfg)
        m = lv.mask[0, 0] > 0
        rows, cols = torch.nonzero(m.any(dim=1)), torch.nonzero(m.any(dim=0))
        h, w = m.shape
        if rows.numel() == 0:
            return torch.zeros(1, 2, h, w, device=z.device)
        r0, r1 = max(0, int(rows[0]) - margin), min(h, int(rows[-1]) + 1 + margin)
        c0, c1 = max(0, int(cols[0]) - margin), min(w, int(cols[-1]) + 1 + margin)
        K = lv.K.clone()
        persp = (K[:, 0, 0] > 0).to(K.dtype)
        K[:, 0, 2] -= c0 * persp
        K[:, 1, 2] -= r0 * persp
        sub = Level(lv.normals[..., r0:r1, c0:c1], lv.mask[..., r0:r1, c0:c1], K, lv.pixel)
        p = torch.sigmoid(self.edges(z[..., r0:r1, c0:c1], sub)) * sub.mask
        return F.pad(p, (c0, w - c1, r0, h - r1))

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
    pp = F.pad(P, (1, 1, 1, 1), mode="replicate")
    du = 0.5 * (pp[..., 1:-1, 2:] - pp[..., 1:-1, :-2])
    dv = 0.5 * (pp[..., 2:, 1:-1] - pp[..., :-2, 1:-1])
    n = torch.cross(dv, du, dim=1)
    return n / n.norm(dim=1, keepdim=True).clamp_min(1e-12)


def detail_weighted_loss(z, omega, z_gt, lv: Level, gamma: float = 0.25):
    """(1 - omega)|z - z_gt| + gamma * omega * |n(x) - n(x_gt)|, mean over valid pixels.

    Both unknowns are compared after removing their masked means (depth is relative).
    """
    m = lv.mask
    zg = (z_gt - masked_mean(z_gt, m)) * m
    zz = (z - masked_mean(z, m)) * m
    # inner pixels only for normals (central differences need both neighbours)
    inner = m * F.pad(m[..., 1:-1, 2:] * m[..., 1:-1, :-2] * m[..., 2:, 1:-1] * m[..., :-2, 1:-1], (1, 1, 1, 1))
    ref = masked_mean(z_gt, m)
    n_est = point_normals(backproject_t(zz + ref, lv))
    n_gt = point_normals(backproject_t(zg + ref, lv))
    dn = (n_est - n_gt).abs().sum(dim=1, keepdim=True) * inner
    dz = (zz - zg).abs()
    om = omega if omega is not None else torch.zeros_like(m)
    per = ((1 - om) * dz + gamma * om * dn) * m
    return per.sum(dim=(1, 2, 3)) / m.sum(dim=(1, 2, 3)).clamp_min(1.0)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
