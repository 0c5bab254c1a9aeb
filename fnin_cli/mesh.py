"""Depth map -> triangle mesh, without bridging depth discontinuities.

One vertex per masked pixel that is in a triangle (row-major order of the mask), at
``camera.back_project(depth)``. Each 2x2 pixel quad gives two triangles, or one where
only three of its pixels are in the mask. A triangle is dropped when any of its three
edges is a *discontinuity*, so occlusion boundaries open up and separate islands stay
separate. A pixel left in no triangle (all its triangles cut, or no neighbour to make
one) would be a floating vertex and is dropped; a map with no triangle at all
is a point cloud of every pixel, and ``keep_lone=True`` keeps one vertex per pixel.

Discontinuity test for an edge between pixels p and q
------------------------------------------------------

With normals (the usual case), the edge is compared with what each endpoint's normal
predicts, using the residuals of the WLS system (:class:`~fnin_cli.solvers.system.NormalSystem`):
``r = a * (t_q - t_p) + n`` in "normal units" (t = log-depth for perspective, depth for
orthographic; a = f (n . ray) or n_z / s). On a smooth surface |r| is tiny (of the order
of the normal's change over one pixel); a depth jump makes it large. The edge is cut when
**neither** endpoint's normal explains the jump: ``min(|r_p|, |r_q|) > cut`` (default 1,
i.e. an unexplained jump of about one pixel footprint divided by the normal's tilt).
Steep but smooth surfaces (grazing normals, small ``a``) are therefore kept.

The diagonal edge of a triangle gets the same test along the diagonal step
(du, dv) = (1, +-1): ``r = a_d dt + g n_x du + n_y dv / g`` with ``g = sqrt(f_y / f_x)``
(1 for orthographic) and ``a_d = g a_u``, which is the one-pixel residual of the
diagonal direction.

Without normals (or where a normal is not finite), an edge is cut when its depth jump
is far above the local pixel footprint: ``|z_q - z_p| > JUMP_FACTOR * footprint`` with
footprint = min(z_p, z_q) / f_x (horizontal), / f_y (vertical), their Euclidean
combination for diagonals (perspective), or the pixel size (times sqrt 2 on diagonals)
for orthographic cameras. JUMP_FACTOR = 20 keeps surfaces up to ~87 degrees of slope.

Full quads are split along the diagonal that keeps more triangles (then the shorter
one in 3D), so a jump across one corner removes one triangle, not two.

Faces are wound so that their normals point toward the camera (n_z < 0 in the OpenCV
frame: x right, y down, z forward), matching the normal maps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import io
from .camera import Camera
from .conventions import from_internal
from .errors import FninError

# without normals, a jump above this many pixel footprints is a discontinuity: surfaces up
# to ~87 degrees of slope stay whole (the module's docstring)
JUMP_FACTOR = 20.0
# with normals, an edge neither endpoint's normal explains beyond this residual (normal
# units: about one pixel footprint over the normal's tilt) is a discontinuity
RESIDUAL_CUT = 1.0
# the mesh is built in bands of about this many pixels: their temporaries stay small
# (docs/decisions.md#outputs-at-scale)
MESH_BAND_PIXELS = 1 << 16


def _footprint_cut(z_p, z_q, camera: Camera, step: str):
    """Depth jump far above the pixel footprint ("h", "v" or "d" for diagonal)."""
    dz = np.abs(z_q - z_p)
    if camera.perspective:
        near = np.minimum(z_p, z_q)
        fx, fy = camera.K[0, 0], camera.K[1, 1]
        inv = {"h": 1.0 / fx, "v": 1.0 / fy, "d": np.hypot(1.0 / fx, 1.0 / fy)}[step]
        footprint = near * inv
    else:
        footprint = camera.pixel_size * (np.sqrt(2.0) if step == "d" else 1.0)
    return dz > JUMP_FACTOR * footprint


def _residual_cut(r_p, r_q, cut: float, z, pair, camera: Camera, step: str):
    """Cut where neither endpoint's residual explains the edge (min |r| > cut), where both
    are finite; elsewhere the footprint rule of the depths ``z`` at the ``pair`` of slices
    (p, q), computed only there: an edge without both depths is never cut."""
    res_cut = np.abs(r_p)
    np.minimum(res_cut, np.abs(r_q), out=res_cut)
    res_cut -= cut
    out = res_cut > 0
    other = ~np.isfinite(res_cut)
    z_p, z_q = z[pair[0]], z[pair[1]]
    other &= ~np.isnan(z_p)
    other &= ~np.isnan(z_q)
    if other.any():
        out[other] = _footprint_cut(z_p[other], z_q[other], camera, step)
    return out


def edge_cuts(depth, camera: Camera, mask, normals=None, cut: float = RESIDUAL_CUT, system_residuals=None,
              origin=(0, 0)):
    """Boolean cut maps for the three edge families of the pixel grid.

    Returns ``(cut_h, cut_v, cut_d1, cut_d2)`` of shapes (H, W-1), (H-1, W), (H-1, W-1),
    (H-1, W-1): horizontal edges (r, c)-(r, c+1), vertical (r, c)-(r+1, c), diagonals
    (r, c)-(r+1, c+1) and (r, c+1)-(r+1, c). Values are meaningful only where both
    endpoints are in ``mask``. ``origin``: the (row, col) in the image of the arrays'
    first pixel, when they are a crop.
    """
    z = np.where(mask, np.asarray(depth, np.float64), np.nan)
    # the four families' pixel pairs (p, q): horizontal, vertical, the two diagonals
    h_p, h_q = (slice(None), slice(None, -1)), (slice(None), slice(1, None))
    v_p, v_q = (slice(None, -1), slice(None)), (slice(1, None), slice(None))
    d1_p, d1_q = (slice(None, -1), slice(None, -1)), (slice(1, None), slice(1, None))
    d2_p, d2_q = (slice(None, -1), slice(1, None)), (slice(1, None), slice(None, -1))
    if normals is None and system_residuals is None:
        with np.errstate(invalid="ignore"):
            return tuple(_footprint_cut(z[p], z[q], camera, step)
                         for p, q, step in ((h_p, h_q, "h"), (v_p, v_q, "v"), (d1_p, d1_q, "d"), (d2_p, d2_q, "d")))

    if normals is not None:
        t = camera.unknown_from_depth(z)
        a_u, a_v, nx, ny = camera.residual_coefficients(np.asarray(normals), origin=origin)
    with np.errstate(invalid="ignore"):
        if system_residuals is None:
            # the system's residuals r = a * dt + n of each pixel pair, on the whole grid
            # (the same numbers as NormalSystem.residuals where both pixels are in the mask)
            dh, dv = t[:, 1:] - t[:, :-1], t[1:, :] - t[:-1, :]
            cut_h = _residual_cut(a_u[:, :-1] * dh + nx[:, :-1], a_u[:, 1:] * dh + nx[:, 1:], cut, z,
                                  (h_p, h_q), camera, "h")
            cut_v = _residual_cut(a_v[:-1, :] * dv + ny[:-1, :], a_v[1:, :] * dv + ny[1:, :], cut, z,
                                  (v_p, v_q), camera, "v")
        else:
            n_pix = int(mask.sum())
            if any(np.shape(system_residuals[d]) != (n_pix,) for d in ("u+", "u-", "v+", "v-")):
                raise ValueError("system_residuals must hold one value per masked pixel (the mesh's mask)")

            def img(values):
                out = np.full(mask.shape, np.nan)
                out[mask] = values
                return out

            cut_h = _residual_cut(img(system_residuals["u+"])[h_p], img(system_residuals["u-"])[h_q],
                                  cut, z, (h_p, h_q), camera, "h")
            cut_v = _residual_cut(img(system_residuals["v+"])[v_p], img(system_residuals["v-"])[v_q],
                                  cut, z, (v_p, v_q), camera, "v")

        if normals is not None:
            g = np.sqrt(camera.K[1, 1] / camera.K[0, 0]) if camera.perspective else 1.0
            a_d = g * a_u

            def diag_cut(sl_p, sl_q, du, dv):
                dt = t[sl_q] - t[sl_p]
                return _residual_cut(a_d[sl_p] * dt + g * nx[sl_p] * du + ny[sl_p] * dv / g,
                                     a_d[sl_q] * dt + g * nx[sl_q] * du + ny[sl_q] * dv / g, cut,
                                     z, (sl_p, sl_q), camera, "d")

            # (r, c) -> (r+1, c+1): du = +1, dv = +1;  (r, c+1) -> (r+1, c): du = -1, dv = +1
            cut_d1 = diag_cut(d1_p, d1_q, 1.0, 1.0)
            cut_d2 = diag_cut(d2_p, d2_q, -1.0, 1.0)
        else:
            cut_d1 = _footprint_cut(z[d1_p], z[d1_q], camera, "d")
            cut_d2 = _footprint_cut(z[d2_p], z[d2_q], camera, "d")
    return cut_h, cut_v, cut_d1, cut_d2


@dataclass
class MeshArrays:
    """A triangle mesh as plain arrays: what :func:`write_mesh` needs, without trimesh."""

    vertices: np.ndarray               # (V, 3) float64
    faces: np.ndarray                  # (F, 3) int64, wound toward the camera
    vertex_colors: np.ndarray | None   # (V, 4) uint8 RGBA, or None

    def to_trimesh(self):
        """The same mesh as a ``trimesh.Trimesh`` (``process=False``)."""
        import trimesh

        return trimesh.Trimesh(vertices=self.vertices, faces=self.faces, vertex_colors=self.vertex_colors,
                               process=False)


def build_mesh(depth, camera: Camera, mask, normals=None, colors: bool = True, cut: float = RESIDUAL_CUT,
               system_residuals=None, keep_lone: bool = False):
    """Triangle mesh (``trimesh.Trimesh``, ``process=False``) of a depth map.

    The arguments are those of :func:`mesh_arrays`, which builds the same mesh as plain
    arrays (no trimesh import: what the CLI writes).

    Examples
    --------
    >>> from fnin_cli import load_input, integrate                     # doctest: +SKIP
    >>> inp = load_input("samples/dome"); res = integrate(inp)          # doctest: +SKIP
    >>> mesh = build_mesh(res.depth, res.camera, res.mask, normals=inp.normals)  # doctest: +SKIP
    >>> write_mesh("dome.ply", mesh)                                    # doctest: +SKIP
    """
    return mesh_arrays(depth, camera, mask, normals, colors, cut, system_residuals, keep_lone).to_trimesh()


def mesh_arrays(depth, camera: Camera, mask, normals=None, colors: bool = True, cut: float = RESIDUAL_CUT,
                system_residuals=None, keep_lone: bool = False) -> MeshArrays:
    """The triangle mesh of a depth map as :class:`MeshArrays`.

    ``depth``: (H, W) depth (NaN outside the mask is fine); ``mask``: (H, W) bool, pixels
    with non-finite depth (or depth <= 0 for perspective) are left out too; ``normals``:
    (H, W, 3) internal-frame normals for the discontinuity test and vertex colours
    (RGB = (n_ps + 1) / 2); ``cut``: residual threshold in normal units;
    ``system_residuals``: residuals ``NormalSystem.residuals(z)`` already computed for
    exactly this mask (saves rebuilding the system); ``keep_lone``: keep the vertices of
    pixels in no triangle too (one vertex per pixel; by default they are dropped unless no
    pixel is in a triangle). See the module docstring.
    """
    depth = np.asarray(depth)   # float64 once cropped to the mask's box, below
    if depth.ndim != 2:
        raise FninError(f"depth must be an (H, W) array, got shape {depth.shape}")
    mask = np.asarray(mask, bool)
    if mask.shape != depth.shape:
        raise FninError(f"mask shape {mask.shape} differs from depth shape {depth.shape}")
    if normals is not None and np.shape(normals) != depth.shape + (3,):
        raise FninError(f"normals shape {np.shape(normals)} differs from depth shape {depth.shape} (+3)")
    with np.errstate(invalid="ignore"):
        m = mask & np.isfinite(depth) & ((depth > 0) if camera.perspective else True)
    if system_residuals is not None and not np.array_equal(m, mask):
        raise ValueError("system_residuals given but the depth is not finite/positive on the whole mask")

    # everything below works on the mask's bounding box (the same mesh, 3-6x less work on
    # DiLiGenT-like frames): masked pixels keep their row-major order
    rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
    r0, c0 = (int(rows[0]), int(cols[0])) if rows.size else (0, 0)
    box = (slice(r0, int(rows[-1]) + 1), slice(c0, int(cols[-1]) + 1)) if rows.size else (slice(0, 0),) * 2
    depth, m = np.asarray(depth[box], np.float64), m[box]
    normals = None if normals is None else np.asarray(normals)[box]

    # a band of rows at a time, so that each band's temporaries stay small: the same
    # vertices and faces, in the same order, as the whole box at once
    h = m.shape[0]
    first = np.concatenate([[0], np.cumsum(np.count_nonzero(m, axis=1))])   # first vertex of each row
    step = max(1, MESH_BAND_PIXELS // max(1, m.shape[1]))
    # (b0, b1): the quads of rows b0 .. b1-1, on pixel rows b0 .. b1 (one row: no quads)
    bands = [(b0, min(b0 + step, h - 1)) for b0 in range(0, h - 1, step)] or ([(0, 0)] if h else [])
    # first the triangles of each band (which of its quads' four triangles are kept), then
    # the vertices: the pixels in a triangle (a pixel in none would float), all of
    # them with keep_lone or when there is no triangle at all (a point cloud)
    verts, tris = [], []
    used = None if keep_lone else np.zeros(m.shape, bool)
    for b0, b1 in bands:
        sl, mb = slice(b0, b1 + 1), m[b0:b1 + 1]
        points = camera.back_project(np.where(mb, depth[sl], np.nan), origin=(r0 + b0, c0))
        verts.append(points[mb] if b1 == h - 1 else points[:-1][mb[:-1]])
        res = None if system_residuals is None else {d: v[first[b0]:first[b1 + 1]] for d, v in system_residuals.items()}
        cuts = edge_cuts(depth[sl], camera, mb, None if normals is None else normals[sl], cut, res, (r0 + b0, c0))
        tris.append(_quad_triangles(mb, points, cuts))
        if used is not None:
            _mark_corners(used[sl], tris[-1])
    keep = m if used is None or not used.any() else used
    if keep is not m:
        # each band's vertices (its rows but the last, the last band all) less the dropped
        verts = [v[keep[b0:b1 + (b1 == h - 1)][m[b0:b1 + (b1 == h - 1)]]] for (b0, b1), v in zip(bands, verts)]
        first = np.concatenate([[0], np.cumsum(np.count_nonzero(keep, axis=1))])
    kinds = ([], [], [], [])
    for (b0, b1), sel in zip(bands, tris):
        kb = keep[b0:b1 + 1]
        index = np.full(kb.shape, -1, np.int64)
        index[kb] = np.arange(first[b0], first[b1 + 1])
        for kind, faces in zip(kinds, _quad_faces(sel, index)):
            kind.append(faces)
    vertices = np.concatenate(verts) if bands else np.zeros((0, 3))
    faces = np.concatenate([f for kind in kinds for f in kind]) if bands else np.zeros((0, 3), np.int64)

    vertex_colors = None
    if colors and normals is not None:
        ps = from_internal(normals[keep].astype(np.float64), "ps")
        rgb = np.clip(np.round((np.nan_to_num(ps, nan=1.0) + 1.0) / 2.0 * 255.0), 0, 255).astype(np.uint8)
        vertex_colors = np.concatenate([rgb, np.full((rgb.shape[0], 1), 255, np.uint8)], axis=1)
    return MeshArrays(vertices, faces, vertex_colors)


def _quad_triangles(m, points, cuts) -> tuple:
    """Which triangles of the 2x2 pixel quads of one band are kept (see the module
    docstring): four (H-1, W-1) bool maps, one per kind (the corner each omits: d, a, c,
    b), as :func:`_quad_faces` takes them."""
    cut_h, cut_v, cut_d1, cut_d2 = cuts
    ok_h = m[:, :-1] & m[:, 1:] & ~cut_h
    ok_v = m[:-1, :] & m[1:, :] & ~cut_v
    ok_ad = m[:-1, :-1] & m[1:, 1:] & ~cut_d1
    ok_bc = m[:-1, 1:] & m[1:, :-1] & ~cut_d2
    # quad corners a (r, c), b (r, c+1), c (r+1, c), d (r+1, c+1)
    ab, cd = ok_h[:-1, :], ok_h[1:, :]
    ac, bd = ok_v[:, :-1], ok_v[:, 1:]
    t_abc = ab & ac & ok_bc          # omit d
    t_bcd = bd & cd & ok_bc          # omit a
    t_abd = ab & bd & ok_ad          # omit c
    t_acd = ac & cd & ok_ad          # omit b
    k_bc = t_abc.astype(np.int8) + t_bcd
    k_ad = t_abd.astype(np.int8) + t_acd
    with np.errstate(invalid="ignore"):
        len_bc = np.linalg.norm(points[1:, :-1] - points[:-1, 1:], axis=-1)
        len_ad = np.linalg.norm(points[1:, 1:] - points[:-1, :-1], axis=-1)
    use_bc = (k_bc > k_ad) | ((k_bc == k_ad) & ~(len_bc > len_ad))
    return t_abc & use_bc, t_bcd & use_bc, t_abd & ~use_bc, t_acd & ~use_bc


# per kind of :func:`_quad_triangles`, its corners in winding order: (a, c, b) has negative
# signed area in (u, v) with v down, which back-projects to a normal with n_z < 0 (toward
# the camera); a (r, c), b (r, c+1), c (r+1, c), d (r+1, c+1) as (row, col) offsets
_CORNERS = (((0, 0), (1, 0), (0, 1)), ((0, 1), (1, 0), (1, 1)), ((0, 0), (1, 1), (0, 1)), ((0, 0), (1, 0), (1, 1)))


def _corner(a: np.ndarray, offset) -> np.ndarray:
    """The (H-1, W-1) view of an (H, W) pixel array at one corner of each quad."""
    r, c = offset
    return a[r:a.shape[0] - 1 + r, c:a.shape[1] - 1 + c]


def _mark_corners(used: np.ndarray, triangles) -> None:
    """Set ``used`` (a band's (H, W) pixels) where a kept triangle has a corner."""
    for sel, corners in zip(triangles, _CORNERS):
        for offset in corners:
            _corner(used, offset)[sel] = True


def _quad_faces(triangles, index) -> tuple:
    """The kept ``triangles`` (:func:`_quad_triangles`) as four (n, 3) arrays of the
    vertex ids ``index`` gives the pixels, one per kind, wound toward the camera."""
    return tuple(np.stack([_corner(index, offset)[sel] for offset in corners], axis=-1)
                 for sel, corners in zip(triangles, _CORNERS))


# glTF's axes (y up, the viewer on +z) from the OpenCV frame (y down, z forward): a half
# turn about x, so a .glb opens the right way up, facing the viewer, in browser viewers
# and Blender; the other formats keep the camera frame (README "Outputs")
GLTF_FROM_CAMERA = np.diag([1.0, -1.0, -1.0])
# the mesh axes write_mesh offers (``--mesh-axes``): "opencv", the camera frame (x right,
# y down, z forward: PLY, OBJ and STL by default), and "opengl", glTF's and most viewers'
# (x right, y up, z toward the viewer: GLTF_FROM_CAMERA; GLB always, as glTF requires)
MESH_AXES = ("opencv", "opengl")


def write_mesh(path, mesh, force: bool = False, axes: str | None = None) -> Path:
    """Write ``mesh`` atomically as binary .ply, .obj, binary .stl or .glb (chosen by suffix).

    PLY, OBJ and GLB keep every vertex of ``mesh`` and the vertex colours (from
    :func:`mesh_arrays`: the pixels in a triangle, every pixel of a point cloud); STL
    stores triangles only (no colours). ``axes`` (``MESH_AXES``): None or "opencv" keep
    PLY/OBJ/STL in the camera frame (x right, y down, z forward; y is down in viewers that
    take y as up), "opengl" writes (x, -y, -z): x right, y up, z toward the viewer, a half
    turn about x (the faces keep their winding). GLB is always in glTF's axes
    (``GLTF_FROM_CAMERA``, the "opengl" ones): "opencv" with .glb is an error."""
    path = Path(path)
    suf = path.suffix.lower()
    if suf not in io.MESH_SUFFIXES:
        raise FninError(f"unknown mesh type '{suf or '(none)'}'; use one of {', '.join(io.MESH_SUFFIXES)}", path)
    if axes is not None and axes not in MESH_AXES:
        raise FninError(f"unknown mesh axes '{axes}'; use {' or '.join(MESH_AXES)}")
    if axes == "opencv" and suf == ".glb":
        raise FninError(GLB_AXES, path)
    path = io.check_output(path, force)
    vertices, faces = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    if axes == "opengl" and suf != ".glb":     # (write_glb turns them itself)
        vertices = np.asarray(vertices, np.float64) * np.diag(GLTF_FROM_CAMERA)
    with io.atomic_path(path) as tmp:
        if suf == ".stl":       # triangles only
            write_stl(tmp, vertices, faces)
        else:
            {".ply": write_ply, ".obj": write_obj, ".glb": write_glb}[suf](tmp, vertices, faces, _colors(mesh))
    return path


# the one message of the rule "a .glb is in glTF's axes" (write_mesh, the CLI's plan)
GLB_AXES = ("--mesh-axes opencv does not go with .glb: glTF fixes its axes (x right, y up, z toward the "
            "viewer); write .ply, .obj or .stl, or drop --mesh-axes")


def _colors(mesh):
    """RGBA vertex colours of a MeshArrays or a trimesh mesh (None without)."""
    if isinstance(mesh, MeshArrays):
        return mesh.vertex_colors
    visual = getattr(mesh, "visual", None)
    if visual is None or getattr(visual, "kind", None) != "vertex":
        return None
    return np.asarray(visual.vertex_colors, np.uint8)


# rows converted at a time by the writers: the file is written in pieces, so a 6 M-vertex
# mesh never has a second full copy (or its text) in memory (docs/decisions.md#outputs-at-scale)
WRITE_CHUNK = 1 << 18


def write_ply(path, vertices: np.ndarray, faces: np.ndarray, colors: np.ndarray | None = None) -> None:
    """Binary little-endian PLY: float32 x, y, z (+ uchar RGBA), faces as uchar count +
    int32 indices; the same bytes as trimesh's binary export, without importing trimesh
    (about a second of a single call's start-up; docs/decisions.md#start-up). Written a
    chunk of rows at a time from numpy structured arrays."""
    vdt = [("x", "<f4"), ("y", "<f4"), ("z", "<f4")]
    header = ["ply", "format binary_little_endian 1.0", "comment https://github.com/mikedh/trimesh",
              f"element vertex {len(vertices)}", "property float x", "property float y", "property float z"]
    if colors is not None:
        vdt += [("red", "u1"), ("green", "u1"), ("blue", "u1"), ("alpha", "u1")]
        header += ["property uchar red", "property uchar green", "property uchar blue", "property uchar alpha"]
    header += [f"element face {len(faces)}", "property list uchar int vertex_indices", "end_header"]
    fdt = np.dtype([("count", "u1"), ("index", "<i4", (3,))])
    with open(path, "wb") as fh:
        fh.write(("\n".join(header) + "\n").encode("ascii"))
        for i in range(0, len(vertices), WRITE_CHUNK):
            rows = slice(i, i + WRITE_CHUNK)
            v = np.empty(len(vertices[rows]), dtype=vdt)
            for j, name in enumerate("xyz"):
                v[name] = vertices[rows, j]
            if colors is not None:
                for j, name in enumerate(("red", "green", "blue", "alpha")):
                    v[name] = colors[rows, j]
            v.tofile(fh)
        for i in range(0, len(faces), WRITE_CHUNK):
            f = np.empty(len(faces[i:i + WRITE_CHUNK]), dtype=fdt)
            f["count"] = 3
            f["index"] = faces[i:i + WRITE_CHUNK]
            f.tofile(fh)


def write_stl(path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Binary STL: an 80-byte header of zeros and the triangle count (uint32), then per
    triangle its unit normal (b - a) x (c - a) / |...| (zero for a degenerate one), its
    corners a, b, c (float32, little-endian) and a zero attribute count; the layout of
    trimesh's export, written a chunk of triangles at a time (24 MP: about a tenth of its
    seconds, docs/decisions.md#outputs-at-scale)."""
    record = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attributes", "<u2")])
    vertices = np.asarray(vertices, np.float64)
    with open(path, "wb") as fh:
        fh.write(bytes(80) + np.array([len(faces)], "<u4").tobytes())
        for i in range(0, len(faces), WRITE_CHUNK):
            tri = vertices[faces[i:i + WRITE_CHUNK]]      # (k, 3 corners, xyz)
            normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
            length = np.sqrt(np.einsum("ij,ij->i", normal, normal))
            normal /= np.where(length > 0, length, np.inf)[:, None]
            out = np.zeros(len(tri), record)
            out["normal"] = normal
            out["corners"] = tri
            out.tofile(fh)


def write_glb(path, vertices: np.ndarray, faces: np.ndarray, colors: np.ndarray | None = None) -> None:
    """Binary glTF 2.0 (.glb) in glTF's axes (``GLTF_FROM_CAMERA``): one node, one mesh of
    triangles (``uint32`` indices; no faces: points), ``POSITION`` float32 and ``COLOR_0``
    normalised RGBA bytes, no material: the layout of trimesh's export, the indices
    written a chunk at a time (24 MP: a tenth of its seconds, docs/decisions.md#outputs-at-scale)."""
    import json

    faces = np.asarray(faces)
    positions = (np.asarray(vertices, np.float64) * np.diag(GLTF_FROM_CAMERA)).astype("<f4")
    # (attribute or "indices", accessor, the array, the dtype of its bytes), in the buffer's order
    parts = []
    if len(faces):
        parts.append(("indices", {"componentType": 5125, "type": "SCALAR", "count": faces.size,
                                  "max": [int(faces.max())], "min": [int(faces.min())]}, faces, "<u4"))
    if len(positions):
        parts.append(("POSITION", {"componentType": 5126, "type": "VEC3", "count": len(positions),
                                   "max": positions.max(axis=0).tolist(), "min": positions.min(axis=0).tolist()},
                      positions, "<f4"))
        if colors is not None:
            colors = np.asarray(colors, np.uint8)
            parts.append(("COLOR_0", {"componentType": 5121, "normalized": True, "type": "VEC4", "count": len(colors),
                                      "max": colors.max(axis=0).tolist(), "min": colors.min(axis=0).tolist()},
                          colors, "u1"))
    doc = {"asset": {"version": "2.0", "generator": "fnin"}, "scene": 0, "scenes": [{}]}
    offset = 0
    if parts:            # glTF's arrays are absent rather than empty
        primitive = {"attributes": {}, "mode": 4 if len(faces) else 0}
        views = []
        for k, (role, accessor, array, dtype) in enumerate(parts):
            accessor["bufferView"] = k
            if role == "indices":
                primitive["indices"] = k
            else:
                primitive["attributes"][role] = k
            views.append({"buffer": 0, "byteOffset": offset, "byteLength": array.size * np.dtype(dtype).itemsize})
            offset += views[-1]["byteLength"]                # every part's bytes are a multiple of 4
        doc.update(scenes=[{"nodes": [0]}], nodes=[{"mesh": 0}], meshes=[{"primitives": [primitive]}],
                   accessors=[p[1] for p in parts], bufferViews=views, buffers=[{"byteLength": offset}])
    text = json.dumps(doc, separators=(",", ":")).encode("ascii")
    text += b" " * (-len(text) % 4)
    with open(path, "wb") as fh:
        fh.write(np.array([0x46546C67, 2, 20 + len(text) + (8 + offset if offset else 0)], "<u4").tobytes())
        fh.write(np.array([len(text), 0x4E4F534A], "<u4").tobytes() + text)            # "JSON"
        if offset:
            fh.write(np.array([offset, 0x004E4942], "<u4").tobytes())                     # "BIN\0"
        for _, _, array, dtype in parts:
            for i in range(0, len(array), WRITE_CHUNK):
                array[i:i + WRITE_CHUNK].astype(dtype, copy=False).tofile(fh)


def write_obj(path, vertices: np.ndarray, faces: np.ndarray, colors: np.ndarray | None = None) -> None:
    """Wavefront OBJ: ``v x y z [r g b]`` (8 decimals, colours in 0..1) and ``f a b c``
    (1-based); the same bytes as trimesh's export (``include_normals=False,
    include_texture=False``), formatted by numpy a chunk of rows at a time
    (:func:`~fnin_cli.io.numtext.format_rows`; 6 M vertices in seconds, trimesh's export
    100 s and 2.9 GB, docs/decisions.md#outputs-at-scale)."""
    from .io.numtext import format_rows

    vertices = np.asarray(vertices, np.float64)
    with open(path, "wb") as fh:
        fh.write(b"# https://github.com/mikedh/trimesh\n")
        for i in range(0, len(vertices), WRITE_CHUNK):
            sl = slice(i, i + WRITE_CHUNK)
            cols = [vertices[sl]] + ([np.asarray(colors[sl, :3], np.float64) / 255.0] if colors is not None else [])
            fh.write(format_rows(b"v ", cols, ["f8"] * len(cols)))
        if not len(vertices):
            fh.write(b"v \n")
        for i in range(0, len(faces), WRITE_CHUNK):
            fh.write(format_rows(b"f ", [np.asarray(faces[i:i + WRITE_CHUNK], np.int64) + 1], ["d"]))
        if not len(faces):
            fh.write(b"f \n")
        fh.write(b"\n")
