"""Training configuration (:class:`TrainConfig`) and its JSON form.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..config import DEFAULT
from ..errors import FninError
from ..model.config import NetConfig, net_config

VAL_SEED0 = 900_000_000


@dataclass
class TrainConfig:
    """Everything a ``fnin train`` run depends on (with the seed, it fixes the run); JSON in the model card."""

    seed: int = 0
    steps: int = 3000
    batch: int = 8
    res: int = 128                    # training resolution (square)
    fine_res: int = 192               # last ``fine_steps`` steps at this resolution (3 scales)
    fine_steps: int = 300
    lr: float = 2e-3
    weight_decay: float = 1e-4
    decay_every: int = 200            # lr *= decay each this many steps (an "epoch")
    decay: float = 0.9
    warmup: int = 50
    gamma: float = 0.25
    grad_clip: float = 1.0
    val_every: int = 100
    val_scenes: int = 24
    val_res: int = 128
    ckpt_every: int = 100
    threads: int = 2
    stack_prob: float = 0.0           # share of stacked scenes (synthetic.make_scene)
    fold_prob: float = 0.0            # share of fold (self-occluding surface) scenes
    device: str = "cpu"               # cpu or cuda (TF32 off, so CPU and GPU losses agree)
    workers: int = 0                  # processes generating scenes ahead (0: in the loop)
    stage: str = "network"            # "network" (Stage I) or "edges" (edge net on a frozen Stage I)
    base: str = ""                    # edges: the weights it starts from
    init_edges: str = ""              # edges: start from this file's edge net (fine-tuning; "" = fresh)
    side: int = DEFAULT.one_shot.network_side   # edges: network cap giving z_R, as at inference
    edge_alpha: float = 10.0          # edges: extra loss weight on confident targets (|2t - 1|)
    edge_objective: str = "bce"       # edges: "bce" (BiNI's weights of the true unknown as targets) or
                                      # "solve" (Stage II's error, differentiated through the solve)
    solve_workers: int = 0            # edges, "solve": processes for the per-scene solves (0: in
                                      # the loop; the same numbers either way)
    solve_bce: float = 0.0            # edges, "solve": plus this times the "bce" loss (an anchor to
                                      # BiNI's weights where the solve's error says little)
    solve_cap: float = 0.0            # edges, "solve": an object whose relative error exceeds this
                                      # counts as this, without gradient (0: no cap)
    solve_gate: float | None = DEFAULT.one_shot.sliver_gate   # edges, "solve": the sliver gate the
                                      # solve applies, as inference does (None: paired, before the gate)
    meshes: str = ""                  # a folder of meshes: its training split is rendered into scenes
    mesh_prob: float = 0.0            # share of scenes rendered from ``meshes`` (the rest procedural)
    edge_target: str = "true"         # edges, the cross-entropy's targets: "true" (BiNI's weights of the
                                      # true unknown), "bini" (the weights BiNI converges to on the
                                      # scene's normals) or "rounds" (BiNI's weights at the end of FNIN
                                      # from the run's start and ``teacher_rounds`` BiNI rounds)
    teacher_rounds: int = 16          # edges, "rounds": how many BiNI rounds follow FNIN in the teacher
    teacher_cache: str = ""           # edges, "bini"/"rounds": folder caching each scene's teacher weights
    val_mesh_scenes: int = 0          # edges: validation scenes rendered from the validation meshes
    net: NetConfig = field(default_factory=NetConfig)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        """A config from its JSON form; keys of removed experiments are accepted at their
        "off" value (``LEGACY_TRAIN_KEYS``) and refused otherwise (ValueError)."""
        d = dict(d)
        net = d.pop("net", {})
        for key, off in LEGACY_TRAIN_KEYS.items():
            if key in d and d.pop(key) not in off:
                raise ValueError(f"train config '{key}': a removed experiment; use one of {off} or drop it")
        try:
            return cls(net=net_config(net), **d)
        except FninError as exc:
            raise ValueError(str(exc)) from None

    def to_dict(self):
        return asdict(self)


# edge_target values whose runs carry a teacher's weights per scene (train.feed.teacher_weights)
TEACHER_TARGETS = ("bini", "rounds")

# keys of removed experiments (learned rounds, coarse edge branch, the context branch
# trained alone) and their "off" values
LEGACY_TRAIN_KEYS = {"init_round": ("edges", ""), "edge_train": ("all",)}


def load_config(config=None, resume=None, overrides: dict | None = None) -> TrainConfig:
    """The config of a ``fnin train`` run: a resumed run's ``config.json``, updated by the
    ``config`` file, then by ``overrides`` (command-line values; None = not given).

    Raises
    ------
    ValueError
        With the one-line message the CLI prints: unreadable file or bad keys.
    """
    cfg_dict = {}
    if resume is not None and (Path(resume) / "config.json").exists():
        cfg_dict = json.loads((Path(resume) / "config.json").read_text())
    if config is not None:
        try:
            cfg_dict.update(json.loads(Path(config).read_text()))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{config}: cannot read config ({exc})") from None
    cfg_dict.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return TrainConfig.from_dict(cfg_dict)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad config: {exc}") from None
