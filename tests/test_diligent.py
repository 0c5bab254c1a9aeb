"""The classic solvers reproduce the published DiLiGenT numbers (SPEC, benchmark protocol).

Protocol (BiNI's evaluation): est = integrated depth; scale = nanmedian(gt / est) over
the mask; MADE = nanmean(|scale * est - gt|) in mm.

Data: ../shared/data/diligent (override with FNIN_DILIGENT). Missing data skips the
tests, except under CI (env CI set), where it is a failure.
"""

import os
from pathlib import Path

import numpy as np
import pytest

from fnin_cli.pipeline import integrate, load_input

DATA = Path(os.environ.get("FNIN_DILIGENT",
                           Path(__file__).resolve().parents[2] / "shared" / "data" / "diligent"))

# BiNI (k = 2, current code), MADE in mm; SPEC "Published reference"
BINI_REFERENCE = {"bear": 0.334, "buddha": 1.098, "cat": 0.074, "cow": 0.058, "goblet": 9.018,
                  "harvest": 1.838, "pot1": 0.635, "pot2": 0.220, "reading": 0.257}
BINI_MEAN, BINI_MEAN_TOL = 1.50, 0.05
WLS_MEAN, WLS_MEAN_TOL = 4.2, 0.1  # smooth 4-direction least squares (measured 4.226)


def made(est: np.ndarray, gt: np.ndarray, mask: np.ndarray) -> float:
    est = est[mask].astype(np.float64)
    gt = gt[mask].astype(np.float64)
    scale = np.nanmedian(gt / est)
    return float(np.nanmean(np.abs(scale * est - gt)))


def _data() -> Path:
    if not DATA.is_dir():
        message = f"DiLiGenT data not found at {DATA} (set FNIN_DILIGENT)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return DATA


def run(method: str) -> dict:
    out = {}
    for obj in BINI_REFERENCE:
        folder = _data() / obj
        inp = load_input(folder)
        assert inp.camera.perspective, f"{obj}: K.txt not picked up"
        gt = np.load(folder / "depth_gt.npz")["depth_gt"]
        res = integrate(inp, method=method)
        out[obj] = made(res.depth, gt, inp.mask)
    return out


def test_made_protocol_is_scale_invariant():
    rng = np.random.default_rng(1)
    gt = rng.uniform(1400, 1500, (20, 30))
    gt[0, 0] = np.nan  # no ground truth there
    mask = np.ones(gt.shape, bool)
    est = gt / 1500.0
    assert made(est, gt, mask) < 1e-9
    noisy = est * (1 + rng.normal(0, 1e-3, gt.shape))
    assert 0.5 < made(noisy, gt, mask) < 2.0  # ~ 0.8 * 1e-3 * 1450 mm


def test_bini_reproduces_published_made():
    got = run("bini")
    close = {o: abs(got[o] - ref) <= max(0.05, 0.2 * ref) for o, ref in BINI_REFERENCE.items()}
    report = ", ".join(f"{o} {got[o]:.3f} (ref {BINI_REFERENCE[o]:.3f})" for o in BINI_REFERENCE)
    assert sum(close.values()) >= 8, report
    mean = float(np.mean(list(got.values())))
    assert abs(mean - BINI_MEAN) <= BINI_MEAN_TOL, f"mean {mean:.3f}; {report}"


def test_wls_mean_made():
    got = run("wls")
    mean = float(np.mean(list(got.values())))
    report = ", ".join(f"{o} {v:.3f}" for o, v in got.items())
    assert abs(mean - WLS_MEAN) <= WLS_MEAN_TOL, f"mean {mean:.3f}; {report}"
    # smooth integration cannot beat BiNI where there are jumps, but it is sane everywhere
    assert all(np.isfinite(v) and v < 15 for v in got.values()), report


def test_buddhas_limbs_are_cut_from_what_they_hide_before_the_rounds():
    """Candidate 29 of studies/placement-solve (the occluding cuts of its candidate 18):
    Stage II joined buddha's arms and sleeves to the robe behind them; cut along their
    occluding contours before the rounds, each is placed as a piece of its own. The default
    was 1.185 mm (bini 1.097); now 0.537."""
    folder = _data() / "buddha"
    inp = load_input(folder)
    gt = np.load(folder / "depth_gt.npz")["depth_gt"]
    assert made(integrate(inp).depth, gt, inp.mask) < 0.7


@pytest.mark.parametrize("kind", ["mono-depth", "relative"])
def test_a_monocular_prior_keeps_buddhas_limbs_placed(kind):
    """Issue 50 (studies/robust-prior, candidate 20v): under a relative prior the placement
    before the rounds stood aside, so the cuts along buddha's limbs ran only without a prior:
    with the bench's monocular-like prior buddha was 0.831 mm against 0.537 without (the
    issue's bound: max(10%, 0.05 mm) worse). Now the run is the no-prior run up to the fuse."""
    from fnin_cli.bench.priors import case_seed, make_prior

    folder = _data() / "buddha"
    inp = load_input(folder)
    gt = np.load(folder / "depth_gt.npz")["depth_gt"]
    alone = made(integrate(inp).depth, gt, inp.mask)
    prior = make_prior(kind, gt, inp, case_seed(0, "buddha"))
    fused = made(integrate(inp, depth_prior=prior).depth, gt, inp.mask)
    assert fused <= max(1.1 * alone, alone + 0.05), (fused, alone)


@pytest.mark.parametrize("obj", ["reading", "harvest"])
def test_no_more_pixels_far_from_every_neighbour_than_bini(obj):
    """Issue 51 item 4 (studies/placement-solve, candidate 29): the lines of grazing pixels
    between two surfaces inside reading and harvest were left in the middle of the jump,
    far from every neighbour (reading 3 such pixels against bini's 1); placed together
    after the rounds, none is farther than bini's count."""
    from helpers import count_far

    inp = load_input(_data() / obj)
    far = [count_far(integrate(inp, method=m).depth, inp.mask) for m in ("fnin", "bini")]
    assert far[0] <= far[1], far
