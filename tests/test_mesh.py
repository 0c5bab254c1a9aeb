"""Depth map -> mesh: vertices, triangulation, discontinuity cuts, winding, files."""

import os

import numpy as np
import pytest
import trimesh
from helpers import SHAPE, STEP_COL, camera, irregular_mask, smooth_surface, step_surface
from plyfile import PlyData

from fnin_cli.data import analytic
from fnin_cli import io
from fnin_cli import mesh as mesh_module
from fnin_cli.camera import Camera
from fnin_cli.conventions import from_internal
from fnin_cli.errors import FninError
from fnin_cli.mesh import JUMP_FACTOR, build_mesh, edge_cuts, mesh_arrays, write_mesh
from fnin_cli.pipeline import build_input, integrate
from fnin_cli.solvers.system import NormalSystem


def components(mesh) -> list[set]:
    """Vertex sets of the face-connected components (isolated vertices ignored)."""
    return [set(np.unique(mesh.faces[f])) for f in trimesh.graph.connected_components(
        mesh.face_adjacency, nodes=np.arange(len(mesh.faces)), min_len=1)]


def pixel_ids(mask, region):
    """Vertex indices (row-major order of ``mask``) of the pixels in ``region``."""
    index = np.full(mask.shape, -1)
    index[mask] = np.arange(mask.sum())
    return set(index[mask & region])


# ---------------------------------------------------------------- vertices & faces

@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_one_vertex_per_masked_pixel_at_back_projection(kind):
    cam = camera(kind)
    surface = smooth_surface("paraboloid", cam)
    mask = irregular_mask()
    mesh = build_mesh(surface.depth, cam, mask, normals=surface.normals)
    assert len(mesh.vertices) == mask.sum()
    np.testing.assert_array_equal(mesh.vertices, cam.back_project(surface.depth)[mask])


def test_full_grid_gives_two_triangles_per_quad():
    cam = camera("persp")
    surface = smooth_surface("plane", cam)
    mesh = build_mesh(surface.depth, cam, surface.support, normals=surface.normals)
    h, w = SHAPE
    assert len(mesh.faces) == 2 * (h - 1) * (w - 1)
    assert len(components(mesh)) == 1
    # a closed grid: every interior edge is shared by exactly two faces
    assert mesh.is_winding_consistent


def test_three_pixel_quad_gives_one_triangle_and_isolated_pixel_none():
    depth = np.full((3, 3), 5.0)
    mask = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1]], bool)
    mesh = build_mesh(depth, Camera(None, 1.0), mask, keep_lone=True)
    assert len(mesh.vertices) == 4  # keep_lone: the isolated pixel keeps its vertex
    assert len(mesh.faces) == 1
    assert set(mesh.faces[0]) == {0, 1, 2}
    # by default a vertex in no triangle floats: it is dropped (issue 43)
    mesh = build_mesh(depth, Camera(None, 1.0), mask)
    assert len(mesh.vertices) == 3 and set(mesh.faces[0]) == {0, 1, 2}


def _spiked_plane(cam):
    """A plane with a lone pixel inside (far off the plane: every edge of it is cut), an
    island pixel of the mask and a one-pixel-wide row under the mask (each in no triangle)."""
    surface = smooth_surface("plane", cam)
    depth, mask = surface.depth.copy(), surface.support & irregular_mask()
    depth[20, 30] *= 3.0
    mask[1:4, 1:4] = False
    mask[2, 2] = True
    return depth, mask, surface.normals


@pytest.mark.parametrize("kind", ["persp", "ortho"])
@pytest.mark.parametrize("with_normals", [True, False])
def test_vertices_in_no_triangle_are_dropped_and_every_triangle_kept(kind, with_normals, monkeypatch):
    """Issue 43: a masked pixel whose triangles are all cut (a spike, an island pixel) is
    not written as a floating vertex: the kept vertices are the others in their order, each
    triangle has the same corners (3D points and colours) as with ``keep_lone``, in bands
    of one row as in one band."""
    cam = camera(kind)
    depth, mask, normals = _spiked_plane(cam)
    kw = {"normals": normals if with_normals else None}
    full = mesh_arrays(depth, cam, mask, keep_lone=True, **kw)
    used = np.zeros(len(full.vertices), bool)
    used[full.faces] = True
    index = np.full(mask.shape, -1)
    index[mask] = np.arange(mask.sum())
    assert not used[index[20, 30]] and not used[index[2, 2]] and used.sum() > 0.9 * mask.sum()
    for band in (10**9, 1):
        monkeypatch.setattr(mesh_module, "MESH_BAND_PIXELS", band)
        mesh = mesh_arrays(depth, cam, mask, **kw)
        assert len(mesh.vertices) == used.sum() == len(np.unique(mesh.faces))   # every vertex in a face
        np.testing.assert_array_equal(mesh.vertices, full.vertices[used])
        np.testing.assert_array_equal(mesh.vertices[mesh.faces], full.vertices[full.faces])
        if with_normals:
            np.testing.assert_array_equal(mesh.vertex_colors, full.vertex_colors[used])
        else:
            assert mesh.vertex_colors is None


def test_a_mesh_without_triangles_is_a_point_cloud_of_every_pixel(tmp_path):
    """No triangle at all (a checkerboard mask: no two pixels share an edge): every masked
    pixel keeps its vertex, in the file too."""
    cam = camera("ortho")
    surface = smooth_surface("paraboloid", cam)
    u, v = analytic.pixel_grid(SHAPE)
    mask = surface.support & ((u + v) % 2 == 0)
    mesh = mesh_arrays(surface.depth, cam, mask, normals=surface.normals)
    assert len(mesh.faces) == 0 and len(mesh.vertices) == mask.sum() == len(mesh.vertex_colors)
    ply = PlyData.read(str(write_mesh(tmp_path / "cloud.ply", mesh)))
    assert ply["vertex"].count == mask.sum() and ply["face"].count == 0


def test_written_ply_of_an_integrated_map_has_no_floating_vertex(tmp_path):
    cam = camera("ortho")
    depth, mask, normals = _spiked_plane(cam)
    ply = PlyData.read(str(write_mesh(tmp_path / "m.ply", mesh_arrays(depth, cam, mask, normals=normals))))
    faces = np.stack(ply["face"].data["vertex_indices"])
    assert len(faces) > 0
    assert np.array_equal(np.unique(faces), np.arange(ply["vertex"].count))


@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_faces_point_toward_the_camera_like_the_normals(kind):
    cam = camera(kind)
    surface = smooth_surface("sphere", cam)
    mesh = build_mesh(surface.depth, cam, surface.support, normals=surface.normals)
    fn = mesh.face_normals
    assert np.all(fn[:, 2] < 0)
    # and agree with the normal map at the faces' first vertex
    n = surface.normals[surface.support][mesh.faces[:, 0]]
    assert np.min(np.sum(fn * n, -1)) > 0.95


def test_vertex_colours_from_normals_in_ps_convention():
    cam = camera("persp")
    surface = smooth_surface("sphere", cam)
    mesh = build_mesh(surface.depth, cam, surface.support, normals=surface.normals)
    ps = from_internal(surface.normals[surface.support], "ps")
    expected = np.round((ps + 1) / 2 * 255).astype(np.uint8)
    np.testing.assert_array_equal(mesh.visual.vertex_colors[:, :3], expected)
    assert np.all(mesh.visual.vertex_colors[:, 3] == 255)
    plain = build_mesh(surface.depth, cam, surface.support, normals=surface.normals, colors=False)
    assert plain.visual.kind is None


# ---------------------------------------------------------------- discontinuities

def test_two_disjoint_discs_stay_two_islands():
    cam = camera("persp")
    surface = smooth_surface("plane", cam)
    mask = analytic.disc_mask(SHAPE, (18, 20), 12) | analytic.disc_mask(SHAPE, (60, 35), 14)
    mesh = build_mesh(surface.depth, cam, mask, normals=surface.normals)
    comps = components(mesh)
    assert len(comps) == 2
    assert sorted(map(len, comps)) == sorted([int(analytic.disc_mask(SHAPE, c, r).sum())
                                             for c, r in (((18, 20), 12), ((60, 35), 14))])


@pytest.mark.parametrize("kind", ["persp", "ortho"])
@pytest.mark.parametrize("with_normals", [True, False], ids=["normals", "footprint"])
def test_step_inside_one_mask_splits_exactly_at_the_step(kind, with_normals):
    cam = camera(kind)
    # jump of 40-100 pixel footprints: above the no-normals rule (JUMP_FACTOR = 20) everywhere
    surface, right = step_surface(cam, gap=70)
    mask = surface.support & irregular_mask()
    mesh = build_mesh(surface.depth, cam, mask, normals=surface.normals if with_normals else None)
    comps = components(mesh)
    assert len(comps) == 2
    assert {frozenset(c) for c in comps} == {frozenset(pixel_ids(mask, right)), frozenset(pixel_ids(mask, ~right))}
    # nothing else was cut: every quad fully on one side keeps both triangles
    m = mask
    full = m[:-1, :-1] & m[:-1, 1:] & m[1:, :-1] & m[1:, 1:]
    three = (m[:-1, :-1].astype(int) + m[:-1, 1:] + m[1:, :-1] + m[1:, 1:]) == 3
    straddle = np.zeros_like(full)
    straddle[:, STEP_COL - 1] = True
    assert len(mesh.faces) == 2 * np.sum(full & ~straddle) + np.sum(three & ~straddle)


def test_step_through_bini_result_is_cut_along_the_step():
    """End to end: BiNI puts a jump at the step (one column either side, see
    test_geometry), and the mesh of its depth opens there and nowhere else; the smooth
    WLS depth has no jump, so at most a few edges near the step are cut."""
    cam = camera("persp")
    surface, _ = step_surface(cam)
    inp = build_input(surface.normals.astype(np.float32), K=cam.K)
    rows_cut = {}
    for method in ("bini", "wls"):
        res = integrate(inp, method=method)
        cut_h, cut_v, _, _ = edge_cuts(res.depth, cam, res.mask, inp.normals)
        m = res.mask
        cut_h &= m[:, :-1] & m[:, 1:]
        cut_v &= m[:-1, :] & m[1:, :]
        near = 1.5 if method == "bini" else 3.5  # columns from the step
        cols = np.nonzero(cut_h.any(axis=0))[0]
        assert np.all(np.abs(cols - (STEP_COL - 0.5)) <= near), (method, cols)
        assert np.all(np.abs(np.nonzero(cut_v.any(axis=0))[0] - (STEP_COL - 0.5)) <= near)
        rows_cut[method] = int(cut_h.any(axis=1).sum())
        if method == "bini":
            mesh = build_mesh(res.depth, cam, m, normals=inp.normals)
            assert len(mesh.faces) < 2 * (SHAPE[0] - 1) * (SHAPE[1] - 1) - SHAPE[0]
    assert rows_cut["bini"] >= 0.9 * SHAPE[0], rows_cut
    assert rows_cut["wls"] <= 0.25 * SHAPE[0], rows_cut


def test_steep_smooth_surface_is_not_cut():
    """A plane at 85 degrees to the view: depth changes by ~11 footprints per pixel,
    but the normals explain it (and it is under the no-normals footprint rule too)."""
    cam = Camera(None, 1.0)
    ang = np.radians(85.0)
    surface = analytic.plane(SHAPE, cam, normal=[np.sin(ang), 0.0, -np.cos(ang)], point=[40.0, 30.0, 1000.0])
    for normals in (surface.normals, None):
        mesh = build_mesh(surface.depth, cam, surface.support, normals=normals)
        assert len(mesh.faces) == 2 * (SHAPE[0] - 1) * (SHAPE[1] - 1)


def test_footprint_rule_threshold():
    """Without normals: cut when |dz| > JUMP_FACTOR * footprint (z / f), keep just below.
    Corner b of the quad jumps: above the threshold its two edges (a-b, b-d) are cut and
    only triangle (a, c, d) is left; the diagonal's threshold is sqrt(2) larger."""
    cam = Camera(np.array([[100.0, 0, 0.5], [0, 100.0, 0.5], [0, 0, 1]]))
    threshold = JUMP_FACTOR * 10.0 / 100.0
    for factor, expected in ((0.99, 2), (1.01, 1)):
        depth = np.array([[10.0, 10.0 + factor * threshold], [10.0, 10.0]])
        mesh = build_mesh(depth, cam, np.ones((2, 2), bool), keep_lone=True)
        assert len(mesh.faces) == expected, factor
    assert set(mesh.faces[0]) == {0, 2, 3}


def test_corner_jump_keeps_the_other_triangle():
    """A quad whose corner a is far away: the split along b-c keeps triangle (b, c, d)."""
    depth = np.array([[100.0, 1.0], [1.0, 1.0]])
    mesh = build_mesh(depth, Camera(None, 1.0), np.ones((2, 2), bool), keep_lone=True)
    assert len(mesh.faces) == 1
    assert set(mesh.faces[0]) == {1, 2, 3}
    assert mesh.face_normals[0, 2] < 0


def test_cut_threshold_with_normals():
    """Residual test: a jump of r normal units is cut iff r > cut."""
    cam = Camera(None, 1.0)
    n = np.zeros((1, 2, 3))
    n[..., 2] = -1.0  # fronto-parallel: residual of the edge = a * dz = -dz
    for dz, cut, kept in ((0.5, 1.0, True), (1.5, 1.0, False), (1.5, 2.0, True)):
        depth = np.array([[0.0, dz], [0.0, dz]])
        normals = np.concatenate([n, n], axis=0)
        mesh = build_mesh(depth, cam, np.ones((2, 2), bool), normals=normals, cut=cut)
        assert (len(mesh.faces) == 2) == kept, (dz, cut)


def test_system_residuals_give_the_same_mesh():
    cam = camera("persp")
    surface, _ = step_surface(cam)
    mask = surface.support
    system = NormalSystem(surface.normals, mask, cam)
    res = system.residuals(np.log(surface.depth[mask]))
    a = build_mesh(surface.depth, cam, mask, normals=surface.normals)
    b = build_mesh(surface.depth, cam, mask, normals=surface.normals, system_residuals=res)
    np.testing.assert_array_equal(a.faces, b.faces)
    with pytest.raises(ValueError):
        build_mesh(surface.depth, cam, mask, system_residuals={d: v[:-1] for d, v in res.items()})


@pytest.mark.parametrize("kind", ["persp", "ortho"])
@pytest.mark.parametrize("source", ["normals", "residuals", "footprint"])
def test_mesh_built_in_bands_equals_the_whole_box_at_once(kind, source, monkeypatch):
    """mesh_arrays works a band of rows at a time (MESH_BAND_PIXELS): one row per band, a
    few rows, or the whole box in one band give the same vertices, faces (same order) and
    colours to the last bit; with holes, a step and NaN normals (the footprint rule) inside."""
    cam = camera(kind)
    surface, _ = step_surface(cam, gap=70)
    mask = surface.support & irregular_mask()
    normals = surface.normals.copy()
    normals[20:24, 30:34] = np.nan       # residuals not finite there: the footprint rule decides
    kw = {"normals": None if source == "footprint" else normals}
    if source == "residuals":
        kw = {"normals": surface.normals,
              "system_residuals": NormalSystem(surface.normals, mask, cam).residuals(
                  cam.unknown_from_depth(surface.depth)[mask])}
    meshes = []
    for band in (10**9, 3 * SHAPE[1], 1):
        monkeypatch.setattr(mesh_module, "MESH_BAND_PIXELS", band)
        meshes.append(mesh_arrays(surface.depth, cam, mask, **kw))
    whole = meshes[0]
    assert len(whole.faces) > 0
    for m in meshes[1:]:
        np.testing.assert_array_equal(m.vertices, whole.vertices)
        np.testing.assert_array_equal(m.faces, whole.faces)
        np.testing.assert_array_equal(m.vertex_colors, whole.vertex_colors)


def test_residual_rule_falls_back_to_the_footprint_only_where_residuals_are_not_finite():
    """Where a normal is NaN the edge is cut by the footprint rule (a jump far above the
    pixel footprint), elsewhere by the residuals; an edge with a NaN depth is never cut."""
    cam = camera("persp")
    surface, right = step_surface(cam, gap=70)
    mask = surface.support
    normals = surface.normals.copy()
    normals[:, STEP_COL - 1] = np.nan            # the step's left column: no normal
    depth = surface.depth.copy()
    depth[5, 5] = np.nan
    cut_h, _, _, _ = edge_cuts(depth, cam, mask, normals)
    footprint_h, _, _, _ = edge_cuts(depth, cam, mask)
    both = mask[:, :-1] & mask[:, 1:] & np.isfinite(depth[:, :-1]) & np.isfinite(depth[:, 1:])
    nan_col = np.zeros_like(both)
    nan_col[:, STEP_COL - 2:STEP_COL] = True     # the edges touching that column
    np.testing.assert_array_equal(cut_h[both & nan_col], footprint_h[both & nan_col])
    assert cut_h[both & nan_col].any()           # the step is cut there by the footprint rule
    assert not cut_h[~both].any() and not footprint_h[~both].any()


@pytest.mark.parametrize("kind", ["persp", "ortho"])
def test_mesh_does_not_depend_on_the_empty_frame_around_the_object(kind):
    """The mesh is built on the mask's bounding box: an object with a wide empty border
    gives the same faces and colours, and vertices that differ only by the border's shift
    (perspective: the principal point moved by the border), as the tightly framed one."""
    cam = camera(kind)
    surface, _ = step_surface(cam)
    mask = surface.support & irregular_mask()
    pad = ((37, 11), (5, 52))
    big_depth = np.pad(surface.depth, pad, constant_values=np.nan)
    big_normals = np.pad(surface.normals, pad + ((0, 0),), constant_values=np.nan)
    big_mask = np.pad(mask, pad)
    if cam.perspective:
        K = cam.K.copy()
        K[0, 2] += pad[1][0]
        K[1, 2] += pad[0][0]
        big_cam = Camera(K)
    else:
        big_cam = cam
    tight = build_mesh(surface.depth, cam, mask, normals=surface.normals)
    big = build_mesh(big_depth, big_cam, big_mask, normals=big_normals)
    np.testing.assert_array_equal(big.faces, tight.faces)
    np.testing.assert_array_equal(big.visual.vertex_colors, tight.visual.vertex_colors)
    shift = np.zeros(3) if cam.perspective else np.array([pad[1][0], pad[0][0], 0.0]) * cam.pixel_size
    np.testing.assert_allclose(big.vertices - shift, tight.vertices, rtol=1e-12, atol=1e-12)


def test_camera_origin_addresses_a_crop_of_the_image():
    cam = camera("persp")
    full = cam.rays(SHAPE)
    np.testing.assert_array_equal(cam.rays((7, 9), origin=(3, 5)), full[3:10, 5:14])
    n = smooth_surface("paraboloid", cam).normals
    whole = cam.residual_coefficients(n)
    part = cam.residual_coefficients(n[3:10, 5:14], origin=(3, 5))
    for a, b in zip(whole, part):
        np.testing.assert_array_equal(a[3:10, 5:14], b)


def test_nan_depth_inside_mask_is_left_out():
    cam = camera("ortho")
    surface = smooth_surface("plane", cam)
    depth = surface.depth.copy()
    depth[10, 10] = np.nan
    mesh = build_mesh(depth, cam, surface.support)
    assert len(mesh.vertices) == surface.support.sum() - 1
    assert not np.isnan(mesh.vertices).any()


# ---------------------------------------------------------------- files

@pytest.mark.parametrize("depth_suffix", [".npy", ".exr"])
def test_ply_round_trip_with_independent_reader(tmp_path, depth_suffix):
    cam = camera("persp")
    surface = smooth_surface("sphere", cam)
    inp = build_input(surface.normals.astype(np.float32), K=cam.K)
    res = integrate(inp, method="wls")
    depth_path = io.write_array(tmp_path / f"depth{depth_suffix}", res.depth)
    mesh = build_mesh(res.depth, res.camera, res.mask, normals=inp.normals)
    path = write_mesh(tmp_path / "mesh.ply", mesh)

    ply = PlyData.read(str(path))
    assert ply.text is False  # binary
    vert = ply["vertex"].data
    xyz = np.stack([vert["x"], vert["y"], vert["z"]], -1).astype(np.float64)
    depth_back, _ = io.read_array(depth_path)
    assert len(xyz) == res.mask.sum()
    np.testing.assert_allclose(xyz, cam.back_project(depth_back.astype(np.float64))[res.mask],
                               rtol=1e-6, atol=0)
    faces = np.stack(ply["face"].data["vertex_indices"])
    np.testing.assert_array_equal(faces, mesh.faces)
    rgb = np.stack([vert["red"], vert["green"], vert["blue"]], -1)
    np.testing.assert_array_equal(rgb, mesh.visual.vertex_colors[:, :3])


def test_obj_loads_back(tmp_path):
    cam = camera("ortho")
    surface, _ = step_surface(cam)
    mesh = build_mesh(surface.depth, cam, surface.support, normals=surface.normals)
    path = write_mesh(tmp_path / "mesh.OBJ", mesh)
    back = trimesh.load(path, process=False, force="mesh")
    assert len(back.vertices) == len(mesh.vertices)
    assert len(back.faces) == len(mesh.faces)
    np.testing.assert_allclose(back.vertices, mesh.vertices, rtol=1e-7, atol=1e-6)


def test_write_mesh_refuses_unknown_suffix_and_existing_file(tmp_path):
    mesh = build_mesh(np.ones((2, 2)), Camera(None, 1.0), np.ones((2, 2), bool))
    for name in ("mesh.3mf", "mesh"):
        with pytest.raises(FninError, match="unknown mesh type"):
            write_mesh(tmp_path / name, mesh)
    path = write_mesh(tmp_path / "m.ply", mesh)
    before = path.read_bytes()
    with pytest.raises(FninError, match="exists"):
        write_mesh(path, build_mesh(np.ones((3, 3)), Camera(None, 1.0), np.ones((3, 3), bool)))
    assert path.read_bytes() == before
    write_mesh(path, build_mesh(np.ones((3, 3)), Camera(None, 1.0), np.ones((3, 3), bool)), force=True)
    assert PlyData.read(str(path))["vertex"].count == 9
    assert sorted(os.listdir(tmp_path)) == ["m.ply"]  # no temporary files left behind
    with pytest.raises(FninError, match="does not exist"):
        write_mesh(tmp_path / "missing" / "m.ply", mesh)
