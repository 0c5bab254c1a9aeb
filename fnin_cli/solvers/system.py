"""The weighted least-squares system of one masked normal map (:class:`NormalSystem`) and
its data terms (:class:`DataTerm`).

For a masked normal map it minimises over the unknown z (log-depth or depth)

    sum_p  w_u+/2 (a_u dU+ z + n_x)^2 + w_u-/2 (a_u dU- z + n_x)^2
         + w_v+/2 (a_v dV+ z + n_y)^2 + w_v-/2 (a_v dV- z + n_y)^2  +  c_p/2 (z - t_p)^2

(a one-sided difference exists only where both pixels are in the mask). The last sum is
the data term: a weight c_p and a target t_p per pixel (:class:`DataTerm`; every method's
prior lam (z - z_start)^2 is one, with a constant weight). The normal equations are a
symmetric positive-definite 5-point system. Everything is vectorised
over pixels, each reading its neighbours from arrays built once per mask (the right one
is the next pixel in row-major order): the sparsity pattern is built once and each new
set of weights only refills the matrix values (docs/decisions.md#rounds-pass). See
docs/methods.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..camera import Camera
from ..config import DEFAULT
from .linear import AMGCache, SolveInfo, dot, solve_spd

if TYPE_CHECKING:
    import scipy.sparse as sp

DIRECTIONS = ("u+", "u-", "v+", "v-")


def classic_lambda(camera: Camera, shape, lam: float = DEFAULT.solver.lam) -> float:
    """The tiny definiteness prior ``lam`` of every method in the system's normal units.

    Perspective: lambda as it is (docs/methods.md#equations). Orthographic: lambda with the image scaled to
    [-1, 1], since an absolute 1e-3 flattened results (docs/decisions.md#prior-weight).

    Examples
    --------
    >>> classic_lambda(Camera(None, 1.0), (100, 200), 1e-3) == 1e-3 * (2.0 / 200) ** 2
    True
    """
    if camera.perspective:
        return lam
    return lam * (2.0 / (camera.pixel_size * max(shape))) ** 2


@dataclass(frozen=True)
class DataTerm:
    """The term sum_p weight_p / 2 (z_p - target_p)^2 of the objective over the masked pixels.

    It adds ``weight`` to the normal equations' diagonal and ``weight * target`` to their
    right-hand side. Every method has one: the tiny prior lam (z - z_start)^2 that settles
    what the normals leave free (docs/methods.md#equations); :meth:`plus` adds another
    (one term with the weights summed and the targets weighted).

    Parameters
    ----------
    weight : float or ndarray
        One weight for every pixel, or one per masked pixel (n,); >= 0.
    target : ndarray, optional
        The target per masked pixel (n,); None: 0 everywhere.

    Examples
    --------
    >>> t = DataTerm(1.0, np.zeros(3)).plus(DataTerm(np.array([0.0, 1.0, 3.0]), np.full(3, 4.0)))
    >>> t.weight.tolist(), t.target.tolist()
    ([1.0, 2.0, 4.0], [0.0, 2.0, 3.0])
    """

    weight: float | np.ndarray
    target: np.ndarray | None = None

    def pull(self):
        """weight * target: the term's share of the right-hand side (None where the target is 0)."""
        return None if self.target is None or not np.any(self.weight) else self.weight * self.target

    def plus(self, other: "DataTerm") -> "DataTerm":
        """One term equal to the sum of this and ``other`` (up to a constant)."""
        weight = self.weight + other.weight
        pull = [p for p in (self.pull(), other.pull()) if p is not None]
        if not pull:
            return DataTerm(weight)
        total = pull[0] if len(pull) == 1 else pull[0] + pull[1]
        return DataTerm(weight, np.divide(total, weight, out=np.zeros_like(total, dtype=np.float64),
                                          where=np.broadcast_to(weight, np.shape(total)) > 0))


class NormalSystem:
    """The residual rows of one masked normal map under one camera.

    ``pixels`` are the masked pixels in row-major order; ``index`` maps (row, col) to
    the unknown's position (-1 outside the mask).
    """

    def __init__(self, normals: np.ndarray, mask: np.ndarray, camera: Camera):
        self.shape = mask.shape
        self.mask = mask
        self.camera = camera
        self.n = int(mask.sum())
        index = np.full(mask.shape, -1, np.int64)
        index[mask] = np.arange(self.n)
        self.index = index
        self.a_u, self.a_v, self.nx, self.ny = camera.residual_coefficients(normals, mask)
        # horizontal edges (p, q): q is the right neighbour of p; vertical: q below p
        both_h = mask[:, :-1] & mask[:, 1:]
        both_v = mask[:-1, :] & mask[1:, :]
        self.hp, self.hq = index[:, :-1][both_h], index[:, 1:][both_h]
        self.vp, self.vq = index[:-1, :][both_v], index[1:, :][both_v]
        # which pixels have each one-sided difference
        self.has = {
            "u+": np.zeros(self.n, bool), "u-": np.zeros(self.n, bool),
            "v+": np.zeros(self.n, bool), "v-": np.zeros(self.n, bool),
        }
        self.has["u+"][self.hp] = True
        self.has["u-"][self.hq] = True
        self.has["v+"][self.vp] = True
        self.has["v-"][self.vq] = True
        self._stencil = None
        self._pattern = None
        self._view_cos = None             # view_cosine's, computed once on first use

    def _grid(self) -> "_Stencil":
        """The per-pixel neighbour arrays every round reads (built once, on first use)."""
        if self._stencil is None:
            self._stencil = _Stencil(self)
        return self._stencil

    # ------------------------------------------------------------ residuals

    def differences(self, z: np.ndarray) -> dict:
        """a * (one-sided difference of z) per pixel and direction (0 where it does not exist)."""
        g = self._grid()
        dh, dv = g.edge_differences(z)
        return {"u+": self.a_u * dh[1:], "u-": self.a_u * dh[:-1],
                "v+": self.a_v * dv[:-1], "v-": self.a_v * dv[g.up]}

    def residuals(self, z: np.ndarray, differences: dict | None = None) -> dict:
        """Residual a*dz + n per pixel and direction (0 where the difference does not exist);
        ``differences``: :meth:`differences` of z, if already computed."""
        diffs = self.differences(z) if differences is None else differences
        lacks = self._grid().lacks
        out = {}
        for d, n in (("u+", self.nx), ("u-", self.nx), ("v+", self.ny), ("v-", self.ny)):
            r = diffs[d] + n
            np.copyto(r, 0.0, where=lacks[d])
            out[d] = r
        return out

    def energy(self, z: np.ndarray, weights: dict | None = None, residuals: dict | None = None) -> float:
        """Weighted squared residual sum (Az - b)^T W (Az - b), without the prior;
        ``residuals``: :meth:`residuals` of z, if already computed."""
        res = self.residuals(z) if residuals is None else residuals
        if weights is None:
            return float(sum(dot(r, r) for r in res.values()))
        return float(sum(dot(weights[d] * res[d], res[d]) for d in DIRECTIONS))

    def weight_gradients(self, z: np.ndarray, adjoint: np.ndarray) -> dict:
        """dL/dw_d per pixel and direction at the minimiser z of the weighted objective,
        given ``adjoint`` = A^{-1} dL/dz (implicit differentiation of A(w) z = b(w)):
        dL/dw_d = -(a D_d adjoint) * r_d(z). Training through Stage II uses it."""
        diffs = self.differences(adjoint)
        res = self.residuals(z)
        return {d: -diffs[d] * res[d] for d in DIRECTIONS}

    # ------------------------------------------------------------ normal equations

    def _csr_pattern(self):
        """(indptr, indices, gather): the CSR pattern of the 5-point system, rows in pixel
        order, each row's columns sorted (up, left, self, right, down); ``gather`` picks
        each stored value from the (5, n) per-pixel stencil :meth:`matrix` fills."""
        if self._pattern is None:
            g, n = self._grid(), self.n
            itype = np.int32 if 5 * n < 2**31 else np.int64
            present = np.ones((n, 5), bool)      # per pixel: up, left, self, right, down
            pix = np.arange(n, dtype=itype)
            cols = np.empty((n, 5), itype)
            for j, (d, col) in enumerate((("v-", g.up), ("u-", pix - 1), (None, pix), ("u+", pix + 1),
                                          ("v+", g.down[:-1]))):
                if d is not None:
                    np.logical_not(g.lacks[d], out=present[:, j])
                cols[:, j] = col
            indptr = np.zeros(n + 1, itype)
            np.cumsum(present.sum(axis=1, dtype=itype), out=indptr[1:])
            flat = np.flatnonzero(present).astype(itype)     # row * 5 + slot, row-major
            row, slot = np.divmod(flat, 5)
            gather = slot * itype(n) + row
            self._pattern = (indptr, cols.ravel()[flat], gather)
        return self._pattern

    def _stencil_sums(self, weights, coeff_u, coeff_v):
        """Per pixel, sum over the two ends of its right (h) and lower (v) edge of
        w_dir * coeff (0 where the edge does not exist), each padded by one 0: h[1:]
        is the right edge's sum at each pixel, h[:-1] the left edge's, v[:-1] the lower
        edge's and v[up] the upper's."""
        g, n = self._grid(), self.n
        h = np.zeros(n + 1)
        v = np.zeros(n + 1)
        if weights is None:
            np.add(coeff_u[:-1], coeff_u[1:], out=h[1:-1])
            np.add(coeff_v, coeff_v[g.down[:-1]], out=v[:-1])
        else:
            np.add((weights["u+"] * coeff_u)[:-1], (weights["u-"] * coeff_u)[1:], out=h[1:-1])
            np.add(weights["v+"] * coeff_v, (weights["v-"] * coeff_v)[g.down[:-1]], out=v[:-1])
        np.copyto(h[1:], 0.0, where=g.lacks["u+"])
        np.copyto(v[:-1], 0.0, where=g.lacks["v+"])
        return h, v

    def matrix(self, weights: dict | None, term: DataTerm) -> sp.csr_matrix:
        """The SPD matrix sum_d (a D_d)^T W_d (a D_d) + diag(term.weight)."""
        import scipy.sparse as sp   # here, not at import: `fnin --help` need not load scipy

        g = self._grid()
        h, v = self._stencil_sums(weights, g.a_u2, g.a_v2)
        up = v[g.up]
        stencil = np.empty((5, self.n))
        np.negative(up, out=stencil[0])
        np.negative(h[:-1], out=stencil[1])
        np.add(h[1:], h[:-1], out=stencil[2])
        stencil[2] += v[:-1]
        stencil[2] += up
        stencil[2] += term.weight
        np.negative(h[1:], out=stencil[3])
        np.negative(v[:-1], out=stencil[4])
        indptr, indices, gather = self._csr_pattern()
        return sp.csr_matrix((stencil.ravel().take(gather), indices, indptr), shape=(self.n, self.n))

    def rhs(self, weights: dict | None) -> np.ndarray:
        """The data's right-hand side sum_d (a D_d)^T W_d (-n_d) (without a data term's)."""
        g = self._grid()
        if weights is None:
            h, v = self._stencil_sums(None, self.a_u * self.nx, self.a_v * self.ny)
        else:
            w = weights
            h, v = self._stencil_sums({"u+": w["u+"] * self.a_u, "u-": w["u-"] * self.a_u,
                                       "v+": w["v+"] * self.a_v, "v-": w["v-"] * self.a_v}, self.nx, self.ny)
        b = h[1:] - h[:-1]
        b += v[:-1]
        b -= v[g.up]
        return b

    def normal_equations(self, weights: dict | None, term: DataTerm) -> tuple:
        """(A, b, ref): the matrix, the right-hand side with the data term's share, and the
        norm of the data's part alone, to which solves measure their tolerance (with a warm
        start at the term's target, its share would otherwise make any start look converged)."""
        A = self.matrix(weights, term)
        b = self.rhs(weights)
        ref = np.sqrt(dot(b, b))
        pull = term.pull()
        if pull is not None:
            b = b + pull
        return A, b, ref

    def solve(
        self,
        weights: dict | None = None,
        term: DataTerm = DataTerm(DEFAULT.solver.lam),
        x0: np.ndarray | None = None,
        method: str = "amg",
        rtol: float = 1e-6,
        maxiter: int = DEFAULT.solver.maxiter,
        hierarchy: AMGCache | None = None,
    ) -> tuple[np.ndarray, SolveInfo]:
        """Minimise the weighted objective with the data term ``term``; returns (z, info),
        started at ``x0`` (None: the term's target, else 0). ``hierarchy``: see
        :func:`~fnin_cli.solvers.linear.solve_spd` (AMG reused across IRLS rounds)."""
        t0 = time.perf_counter()
        A, b, ref = self.normal_equations(weights, term)
        if x0 is None:
            x0 = term.target if term.target is not None else np.zeros(self.n)
        return solve_spd(A, b, x0, method=method, rtol=rtol, maxiter=maxiter, t0=t0, ref_norm=ref,
                         hierarchy=hierarchy)

    def at_pixels(self, img: np.ndarray) -> np.ndarray:
        """An image's values at the system's pixels, float64 (the network's images are
        float32 whole frames; the solves take their masked pixels in float64)."""
        return img[self.mask].astype(np.float64, copy=False)

    def to_image(self, values: np.ndarray, fill=np.nan) -> np.ndarray:
        img = np.full(self.shape, fill, dtype=np.float64)
        img[self.mask] = values
        return img


class _Stencil:
    """A :class:`NormalSystem`'s neighbours per pixel: the right neighbour of pixel p is
    p + 1 (row-major order), ``down[p]`` the one below (p itself where there is none; one
    more entry, n, for padding), ``up[p]`` the one above (n where none); ``lacks[d]``: the
    pixels without the one-sided difference d; a_u^2 and a_v^2."""

    def __init__(self, s: NormalSystem):
        n = s.n
        itype = np.int32 if n < 2**31 - 1 else np.int64
        self.lacks = {d: ~s.has[d] for d in DIRECTIONS}
        self.down = np.arange(n + 1, dtype=itype)
        self.down[s.vp] = s.vq
        self.up = np.full(n, n, itype)
        self.up[s.vq] = s.vp
        self.a_u2 = s.a_u ** 2
        self.a_v2 = s.a_v ** 2

    def edge_differences(self, z: np.ndarray) -> tuple:
        """(dh, dv): z's difference along each pixel's right edge, dh[p + 1], and lower
        edge, dv[p] (0 where the edge does not exist); dh[p] is the left edge's, dv[up[p]]
        the upper edge's (dh[0] = dv[n] = 0)."""
        n = z.shape[0]
        dh = np.zeros(n + 1)
        np.subtract(z[1:], z[:-1], out=dh[1:-1])
        np.copyto(dh[1:], 0.0, where=self.lacks["u+"])
        dv = np.zeros(n + 1)
        np.subtract(z[self.down[:-1]], z, out=dv[:-1])
        return dh, dv


def view_cosine(system: NormalSystem) -> np.ndarray:
    """|cos| of the angle between each masked pixel's normal and its view ray (0: grazing).

    Orthographic: |n_z|; perspective: |n . r| / |r| with r = ((u - cx)/fx, (v - cy)/fy, 1).
    Unit normals assumed.

    Examples
    --------
    >>> n = np.dstack([np.full((2, 2), 0.6), np.zeros((2, 2)), np.full((2, 2), -0.8)])
    >>> view_cosine(NormalSystem(n, np.ones((2, 2), bool), Camera(None, 2.0))).round(3).tolist()
    [0.8, 0.8, 0.8, 0.8]
    """
    # computed once per system (the placement, the slivers, the grazing pixels, a prior's
    # contours and its fuse all read it) and shared read-only
    if system._view_cos is not None:
        return system._view_cos
    cam = system.camera
    if cam.K is None:
        cos = np.abs(system.a_u) * cam.pixel_size
    else:
        K = cam.K
        h, w = system.mask.shape
        # |r|^2 from a row and a column broadcast over the image, then masked: no pixel
        # coordinates (np.nonzero of a 24 MP mask is 2 s of this function's 2.1)
        ru = ((np.arange(w) - K[0, 2]) / K[0, 0]) ** 2
        rv = ((np.arange(h) - K[1, 2]) / K[1, 1]) ** 2
        r2 = (ru[None, :] + rv[:, None] + 1.0)[system.mask]
        cos = np.abs(system.a_u) / K[0, 0] / np.sqrt(r2)
    cos.setflags(write=False)
    system._view_cos = cos
    return cos
