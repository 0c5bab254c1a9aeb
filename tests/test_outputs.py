"""Predictable outputs and progress (issue 16, items 3 and 5): side-output names, the
depth PNG's stored scale, labelled previews, interrupted runs, the live status."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers_cli import invoke, write_case


def test_side_outputs_follow_the_stem_of_o(tmp_path):
    c = write_case(tmp_path / "in", seed=2, name="dome")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "-o", out / "dome_bini.ply", "--depth", ".npy", "--weights", ".exr", "--preview", ".png"])
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dome_bini.ply", "dome_bini_depth.npy",
                                                     "dome_bini_preview.png", "dome_bini_weights.exr"]


def test_side_outputs_with_out_dir_follow_the_input(tmp_path):
    c = write_case(tmp_path / "in", seed=2, name="dome")
    out = tmp_path / "out"
    out.mkdir()
    r = invoke(["integrate", c["normals"], "--mask", c["mask"], "--K", c["K"], "--method", "wls",
                "--out-dir", out, "--format", "obj", "--depth", ".npy", "--weights", "{stem}_w.npy"])
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dome.obj", "dome_depth.npy", "dome_w.npy"]
