"""Invalid pixels: masked normals that are NaN/inf, zero or far from unit length.

:func:`check_invalid` stops a run when more than ``INVALID_MAX`` of the masked pixels are
invalid (unless the user allows it) and names the likely cause; without a mask, NaN/inf
pixels are background and only counted for a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FninError

INVALID_TOL = 0.25  # pipeline's conventions.normalise tolerance
INVALID_MAX = 0.02  # more than 2 % invalid masked normals: stop (unless overridden)


@dataclass
class InvalidReport:
    """Counts of masked pixels that are not unit normals, and a one-line ``message``."""

    masked: int
    nonfinite: int
    zero: int
    off_unit: int
    fraction: float
    ok: bool
    message: str = ""
    length_range: tuple = (float("nan"), float("nan"))


def invalid_report(vectors: np.ndarray, mask: np.ndarray | None = None, tol: float = INVALID_TOL,
                   max_fraction: float = INVALID_MAX, is_float: bool | None = None,
                   raw: np.ndarray | None = None) -> InvalidReport:
    """Count masked vectors that are NaN/inf, zero, or far from unit length.

    Parameters
    ----------
    vectors : (H, W, 3) array
        Decoded vectors before normalisation.
    mask : (H, W) bool array, optional
        Without one, all pixels count (and NaN/inf are reported as background).
    tol : float
        ``||n| - 1|`` above this is "far from unit" (the pipeline's normalise tolerance).
    max_fraction : float
        ``ok`` is False when more than this fraction of masked pixels is invalid.
    is_float, raw :
        Optional context for the likely cause (float file; raw values for the
        (n + 1) / 2 diagnosis).
    """
    vec = np.asarray(vectors)[..., :3].astype(np.float64)
    mask = np.ones(vec.shape[:2], bool) if mask is None else np.asarray(mask, bool)
    v = vec[mask]
    total = int(v.shape[0])
    finite = np.isfinite(v).all(-1)
    length = np.full(total, np.nan)
    length[finite] = np.sqrt(np.sum(v[finite] ** 2, axis=-1))
    zero = finite & (length < 1e-6)
    off = finite & ~zero & (np.abs(length - 1.0) > tol)
    n_nf, n_zero, n_off = int((~finite).sum()), int(zero.sum()), int(off.sum())
    bad = n_nf + n_zero + n_off
    frac = bad / total if total else 0.0
    lr = (float(np.percentile(length[off], 5)), float(np.percentile(length[off], 95))) if n_off else (
        float("nan"), float("nan"))
    rep = InvalidReport(total, n_nf, n_zero, n_off, frac, frac <= max_fraction, "", lr)
    if bad == 0:
        return rep
    kinds = {"nonfinite": n_nf, "zero": n_zero, "off": n_off}
    main = max(kinds, key=kinds.get)
    pct = f"{frac:.0%}" if frac >= 0.01 else f"{frac:.2%}"
    head = f"{bad} of {total} masked normals ({pct}) are not unit vectors"
    if main == "nonfinite":
        cause = f"{n_nf} are NaN/inf: a network output with undefined pixels, or a mask larger than the data"
    elif main == "zero":
        cause = f"{n_zero} are zero: the mask is larger than the data (background stored as 0)"
    else:
        lo, hi = lr
        cause = f"{n_off} have length {lo:.2f}-{hi:.2f}"
        rv = None if raw is None else np.asarray(raw)[..., :3][mask]
        in01 = rv is not None and rv.dtype.kind == "f" and np.nanmin(rv) >= -1e-3 and np.nanmax(rv) <= 1 + 1e-3
        if (is_float or in01) and in01 and lo >= 0.45 and hi <= 1.45:
            cause += ": looks like (n+1)/2 stored in a float file (pass --float-encoding half)"
        elif abs(lo - np.sqrt(3)) < 0.1 and abs(hi - np.sqrt(3)) < 0.1:
            cause += ": a black/white background encoded inside the mask (mask larger than the object?)"
        elif hi < 0.2:
            cause += ": near-zero vectors (mid-grey background inside the mask?)"
        else:
            cause += ": not normalised (scaled data, or not a normal map)"
    rep.message = f"{head}; {cause}"
    return rep


def check_invalid(vectors: np.ndarray, mask: np.ndarray | None = None, allow: bool = False, source=None,
                  **kw) -> InvalidReport:
    """:func:`invalid_report`, raising :class:`FninError` when too many are invalid and not ``allow``.

    With ``mask=None`` NaN/inf pixels are background, not errors: the caller should only
    warn with ``report.message`` (the count of non-finite pixels).
    """
    if mask is None:
        rep = invalid_report(vectors, None, **kw)
        rep.ok = True
        if rep.nonfinite:
            rep.message = f"{rep.nonfinite} NaN/inf normals and no mask: treated as background"
        return rep
    rep = invalid_report(vectors, mask, **kw)
    if not rep.ok and not allow:
        raise FninError(f"{rep.message}; pass --allow-invalid to go on (invalid pixels are dropped)", source)
    return rep
