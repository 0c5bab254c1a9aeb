"""Running the network on one input: numpy in, full-resolution float32 images out (the
network's own precision; consumers take their masked pixels in float64).
"""

from __future__ import annotations

import numpy as np
import torch

from ..config import DEFAULT
from .fnin_net import FNINet
from .geometry import Level


def _level_from_input(inp, device) -> Level:
    m = torch.from_numpy(np.ascontiguousarray(inp.mask))
    n = torch.from_numpy(np.ascontiguousarray(inp.normals)).to(torch.float32)
    n = torch.where(m[..., None], n, 0.0).permute(2, 0, 1)[None].contiguous()   # NaN outside -> 0
    K = inp.camera.K if inp.camera.perspective else np.zeros((3, 3))
    return Level(n.to(device), m[None, None].to(torch.float32).to(device),
                 torch.from_numpy(np.asarray(K, np.float32)[None]).to(device),
                 torch.tensor([inp.camera.pixel_size], dtype=torch.float32, device=device))


def full_float32():
    """cuDNN convolutions without TF32 (PyTorch's default allows it) for the block:
    the answer must not depend on the device (docs/decisions.md#tf32)."""
    cd = torch.backends.cudnn
    return cd.flags(enabled=cd.enabled, benchmark=cd.benchmark, deterministic=cd.deterministic,
                    allow_tf32=False)


def stage1(model: FNINet, inp, device="cpu", side: int = DEFAULT.one_shot.network_side):
    """Run the network; returns (z_R, omega) as full-resolution float64 images (0 outside)."""
    z_img, om_img, _ = network_outputs(model, inp, device, side, edges=False)
    return z_img.astype(np.float64), om_img.astype(np.float64)


@torch.no_grad()
def network_outputs(model: FNINet, inp, device="cpu", side: int = DEFAULT.one_shot.network_side, edges: bool = True,
                    edge_tile: int | None = DEFAULT.one_shot.edge_tile):
    """(z_R, omega, edge weights) as full-resolution float32 images (0 outside the mask):
    no float64 copy of whole frames (at 24 MP it cost 1 s); Stage II converts the masked
    pixels.

    With ``edges`` and a model that has an edge net, the third is its w_u-, w_v- as a
    (2, H, W) image and omega (which Stage II then does not use) is None; else the third
    is None.
    """
    dev = torch.device(device) if not isinstance(device, torch.device) else device
    lv = _level_from_input(inp, dev)
    use_edges = edges and model.edges is not None
    with full_float32():
        z, omega = model.capped(lv, side, attention=not use_edges)
        p = model.edge_probabilities(z, lv, tile=edge_tile)[0].cpu().numpy() if use_edges else None
    om_img = omega[0, 0].cpu().numpy() if omega is not None else None
    return z[0, 0].cpu().numpy(), om_img, p
