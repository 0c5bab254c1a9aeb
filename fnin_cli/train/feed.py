"""Training data: batches of synthetic scenes as pyramid levels, optionally rendered ahead
in worker processes. Scene ``i`` of step ``s`` is ``make_scene(seed * 1_000_003 + s * batch + i)``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..data.synthetic import make_scene, scene_arrays
from ..model.geometry import Level


def _scene(seed, res, stack_prob, fold_prob=0.0):
    return scene_arrays(make_scene(int(seed), res, stack_prob=stack_prob, fold_prob=fold_prob))


def make_batch(seeds, res, stack_prob: float = 0.0, device="cpu", fold_prob: float = 0.0):
    """The scenes of ``seeds`` as one network input level and the true unknown."""
    return collate([_scene(s, res, stack_prob, fold_prob) for s in seeds], device)


def collate(arrs, device="cpu"):
    """Stack :func:`synthetic.scene_arrays` outputs into (Level, true unknown) on ``device``."""
    n = torch.from_numpy(np.stack([a[0] for a in arrs]))
    m = torch.from_numpy(np.stack([a[1] for a in arrs]))[:, None]
    z = torch.from_numpy(np.stack([a[2] for a in arrs]))[:, None]
    K = torch.from_numpy(np.stack([a[3] for a in arrs]))
    pix = torch.from_numpy(np.stack([a[4] for a in arrs]))
    return Level(n.to(device), m.to(device), K.to(device), pix.to(device)), z.to(device)


class SceneFeed:
    """Training batches in step order. With ``workers`` > 0, a process pool renders the
    scenes of the next ``ahead`` steps while the current one trains; the scenes are the
    same either way (each is a function of its seed), so the run stays deterministic."""

    def __init__(self, cfg: "TrainConfig", ahead: int = 4):
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
        if self.pool is None:
            seeds, res = self._spec(step)
            return make_batch(seeds, res, cfg.stack_prob, cfg.device, fold_prob=cfg.fold_prob)
        for s in range(step, min(step + self.ahead + 1, cfg.steps)):
            if s not in self.pending:
                seeds, res = self._spec(s)
                self.pending[s] = [self.pool.submit(_scene, x, res, cfg.stack_prob, cfg.fold_prob) for x in seeds]
        return collate([f.result() for f in self.pending.pop(step)], cfg.device)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
