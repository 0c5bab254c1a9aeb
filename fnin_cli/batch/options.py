"""Options of ``fnin integrate`` (one dataclass, checked before any work).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..checks import given_decoding
from ..conventions import canonical
from ..errors import FninError
from ..model import DEFAULT_WEIGHTS, DEVICES, unknown_device
from ..inputs import ORTHO_AND_K, parse_channels
from ..mesh import MESH_AXES, RESIDUAL_CUT
from ..pipeline import run_config
from ..prior import KINDS as PRIOR_KINDS
from ..solvers.registry import BY_NAME, DEFAULT_METHOD, method_named


class UsageError(FninError):
    """A problem with the command line itself (exit code 2); nothing has been computed."""


# ------------------------------------------------------------------ options & plan

@dataclass
class Options:
    """Everything about *how* to integrate; the same for every input of a run."""

    mask: str | None = None
    K: str | None = None
    fx: float | None = None
    fy: float | None = None
    cx: float | None = None
    cy: float | None = None
    ortho: bool = False
    pixel_size: float | None = None
    convention: str = "auto"
    channels: str | None = None
    float_encoding: str = "raw"
    flip: str | None = None       # --flip: axes negated after the convention ('x', 'xy', 'none')
    allow_invalid: bool = False
    method: str = DEFAULT_METHOD
    refine: int | None = None     # None: the method's own rounds (registry)
    device: str = "auto"
    network_side: int | None = None
    bini_k: float | None = None   # --bini-k: BiNI's sigmoid sharpness (pipeline.integrate's bini_k)
    model: str | None = None
    mean_depth: float | None = None
    depth_at: tuple | None = None
    colors: bool = True
    cut: float = RESIDUAL_CUT
    mesh_axes: str | None = None  # --mesh-axes opencv|opengl (mesh.MESH_AXES); None: each format's own
    force: bool = False
    debug: bool = False
    threads: int = 1
    downsample: int = 1           # --downsample N: integrate at 1/N of the size (fnin_cli/downsample.py)
    depth_prior: str | None = None   # --depth-prior FILE or '{stem}...' template (fnin_cli/prior.py)
    prior_sigma: float | None = None
    prior_kind: str = "absolute"

    def check(self) -> "Options":
        """Reject inconsistent option values (UsageError) before any input is read."""

        try:
            method_named(self.method)
        except FninError as exc:
            raise UsageError(exc.message) from None
        try:
            if self.convention.lower() != "auto":
                self.convention = canonical(self.convention)
            else:
                self.convention = "auto"
            parse_channels(self.channels)
        except FninError as exc:
            raise UsageError(exc.message.replace("normal convention", "--convention").replace(
                "; use one of ", "; use auto or one of ")) from None
        if self.float_encoding not in ("raw", "half"):
            raise UsageError(f"unknown --float-encoding '{self.float_encoding}'; use raw or half ((n+1)/2 floats)")
        if self.flip is not None:
            try:
                given_decoding(flip=self.flip)
            except FninError as exc:
                raise UsageError(exc.message) from None
        if self.device not in DEVICES:
            raise UsageError(unknown_device(self.device))
        if self.refine is not None and self.refine < 0:
            raise UsageError(f"--refine must be 0 or more, got {self.refine}")
        if self.network_side is not None and self.network_side < 16:
            raise UsageError(f"--network-side must be 16 or more, got {self.network_side}")
        if self.bini_k is not None and not (np.isfinite(self.bini_k) and self.bini_k > 0):
            raise UsageError(f"--bini-k must be a positive number, got {self.bini_k:g}")
        if self.threads < 1:
            raise UsageError(f"--threads must be 1 or more, got {self.threads}")
        if self.downsample < 1:
            raise UsageError(f"--downsample must be 1 or more, got {self.downsample}")
        if self.prior_kind not in PRIOR_KINDS:
            raise UsageError(f"unknown --prior-kind '{self.prior_kind}'; use {', '.join(PRIOR_KINDS)}")
        if self.prior_sigma is not None and not (np.isfinite(self.prior_sigma) and self.prior_sigma > 0):
            raise UsageError(f"--prior-sigma must be a positive number, got {self.prior_sigma}")
        if (self.prior_sigma is not None or self.prior_kind != "absolute") and self.depth_prior is None:
            raise UsageError("--prior-sigma and --prior-kind need --depth-prior FILE")
        if self.depth_prior is not None and self.prior_kind == "absolute" and self.mean_depth is not None:
            raise UsageError("--mean-depth and --depth-prior both set the depth; give one of them")
        has_f = any(v is not None for v in (self.fx, self.fy, self.cx, self.cy))
        if has_f and self.fx is None:
            raise UsageError("--fy/--cx/--cy need --fx (focal length in pixels)")
        if has_f and self.K is not None:
            raise UsageError("--K and --fx/--fy/--cx/--cy both given; use one of them")
        if self.ortho and (self.K is not None or has_f):
            raise UsageError(ORTHO_AND_K)
        if self.pixel_size is not None:
            if not (np.isfinite(self.pixel_size) and self.pixel_size > 0):
                raise UsageError(f"--pixel-size must be a positive number, got {self.pixel_size}")
            if self.K is not None or has_f:
                raise UsageError("--pixel-size is for orthographic input; it does not go with --K/--fx")
        for name in ("fx", "fy"):
            v = getattr(self, name)
            if v is not None and not (np.isfinite(v) and v > 0):
                raise UsageError(f"--{name} must be a positive focal length in pixels, got {v}")
        for name in ("cx", "cy"):
            v = getattr(self, name)
            if v is not None and not np.isfinite(v):
                raise UsageError(f"--{name} must be a number, got {v}")
        if self.mesh_axes is not None:
            self.mesh_axes = self.mesh_axes.lower()
            if self.mesh_axes not in MESH_AXES:
                raise UsageError(f"unknown --mesh-axes '{self.mesh_axes}'; use {' or '.join(MESH_AXES)} "
                                 "(opengl: x right, y up, z toward the viewer)")
        if not (np.isfinite(self.cut) and self.cut > 0):
            raise UsageError(f"--cut must be a positive number, got {self.cut}")
        if self.mean_depth is not None and self.depth_at is not None:
            raise UsageError("--mean-depth and --depth-at both fix the scale; give one of them")
        if self.mean_depth is not None and not np.isfinite(self.mean_depth):
            raise UsageError(f"--mean-depth must be a number, got {self.mean_depth}")
        for opt, p in (("--mask", self.mask), ("--K", self.K), ("--model", self.model)):
            if p is not None and not Path(p).is_file():
                what = "not found" if not Path(p).exists() else "is not a file"
                raise UsageError(f"{opt} file {what}", p)
        if BY_NAME[self.method].needs_network and self.model is None and not DEFAULT_WEIGHTS.is_file():
            raise UsageError("the bundled FNIN weights are missing from this installation; pass --model PATH "
                             "(a trained .safetensors) or use --method bini or wls", DEFAULT_WEIGHTS)
        return self

    def run_config(self) -> dict:
        """The integration configuration these options run (``--show-config``; the
        ``--json`` record's "config"): :func:`fnin_cli.pipeline.run_config`."""
        return run_config(self.method, self.refine, network_side=self.network_side, bini_k=self.bini_k)


def parse_depth_at(text: str) -> tuple[int, int, float]:
    """'ROW,COL,DEPTH' -> (row, col, depth)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) != 3:
            raise ValueError
        row, col, depth = int(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        raise UsageError(f"--depth-at wants ROW,COL,DEPTH (e.g. 120,200,1.5), got '{text}'") from None
    if not np.isfinite(depth):
        raise UsageError(f"--depth-at depth must be a number, got '{parts[2]}'")
    return row, col, depth
