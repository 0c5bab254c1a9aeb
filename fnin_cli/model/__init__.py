"""The FNIN network (Stage I) in torch.

- :mod:`.config` — :class:`~.config.NetConfig` and its JSON form (legacy keys).
- :mod:`.layers` — spectral convolution, FNO, attention net, edge net.
- :mod:`.fnin_net` — :class:`~.fnin_net.FNINet`: the coarse-to-fine pyramid.
- :mod:`.geometry` — the torch twin of the camera maths.
- :mod:`.weights` — loading the weights, choosing the device.
- :mod:`.inference` — one input through the network, numpy in and out.

This ``__init__`` holds only the weights' location, so that reading it does not import torch,
and lets torch's large tensors use huge pages before any is made
(:func:`fnin_cli.resources.torch_hugepages`).
"""

from pathlib import Path

from ..resources import torch_hugepages

torch_hugepages()

WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "fnin.safetensors"   # the bundled model: the one place for its path
