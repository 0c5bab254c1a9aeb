"""A relative depth prior's fusion (fnin_cli.relative): its blur found, pieces the normals
hold by one extrapolated normal moved through that blur, correct pieces left alone."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter

import relative   # this folder's module (run from the folder or with it on sys.path)


def test_block_means_weigh_and_pad():
    img = np.arange(12.0).reshape(3, 4)
    w = np.ones((3, 4))
    w[0, 0] = 0.0
    mean, weight = relative.block_means(img, w, 2)
    assert weight.tolist() == [[3.0, 4.0], [2.0, 2.0]]
    assert mean[0, 0] == pytest.approx((1 + 4 + 5) / 3) and mean[1, 1] == pytest.approx(10.5)


@pytest.mark.parametrize("sigma", [0.0, 4.0, 8.0])
def test_fit_blur_finds_the_priors_blur_and_offset(sigma):
    rng = np.random.default_rng(3)
    z = gaussian_filter(rng.normal(size=(96, 128)), 2.0) * 10.0     # detail at a few pixels
    mask = np.ones(z.shape, bool)
    prior = relative.masked_blur(z, mask.astype(float), sigma) + 2.0
    s, b, bz, _ = relative.fit_blur(prior, z, mask.astype(float), mask)
    assert np.allclose(bz + b, prior)
    assert s == sigma and b == pytest.approx(2.0, abs=1e-6)


def test_piece_shifts_move_a_misplaced_piece_through_the_blur_and_leave_the_rest():
    """A ramp with a strip 5 units behind it; the result has the strip on the ramp (one
    normal extrapolated across its jumps) and another piece in place. Through the prior's
    blur the strip moves back by 5 (a median of prior - z over it says less: the blur
    mixes its neighbours in); the piece in place does not move."""
    h, w = 64, 96
    cols = np.arange(w)[None, :].repeat(h, 0).astype(float)
    strip = (cols >= 40) & (cols < 56)
    other = cols >= 72
    truth = 0.05 * cols + np.where(strip, 5.0, 0.0)
    z = 0.05 * cols
    mask = np.ones((h, w), bool)
    sigma = 6.0
    prior = relative.masked_blur(truth, mask.astype(float), sigma)
    pieces = [strip.astype(float), other.astype(float)]
    ones = mask.astype(float)
    columns = [relative.masked_blur(p, ones, sigma) for p in pieces]
    shifts = relative.piece_shifts(prior, ones, relative.masked_blur(z, ones, sigma), columns, 0.0, sigma)
    assert shifts[0] == pytest.approx(5.0, abs=1e-6) and shifts[1] == 0.0
    assert float(np.median((prior - z)[strip])) < 4.5      # what a piece-wise median would move
