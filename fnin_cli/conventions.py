"""Normal-map conventions: files on disk versus the internal OpenCV camera frame.

Internal frame (everything after loading): x right (columns), y down (rows), z forward
(away from the camera); camera-facing normals have n_z < 0.

File conventions (``--convention``):

- ``ps`` (default): photometric-stereo files (DiLiGenT, BiNI, most PS networks):
  x right, y up, z toward the viewer. Internal = (x, -y, -z).
- ``opencv``: already in the internal frame (typical of .npy from CV code). Internal = (x, y, z).
- ``directx`` (alias ``green-down``): x right, y down, z toward the viewer
  (DirectX-style tangent maps). Internal = (x, y, -z).
- ``opengl`` is an alias of ``ps`` (green-up).
"""

from __future__ import annotations

import numpy as np

from .errors import FninError

# sign flips that take file components to the internal frame (involutions)
SIGNS = {
    "ps": np.array([1.0, -1.0, -1.0]),
    "opencv": np.array([1.0, 1.0, 1.0]),
    "directx": np.array([1.0, 1.0, -1.0]),
}
ALIASES = {"opengl": "ps", "green-up": "ps", "green-down": "directx", "cv": "opencv"}
CONVENTIONS = tuple(SIGNS) + tuple(ALIASES)

FLIP_HINT = (
    "try --convention ps (x right, y up, z toward viewer), opencv (y down, z away) "
    "or directx (y down, z toward viewer)"
)


def canonical(name: str) -> str:
    key = ALIASES.get(name.lower(), name.lower())
    if key not in SIGNS:
        raise FninError(f"unknown normal convention '{name}'; use one of {', '.join(CONVENTIONS)}")
    return key


def to_internal(n: np.ndarray, convention: str = "ps") -> np.ndarray:
    """File-convention vectors (..., 3) to the internal OpenCV frame."""
    return n * SIGNS[canonical(convention)].astype(n.dtype)


def from_internal(n: np.ndarray, convention: str = "ps") -> np.ndarray:
    """Internal OpenCV-frame vectors (..., 3) to a file convention."""
    return n * SIGNS[canonical(convention)].astype(n.dtype)


def decode(arr: np.ndarray, bitdepth: int | None) -> np.ndarray:
    """Raw file values to vectors: integers are colour codes RGB = (n + 1) / 2."""
    arr = arr[..., :3]
    if bitdepth is not None or arr.dtype.kind in "ub":
        maxval = float(2 ** (bitdepth or 8) - 1)
        return arr.astype(np.float32) * np.float32(2.0 / maxval) - np.float32(1.0)
    return arr.astype(np.float32)


def normalise(n: np.ndarray, tol: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors and the valid set (finite, length within ``1 ± tol``).

    Invalid pixels get NaN. The tolerance accepts 8-bit quantisation and slightly
    unnormalised network outputs, and rejects encoded backgrounds (white = (1,1,1)
    has length 1.73, black and zero likewise).
    """
    with np.errstate(invalid="ignore", over="ignore"):
        length = np.sqrt(np.sum(n.astype(np.float64) ** 2, axis=-1))
        valid = np.isfinite(length) & (np.abs(length - 1.0) <= tol)
        out = (n / np.where(valid, length, 1.0)[..., None]).astype(np.float32)
    out[~valid] = np.nan
    return out, valid


def facing_away_fraction(n: np.ndarray, mask: np.ndarray) -> float:
    """Fraction of masked normals pointing away from the camera (n_z > 0 internally)."""
    nz = n[..., 2][mask]
    return float(np.mean(nz > 0.05)) if nz.size else 0.0
