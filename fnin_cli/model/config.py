"""The network's shape (:class:`NetConfig`) and its JSON form, with legacy keys.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..errors import FninError


@dataclass
class NetConfig:
    """The network's shape; its JSON form is stored in the weights' metadata (``net``)."""

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
# net's coarse branch and its context U-Net). Weights written while they existed carry them
# at their "off" value.
LEGACY_NET_KEYS = ("edge_rounds", "edge_coarse", "edge_coarse_dilations", "edge_context", "edge_context_width")


def net_config(net: dict) -> NetConfig:
    """A :class:`NetConfig` from its JSON form (weights metadata, train configs).

    Lists become tuples. Legacy keys (``LEGACY_NET_KEYS``) are accepted at their "off"
    value (0; any dilations when ``edge_coarse`` is 0, any width when ``edge_context`` is 0)
    and dropped.

    Raises
    ------
    FninError
        If a legacy key switches on a removed feature, or a key is unknown.
    """
    net = dict(net)
    legacy = {k: net.pop(k) for k in LEGACY_NET_KEYS if k in net}
    for key in ("edge_rounds", "edge_coarse", "edge_context"):
        if legacy.get(key, 0) not in (0, None):
            raise FninError(f"network config '{key}': {legacy[key]} needs a feature removed from fnin "
                            f"(learned rounds / coarse edge branch / context U-Net); only 0 is supported")
    unknown = sorted(set(net) - set(NetConfig.__dataclass_fields__))
    if unknown:
        raise FninError(f"unknown network config key(s) {', '.join(unknown)}")
    return NetConfig(**{k: tuple(v) if k.endswith("dilations") else v for k, v in net.items()})
