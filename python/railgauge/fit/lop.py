"""The LoP model for small messages (Hoefler & Rehm), fitted to 1:n / n:1 measurements.

The paper's functions of the number p of peers addressed at once (times in us)::

    RTT(p) = l1/(l2 + p) + l3 + l4 (1 - exp(l5 (p - l6)))      pipeline + processing + saturation
    o(p)   = l1 + l2/(l3 + p)                                  send or receive overhead per request
    L(p)       = RTT(p)/2 - (o_s(p) + o_s(1))
    L_list(p)  = RTT(p)/2 - (p o_s(p) + o_s(1))                 (a list of p sends posted at once)
    t_1:n      = o(n) + n L(n)        t_1:n^list = n o(n) + n L(n)

RTT(p) is the per-peer round-trip time, the time of one whole 1:n round divided by p: the
quantity the paper's fitted functions describe (they fall from 22.8 us at p = 1 to 9.4 us at
p = 64) and the slides plot as RTT(P)/P beside the LogP prediction
(4o + 2L + (P-1) max{g, o})/P (:func:`logp_rtt_per_peer`).

**Identifiability.** l3 and l4 enter RTT(p) only through l3 + l4 and l4 exp(-l5 l6), so the
six lambdas describe a five-parameter family of curves: the fit estimates
(l1, l2, c = l3 + l4, a, l5) with RTT(p) = l1/(l2+p) + c - a exp(l5 (p - p_ref)) and reports
the six lambdas with the convention **l6 = p_min** (the smallest measured p): the saturation
term is zero at the first measured p, so l3 + l1/(l2 + p_min) = RTT(p_min), and
l4 (1 - exp(l5 (p - p_min))) is what saturation adds as p grows (approaching l4 for l5 < 0).
l6 is therefore fixed (its CI is [p_min, p_min]); every curve of the paper's form has
exactly one such representation (the paper's own functions are tested that way).

**Fit.** Weighted least squares (``scipy.optimize.least_squares``, trust region reflective,
bounds) on relative residuals: sigma_i = max(CI-derived sigma, ``rel_floor`` y_i), i.e.
multiplicative noise. The starting points are deterministic: the model is linear in
(l1, c, a) for fixed (l2, l5), so every point of a fixed grid of (l2, l5) gets its exact
linear least-squares solution, and the best four of these start the full fit; the lowest
converged cost wins. Bounds: l1 >= 0, -p_min < l2 <= 100 p_max (a pole guard of 1% of p_min),
|l5| <= 40/(p_max - p_min).

**Fallback.** A form that does not converge, whose l2 or l5 ends at a guard bound (a pole, a
step the exponential cannot follow, a pipeline flat enough to be a constant), or whose
Jacobian is singular falls back, and says so, to the next simpler form: RTT full ->
``pipeline`` l1/(l2+p) + l3 (l4 = l5 = 0) -> ``linear`` l1/p + l3 (l2 = 0: the whole round
grows linearly in p, as LogP says; closed form, always succeeds). Overhead full ->
``reciprocal`` l1 + l2/p (l3 = 0) -> ``constant`` l1.

**Confidence intervals.** 95% intervals from the Jacobian covariance s^2 (J^T J)^-1 of the
weighted residuals at the optimum (s^2 the reduced chi-square, Student-t quantile with
n - k degrees of freedom), carried to the six lambdas by the delta method. Parameters held
at a bound, and fixed ones, have zero width. The exact procedure: ``docs/lop.md``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats
from scipy.optimize import least_squares

from railgauge import __version__
from railgauge.jsonvalues import finite_json
from railgauge.onen import DIRECTIONS, MODES, OnenData, OnenPoint, SeriesKey

__all__ = [
    "OVERHEAD_PARAMS",
    "RTT_PARAMS",
    "CurveFit",
    "LopFit",
    "LopInputError",
    "LopModel",
    "LopSeriesFit",
    "ModelError",
    "canonical_rtt_lambda",
    "fit_lop",
    "fit_overhead",
    "fit_rtt",
    "latency",
    "latency_formula",
    "latency_list",
    "load_lop_model",
    "logp_prediction",
    "logp_rtt_per_peer",
    "lop_from_json",
    "overhead_function",
    "rtt_function",
    "series_table",
    "t_1n",
    "t_1n_list",
]

FloatArray = npt.NDArray[np.float64]
ArrayLike = float | int | Sequence[float] | npt.NDArray[Any]

#: Number of lambdas of the RTT and of the overhead function.
RTT_PARAMS = 6
OVERHEAD_PARAMS = 3
#: Forms of each function, most complex first (the fallback order).
RTT_FORMS: tuple[str, ...] = ("full", "pipeline", "saturation", "linear")
OVERHEAD_FORMS: tuple[str, ...] = ("full", "reciprocal", "constant")
#: Relative floor of a point's uncertainty: the fit's residuals are at least relative.
REL_FLOOR = 0.01
#: Pole guard: l2 (RTT) and l3 (overhead) stay above -p_min + POLE_GUARD * p_min.
POLE_GUARD = 0.01
#: |l5| <= L5_SPAN / (p_max - p_min): exp(l5 (p - p_ref)) stays within e^+-20 over the data.
L5_SPAN = 40.0
#: Starts refined by least squares, out of the grid of exact linear solutions.
N_STARTS = 4
#: Singular values below this fraction of the largest (column-normalised Jacobian) mean a
#: parameter is not identifiable from the data.
SINGULAR_RTOL = 1e-10
CI_METHOD = (
    "Jacobian covariance s^2 (J^T J)^-1 of the weighted residuals at the optimum (s^2 = "
    "reduced chi-square), Student-t 97.5% quantile with n - k degrees of freedom, carried to "
    "the lambdas by the delta method; parameters held at a bound or fixed have zero width"
)


class LopInputError(ValueError):
    """Data the LoP fit cannot use (too few points, p < 1, missing or negative times)."""


class ModelError(ValueError):
    """A fitted-model document is not a valid LoP model."""


# --------------------------------------------------------------------------------------
# The paper's functions
# --------------------------------------------------------------------------------------


def _ret(v: FloatArray, scalar: bool) -> Any:
    return float(v) if scalar else v


def rtt_function(lam: Sequence[float], p: ArrayLike) -> Any:
    """RTT(p) = l1/(l2 + p) + l3 + l4 (1 - exp(l5 (p - l6))) in us (per peer)."""
    if len(lam) != RTT_PARAMS:
        raise ValueError(f"the RTT function has {RTT_PARAMS} lambdas, got {len(lam)}")
    l1, l2, l3, l4, l5, l6 = (float(v) for v in lam)
    pa = np.asarray(p, dtype=np.float64)
    out = l1 / (l2 + pa) + l3
    if l4 != 0.0:
        with np.errstate(over="ignore"):
            out = out - l4 * np.expm1(l5 * (pa - l6))
    return _ret(np.asarray(out, dtype=np.float64), pa.ndim == 0)


def overhead_function(lam: Sequence[float], p: ArrayLike) -> Any:
    """o(p) = l1 + l2/(l3 + p) in us (per request)."""
    if len(lam) != OVERHEAD_PARAMS:
        raise ValueError(f"the overhead function has {OVERHEAD_PARAMS} lambdas, got {len(lam)}")
    l1, l2, l3 = (float(v) for v in lam)
    pa = np.asarray(p, dtype=np.float64)
    out = l1 + (l2 / (l3 + pa) if l2 != 0.0 else 0.0 * pa)
    return _ret(np.asarray(out, dtype=np.float64), pa.ndim == 0)


def latency(rtt_lam: Sequence[float], os_lam: Sequence[float], p: ArrayLike) -> Any:
    """L(p) = RTT(p)/2 - (o_s(p) + o_s(1)) in us (one request posted at a time)."""
    pa = np.asarray(p, dtype=np.float64)
    out = (
        np.asarray(rtt_function(rtt_lam, pa)) / 2.0
        - np.asarray(overhead_function(os_lam, pa))
        - float(overhead_function(os_lam, 1.0))
    )
    return _ret(np.asarray(out, dtype=np.float64), pa.ndim == 0)


def latency_list(rtt_lam: Sequence[float], os_lam: Sequence[float], p: ArrayLike) -> Any:
    """L_list(p) = RTT(p)/2 - (p o_s(p) + o_s(1)) in us (a list of p sends posted at once)."""
    pa = np.asarray(p, dtype=np.float64)
    out = (
        np.asarray(rtt_function(rtt_lam, pa)) / 2.0
        - pa * np.asarray(overhead_function(os_lam, pa))
        - float(overhead_function(os_lam, 1.0))
    )
    return _ret(np.asarray(out, dtype=np.float64), pa.ndim == 0)


def t_1n(rtt_lam: Sequence[float], os_lam: Sequence[float], n: ArrayLike) -> Any:
    """t_1:n = o(n) + n L(n) in us: one message to each of n hosts, one request at a time."""
    na = np.asarray(n, dtype=np.float64)
    out = np.asarray(overhead_function(os_lam, na)) + na * np.asarray(
        latency(rtt_lam, os_lam, na)
    )
    return _ret(np.asarray(out, dtype=np.float64), na.ndim == 0)


def t_1n_list(rtt_lam: Sequence[float], os_lam: Sequence[float], n: ArrayLike) -> Any:
    """t_1:n^list = n o(n) + n L(n) in us, with L = L_list (the n sends posted as one list;
    ``rtt_lam`` / ``os_lam`` should be the fits of the list-mode data)."""
    na = np.asarray(n, dtype=np.float64)
    out = na * np.asarray(overhead_function(os_lam, na)) + na * np.asarray(
        latency_list(rtt_lam, os_lam, na)
    )
    return _ret(np.asarray(out, dtype=np.float64), na.ndim == 0)


def logp_rtt_per_peer(P: ArrayLike, L: float, o: float, g: float) -> Any:
    """The slides' LogP prediction RTT(P)/P = (4o + 2L + (P-1) max{g, o})/P in us, P the
    number of peers addressed (P = 1: one ping-pong, 2L + 4o)."""
    pa = np.asarray(P, dtype=np.float64)
    out = (4.0 * o + 2.0 * L + (pa - 1.0) * max(g, o)) / pa
    return _ret(np.asarray(out, dtype=np.float64), pa.ndim == 0)


def _coef(v: float, digits: int) -> str:
    text = f"{v:.{digits}f}"
    return "0." + "0" * digits if text == "-0." + "0" * digits else text


def _signed(v: float, digits: int) -> str:
    t = _coef(v, digits)
    return f"- {t[1:]}" if t.startswith("-") else f"+ {t}"


def latency_formula(rtt_lam: Sequence[float], os_lam: Sequence[float], digits: int = 2) -> str:
    """L(p) written out as in the paper's worked example, coefficients rounded to ``digits``:
    ``RTT(p)/2`` with l1, l3, l4 halved, then ``- (o_s(1)) - (o_s(p))``::

        4.58 + 11.23/(-0.01 + p) + 0.01*(1 - e^(-0.06*(p - 101.31)))
          - (0.52 + 0.84/(-0.12 + 1)) - (0.52 + 0.84/(-0.12 + p))
    """
    l1, l2, l3, l4, l5, l6 = (float(v) for v in rtt_lam)
    a1, a2, a3 = (float(v) for v in os_lam)
    d = digits
    rtt = (
        f"{_coef(l3 / 2, d)} + {_coef(l1 / 2, d)}/({_coef(l2, d)} + p) "
        f"{_signed(l4 / 2, d)}*(1 - e^({_coef(l5, d)}*(p {_signed(-l6, d)})))"
    )
    o1 = f"({_coef(a1, d)} + {_coef(a2, d)}/({_coef(a3, d)} + 1))"
    op = f"({_coef(a1, d)} + {_coef(a2, d)}/({_coef(a3, d)} + p))"
    return f"{rtt} - {o1} - {op}"


# --------------------------------------------------------------------------------------
# Curve fitting: separable least squares with deterministic starts
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    p_min: float
    p_max: float

    @property
    def span(self) -> float:
        return max(self.p_max - self.p_min, 1.0)

    @property
    def p_ref(self) -> float:
        return 0.5 * (self.p_min + self.p_max)

    @property
    def pole(self) -> float:
        return -self.p_min + POLE_GUARD * self.p_min

    @property
    def shift_max(self) -> float:
        return 100.0 * self.p_max

    @property
    def l5_max(self) -> float:
        return L5_SPAN / self.span


Basis = Callable[[FloatArray, FloatArray, _Ctx], tuple[FloatArray, list[FloatArray]]]
_BasisOut = tuple[FloatArray, list[FloatArray]]
ToLambda = Callable[[FloatArray, _Ctx], tuple[FloatArray, FloatArray, list[bool]]]


@dataclass(frozen=True)
class _Form:
    """One form of a function: f(p) = Phi(p; nl) @ lin, theta = (lin..., nl...)."""

    kind: str
    name: str
    formula: str
    n_lin: int
    lin_lower: tuple[float, ...]
    nl_names: tuple[str, ...]
    theta_names: tuple[str, ...]
    basis: Basis
    to_lambda: ToLambda
    nl_grid: Callable[[_Ctx], list[tuple[float, ...]]]
    nl_bounds: Callable[[_Ctx], tuple[list[float], list[float]]]

    @property
    def n_theta(self) -> int:
        return self.n_lin + len(self.nl_names)


def _expm1_over(l5: float, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(e^(l5 x) - 1)/l5 and its derivative in l5, smooth through l5 = 0 (where they are
    x and x^2/2): the saturation term in a form that stays well conditioned as it turns
    linear in p."""
    u = l5 * x
    if float(np.max(np.abs(u), initial=0.0)) < 1e-4:
        phi = x * (1.0 + u / 2.0 + u * u / 6.0)
        dphi = x * x * (0.5 + u / 3.0 + u * u / 8.0)
        return phi, dphi
    e = np.exp(u)
    phi = np.expm1(u) / l5
    dphi = (x * e - phi) / l5
    return phi, dphi


def _rtt_full_basis(nl: FloatArray, p: FloatArray, ctx: _Ctx) -> _BasisOut:
    # RTT(p) = l1/(l2 + p) + c' + b (e^(l5 x) - 1)/l5, x = p - p_ref: the paper's function
    # with c - a e^(l5 x) = c' + b (e^(l5 x) - 1)/l5 (a = -b/l5, c = c' - b/l5).
    l2, l5 = float(nl[0]), float(nl[1])
    inv = 1.0 / (l2 + p)
    sat, dsat = _expm1_over(l5, p - ctx.p_ref)
    phi = np.column_stack([inv, np.ones_like(p), sat])
    zero = np.zeros_like(p)
    d_l2 = np.column_stack([-inv * inv, zero, zero])
    d_l5 = np.column_stack([zero, zero, dsat])
    return phi, [d_l2, d_l5]


#: Smallest |l5| carried to the lambdas (l4 = -b e^(l5 dx)/l5 diverges as l5 -> 0).
_L5_TINY = 1e-12


def _rtt_full_lambda(theta: FloatArray, ctx: _Ctx) -> tuple[FloatArray, FloatArray, list[bool]]:
    # With l6 = p_min (dx = p_min - p_ref, E = e^(l5 dx)): l4 = -b E/l5 and
    # l3 = c' + b (E - 1)/l5, the value of the saturation basis at p_min.
    l1, cp, b, l2, l5 = (float(v) for v in theta)
    if abs(l5) < _L5_TINY:
        l5 = math.copysign(_L5_TINY, l5 if l5 != 0.0 else 1.0)
    dx = ctx.p_min - ctx.p_ref
    e = math.exp(l5 * dx)
    sat_min, dsat_min = (float(v[0]) for v in _expm1_over(l5, np.array([dx])))
    lam = np.array([l1, l2, cp + b * sat_min, -b * e / l5, l5, ctx.p_min])
    g = np.zeros((RTT_PARAMS, 5))
    g[0, 0] = 1.0
    g[1, 3] = 1.0
    g[2, 1], g[2, 2], g[2, 4] = 1.0, sat_min, b * dsat_min
    g[3, 2], g[3, 4] = -e / l5, -b * e * (dx * l5 - 1.0) / (l5 * l5)
    g[4, 4] = 1.0
    return lam, g, [False, False, False, False, False, True]


def _l5_steps(ctx: _Ctx) -> list[float]:
    return [k / ctx.span for k in (-24.0, -12.0, -6.0, -3.0, -1.5, -0.5, 0.0,
                                   0.5, 1.5, 3.0, 6.0, 12.0, 24.0)]


def _rtt_full_grid(ctx: _Ctx) -> list[tuple[float, ...]]:
    l2s = [f * ctx.p_min for f in (-0.9, -0.5, 0.0, 0.5, 2.0, 8.0)] + [0.25 * ctx.span]
    return [(a, b) for a in l2s for b in _l5_steps(ctx)]


def _rtt_full_bounds(ctx: _Ctx) -> tuple[list[float], list[float]]:
    return [ctx.pole, -ctx.l5_max], [ctx.shift_max, ctx.l5_max]


def _rtt_pipe_basis(nl: FloatArray, p: FloatArray, ctx: _Ctx) -> _BasisOut:
    inv = 1.0 / (float(nl[0]) + p)
    phi = np.column_stack([inv, np.ones_like(p)])
    return phi, [np.column_stack([-inv * inv, np.zeros_like(p)])]


def _rtt_pipe_lambda(theta: FloatArray, ctx: _Ctx) -> tuple[FloatArray, FloatArray, list[bool]]:
    l1, l3, l2 = (float(v) for v in theta)
    g = np.zeros((RTT_PARAMS, 3))
    g[0, 0], g[1, 2], g[2, 1] = 1.0, 1.0, 1.0
    return np.array([l1, l2, l3, 0.0, 0.0, ctx.p_min]), g, [False, False, False, True, True, True]


def _shift_grid(ctx: _Ctx) -> list[tuple[float, ...]]:
    fr = (-0.95, -0.9, -0.75, -0.5, -0.25, 0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    out: list[tuple[float, ...]] = [(f * ctx.p_min,) for f in fr]
    return [*out, (0.25 * ctx.span,), (ctx.span,)]


def _shift_bounds(ctx: _Ctx) -> tuple[list[float], list[float]]:
    return [ctx.pole], [ctx.shift_max]


def _rtt_sat_basis(nl: FloatArray, p: FloatArray, ctx: _Ctx) -> _BasisOut:
    sat, dsat = _expm1_over(float(nl[0]), p - ctx.p_ref)
    return np.column_stack([np.ones_like(p), sat]), [
        np.column_stack([np.zeros_like(p), dsat])
    ]


def _rtt_sat_lambda(theta: FloatArray, ctx: _Ctx) -> tuple[FloatArray, FloatArray, list[bool]]:
    cp, b, l5 = (float(v) for v in theta)
    lam, g, _ = _rtt_full_lambda(np.array([0.0, cp, b, 0.0, l5]), ctx)
    return lam, g[:, [1, 2, 4]], [True, True, False, False, False, True]


def _l5_grid(ctx: _Ctx) -> list[tuple[float, ...]]:
    return [(l5,) for l5 in _l5_steps(ctx)]


def _rtt_linear_basis(nl: FloatArray, p: FloatArray, ctx: _Ctx) -> _BasisOut:
    return np.column_stack([1.0 / p, np.ones_like(p)]), []


def _rtt_linear_lambda(theta: FloatArray, ctx: _Ctx) -> tuple[FloatArray, FloatArray, list[bool]]:
    l1, l3 = (float(v) for v in theta)
    g = np.zeros((RTT_PARAMS, 2))
    g[0, 0], g[2, 1] = 1.0, 1.0
    return np.array([l1, 0.0, l3, 0.0, 0.0, ctx.p_min]), g, [False, True, False, True, True, True]


def _ov_full_basis(nl: FloatArray, p: FloatArray, ctx: _Ctx) -> _BasisOut:
    inv = 1.0 / (float(nl[0]) + p)
    phi = np.column_stack([np.ones_like(p), inv])
    return phi, [np.column_stack([np.zeros_like(p), -inv * inv])]


def _ov_full_lambda(theta: FloatArray, ctx: _Ctx) -> tuple[FloatArray, FloatArray, list[bool]]:
    return np.array([float(v) for v in theta]), np.eye(3), [False, False, False]


def _ov_recip_basis(nl: FloatArray, p: FloatArray, ctx: _Ctx) -> _BasisOut:
    return np.column_stack([np.ones_like(p), 1.0 / p]), []


def _ov_recip_lambda(theta: FloatArray, ctx: _Ctx) -> tuple[FloatArray, FloatArray, list[bool]]:
    g = np.zeros((3, 2))
    g[0, 0], g[1, 1] = 1.0, 1.0
    return np.array([float(theta[0]), float(theta[1]), 0.0]), g, [False, False, True]


def _ov_const_basis(nl: FloatArray, p: FloatArray, ctx: _Ctx) -> _BasisOut:
    return np.ones((p.size, 1)), []


def _ov_const_lambda(theta: FloatArray, ctx: _Ctx) -> tuple[FloatArray, FloatArray, list[bool]]:
    g = np.zeros((3, 1))
    g[0, 0] = 1.0
    return np.array([float(theta[0]), 0.0, 0.0]), g, [False, True, True]


def _no_grid(ctx: _Ctx) -> list[tuple[float, ...]]:
    return [()]


def _no_bounds(ctx: _Ctx) -> tuple[list[float], list[float]]:
    return [], []


_INF = math.inf
FORMS: dict[tuple[str, str], _Form] = {
    ("rtt", "full"): _Form(
        "rtt", "full", "l1/(l2 + p) + l3 + l4 (1 - exp(l5 (p - l6)))", 3, (0.0, -_INF, -_INF),
        ("l2", "l5"), ("l1", "c'", "b", "l2", "l5"), _rtt_full_basis, _rtt_full_lambda,
        _rtt_full_grid, _rtt_full_bounds,
    ),
    ("rtt", "pipeline"): _Form(
        "rtt", "pipeline", "l1/(l2 + p) + l3  (l4 = l5 = 0)", 2, (0.0, -_INF), ("l2",),
        ("l1", "l3", "l2"), _rtt_pipe_basis, _rtt_pipe_lambda, _shift_grid, _shift_bounds,
    ),
    ("rtt", "saturation"): _Form(
        "rtt", "saturation", "l3 + l4 (1 - exp(l5 (p - l6)))  (l1 = l2 = 0: no pipeline)", 2,
        (-_INF, -_INF), ("l5",), ("c'", "b", "l5"), _rtt_sat_basis, _rtt_sat_lambda, _l5_grid,
        lambda ctx: ([-ctx.l5_max], [ctx.l5_max]),
    ),
    ("rtt", "linear"): _Form(
        "rtt", "linear", "l1/p + l3  (l2 = l4 = l5 = 0: the round grows linearly in p)", 2,
        (-_INF, -_INF), (), ("l1", "l3"), _rtt_linear_basis, _rtt_linear_lambda, _no_grid,
        _no_bounds,
    ),
    ("overhead", "full"): _Form(
        "overhead", "full", "l1 + l2/(l3 + p)", 2, (-_INF, -_INF), ("l3",), ("l1", "l2", "l3"),
        _ov_full_basis, _ov_full_lambda, _shift_grid, _shift_bounds,
    ),
    ("overhead", "reciprocal"): _Form(
        "overhead", "reciprocal", "l1 + l2/p  (l3 = 0)", 2, (-_INF, -_INF), (), ("l1", "l2"),
        _ov_recip_basis, _ov_recip_lambda, _no_grid, _no_bounds,
    ),
    ("overhead", "constant"): _Form(
        "overhead", "constant", "l1  (l2 = l3 = 0)", 1, (-_INF,), (), ("l1",),
        _ov_const_basis, _ov_const_lambda, _no_grid, _no_bounds,
    ),
}


def _linear_solve(a: FloatArray, b: FloatArray, lower: Sequence[float]) -> FloatArray:
    """Least squares a x ~ b with x_j >= lower_j for the finite lower bounds (an active set:
    the coefficients that violate their bound are held at it and the rest solved again;
    exact for the single bound the forms have)."""
    free = list(range(a.shape[1]))
    x = np.zeros(a.shape[1])
    while free:
        held = [j for j in range(a.shape[1]) if j not in free]
        rhs = b - (a[:, held] @ x[held] if held else 0.0)
        sol, *_ = np.linalg.lstsq(a[:, free], rhs, rcond=None)
        bad = [j for j, v in zip(free, sol, strict=True) if v < lower[j]]
        if not bad:
            x[free] = sol
            break
        for j in bad:
            x[j] = lower[j]
            free.remove(j)
    return x


@dataclass
class CurveFit:
    """The result of :func:`fit_rtt` or :func:`fit_overhead` (like ``scipy.optimize``'s
    results: ``success``, ``message``).

    ``lam`` are the lambdas (6 for RTT, 3 for the overhead) of the form that was kept
    (``form``: ``full`` unless ``fallback``), ``ci95`` their 95% intervals (None where no
    degrees of freedom are left), ``fixed`` marks lambdas that the form or the convention
    fixes. ``attempts`` lists every form tried with why it was not kept. ``p``, ``y``,
    ``sigma`` are the data used; ``rms_rel`` the root mean square relative residual.
    """

    kind: str
    form: str
    formula: str
    lam: list[float]
    ci95: list[tuple[float, float]] | None
    fixed: list[bool]
    success: bool
    fallback: bool
    message: str
    p: FloatArray
    y: FloatArray
    sigma: FloatArray
    dof: int
    cost: float
    rms_rel: float
    max_rel: float
    aicc: float | None
    nfev: int
    starts: int
    warnings: list[str] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, p: ArrayLike) -> Any:
        fn = rtt_function if self.kind == "rtt" else overhead_function
        return fn(self.lam, p)

    @property
    def p_range(self) -> tuple[int, int]:
        return int(self.p.min()), int(self.p.max())

    def to_json(self) -> dict[str, Any]:
        return finite_json({
            "lambda": [float(v) for v in self.lam],
            "ci95": None if self.ci95 is None else [[lo, hi] for lo, hi in self.ci95],
            "fixed": list(self.fixed),
            "form": self.form,
            "formula": self.formula,
            "fallback": self.fallback,
            "converged": self.success and not self.fallback,
            "message": self.message,
            "ci_method": "jacobian",
            "points": int(self.p.size),
            "p_range": list(self.p_range),
            "dof": self.dof,
            "rms_rel": self.rms_rel,
            "max_rel": self.max_rel,
            "aicc": self.aicc,
            "nfev": self.nfev,
            "starts": self.starts,
            "warnings": list(self.warnings),
            "attempts": self.attempts,
        })


def _validate(p: ArrayLike, y: ArrayLike, sigma: ArrayLike | None, what: str,
              need: int) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    pa = np.asarray(p, dtype=np.float64).ravel()
    ya = np.asarray(y, dtype=np.float64).ravel()
    if pa.size != ya.size:
        raise LopInputError(f"{what}: p has {pa.size} values, the times {ya.size}")
    if np.any(~np.isfinite(pa)):
        raise LopInputError(f"{what}: p has missing or non-finite values")
    if np.any(pa < 1.0):
        raise LopInputError(f"{what}: p must be >= 1 (peers addressed), got {pa.min():g}")
    if np.any(~np.isfinite(ya)):
        bad = pa[~np.isfinite(ya)]
        raise LopInputError(f"{what}: missing or non-finite time at p = {bad[0]:g}")
    if np.any(ya < 0.0):
        bad = pa[ya < 0.0]
        raise LopInputError(f"{what}: negative time at p = {bad[0]:g}")
    if np.any(ya == 0.0):
        bad = pa[ya == 0.0]
        raise LopInputError(f"{what}: zero time at p = {bad[0]:g} (times must be > 0)")
    distinct = np.unique(pa).size
    if distinct < need:
        raise LopInputError(
            f"{what}: needs at least {need} distinct p for its {need} parameters, got "
            f"{distinct} (p = {', '.join(f'{v:g}' for v in np.unique(pa))})"
        )
    sa: FloatArray | None = None
    if sigma is not None:
        sa = np.asarray(sigma, dtype=np.float64).ravel()
        if sa.size != pa.size:
            raise LopInputError(f"{what}: sigma has {sa.size} values, p {pa.size}")
        sa = np.where(np.isfinite(sa) & (sa > 0.0), sa, 0.0)
    return pa, ya, sa


@dataclass
class _Attempt:
    ok: bool
    reason: str
    theta: FloatArray
    cost: float
    nfev: int
    starts: int
    at_bound: list[bool]


def _solve_form(form: _Form, p: FloatArray, y: FloatArray, w: FloatArray, ctx: _Ctx,
                max_nfev: int | None) -> _Attempt:
    """Fits one form: w = 1/sigma. Returns the best converged solution or why none."""
    lower_lin = list(form.lin_lower)
    yw = y * w
    n_nl = len(form.nl_names)
    if n_nl == 0:
        phi, _ = form.basis(np.zeros(0), p, ctx)
        lin = _linear_solve(phi * w[:, None], yw, lower_lin)
        r = (phi @ lin - y) * w
        at = [bool(v <= lo) for v, lo in zip(lin, lower_lin, strict=True)]
        return _Attempt(True, "", lin, 0.5 * float(r @ r), 1, 1, at)

    lo_nl, hi_nl = form.nl_bounds(ctx)
    cands: list[tuple[float, FloatArray]] = []
    for nl_t in form.nl_grid(ctx):
        nl = np.clip(np.array(nl_t, dtype=np.float64), lo_nl, hi_nl)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            phi, _ = form.basis(nl, p, ctx)
        if not np.all(np.isfinite(phi)):
            continue
        lin = _linear_solve(phi * w[:, None], yw, lower_lin)
        r = (phi @ lin - y) * w
        cost = 0.5 * float(r @ r)
        if math.isfinite(cost):
            cands.append((cost, np.concatenate([lin, nl])))
    cands.sort(key=lambda t: t[0])

    lower = np.array(lower_lin + lo_nl, dtype=np.float64)
    upper = np.array([_INF] * form.n_lin + hi_nl, dtype=np.float64)

    def fun(theta: FloatArray) -> FloatArray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            phi, _ = form.basis(theta[form.n_lin:], p, ctx)
            return np.asarray((phi @ theta[: form.n_lin] - y) * w, dtype=np.float64)

    def jac(theta: FloatArray) -> FloatArray:
        lin = theta[: form.n_lin]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            phi, dphi = form.basis(theta[form.n_lin:], p, ctx)
            cols = [phi] + [np.asarray(d @ lin)[:, None] for d in dphi]
            return np.asarray(np.column_stack(cols) * w[:, None], dtype=np.float64)

    best: _Attempt | None = None
    reasons: list[str] = []
    nfev = 0
    used = 0
    for _, x0 in cands[:N_STARTS]:
        used += 1
        x0 = np.clip(x0, lower, upper)
        # Keep the start strictly inside the bounds least_squares requires.
        span = np.where(np.isfinite(upper - lower), upper - lower, 1.0)
        x0 = np.where(x0 <= lower, lower + 1e-9 * span, x0)
        x0 = np.where(x0 >= upper, upper - 1e-9 * span, x0)
        try:
            res = least_squares(fun, x0, jac=jac, bounds=(lower, upper), method="trf",
                                x_scale="jac", max_nfev=max_nfev)
        except (ValueError, np.linalg.LinAlgError) as exc:
            reasons.append(f"least squares failed: {exc}")
            continue
        nfev += int(res.nfev)
        if res.status <= 0 or not np.all(np.isfinite(res.x)) or not math.isfinite(res.cost):
            reasons.append(f"did not converge ({res.message})")
            continue
        if best is None or res.cost < best.cost:
            at = [bool(v != 0) for v in res.active_mask]
            best = _Attempt(True, "", np.asarray(res.x, dtype=np.float64), float(res.cost),
                            0, 0, at)
    if best is None:
        why = reasons[0] if reasons else "no usable starting point"
        return _Attempt(False, why, np.zeros(form.n_theta), math.inf, nfev, used,
                        [False] * form.n_theta)
    best.nfev, best.starts = nfev, used
    # Guard bounds of the nonlinear parameters: the data ask for something the form cannot
    # represent (a pole at p_min, a step, a flat pipeline).
    theta = best.theta
    for k, name in enumerate(form.nl_names):
        j = form.n_lin + k
        width = hi_nl[k] - lo_nl[k]
        tol = 1e-6 * width
        if best.at_bound[j] or theta[j] <= lo_nl[k] + tol or theta[j] >= hi_nl[k] - tol:
            edge = lo_nl[k] if theta[j] <= 0.5 * (lo_nl[k] + hi_nl[k]) else hi_nl[k]
            return _Attempt(False, f"{name} ended at its guard bound {edge:.4g}", theta,
                            best.cost, nfev, used, best.at_bound)
    return best


def _covariance(form: _Form, attempt: _Attempt, p: FloatArray, y: FloatArray, w: FloatArray,
                ctx: _Ctx) -> tuple[FloatArray | None, int, list[str], bool]:
    """(covariance of theta or None without dof, dof, notes, singular)."""
    theta = attempt.theta
    lin = theta[: form.n_lin]
    phi, dphi = form.basis(theta[form.n_lin:], p, ctx)
    cols = [phi] + [np.asarray(d @ lin)[:, None] for d in dphi]
    jw = np.column_stack(cols) * w[:, None]
    notes: list[str] = []
    free = []
    for j in range(form.n_theta):
        if j < form.n_lin and attempt.at_bound[j]:
            notes.append(f"{form.theta_names[j]} held at its bound {theta[j]:.4g}")
            continue
        if not np.any(jw[:, j] != 0.0):
            notes.append(f"{form.theta_names[j]} has no effect on the curve (not determined)")
            continue
        free.append(j)
    n = p.size
    dof = n - len(free)
    cov = np.zeros((form.n_theta, form.n_theta))
    if not free:
        return cov, dof, notes, False
    jf = jw[:, free]
    norms = np.linalg.norm(jf, axis=0)
    sv = np.linalg.svd(jf / norms, compute_uv=False)
    if sv[-1] <= SINGULAR_RTOL * sv[0]:
        return None, dof, notes, True
    if dof <= 0:
        notes.append("no degrees of freedom left: no confidence intervals")
        return None, dof, notes, False
    r = (phi @ lin - y) * w
    s2 = float(r @ r) / dof
    inv = np.linalg.inv((jf / norms).T @ (jf / norms)) / np.outer(norms, norms)
    for a_i, a in enumerate(free):
        for b_i, b in enumerate(free):
            cov[a, b] = s2 * inv[a_i, b_i]
    return cov, dof, notes, False


def _scales(kind: str, ctx: _Ctx, y_typ: float) -> list[float]:
    """Natural scale of each lambda: a CI half-width beyond max(|value|, scale) means the
    data hardly determine it (reported as a warning)."""
    if kind == "rtt":
        return [y_typ * ctx.p_min, ctx.p_min, y_typ, y_typ, 1.0 / ctx.span, ctx.p_min]
    return [y_typ, y_typ * ctx.p_min, ctx.p_min]


def canonical_rtt_lambda(lam: Sequence[float], p_min: float) -> list[float]:
    """The same RTT curve written in the fit's convention l6 = ``p_min``: l3 and l4 enter
    the curve only through l3 + l4 and l4 exp(-l5 l6), so (l4, l6) -> (l4 exp(l5 (p_min -
    l6)), p_min) with l3 + l4 kept. The paper's printed lambdas become comparable with a
    fit's this way."""
    l1, l2, l3, l4, l5, l6 = (float(v) for v in lam)
    new4 = l4 * math.exp(l5 * (p_min - l6))
    return [l1, l2, l3 + l4 - new4, new4, l5, float(p_min)]


def _information(rss: float, n: int, k: int) -> float:
    """AICc of a weighted least-squares fit (AIC where n - k - 1 <= 0)."""
    base = n * math.log(max(rss, 1e-300) / n) + 2 * k
    return base + (2 * k * (k + 1) / (n - k - 1) if n - k - 1 > 0 else 0.0)


def _finish(kind: str, form: _Form, att: _Attempt, pa: FloatArray, ya: FloatArray,
            w: FloatArray, ctx: _Ctx) -> CurveFit | str:
    """The CurveFit of a solved form, or why it cannot be kept (a singular Jacobian)."""
    cov, dof, notes, singular = _covariance(form, att, pa, ya, w, ctx)
    if singular:
        return "singular Jacobian: the parameters are not identifiable from these data"
    lam, gmat, fixed = form.to_lambda(att.theta, ctx)
    ci: list[tuple[float, float]] | None = None
    if cov is not None:
        var = np.einsum("ij,jk,ik->i", gmat, cov, gmat)
        tq = float(stats.t.ppf(0.975, dof))
        half = tq * np.sqrt(np.maximum(var, 0.0))
        ci = [(float(v - h), float(v + h)) for v, h in zip(lam, half, strict=True)]
    lam_list = [float(v) for v in lam]
    fitted = np.asarray((rtt_function if kind == "rtt" else overhead_function)(lam_list, pa))
    rel = (fitted - ya) / ya
    r = (fitted - ya) * w
    rss = float(r @ r)
    n, k = pa.size, form.n_theta
    aicc = n * math.log(rss / n) + 2 * k + 2 * k * (k + 1) / (n - k - 1) \
        if n - k - 1 > 0 and rss > 0.0 else None
    warnings = list(notes)
    if ci is not None:
        scales = _scales(kind, ctx, float(np.median(ya)))
        for j, (lo, hi) in enumerate(ci):
            if not fixed[j] and 0.5 * (hi - lo) > max(abs(lam_list[j]), scales[j]):
                warnings.append(f"l{j + 1} is poorly determined (95% CI [{lo:.4g}, {hi:.4g}])")
    if kind == "rtt" and form.name in ("full", "saturation") \
            and abs(lam_list[3]) > 1e3 * float(np.max(ya)):
        warnings.append(
            "the saturation term is practically linear in p here (l5 near 0): l4 and l5 "
            "trade off, only their product is determined"
        )
    return CurveFit(
        kind=kind, form=form.name, formula=form.formula, lam=lam_list, ci95=ci, fixed=fixed,
        success=True, fallback=False, message=f"converged ({form.formula})", p=pa, y=ya,
        sigma=1.0 / w, dof=dof, cost=0.5 * rss, rms_rel=float(np.sqrt(np.mean(rel**2))),
        max_rel=float(np.max(np.abs(rel))), aicc=aicc, nfev=att.nfev, starts=att.starts,
        warnings=warnings,
    )


def _fit_curve(kind: str, p: ArrayLike, y: ArrayLike, sigma: ArrayLike | None, *,
               rel_floor: float, max_nfev: int | None, forms: Sequence[str],
               what: str) -> CurveFit:
    need = RTT_PARAMS if kind == "rtt" else OVERHEAD_PARAMS
    pa, ya, sa = _validate(p, y, sigma, what, need)
    if not (0.0 < rel_floor < 1.0):
        raise ValueError(f"rel_floor must be in (0, 1), got {rel_floor}")
    if not forms:
        raise ValueError("forms must name at least one form")
    sig = rel_floor * ya if sa is None else np.maximum(sa, rel_floor * ya)
    w = 1.0 / sig
    ctx = _Ctx(float(pa.min()), float(pa.max()))
    distinct = int(np.unique(pa).size)
    attempts: list[dict[str, Any]] = []
    kept: list[CurveFit] = []
    for i, name in enumerate(forms):
        if (kind, name) not in FORMS:
            raise ValueError(f"unknown {kind} form {name!r}")
        form = FORMS[(kind, name)]
        if distinct < form.n_theta:
            attempts.append({"form": name, "kept": False, "criterion": None,
                             "reason": f"{distinct} distinct p for {form.n_theta} parameters"})
            continue
        att = _solve_form(form, pa, ya, w, ctx, max_nfev)
        out = _finish(kind, form, att, pa, ya, w, ctx) if att.ok else att.reason
        if isinstance(out, str):
            attempts.append({"form": name, "kept": False, "criterion": None, "reason": out})
            continue
        crit = _information(2.0 * out.cost, pa.size, form.n_theta)
        attempts.append({"form": name, "kept": False, "criterion": crit, "reason": ""})
        out.attempts = attempts
        if i == 0:
            attempts[-1]["kept"] = True
            return out
        kept.append(out)
    if not kept:
        why = "; ".join(f"{a['form']}: {a['reason']}" for a in attempts)
        raise LopInputError(f"{what}: no form of the function could be fitted ({why})")
    # The first form failed: the simpler form with the lowest AICc (the earlier on a tie).
    crit_of = {a["form"]: a["criterion"] for a in attempts if a["criterion"] is not None}
    best = min(kept, key=lambda c: (crit_of[c.form], forms.index(c.form)))
    for a in attempts:
        a["kept"] = a["form"] == best.form
    failed = attempts[0]
    best.fallback = True
    best.message = (
        f"the {failed['form']} form was not kept ({failed['reason']}); fell back to the "
        f"{best.form} form {best.formula}, the lowest AICc of the simpler forms "
        f"({', '.join(c.form for c in kept)})"
    )
    return best


def fit_rtt(p: ArrayLike, y: ArrayLike, sigma: ArrayLike | None = None, *,
            rel_floor: float = REL_FLOOR, max_nfev: int | None = None,
            forms: Sequence[str] = RTT_FORMS) -> CurveFit:
    """Fits the six-lambda RTT function to per-peer round-trip times y = RTT(p)/p in us.

    Parameters
    ----------
    p
        Peers addressed (>= 1); at least 6 distinct values.
    y
        Per-peer round-trip times in us (> 0, finite).
    sigma
        Standard uncertainties of y (optional); each is raised to at least ``rel_floor`` y.
    rel_floor
        Relative floor of the uncertainties (the residuals are relative).
    max_nfev
        Limit of function evaluations per start (None: scipy's default).
    forms
        The forms to try in order (default full, pipeline, linear: the fallback chain).

    Raises
    ------
    LopInputError
        Fewer than 6 distinct p, p < 1, missing, negative or zero times, or no form fits.
    """
    return _fit_curve("rtt", p, y, sigma, rel_floor=rel_floor, max_nfev=max_nfev,
                      forms=forms, what="RTT fit")


def fit_overhead(p: ArrayLike, y: ArrayLike, sigma: ArrayLike | None = None, *,
                 rel_floor: float = REL_FLOOR, max_nfev: int | None = None,
                 forms: Sequence[str] = OVERHEAD_FORMS, what: str = "overhead fit") -> CurveFit:
    """Fits the three-lambda overhead function o(p) = l1 + l2/(l3 + p) (us per request);
    at least 3 distinct p. Otherwise as :func:`fit_rtt` (fallback: reciprocal, constant)."""
    return _fit_curve("overhead", p, y, sigma, rel_floor=rel_floor, max_nfev=max_nfev,
                      forms=forms, what=what)


# --------------------------------------------------------------------------------------
# The LoP fit of onen data
# --------------------------------------------------------------------------------------


@dataclass
class LopSeriesFit:
    """The fits of one (direction, mode, s) series and one statistic (min or median)."""

    direction: str
    mode: str
    s: int | None
    stat: str
    rtt: CurveFit | None
    overhead_send: CurveFit | None
    overhead_recv: CurveFit | None
    points: list[OnenPoint]
    errors: list[str] = field(default_factory=list)

    @property
    def key(self) -> SeriesKey:
        return (self.direction, self.mode, self.s)

    def to_json(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "mode": self.mode,
            "s": self.s,
            "stat": self.stat,
            "rtt": None if self.rtt is None else self.rtt.to_json(),
            "overhead_send": None if self.overhead_send is None else self.overhead_send.to_json(),
            "overhead_recv": None if self.overhead_recv is None else self.overhead_recv.to_json(),
            "errors": list(self.errors),
        }


def _fit_series(key: SeriesKey, pts: list[OnenPoint], stat: str, *, rel_floor: float,
                max_nfev: int | None, strict: bool) -> LopSeriesFit:
    direction, mode, s = key
    label = f"{direction} {mode}" + (f" s={s}" if s is not None else "") + f" ({stat})"
    out = LopSeriesFit(direction, mode, s, stat, None, None, None, pts)
    have = [pt for pt in pts if pt.rtt(stat) is not None]
    try:
        p = np.array([pt.p for pt in have], dtype=np.float64)
        y = np.array([pt.per_peer(stat) for pt in have], dtype=np.float64)
        sig = np.array([pt.per_peer_sigma(stat) or 0.0 for pt in have], dtype=np.float64)
        out.rtt = _fit_curve("rtt", p, y, sig if stat == "median" else None,
                             rel_floor=rel_floor, max_nfev=max_nfev, forms=RTT_FORMS,
                             what=f"RTT fit of {label}")
    except LopInputError as exc:
        if strict:
            raise
        out.errors.append(str(exc))
    for side in ("send", "recv"):
        ov: list[tuple[float, float]] = []
        for pt in pts:
            v = pt.overhead(side, stat)
            if v is not None:
                ov.append((float(pt.p), v))
        if not ov:
            continue
        name = "o_s" if side == "send" else "o_r"
        try:
            fit = _fit_curve(
                "overhead", [pp for pp, _ in ov], [v for _, v in ov], None,
                rel_floor=rel_floor, max_nfev=max_nfev, forms=OVERHEAD_FORMS,
                what=f"{name} fit of {label}",
            )
        except LopInputError as exc:
            out.errors.append(str(exc))
            continue
        if side == "send":
            out.overhead_send = fit
        else:
            out.overhead_recv = fit
    return out


@dataclass
class LopFit:
    """The result of :func:`fit_lop`: the primary fits, every series, derived tables.

    ``primary`` is the series the contract's ``rtt`` / ``overhead_send`` keys hold (1:n,
    the first posting mode present, the smallest s, the requested statistic);
    ``list_series`` the list-mode fits of the same statistic used for t_1:n^list (None:
    the primary's fits are used). ``series`` holds every series and statistic.
    """

    primary: LopSeriesFit
    series: list[LopSeriesFit]
    list_series: LopSeriesFit | None
    transport: str
    logp: dict[str, Any]
    source: dict[str, Any]
    data: list[OnenPoint]
    notes: list[str] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return self.primary.rtt is not None

    @property
    def fallback(self) -> bool:
        fits = [self.primary.rtt, self.primary.overhead_send, self.primary.overhead_recv]
        return any(f is not None and f.fallback for f in fits)

    def model(self) -> LopModel:
        return lop_from_json(self.to_json())

    def _tables(self) -> dict[str, Any]:
        return series_table(self.primary)

    def to_json(self) -> dict[str, Any]:
        """The fitted-model document (``model`` = ``lop``)."""
        pr = self.primary
        rtt_doc = pr.rtt.to_json() if pr.rtt is not None else None
        if rtt_doc is not None:
            rtt_doc["quantity"] = "per-peer round-trip time RTT(p)/p (us): a round's time / p"
        ov = pr.overhead_send
        doc: dict[str, Any] = {
            "model": "lop",
            "version": __version__,
            "success": self.success,
            "fallback": self.fallback,
            "message": _summary(self),
            "transport": self.transport,
            "primary": {"direction": pr.direction, "mode": pr.mode, "s": pr.s, "stat": pr.stat},
            "rtt": rtt_doc,
            "overhead_send": None if ov is None else ov.to_json(),
            "overhead_recv": None if pr.overhead_recv is None else pr.overhead_recv.to_json(),
            "list": None,
            "latency_formula": (
                latency_formula(pr.rtt.lam, ov.lam) if pr.rtt is not None and ov is not None
                else None
            ),
            "table": self._tables() if pr.rtt is not None else None,
            "logp": self.logp,
            "series": [sf.to_json() for sf in self.series],
            "data": [pt.to_record() for pt in self.data],
            "ci_method": CI_METHOD,
            "notes": list(self.notes),
            "source": self.source,
        }
        ls = self.list_series
        if ls is not None and ls.rtt is not None and ls.overhead_send is not None:
            doc["list"] = {
                "mode": ls.mode,
                "stat": ls.stat,
                "rtt": ls.rtt.to_json(),
                "overhead_send": ls.overhead_send.to_json(),
                "table": series_table(ls),
            }
        return finite_json(doc)


def series_table(sf: LopSeriesFit) -> dict[str, Any]:
    """RTT(p), the round, o_s(p), L(p) and t_1:n of a series over its integer p range; a
    list-mode series gets L_list and t_1:n^list instead of L and t_1:n."""
    rtt = sf.rtt
    assert rtt is not None
    lo, hi = rtt.p_range
    ps = np.arange(lo, hi + 1, dtype=np.float64)
    out: dict[str, Any] = {"p": [int(v) for v in ps],
                           "rtt_us": list(rtt_function(rtt.lam, ps)),
                           "rtt_total_us": list(ps * rtt_function(rtt.lam, ps))}
    ov = sf.overhead_send
    if ov is not None:
        out["o_s_us"] = list(overhead_function(ov.lam, ps))
        if sf.mode == "list":
            out["L_list_us"] = list(latency_list(rtt.lam, ov.lam, ps))
            out["t_1n_list_us"] = list(t_1n_list(rtt.lam, ov.lam, ps))
        else:
            out["L_us"] = list(latency(rtt.lam, ov.lam, ps))
            out["t_1n_us"] = list(t_1n(rtt.lam, ov.lam, ps))
    return out


def _negative_latency(sf: LopSeriesFit) -> str | None:
    tab = series_table(sf)
    key = "L_list_us" if "L_list_us" in tab else "L_us"
    if key not in tab:
        return None
    neg = [p for p, v in zip(tab["p"], tab[key], strict=True) if v < 0.0]
    if not neg:
        return None
    return (f"{'L_list' if key == 'L_list_us' else 'L'}(p) < 0 at p = {neg[0]}"
            f"{f'..{neg[-1]}' if len(neg) > 1 else ''} ({sf.direction} {sf.mode}): the posting "
            "overheads exceed half the round trip there (sending and receiving overlap)")


def _summary(fit: LopFit) -> str:
    pr = fit.primary
    parts = []
    for name, f in (("RTT", pr.rtt), ("o_s", pr.overhead_send), ("o_r", pr.overhead_recv)):
        if f is None:
            continue
        parts.append(f"{name}: {f.message}")
    if pr.overhead_send is None:
        parts.append("no send overheads in the data: L(p) and t_1:n cannot be derived")
    return "; ".join(parts)


def _choose_primary(data: OnenData, direction: str | None, mode: str | None,
                    s: int | None) -> SeriesKey:
    keys = data.series_keys()
    if direction is not None:
        keys = [k for k in keys if k[0] == direction]
        if not keys:
            raise LopInputError(f"the data have no {direction} series")
    else:
        first = [k for k in keys if k[0] == DIRECTIONS[0]]
        keys = first or keys
    if mode is not None:
        keys = [k for k in keys if k[1] == mode]
        if not keys:
            raise LopInputError(f"the data have no series in posting mode {mode!r}")
    if s is not None:
        keys = [k for k in keys if k[2] == s]
        if not keys:
            raise LopInputError(f"the data have no series with s = {s}")
    return keys[0]


def _logp_block(fit_primary: LopSeriesFit, loggp: Any, stat: str) -> dict[str, Any]:
    """The slides' LogP prediction beside the measured RTT(P)/P of the primary series."""
    rtt = fit_primary.rtt
    pts = [pt for pt in fit_primary.points if pt.rtt(stat) is not None]
    ps = np.array([pt.p for pt in pts], dtype=np.float64)
    per = np.array([pt.per_peer(stat) for pt in pts], dtype=np.float64)
    if loggp is not None:
        from railgauge.fit.loggp import g_all, overhead, prtt

        s = float(fit_primary.s if fit_primary.s is not None else 1)
        rtt1 = float(prtt(loggp, 1, 0.0, s))
        o = float(overhead(loggp, s, "both"))
        o_s = float(overhead(loggp, s, "send"))
        g = float(g_all(loggp, s))
        L = rtt1 / 2.0 - 2.0 * o
        source = (f"LogGP model at s = {s:g} B: o = (o_s + o_r)/2, L = PRTT(1,0,s)/2 - 2o, "
                  "g = G_all(s); max{g, o} uses the send overhead o_s (the sender's gap)")
        pred = (rtt1 + (ps - 1.0) * max(g, o_s)) / ps
        params = {"L_us": L, "o_us": o, "o_s_us": o_s, "g_us": g}
    else:
        # LogP calibrated on the two smallest p (a ping-pong and the next round): A = 4o + 2L
        # is the round at p_1, B = max{g, o} the growth of the round per extra peer; the
        # rest of the curve is predicted, as the slides predict it from LogP's parameters.
        if ps.size < 2:
            raise LopInputError("LogP calibrated on the data needs two p (or a LogGP model)")
        tot = per * ps
        order = np.argsort(ps)
        p1, p2 = ps[order[0]], ps[order[1]]
        b0 = max(float((tot[order[1]] - tot[order[0]]) / (p2 - p1)), 0.0)
        a0 = float(tot[order[0]] - (p1 - 1.0) * b0)
        ov = fit_primary.overhead_send
        o = float(overhead_function(ov.lam, 1.0)) if ov is not None else math.nan
        L = (a0 - 4.0 * o) / 2.0 if math.isfinite(o) else math.nan
        source = (f"LogP calibrated on the two smallest p ({p1:g}, {p2:g}): 4o + 2L = the round "
                  f"at p = {p1:g}, max{{g, o}} = its growth to p = {p2:g}; the other p are "
                  "predicted (o = o_s(1) of the overhead fit, L = (4o + 2L - 4o)/2)")
        pred = (a0 + (ps - 1.0) * b0) / ps
        params = {"L_us": L, "o_us": o, "four_o_plus_two_L_us": a0, "max_g_o_us": b0}
    table = [
        {"P": int(pp), "measured_us": float(m), "logp_us": float(lp),
         "lop_us": float(rtt_function(rtt.lam, pp)) if rtt is not None else None}
        for pp, m, lp in zip(ps, per, pred, strict=True)
    ]
    return {"formula": "(4o + 2L + (P-1) max{g, o})/P", "source": source, **params,
            "stat": stat, "table": table}


def logp_prediction(points: Sequence[OnenPoint], stat: str, loggp: Any = None,
                    rtt: CurveFit | None = None) -> dict[str, Any]:
    """The slides' LogP prediction beside the measured RTT(P)/P of one series, as the
    ``logp`` block of the model file (:func:`fit_lop`), also where there is no LoP fit.

    ``points`` are one series' points; ``loggp`` a LogGP model (fit, document or path) whose
    L, o, g give the prediction at the series' size, None: LogP calibrated on the two
    smallest p; ``rtt`` the series' LoP fit for the table's ``lop_us`` (None: null).

    Raises LopInputError without points with the statistic, or with one p and no LogGP
    model."""
    pts = sorted((pt for pt in points if pt.rtt(stat) is not None), key=lambda q: q.p)
    if not pts:
        raise LopInputError(f"no points with a {stat} round time")
    first = pts[0]
    sf = LopSeriesFit(first.direction, first.mode, first.s, stat, rtt, None, None, pts)
    return _logp_block(sf, _as_loggp(loggp), stat)


def fit_lop(
    data: OnenData,
    *,
    stat: str = "min",
    direction: str | None = None,
    mode: str | None = None,
    s: int | None = None,
    loggp: Any = None,
    rel_floor: float = REL_FLOOR,
    max_nfev: int | None = None,
) -> LopFit:
    """Fits the LoP model to onen data: every series, min and median.

    Parameters
    ----------
    data
        From :func:`railgauge.onen.read_onen` (or :func:`railgauge.onen.synth_onen`).
    stat
        The statistic of the primary fit (``min``, as the paper; ``median``); a file
        without it (CSV: one value per p) uses the other, with a note.
    direction, mode, s
        Select the primary series (default: 1:n, the first posting mode of
        ``railgauge.onen.MODES`` present, the smallest s).
    loggp
        A LogGP model (:class:`railgauge.fit.loggp.LoggpFit`, document or path) for the
        slides' LogP prediction; None: LogP fitted to the onen data themselves.

    Raises
    ------
    LopInputError
        The primary series has fewer than 6 distinct p, or unusable values.
    """
    if stat not in ("min", "median"):
        raise ValueError(f"stat must be 'min' or 'median', got {stat!r}")
    if direction is not None and direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    notes: list[str] = list(data.notes)  # how the reader took the input (combined rows)
    pkey = _choose_primary(data, direction, mode, s)
    stats_have = data.stats(pkey)
    pstat = stat
    if stat not in stats_have:
        if not stats_have:
            raise LopInputError(f"the {pkey[0]} {pkey[1]} series has no complete statistic")
        pstat = stats_have[0]
        notes.append(f"the data have no {stat} round times; the {pstat} values are fitted")
    series: list[LopSeriesFit] = []
    primary: LopSeriesFit | None = None
    for key in data.series_keys():
        pts = data.series(key)
        for st in data.stats(key):
            is_primary = key == pkey and st == pstat
            sf = _fit_series(key, pts, st, rel_floor=rel_floor, max_nfev=max_nfev,
                             strict=is_primary)
            series.append(sf)
            if is_primary:
                primary = sf
    assert primary is not None
    list_series = next(
        (sf for sf in series if sf.mode == "list" and sf.direction == pkey[0]
         and sf.s == pkey[2] and sf.stat == pstat and sf.rtt is not None
         and sf.overhead_send is not None),
        None,
    )
    if pkey[1] == "list":
        list_series = None  # the primary itself is the list-mode series
    elif list_series is None:
        notes.append("no list-mode series with send overheads: L_list(p) and t_1:n^list are "
                     "not derived")
    for cand in (primary, list_series):
        if cand is not None and cand.rtt is not None:
            neg = _negative_latency(cand)
            if neg is not None:
                notes.append(neg)
    logp = _logp_block(primary, _as_loggp(loggp), pstat)
    src = {
        "files": list(data.paths),
        "format": data.fmt,
        "tool": data.header.get("tool"),
        "version": data.header.get("version"),
        "host": data.header.get("host"),
        "ranks": data.header.get("ranks"),
        "timer": data.header.get("timer"),
        "params": data.header.get("params"),
        "reader_warnings": list(data.warnings),
    }
    return LopFit(primary=primary, series=series, list_series=list_series,
                  transport=data.transport, logp=logp, source=src, data=list(data.points),
                  notes=notes)


def _as_loggp(loggp: Any) -> Any:
    if loggp is None:
        return None
    from railgauge.fit.loggp import LoggpFit, load_loggp_model, loggp_from_json

    if isinstance(loggp, LoggpFit):
        return loggp
    if isinstance(loggp, str | Path):
        return load_loggp_model(loggp)
    return loggp_from_json(loggp)


# --------------------------------------------------------------------------------------
# Loading and predicting
# --------------------------------------------------------------------------------------


def _lambdas(doc: Any, key: str, n: int, where: str, *, required: bool) -> list[float] | None:
    if not isinstance(doc, Mapping):
        raise ModelError(f"{where}: a model document must be a JSON object")
    block = doc.get(key)
    if block is None:
        if required:
            raise ModelError(f"{where}: missing '{key}'")
        return None
    if not isinstance(block, Mapping):
        raise ModelError(f"{where}: '{key}' must be an object")
    lam = block.get("lambda")
    if (
        not isinstance(lam, list)
        or len(lam) != n
        or not all(isinstance(v, int | float) and not isinstance(v, bool)
                   and math.isfinite(float(v)) for v in lam)
    ):
        raise ModelError(f"{where}: '{key}.lambda' must be a list of {n} finite numbers")
    return [float(v) for v in lam]


@dataclass
class LopModel:
    """A fitted LoP model, as read from its JSON document: evaluates every quantity.

    ``rtt`` is per peer (RTT(p)/p, us); overheads per request; L(p), t_1:n as in the paper.
    ``mode`` is the posting mode of the primary series; the list-mode quantities
    (L_list, t_1:n^list) come from the list-mode fits (the primary's when it is the list
    series). ``p_range`` is the range of p the fit saw (predictions outside extrapolate).
    """

    rtt_lambda: list[float]
    overhead_send_lambda: list[float] | None
    overhead_recv_lambda: list[float] | None
    list_rtt_lambda: list[float] | None
    list_overhead_send_lambda: list[float] | None
    p_range: tuple[int, int] | None
    s: int | None
    stat: str | None
    mode: str
    direction: str
    transport: str
    doc: dict[str, Any]

    def _need_os(self, what: str) -> list[float]:
        if self.overhead_send_lambda is None:
            raise ModelError(f"the model has no send overhead fit (the data had no os_us): "
                             f"{what} needs o_s(p)")
        return self.overhead_send_lambda

    def _list(self, what: str) -> tuple[list[float], list[float]]:
        if self.list_rtt_lambda is not None and self.list_overhead_send_lambda is not None:
            return self.list_rtt_lambda, self.list_overhead_send_lambda
        if self.mode == "list":
            return self.rtt_lambda, self._need_os(what)
        raise ModelError(f"the model has no list-mode fit (the data had no list-mode series "
                         f"with send overheads): {what} needs one")

    def _single(self, what: str) -> list[float]:
        if self.mode == "list":
            raise ModelError(f"the model's series is list-mode: {what} is the one-request-at-a-"
                             "time quantity (use the list variant)")
        return self._need_os(what)

    def rtt(self, p: ArrayLike) -> Any:
        return rtt_function(self.rtt_lambda, p)

    def rtt_total(self, p: ArrayLike) -> Any:
        pa = np.asarray(p, dtype=np.float64)
        return _ret(np.asarray(pa * np.asarray(self.rtt(pa))), pa.ndim == 0)

    def overhead_send(self, p: ArrayLike) -> Any:
        return overhead_function(self._need_os("o_s"), p)

    def overhead_recv(self, p: ArrayLike) -> Any:
        if self.overhead_recv_lambda is None:
            raise ModelError("the model has no receive overhead fit (the data had no or_us)")
        return overhead_function(self.overhead_recv_lambda, p)

    def latency(self, p: ArrayLike) -> Any:
        return latency(self.rtt_lambda, self._single("L(p)"), p)

    def latency_list(self, p: ArrayLike) -> Any:
        return latency_list(*self._list("L_list(p)"), p)

    def t_1n(self, n: ArrayLike) -> Any:
        return t_1n(self.rtt_lambda, self._single("t_1:n"), n)

    def t_1n_list(self, n: ArrayLike) -> Any:
        return t_1n_list(*self._list("t_1:n^list"), n)


def lop_from_json(doc: Mapping[str, Any], where: str = "model") -> LopModel:
    """Validates a LoP model document and returns it as a :class:`LopModel`."""
    if not isinstance(doc, Mapping):
        raise ModelError(f"{where}: a model document must be a JSON object")
    if doc.get("model") != "lop":
        raise ModelError(f"{where}: not a lop model (model = {doc.get('model')!r})")
    rtt = _lambdas(doc, "rtt", RTT_PARAMS, where, required=True)
    assert rtt is not None
    os_l = _lambdas(doc, "overhead_send", OVERHEAD_PARAMS, where, required=False)
    or_l = _lambdas(doc, "overhead_recv", OVERHEAD_PARAMS, where, required=False)
    lrtt = lov = None
    lst = doc.get("list")
    if lst is not None:
        lrtt = _lambdas(lst, "rtt", RTT_PARAMS, f"{where}: list", required=True)
        lov = _lambdas(lst, "overhead_send", OVERHEAD_PARAMS, f"{where}: list", required=False)
    pr = doc["rtt"].get("p_range")
    p_range = None
    if isinstance(pr, list) and len(pr) == 2 and all(isinstance(v, int | float) for v in pr):
        p_range = (int(pr[0]), int(pr[1]))
    raw_prim = doc.get("primary")
    prim: Mapping[str, Any] = raw_prim if isinstance(raw_prim, Mapping) else {}
    s_val = prim.get("s")
    return LopModel(
        rtt_lambda=rtt, overhead_send_lambda=os_l, overhead_recv_lambda=or_l,
        list_rtt_lambda=lrtt, list_overhead_send_lambda=lov, p_range=p_range,
        s=int(s_val) if isinstance(s_val, int) and not isinstance(s_val, bool) else None,
        stat=str(prim.get("stat")) if prim.get("stat") is not None else None,
        mode=str(prim.get("mode", "single")), direction=str(prim.get("direction", "1:n")),
        transport=str(doc.get("transport", "unknown")), doc=dict(doc),
    )


def load_lop_model(path: str | Path) -> LopModel:
    """Reads a LoP model file (the JSON of :meth:`LopFit.to_json`) and validates it.

    Raises :class:`ModelError` naming the file when it cannot be read, is not JSON, or is
    not a valid ``lop`` model."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{p}: cannot read model file: {exc.strerror}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{p}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    return lop_from_json(doc, str(p))
