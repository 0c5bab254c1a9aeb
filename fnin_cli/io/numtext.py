"""Numbers to text without a Python call per number: rows of ``%.8f`` and ``%d`` fields.

:func:`format_rows` gives exactly the bytes of ``(prefix + " ".join(fmt % v ...) + "\\n")``
per row, with numpy: each number becomes a fixed-width field of ASCII digits plus a
mask of the characters to keep (no leading zeros), and the kept characters of the row
matrix are the text. ``%.8f`` is rounded like Python (correctly, ties to even): the
value times 1e8 (in float64, within half an ulp of the exact product) is rounded to an
integer; the few values whose product lies too near a tie to decide (exact ties
included, and any beyond 4.5e7) are formatted by Python instead. A 6 M-vertex OBJ takes seconds, Python's formatting
38 s (docs/decisions.md#outputs-at-scale).

Examples
--------
>>> format_rows(b"v ", [np.array([[1.5, -0.0], [2.0, 1e-9]])], ["f8"])
b'v 1.50000000 -0.00000000\\nv 2.00000000 0.00000000\\n'
"""

from __future__ import annotations

import numpy as np

_FIX_LIMIT = 4.5e7          # |x| beyond this: x * 1e8 passes 2^52 (no fraction left), Python formats it


_POW10 = 10 ** np.arange(1, 20, dtype=np.uint64)


def _digits(q: np.ndarray, ndig: int | None = None) -> np.ndarray:
    """(N, ndig) ASCII digits of non-negative integers ``q``, zero-padded on the left
    (``ndig``: as many as the largest needs)."""
    top = int(q.max()) if q.size else 0
    if ndig is None:
        ndig = len(str(top))
    work = q.astype(np.uint32 if top < 2**32 else np.uint64)
    out = np.empty(q.shape + (ndig,), np.uint8)
    for j in range(ndig - 1, 0, -1):
        work, r = np.divmod(work, 10)
        out[:, j] = r
    out[:, 0] = work
    out += ord("0")
    return out


def _lead(q: np.ndarray, ndig: int) -> np.ndarray:
    """(N, ndig) mask of the digits of ``q`` without its leading zeros (at least one)."""
    count = 1 + np.searchsorted(_POW10[:ndig - 1], q.astype(np.uint64), side="right")
    return np.arange(ndig)[None, :] >= (ndig - count)[:, None]


def _sign(neg: np.ndarray) -> np.ndarray:
    col = np.full((neg.shape[0], 1), ord(" "), np.uint8)
    col[neg, 0] = ord("-")
    return col


def _int_field(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chars, keep) of ``%d`` for integers ``v``: sign column, then the digits."""
    v = np.asarray(v, np.int64)
    neg = v < 0
    mag = np.abs(v).astype(np.uint64)
    digs = _digits(mag)
    return (np.concatenate([_sign(neg), digs], axis=1),
            np.concatenate([neg[:, None], _lead(mag, digs.shape[1])], axis=1))


def _fix8_field(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chars, keep, undecided) of ``%.8f`` for float64 ``x``; ``undecided`` marks the
    values numpy cannot format exactly (their fields are to be replaced)."""
    x = np.asarray(x, np.float64)
    mag = np.abs(x)
    big = ~(mag < _FIX_LIMIT)                       # also NaN/inf
    p = np.where(big, 0.0, mag) * 1e8               # within half an ulp (2^-53 p) of x * 1e8
    # a product that near a tie cannot tell the rounding (exact ties too: Python rounds them)
    undecided = big | (np.abs(p - np.floor(p) - 0.5) <= 2.3e-16 * p)
    q = np.rint(p).astype(np.uint64)
    ipart = q // np.uint64(100_000_000)
    fpart = q - ipart * np.uint64(100_000_000)
    idig = _digits(ipart)
    n = x.shape[0]
    chars = np.concatenate([_sign(np.signbit(x)), idig, np.full((n, 1), ord("."), np.uint8), _digits(fpart, 8)],
                           axis=1)
    keep = np.concatenate([np.signbit(x)[:, None], _lead(ipart, idig.shape[1]), np.ones((n, 9), bool)], axis=1)
    return chars, keep, undecided


def format_rows(prefix: bytes, columns: list, kinds: list) -> bytes:
    """Rows ``prefix + field + " " + field ... + "\\n"`` as bytes.

    Parameters
    ----------
    prefix : bytes
        Start of every row (e.g. ``b"v "``).
    columns : list of (N, k) arrays
        Blocks of columns, side by side.
    kinds : list of str
        Per block: ``"f8"`` (``%.8f`` of float64) or ``"d"`` (``%d`` of integers).
    """
    n = columns[0].shape[0] if columns else 0
    if n == 0:
        return b""
    parts, keeps, fixes = [np.frombuffer(prefix, np.uint8)[None].repeat(n, 0)], [np.ones((n, len(prefix)), bool)], []
    first = True
    for block, kind in zip(columns, kinds):
        block = np.asarray(block)
        for j in range(block.shape[1]):
            if not first:
                parts.append(np.full((n, 1), ord(" "), np.uint8))
                keeps.append(np.ones((n, 1), bool))
            first = False
            if kind == "f8":
                c, k, und = _fix8_field(block[:, j])
                if und.any():
                    fixes.append((sum(p.shape[1] for p in parts), c.shape[1], block[und, j], und))
            else:
                c, k = _int_field(block[:, j])
            parts.append(c)
            keeps.append(k)
    parts.append(np.full((n, 1), ord("\n"), np.uint8))
    keeps.append(np.ones((n, 1), bool))
    chars = np.concatenate(parts, axis=1)
    keep = np.concatenate(keeps, axis=1)
    for start, width, values, rows in fixes:   # Python's own formatting where numpy cannot decide
        texts = ["%.8f" % v for v in values.tolist()]
        if max(len(t) for t in texts) > width:   # too wide for the field: format those rows whole
            return _python_rows(prefix, columns, kinds)
        field = np.full((len(texts), width), ord(" "), np.uint8)
        fkeep = np.zeros((len(texts), width), bool)
        for i, t in enumerate(texts):
            field[i, width - len(t):] = np.frombuffer(t.encode("ascii"), np.uint8)
            fkeep[i, width - len(t):] = True
        chars[rows, start:start + width] = field
        keep[rows, start:start + width] = fkeep
    return chars[keep].tobytes()


def _python_rows(prefix: bytes, columns: list, kinds: list) -> bytes:
    fmt = " ".join(("%.8f" if kind == "f8" else "%d") for block, kind in zip(columns, kinds)
                   for _ in range(np.asarray(block).shape[1]))
    vals = np.column_stack([np.asarray(b, np.float64 if k == "f8" else np.int64) for b, k in zip(columns, kinds)])
    row = prefix.decode("ascii") + fmt + "\n"
    if all(k == "f8" for k in kinds):
        return ((row * len(vals)) % tuple(vals.ravel().tolist())).encode("ascii")
    out = []
    for r in range(len(vals)):
        items = []
        for block, kind in zip(columns, kinds):
            items.extend(np.asarray(block)[r].tolist())
        out.append(row % tuple(items))
    return "".join(out).encode("ascii")
