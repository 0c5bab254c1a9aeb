"""Depth priors as users have them (issue 50, the input side): 1/k maps whose sides round
down or up, sizes said as rows x cols, --prior-kind disparity read and checked, and the
priors that carry no depth (no disparity > 0, constant, under 1% of the mask) refused in
one line with nothing written."""

from __future__ import annotations

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.errors import FninError
from fnin_cli.pipeline import build_input, integrate, load_input
from fnin_cli.prior import MIN_COVER, DepthPrior, as_prior, block_factor, check_values, read_prior

from helpers_cli import invoke, write_folder

ORTHO = Camera(None, 1.0)


# ------------------------------------------------------------------ the size rule

@pytest.mark.parametrize("prior_shape, k", [
    ((64, 76), 8), ((64, 77), 8),          # 612 / 8 = 76.5: down or up
    ((256, 306), 2), ((128, 153), 4),      # exact
    ((65, 77), None), ((64, 78), None),    # 512 / 8 = 64 exactly; 78 is neither 76 nor 77
    ((512, 612), None),                    # full size is not a block
])
def test_a_block_prior_may_round_each_side_down_or_up(prior_shape, k):
    assert block_factor(prior_shape, (512, 612)) == k


@pytest.mark.parametrize("cols", [12, 13])
def test_a_prior_rounded_down_or_up_lays_each_value_on_its_block(tmp_path, cols):
    """A 50 x 49 map at 1/4: 12 or 13 columns, 12 or 13 rows; each prior value covers the
    4 x 4 block it stands for, a rounded-up side's last block cropped, a rounded-down
    side's last pixels without value."""
    h, w = 50, 49
    rows = 13
    arr = (np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) + 1.0)
    np.save(tmp_path / "p.npy", arr)
    p = read_prior(tmp_path / "p.npy", (h, w), ORTHO, sigma=0.1)
    assert p.block == 4 and p.depth.shape == (h, w)
    r, c = np.mgrid[:h, :w]
    inside = (r // 4 < rows) & (c // 4 < cols)
    want = np.where(inside, arr[np.minimum(r // 4, rows - 1), np.minimum(c // 4, cols - 1)], np.nan)
    np.testing.assert_array_equal(p.depth, want.astype(np.float32))
    assert np.all(p.share[inside] == pytest.approx(1 / 16)) and np.all(p.share[~inside] == 0)
    assert inside[:, -1].any() == (cols == 13)


def test_a_prior_of_another_size_is_refused_with_rows_x_cols(tmp_path):
    np.save(tmp_path / "p.npy", np.ones((64, 70), np.float32))
    with pytest.raises(FninError) as exc:
        read_prior(tmp_path / "p.npy", (512, 612), ORTHO)
    msg = str(exc.value)
    assert "64 x 70 (rows x cols)" in msg and "normal map is 512 x 612" in msg
    assert "1/8: 64 x 76 or 77" in msg and "row,col,depth" in msg and "\n" not in msg


def test_a_point_outside_the_map_names_its_size_as_rows_x_cols(tmp_path):
    (tmp_path / "p.csv").write_text("row,col,depth\n3,40,2.0\n")
    with pytest.raises(FninError, match=r"outside the 30 x 40 \(rows x cols\) normal map"):
        read_prior(tmp_path / "p.csv", (30, 40), ORTHO)


# ------------------------------------------------------------------ values that carry no depth

def _values(shape=(20, 20), value=None):
    d = np.linspace(1.0, 2.0, shape[0] * shape[1]).reshape(shape)
    return np.full(shape, value) if value is not None else d


@pytest.mark.parametrize("kind", ["absolute", "relative", "disparity"])
def test_a_constant_map_is_refused_for_every_kind(kind):
    with pytest.raises(FninError, match="one constant value"):
        check_values(_values(value=3.0), kind, 1)
    check_values(_values(), kind, 1)       # the same map with a shape passes


def test_constant_points_are_refused_only_where_a_fit_needs_two_values():
    pts = np.full((20, 20), np.nan)
    pts[2, 3] = pts[10, 11] = pts[15, 4] = 1500.0
    check_values(pts, "absolute", 0)       # a plane facing the camera: fine
    for kind in ("relative", "disparity"):
        with pytest.raises(FninError, match="constant"):
            check_values(pts, kind, 0)


def test_a_disparity_prior_needs_a_value_above_zero():
    with pytest.raises(FninError, match="no value > 0"):
        check_values(-_values(), "disparity", 1)
    d = _values() - 1.5                    # some <= 0 (an unknown shift): read
    check_values(d, "disparity", 1)


def test_read_prior_takes_disparity_and_keeps_its_values(tmp_path):
    disp = 1.0 / _values()
    np.save(tmp_path / "d.npy", disp.astype(np.float32))
    p = read_prior(tmp_path / "d.npy", disp.shape, Camera(np.diag([50.0, 50.0, 1.0]), None), kind="disparity")
    assert p.kind == "disparity" and p.describe().startswith("disparity prior")
    np.testing.assert_allclose(p.depth, disp, rtol=1e-6)


def _inp(n=40):
    rows, cols = np.mgrid[:n, :n]
    normals = np.zeros((n, n, 3))
    normals[..., 2] = -1.0
    mask = (rows - n / 2) ** 2 + (cols - n / 2) ** 2 < (0.45 * n) ** 2
    return build_input(normals, None, mask, None, pixel_size=1.0)


def test_a_map_covering_under_one_percent_of_the_mask_is_refused_points_are_not():
    inp = _inp()
    n = int(inp.mask.sum())
    few = int(np.ceil(MIN_COVER * n)) - 1
    rows, cols = np.nonzero(inp.mask)
    d = np.full(inp.shape, np.nan)
    d[rows[:few], cols[:few]] = np.linspace(1.0, 2.0, few)
    with pytest.raises(FninError, match=r"covers \d+ of the object's \d+ pixels"):
        as_prior(DepthPrior(d, np.isfinite(d).astype(float), 0.1, block=1), inp)
    points = DepthPrior(d, np.isfinite(d).astype(float), 0.1, block=0)
    assert as_prior(points, inp) is points
    d[rows[:few + 1], cols[:few + 1]] = np.linspace(1.0, 2.0, few + 1)
    as_prior(DepthPrior(d, np.isfinite(d).astype(float), 0.1, block=1), inp)


def test_integrate_refuses_a_disparity_prior_on_an_orthographic_map():
    """An orthographic map has no depth to invert: one line naming the kinds that fit."""
    inp = _inp()
    d = np.where(inp.mask, 1.0 / (2.0 + np.linspace(0, 1, inp.mask.size).reshape(inp.shape)), np.nan)
    with pytest.raises(FninError, match="disparity prior needs a perspective camera"):
        integrate(inp, "wls", depth_prior=DepthPrior(d, np.isfinite(d).astype(float), 0.01, kind="disparity"))


# ------------------------------------------------------------------ the command line

def _prior_file(tmp_path, folder, content):
    inp = load_input(folder)
    h, w = inp.shape
    ramp = np.linspace(1.0, 2.0, h * w).reshape(h, w)
    if content == "constant":
        arr = np.where(inp.mask, 7.0, np.nan)
    elif content == "no_positive":
        arr = np.where(inp.mask, -ramp, np.nan)
    elif content == "sliver":
        arr = np.full((h, w), np.nan)
        rows, cols = np.nonzero(inp.mask)
        arr[rows[:2], cols[:2]] = 1.0, 1.5
    else:
        arr = np.where(inp.mask, 1.0 / ramp, np.nan)
    path = tmp_path / "p.npy"
    np.save(path, arr.astype(np.float32))
    return path


@pytest.mark.parametrize("content, kind, message", [
    ("constant", "absolute", "one constant value"),
    ("constant", "relative", "one constant value"),
    ("no_positive", "disparity", "no value > 0"),
    ("sliver", "absolute", "under 1%"),
])
def test_priors_without_depth_fail_in_one_line_and_write_nothing(tmp_path, content, kind, message):
    folder = write_folder(tmp_path / "case", seed=2)
    path = _prior_file(tmp_path, folder, content)
    out = tmp_path / "d.npy"
    r = invoke(["integrate", folder, "-o", out, "--depth-prior", path, "--prior-kind", kind, "--method", "wls"])
    assert r.exit_code == 1, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in r.stderr
    assert not out.exists()


def test_a_disparity_prior_is_fitted_and_fused(tmp_path):
    folder = write_folder(tmp_path / "case", seed=2)
    path = _prior_file(tmp_path, folder, "fine")
    out = tmp_path / "d.npy"
    r = invoke(["integrate", folder, "-o", out, "--depth-prior", path, "--prior-kind", "disparity", "--method", "wls"])
    assert r.exit_code == 0, r.stderr
    assert "disparity prior fitted (affine in inverse depth) and fused" in r.stderr and out.exists()


def test_unknown_prior_kind_lists_disparity(tmp_path):
    folder = write_folder(tmp_path / "case", seed=2)
    np.save(tmp_path / "p.npy", np.ones((48, 48), np.float32))
    r = invoke(["integrate", folder, "-o", tmp_path / "d.npy", "--depth-prior", tmp_path / "p.npy",
                "--prior-kind", "inverse"])
    assert r.exit_code == 2 and "absolute, relative, disparity" in r.stderr


def test_help_names_the_csv_header_and_the_disparity_kind():
    r = invoke(["integrate", "--help"])
    text = " ".join(r.stdout.split())
    assert "header row,col,depth" in text and "disparity" in text
