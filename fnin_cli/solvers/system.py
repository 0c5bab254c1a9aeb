"""The weighted least-squares system of one masked normal map (:class:`NormalSystem`).

For a masked normal map it minimises over the unknown z (log-depth or depth)

    sum_p  w_u+/2 (a_u dU+ z + n_x)^2 + w_u-/2 (a_u dU- z + n_x)^2
         + w_v+/2 (a_v dV+ z + n_y)^2 + w_v-/2 (a_v dV- z + n_y)^2  +  lam/2 (z - z_prior)^2

(a one-sided difference exists only where both pixels are in the mask). The normal
equations are a symmetric positive-definite 5-point system. Everything is vectorised
over pixels: the sparsity pattern is built once per mask and each new set of weights
only refills the matrix values. See docs/methods.md.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from ..camera import Camera
from ..config import DEFAULT
from .linear import AMGCache, SolveInfo, dot, solve_spd

if TYPE_CHECKING:
    import scipy.sparse as sp

DIRECTIONS = ("u+", "u-", "v+", "v-")


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
        self._pattern = None

    # ------------------------------------------------------------ residuals

    def differences(self, z: np.ndarray) -> dict:
        """a * (one-sided difference of z) per pixel and direction (0 where it does not exist)."""
        dh = z[self.hq] - z[self.hp]
        dv = z[self.vq] - z[self.vp]
        out = {d: np.zeros(self.n) for d in DIRECTIONS}
        out["u+"][self.hp] = self.a_u[self.hp] * dh
        out["u-"][self.hq] = self.a_u[self.hq] * dh
        out["v+"][self.vp] = self.a_v[self.vp] * dv
        out["v-"][self.vq] = self.a_v[self.vq] * dv
        return out

    def residuals(self, z: np.ndarray, differences: dict | None = None) -> dict:
        """Residual a*dz + n per pixel and direction (0 where the difference does not exist);
        ``differences``: :meth:`differences` of z, if already computed."""
        diffs = dict(self.differences(z) if differences is None else differences)
        for d, n in (("u+", self.nx), ("u-", self.nx), ("v+", self.ny), ("v-", self.ny)):
            diffs[d] = np.where(self.has[d], diffs[d] + n, 0.0)
        return diffs

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
        if self._pattern is None:
            import scipy.sparse as sp   # here, not at import: `fnin --help` need not load scipy

            n = self.n
            rows = np.concatenate([self.hp, self.hq, self.vp, self.vq, np.arange(n)])
            cols = np.concatenate([self.hq, self.hp, self.vq, self.vp, np.arange(n)])
            order = sp.csr_matrix(
                (np.arange(rows.size, dtype=np.float64) + 1.0, (rows, cols)), shape=(n, n)
            )
            order.sort_indices()
            perm = order.data.astype(np.int64) - 1
            self._pattern = (order.indptr, order.indices, perm)
        return self._pattern

    def matrix(self, weights: dict | None, lam: float) -> sp.csr_matrix:
        """The SPD matrix sum_d (a D_d)^T W_d (a D_d) + lam I."""
        w = _full_weights(weights, self.n)
        ch = w["u+"][self.hp] * self.a_u[self.hp] ** 2 + w["u-"][self.hq] * self.a_u[self.hq] ** 2
        cv = w["v+"][self.vp] * self.a_v[self.vp] ** 2 + w["v-"][self.vq] * self.a_v[self.vq] ** 2
        diag = (
            np.bincount(self.hp, ch, self.n) + np.bincount(self.hq, ch, self.n)
            + np.bincount(self.vp, cv, self.n) + np.bincount(self.vq, cv, self.n) + lam
        )
        vals = np.concatenate([-ch, -ch, -cv, -cv, diag])
        indptr, indices, perm = self._csr_pattern()
        import scipy.sparse as sp

        return sp.csr_matrix((vals[perm], indices, indptr), shape=(self.n, self.n))

    def rhs(self, weights: dict | None, lam: float, z_prior=None) -> np.ndarray:
        w = _full_weights(weights, self.n)
        th = (w["u+"][self.hp] * self.a_u[self.hp] * self.nx[self.hp]
              + w["u-"][self.hq] * self.a_u[self.hq] * self.nx[self.hq])
        tv = (w["v+"][self.vp] * self.a_v[self.vp] * self.ny[self.vp]
              + w["v-"][self.vq] * self.a_v[self.vq] * self.ny[self.vq])
        b = (np.bincount(self.hp, th, self.n) - np.bincount(self.hq, th, self.n)
             + np.bincount(self.vp, tv, self.n) - np.bincount(self.vq, tv, self.n))
        if z_prior is not None and lam:
            b = b + lam * z_prior
        return b

    def solve(
        self,
        weights: dict | None = None,
        lam: float = DEFAULT.solver.lam,
        z_prior: np.ndarray | None = None,
        x0: np.ndarray | None = None,
        method: str = "amg",
        rtol: float = 1e-6,
        maxiter: int = DEFAULT.solver.maxiter,
        hierarchy: AMGCache | None = None,
    ) -> tuple[np.ndarray, SolveInfo]:
        """Minimise the weighted objective; returns (z, info). ``hierarchy``: see
        :func:`~fnin_cli.solvers.linear.solve_spd` (AMG reused across IRLS rounds)."""
        t0 = time.perf_counter()
        A = self.matrix(weights, lam)
        b = self.rhs(weights, lam, None)
        # tolerance relative to the data part of the right-hand side: with a warm start
        # at z_prior, lam * z_prior would otherwise make any x0 look converged
        ref = np.sqrt(dot(b, b))
        if z_prior is not None and lam:
            b = b + lam * z_prior
        if x0 is None:
            x0 = z_prior if z_prior is not None else np.zeros(self.n)
        return solve_spd(A, b, x0, method=method, rtol=rtol, maxiter=maxiter, t0=t0, ref_norm=ref,
                         hierarchy=hierarchy)

    def to_image(self, values: np.ndarray, fill=np.nan) -> np.ndarray:
        img = np.full(self.shape, fill, dtype=np.float64)
        img[self.mask] = values
        return img


def _full_weights(weights, n):
    if weights is None:
        one = np.ones(n)
        return {d: one for d in DIRECTIONS}
    return weights
