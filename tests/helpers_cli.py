"""Small inputs for the CLI tests: 48x48 synthetic scenes written in the file formats
users have (16-bit PNG + mask + K.txt, DiLiGenT-layout folders, .npy/.exr)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from fnin_cli import io
from fnin_cli.cli.app import app
from fnin_cli.data.synthetic import make_scene

# seeds of make_scene(seed, 48): perspective with most of the frame masked, and orthographic
PERSP_SEEDS = (2, 4, 6, 7, 10, 12, 15, 18, 19, 21, 23, 30, 35, 37, 38, 0, 5, 9, 14, 24)
ORTHO_SEEDS = (11, 25, 29)
SIZE = 48


def scene(seed: int, size: int = SIZE):
    return make_scene(seed, size)


def write_case(folder, seed: int = 2, name: str = "n", suffix: str = ".png", with_mask: bool = True,
               with_K: bool = True, size: int = SIZE) -> dict:
    """Normals (file convention 'ps'), mask.png and K.txt of one scene; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    s = scene(seed, size)
    paths = {"normals": folder / f"{name}{suffix}"}
    io.write_normal_map(paths["normals"], s.normals, force=True)
    if with_mask:
        paths["mask"] = folder / f"{name}_mask.png"
        io.write_png(paths["mask"], (s.mask * 255).astype(np.uint8))
    if with_K and s.K is not None:
        paths["K"] = folder / f"{name}_K.txt"
        np.savetxt(paths["K"], s.K)
    paths["scene"] = s
    return paths


def write_folder(folder, seed: int = 2, size: int = SIZE) -> Path:
    """A DiLiGenT/BiNI-layout folder: normal_map.png (16-bit), mask.png, K.txt."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    s = scene(seed, size)
    io.write_normal_map(folder / "normal_map.png", s.normals, force=True)
    io.write_png(folder / "mask.png", (s.mask * 255).astype(np.uint8))
    if s.K is not None:
        np.savetxt(folder / "K.txt", s.K)
    return folder


def invoke(args, cwd=None):
    """Run `fnin ARGS` in-process; returns click's Result (stdout and stderr apart)."""
    runner = CliRunner()
    old = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=True)
    finally:
        os.chdir(old)


def run_fnin(args, cwd=None, timeout=120, **kw):
    """Run the real `fnin` console entry in a subprocess (exit codes, signals, --jobs)."""
    cmd = [sys.executable, "-c", "from fnin_cli.cli import main; main()", *[str(a) for a in args]]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


def assert_no_escape(result):
    """A CliRunner result ended through typer.Exit / SystemExit, not an escaped exception."""
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), f"escaped: {exc!r}\n{result.stderr}"
    assert "Traceback" not in result.stderr


def write_random_model(path) -> Path:
    """An untrained FNIN network saved like `fnin train` does (seeded): tests the
    plumbing of --method fnin without depending on the bundled weights."""
    import json

    import torch
    from safetensors.torch import save_file

    from fnin_cli.model.fnin_net import FNINet
    from fnin_cli.model.config import NetConfig

    torch.manual_seed(0)
    cfg = NetConfig()
    model = FNINet(cfg)
    save_file({k: v.detach().contiguous().float() for k, v in model.state_dict().items()}, str(path),
              metadata={"net": json.dumps(cfg.to_dict())})
    return Path(path)


def assert_run_leaves_out(module: str, args, out_file):
    """Run `fnin integrate ARGS` in a fresh interpreter (through the Typer app, which
    returns) and assert that it succeeded, wrote ``out_file`` and never imported ``module``."""
    code = ("import sys\nfrom fnin_cli.cli import app\nsys.argv = ['fnin', 'integrate', *sys.argv[2:]]\n"
            "try:\n    app()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "assert sys.argv[1] not in sys.modules, sys.argv[1] + ' imported'\nprint('left out')")
    r = subprocess.run([sys.executable, "-c", code, module, *[str(a) for a in args]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "left out" in r.stdout, r.stderr[-2000:]
    assert Path(out_file).stat().st_size > 1000
