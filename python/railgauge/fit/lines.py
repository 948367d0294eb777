"""Weighted straight lines with non-negative coefficients (docs/fit.md, section 4): one line
by bounded least squares, and many at once by an exact two-variable solver (bootstrap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear

from railgauge.fit.defs import (
    FloatArray,
)

# --------------------------------------------------------------------------------------
# Line fits
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LineFit:
    a: float  # intercept at s = 1 (x = 0)
    b: float  # slope per byte
    a_free: float
    b_free: float
    a_se: float  # conservative SE: normalisers as sigmas, scaled up if chi2_red > 1
    b_se: float
    chi2_red: float  # reduced chi^2 with the normalisers (floored sigmas)
    a_se_obs: float  # SE from the observed scatter (scaled by chi2_red either way)
    b_se_obs: float


def _design(x: FloatArray, w: FloatArray) -> tuple[FloatArray, float]:
    scale = float(max(np.max(np.abs(x)), 1.0))
    sw = np.sqrt(w)
    return np.column_stack([sw, sw * (x / scale)]), scale


def _fit_line(x: FloatArray, y: FloatArray, w: FloatArray) -> _LineFit:
    """Weighted line with a, b >= 0 (lsq_linear), plus the unconstrained estimate and SE."""
    keep = w > 0.0
    x, y, w = x[keep], y[keep], w[keep]
    m = x.size
    if m == 0:
        nan = math.nan
        return _LineFit(0.0, 0.0, nan, nan, nan, nan, nan, nan, nan)
    if m == 1 or np.ptp(x) == 0.0:
        # A single size: a constant, no slope.
        a_free = float(np.average(y, weights=w))
        se = float(1.0 / math.sqrt(w.sum()))
        return _LineFit(max(a_free, 0.0), 0.0, a_free, 0.0, se, math.inf, math.nan, se, math.inf)
    A, scale = _design(x, w)
    rhs = np.sqrt(w) * y
    res = lsq_linear(A, rhs, bounds=(0.0, np.inf), method="bvls", tol=1e-12)
    a, bs = (float(v) for v in res.x)
    free, *_ = np.linalg.lstsq(A, rhs, rcond=None)
    resid = rhs - A @ free
    dof = max(m - 2, 1)
    chi2_red = float(resid @ resid) / dof
    unscaled = np.linalg.pinv(A.T @ A)
    cov = unscaled * max(chi2_red, 1.0)
    cov_obs = unscaled * chi2_red
    return _LineFit(
        a=max(a, 0.0),
        b=max(bs, 0.0) / scale,
        a_free=float(free[0]),
        b_free=float(free[1]) / scale,
        a_se=float(math.sqrt(max(cov[0, 0], 0.0))),
        b_se=float(math.sqrt(max(cov[1, 1], 0.0))) / scale,
        chi2_red=chi2_red,
        a_se_obs=float(math.sqrt(max(cov_obs[0, 0], 0.0))),
        b_se_obs=float(math.sqrt(max(cov_obs[1, 1], 0.0))) / scale,
    )


def _nnls_lines(x: FloatArray, ys: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Exact weighted non-negative line fits a + b x for many right-hand sides at once.

    ``ys`` has shape (B, m). The minimiser of a convex quadratic over the quadrant
    {a >= 0, b >= 0} is the unconstrained minimiser when it is feasible, otherwise the
    minimiser on one of the faces a = 0 or b = 0 (or the corner); every candidate is
    computed and the feasible one of least cost is kept. Agrees with ``lsq_linear``.
    """
    keep = w > 0.0
    x, ys, w = x[keep], ys[:, keep], w[keep]
    bcount = ys.shape[0]
    if x.size == 0:
        return np.zeros(bcount), np.zeros(bcount)
    if x.size == 1 or np.ptp(x) == 0.0:
        a = np.maximum(ys @ w / w.sum(), 0.0)
        return a, np.zeros(bcount)
    A, scale = _design(x, w)
    R = ys * np.sqrt(w)  # (B, m)
    c0, c1 = A[:, 0], A[:, 1]
    g00, g01, g11 = float(c0 @ c0), float(c0 @ c1), float(c1 @ c1)
    r0, r1 = R @ c0, R @ c1
    det = g00 * g11 - g01 * g01
    a_u = (g11 * r0 - g01 * r1) / det
    b_u = (g00 * r1 - g01 * r0) / det
    cands = [
        (a_u, b_u),
        (np.zeros(bcount), np.maximum(r1 / g11, 0.0)),
        (np.maximum(r0 / g00, 0.0), np.zeros(bcount)),
        (np.zeros(bcount), np.zeros(bcount)),
    ]
    rr = np.einsum("ij,ij->i", R, R)
    best_cost = np.full(bcount, np.inf)
    best_a = np.zeros(bcount)
    best_b = np.zeros(bcount)
    for a, b in cands:
        # ||R - a c0 - b c1||^2 expanded with the Gram matrix.
        cost = rr - 2 * (a * r0 + b * r1) + a * a * g00 + 2 * a * b * g01 + b * b * g11
        ok = (a >= 0.0) & (b >= 0.0) & (cost < best_cost)
        best_cost = np.where(ok, cost, best_cost)
        best_a = np.where(ok, a, best_a)
        best_b = np.where(ok, b, best_b)
    return best_a, best_b / scale
