"""The package layout's promises: torch stays out of wls runs, one registry, one format list."""

from __future__ import annotations

from pathlib import Path

from fnin_cli import METHODS
from fnin_cli.batch.memory import (BASE_CLASSIC, BASE_NETWORK, BYTES_FRAME, BYTES_LOAD, BYTES_NETWORK_FRAME,
                                   estimate_bytes)
from fnin_cli.io import FORMATS, NORMAL_SUFFIXES, probe_shape
from fnin_cli.solvers.registry import BY_NAME, DEFAULT_METHOD, NETWORK_METHODS, REGISTRY

from helpers_cli import assert_run_leaves_out  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def test_a_wls_run_does_not_import_torch(tmp_path):
    out = tmp_path / "m.ply"
    assert_run_leaves_out("torch", [SAMPLES / "dome", "-o", out, "--method", "wls", "--quiet"], out)


def test_registry_is_the_one_method_list():
    assert METHODS == tuple(m.name for m in REGISTRY)
    assert DEFAULT_METHOD in METHODS and BY_NAME[DEFAULT_METHOD].needs_network
    assert set(NETWORK_METHODS) == {"fnin", "fnin-s", "fnin-stage1"}
    for m in REGISTRY:   # the memory estimate reads every method's bytes per pixel
        base, image = (BASE_NETWORK, BYTES_LOAD + BYTES_FRAME + BYTES_NETWORK_FRAME) if m.needs_network else (
            BASE_CLASSIC, BYTES_LOAD + BYTES_FRAME)
        assert estimate_bytes((100, 100), m.name, mesh=False) == base + 100 * 100 * (image + m.bytes_per_pixel)


def test_every_format_probes_its_header(tmp_path):
    """The memory pre-check's header probe comes from the format objects: each one answers."""
    import numpy as np

    from fnin_cli.io import write_array

    assert NORMAL_SUFFIXES == tuple(s for f in FORMATS for s in f.suffixes)
    for suf in NORMAL_SUFFIXES:
        path = write_array(tmp_path / f"a{suf}", np.zeros((7, 5), np.float32))
        assert probe_shape(path) == (7, 5), suf
