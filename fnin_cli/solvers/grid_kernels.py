"""The grid V-cycle's passes over an image fused into single GPU kernels (Triton).

:mod:`.grid` writes a Gauss-Seidel half-sweep as seven torch passes over the image (the
right-hand side, four coupling terms, the scaling, the colour select) and a residual as
five; at camera size every pass streams the whole image through GPU memory, and the
passes are the V-cycle's time. Here each is one kernel that reads every input once: the
same arithmetic in the same order, so the results agree with the torch passes to
round-off (tests/test_grid.py). Used on CUDA tensors when Triton is importable (it ships
with CUDA builds of PyTorch); :mod:`.grid` falls back to the torch passes otherwise.

Images are contiguous float64 (h, w) tensors; a pixel's neighbours outside the image
count as 0, as the stencil's last column (``ch``) and last row (``cv``) of couplings are 0.
"""

from __future__ import annotations

try:
    import triton
    import triton.language as tl
except ImportError:      # CPU builds of torch: the torch passes run instead
    triton = None

BLOCK = 1024


_RUNS: dict = {}      # device -> whether a first small launch compiled and ran there


def available(t) -> bool:
    """Whether the fused kernels run on tensor ``t``'s device: a CUDA tensor, Triton
    importable, and a first small launch there compiled and ran (Triton builds its launcher
    with the system's C compiler; without one the torch passes run instead)."""
    if triton is None or not t.is_cuda:
        return False
    key = str(t.device)
    if key not in _RUNS:
        _RUNS[key] = runs_on(t.device)
    return _RUNS[key]


def runs_on(device) -> bool:
    """Launch each kernel once on small tensors on ``device``: whether both ran."""
    import torch

    try:
        x = torch.zeros((4, 4), dtype=torch.float64, device=device)
        one = torch.ones_like(x)
        half_sweep(x, one, one, one, one, 0)
        apply(torch.empty_like(x), x, one, one, one, b=one)
        return True
    except Exception:    # any failure to compile or launch: the torch passes are the same cycle
        return False


if triton is not None:

    @triton.jit(do_not_specialize=["h", "w", "parity"])
    def _half_sweep_kernel(x_ptr, b_ptr, ch_ptr, cv_ptr, inv_ptr, h, w, parity, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        r = offs // w
        c = offs - r * w
        m = (offs < h * w) & ((r + c) % 2 == parity)
        mr, ml, md, mu = m & (c < w - 1), m & (c > 0), m & (r < h - 1), m & (r > 0)
        acc = tl.load(b_ptr + offs, mask=m, other=0.0)
        acc += tl.load(ch_ptr + offs, mask=mr, other=0.0) * tl.load(x_ptr + offs + 1, mask=mr, other=0.0)
        acc += tl.load(ch_ptr + offs - 1, mask=ml, other=0.0) * tl.load(x_ptr + offs - 1, mask=ml, other=0.0)
        acc += tl.load(cv_ptr + offs, mask=md, other=0.0) * tl.load(x_ptr + offs + w, mask=md, other=0.0)
        acc += tl.load(cv_ptr + offs - w, mask=mu, other=0.0) * tl.load(x_ptr + offs - w, mask=mu, other=0.0)
        tl.store(x_ptr + offs, acc * tl.load(inv_ptr + offs, mask=m, other=0.0), mask=m)

    @triton.jit(do_not_specialize=["h", "w"])
    def _apply_kernel(out_ptr, b_ptr, x_ptr, diag_ptr, ch_ptr, cv_ptr, h, w,
                      HAS_B: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        r = offs // w
        c = offs - r * w
        m = offs < h * w
        mr, ml, md, mu = m & (c < w - 1), m & (c > 0), m & (r < h - 1), m & (r > 0)
        dx = tl.load(diag_ptr + offs, mask=m, other=0.0) * tl.load(x_ptr + offs, mask=m, other=0.0)
        right = tl.load(ch_ptr + offs, mask=mr, other=0.0) * tl.load(x_ptr + offs + 1, mask=mr, other=0.0)
        left = tl.load(ch_ptr + offs - 1, mask=ml, other=0.0) * tl.load(x_ptr + offs - 1, mask=ml, other=0.0)
        down = tl.load(cv_ptr + offs, mask=md, other=0.0) * tl.load(x_ptr + offs + w, mask=md, other=0.0)
        up = tl.load(cv_ptr + offs - w, mask=mu, other=0.0) * tl.load(x_ptr + offs - w, mask=mu, other=0.0)
        if HAS_B:
            acc = tl.load(b_ptr + offs, mask=m, other=0.0) - dx
            acc = acc + right + left + down + up
        else:
            acc = dx - right - left - down - up
        tl.store(out_ptr + offs, acc, mask=m)


def _grid(n: int, *images):
    # the kernels index images as flat arrays: a strided view would be read wrongly
    if not all(t.is_contiguous() for t in images):
        raise ValueError("grid kernels need contiguous images")
    return (triton.cdiv(n, BLOCK),)


def half_sweep(x, b, ch, cv, inv_diag, parity: int) -> None:
    """Gauss-Seidel on the pixels with (row + column) % 2 == ``parity``, x in place:
    x = (b + couplings times neighbours) / diag there (neighbours have the other colour)."""
    h, w = x.shape
    _half_sweep_kernel[_grid(h * w, x, b, ch, cv, inv_diag)](x, b, ch, cv, inv_diag, h, w, parity, BLOCK=BLOCK)


def apply(out, x, diag, ch, cv, b=None):
    """``out = A x`` (``b`` None) or ``out = b - A x``, A the 5-point stencil; returns out."""
    h, w = x.shape
    images = (out, x, diag, ch, cv) + (() if b is None else (b,))
    _apply_kernel[_grid(h * w, *images)](out, x if b is None else b, x, diag, ch, cv, h, w,
                                         HAS_B=b is not None, BLOCK=BLOCK)
    return out
