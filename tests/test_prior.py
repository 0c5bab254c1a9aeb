"""Depth priors (fnin_cli.prior, --depth-prior): analytic scenes whose loose piece only the
prior can place, priors with holes, at 1/k and as points, relative priors, disagreement
reports, and every bad input the issue lists."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fnin_cli.camera import Camera
from fnin_cli.config import DEFAULT
from fnin_cli.errors import FninError
from fnin_cli import pipeline
from fnin_cli.pipeline import build_input, integrate, run_method
from fnin_cli.prior import DepthPrior, as_prior, fit_relative, prior_report, read_prior
from fnin_cli.solvers.system import DataTerm

from helpers import camera, rim_step_surface, step_surface
from helpers_cli import invoke, write_folder


def _step(kind):
    cam = camera(kind)
    surf, side = step_surface(cam)
    inp = build_input(surf.normals, None, surf.support, cam.K if cam.perspective else None,
                      pixel_size=None if cam.perspective else cam.pixel_size)
    return inp, surf.depth, side & surf.support


def _noisy(gt, sigma, seed=0, keep=None):
    d = gt + np.random.default_rng(seed).normal(0.0, sigma, gt.shape)
    if keep is not None:
        d = np.where(keep, d, np.nan)
    return DepthPrior(d, np.isfinite(d).astype(float), sigma)


@pytest.mark.parametrize("kind", ["persp", "ortho"])
@pytest.mark.parametrize("method", ["fnin", "bini"])
def test_a_piece_the_normals_cannot_place_is_placed_within_the_priors_noise(kind, method):
    """Two sheets meet only across a jump: the normals leave the right one's depth free.
    With a noisy dense prior each sheet sits where the prior puts it, the result is in the
    prior's units (no rescale), and the error is far below the prior's own noise."""
    inp, gt, right = _step(kind)
    sigma = 0.01 * float(np.nanmedian(gt))
    res = integrate(inp, method, depth_prior=_noisy(gt, sigma))
    err = res.depth - gt
    for piece in (right, inp.mask & ~right):
        assert abs(float(np.median(err[piece]))) < 0.2 * sigma
    assert float(np.nanmean(np.abs(err[inp.mask]))) < 0.5 * sigma
    assert "prior" in res.scale_note and res.prior_residual["pixels"] == int(inp.mask.sum())
    # without the prior the right sheet's depth is a guess: far off in the prior's units
    free = integrate(inp, method)
    assert float(np.nanmean(np.abs(free.depth - gt)[inp.mask])) > 10 * sigma


def test_a_prior_with_holes_still_places_every_piece_it_touches():
    inp, gt, right = _step("persp")
    sigma = 0.01 * float(np.nanmedian(gt))
    cols = np.arange(gt.shape[1])[None, :].repeat(gt.shape[0], 0)
    keep = (cols % 10 < 3)                      # 70% of the pixels without a value
    res = integrate(inp, depth_prior=_noisy(gt, sigma, keep=keep))
    assert abs(float(np.median((res.depth - gt)[right]))) < 0.3 * sigma


def test_a_prior_at_1_over_k_and_sparse_points_read_as_blocks_and_pixels(tmp_path):
    inp, gt, right = _step("persp")
    h, w = gt.shape
    k = 4
    blocks = np.nanmean(np.where(inp.mask, gt, np.nan).reshape(h // k, k, w // k, k), axis=(1, 3))
    np.save(tmp_path / "p4.npy", blocks.astype(np.float32))
    p = read_prior(tmp_path / "p4.npy", (h, w), inp.camera, sigma=0.01)
    assert p.block == k and p.share[0, 0] == pytest.approx(1 / k ** 2)
    assert np.allclose(p.depth[:k, :k], blocks[0, 0], equal_nan=True)
    rows, cols = np.nonzero(inp.mask)
    pick = np.random.default_rng(1).choice(rows.size, 60, replace=False)
    lines = ["row,col,depth"] + [f"{rows[i]},{cols[i]},{gt[rows[i], cols[i]]:.6f}" for i in pick]
    (tmp_path / "pts.csv").write_text("\n".join(lines) + "\n")
    pts = read_prior(tmp_path / "pts.csv", (h, w), inp.camera, sigma=0.001)
    assert pts.block == 0 and int(pts.valid.sum()) == 60
    for prior in (p, pts):
        res = integrate(inp, depth_prior=prior)
        assert abs(float(np.median((res.depth - gt)[right]))) < 0.01 * float(np.nanmedian(gt))


def test_relative_prior_is_fitted_by_an_affine_map_and_the_result_stays_relative():
    inp, gt, right = _step("persp")
    a, b = 0.7, 3.0
    prior = DepthPrior(a * gt + b, np.isfinite(gt).astype(float), 0.1, kind="relative")
    fitted, (fa, fb) = fit_relative(prior, gt * 2.0, inp.mask)       # a surface known up to scale
    assert fa == pytest.approx(2.0 / a, rel=1e-6) and fb == pytest.approx(-2.0 * b / a, rel=1e-6)
    res = integrate(inp, depth_prior=prior)
    assert np.nanmean(res.depth[inp.mask]) == pytest.approx(1.0, rel=1e-6)     # relative: mean 1
    assert "relative depth prior" in res.scale_note
    ratio = res.depth / gt                                   # one scale for both sheets
    left, right_scale = np.median(ratio[inp.mask & ~right]), np.median(ratio[right])
    assert right_scale == pytest.approx(left, rel=0.005)
    free = integrate(inp).depth / gt                         # without the prior they differ
    assert abs(np.median(free[right]) / np.median(free[inp.mask & ~right]) - 1) > 0.05


def _blurred_sheet(gap: float, blur: float) -> tuple:
    """(input, relative prior, offset of a result): tests/helpers.rim_step_surface seen
    orthographically (its right sheet ``gap`` units behind the left's bending rim), the prior
    its depth blurred ``blur`` px and mapped by 0.7 d + 3; offset(result) is the right sheet's
    shift against the left's."""
    from scipy.ndimage import gaussian_filter

    cam = camera("ortho")
    surf, side = rim_step_surface(cam, gap)
    inp = build_input(surf.normals, None, surf.support, None, pixel_size=cam.pixel_size)
    gt, right = surf.depth, side & surf.support
    smooth = gaussian_filter(np.where(inp.mask, gt, 0.0), blur) / gaussian_filter(inp.mask.astype(float), blur)
    prior = DepthPrior(0.7 * smooth + 3.0, inp.mask.astype(float), 0.1, kind="relative")

    def offset(res):
        diff = res.depth - gt
        return float(np.median(diff[right]) - np.median(diff[inp.mask & ~right]))

    return inp, prior, offset


def test_an_orthographic_relative_prior_places_a_loose_sheet():
    """Orthographic: the right sheet, cut loose at the jump beside the left's bending rim,
    sits off without a prior; a smooth relative prior (blurred, affine-mapped)
    puts it back, and the piece is listed as the prior's. Regression: the fit dropped
    every mapped depth <= 0 (orthographic depth has any offset), half the prior, and the
    sheet stayed 17 units off."""
    inp, prior, offset = _blurred_sheet(40.0, 2.0)
    res = integrate(inp, depth_prior=prior)
    assert abs(offset(res)) < 1.5
    assert any(p["placed"] == "depth prior" and p["pixels"] > 1000 for p in res.loose_pieces)
    # without it the normals do not place the sheet: off by more (18 units before the
    # placement solve, 3.4 with it), and the sheet is named as a guess
    free = integrate(inp)
    assert abs(offset(free)) > abs(offset(res)) + 1.0 and free.loose_pieces


def test_a_blurred_relative_prior_leaves_a_piece_where_the_placement_put_it():
    """Candidate 20o (studies/robust-prior): a relative prior too blurred to resolve a loose
    sheet (8 px over a jump of 80 units) agrees within its noise with where the placement put
    it behind its occluder: the sheet stays there, no worse than without a prior, and is
    listed as placed by the prior where the normals put it. Before, the placement stood
    aside under any prior and the fuse carried the sheet 13 units farther off (36.9 against
    23.4 without a prior)."""
    inp, prior, offset = _blurred_sheet(80.0, 8.0)
    free, res = integrate(inp), integrate(inp, depth_prior=prior)
    assert abs(offset(res)) <= abs(offset(free)) + 0.5
    assert [p["placed"][:37] for p in res.loose_pieces] == ["depth prior, where the normals put it"]


def test_a_relative_prior_that_widens_a_jump_behind_an_occluder_places_the_sheet():
    """Candidate 20p (studies/robust-prior): a relative prior blurred 4 px over a jump of 80
    units puts the right sheet farther behind the left's rim than the least shift the
    occluding contour allows (where the placement put it, 23.4 units short), beyond its
    noise: the contour bounds the jump one way only, so the prior places the sheet. Before,
    the weak one-sided weights of the sheet's cut edges held it 3.7 units short."""
    inp, prior, offset = _blurred_sheet(80.0, 4.0)
    assert abs(offset(integrate(inp, depth_prior=prior))) < 1.0


def _contour_pair(word: float):
    """A 4x6 map cut between columns 2 and 3 whose column 2 grazes (the left piece's rim, in
    front), the right piece placed behind it; a prior term whose word on the right piece is
    ``word`` sigmas (farther where positive)."""
    from dataclasses import replace as _replace
    from fnin_cli.priors import RobustPrior
    from fnin_cli.solvers.pieces import Pieces
    from fnin_cli.solvers.system import NormalSystem

    n = np.dstack([np.zeros((4, 6, 2)), -np.ones((4, 6, 1))])
    n[:, 2] = [0.999, 0.0, -0.045]
    s = NormalSystem(n / np.linalg.norm(n, axis=2, keepdims=True), np.ones((4, 6), bool), Camera(None, 1.0))
    w = {d: np.ones(24) for d in ("u+", "u-", "v+", "v-")}
    w["u+"][s.index[:, 2]] = 0.0
    w["u-"][s.index[:, 3]] = 0.0
    depth = np.zeros((4, 6))
    depth[:, 3:] = word * 0.1
    term = RobustPrior(DepthPrior(depth, np.ones((4, 6)), 0.1), s)
    return s, term, Pieces(s, w, _replace(DEFAULT.pieces, min_pixels=4))


def test_a_piece_behind_its_occluder_is_left_to_a_prior_only_the_way_its_contour_allows():
    from fnin_cli.fuse_pieces import contour_sides, hold_placed
    from fnin_cli.solvers.placement import BEHIND, CONTACT

    s, term, pieces = _contour_pair(10.0)
    assert contour_sides(s, pieces.joined[0], 0.3).tolist() == [-1, 1]     # left occludes, right is behind
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}, 0.3) == ([], [1])
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}) == ([], [])            # the check off
    assert hold_placed(term, np.zeros(24), pieces, {1: CONTACT}, 0.3) == ([], [])      # a contact is not freed
    s, term, pieces = _contour_pair(-10.0)                                             # nearer: against the order
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}, 0.3) == ([], [])


def test_a_piece_is_left_to_a_prior_only_where_the_prior_resolves_it():
    """Candidate 20q: a prior blurred by s px says nothing of its own on a piece with no
    pixel farther than 2 s from the others (the right piece's columns lie 1-3 px from its
    occluder): it is not freed; sharp, it is. The blur is measured only where needed."""
    from fnin_cli.fuse_pieces import hold_placed
    from fnin_cli.solvers.placement import BEHIND

    calls = []

    def blur(s):
        return lambda image: calls.append(s) or s

    _, term, pieces = _contour_pair(20.0)
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}, 0.3, blur(0.0)) == ([], [1])
    # 1 px: its core is column 5 alone (4 pixels, 3 px off), its bound 3 sqrt(64 / 4) = 12 sigma
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}, 0.3, blur(1.0)) == ([], [1])
    _, term, pieces = _contour_pair(10.0)
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}, 0.3, blur(1.0)) == ([], [])
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}, 0.3, blur(2.0)) == ([], [])     # no core
    _, term, pieces = _contour_pair(1.0)                                     # within its noise: held
    assert hold_placed(term, np.zeros(24), pieces, {1: BEHIND}, 0.3, blur(9.0)) == ([1], [])
    assert calls == [0.0, 1.0, 1.0, 2.0]


def test_an_orthographic_relative_fit_keeps_depths_at_or_below_zero():
    prior = DepthPrior(np.array([[1.0, 2.0, 3.0, 4.0]]), np.ones((1, 4)), 0.1, kind="relative")
    depth = np.array([[-1.0, 0.0, 1.0, 2.0]])
    fitted, (a, b) = fit_relative(prior, depth, np.ones((1, 4), bool), positive=False)
    assert np.allclose(fitted.depth, depth) and a == pytest.approx(1.0) and b == pytest.approx(-2.0)
    dropped, _ = fit_relative(prior, depth, np.ones((1, 4), bool))        # perspective: depth > 0
    assert np.isnan(dropped.depth[0, :2]).all()


def test_a_prior_in_other_units_or_inverted_gets_a_hint():
    """Orthographic depth has the normals' units (--pixel-size): a prior in other units
    disagrees and is named; a perspective prior in other units only rescales (no warning);
    inverse depth runs against the normals and is named."""
    inp, gt, _ = _step("ortho")
    with pytest.warns(UserWarning, match="other units"):
        res = integrate(inp, depth_prior=DepthPrior(gt * 1000.0, np.isfinite(gt).astype(float), 0.01))
    assert res.prior_residual["beyond_3_sigma"] > 0.25
    inp, gt, _ = _step("persp")
    res = integrate(inp, depth_prior=DepthPrior(gt * 1000.0, np.isfinite(gt).astype(float), 0.01 * np.nanmedian(gt)))
    assert res.prior_residual["beyond_3_sigma"] < 0.05
    inv = 1.0 / gt
    with pytest.warns(UserWarning, match="inverse depth"):
        integrate(inp, depth_prior=DepthPrior(inv * float(np.nanmedian(gt)) ** 2, np.isfinite(gt).astype(float),
                                              0.001))


# ------------------------------------------------------------------ the command line

def _folder(tmp_path):
    folder = write_folder(tmp_path / "case", seed=2)
    return folder


def test_cli_reads_a_layout_prior_and_reports_it(tmp_path):
    folder = _folder(tmp_path)
    from fnin_cli.pipeline import load_input

    inp = load_input(folder)
    ref = integrate(inp, "wls")
    depth = np.where(inp.mask, ref.depth * 2000.0, np.nan).astype(np.float32)   # a prior in "mm"
    np.save(folder / "depth_prior.npy", depth)
    r = invoke(["integrate", folder, "-o", tmp_path / "d.npy", "--json", "--method", "wls"])
    assert r.exit_code == 0, r.stderr
    rec = json.loads(r.stdout)
    assert r.stderr.count("depth_prior.npy in the inputs' folders are used as depth priors") == 1
    assert rec["prior_source"].endswith("depth_prior.npy") and rec["prior_residual"]["pixels"] > 0
    out = np.load(tmp_path / "d.npy")
    assert np.nanmedian(out / depth) == pytest.approx(1.0, rel=1e-3)      # in the prior's units


@pytest.mark.parametrize("content, message", [
    ("size", "at 1/k of it"),
    ("empty", "has no value"),
    ("negative", "negative depths"),
    ("csv_outside", "outside the"),
    ("csv_bad", "is not row,col,depth"),
    ("csv_header", "header row,col,depth"),
])
def test_bad_priors_fail_in_one_line_and_write_nothing(tmp_path, content, message):
    folder = _folder(tmp_path)
    from fnin_cli.pipeline import load_input

    h, w = load_input(folder).shape
    if content == "size":
        path = tmp_path / "p.npy"
        np.save(path, np.ones((h - 3, w), np.float32))
    elif content in ("empty", "negative"):
        path = tmp_path / "p.npy"
        np.save(path, np.full((h, w), np.nan if content == "empty" else -5.0, np.float32))
    else:
        path = tmp_path / "p.csv"
        path.write_text({"csv_outside": f"row,col,depth\n{h + 4},1,3.0\n", "csv_bad": "row,col,depth\n1,x,3\n",
                         "csv_header": "r,c,z\n1,1,3\n"}[content])
    out = tmp_path / "d.npy"
    r = invoke(["integrate", folder, "-o", out, "--depth-prior", path])
    assert r.exit_code == 1 and message in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--prior-sigma", "-1"], "--prior-sigma must be a positive number"),
    (["--prior-kind", "metric"], "unknown --prior-kind"),
    (["--mean-depth", "2"], "--mean-depth and --depth-prior"),
])
def test_prior_options_that_cannot_work_are_usage_errors(tmp_path, args, message):
    folder = _folder(tmp_path)
    np.save(tmp_path / "p.npy", np.ones((48, 48), np.float32))
    r = invoke(["integrate", folder, "-o", tmp_path / "d.npy", "--depth-prior", tmp_path / "p.npy", *args])
    assert r.exit_code == 2 and message in r.stderr


def test_prior_options_need_a_prior(tmp_path):
    r = invoke(["integrate", _folder(tmp_path), "-o", tmp_path / "d.npy", "--prior-sigma", "1"])
    assert r.exit_code == 2 and "need --depth-prior" in r.stderr


def test_only_the_values_inside_the_mask_count():
    """The run keeps the caller's prior (no masked copy of its frames) and reads its values
    inside the mask only: values outside change neither the result nor the report, nor the
    hint's shift search, which brings in no value from outside the mask."""
    inp, gt, _ = _step("persp")
    mask = inp.mask.copy()
    mask[:8] = mask[:, :12] = False
    inp = build_input(inp.normals, None, mask, inp.camera)
    p = _noisy(gt, 0.01 * float(np.nanmedian(gt)))
    outside = DepthPrior(np.where(mask, p.depth, 3.0 * p.depth), np.ones(gt.shape), p.sigma)
    assert as_prior(outside, inp) is outside
    a, b = integrate(inp, depth_prior=outside), integrate(inp, depth_prior=outside.on_mask(mask))
    np.testing.assert_array_equal(a.depth, b.depth)
    assert a.prior_residual == b.prior_residual and np.array_equal(a.prior_disagree, b.prior_disagree)
    rows, cols = np.mgrid[:40, :50]
    truth = 2.0 + 0.2 * np.sin(cols / 2.0) * np.cos(rows / 3.0)        # textured: a shift shows
    mask = np.zeros(truth.shape, bool)
    mask[6:, 8:] = True
    off = DepthPrior(np.where(mask, np.roll(truth, (2, -3), (0, 1)), 5.0), np.ones(truth.shape), 0.01)
    depth = np.where(mask, truth, np.nan)
    report = prior_report(off, depth, mask, Camera(None, 1.0))
    assert report == prior_report(off.on_mask(mask), depth, mask, Camera(None, 1.0))
    assert "shifted by (-2, 3)" in report[1][0]


def test_the_rounds_term_carries_the_prior_and_the_run_lets_go_of_its_own():
    """The rounds' terms are lam towards the method's result, then the run's own prior term
    (the same object: what Stage II learnt of where to trust the prior carries on); the run
    then drops its hold on that term (at camera size vectors held through the rounds)."""
    inp, gt, _ = _step("persp")
    p = _noisy(gt, 0.01 * float(np.nanmedian(gt)))
    run = run_method(inp, "fnin", None, DEFAULT, prior=p)
    lighter, (start, terms, _) = pipeline.prepare_rounds(run)
    assert lighter.args.prior is None and run.args.prior is not None and lighter.out.z is None
    np.testing.assert_array_equal(start, run.out.z)        # a prior: no placement step moved it
    anchor = terms[0].at(None)
    assert anchor.weight == run.lam
    np.testing.assert_array_equal(anchor.target, run.out.z)
    assert len(terms) == 2 and terms[1] is run.args.prior


def test_api_refuses_a_prior_on_another_grid():
    inp, gt, _ = _step("persp")
    with pytest.raises(FninError, match="grid"):
        integrate(inp, depth_prior=DepthPrior(np.ones((5, 5)), np.ones((5, 5)), 1.0))


def test_the_preview_shows_where_prior_and_result_disagree(tmp_path):
    """A prior with a wrong patch: the result's prior_disagree marks it, and the preview
    paints those pixels orange and names them in its legend."""
    from fnin_cli.batch.preview import _ORANGE, preview_image

    inp, gt, _ = _step("persp")
    sigma = 0.01 * float(np.nanmedian(gt))
    bad = gt.copy()
    bad[20:30, 10:20] += 20 * sigma           # a patch far smaller than what this prior can bend
    res = integrate(inp, depth_prior=DepthPrior(bad, np.isfinite(bad).astype(float), sigma))
    assert res.prior_disagree[22:28, 12:18].all() and res.prior_disagree.sum() < 0.2 * inp.mask.sum()
    img = preview_image(inp.normals, res.depth, res.discontinuity, res.camera, res.mask, disagree=res.prior_disagree)
    plain = preview_image(inp.normals, res.depth, res.discontinuity, res.camera, res.mask)
    assert img.shape[0] == plain.shape[0] + 11                       # the legend's fourth line
    assert (np.abs(img.astype(int) - _ORANGE.astype(int)).sum(-1) == 0).sum() > 50


def test_bench_piece_error_aligns_each_loose_piece_on_its_own():
    from fnin_cli.bench.cases import align_and_errors, piece_made

    inp, gt, right = _step("persp")
    est = np.where(right, gt * 1.3, gt)                  # the right sheet at a wrong scale
    pieces = right.astype(int)
    whole = align_and_errors(est, gt, inp.mask, True)["made"]
    assert piece_made(est, gt, inp.mask, pieces, True) < 1e-9 < whole


def test_the_slope_test_reads_every_kth_row_of_a_large_map(monkeypatch):
    """A camera-size map's slope test runs on every k-th row (the camera seeing rows k
    apart): the same ratios as on every row (1 agrees, -1 inverse depth)."""
    import fnin_cli.prior as prior_module

    for kind in ("persp", "ortho"):
        inp, gt, _ = _step(kind)
        for d, want in ((gt, 1.0), (float(np.nanmedian(gt)) ** 2 / gt, -1.0)):
            p = DepthPrior(d, np.isfinite(gt).astype(float), 0.001).on_mask(inp.mask)
            every = prior_module.slope_ratio(p, inp.normals, inp.mask & p.valid, inp.camera)
            monkeypatch.setattr(prior_module, "SLOPE_PIXELS", 1000)          # every 5th row here
            sparse = prior_module.slope_ratio(p, inp.normals, inp.mask & p.valid, inp.camera)
            monkeypatch.undo()
            assert every == pytest.approx(want, abs=0.2) and sparse == pytest.approx(every, abs=0.05)


@pytest.mark.parametrize("kind", ["dense8", "relative"])
def test_bench_records_the_absolute_error_only_where_a_prior_fixed_the_depth(kind):
    """`fnin bench --prior`: abs (nothing fitted) for the methods run with an absolute
    prior and the prior alone; none for noprior or a relative prior, whose depth stays
    known up to scale (it read 1498 mm on goblet). The legend says which."""
    from fnin_cli.bench.cases import Case
    from fnin_cli.bench.report import table_legend
    from fnin_cli.bench.runner import run_one

    case = Case("persp-64", "synthetic", seed=9, size=64)
    recs = {m: run_one(case, m, prior=(kind, 0)) for m in ("default", "prior", "noprior")}
    assert all(r["status"] == "ok" for r in recs.values())
    assert "abs_made_mm" not in recs["noprior"]
    has_abs = {m for m, r in recs.items() if "abs_made_mm" in r}
    assert has_abs == ({"default", "prior"} if kind == "dense8" else set())
    legend = table_legend({"dataset": "synthetic", "prior": {"kind": kind, "seed": 0}})
    assert ("abs:" in legend) == (kind == "dense8")


def _warped_pair(slope: float, rim: int = 59, jump: float = 0.0):
    """A 20x100 map cut between columns 59 and 60, column ``rim`` grazing (59: the left,
    main piece's rim, the right piece behind it; 60: the right piece's own rim), and a prior
    term warped by a ramp, ``slope`` sigmas nearer per column, and ``jump`` sigmas farther
    on the right piece."""
    from dataclasses import replace as _replace
    from fnin_cli.priors import RobustPrior
    from fnin_cli.solvers.pieces import Pieces
    from fnin_cli.solvers.system import NormalSystem

    n = np.dstack([np.zeros((20, 100, 2)), -np.ones((20, 100, 1))])
    n[:, rim] = [0.999, 0.0, -0.045]
    s = NormalSystem(n / np.linalg.norm(n, axis=2, keepdims=True), np.ones((20, 100), bool), Camera(None, 1.0))
    w = {d: np.ones(s.n) for d in ("u+", "u-", "v+", "v-")}
    w["u+"][s.index[:, 59]] = 0.0
    w["u-"][s.index[:, 60]] = 0.0
    depth = 0.1 * (-slope * np.arange(100.0) + np.where(np.arange(100) >= 60, jump, 0.0)) * np.ones((20, 1))
    term = RobustPrior(DepthPrior(depth, np.ones((20, 100)), 0.1), s)
    return term, Pieces(s, w, _replace(DEFAULT.pieces, min_pixels=4))


def test_a_smooth_warp_does_not_move_a_piece_in_front_of_its_occluder():
    """Candidate 20v: a piece behind its occluder whose prior word puts it nearer (against
    the contour's order) is held where the placement put it unless the prior sees the jump
    across the contour: a ramp 6 sigmas nearer on the piece's mean than on the main piece's
    (a monocular warp) is 2.6 sigmas across the cut's bands: held; with the word read on the
    whole piece it was moved in front (penguin+hand v09). A true jump is still followed."""
    from fnin_cli.fuse_pieces import hold_placed
    from fnin_cli.solvers.placement import BEHIND

    z = np.zeros(2000)
    term, pieces = _warped_pair(0.12)
    assert hold_placed(term, z, pieces, {1: BEHIND}, 0.3, lambda image: 1.0, ordered=True, local=True) == ([1], [])
    term, pieces = _warped_pair(0.12)
    assert hold_placed(term, z, pieces, {1: BEHIND}, 0.3, lambda image: 1.0, ordered=True) == ([], [])   # the whole piece's word
    term, pieces = _warped_pair(0.12, jump=-12.0)                                            # and a jump nearer
    assert hold_placed(term, z, pieces, {1: BEHIND}, 0.3, lambda image: 1.0, ordered=True, local=True) == ([], [])


def test_the_order_binds_only_where_the_contours_agree_with_the_placement():
    """Candidate 20v (hand_ortho v06): a piece placed behind an occluder whose own contours
    say it occludes (its grazing rim inside it) has no one order to bind: a word farther than
    its noise, unresolved, is left to the fuse, not held."""
    from fnin_cli.fuse_pieces import contour_sides, hold_placed
    from fnin_cli.solvers.placement import BEHIND

    term, pieces = _warped_pair(-0.12, rim=60)
    assert contour_sides(pieces.system, pieces.joined[0], 0.3).tolist() == [1, -1]
    assert hold_placed(term, np.zeros(2000), pieces, {1: BEHIND}, 0.3, lambda image: 1.0, ordered=True, local=True) == ([], [])


def test_a_fused_prior_does_not_note_that_a_prior_would_place_a_piece():
    """Regression (candidate 20v): with the placement before the rounds running under a
    relative prior, its note on a piece placed by the most connected reading ("--depth-prior
    places it") reached users who had given one; the fuse places that piece. The flutes
    sample's third pipe: noted without a prior, not with a monocular-like one."""
    from pathlib import Path

    from fnin_cli.bench.priors import case_seed, make_prior
    from fnin_cli.pipeline import load_input

    folder = Path(__file__).resolve().parents[1] / "samples" / "flutes"
    inp = load_input(folder)
    gt = np.load(folder / "depth_gt.npz")["depth_gt"]
    said = "most connected reading"
    assert any(said in w for w in integrate(inp).warnings)
    prior = make_prior("mono-depth", gt, inp, case_seed(0, "flutes"))
    assert not any(said in w for w in integrate(inp, depth_prior=prior).warnings)
