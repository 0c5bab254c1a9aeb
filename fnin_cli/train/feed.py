"""Training data: batches of synthetic scenes as pyramid levels, optionally rendered ahead
in worker processes. Scene ``i`` of step ``s`` is ``scene_for(seed * 1_000_003 + s * batch + i)``:
rendered from the training split of ``cfg.meshes`` with probability ``mesh_prob`` (decided
by the seed), else procedural (``make_scene``). With an edge-net teacher (``edge_target``
"bini" or "rounds"), each scene also carries the teacher's weights, cached per scene in
``teacher_cache``: those the project's ``bini`` converges to on its normals, or those at
the end of FNIN (the run's starting weights) and ``teacher_rounds`` BiNI rounds.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import numpy as np
import torch

from .. import config as integration
from ..data.synthetic import make_scene, scene_arrays
from ..errors import FninWarning
from ..model.geometry import Level
from .config import TEACHER_TARGETS, TrainConfig

DEFAULT_TEACHER_CACHE = "runs/teacher_cache"
_MESHES = {}


def split_meshes(folder: str, validation: bool = False) -> dict:
    """The training (or validation) split of a mesh folder, {name: (V, F)}; only that
    split's files are read, once per process."""
    key = (folder, validation)
    if key not in _MESHES:
        from ..data.mesh_scenes import load_meshes, mesh_files, split_names

        names = split_names(mesh_files(folder))[1 if validation else 0]
        _MESHES[key] = load_meshes(folder, names=names) if names else {}
    return _MESHES[key]


def is_mesh_seed(seed, mesh_prob: float) -> bool:
    """Whether scene ``seed`` is rendered from meshes (a function of the seed alone)."""
    return mesh_prob > 0.0 and np.random.default_rng([int(seed), 7]).uniform() < mesh_prob


def scene_for(seed, res, stack_prob=0.0, fold_prob=0.0, meshes="", mesh_prob=0.0):
    """Scene ``seed``: rendered from the training meshes with probability ``mesh_prob``
    (decided by the seed), else procedural."""
    if meshes and is_mesh_seed(seed, mesh_prob):
        from ..data.mesh_scenes import make_mesh_scene

        return make_mesh_scene(int(seed), split_meshes(meshes), res)
    return make_scene(int(seed), res, stack_prob=stack_prob, fold_prob=fold_prob)


def teacher_weights(scene, rounds: int = 0, model: str = "") -> np.ndarray:
    """The teacher's w_u-, w_v- on the scene's (noisy) normals, as a (2, H, W) image (0
    outside the mask). ``rounds`` 0: the weights the project's own ``bini`` converges to
    from its usual start. Otherwise: BiNI's weights (k = 2) of the unknown that FNIN with
    the weights file ``model`` followed by exactly ``rounds`` BiNI rounds reaches (what
    ``fnin integrate --refine rounds`` computes)."""
    from ..camera import Camera
    from ..model.weights import load_model   # cached per process
    from ..pipeline import build_input, integrate
    from ..solvers.bini import bini_weights, integrate_bini
    from ..solvers.system import DataTerm, NormalSystem, classic_lambda

    out = np.zeros((2,) + scene.mask.shape, np.float32)
    if rounds:
        with warnings.catch_warnings():   # a scene's dropped pixels are no news to a training run
            warnings.simplefilter("ignore", FninWarning)
            inp = build_input(scene.normals, None, scene.mask, scene.K)   # may drop isolated pixels
            r = integrate(inp, "fnin", refine=rounds, device="cpu", model=load_model(model, device="cpu"),
                          config=integration.DEFAULT)
        mask, weights = inp.mask, bini_weights(NormalSystem(inp.normals, inp.mask, inp.camera), r.z[inp.mask])
    else:
        cam = Camera(scene.K, 1.0)
        mask = scene.mask
        weights = integrate_bini(NormalSystem(scene.normals, mask, cam),
                                 term=DataTerm(classic_lambda(cam, mask.shape))).weights
    out[0][mask] = weights["u-"]
    out[1][mask] = weights["v-"]
    return out


_FOLDER_KEYS, _FILE_KEYS = {}, {}


def file_key(path: str) -> str:
    """A digest of a file's bytes, once per process (a teacher made with other weights is another teacher)."""
    if path not in _FILE_KEYS:
        _FILE_KEYS[path] = hashlib.sha1(Path(path).read_bytes()).hexdigest()[:12]
    return _FILE_KEYS[path]


def mesh_folder_key(meshes: str) -> str:
    """What identifies a mesh folder's contents in a cache key: its name and a digest of
    its files' names and sizes (two folders of one name do not share teachers)."""
    if not meshes:
        return ""
    if meshes not in _FOLDER_KEYS:
        files = sorted((f.name, f.stat().st_size) for f in Path(meshes).iterdir() if f.is_file())
        _FOLDER_KEYS[meshes] = f"{Path(meshes).name}-{hashlib.sha1(repr(files).encode()).hexdigest()[:12]}"
    return _FOLDER_KEYS[meshes]


def teacher_path(teacher_cache, seed, res, stack_prob=0.0, fold_prob=0.0, meshes="", mesh_prob=0.0,
                 rounds: int = 0, model: str = "") -> Path:
    """The cache file of scene ``seed``'s teacher weights (``rounds``, ``model``: the
    rounds teacher's, see :func:`teacher_weights`; its key also holds Stage II's sliver gate
    and the rounds' edge-net prior)."""
    key = f"{int(seed)}_{res}_{stack_prob}_{fold_prob}_{mesh_prob}_{mesh_folder_key(meshes)}"
    if rounds:
        # FNIN's Stage II gate changes what the rounds start from (None: no gate, no part of the key)
        cfg = integration.DEFAULT
        gate = "" if cfg.one_shot.sliver_gate is None else f"_gate{cfg.one_shot.sliver_gate}"
        # the rounds' edge-net prior changes where they go (None: no prior, no part of the key)
        prior = "" if cfg.rounds.edge_prior is None else f"_prior{cfg.rounds.edge_prior}"
        key += f"_rounds{int(rounds)}_{file_key(model)}{gate}{prior}"
    return Path(teacher_cache) / f"{hashlib.sha1(key.encode()).hexdigest()[:16]}.npy"


def _scene(seed, res, stack_prob, fold_prob=0.0, meshes="", mesh_prob=0.0, teacher_cache=None,
           teacher_rounds: int = 0, teacher_model: str = ""):
    sc = scene_for(seed, res, stack_prob, fold_prob, meshes, mesh_prob)
    arrs = scene_arrays(sc)
    if teacher_cache is None:
        return arrs
    path = teacher_path(teacher_cache, seed, res, stack_prob, fold_prob, meshes, mesh_prob, teacher_rounds,
                        teacher_model)
    if path.exists():
        t = np.load(path)
    else:
        t = teacher_weights(sc, teacher_rounds, teacher_model)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")   # atomic: write, then rename
        np.save(tmp, t)
        os.replace(tmp, path)
    return arrs + (t,)


def make_batch(seeds, res, stack_prob: float = 0.0, device="cpu", fold_prob: float = 0.0, meshes="",
               mesh_prob=0.0, teacher_cache=None, teacher_rounds: int = 0, teacher_model: str = ""):
    """The scenes of ``seeds`` as one network input level and the true unknown (and the
    teacher's weights with ``teacher_cache``)."""
    return collate([_scene(s, res, stack_prob, fold_prob, meshes, mesh_prob, teacher_cache, teacher_rounds,
                           teacher_model) for s in seeds], device)


def teacher_args(cfg: TrainConfig) -> tuple:
    """(cache folder, rounds, weights file) of the run's teacher for :func:`_scene`
    (cache None: no teacher; rounds 0: the bini teacher). The rounds teacher runs the
    weights file whose edge net the run is fine-tuned from (``init_edges``), else ``base``."""
    if cfg.stage != "edges" or cfg.edge_target not in TEACHER_TARGETS:
        return None, 0, ""
    cache = cfg.teacher_cache or DEFAULT_TEACHER_CACHE
    if cfg.edge_target != "rounds":
        return cache, 0, ""
    return cache, cfg.teacher_rounds, cfg.init_edges or cfg.base


def collate(arrs, device="cpu"):
    """Stack :func:`synthetic.scene_arrays` outputs into (Level, true unknown) on ``device``
    (the Level carrying the object ids), plus the teacher's weights (B, 2, H, W) where the
    scenes carry them."""
    n = torch.from_numpy(np.stack([a[0] for a in arrs]))
    m = torch.from_numpy(np.stack([a[1] for a in arrs]))[:, None]
    z = torch.from_numpy(np.stack([a[2] for a in arrs]))[:, None]
    K = torch.from_numpy(np.stack([a[3] for a in arrs]))
    pix = torch.from_numpy(np.stack([a[4] for a in arrs]))
    objects = torch.from_numpy(np.stack([a[5] for a in arrs]))[:, None]
    lv = Level(n.to(device), m.to(device), K.to(device), pix.to(device), objects.to(device))
    if len(arrs[0]) > 6:
        return lv, z.to(device), torch.from_numpy(np.stack([a[6] for a in arrs])).to(device)
    return lv, z.to(device)


class SceneFeed:
    """Training batches in step order. With ``workers`` > 0, a process pool renders the
    scenes of the next ``ahead`` steps while the current one trains; the scenes are the
    same either way (each is a function of its seed), so the run stays deterministic."""

    def __init__(self, cfg: TrainConfig, ahead: int = 4):
        self.cfg, self.ahead = cfg, ahead
        self.pool = None
        self.pending = {}
        if cfg.workers > 0:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(cfg.workers, mp_context=mp.get_context("spawn"))

    def _spec(self, step):
        cfg = self.cfg
        res = cfg.fine_res if step >= cfg.steps - cfg.fine_steps else cfg.res
        return [cfg.seed * 1_000_003 + step * cfg.batch + i for i in range(cfg.batch)], res

    def batch(self, step):
        cfg = self.cfg
        teacher = teacher_args(cfg)
        if self.pool is None:
            seeds, res = self._spec(step)
            return make_batch(seeds, res, cfg.stack_prob, cfg.device, cfg.fold_prob, cfg.meshes, cfg.mesh_prob,
                              *teacher)
        for s in range(step, min(step + self.ahead + 1, cfg.steps)):
            if s not in self.pending:
                seeds, res = self._spec(s)
                self.pending[s] = [self.pool.submit(_scene, x, res, cfg.stack_prob, cfg.fold_prob, cfg.meshes,
                                                    cfg.mesh_prob, *teacher) for x in seeds]
        return collate([f.result() for f in self.pending.pop(step)], cfg.device)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
