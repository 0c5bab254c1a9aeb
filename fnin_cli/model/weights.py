"""Loading FNIN weights (cached per process) and choosing the torch device: the one
place for both. The bundled file's path is ``fnin_cli.model.DEFAULT_WEIGHTS``."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import torch

from . import DEFAULT_WEIGHTS, DEVICES, unknown_device
from ..errors import FninError
from .config import net_config
from .fnin_net import FNINet


def resolve_device(device: str = "auto", fallback: bool = False) -> torch.device:
    """The torch device for ``--device``: auto (cuda, then mps, then cpu), cpu, cuda or mps.

    Raises
    ------
    FninError
        If the device is unknown or not available here (with ``fallback``: the CPU instead).
    """
    if fallback:
        try:
            return resolve_device(device)
        except FninError:
            return torch.device("cpu")
    device = (device or "auto").lower()
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise FninError("--device cuda: no CUDA GPU is available to torch here; use --device cpu or auto")
    if device == "mps" and not (getattr(torch.backends, "mps", None) is not None
                                and torch.backends.mps.is_available()):
        raise FninError("--device mps: Apple MPS is not available here; use --device cpu or auto")
    if device not in DEVICES:
        raise FninError(unknown_device(device))
    return torch.device(device)


@lru_cache(maxsize=4)
def _load(path: str, device: str) -> FNINet:
    from safetensors import safe_open
    from safetensors.torch import load_file

    p = Path(path)
    if not p.exists():
        raise FninError("FNIN weights not found; reinstall fnin or pass the path of a trained model", p)
    try:
        with safe_open(str(p), framework="pt") as fh:
            meta = fh.metadata() or {}
        cfg = net_config(json.loads(meta.get("net", "{}")))
        model = FNINet(cfg)
        model.load_state_dict(load_file(str(p)))
    except FninError as exc:
        raise FninError(exc.message, p) from None
    except Exception as exc:
        raise FninError(f"cannot load FNIN weights ({str(exc).splitlines()[0][:100]})", p) from None
    model.eval()
    return model.to(device)


def load_model(path=None, device: str = "auto") -> FNINet:
    """The FNIN network with its weights, cached per process.

    Parameters
    ----------
    path : str or Path, optional
        A ``.safetensors`` file written by ``fnin train``; default the bundled weights.
    device : str
        As :func:`resolve_device`.

    Examples
    --------
    >>> model = load_model(device="cpu")          # doctest: +SKIP
    """
    dev = resolve_device(device)
    return _load(str(path or DEFAULT_WEIGHTS), str(dev))
