"""The FNIN network (Stage I) in torch.

- :mod:`.config` — :class:`~.config.NetConfig` and its JSON form (legacy keys).
- :mod:`.layers` — spectral convolution, FNO, attention net, edge net.
- :mod:`.fnin_net` — :class:`~.fnin_net.FNINet`: the coarse-to-fine pyramid.
- :mod:`.geometry` — the torch twin of the camera maths.
- :mod:`.weights` — loading the weights, choosing the device.
- :mod:`.inference` — one input through the network, numpy in and out.

This ``__init__`` holds only the weights' location and the device names, so that reading
it does not import torch,
and lets torch's large tensors use huge pages before any is made
(:func:`fnin_cli.resources.torch_hugepages`).
"""

from pathlib import Path

from ..resources import torch_hugepages

torch_hugepages()

# --device values: auto picks cuda, then mps, then cpu (weights.resolve_device)
ACCELERATORS = ("cuda", "mps")
DEVICES = ("auto", "cpu") + ACCELERATORS


def unknown_device(device: str) -> str:
    """The one message for a --device value not in ``DEVICES``."""
    return f"unknown device '{device}'; use {', '.join(DEVICES[:-1])} or {DEVICES[-1]}"


WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "fnin.safetensors"   # the bundled model: the one place for its path
