"""fnin_cli.prepare: one input and the run's options made ready to integrate, from Python
(the CLI's records through it: test_batch, test_cli, test_outputs, test_bad_inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from fnin_cli.batch.options import Options
from fnin_cli.camera import intrinsics
from fnin_cli.downsample import downsample_input
from fnin_cli.errors import FninError
from fnin_cli.pipeline import load_input
from fnin_cli.prepare import prepare, prior_file

from helpers_cli import write_case, write_folder


def test_a_downsampled_folder_is_load_input_then_downsample_input(tmp_path):
    folder = write_folder(tmp_path / "case")
    ready = prepare(folder, Options(method="wls", downsample=2).check())
    expected = downsample_input(load_input(folder), 2)
    np.testing.assert_array_equal(ready.inp.mask, expected.mask)
    np.testing.assert_array_equal(ready.inp.normals, expected.normals)
    np.testing.assert_array_equal(ready.inp.camera.K, expected.camera.K)
    rec = ready.record
    assert rec["downsample"] == 2 and rec["input_shape"] == [48, 48] and rec["shape"] == [24, 24]
    assert rec["pixels"] == int(expected.mask.sum())
    assert rec["camera"] == "perspective"
    assert rec["mask_source"] == str(folder / "mask.png")
    assert rec["camera_source"] == str(folder / "K.txt")
    assert list(ready.record) == ["convention", "mask_source", "camera_source", "downsample", "input_shape",
                                  "shape", "camera", "pixels"]
    assert set(ready.seconds) == {"check", "load"} and ready.seconds["load"] >= ready.seconds["check"]
    assert ready.depth_at is None and ready.prior is None


def test_fx_builds_the_camera_from_the_maps_size(tmp_path):
    paths = write_case(tmp_path, with_K=False)
    ready = prepare(paths["normals"], Options(method="wls", mask=str(paths["mask"]), fx=100.0, cy=20.0).check())
    np.testing.assert_array_equal(ready.inp.camera.K, intrinsics((48, 48), 100.0, cy=20.0))
    assert ready.inp.camera.K[0, 2] == 23.5 and ready.inp.camera.K[1, 2] == 20.0
    assert ready.record["camera_source"] == "--fx/--fy/--cx/--cy"
    assert ready.record["mask_source"] == str(paths["mask"])
    assert ready.inp.source == str(paths["normals"])


def test_pins_and_prior_are_taken_to_the_reduced_map(tmp_path):
    paths = write_case(tmp_path)
    np.save(tmp_path / "n_prior.npy", np.linspace(2.0, 3.0, 48 * 48).reshape(48, 48))
    opts = Options(method="wls", mask=str(paths["mask"]), K=str(paths["K"]), downsample=4,
                   depth_at=(10, 7, 2.5), depth_prior=str(tmp_path / "{stem}_prior.npy")).check()
    ready = prepare(paths["normals"], opts)
    assert ready.depth_at == [(2, 1, 2.5)]
    assert ready.prior.depth.shape == (12, 12)
    got = ready.prior.depth[np.isfinite(ready.prior.depth)]
    assert got.size and 2.0 <= got.min() and got.max() <= 3.0      # block means of the ramp
    assert ready.record["prior_source"] == str(tmp_path / "n_prior.npy")
    # the template's {stem} is the name given (a batch's output name), else the input's own
    assert prior_file(paths["normals"], opts, name="other") == tmp_path / "other_prior.npy"


def test_a_failed_preparation_leaves_in_the_record_what_it_learned(tmp_path):
    paths = write_case(tmp_path)
    opts = Options(method="wls", mask=str(paths["mask"]), K=str(paths["K"]),
                   depth_prior=str(tmp_path / "missing.npy")).check()
    rec = {"seconds": {}}
    with pytest.raises(FninError, match="depth prior not found"):
        prepare(paths["normals"], opts, record=rec)
    assert rec["shape"] == [48, 48] and rec["camera"] == "perspective" and rec["pixels"] > 0
    assert "prior_source" not in rec and "load" not in rec["seconds"]

    rec = {"seconds": {}}
    with pytest.raises(FninError, match="file not found"):
        prepare(tmp_path / "absent.png", Options(method="wls").check(), record=rec)
    assert rec == {"seconds": {}}
