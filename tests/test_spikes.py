"""No silhouette spikes (issue 43, item 3): after the default's rounds no masked pixel sits
farther from its nearest neighbour than the true surface's own largest such gap allows,
and the mesh the CLI writes has no vertex outside its triangles.

Scenes, with the normal errors real captures have (``data.real_like``: tilt fields, white
noise, 8/16-bit codes): two spheres, the smaller in front of the larger, both out to 89 deg
(grazing rims all round and an occlusion jump across the big one), orthographic and
perspective; and the real-like suite's procedural fold scenes (flaps ending in contours).
Before the fix the default left pixels up to 6.3x that gap off on these scenes (a pixel on
a jump placed halfway across it, pixels next to other loose pixels never placed); now at
most 1.1x.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dataclasses import replace

from fnin_cli.camera import Camera
from fnin_cli.config import DEFAULT
from fnin_cli.data import analytic, real_like
from fnin_cli.pipeline import build_input, integrate
from helpers import count_isolated

N = 96
# (scene, seed): the default used to leave a spike on all but ("ortho", 12) (largest gap /
# the surface's: 2.04, 1.16, 2.50, 6.21, 6.25, 4.79 before the fix; 0.83, 0.79, 0.83,
# 0.42, 0.79, 1.02 after); with the fold join of later rounds, ("ortho", 12) is the one
# that spikes without the fix (3.17 -> 0.95) and the others stay at most 1.21 with it
# persp-1 (a strict xfail until round 5's sixth session): the placement after the rounds
# moves a loose piece of one sphere back 0.038 in log-depth behind a grazing rim labelled with
# the other sphere (the truth: 0.017 forward; studies/placement-solve, candidates 10-13), and
# one pixel was left 0.045 from every neighbour against the bound 0.039: a sliver placed
# against that piece before it moved. With the slivers placed last (studies/real-maps,
# candidate 22) it follows: 0.92x the surface's own largest gap.
SPIKY = [("ortho", 0), ("ortho", 12), ("persp", 1), ("fold", 6), ("fold", 10), ("fold", 11)]
GAP_BOUND = 1.5


def fold(seed: int):
    """(input, true log-depth) of a real-like procedural fold scene at 160x128."""
    scene = real_like.fold_scene(seed, 128, 160)
    noisy, _ = real_like.noisy_scene(scene, real_like.SUITE_CYCLE[seed % 4], seed)
    inp = build_input(np.nan_to_num(noisy.normals).astype(np.float32), mask=scene.mask, K=scene.K)
    return inp, np.log(np.where(scene.mask, scene.depth, np.nan))


def scene(kind: str, seed: int):
    """(input, true unknown image: depth or log-depth): a fold scene, or the two-sphere
    scene with an "ortho" or "persp" camera."""
    if kind == "fold":
        return fold(seed)
    rng = np.random.default_rng(seed)
    if kind == "ortho":
        cam = Camera(None, 1.0)
        big = ((0.45 * N, 0.5 * N, 100.0), 0.38 * N)
        front = ((N * (0.62 + 0.1 * rng.random()), N * (0.4 + 0.2 * rng.random()), 100.0 - 0.3 * N), 0.2 * N)
    else:
        f = 2.0 * N
        cam = Camera(np.array([[f, 0, N / 2 - 0.5], [0, f, N / 2 - 0.5], [0, 0, 1.0]]))
        big = ((-0.02, 0.0, 3.0), 0.55)
        front = ((0.18 + 0.1 * rng.random(), -0.1 + 0.2 * rng.random(), 2.4), 0.25)
    surf = analytic.nearest(*(analytic.sphere((N, N), cam, c, r, 89.0) for c, r in (big, front)))
    noise_rng = np.random.default_rng(1000 + seed)
    params = real_like.draw_params(real_like.SUITE_CYCLE[seed % 4], noise_rng)
    normals = real_like.apply_noise(np.nan_to_num(surf.normals), surf.support, cam.K, params, noise_rng)
    inp = build_input(np.nan_to_num(normals).astype(np.float32), mask=surf.support, K=cam.K,
                      pixel_size=None if cam.perspective else 1.0)
    return inp, cam.unknown_from_depth(np.where(surf.support, surf.depth, np.nan))


def nearest_gap(img: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per masked pixel, |its value - its nearest 8-neighbour's| (NaN without a neighbour)."""
    h, w = img.shape
    pad = np.pad(np.where(mask, img, np.nan), 1, constant_values=np.nan)
    nb = np.stack([pad[1 + dr:1 + dr + h, 1 + dc:1 + dc + w]
                   for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # all-NaN: a pixel without neighbour
        gap = np.nanmin(np.abs(nb - img[None]), axis=0)
    return np.where(mask, gap, np.nan)


def test_nearest_gap_finds_a_lone_spike():
    img = np.zeros((5, 5))
    img[2, 2] = 7.0
    gap = nearest_gap(img, np.ones((5, 5), bool))
    assert gap[2, 2] == 7.0 and np.nanmax(np.delete(gap.ravel(), 12)) == 0.0


@pytest.mark.parametrize("kind,seed", SPIKY)
def test_the_default_leaves_no_pixel_farther_off_than_the_surface_allows(kind, seed):
    inp, truth = scene(kind, seed)
    res = integrate(inp)
    assert res.rounds > 0
    got = np.nanmax(nearest_gap(res.camera.unknown_from_depth(res.depth.astype(np.float64)), res.mask))
    allowed = np.nanmax(nearest_gap(truth, res.mask))
    assert got <= GAP_BOUND * allowed, (got, allowed)


def grazing_sphere(seed: int):
    """An orthographic sphere out to 89.7 degrees with the ps8 errors of ``data.real_like``
    (a 1-6 degree tilt field, white noise, 8-bit codes): rim normals whose steps are noise."""
    cam = Camera(None, 1.0)
    surf = analytic.sphere((N, N), cam, (47.5, 47.5, 100.0), 40.0, 89.7)
    rng = np.random.default_rng(seed)
    n = real_like.apply_noise(np.nan_to_num(surf.normals), surf.support, None, real_like.draw_params("ps8", rng), rng)
    return build_input(np.nan_to_num(n).astype(np.float32), mask=surf.support, pixel_size=1.0)


def test_count_isolated_finds_a_lone_spike():
    img = np.tile(np.arange(6.0), (6, 1))
    assert count_isolated(img, np.ones((6, 6), bool))[0] == 0     # a plane: none (its corners 0.2 ranges off)
    img[3, 3] = 40.0
    n, worst = count_isolated(img, np.ones((6, 6), bool))
    assert n == 1 and worst == pytest.approx((40.0 - 3.0) / (np.percentile(img, 99) - np.percentile(img, 1)))


@pytest.mark.parametrize("seed", [0, 5])
def test_no_more_isolated_pixels_than_bini_at_grazing_rims(seed):
    """Regression (issue 51 item 4): a grazing rim pixel that only grazing normals tied to
    the rest was left where its noisy normal put it (seed 5: 0.55 depth ranges off its
    neighbours' median, bini 0.45); held where its neighbours' normals put it, the
    default's isolated pixels are no more, and no farther off, than bini's."""
    inp = grazing_sphere(seed)
    n_def, worst_def = count_isolated(integrate(inp).depth, inp.mask)
    n_bini, worst_bini = count_isolated(integrate(inp, "bini").depth, inp.mask)
    assert n_def <= n_bini and worst_def <= worst_bini, (n_def, worst_def, n_bini, worst_bini)
    if seed == 5:   # without the hold, the default's worst pixel is farther off than bini's
        off = replace(DEFAULT, rounds=replace(DEFAULT.rounds, hold_grazing=None))
        assert count_isolated(integrate(inp, config=off).depth, inp.mask)[1] > worst_bini


def test_the_cli_mesh_has_no_floating_vertex(tmp_path):
    """`fnin integrate DIR -o m.ply` on a scene whose default result leaves pixels in no
    triangle (a folder: 16-bit normal_map.png, mask.png, orthographic): the file's vertices
    are exactly those of its faces, at their pixels' back-projections."""
    from helpers_cli import invoke
    from plyfile import PlyData

    from fnin_cli import io
    from fnin_cli.mesh import mesh_arrays
    from fnin_cli.pipeline import load_input

    inp, _ = scene("ortho", 0)
    folder = tmp_path / "spheres"
    folder.mkdir()
    io.write_normal_map(folder / "normal_map.png", inp.normals)
    io.write_png(folder / "mask.png", (inp.mask * 255).astype(np.uint8))
    out = invoke(["integrate", str(folder), "-o", str(tmp_path / "m.ply"), "--depth", str(tmp_path / "d.npy"),
                  "--threads", "1"])
    assert out.exit_code == 0, out.stderr
    ply = PlyData.read(str(tmp_path / "m.ply"))
    faces = np.stack(ply["face"].data["vertex_indices"])
    assert np.array_equal(np.unique(faces), np.arange(ply["vertex"].count))
    # the same map and depth with one vertex per pixel has pixels in no triangle
    back = load_input(folder)
    depth = np.load(tmp_path / "d.npy")
    every = mesh_arrays(depth, back.camera, back.mask, normals=back.normals, keep_lone=True)
    used = np.zeros(len(every.vertices), bool)
    used[every.faces] = True
    assert 0 < (~used).sum() and ply["vertex"].count == used.sum()
    xyz = np.stack([ply["vertex"].data[k] for k in "xyz"], -1)
    np.testing.assert_array_equal(xyz, every.vertices[used].astype(np.float32))


def test_a_grazing_pixel_with_no_neighbour_to_place_it_raises_no_numpy_warning():
    """Regression: an all-NaN row of neighbour predictions printed numpy's 'All-NaN slice'
    RuntimeWarning on a user's terminal (bench meshes). A row of three grazing pixels that
    nothing trusts joins one level."""
    import warnings

    from fnin_cli.camera import Camera
    from fnin_cli.solvers.grazing import place_grazing
    from fnin_cli.solvers.system import NormalSystem

    n = np.dstack([np.zeros((1, 3, 1)), np.full((1, 3, 1), -0.999), np.full((1, 3, 1), -0.04)])
    s = NormalSystem(n / np.linalg.norm(n, axis=2, keepdims=True), np.ones((1, 3), bool), Camera(None, 1.0))
    w = {d: np.zeros(3) for d in ("u+", "u-", "v+", "v-")}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        z, placed = place_grazing(s, np.array([0.0, 5.0, 0.0]), w, 0.1)
    assert placed.all() and len(set(z.tolist())) == 1 and z[0] in (0.0, 5.0)


def _line_between_two_planes(rows: int = 1):
    """A 7x9 orthographic map: above a grazing band (``rows`` thick, normals 88 degrees from
    the ray, pointing down the image) a plane at 0, below it a plane at 10; the band's pixels
    left in the jump (5), and no edge into the band trusted (the normals do not say which
    side it lies on). Returns the system, z, the weights and the band (per pixel)."""
    from fnin_cli.camera import Camera
    from fnin_cli.solvers.system import NormalSystem

    n = np.dstack([np.zeros((7, 9, 2)), -np.ones((7, 9, 1))])
    band = np.zeros((7, 9), bool)
    band[3:3 + rows] = True
    n[band] = [0.0, 0.999, -0.035]
    s = NormalSystem(n / np.linalg.norm(n, axis=2, keepdims=True), np.ones((7, 9), bool), Camera(None, 1.0))
    z = np.where(np.arange(7)[:, None] < 3, 0.0, 10.0) * np.ones((7, 9))
    z[band] = 5.0
    w = {d: np.where(band, 0.0, 1.0)[s.mask] for d in ("u+", "u-", "v+", "v-")}
    w["v+"][s.index[2]] = 0.1              # the row above looking down into the band: below
    w["v-"][s.index[3 + rows]] = 0.0       # the cut's weight, but more than the row below
    return s, z[s.mask], w, band[s.mask]


def test_a_band_seen_edge_on_keeps_its_inside():
    """A grazing band three pixels thick: its edges beside the planes are placed, its middle
    row, with no neighbour that does not graze and off the outline, keeps where the solve put
    it (a broad steep surface's consistent normals are not noise)."""
    from fnin_cli.solvers.grazing import place_grazing

    s, z, w, band = _line_between_two_planes(rows=3)
    out, placed = place_grazing(s, z, w, 0.1)
    middle = np.zeros((7, 9), bool)
    middle[4, 1:-1] = True
    middle = middle[s.mask]
    assert not placed[middle].any() and np.array_equal(out[middle], z[middle])
    assert placed[band & ~middle].all()


def test_a_pixel_whose_every_neighbour_grazes_is_placed_with_them():
    """Regression (issue 51 item 4, hand v01 real-like): a silhouette pixel whose noisy normal
    does not graze while both its neighbours do is tied to the rest only through grazing
    normals; it was kept where the solve left it (50 units off) and its grazing neighbour
    followed it. A 1x5 row: two flat pixels at 0, a grazing pixel they trust, the lone pixel
    off at 50, a grazing end pixel; every pixel ends at 0."""
    from fnin_cli.camera import Camera
    from fnin_cli.solvers.grazing import place_grazing
    from fnin_cli.solvers.system import NormalSystem

    n = np.dstack([np.zeros((1, 5, 1)), np.zeros((1, 5, 1)), -np.ones((1, 5, 1))])
    n[0, [2, 4]] = [0.0, -0.999, -0.04]
    n[0, 3] = [0.0, -0.6, -0.8]            # cos 0.8 to the ray: not grazing
    s = NormalSystem(n / np.linalg.norm(n, axis=2, keepdims=True), np.ones((1, 5), bool), Camera(None, 1.0))
    w = {d: np.ones(5) for d in ("u+", "u-", "v+", "v-")}
    w["u+"][3] = 0.0                       # the lone pixel and the end pixel trust each other least
    w["u-"][4] = 0.0
    z, placed = place_grazing(s, np.array([0.0, 0.0, 0.0, 50.0, 0.0]), w, 0.1)
    assert placed[3] and placed[4] and not placed[:2].any()
    np.testing.assert_allclose(z, 0.0, atol=1e-12)
