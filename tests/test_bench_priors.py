"""`fnin bench --prior` generators of issue 50 (fnin_cli.bench.priors): wrong patches,
monocular-like depth and disparity, sigma not given; the prior alone after its best fit,
and the error where the prior was right."""

from __future__ import annotations

import numpy as np
import pytest

from fnin_cli.bench.cases import Case
from fnin_cli.bench.priors import PATCH_SHARE, PATCHES, case_seed, fit_to_truth, make_prior
from fnin_cli.errors import FninError
from fnin_cli.prior import DepthPrior, default_sigma

CASE = Case("persp-64", "synthetic", seed=9, size=64)


@pytest.fixture(scope="module")
def scene():
    return CASE.load()


def test_patches_are_three_discs_shifted_back_on_a_noisy_map(scene):
    inp, gt = scene
    p = make_prior("patches", gt, inp, 7)
    mask = inp.mask & np.isfinite(gt)
    wrong = p.meta["wrong"]
    n = int(mask.sum())
    assert not (wrong & ~mask).any()
    # three discs of 5% each, overlapping at most
    assert round(PATCH_SHARE * n) <= wrong.sum() <= PATCHES * round(PATCH_SHARE * n)
    median = float(np.median(gt[mask]))
    r = (p.depth - gt)
    assert float(np.mean(r[wrong])) == pytest.approx(0.02 * median, abs=3 * p.sigma / np.sqrt(wrong.sum()) + 1e-9)
    right = mask & ~wrong
    assert abs(float(np.mean(r[right]))) < 4 * p.sigma / np.sqrt(right.sum())
    assert float(np.std(r[right])) == pytest.approx(median / 1500, rel=0.1)
    again = make_prior("patches", gt, inp, 7)
    np.testing.assert_array_equal(again.depth, p.depth)
    assert (make_prior("patches", gt, inp, 8).meta["wrong"] != wrong).any()


@pytest.mark.parametrize("kind", ["relative", "disparity"])
def test_the_best_affine_fit_recovers_an_affine_prior_exactly(scene, kind):
    inp, gt = scene
    m = inp.mask & np.isfinite(gt)
    values = np.where(m, 0.7 * gt + 3.0 if kind == "relative" else 2.0 / gt - 0.4, np.nan)
    fitted, how = fit_to_truth(DepthPrior(values, np.isfinite(values).astype(float), 1.0, kind), gt, inp.mask)
    assert ("disparity" in how) == (kind == "disparity")
    np.testing.assert_allclose(fitted[m], gt[m], rtol=1e-5)


@pytest.mark.parametrize("kind, prior_kind", [("mono-depth", "relative"), ("mono-disparity", "disparity")])
def test_monocular_priors_are_warped_blurred_and_affine(scene, kind, prior_kind):
    """After the best affine fit the prior is off by about the warp (4% of the range,
    blurred), no more than that and not nothing."""
    inp, gt = scene
    p = make_prior(kind, gt, inp, 3)
    assert p.kind == prior_kind and p.block == 1
    m = inp.mask & np.isfinite(gt) & p.valid
    fitted, _ = fit_to_truth(p, gt, inp.mask)
    span = float(np.percentile(gt[m], 95) - np.percentile(gt[m], 5))
    off = float(np.mean(np.abs(fitted[m] - gt[m])))
    assert 0.002 * span < off < 0.06 * span
    raw = float(np.mean(np.abs(p.depth[m] - gt[m])))
    assert raw > 2 * off                          # the affine map is really unknown


@pytest.mark.parametrize("kind", ["dense8", "sparse"])
def test_sigma_unknown_kinds_are_the_same_draw_with_the_readers_sigma(scene, kind):
    inp, gt = scene
    given, unknown = make_prior(kind, gt, inp, 5), make_prior(f"{kind}-nosigma", gt, inp, 5)
    np.testing.assert_array_equal(unknown.depth, given.depth)
    assert unknown.sigma == default_sigma(unknown.depth, True) and unknown.sigma > 5 * given.sigma


def test_the_bench_reports_the_error_where_the_patches_prior_was_right():
    from fnin_cli.bench.report import rich_table, table_legend
    from fnin_cli.bench.runner import run_bench

    report = run_bench([CASE], ["default", "prior", "noprior"], warmup=False, prior=("patches", 0))
    recs = report["cases"][CASE.name]
    assert all("right_made_mm" in r for r in recs.values())
    assert "right_abs_made_mm" in recs["default"] and "right_abs_made_mm" not in recs["noprior"]
    # the prior alone is right to its noise where it was right, far off where it was not
    assert recs["prior"]["right_made_mm"] < 0.5 * recs["prior"]["made_mm"]
    assert recs["prior"]["prior_fit"] == "median scale"
    assert report["mean"]["default"]["right_made_mm"] == recs["default"]["right_made_mm"]
    assert "right:" in table_legend(report)
    headers = [c.header for c in rich_table(report).columns]
    assert "default\nright" in headers and "prior\nabs" in headers


def test_a_disparity_prior_is_fitted_alone_and_fused_by_integrate():
    from fnin_cli.bench.runner import run_one

    rec = run_one(CASE, "prior", prior=("mono-disparity", 0))
    assert rec["status"] == "ok" and rec["prior_fit"].startswith("affine in disparity")
    assert "abs_made_mm" not in rec and rec["cover_made_mm"] == pytest.approx(rec["made_mm"])
    fused = run_one(CASE, "default", prior=("mono-disparity", 0))
    alone = run_one(CASE, "default")
    assert fused["status"] == "ok" and "abs_made_mm" not in fused          # relative: the scale is fitted
    assert fused["made_mm"] <= 1.1 * alone["made_mm"] + 1e-6               # never worse than without beyond noise
    assert case_seed(0, "a") != case_seed(0, "b")
