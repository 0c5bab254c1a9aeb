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


def flip_hint(current: str = "") -> str:
    """What to try when normals face away, without the decoding ``current`` already in use
    (an ``Input.convention`` such as 'ps', 'ps/bgr', 'ps/flip-z')."""
    parts = current.split("/") if current else []
    conv = parts[0] if parts and parts[0] in SIGNS else None
    words = {"ps": "ps (x right, y up, z toward viewer)", "opencv": "opencv (y down, z away)",
             "directx": "directx (y down, z toward viewer)"}
    names = [words[n] for n in SIGNS if n != conv]
    opts = f"try --convention {names[0]} or {names[1]}" if conv else FLIP_HINT
    if "flip-z" not in parts and not any(p.startswith("flip-") and "z" in p for p in parts):
        opts += ", --flip z (z stored away from the viewer)"
    if "bgr" not in parts:
        opts += ", --channels bgr (BGR files, as cv2.imwrite writes)"
    return opts


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


def normalise(n: np.ndarray, tol: float = 0.25, inplace: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors and the valid set (finite, length within ``1 ± tol``).

    Invalid pixels get NaN. The tolerance accepts 8-bit quantisation and slightly
    unnormalised network outputs, and rejects encoded backgrounds (white = (1,1,1)
    has length 1.73, black and zero likewise). Computed in float32 (a float64 pass
    takes 6.4 s of a 24 MP load; docs/decisions.md#input-path); ``inplace`` reuses ``n``
    when it is already a float32 array.
    """
    out = n if inplace and isinstance(n, np.ndarray) and n.dtype == np.float32 else np.array(n, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        x, y, z = out[..., 0], out[..., 1], out[..., 2]
        length = x * x
        length += y * y
        length += z * z
        np.sqrt(length, out=length)
        valid = np.abs(length - np.float32(1.0)) <= np.float32(tol)   # False for NaN and inf
        np.copyto(length, np.float32(np.nan), where=~valid)           # invalid vectors become NaN
        out /= length[..., None]
    return out, valid


def facing_away_fraction(n: np.ndarray, mask: np.ndarray) -> float:
    """Fraction of masked normals pointing away from the camera (n_z > 0 internally)."""
    nz = n[..., 2][mask]
    return float(np.mean(nz > 0.05)) if nz.size else 0.0
