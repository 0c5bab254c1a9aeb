"""Normal-map errors that real captures have and clean renders lack.

Photometric stereo's normals carry *smooth tilt fields* (shadows, interreflections, light
calibration): a slowly varying rotation of every normal, which no surface integrates
exactly. On top come per-pixel noise and the code steps of 8- or 16-bit files. This
module adds them to a scene's clean normals, deterministically per seed:

- ``white``: each normal turned by an independent random angle (Gaussian tangent
  offsets, RMS angle ``white_deg``);
- ``tilt``: a Gaussian-smoothed random rotation field (rotation vectors in the image
  plane, smoothed with sigma = ``sigma_frac`` times the object's size in pixels, the
  longer side of the mask's bounding box), scaled so that its largest rotation over the
  mask is exactly ``tilt_deg``;
- ``ps`` / ``ps8``: tilt, then white noise, then 16-bit / 8-bit quantisation as a PNG
  holds it ((n + 1) / 2 in 2^b - 1 codes, decoded and normalised again).

:data:`NOISE_MODELS` draws each model's amplitudes from its ranges (tilt 1-6 deg, sigma
5-10 % of the object, white 1-5 deg alone or 0.5-2 deg with a tilt). A normal that the
perturbation would turn away from the camera keeps its clean value.

:func:`real_like_scenes` is ``fnin bench meshes --noise real-like``: the 12 612x512 views
of ``fnin bench meshes`` (validation meshes: chins, ears, flippers and fingers against
bodies, i.e. steep folds that are not jumps), each with the models in turn, plus
procedural fold scenes (``synthetic.make_scene(..., fold_prob=1)``: flaps of one surface
that end in contours whose jump tapers to zero), all at fixed seeds.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

NOISE_MODELS = ("clean", "white", "tilt", "ps", "ps8")
SUITE = "real-like"
# the suite's models, view by view (views i, i + 4, ... get the same model)
SUITE_CYCLE = ("tilt", "ps", "ps8", "white")
# the suite's seed (the study scripts that choose by it use other seeds)
REAL_LIKE_SEED = 31_000
# procedural fold scenes in the suite: (seed of synthetic.make_scene, height, width); seeds whose
# scene is one surface without a wall, so that one alignment scores it
SUITE_FOLDS = ((0, 512, 612), (1, 512, 612), (2, 512, 612), (3, 512, 612))
FOLD_DEPTH_MM = 1000.0   # the folds' first surface at 1 m (perspective: the normals do not change)


def rotate(normals: np.ndarray, rotvec: np.ndarray) -> np.ndarray:
    """Rodrigues: each normal (..., 3) turned by its rotation vector (..., 3) (radians)."""
    angle = np.linalg.norm(rotvec, axis=-1, keepdims=True)
    axis = np.divide(rotvec, angle, out=np.zeros_like(rotvec), where=angle > 0)
    c, s = np.cos(angle), np.sin(angle)
    cross = np.cross(axis, normals)
    dot = np.sum(axis * normals, axis=-1, keepdims=True)
    return normals * c + cross * s + axis * dot * (1.0 - c)


def object_size(mask: np.ndarray) -> float:
    """The longer side of the mask's bounding box, in pixels."""
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    if not len(rows):
        return float(max(mask.shape))
    return float(max(rows[-1] - rows[0] + 1, cols[-1] - cols[0] + 1))


def tilt_field(mask: np.ndarray, amplitude_deg: float, sigma_px: float, rng) -> np.ndarray:
    """(H, W, 3) rotation vectors (radians, z = 0: tilts, no spin about the view axis):
    white Gaussian noise smoothed with ``sigma_px``, scaled so that the largest rotation
    over ``mask`` is ``amplitude_deg``.

    Examples
    --------
    >>> m = np.ones((32, 32), bool)
    >>> r = tilt_field(m, 3.0, 4.0, np.random.default_rng(0))
    >>> round(float(np.degrees(np.linalg.norm(r, axis=-1)[m].max())), 6)
    3.0
    """
    h, w = mask.shape
    field = np.zeros((h, w, 3))
    for c in range(2):
        field[..., c] = gaussian_filter(rng.normal(size=(h, w)), sigma_px, mode="reflect")
    peak = np.linalg.norm(field, axis=-1)[mask].max() if mask.any() else 0.0
    if peak > 0:
        field *= np.radians(amplitude_deg) / peak
    return field


def white_rotations(shape, rms_deg: float, rng) -> np.ndarray:
    """(H, W, 3) independent tangent rotation vectors of RMS angle ``rms_deg`` (in-plane)."""
    r = np.zeros(tuple(shape) + (3,))
    r[..., :2] = rng.normal(0.0, np.radians(rms_deg) / np.sqrt(2.0), tuple(shape) + (2,))
    return r


def quantise(normals: np.ndarray, bits: int) -> np.ndarray:
    """Normals through a ``bits``-bit colour code ((n + 1) / 2, rounded) and back, unit length."""
    top = float(2 ** int(bits) - 1)
    code = np.round((np.clip(normals, -1.0, 1.0) + 1.0) / 2.0 * top)
    out = code / top * 2.0 - 1.0
    return out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12)


def draw_params(model: str, rng) -> dict:
    """The amplitudes of one scene's noise ``model`` (see the module docstring)."""
    if model not in NOISE_MODELS:
        raise ValueError(f"unknown noise model '{model}'; use one of {', '.join(NOISE_MODELS)}")
    p = {"model": model}
    if model in ("tilt", "ps", "ps8"):
        p["tilt_deg"] = float(rng.uniform(1.0, 6.0))
        p["sigma_frac"] = float(rng.uniform(0.05, 0.10))
    if model == "white":
        p["white_deg"] = float(rng.uniform(1.0, 5.0))
    elif model in ("ps", "ps8"):
        p["white_deg"] = float(rng.uniform(0.5, 2.0))
    if model in ("ps", "ps8"):
        p["bits"] = 16 if model == "ps" else 8
    return p


def _rays(shape, K):
    h, w = shape
    if K is None:
        return np.broadcast_to(np.array([0.0, 0.0, 1.0]), (h, w, 3))
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    return np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1)


def apply_noise(clean: np.ndarray, mask: np.ndarray, K, params: dict, rng) -> np.ndarray:
    """``clean`` (H, W, 3) internal-frame normals with the errors ``params`` describe
    (from :func:`draw_params`); float32, NaN outside ``mask``. Deterministic for ``rng``'s
    state."""
    n = np.where(mask[..., None], clean, np.array([0.0, 0.0, -1.0])).astype(np.float64)
    rot = np.zeros(n.shape)
    if "tilt_deg" in params:
        rot += tilt_field(mask, params["tilt_deg"], params["sigma_frac"] * object_size(mask), rng)
    if "white_deg" in params:
        rot += white_rotations(mask.shape, params["white_deg"], rng)
    out = rotate(n, rot)
    if "bits" in params:
        out = quantise(out, params["bits"])
    ray = _rays(mask.shape, K)
    back = np.einsum("hwc,hwc->hw", out, ray) >= -1e-3 * np.linalg.norm(ray, axis=-1)
    out[back] = n[back]
    out[~mask] = np.nan
    return out.astype(np.float32)


def noisy_scene(scene, model: str, seed):
    """A copy of a (Mesh)Scene whose input normals carry ``model``'s errors drawn from
    ``seed`` (an int or a sequence, as numpy's ``default_rng`` takes it), and the drawn
    parameters."""
    import dataclasses

    rng = np.random.default_rng(seed)
    params = draw_params(model, rng)
    normals = apply_noise(scene.clean_normals, scene.mask, scene.K, params, rng)
    return dataclasses.replace(scene, normals=normals), params


def label(params: dict) -> str:
    """A short tag for a case name: 'tilt3.2', 'ps8-tilt1.4', 'white2.5', 'clean'."""
    m = params["model"]
    if m == "clean":
        return "clean"
    if m == "white":
        return f"white{params['white_deg']:.1f}"
    return ("" if m == "tilt" else m + "-") + f"tilt{params['tilt_deg']:.1f}"


def fold_scene(seed: int, h: int, w: int):
    """A procedural fold scene (perspective, clean normals) as a MeshScene with one object,
    depth in mm (the first surface at ``FOLD_DEPTH_MM``)."""
    from .mesh_scenes import MeshScene
    from .synthetic import make_scene

    s = make_scene(seed, h, w, ortho_prob=0.0, noise=False, fold_prob=1.0)
    oid = np.where(s.mask, 0, -1).astype(np.int64)
    normals = np.where(s.mask[..., None], s.clean_normals, np.nan).astype(np.float32)
    return MeshScene(normals, s.mask, s.depth * FOLD_DEPTH_MM, s.K, normals.copy(), oid)


def real_like_scenes(views: list, noise: str = SUITE, seed: int = REAL_LIKE_SEED, size=None,
                     folds: int | None = None) -> list:
    """[(case name, MeshScene, pixel size)] with real-like errors.

    ``views``: ``[(name, MeshScene, pixel size)]`` (the clean benchmark views). With
    ``noise`` one of :data:`NOISE_MODELS` every view gets that model (amplitudes drawn
    from ``[seed, i]``); with ``"real-like"`` the views that are not 2048x1536 take the
    models of :data:`SUITE_CYCLE` in turn, and the procedural :data:`SUITE_FOLDS`
    (``folds``: only the first N; ``size``: at that height) are added, their models
    continuing the cycle. Names get '-' and :func:`label` after the view tag."""
    out = []
    if noise == SUITE:
        chosen = [v for v in views if max(v[1].mask.shape) < 2048]
        models = [SUITE_CYCLE[i % len(SUITE_CYCLE)] for i in range(len(chosen))]
    else:
        chosen, models = list(views), [noise] * len(views)
    for i, ((name, scene, px), model) in enumerate(zip(chosen, models)):
        noisy, params = noisy_scene(scene, model, [seed, i])
        out.append((f"{name}-{label(params)}", noisy, px))
    if noise == SUITE:
        for j, (fseed, h, w) in enumerate(SUITE_FOLDS[:folds]):
            if size is not None:
                h, w = int(size), max(8, round(int(size) * w / h))
            model = SUITE_CYCLE[(len(chosen) + j) % len(SUITE_CYCLE)]
            noisy, params = noisy_scene(fold_scene(fseed, h, w), model, [seed, 1000 + j])
            out.append((f"fold{fseed}_persp_{w}x{h}_p{j:02d}-{label(params)}", noisy, 1.0))
    return out
