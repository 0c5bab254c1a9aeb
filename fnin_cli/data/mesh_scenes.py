"""Training / validation / benchmark scenes rendered from real triangle meshes.

Meshes: any folder of ``.npz`` files (keys ``vertices``, ``faces``) and, through trimesh,
``.ply .obj .stl .off`` files; ``shared/data/meshes`` holds 24 of them.

Split (fixed, by name): ``VALIDATION_MESHES`` = boot, hand, koala, lionstatue, penguin
are never trained on; the other 19 meshes of ``shared/data/meshes`` are
``TRAIN_MESHES``.  A name in neither list (a foreign folder) is assigned by a hash:
validation iff int(sha1(name)[:8], 16) % 5 == 0 (about 20 %), stable across runs and
machines (``split_names``).

``make_mesh_scene`` draws, deterministically per seed: 1..max_objects meshes, each
centred (bounding-box centre), scaled to unit bounding radius, rotated uniformly over
SO(3) and placed so that its bounding sphere covers a random disc of the image; further
objects overlap the first one in the image and sit in front of or behind it (depth gap
1.05-1.8 times the sum of the radii, so they occlude without interpenetrating).
Camera: perspective with f = L * exp(U(ln 0.8, ln 7)) (L = long side), principal point
within 5 % of the centre, the first object at depth 1 (like ``synthetic.make_scene``);
or (probability ``ortho_prob``) orthographic with pixel size 1 and the first object at
depth 2 L (depth in pixel units).  Degenerate draws (fewer than max(64, 3 % of the
image) masked pixels) are redrawn from the sub-seeds [seed, 1], [seed, 2], ...

Benchmark (``bench_scenes``): 14 fixed views of the validation meshes, 12 at 612x512 and
2 at 2048x1536, 4 orthographic, 4 with two objects, clean normals, no holes.  Units are
millimetres: each object (rotated uniformly) is 100-200 mm across in the image plane
(its larger x/y extent); perspective views put it
1-2 m from the camera with f chosen so that it fills the frame (f comes out at about
3-9 times the image width, DiLiGenT-like); orthographic views have depth in mm and the
returned ``pixel_size`` in mm, so the MADE of docs/methods.md#benchmark-protocol is in mm.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import FninError
from .render import render
from .synthetic import Scene, random_camera

VALIDATION_MESHES = ("boot", "hand", "koala", "lionstatue", "penguin")
TRAIN_MESHES = ("armadillo", "boat", "brucewick", "demosthenes", "falconstatue", "fish",
                "goathead", "hammer", "human_man", "human_neutral", "mountain", "mushroom",
                "pizza", "scorpion", "scorpion_reposed", "skull", "sword", "tower", "wingnut")
MESH_SUFFIXES = (".npz", ".ply", ".obj", ".stl", ".off")
DEFAULT_MESH_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "meshes"


@dataclass
class MeshScene(Scene):
    """A :class:`synthetic.Scene` (depth NaN outside the mask, ``clean_normals`` float32
    NaN outside it) plus which object each pixel shows."""

    object_id: np.ndarray      # (H, W) int64, -1 on background


# --------------------------------------------------------------------------- loading

def _load_one(path: Path):
    if path.suffix.lower() == ".npz":
        with np.load(path) as d:
            if "vertices" not in d or "faces" not in d:
                raise FninError("mesh .npz needs the keys 'vertices' and 'faces'", path)
            V, F = d["vertices"], d["faces"]
    else:
        try:
            import trimesh
        except ImportError as e:  # pragma: no cover
            raise FninError("reading .ply/.obj/.stl/.off meshes needs trimesh "
                            "(pip install trimesh), or convert them to .npz", path) from e
        try:
            m = trimesh.load(str(path), force="mesh", process=False)
        except Exception as e:
            raise FninError(f"cannot read mesh: {e}", path) from e
        V, F = np.asarray(m.vertices), np.asarray(m.faces)
    V = np.asarray(V, np.float64)
    F = np.asarray(F, np.int64)
    if V.ndim != 2 or V.shape[1] != 3 or F.ndim != 2 or F.shape[1] != 3 or len(F) == 0:
        raise FninError(f"not a triangle mesh (vertices {V.shape}, faces {F.shape})", path)
    if F.min() < 0 or F.max() >= len(V) or not np.all(np.isfinite(V)):
        raise FninError("mesh has out-of-range face indices or non-finite vertices", path)
    return V, F


def mesh_files(folder) -> dict:
    """{name: path} of the mesh files in ``folder`` (name = file stem; of two files with
    one stem, the first in sorted order), without reading them."""
    files = {}
    for p in sorted(Path(folder).iterdir()):
        if p.is_file() and p.suffix.lower() in MESH_SUFFIXES and p.stem not in files:
            files[p.stem] = p
    return files


def load_meshes(folder=DEFAULT_MESH_DIR, names: Sequence[str] | None = None) -> dict:
    """{name: (V float64 (N,3), F int64 (M,3))} for every mesh file in ``folder``
    (name = file stem), sorted by name; ``names`` restricts to those (all must exist)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FninError("mesh folder not found; point to a folder of .npz/.ply/.obj/.stl/.off "
                        "meshes (e.g. shared/data/meshes)", folder)
    files = mesh_files(folder)
    if names is not None:
        missing = [n for n in names if n not in files]
        if missing:
            raise FninError(f"meshes not found in the folder: {', '.join(missing)}", folder)
        files = {n: files[n] for n in names}
    if not files:
        raise FninError("no meshes (.npz/.ply/.obj/.stl/.off) in this folder", folder)
    return {n: _load_one(p) for n, p in sorted(files.items())}


def is_validation(name: str) -> bool:
    if name in VALIDATION_MESHES:
        return True
    if name in TRAIN_MESHES:
        return False
    return int(hashlib.sha1(name.encode("utf-8")).hexdigest()[:8], 16) % 5 == 0


def split_names(names) -> tuple[list, list]:
    """(train, validation) names: the fixed split, else a hash of the name (~20 % val)."""
    names = sorted(names)
    return [n for n in names if not is_validation(n)], [n for n in names if is_validation(n)]


# --------------------------------------------------------------------------- geometry

def normalize_mesh(V: np.ndarray) -> np.ndarray:
    """Centre (bounding-box centre) and scale to unit bounding radius."""
    V = np.asarray(V, np.float64)
    c = (V.min(0) + V.max(0)) / 2
    V = V - c
    r = np.linalg.norm(V, axis=1).max()
    return V / (r if r > 0 else 1.0)


def random_rotation(rng) -> np.ndarray:
    """Uniform over SO(3) (normalised Gaussian quaternion)."""
    q = rng.normal(size=4)
    # Python floats in a fixed order, not np.linalg.norm (a BLAS dot: its result depends
    # on the BLAS build and CPU kernel; see _rotate)
    a, b, c, d = (float(x) for x in q)
    n = math.sqrt(a * a + b * b + c * c + d * d)
    a, b, c, d = a / n, b / n, c / n, d / n
    return np.array([[a*a + b*b - c*c - d*d, 2*(b*c - a*d), 2*(b*d + a*c)],
                     [2*(b*c + a*d), a*a - b*b + c*c - d*d, 2*(c*d - a*b)],
                     [2*(b*d - a*c), 2*(c*d + a*b), a*a - b*b - c*c + d*d]])


def _rotate(V: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``V @ R.T`` as elementwise products and sums in a fixed order (x, y, z terms).

    A BLAS matrix product is not bitwise reproducible: OpenBLAS picks its kernel by CPU
    (with or without fused multiply-adds) and splits large products over its threads, so
    a render in a process with other thread limits (``fnin bench`` runs with one) or on
    another kernel would differ in the last bits, and a cached render would not equal a
    fresh one (docs/decisions.md#render-without-blas).  Elementwise ufuncs round every operation exactly,
    whatever the threads, the BLAS or the SIMD width.
    """
    V = np.asarray(V, np.float64)
    R = np.asarray(R, np.float64)
    return V[:, 0:1] * R[:, 0] + V[:, 1:2] * R[:, 1] + V[:, 2:3] * R[:, 2]


def _as_list(meshes):
    if isinstance(meshes, Mapping):
        items = sorted(meshes.items())
    else:
        items = list(meshes)
        if items and not isinstance(items[0][0], str):
            items = [(str(i), m) for i, m in enumerate(items)]
    if not items:
        raise FninError("no meshes to render")
    return items


def _layout(rng, n_obj, h, w, persp, f, px, D0, r0_px, ri_px):
    """Object centres (3D) and world radii: the first object's bounding sphere covers a
    disc of radius ``r0_px`` pixels near the image centre at depth D0; the others
    overlap it in the image and lie in front of or behind it.  ``px`` = pixel size
    (orthographic) or unused."""
    cu, cv = (w - 1) / 2, (h - 1) / 2

    def centre(uc, vc, z):
        if persp:
            return np.array([(uc - cu) / f * z, (vc - cv) / f * z, z])
        return np.array([uc * px, vc * px, z])   # orthographic: X = (u s, v s, z)

    def world_r(rpx, z):
        return rpx * z / f if persp else rpx * px

    u0 = cu + rng.uniform(-0.12, 0.12) * w
    v0 = cv + rng.uniform(-0.12, 0.12) * h
    R0 = world_r(r0_px, D0)
    out = [(centre(u0, v0, D0), R0)]
    for _ in range(n_obj - 1):
        rk = float(ri_px(rng))
        ang = rng.uniform(0, 2 * np.pi)
        dist = (r0_px + rk) * rng.uniform(0.35, 0.8)
        uk = np.clip(u0 + dist * np.cos(ang), 0.1 * w, 0.9 * w)
        vk = np.clip(v0 + dist * np.sin(ang), 0.1 * h, 0.9 * h)
        front = rng.uniform() < 0.5
        gap = rng.uniform(1.05, 1.8)
        if persp:
            # depth Dk with Rk = rk Dk / f and |Dk - D0| = gap (R0 + Rk)
            a = gap * rk / f
            Dk = (D0 - gap * R0) / (1 + a) if front else (D0 + gap * R0) / (1 - a) if a < 0.9 else None
            if Dk is None or Dk - world_r(rk, Dk) <= 0.2 * D0:
                Dk = (D0 + gap * R0) / (1 - a) if a < 0.9 else D0 * 3
        else:
            Rk = world_r(rk, 0)
            Dk = D0 + (-1 if front else 1) * gap * (R0 + Rk)
        out.append((centre(uk, vk, Dk), world_r(rk, Dk)))
    return out


def _render_scene(items, picks, rng, placement, shape, K, px, fill=False):
    """Rotate, scale and place the picked meshes and render them.  ``fill``: scale so the
    rotated mesh's half-extent in x or y (not its bounding radius) equals the radius."""
    Vs, Fs = [], []
    for (ci, Ri), k in zip(placement, picks):
        V, F = items[k][1]
        Vn = _rotate(normalize_mesh(V), random_rotation(rng))
        if fill:
            Ri = Ri / max(np.abs(Vn[:, :2]).max(), 1e-6)
        Vs.append(Vn * Ri + ci)
        Fs.append(np.asarray(F, np.int64))
    return render(Vs, Fs, shape, K=K, pixel_size=px)


def make_mesh_scene(seed: int, meshes, h: int = 128, w: int | None = None,
                    ortho_prob: float = 0.2, noise: bool = True, max_objects: int = 3,
                    holes: bool = True) -> MeshScene:
    """One random real-mesh scene; the same seed and meshes always give the same arrays.

    ``meshes``: {name: (V, F)} (as from ``load_meshes``; drawn in sorted-name order) or a
    list of (V, F).  See the module docstring for the distribution.
    """
    items = _as_list(meshes)
    w = h if w is None else w
    L = max(h, w)
    min_px = max(64, int(0.03 * h * w))
    for attempt in range(50):
        rng = np.random.default_rng(seed if attempt == 0 else [seed, attempt])
        K, D0, f = random_camera(rng, h, w, ortho_prob)
        persp = K is not None
        n_obj = int(rng.integers(1, max(1, max_objects) + 1))
        picks = rng.integers(0, len(items), n_obj)
        r0 = rng.uniform(0.22, 0.5) * min(h, w)
        placement = _layout(rng, n_obj, h, w, persp, f, 1.0, D0, r0,
                            lambda g: g.uniform(0.12, 0.35) * min(h, w))
        if persp:  # shift the whole layout by the principal-point offset
            off = np.array([(K[0, 2] - (w - 1) / 2) / f, (K[1, 2] - (h - 1) / 2) / f, 0.0])
            placement = [(c - off * c[2], R) for c, R in placement]
        r = _render_scene(items, picks, rng, placement, (h, w), K, 1.0)
        mask = r.mask.copy()
        if holes and rng.uniform() < 0.4:
            vv, uu = np.mgrid[0:h, 0:w]
            on = np.argwhere(mask)
            for _ in range(int(rng.integers(1, 4))):
                if not len(on):
                    break
                hv, hu = on[rng.integers(len(on))]
                hr = rng.uniform(0.01, 0.05) * L
                e = rng.uniform(0.5, 2.0)
                mask &= (uu - hu) ** 2 + e * (vv - hv) ** 2 > hr * hr
        if mask.sum() < min_px:
            continue
        return _finish(r, mask, K, rng if noise else None)
    raise FninError(f"could not draw a non-degenerate mesh scene for seed {seed} at {h}x{w}")


def _finish(r, mask, K, noise_rng) -> MeshScene:
    h, w = mask.shape
    depth = np.where(mask, r.depth, np.nan)
    clean = np.where(mask[..., None], r.normals, np.nan).astype(np.float32)
    oid = np.where(mask, r.object_id, -1)
    noisy = clean.astype(np.float64)
    if noise_rng is not None:
        sigma = noise_rng.uniform(0, 0.03)
        noisy = noisy + noise_rng.normal(0, sigma, noisy.shape)
        noisy /= np.linalg.norm(noisy, axis=-1, keepdims=True)
        # keep the input facing the camera: fall back to the clean normal where not
        v, u = np.mgrid[0:h, 0:w].astype(np.float64)
        if K is not None:
            ray = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1)
        else:
            ray = np.broadcast_to(np.array([0.0, 0.0, 1.0]), noisy.shape)
        back = np.einsum("hwc,hwc->hw", noisy, ray) >= -1e-3 * np.linalg.norm(ray, axis=-1)
        noisy[back] = clean[back]
    noisy[~mask] = np.nan
    return MeshScene(noisy.astype(np.float32), mask, depth, K, clean, oid)


# --------------------------------------------------------------------------- benchmark

# (height, width, orthographic, objects) for the 14 benchmark views
BENCH_VIEWS = ([(512, 612, i in (2, 6, 10), 2 if i in (3, 7, 9, 11) else 1) for i in range(12)]
               + [(1536, 2048, False, 1), (1536, 2048, True, 1)])
BENCH_SEED = 20250


def bench_scenes(meshes_dir=DEFAULT_MESH_DIR, names: Sequence[str] = VALIDATION_MESHES,
                 views: Sequence[tuple] = BENCH_VIEWS, start: int = 0):
    """[(case_name, MeshScene, pixel_size)]: 14 fixed views (see module docstring).
    Depth in mm; perspective scenes have pixel_size 1.0 (unused); clean input normals.
    ``views``: another (height, width, orthographic, objects) table (smaller sets, for tests);
    ``start``: the view index (seed and meshes) of its first row."""
    meshes = load_meshes(meshes_dir, names=list(names))
    items = [(n, meshes[n]) for n in names]
    out = []
    for i, (h, w, ortho, n_obj) in enumerate(views, start=int(start)):
        for attempt in range(50):
            rng = np.random.default_rng([BENCH_SEED, i, attempt])
            picks = np.array([(i + j * 2) % len(items) for j in range(n_obj)])
            R_mm = rng.uniform(50, 100)            # half-extent: 100-200 mm across
            D0 = rng.uniform(1000, 2000)           # mm from the camera
            r0 = rng.uniform(0.36, 0.45) * min(h, w) / (1.0 if n_obj == 1 else 1.3)
            if ortho:
                K, f, px = None, None, R_mm / r0
            else:
                f = r0 * D0 / R_mm
                K = np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1.0]])
                px = 1.0
            placement = _layout(rng, n_obj, h, w, not ortho, f, px, D0, r0,
                                lambda g: g.uniform(0.8, 1.0) * r0)
            r = _render_scene(items, picks, rng, placement, (h, w), K, px, fill=True)
            if r.mask.sum() >= 0.05 * h * w:
                break
        cam = "ortho" if ortho else "persp"
        name = "+".join(items[k][0] for k in picks) + f"_{cam}_{w}x{h}_v{i:02d}"
        out.append((name, _finish(r, r.mask, K, None), float(px)))
    return out
