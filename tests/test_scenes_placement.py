"""Issue 49's scenes (fnin_cli.data.placement_scenes): a vase in front of a wall and
stripes meeting a floor at a fold, their truth, the measures that read them, and where
today's methods place their pieces."""

from __future__ import annotations

import numpy as np
import pytest

from fnin_cli.data import placement_scenes as ps
from fnin_cli.data.analytic import pixel_grid
from fnin_cli.pipeline import build_input, integrate



@pytest.fixture(scope="module", params=["ortho", "persp"])
def vase(request):
    return ps.vase_scene(request.param)


@pytest.fixture(scope="module")
def stripes():
    return ps.stripes_scene()


def _inp(scene):
    return build_input(scene.normals, mask=scene.mask, K=scene.K, pixel_size=scene.pixel_size)


def _view_cos(scene):
    """cos of the angle between each normal and the direction toward the camera."""
    n = scene.normals.astype(np.float64)
    if scene.camera.perspective:
        u, v = pixel_grid(scene.mask.shape)
        r = np.stack([u, v, np.ones_like(u)], -1) @ np.linalg.inv(scene.K).T
        return -np.sum(n * r, -1) / np.linalg.norm(r, axis=-1)
    return -n[..., 2]


# ------------------------------------------------------------------ the scenes' truth

def test_the_vase_stands_clear_of_the_wall_with_a_grazing_silhouette_all_round(vase):
    assert vase.mask.all() and vase.normals.shape == vase.mask.shape + (3,)
    assert np.allclose(np.linalg.norm(vase.normals, axis=-1), 1, atol=1e-6)
    c = _view_cos(vase)
    assert c.min() > 0                                              # all facing the camera
    wall = ~vase.body
    assert np.allclose(vase.depth[wall], vase.depth[wall][0]) and np.allclose(vase.normals[wall], [0, 0, -1])
    assert vase.depth[vase.body].max() < vase.depth[wall].min()    # a gap in depth: in front, not on
    # the silhouette (foot and lip included: its lowest and highest rows) is an occluding
    # contour: the last pixel before the wall is within 21 degrees of grazing
    sil = vase.silhouette
    assert sil.sum() > 300 and np.median(c[sil]) < 0.25 and c[sil].max() < 0.36
    rows = np.where(vase.body.any(1))[0]
    for r in (rows[0], rows[-1]):
        assert c[r][vase.body[r]].max() < 0.36
    # the body's inside faces the camera
    inner = vase.body & ~sil
    assert np.median(c[inner]) > 0.7
    assert ps.in_front_share(vase.depth, vase) == {"share": 1.0, "pixels": int(sil.sum()),
                                                   "behind_median": 0.0, "behind_max": 0.0}


def test_the_stripes_meet_the_floor_and_separate_by_growing_steps(stripes):
    h, w = stripes.mask.shape
    f = stripes.fold_row
    assert (h, w) == (128, 128) and f == 64 and stripes.camera.K is None and stripes.mask.all()
    assert np.array_equal(np.where(stripes.fold.any(1))[0], [63, 64]) and stripes.fold.all(1).sum() == 2
    n = stripes.normals
    assert np.allclose(np.linalg.norm(n, axis=-1), 1, atol=1e-6) and (n[..., 2] < 0).all()
    assert np.allclose(n[f:], [0, 0, -1])
    slope = -n[:f, :, 1] / n[:f, :, 2]                               # dz/dv of each stripe
    expect = np.where((np.arange(w) // 8) % 2 == 0, 1.0, -1.0)
    assert np.allclose(slope, expect, atol=1e-6)
    z = stripes.depth
    assert np.allclose(z[f - 1] - z[f], -expect)                      # continuous at the fold
    step = np.abs(z[:f, 7] - z[:f, 8])
    assert np.allclose(step, 2 * (f - np.arange(f)))                 # steps grow away from it
    assert ps.fold_jumps(z, stripes)["jumping"] == 0


# ------------------------------------------------------------------ the measures

def test_in_front_share_ignores_the_unknown_offset_or_scale_and_sees_a_body_behind(vase):
    z = vase.depth
    moved = z * 3.0 if vase.camera.perspective else z - 40.0
    assert ps.in_front_share(moved, vase)["share"] == 1.0
    # the body pushed so that its nearest silhouette pixel is 30 units behind the wall
    gap = vase.depth[~vase.body].min() - vase.depth[vase.silhouette].min()
    back = np.where(vase.body, z + gap + 30.0, z)
    m = ps.in_front_share(back, vase)
    spread = np.ptp(vase.depth[vase.silhouette])
    assert m["share"] == 0.0 and 30.0 < m["behind_median"] <= m["behind_max"] < 30.0 + spread + 1e-9
    # level within the tolerance (one pixel footprint at the wall) counts as in front
    # (the farthest silhouette pixel half a footprint behind the wall)
    touch = vase.depth[~vase.body].min() - vase.depth[vase.silhouette].max()
    footprint = vase.depth[0, 0] / vase.camera.focal if vase.camera.perspective else vase.pixel_size
    lvl = np.where(vase.body, z + touch + 0.5 * footprint, z)
    assert ps.in_front_share(lvl, vase)["share"] == 1.0


def test_fold_jumps_counts_the_columns_of_a_stripe_cut_from_the_floor(stripes):
    z = stripes.depth.copy()
    z[:stripes.fold_row, 16:24] += 5.0                                # the third stripe 5 units off
    m = ps.fold_jumps(z + 7.0, stripes)
    assert m["jumping"] == 8 and m["stripes_cut"] == 1 and m["max_excess"] == pytest.approx(5.0)
    assert m["stripes_cut_by_slope"] == {"+1": 1, "-1": 0}
    z[:stripes.fold_row, 24:32] += 1.5                                # within 2 units: not a jump
    assert ps.fold_jumps(z, stripes)["jumping"] == 8


# ------------------------------------------------------------------ today's methods

def test_bini_keeps_the_vase_in_front_of_the_wall(vase):
    assert ps.in_front_share(integrate(_inp(vase), "bini").depth, vase)["share"] >= 0.95


def test_the_default_keeps_the_vase_in_front_of_the_wall(vase):
    """Issue 49's done-when on these renders; today's default meets it here (the issue's
    own vase, joined to the wall along its base, is not reproduced by them)."""
    res = integrate(_inp(vase))
    assert res.rounds > 0 and ps.in_front_share(res.depth, vase)["share"] >= 0.95


def test_bini_joins_every_stripe_to_the_floor(stripes):
    assert ps.fold_jumps(integrate(_inp(stripes), "bini").depth, stripes)["jumping"] == 0


def test_the_default_joins_every_stripe_to_the_floor(stripes):
    """Regression (issue 49): the rules before the placement solve cut 7 of the 8 slope +1
    stripes from the floor (55 columns jumped up to 91 units); the solve reads the fold as a
    contact (both sides flat along it) and not the stripes' sides (their slopes run along them)."""
    res = integrate(_inp(stripes))
    assert ps.fold_jumps(res.depth, stripes)["jumping"] == 0
    assert res.loose_pieces and all(p["placed"].startswith("in contact") for p in res.loose_pieces)
