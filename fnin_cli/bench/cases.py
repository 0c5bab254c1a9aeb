"""Benchmark cases (DiLiGenT, folders with ground truth, synthetic) and the error protocol
(median scale or offset, MADE).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.synthetic import make_scene
from ..errors import FninError
from ..io.layout import FOLDER_NORMALS
from ..pipeline import build_input, load_input
from ..scale import fix_scale

DILIGENT_OBJECTS = ("bear", "buddha", "cat", "cow", "goblet", "harvest", "pot1", "pot2", "reading")
DILIGENT_SOURCE = ("the data/Fig7_diligent folder of "
                   "https://github.com/xucao-42/bilateral_normal_integration")
GT_FILE = "depth_gt.npz"
GT_KEY = "depth_gt"

# Built-in synthetic set: (seed, orthographic). 256x256 scenes of synthetic.make_scene with
# noisy normals. Chosen from a survey of seeds 0-29 (perspective) and 0-19 (orthographic)
# to mix one smooth control scene (persp-00: every method should be near 0) with scenes
# whose occlusion jumps separate smooth from discontinuity-aware methods, and so that all
# four methods finish the set in well under a minute on one core. Perspective scenes are
# at mean depth ~1; orthographic ones get a pixel size of 1/256 (the image is 1 unit wide).
SYNTHETIC_SET = ((0, False), (9, False), (15, False), (24, False), (26, False), (27, False),
                 (0, True), (19, True))
SYNTHETIC_SIZE = 256
# the shared data folder next to the repository (../shared/data), the second place a benchmark looks
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


# ------------------------------------------------------------------ metric

def align_and_errors(est, gt, mask, perspective: bool) -> dict:
    """Align ``est`` to ``gt`` (median scale or median offset) and measure the errors.

    Pixels count where ``mask`` is set and both maps are finite. Returns ``made`` (mean
    absolute error), ``median``, ``p95``, ``rmse`` (in gt units), ``scale`` or
    ``offset``, ``pixels`` (evaluated) and ``missing`` (masked GT pixels without an
    estimate), plus ``abs_error`` (an image, NaN where not evaluated).
    """
    est = np.asarray(est, np.float64)
    gt = np.asarray(gt, np.float64)
    if est.shape != gt.shape:
        raise FninError(f"ground truth is {gt.shape[1]}x{gt.shape[0]} but the estimate is "
                        f"{est.shape[1]}x{est.shape[0]}")
    mask = np.asarray(mask, bool)
    has_gt = mask & np.isfinite(gt)
    valid = has_gt & np.isfinite(est)
    out = {"pixels": int(valid.sum()), "missing": int((has_gt & ~valid).sum())}
    if not valid.any():
        raise FninError("no pixel has both ground truth and an estimate inside the mask")
    e, g = est[valid], gt[valid]
    if perspective:
        scale = float(np.median(g / e))
        aligned = scale * e
        out["scale"] = scale
    else:
        offset = float(np.median(g - e))
        aligned = e + offset
        out["offset"] = offset
    err = np.abs(aligned - g)
    out.update(made=float(np.mean(err)), median=float(np.median(err)),
               p95=float(np.percentile(err, 95)), rmse=float(np.sqrt(np.mean(err * err))))
    img = np.full(gt.shape, np.nan)
    img[valid] = err
    out["abs_error"] = img
    return out


def piece_made(est, gt, mask, pieces, perspective: bool) -> float:
    """MADE with each loose piece (``pieces``: (H, W) ids, 0 = the rest) aligned on its own,
    as the whole map is (median scale or offset): the error without the luck of placing
    what the normals cannot place. Pieces without a pixel to evaluate are skipped."""
    err = np.full(np.shape(gt), np.nan)
    for k in np.unique(pieces[mask]):
        part = mask & (pieces == k)
        if (part & np.isfinite(gt) & np.isfinite(est)).any():
            err[part] = align_and_errors(est, gt, part, perspective)["abs_error"][part]
    return float(np.nanmean(err[mask]))


def align_objects(est, gt, mask, object_id, perspective: bool, names=None) -> dict:
    """:func:`align_and_errors` per object: each object of ``object_id`` (-1 = none) is
    aligned on its own pixels (median scale or offset), since the relative offset of
    separate objects is unknowable from normals. ``made`` is the mean of the objects'
    MADEs; ``median``, ``p95``, ``rmse`` and ``abs_error`` pool the aligned errors of all
    objects; ``scale``/``offset`` are the first object's; ``objects`` lists each object's
    ``made``, ``pixels`` and ``scale``/``offset`` (keyed by ``names`` or the object id).
    """
    mask = np.asarray(mask, bool)
    object_id = np.asarray(object_id)
    ids = [int(k) for k in np.unique(object_id[mask]) if k >= 0]
    if len(ids) <= 1:
        return align_and_errors(est, gt, mask, perspective)
    per, objects = [], {}
    for k in ids:
        try:
            e = align_and_errors(est, gt, mask & (object_id == k), perspective)
        except FninError:          # an object without estimate or ground truth: not scored
            continue
        per.append(e)
        key = names[k] if names is not None and k < len(names) else str(k)
        if key in objects:
            key = f"{key}#{k}"
        objects[key] = {"made_mm": e["made"], "pixels": e["pixels"],
                        ("scale" if perspective else "offset"): e["scale" if perspective else "offset"]}
    if not per:
        raise FninError("no pixel has both ground truth and an estimate inside the mask")
    img = np.full(np.shape(gt), np.nan)
    for e in per:
        ok = np.isfinite(e["abs_error"])
        img[ok] = e["abs_error"][ok]
    err = img[np.isfinite(img)]
    has_gt = mask & np.isfinite(np.asarray(gt, np.float64))
    out = {"pixels": int(err.size), "missing": int(has_gt.sum()) - int(err.size),
           "made": float(np.mean([e["made"] for e in per])), "median": float(np.median(err)),
           "p95": float(np.percentile(err, 95)), "rmse": float(np.sqrt(np.mean(err * err))),
           "abs_error": img, "objects": objects}
    k0 = "scale" if perspective else "offset"
    out[k0] = per[0][k0]
    return out


def unknown_made(inp, gt, z_img) -> float:
    """MADE of a solve's unknown (an image, as ``NormalSystem.to_image`` gives it) after
    the pipeline's default scale fix: how the benchmark scripts score a bare solve."""
    depth, _ = fix_scale(z_img, inp.camera, inp.mask, None, None)
    return align_and_errors(depth, gt, inp.mask, inp.camera.perspective)["made"]


# ------------------------------------------------------------------ cases

@dataclass(frozen=True)
class Case:
    """One benchmark case: a folder with ground truth, a built-in synthetic scene, or a
    view rendered from a mesh folder (``kind`` "mesh": ``path`` = the mesh folder, ``name``
    = the view's case name; rendered where it is loaded, so ``--isolate`` children render
    it themselves; ``size``/``views``: a smaller view set, for tests; ``noise``/``noise_seed``:
    the views with real-like normal errors, :func:`fnin_cli.data.real_like.real_like_scenes`)."""

    name: str
    kind: str                         # "folder", "synthetic" or "mesh"
    path: str | None = None
    seed: int | None = None
    size: int | None = None
    ortho: bool = False
    pixel_size: float | None = None
    convention: str = "ps"
    views: int | None = None
    frame: tuple | None = None        # (W, H): the camera-size view (bench.camera_views) instead
    noise: str | None = None          # mesh views: real-like errors (data.real_like; None: clean)
    noise_seed: int | None = None

    def object_ids(self):
        """Per-pixel object ids (-1 = none) for a case whose objects are aligned one by
        one (mesh scenes), and the objects' names; (None, None) otherwise."""
        if self.kind != "mesh":
            return None, None
        scene, _ = _mesh_view(self)
        names = self.name.rsplit("_", 3)[0].split("+")
        return scene.object_id, names

    def load(self):
        """(Input, ground-truth depth) of this case."""
        if self.kind == "mesh":
            scene, pixel_size = _mesh_view(self)
            return build_input(scene.normals, mask=scene.mask, K=scene.K,
                               pixel_size=None if scene.K is not None else pixel_size,
                               source=self.name), scene.depth
        if self.kind == "synthetic":
            scene = make_scene(self.seed, self.size, self.size, ortho_prob=1.0 if self.ortho else 0.0)
            gt = scene.depth
            pixel_size = None
            if scene.K is None:
                # scaling depth and pixel size together leaves the normals unchanged
                pixel_size = 1.0 / self.size
                gt = gt * pixel_size
            return build_input(scene.normals, mask=scene.mask, K=scene.K, pixel_size=pixel_size,
                               source=self.name), gt
        folder = Path(self.path)
        inp = load_input(folder, pixel_size=self.pixel_size, convention=self.convention)
        gt_path = folder / GT_FILE
        try:
            with np.load(gt_path) as f:
                if GT_KEY not in f:
                    raise FninError(f"no key '{GT_KEY}' (found {', '.join(f.files)})", gt_path)
                gt = np.asarray(f[GT_KEY], np.float64)
        except FninError:
            raise
        except Exception as exc:
            raise FninError(f"cannot read ground truth ({exc})", gt_path) from None
        if gt.shape != inp.shape:
            raise FninError(f"ground truth is {gt.shape[1]}x{gt.shape[0]}, normal map "
                            f"{inp.shape[1]}x{inp.shape[0]}", gt_path)
        return inp, gt

    @property
    def units(self) -> str:
        if self.kind == "mesh":
            return "mm (rendered meshes, 100-200 mm objects)"
        if self.kind == "synthetic":
            return ("scene units (orthographic, image 1 unit wide)" if self.ortho
                    else "scene units (perspective, mean depth ~1)")
        return "mm (ground-truth units)"


# ------------------------------------------------------------------ mesh renders

_MESH_VIEWS = {}


def mesh_view_set(meshes_dir, size=None, views=None, frame=None, noise=None, noise_seed=None) -> list:
    """[(case name, MeshScene, pixel size)] of ``fnin bench meshes``: the fixed benchmark
    views (``data.mesh_scenes.bench_scenes``) of the folder's validation meshes (for
    ``shared/data/meshes``: ``VALIDATION_MESHES``), rendered once per process. ``size``
    (a height) and ``views`` (the first N views) make a smaller set, for tests; ``frame``
    (W, H): the one camera-size view of :mod:`.camera_views` instead. ``noise`` (a model
    of ``data.real_like.NOISE_MODELS`` or ``"real-like"``, the suite) adds real-like
    normal errors drawn from ``noise_seed`` (default ``REAL_LIKE_SEED``)."""
    from ..data import mesh_scenes

    if noise is not None and noise != "clean":
        from ..data import real_like

        key = (str(meshes_dir), size, views, None if frame is None else tuple(frame), noise, noise_seed)
        if key not in _MESH_VIEWS:
            seed = real_like.REAL_LIKE_SEED if noise_seed is None else int(noise_seed)
            _MESH_VIEWS[key] = real_like.real_like_scenes(mesh_view_set(meshes_dir, size, views, frame), noise,
                                                          seed, size=size, folds=views)
        return _MESH_VIEWS[key]
    key = (str(meshes_dir), size, views, None if frame is None else tuple(frame))
    if key not in _MESH_VIEWS:
        folder = Path(meshes_dir)
        if not folder.is_dir():
            raise FninError("mesh folder not found (--meshes takes a folder of .npz/.ply/.obj/.stl/.off "
                            "meshes, e.g. ../shared/data/meshes)", folder)
        names = sorted(mesh_scenes.mesh_files(folder))
        if not names:
            raise FninError("no meshes (.npz/.ply/.obj/.stl/.off) in this folder", folder)
        val = mesh_scenes.split_names(names)[1]
        if not val:
            raise FninError(f"none of its meshes ({', '.join(names)}) is in the validation split "
                            f"({', '.join(mesh_scenes.VALIDATION_MESHES)}, or a name hashed to it); "
                            "the benchmark renders validation meshes only", folder)
        table = list(mesh_scenes.BENCH_VIEWS)
        if size is not None:
            table = [(int(size), max(8, round(int(size) * w / h)), o, n) for h, w, o, n in table]
        if views is not None:
            table = table[:int(views)]
        if frame is not None:
            from .camera_views import camera_view_set

            _MESH_VIEWS[key] = camera_view_set(folder, frame)
        else:
            _MESH_VIEWS[key] = mesh_scenes.bench_scenes(folder, names=val, views=table)
    return _MESH_VIEWS[key]


def _mesh_view(case: "Case"):
    for name, scene, pixel_size in mesh_view_set(case.path, case.size, case.views, case.frame, case.noise,
                                                 case.noise_seed):
        if name == case.name:
            return scene, pixel_size
    raise FninError(f"no benchmark view '{case.name}' in this mesh folder", case.path)


def mesh_cases(meshes_dir=None, size=None, views=None, frame=None, noise=None, noise_seed=None) -> list:
    """The cases of ``fnin bench meshes`` (folder: :func:`data_dir` of 'meshes';
    ``frame`` (W, H): the camera-size view, :mod:`.camera_views`; ``noise``/``noise_seed``:
    see :func:`mesh_view_set`)."""
    folder = str(data_dir("meshes", meshes_dir))
    frame = None if frame is None else tuple(int(v) for v in frame)
    if noise is not None:
        from ..data.real_like import NOISE_MODELS, SUITE

        if noise not in NOISE_MODELS + (SUITE,):
            raise FninError(f"unknown --noise '{noise}'; use one of {', '.join(NOISE_MODELS + (SUITE,))}")
        noise = None if noise == "clean" else noise
    return [Case(name, "mesh", path=folder, size=size, views=views, frame=frame, noise=noise, noise_seed=noise_seed)
            for name, _, _ in mesh_view_set(folder, size, views, frame, noise, noise_seed)]


def data_dir(name: str, given=None) -> Path:
    """A benchmark's data folder, one rule for ``diligent`` and ``meshes``: ``given``
    (``--data``/``--meshes``), else ``$FNIN_DILIGENT``/``$FNIN_MESHES``, else
    ``../shared/data/<name>`` next to the repository if it exists, else
    ``$XDG_CACHE_HOME/fnin/<name>`` (default ``~/.cache/fnin/<name>``)."""
    if given is not None:
        return Path(given).expanduser()
    env = os.environ.get(f"FNIN_{name.upper()}")
    if env:
        return Path(env).expanduser()
    if (SHARED_DATA / name).is_dir():
        return SHARED_DATA / name
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "fnin" / name


def diligent_dir(data=None) -> Path:
    """The DiLiGenT folder (:func:`data_dir` of 'diligent')."""
    return data_dir("diligent", data)


def synthetic_cases(seeds=SYNTHETIC_SET, size: int = SYNTHETIC_SIZE) -> list:
    """The built-in synthetic cases (``fnin bench synthetic``): generated scenes with exact ground truth."""
    return [Case(f"{'ortho' if o else 'persp'}-{s:02d}", "synthetic", seed=s, size=size, ortho=o)
            for s, o in seeds]


def _is_case_folder(folder: Path) -> bool:
    return any((folder / n).exists() for n in FOLDER_NORMALS)


def _folder_case(folder: Path, pixel_size=None, convention="ps") -> Case:
    if pixel_size is None and (folder / "pixel_size.txt").exists():
        try:
            pixel_size = float((folder / "pixel_size.txt").read_text().split()[0])
        except (ValueError, IndexError):
            raise FninError("pixel_size.txt must hold one number", folder / "pixel_size.txt") from None
    return Case(folder.name, "folder", path=str(folder), pixel_size=pixel_size, convention=convention)


def resolve_cases(source: str, data=None, pixel_size=None, convention: str = "ps", meshes=None,
                  mesh_size=None, mesh_views=None, mesh_frame=None, noise=None, noise_seed=None) -> tuple:
    """``(dataset name, [Case])`` for ``diligent``, ``synthetic``, ``meshes`` (renders of
    the mesh folder ``meshes``) or a folder of cases.

    Raises :class:`FninError` with a one-line message when the data is missing.
    """
    if source == "synthetic":
        return "synthetic", synthetic_cases()
    if source == "meshes":
        return "meshes", mesh_cases(meshes, mesh_size, mesh_views, mesh_frame, noise, noise_seed)
    if source == "diligent":
        root = diligent_dir(data)
        missing = [o for o in DILIGENT_OBJECTS
                   if not ((root / o / GT_FILE).exists() and _is_case_folder(root / o))]
        if missing:
            where = ("" if data is not None else
                     " (or pass --data DIR, or set FNIN_DILIGENT)")
            what = "not found" if len(missing) == len(DILIGENT_OBJECTS) else f"incomplete (no {', '.join(missing)})"
            raise FninError(f"DiLiGenT data {what} at {root}: get {DILIGENT_SOURCE} and put its 9 object "
                            f"folders ({', '.join(DILIGENT_OBJECTS)}) there{where}")
        return "diligent", [_folder_case(root / o, pixel_size, convention) for o in DILIGENT_OBJECTS]
    root = Path(source).expanduser()
    if not root.is_dir():
        raise FninError(f"unknown benchmark '{source}': use diligent, meshes, synthetic or a folder of cases")
    folders = [root] if _is_case_folder(root) else sorted(p for p in root.iterdir() if p.is_dir()
                                                           and _is_case_folder(p))
    cases = [_folder_case(f, pixel_size, convention) for f in folders if (f / GT_FILE).exists()]
    if not cases:
        raise FninError(f"no cases: expected subfolders with normal_map.* and {GT_FILE} (key '{GT_KEY}')", root)
    return str(root), cases
