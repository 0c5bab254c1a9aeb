"""Building the model a training stage starts from: fresh (Stage I) or on trained weights (edges).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import FninError
from ..model.config import NetConfig, net_config
from ..model.fnin_net import FNINet
from ..model.weights import resolve_device
from .config import TEACHER_TARGETS, TrainConfig


def read_weights(path) -> tuple:
    """(NetConfig, state) of a weights file; ValueError if ``path`` is not a safetensors
    file with a network config."""
    from safetensors import safe_open
    from safetensors.torch import load_file

    try:
        with safe_open(str(path), framework="pt") as fh:
            net = json.loads((fh.metadata() or {}).get("net", "{}"))
        return net_config(net), load_file(str(path))
    except Exception as exc:
        raise ValueError(f"{path}: cannot read FNIN weights ({str(exc).splitlines()[0][:80]})") from None


def read_base(path) -> tuple:
    """(NetConfig without edge net, Stage I state) of trained weights (any edge net in
    them is dropped: the edges stage trains its own); ValueError as read_weights."""
    from dataclasses import replace

    cfg, state = read_weights(path)
    cfg = replace(cfg, edge_width=0, edge_dilations=NetConfig.edge_dilations)
    return cfg, {k: v for k, v in state.items() if not k.startswith("edges.")}


def build_model(cfg: TrainConfig) -> FNINet:
    """A fresh model for ``cfg``. The edges stage takes Stage I from ``cfg.base`` and
    freezes it (its config replaces ``cfg.net`` except the edge-net fields)."""
    from dataclasses import replace

    if cfg.stage == "network":
        return FNINet(cfg.net)
    if cfg.stage != "edges":
        raise ValueError(f"unknown stage '{cfg.stage}' (network or edges)")
    if cfg.edge_objective not in ("bce", "solve"):
        raise ValueError(f"unknown edge_objective '{cfg.edge_objective}' (bce or solve)")
    base_net, state = read_base(cfg.base)
    cfg.net = replace(base_net, edge_width=cfg.net.edge_width, edge_dilations=cfg.net.edge_dilations)
    model = FNINet(cfg.net)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("edges.") for k in missing):
        raise ValueError(f"{cfg.base}: not Stage I weights of this network")
    if cfg.init_edges:
        try:
            start = _sub_state(cfg.init_edges, "edges.")
            model.edges.load_state_dict(start)
        except Exception as exc:
            raise ValueError(f"{cfg.init_edges}: no edge net of this shape to start from "
                             f"({str(exc).splitlines()[0][:80]})") from None
    _train_only(model, "edges.")
    return model


def _sub_state(path, prefix: str) -> dict:
    from safetensors.torch import load_file

    return {k[len(prefix):]: v for k, v in load_file(str(path)).items() if k.startswith(prefix)}


def _train_only(model, prefix):
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith(prefix))


def check_config(cfg: TrainConfig) -> None:
    """Check a config before training starts: stage, workers, device, and that ``base``
    (and ``init_edges``) fit the network.

    Raises
    ------
    ValueError
        With the one-line message the CLI prints.
    """
    if cfg.workers < 0:
        raise ValueError("--workers must be 0 or more")
    if cfg.stage not in ("network", "edges"):
        raise ValueError(f"stage '{cfg.stage}': use network or edges")
    if cfg.stage != "network":
        if not Path(cfg.base).is_file():
            raise ValueError(f"{cfg.base or '(none)'}: the {cfg.stage} stage needs --base, the trained weights "
                             "to start from")
        try:   # --base (and init_edges) fit; on a copy (build_model sets cfg.net)
            build_model(TrainConfig.from_dict(cfg.to_dict()))
        except (ValueError, OSError) as exc:
            raise ValueError(str(exc)) from None
    if not 0.0 <= cfg.mesh_prob <= 1.0:
        raise ValueError(f"mesh_prob {cfg.mesh_prob}: use a share between 0 and 1")
    if cfg.edge_target not in ("true",) + TEACHER_TARGETS:
        raise ValueError(f"edge_target '{cfg.edge_target}': use true, bini or rounds")
    if cfg.solve_cap < 0:
        raise ValueError(f"solve_cap {cfg.solve_cap}: use 0 (no cap) or a positive relative error")
    if cfg.edge_target == "rounds" and cfg.teacher_rounds < 1:
        raise ValueError(f"teacher_rounds {cfg.teacher_rounds}: the rounds teacher needs at least one round")
    if cfg.meshes:
        check_meshes(cfg.meshes)
    if cfg.device not in ("cpu", "cuda") and not cfg.device.startswith("cuda:"):
        raise ValueError(f"--device {cfg.device}: training runs on cpu or cuda")
    if cfg.device.startswith("cuda"):
        try:
            resolve_device("cuda")
        except FninError as exc:
            raise ValueError(str(exc)) from None



def check_meshes(folder) -> None:
    """A mesh folder for training: it exists, and has meshes in its training split."""
    from ..data.mesh_scenes import mesh_files, split_names

    p = Path(folder)
    if not p.is_dir():
        raise ValueError(f"{folder}: mesh folder not found (--meshes takes a folder of "
                         ".npz/.ply/.obj/.stl/.off meshes, e.g. ../shared/data/meshes)")
    names = sorted(mesh_files(p))
    if not names:
        raise ValueError(f"{folder}: no meshes (.npz/.ply/.obj/.stl/.off) in this folder")
    if not split_names(names)[0]:
        raise ValueError(f"{folder}: all its meshes ({', '.join(names)}) are validation meshes; "
                         "none to train on")
