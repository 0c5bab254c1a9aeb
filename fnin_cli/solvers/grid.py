"""The weighted least-squares system on the pixel grid, in torch: for GPUs.

:class:`~fnin_cli.solvers.system.NormalSystem` keeps the masked pixels as a vector and
solves with a sparse matrix and AMG on the CPU. On a GPU the same 5-point system is
faster kept as images: the matrix is a diagonal image and two coupling images (to the
right and to the pixel below), a product with it is a handful of shifted elementwise
operations, and the preconditioner is a geometric multigrid V-cycle whose coarse grids
merge 2x2 blocks of pixels (piecewise-constant prolongation, Galerkin coarse operators,
which stay 5-point stencils), red-black Gauss-Seidel smoothing and a dense inverse
solve on the coarsest grid. The IRLS driver (:func:`~fnin_cli.solvers.irls.minimise`) runs Stage II and BiNI's
rounds this way, weights and energy included, so that nothing but the result crosses
back to the CPU.

The equations are :mod:`.system`'s (docs/methods.md#equations): the same matrix, the
same right-hand side and the same stopping rule, so on any device the answer agrees with
the CPU's to the solver's tolerance (tests/test_grid.py). It runs on the CPU too
(``device="cpu"``), which is how it is tested without a GPU; there the CPU's AMG is
faster (docs/decisions.md#grid-on-gpu).
"""

from __future__ import annotations

import numpy as np
import torch   # this module is imported only when a grid solve runs (solvers.irls)

from ..config import DEFAULT
from . import grid_kernels
from .system import DIRECTIONS, DataTerm, NormalSystem

# the coarsest grid has at most this many pixels; it is solved densely (its inverse)
COARSEST = 1024
# red-black Gauss-Seidel sweeps before and after each coarse correction (2: 42 iterations
# against 62 with 1, in less time)
SWEEPS = 2
RED, BLACK = 0, 1     # a pixel's colour: (row + column) % 2


class GridSystem:
    """A :class:`NormalSystem` laid out on the image grid (cropped to the mask's box) as
    torch tensors on ``device``.

    Parameters
    ----------
    system : NormalSystem
        The system to solve.
    device : str
        A torch device ("cpu", "cuda", "cuda:1").

    Examples
    --------
    >>> import numpy as np
    >>> from fnin_cli.camera import Camera
    >>> n = np.dstack([np.zeros((4, 5)), np.zeros((4, 5)), -np.ones((4, 5))])
    >>> grid = GridSystem(NormalSystem(n, np.ones((4, 5), bool), Camera(None, 1.0)), "cpu")
    >>> grid.shape
    (4, 6)
    """

    def __init__(self, system: NormalSystem, device: str = "cpu"):
        self.system = system
        self.device = torch.device(device)
        rows, cols = np.nonzero(system.mask.any(axis=1))[0], np.nonzero(system.mask.any(axis=0))[0]
        self.box = (slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)) if rows.size else (slice(0, 0),) * 2
        mask = system.mask[self.box]
        # even sides (an inactive row or column added): the V-cycle's finest level needs them
        mask = np.ascontiguousarray(np.pad(mask, ((0, mask.shape[0] % 2), (0, mask.shape[1] % 2))))
        self.shape = mask.shape
        self.mask = torch.from_numpy(mask).to(self.device)
        self.active = self.mask.to(torch.float64)
        self.a_u, self.a_v = self.image(system.a_u), self.image(system.a_v)
        self.nx, self.ny = self.image(system.nx), self.image(system.ny)
        # eh[r, c]: pixel (r, c) and its right neighbour both masked (last column 0);
        # ev[r, c]: (r, c) and the pixel below (last row 0)
        self.eh = torch.zeros_like(self.active)
        self.eh[:, :-1] = self.active[:, :-1] * self.active[:, 1:]
        self.ev = torch.zeros_like(self.active)
        self.ev[:-1, :] = self.active[:-1, :] * self.active[1:, :]
        # which pixels have each one-sided difference
        self.has = {"u+": self.eh, "u-": _shift_right(self.eh), "v+": self.ev, "v-": _shift_down(self.ev)}

    # ------------------------------------------------------------ layout

    def image(self, values) -> "torch.Tensor":
        """Masked-pixel values (numpy vector or tensor) as a (h, w) float64 image on the
        device, 0 outside the mask."""
        img = torch.zeros(self.shape, dtype=torch.float64, device=self.device)
        v = values if isinstance(values, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(values, np.float64))
        img[self.mask] = v.to(self.device, torch.float64)
        return img

    def vector(self, img) -> np.ndarray:
        """The masked pixels of a (h, w) image, as the system's float64 numpy vector."""
        return img[self.mask].cpu().numpy().astype(np.float64, copy=False)

    def weights_images(self, weights: dict | None) -> dict:
        if weights is None:
            return {d: self.active for d in DIRECTIONS}
        return {d: self.image(weights[d]) for d in DIRECTIONS}

    # ------------------------------------------------------------ residuals, BiNI's weights

    def differences(self, z) -> dict:
        """a * one-sided differences of the (h, w) image z per direction, 0 where none."""
        dh = _right(z) - z        # z(r, c+1) - z(r, c), valid where eh
        dv = _down(z) - z
        up, vp = self.a_u * dh * self.eh, self.a_v * dv * self.ev
        return {"u+": up, "u-": self.a_u * _shift_right(dh * self.eh),
                "v+": vp, "v-": self.a_v * _shift_down(dv * self.ev)}

    def residuals(self, d: dict) -> dict:
        return {"u+": (d["u+"] + self.nx) * self.has["u+"], "u-": (d["u-"] + self.nx) * self.has["u-"],
                "v+": (d["v+"] + self.ny) * self.has["v+"], "v-": (d["v-"] + self.ny) * self.has["v-"]}

    def bini_weights_and_energy(self, z, k: float, bias: dict | None = None) -> tuple[dict, float]:
        """BiNI's weights of z (as :func:`~fnin_cli.solvers.bini.bini_weights`, ``bias``
        per-axis logit images) and the weighted energy, as
        :meth:`NormalSystem.energy` computes it."""
        d = self.differences(z)
        xu, xv = d["u+"] ** 2 - d["u-"] ** 2, d["v+"] ** 2 - d["v-"] ** 2
        if bias is None:
            wu, wv = torch.sigmoid(k * xu), torch.sigmoid(k * xv)
        else:
            wu, wv = torch.sigmoid(k * xu + bias["u"]), torch.sigmoid(k * xv + bias["v"])
        # outside the mask the weights are never used; keep them 0 like the residuals
        wu, wv = wu * self.active, wv * self.active
        w = {"u+": self.active - wu, "u-": wu, "v+": self.active - wv, "v-": wv}
        return w, self.energy(z, w, d)

    def energy(self, z, w: dict, differences: dict | None = None) -> float:
        """The weighted energy of the image z with the weight images ``w``, as
        :meth:`NormalSystem.energy` computes it (``differences``: :meth:`differences` of z)."""
        r = self.residuals(self.differences(z) if differences is None else differences)
        return float(sum(torch.sum(w[x] * r[x] * r[x]) for x in DIRECTIONS))

    # ------------------------------------------------------------ normal equations

    def term(self, term: DataTerm) -> tuple:
        """A :class:`~fnin_cli.solvers.system.DataTerm` on the grid: (weight, a number or an
        image; target image, or None where the term pulls towards 0)."""
        weight = term.weight if np.ndim(term.weight) == 0 else self.image(term.weight)
        return weight, (None if term.pull() is None else self.image(term.target))

    def stencil(self, w: dict, term: tuple) -> "Stencil":
        """The matrix sum_d (a D_d)^T W_d (a D_d) + diag(weight) as a 5-point stencil
        (``term``: :meth:`term`'s)."""
        ch = (w["u+"] * self.a_u ** 2 + _right(w["u-"] * self.a_u ** 2)) * self.eh
        cv = (w["v+"] * self.a_v ** 2 + _down(w["v-"] * self.a_v ** 2)) * self.ev
        diag = term[0] * self.active + ch + _shift_right(ch) + cv + _shift_down(cv)
        return Stencil(diag, ch, cv, self.active)

    def rhs(self, w: dict):
        th = (w["u+"] * self.a_u * self.nx + _right(w["u-"] * self.a_u * self.nx)) * self.eh
        tv = (w["v+"] * self.a_v * self.ny + _down(w["v-"] * self.a_v * self.ny)) * self.ev
        return th - _shift_right(th) + tv - _shift_down(tv)

    def solve(self, w: dict, term: tuple, x0, rtol: float, maxiter: int,
              coarse_scale: float = DEFAULT.solver.grid_coarse_scale):
        """Minimise the weighted objective with images ``w`` (:meth:`weights_images`), the
        data term ``term`` (:meth:`term`'s), start ``x0``; tolerance relative to the data
        part of the right-hand side, as :meth:`NormalSystem.solve`; ``coarse_scale``: the
        :class:`Multigrid`'s. Returns (z image, iterations, relative residual)."""
        A = self.stencil(w, term)
        b = self.rhs(w)
        ref = float(_norm(b))
        weight, target = term
        if target is not None:
            b = b + weight * target * self.active
        return pcg(A, b, x0, Multigrid(A, coarse_scale).vcycle, rtol, maxiter, ref)


class Stencil:
    """A symmetric 5-point operator on an (h, w) grid: ``diag``, ``ch`` (coupling of
    (r, c) and (r, c+1), last column 0) and ``cv`` ((r, c) and (r+1, c), last row 0), all
    non-negative; A x = diag x - ch x(right) - ... . Pixels that are not ``active`` have
    diag 1 and no coupling (x and the right-hand side stay 0 there). ``fused``: apply it
    (and the V-cycle's sweeps) with :mod:`.grid_kernels`' single-pass kernels; None: where
    they can run (CUDA, Triton importable)."""

    def __init__(self, diag, ch, cv, active, fused: bool | None = None):
        self.ch, self.cv, self.active = ch, cv, active
        self.diag = diag * active + (1.0 - active)
        self.inv_diag = 1.0 / self.diag
        self.fused = grid_kernels.available(diag) if fused is None else fused

    def add_offdiag(self, out, x, sign: float = 1.0):
        """``out += sign * (couplings times neighbours)`` in place (four fused passes over
        shifted views: no shifted copies), returning ``out``."""
        ch, cv = self.ch, self.cv
        out[:, :-1].addcmul_(ch[:, :-1], x[:, 1:], value=sign)     # right neighbour
        out[:, 1:].addcmul_(ch[:, :-1], x[:, :-1], value=sign)     # left
        out[:-1].addcmul_(cv[:-1], x[1:], value=sign)              # below
        out[1:].addcmul_(cv[:-1], x[:-1], value=sign)              # above
        return out

    def matvec(self, x, out=None):
        """A x, into ``out`` if given."""
        if self.fused:
            return grid_kernels.apply(torch.empty_like(x) if out is None else out, x, self.diag, self.ch, self.cv)
        out = torch.mul(self.diag, x, out=out) if out is not None else self.diag * x
        return self.add_offdiag(out, x, -1.0)

    def residual(self, b, x, out):
        """b - A x, into ``out``."""
        if self.fused:
            return grid_kernels.apply(out, x, self.diag, self.ch, self.cv, b=b)
        torch.addcmul(b, self.diag, x, value=-1.0, out=out)
        return self.add_offdiag(out, x)

    def __matmul__(self, x):
        return self.matvec(x)

    def padded(self, h: int, w: int) -> "Stencil":
        """The operator on an (h, w) grid at least as large, extra pixels inactive."""
        dh, dw = h - self.diag.shape[0], w - self.diag.shape[1]
        if not (dh or dw):
            return self
        pad = lambda t: torch.nn.functional.pad(t, (0, dw, 0, dh))   # noqa: E731
        return Stencil(pad(self.diag), pad(self.ch), pad(self.cv), pad(self.active), self.fused)

    def coarsened(self) -> "Stencil":
        """The Galerkin operator P^T A P for P merging each 2x2 block (padded to even sides)."""
        h, w = self.diag.shape
        even = self.padded(h + h % 2, w + w % 2)
        act, d, ch, cv = even.active, even.diag * even.active, even.ch, even.cv
        H, W = act.shape[0] // 2, act.shape[1] // 2
        blocks = lambda t: t.reshape(H, 2, W, 2)   # noqa: E731
        a = blocks(act).amax(dim=(1, 3))
        dsum = blocks(d).sum(dim=(1, 3))
        chb, cvb = blocks(ch), blocks(cv)
        internal = chb[:, :, :, 0].sum(dim=1) + cvb[:, 0, :, :].sum(dim=2)
        ch_c = chb[:, :, :, 1].sum(dim=1)     # fine column 2J+1 couples block J to block J+1
        cv_c = cvb[:, 1, :, :].sum(dim=2)     # fine row 2I+1 couples block I to block I+1
        ch_c[:, -1] = 0.0
        cv_c[-1, :] = 0.0
        return Stencil(dsum - 2.0 * internal, ch_c * a * _right(a), cv_c * a * _down(a), a, self.fused)

    def dense(self):
        """The operator as a dense (h w, h w) matrix (for the coarsest grid)."""
        h, w = self.diag.shape
        n = h * w
        A = torch.diag(self.diag.reshape(-1))
        idx = torch.arange(n, device=self.diag.device).reshape(h, w)
        p, q = idx[:, :-1].reshape(-1), idx[:, 1:].reshape(-1)
        c = self.ch[:, :-1].reshape(-1)
        A[p, q] = -c
        A[q, p] = -c
        p, q = idx[:-1, :].reshape(-1), idx[1:, :].reshape(-1)
        c = self.cv[:-1, :].reshape(-1)
        A[p, q] = -c
        A[q, p] = -c
        return A


class Multigrid:
    """A geometric V-cycle for a :class:`Stencil`: 2x2 aggregation down to at most
    ``COARSEST`` pixels, ``sweeps`` red-black Gauss-Seidel sweeps before and after each
    coarse correction (the second set in reverse colour order: a symmetric cycle),
    the coarsest grid solved with its inverse (by Cholesky).

    Every level but the coarsest is stored with even sides (extra pixels inactive, as the
    coarsening pads them) and owns two work images, so that a cycle allocates nothing and
    restriction and prolongation are views of 2x2 blocks: a cycle is a few fused passes
    per level (on a GPU the passes over the finest grid are its time). ``graph``: on a
    CUDA device, record the cycle once as a CUDA graph and replay it (the coarse levels'
    hundred-odd small launches then cost no Python; None: on CUDA).
    """

    def __init__(self, A: Stencil, coarse_scale: float = DEFAULT.solver.grid_coarse_scale, sweeps: int = SWEEPS,
                 graph: bool | None = None):
        self.coarse_scale, self.sweeps = coarse_scale, sweeps
        # float64 throughout: a float32 cycle took 3.2x the time at 24 MP (the Galerkin
        # diagonals cancel; docs/decisions.md#grid-on-gpu)
        self.shape = A.diag.shape
        levels = [A]
        while levels[-1].diag.numel() > COARSEST and min(levels[-1].diag.shape) > 1:
            h, w = levels[-1].diag.shape      # stored with even sides, then coarsened
            levels[-1] = levels[-1].padded(h + h % 2, w + w % 2)
            levels.append(levels[-1].coarsened())
        self.levels = levels
        # the coarsest grid's inverse, symmetrised: a product (no solver call) is what a
        # CUDA graph can record
        inv = torch.cholesky_inverse(torch.linalg.cholesky(levels[-1].dense()))
        self.coarse_inverse = 0.5 * (inv + inv.T)
        dev = A.diag.device
        self.zero = torch.zeros((), dtype=A.diag.dtype, device=dev)
        self.red, self.black, self.work, self.scaled_active = [], [], [], []
        for L in self.levels[:-1]:
            h, w = L.diag.shape
            red = (torch.arange(h, device=dev)[:, None] + torch.arange(w, device=dev)[None, :]) % 2 == 0
            self.red.append(red)
            self.black.append(~red)
            self.work.append((torch.empty_like(L.diag), torch.empty_like(L.diag)))
            self.scaled_active.append(coarse_scale * L.active)
        self._graph = None
        if A.diag.is_cuda if graph is None else graph:
            self._record()

    def _record(self):
        """Record :meth:`_vcycle` as a CUDA graph reading ``self._graph_in`` (after one
        run outside it, which compiles the kernels and sets up the libraries' handles)."""
        self._graph_in = torch.zeros(self.shape, dtype=self.zero.dtype, device=self.zero.device)
        side = torch.cuda.Stream(self.zero.device)
        side.wait_stream(torch.cuda.current_stream(self.zero.device))
        with torch.cuda.stream(side):
            self._vcycle(self._graph_in)
        torch.cuda.current_stream(self.zero.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                self._graph_out = self._vcycle(self._graph_in)
        except RuntimeError:     # a driver or library that cannot record: launch one by one
            torch.cuda.synchronize(self.zero.device)
            return
        self._graph = graph

    def vcycle(self, b):
        """One V-cycle applied to the (h, w) image ``b``. The result is a work image of
        the cycle, valid until its next call (copy it to keep it)."""
        if self._graph is not None:
            self._graph_in.copy_(b)
            self._graph.replay()
            return self._graph_out
        return self._vcycle(b)

    def _vcycle(self, b):
        h, w = self.shape
        H, W = self.levels[0].diag.shape
        if (H, W) != (h, w):
            return self._cycle(0, torch.nn.functional.pad(b, (0, W - w, 0, H - h)))[:h, :w]
        return self._cycle(0, b)

    def _cycle(self, i: int, b):
        L = self.levels[i]
        if i == len(self.levels) - 1:
            x = (self.coarse_inverse @ b.reshape(-1, 1)).reshape(b.shape)
            return x * L.active
        x, t = self.work[i]
        # the first half-sweep starts from x = 0: x = b / diag on red, 0 on black
        torch.mul(b, L.inv_diag, out=t)
        torch.where(self.red[i], t, self.zero, out=x)
        self._half_sweep(i, x, b, BLACK)
        for _ in range(self.sweeps - 1):
            self._half_sweep(i, x, b, RED)
            self._half_sweep(i, x, b, BLACK)
        # residual, restricted (sums over 2x2 blocks), corrected from the coarser grid
        L.residual(b, x, t)
        H, W = t.shape[0] // 2, t.shape[1] // 2
        # sums over 2x2 blocks (a pooling kernel: 4.5x faster on the CPU than a blocked sum)
        rc = torch.nn.functional.avg_pool2d(t[None, None], 2, divisor_override=1)[0, 0]
        Hs, Ws = self.levels[i + 1].diag.shape
        if (Hs, Ws) != (H, W):
            rc = torch.nn.functional.pad(rc, (0, Ws - W, 0, Hs - H))
        ec = self._cycle(i + 1, rc)[:H, :W]
        x.view(H, 2, W, 2).addcmul_(ec[:, None, :, None], self.scaled_active[i].view(H, 2, W, 2))
        for _ in range(self.sweeps):
            self._half_sweep(i, x, b, BLACK)
            self._half_sweep(i, x, b, RED)
        return x

    def _half_sweep(self, i: int, x, b, parity: int):
        """Gauss-Seidel at level ``i`` on the pixels with (row + column) % 2 == ``parity``
        (x in place; the level's second work image as scratch)."""
        L = self.levels[i]
        if L.fused:
            grid_kernels.half_sweep(x, b, L.ch, L.cv, L.inv_diag, parity)
            return
        t, ch, cv = self.work[i][1], L.ch, L.cv
        torch.addcmul(b[:, :-1], ch[:, :-1], x[:, 1:], out=t[:, :-1])   # b + right neighbour
        t[:, -1].copy_(b[:, -1])
        t[:, 1:].addcmul_(ch[:, :-1], x[:, :-1])
        t[:-1].addcmul_(cv[:-1], x[1:])
        t[1:].addcmul_(cv[:-1], x[:-1])
        t.mul_(L.inv_diag)
        torch.where(self.red[i] if parity == RED else self.black[i], t, x, out=x)


def _dot(a, b):
    return torch.dot(a.reshape(-1), b.reshape(-1))


def pcg(A: Stencil, b, x0, precondition, rtol: float, maxiter: int, ref_norm: float | None = None):
    """Preconditioned CG on images; stops when ||b - A x|| <= rtol * ref_norm (||b|| if
    None), as :func:`fnin_cli.solvers.linear.pcg`. ``precondition`` may return a work image
    it overwrites on its next call. Returns (x, iterations, relative residual)."""
    x = x0.clone()
    bnorm = float(_norm(b)) if ref_norm is None else float(ref_norm)
    bnorm = bnorm or 1.0
    r = b - A @ x
    rnorm = float(_norm(r))
    it = 0
    if rnorm <= rtol * bnorm:
        return x, 0, rnorm / bnorm
    z = precondition(r)
    p = z.clone()
    rz = _dot(r, z)
    Ap = torch.empty_like(b)
    for it in range(1, maxiter + 1):
        A.matvec(p, out=Ap)
        alpha = rz / _dot(p, Ap)
        x.addcmul_(p, alpha)
        r.addcmul_(Ap, alpha, value=-1.0)
        rnorm = float(_norm(r))
        if rnorm <= rtol * bnorm:
            break
        z = precondition(r)
        rz_new = _dot(r, z)
        p.mul_(rz_new / rz).add_(z)
        rz = rz_new
    return x, it, rnorm / bnorm


# ---------------------------------------------------------------- shifts on (h, w) images

def _right(t):
    """t(r, c+1), 0 in the last column."""
    out = torch.zeros_like(t)
    out[:, :-1] = t[:, 1:]
    return out


def _down(t):
    out = torch.zeros_like(t)
    out[:-1, :] = t[1:, :]
    return out


def _shift_right(t):
    """t(r, c-1) at (r, c), 0 in the first column."""
    out = torch.zeros_like(t)
    out[:, 1:] = t[:, :-1]
    return out


def _shift_down(t):
    out = torch.zeros_like(t)
    out[1:, :] = t[:-1, :]
    return out


def _norm(t):
    return torch.linalg.vector_norm(t)
