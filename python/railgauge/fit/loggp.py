"""LogGP parameters from PRTT measurements (Hoefler, Lichei, Rehm 2007), with protocol ranges.

The model of the paper, for a message size s in bytes and times in us, with the send and
receive overheads kept apart (the paper assumes o_s = o_r = o)::

    PRTT(1,0,s) = 2 (L + o_s + o_r + (s-1) G)           (= 2 (L + 2 o + (s-1) G), o = (o_s + o_r)/2)
    G_all(s)    = g + (s-1) G
    PRTT(n,0,s) = PRTT(1,0,s) + (n-1) G_all(s)
    PRTT(n,d,s) = PRTT(1,0,s) + (n-1) max(o_s + d, G_all(s))

Per measured size these series are derived (the paper's formulas; each PRTT the record's
point estimate, the interquartile mean where recorded; d the delay the samples correspond
to: ``d_us``, or ``d_actual_us`` in older files that recorded it)::

    G_all(s) = (PRTT(n,0,s) - PRTT(1,0,s)) / (n-1)
    o_s(s)   = (PRTT(n,d,s) - PRTT(1,0,s)) / (n-1) - d       (needs d >= G_all(s))
    o_r(s)   = the measured receive overhead ("orecv" records), else o_s(s) (the paper)
    y_L(s)   = PRTT(1,0,s)/2 - o_s(s) - o_r(s)                 (= L + (s-1) G)

The sizes are split into protocol ranges by penalised segmented least squares
(:mod:`railgauge.fit.segment`) on G_all(s), o_s(s), o_r(s) (where measured) and
PRTT(1,0,s)/2. In every range four weighted lines in x = s-1 are fitted with non-negative
coefficients (bounded least squares, ``scipy.optimize.lsq_linear``)::

    G_all(s) ~ g + G x     o_s(s) ~ o_s + O_s x     o_r(s) ~ o_r + O_r x     y_L(s) ~ L + G_lat x

As in the paper's table, L and the overheads are one value per network: ``L_us``,
``o_s_us``, ``o_r_us`` and the symmetric LogGP ``o_us`` = (o_s + o_r)/2 are the intercepts
at s = 1 of the lines of the *first* range (small messages, which fit the transport's
buffers, so that the overheads are measurable), and every range carries these same values
and CIs. Per range: g and G (the gap line), the per-byte overheads O_s, O_r (LogGOPS) and
the latency slope G_lat (the slopes of that range's lines); the range's own overhead
intercepts are extras (``range_overhead``). In ranges where sending and receiving overlap
(a transfer pipelined through a buffer) L and o cannot be identified per range at all.
95% confidence intervals come from a seeded bootstrap. The exact procedure is stated in
``docs/fit.md``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy.optimize import lsq_linear

from railgauge import __version__
from railgauge.fit.segment import (
    Segmentation,
    bic_penalty,
    line_sse,
    segment,
    segment_starts_batch,
)
from railgauge.measurements import Measurements, Triples, triples

__all__ = [
    "PARAMS",
    "DerivedSeries",
    "LoggpFit",
    "LoggpRange",
    "ModelError",
    "derive_series",
    "fit_loggp",
    "fit_loggp_arrays",
    "g_all",
    "load_loggp_model",
    "local_scatter",
    "loggp_from_json",
    "overhead",
    "prtt",
    "range_index",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ArrayLike = float | int | Sequence[float] | npt.NDArray[Any]

#: Parameters of a range: JSON key -> (description, unit).
PARAMS: dict[str, tuple[str, str]] = {
    "L_us": ("latency L", "us"),
    "o_us": ("overhead o = (o_s + o_r)/2", "us"),
    "g_us": ("gap g", "us"),
    "G_us_per_byte": ("gap per byte G", "us/B"),
    "O_us_per_byte": ("overhead per byte O = (O_s + O_r)/2", "us/B"),
    "Glat_us_per_byte": ("latency per byte (slope of PRTT(1,0,s)/2 - o_s(s) - o_r(s))", "us/B"),
    "o_s_us": ("send overhead o_s", "us"),
    "o_r_us": ("receive overhead o_r", "us"),
    "O_s_us_per_byte": ("send overhead per byte O_s", "us/B"),
    "O_r_us_per_byte": ("receive overhead per byte O_r", "us/B"),
}
_CONTRACT_PARAMS = ("L_us", "o_us", "g_us", "G_us_per_byte")
_SPLIT_PARAMS = ("o_s_us", "o_r_us", "O_s_us_per_byte", "O_r_us_per_byte")
#: Parameters added to the model per extra range: two per line of the four series plus the
#: breakpoint (7 when no receive overhead was measured: three series).
K_PARAMS_PER_SEGMENT = 9
K_PARAMS_PER_SEGMENT_PAPER = 7
_Z95 = 1.959963984540054
_SIGNIFICANT_Z = 1.959963984540054
#: o_r_source values.
O_R_MEASURED = "measured"
O_R_ASSUMED = "assumed equal to o_s"
#: The definition of the reported o, stated in the JSON and the docs.
O_US_DEFINITION = (
    "o_us = (o_s_us + o_r_us)/2, the symmetric LogGP overhead at s=1 (O_us_per_byte = "
    "(O_s + O_r)/2 likewise): with it the paper's PRTT(1,0,s) = 2 (L + 2 o(s) + (s-1) G) equals "
    "2 (L + o_s(s) + o_r(s) + (s-1) G) exactly; PRTT(n,d,s) = PRTT(1,0,s) + (n-1) "
    "max(o_s(s) + d, G_all(s)) needs the send overhead o_s_us. Where no receive overhead was "
    "measured, o_r = o_s (the paper's assumption) and o_us = o_s_us. L_us, o_us, o_s_us and "
    "o_r_us are network-wide (the intercepts over the first range up to its first bend, repeated "
    "in every range, "
    "as in the paper's table); O_s, O_r (and O) are per range."
)
#: How the network-wide parameters are defined, stated in the JSON and the docs.
NETWORK_DEFINITION = (
    "L, o_s, o_r and o = (o_s + o_r)/2 are one value per network, as in the paper's table: the "
    "intercepts at s=1 of the weighted lines of o_s(s), o_r(s) and PRTT(1,0,s)/2 - o_s(s) - "
    "o_r(s) over the first segment of the optimal partition, i.e. the first protocol range up "
    "to its first bend where a bend with too little break support was merged into it (small "
    "messages, which fit the transport's buffers, so that the overheads are measurable; a line "
    "through a bend would be a poor line), with their bootstrap CIs; every range carries the "
    "same values. g and G come from each range's gap line; O_s, O_r and G_lat are the slopes of "
    "that range's own lines, whose intercepts are reported as range_overhead (extras: where "
    "sending and receiving overlap, as for transfers pipelined through a buffer, L and o are "
    "not identifiable per range)."
)
#: Break support: a redraw supports a break at index p when one of its blocks starts within
#: this many positions of p; the second word of the seed of its random stream.
_SUPPORT_WINDOW = 1
_SUPPORT_STREAM = 0x5E6
#: The rule, stated in the JSON and the docs.
SUPPORT_RULE = (
    "support of a break between the measured sizes s_(p-1) and s_p of the optimal partition "
    "= the fraction of n_resamples redraws whose optimal partition (the same criterion, "
    "weights, penalty, min_seg and max_segments) has a break between s_(p-2) and s_(p-1), "
    "between s_(p-1) and s_p, or between s_p and s_(p+1) (within +-1 position on the size "
    "grid); a redraw draws every raw value (PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s), measured "
    "o_r(s)) from N(m, u^2), u its floored uncertainty max(sigma_CI, max(rel_tol, local "
    "scatter) m), recomputes the derived series and adds N(0, sigma^2 - sigma_prop^2) to "
    "each series of the criterion where the absolute floor raised its normaliser sigma "
    "(seeded: [seed, 0x5E6]). Breaks with support >= min_support are protocol changes; the "
    "others are bends: the ranges on either side are merged and fitted as one"
)
#: Overshoot of the busy delay (d_actual - d) accepted beyond the reference overshoot: at
#: least this many us (see _delays).
_OVERSHOOT_TOL_US = 0.05
_OVERSHOOT_TOL_REL_D = 0.01


class ModelError(ValueError):
    """A fitted-model document is not a valid LogGP model."""


# --------------------------------------------------------------------------------------
# Derived series
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DerivedSeries:
    """The per-size series derived from the three PRTT patterns and the receive overhead.

    ``*_stat`` are the statistical standard uncertainties propagated from the CIs of the
    medians; ``*_sigma`` are the normalisers used by the segmentation and as fit weights:
    each raw median's uncertainty is floored at ``rel_tol`` times the median, propagated
    with the same formulas, and floored at ``abs_floor_us`` (``scatter`` holds the local
    relative scatter of each raw series, which raises the floor where it exceeds
    ``rel_tol``; see :func:`local_scatter`; ``raw_sigma`` holds the floored uncertainties
    of the raw values ``p1``, ``pn``, ``pd``, ``o_r`` before propagation, 0 for o_r where it
    was not measured). ``o_valid`` marks the sizes
    where d >= G_all(s), so that max(o_s + d, G_all) = o_s + d and o_s(s) is identifiable.
    ``o_r`` is the measured receive overhead where ``o_r_measured``, else o_s(s) (the
    paper's assumption; its uncertainties are those of o_s(s) there). ``d`` is the delay
    used: the measured ``d_actual`` where recorded and plausible, else the requested d
    (see ``docs/fit.md``).
    """

    sizes: IntArray
    x: FloatArray
    d: FloatArray
    g_all: FloatArray
    g_all_stat: FloatArray
    g_all_sigma: FloatArray
    o_s: FloatArray
    o_s_stat: FloatArray
    o_s_sigma: FloatArray
    o_valid: BoolArray
    o_r: FloatArray
    o_r_stat: FloatArray
    o_r_sigma: FloatArray
    o_r_measured: BoolArray
    h: FloatArray
    h_stat: FloatArray
    h_sigma: FloatArray
    y_l: FloatArray
    y_l_stat: FloatArray
    y_l_sigma: FloatArray
    scatter: dict[str, FloatArray] = field(default_factory=dict)
    raw_sigma: dict[str, FloatArray] = field(default_factory=dict)


def _derive(
    p1: FloatArray,
    pn: FloatArray,
    pd: FloatArray,
    d: FloatArray,
    o_r: FloatArray,
    n_pn: FloatArray,
    n_pd: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """G_all(s), o_s(s), o_r(s), PRTT(1,0,s)/2 and y_L(s); broadcasts over leading axes.

    ``o_r`` is the measured receive overhead, NaN where not measured (then o_r(s) = o_s(s)).
    """
    gall = (pn - p1) / (n_pn - 1.0)
    o_s = (pd - p1) / (n_pd - 1.0) - d
    o_r_used = np.where(np.isfinite(o_r), o_r, o_s)
    h = 0.5 * p1
    y_l = h - o_s - o_r_used
    return gall, o_s, o_r_used, h, y_l


def _propagate(
    s1: FloatArray,
    sn: FloatArray,
    sd: FloatArray,
    s_r: FloatArray,
    measured: BoolArray,
    n_pn: FloatArray,
    n_pd: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Standard uncertainties of the derived series from those of the raw medians."""
    a = 1.0 / (n_pn - 1.0)
    b = 1.0 / (n_pd - 1.0)
    gall = a * np.hypot(sn, s1)
    o_s = b * np.hypot(sd, s1)
    s_r0 = np.where(measured, s_r, 0.0)
    o_r = np.where(measured, s_r0, o_s)
    h = 0.5 * s1
    # y_L = PRTT(1,0,s) (1/2 + c/(n-1)) - c PRTT(n,d,s)/(n-1) + c d - [o_r measured], with
    # c = 1 where o_r is measured and c = 2 where it is taken equal to o_s.
    c = np.where(measured, 1.0, 2.0)
    y_l = np.sqrt(((0.5 + c * b) * s1) ** 2 + (c * b * sd) ** 2 + s_r0**2)
    return gall, o_s, o_r, h, y_l


def _delays(tr: Triples) -> tuple[FloatArray, dict[str, Any]]:
    """The delay d per size that the PRTT(n,d,s) samples correspond to.

    Current files have no ``d_actual_us``: the tool corrected every sample for the
    overshoot of its delays ("as if every delay lasted exactly d"), so d = ``d_us`` (their
    ``delay_excess_us`` is information only and not used). Older files record
    ``d_actual_us``, the mean length of the busy delays, with uncorrected samples: there d =
    d_actual where plausible, else d + the typical overshoot. The busy delay overshoots the
    requested d by a small, size-independent amount (a timer read); the recorded d_actual
    is a mean over all delays of the point, so a delay that was preempted inflates it while
    the median PRTT(n,d,s) is unaffected. The reference overshoot e_ref is the lower
    quartile of d_actual - d over the sizes (robust to up to 75% such inflated means); a size
    whose overshoot exceeds e_ref + max(0.05 us, e_ref, 0.01 d) uses d + e_ref instead.
    This heuristic applies only to sizes with d_actual (older files).
    """
    d = np.asarray(tr.d, dtype=np.float64)
    da = np.asarray(tr.d_actual, dtype=np.float64)
    have = np.isfinite(da)
    info: dict[str, Any] = {
        "d_actual_sizes": int(have.sum()),
        "rule": (
            "d = d_us where no d_actual_us is recorded (current files: the samples are "
            "corrected to delays of exactly d_us; delay_excess_us is information only). "
            "Older files with d_actual_us (uncorrected samples): d = d_actual_us, unless "
            f"d_actual - d exceeds e_ref + max({_OVERSHOOT_TOL_US:g} us, e_ref, "
            f"{_OVERSHOOT_TOL_REL_D:g} d) with e_ref the lower quartile of d_actual - d over "
            "the sizes (a preempted delay inflates the mean d_actual but not the PRTT); then "
            "d + e_ref"
        ),
        "overshoot_ref_us": None,
        "replaced_sizes": [],
    }
    if not bool(have.any()):
        return d.copy(), info
    over = da[have] - d[have]
    e_ref = float(np.quantile(over, 0.25))
    tol = np.maximum(np.maximum(_OVERSHOOT_TOL_US, e_ref), _OVERSHOOT_TOL_REL_D * d)
    bad = have & (da - d > e_ref + tol)
    out = np.where(have, da, d)
    out = np.where(bad, d + max(e_ref, 0.0), out)
    info["overshoot_ref_us"] = e_ref
    info["replaced_sizes"] = [int(s) for s in tr.sizes[bad]]
    info["replaced_overshoot_us"] = [float(v) for v in (da - d)[bad]]
    return out, info


def local_scatter(sizes: ArrayLike, y: ArrayLike, *, half_window: int = 4) -> FloatArray:
    """Robust local relative scatter of a raw series around a smooth curve, per size.

    Each interior value is compared with the log-log interpolation of its two neighbours,
    ``r_i = (ln y_i - ((1-t) ln y_{i-1} + t ln y_{i+1})) / sqrt(1 + t^2 + (1-t)^2)`` with t
    the position of ln s_i between ln s_{i-1} and ln s_{i+1} (the square root makes r the
    scatter of one value if all three scatter alike; the end values take their neighbour's
    r). The scatter at size i is ``1.4826 * median |r_j|`` over the ``2 half_window + 1``
    nearest sizes: the standard deviation for Gaussian scatter, but robust to the one or
    two large r next to a protocol change, and blind to smooth curvature (a smooth curve is
    locally linear in log-log). Values that are not finite and positive are left out (0
    there); fewer than 5 usable values give zeros.
    """
    s_arr = np.asarray(sizes, dtype=np.float64)
    y_arr = np.asarray(y, dtype=np.float64)
    out = np.zeros(y_arr.size)
    use = np.flatnonzero(np.isfinite(y_arr) & (y_arr > 0.0))
    if use.size < 5:
        return out
    ls = np.log(np.maximum(s_arr[use], 0.5))
    ly = np.log(y_arr[use])
    t = (ls[1:-1] - ls[:-2]) / (ls[2:] - ls[:-2])
    r = (ly[1:-1] - ((1.0 - t) * ly[:-2] + t * ly[2:])) / np.sqrt(1.0 + t**2 + (1.0 - t) ** 2)
    r = np.abs(np.concatenate([r[:1], r, r[-1:]]))
    m = use.size
    est = np.array(
        [
            1.4826 * float(np.median(r[max(0, i - half_window) : min(m, i + half_window + 1)]))
            for i in range(m)
        ]
    )
    # Scatter of ln y to relative scatter of y.
    out[use] = np.expm1(est)
    return out


def derive_series(
    tr: Triples,
    *,
    rel_tol: float = 0.03,
    abs_floor_us: float = 0.01,
    local_scatter_floor: bool = True,
) -> DerivedSeries:
    """Derives G_all(s), o_s(s), o_r(s), PRTT(1,0,s)/2 and PRTT(1,0,s)/2 - o_s(s) - o_r(s)
    with uncertainties.

    The normalisers floor each raw median's uncertainty at ``max(rel_tol, scatter)`` times
    the median, where ``scatter`` is its :func:`local_scatter` (with
    ``local_scatter_floor``; otherwise ``rel_tol`` alone).
    """
    n_pn = tr.n_pn.astype(np.float64)
    n_pd = tr.n_pd.astype(np.float64)
    d, _ = _delays(tr)
    o_r_raw = np.asarray(tr.o_r, dtype=np.float64)
    measured = np.isfinite(o_r_raw)
    s_r = np.where(measured, np.nan_to_num(np.asarray(tr.o_r_sigma, dtype=np.float64)), 0.0)
    gall, o_s, o_r, h, y_l = _derive(tr.p1, tr.pn, tr.pd, d, o_r_raw, n_pn, n_pd)
    st = _propagate(tr.p1_sigma, tr.pn_sigma, tr.pd_sigma, s_r, measured, n_pn, n_pd)
    raw = {"p1": tr.p1, "pn": tr.pn, "pd": tr.pd, "o_r": o_r_raw}
    scatter = {
        k: (local_scatter(tr.sizes, v) if local_scatter_floor else np.zeros(v.size))
        for k, v in raw.items()
    }
    tol = {k: np.maximum(rel_tol, sc) for k, sc in scatter.items()}
    raw_sigma = {
        "p1": np.maximum(tr.p1_sigma, tol["p1"] * np.abs(tr.p1)),
        "pn": np.maximum(tr.pn_sigma, tol["pn"] * np.abs(tr.pn)),
        "pd": np.maximum(tr.pd_sigma, tol["pd"] * np.abs(tr.pd)),
        "o_r": np.maximum(s_r, tol["o_r"] * np.abs(np.nan_to_num(o_r_raw))),
    }
    eff = _propagate(
        raw_sigma["p1"], raw_sigma["pn"], raw_sigma["pd"], raw_sigma["o_r"], measured, n_pn, n_pd
    )
    norm = tuple(np.maximum(e, abs_floor_us) for e in eff)
    return DerivedSeries(
        sizes=tr.sizes.copy(),
        x=tr.sizes.astype(np.float64) - 1.0,
        d=d,
        g_all=gall,
        g_all_stat=st[0],
        g_all_sigma=norm[0],
        o_s=o_s,
        o_s_stat=st[1],
        o_s_sigma=norm[1],
        o_valid=d >= gall,
        o_r=o_r,
        o_r_stat=st[2],
        o_r_sigma=norm[2],
        o_r_measured=measured,
        h=h,
        h_stat=st[3],
        h_sigma=norm[3],
        y_l=y_l,
        y_l_stat=st[4],
        y_l_sigma=norm[4],
        scatter=scatter,
        raw_sigma=raw_sigma,
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


def _finite_json(v: Any) -> Any:
    """A copy of a JSON-like value with numpy scalars made plain and NaN/inf made None."""
    if isinstance(v, Mapping):
        return {str(k): _finite_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_finite_json(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass
class LoggpRange:
    """The LogGP parameters of one protocol range.

    ``from_bytes`` is the first measured size of the range; ``to_bytes`` the last measured
    size, or ``None`` for the last range (it extends to infinity). ``L_us``, ``o_us`` (the
    symmetric LogGP overhead (o_s + o_r)/2), ``o_s_us`` and ``o_r_us`` (the send and receive
    overheads at s=1) are network-wide, the same in every range (fitted over the first
    range, as in the paper's table); ``o_s_us`` / ``o_r_us`` are ``None`` in a model that
    has only ``o_us`` (then both are taken as ``o_us``). ``g_us``, ``G_us_per_byte``, the
    per-byte overheads ``O_s_us_per_byte``, ``O_r_us_per_byte`` (and their mean
    ``O_us_per_byte``) and the latency slope ``Glat_us_per_byte`` are the range's own.
    ``range_overhead`` holds the intercepts at s=1 of the range's own o_s(s) and o_r(s)
    lines (``o_s_us``, ``o_r_us``, ``ci95``): extras, not used for predictions.
    ``o_r_source`` says whether o_r was measured or assumed equal to o_s in this range.
    ``support_from`` is the break support of the change at ``from_bytes`` (the fraction of
    redraws that find it; ``None`` for the first range or where not computed).
    ``ci95`` maps each parameter key to its 95% bootstrap interval. A range is ``reliable``
    unless its g or G, or the network-wide L or o, had to be held at the bound 0 against
    significant evidence or could not be identified; ``warnings`` says why.
    """

    from_bytes: int
    to_bytes: int | None
    L_us: float
    o_us: float
    g_us: float
    G_us_per_byte: float
    O_us_per_byte: float = 0.0
    Glat_us_per_byte: float | None = None
    o_s_us: float | None = None
    o_r_us: float | None = None
    O_s_us_per_byte: float | None = None
    O_r_us_per_byte: float | None = None
    o_r_source: str | None = None
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)
    reliable: bool = True
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    points: int = 0
    last_measured_bytes: int | None = None
    chi2_red: dict[str, float] = field(default_factory=dict)
    range_overhead: dict[str, Any] | None = None
    support_from: float | None = None

    def value(self, key: str) -> float:
        """A parameter by its JSON key (``L_us``, ``G_us_per_byte``, ``o_s_us``, ...).

        ``o_s_us`` / ``o_r_us`` (and their slopes) fall back to ``o_us`` (``O_us_per_byte``)
        in a model without them.
        """
        v = getattr(self, key)
        if v is None and key in _SPLIT_PARAMS:
            v = self.o_us if key.startswith("o_") else self.O_us_per_byte
        return float(v) if v is not None else math.nan

    def to_json(self, *, with_support: bool = True) -> dict[str, Any]:
        """The range as a JSON object; ``support_from`` (null where not computed) for every
        range but the first (``with_support=False``)."""
        out: dict[str, Any] = {
            "from_bytes": int(self.from_bytes),
            "to_bytes": None if self.to_bytes is None else int(self.to_bytes),
            "L_us": float(self.L_us),
            "o_us": float(self.o_us),
            "g_us": float(self.g_us),
            "G_us_per_byte": float(self.G_us_per_byte),
            "O_us_per_byte": float(self.O_us_per_byte),
        }
        for key in _SPLIT_PARAMS:
            v = getattr(self, key)
            if v is not None:
                out[key] = float(v)
        if self.o_r_source is not None:
            out["o_r_source"] = self.o_r_source
        if self.Glat_us_per_byte is not None:
            out["Glat_us_per_byte"] = float(self.Glat_us_per_byte)
        out["ci95"] = {k: [float(lo), float(hi)] for k, (lo, hi) in self.ci95.items()}
        if self.range_overhead is not None:
            out["range_overhead"] = _finite_json(self.range_overhead)
        if with_support:
            out["support_from"] = None if self.support_from is None else float(self.support_from)
        out["reliable"] = bool(self.reliable)
        out["warnings"] = list(self.warnings)
        out["notes"] = list(self.notes)
        out["points"] = int(self.points)
        if self.last_measured_bytes is not None:
            out["last_measured_bytes"] = int(self.last_measured_bytes)
        if self.chi2_red:
            out["chi2_red"] = {
                k: (float(v) if math.isfinite(v) else None) for k, v in self.chi2_red.items()
            }
        return out


@dataclass
class LoggpFit:
    """The result of :func:`fit_loggp`: ranges, fit diagnostics and provenance.

    Like ``scipy.optimize`` results it carries ``success`` and ``message``; a failed fit has
    no ranges. ``o_r_source`` says where the receive overhead came from: ``"measured"``,
    ``"assumed equal to o_s"`` (no receive-overhead records: the paper's assumption), or a
    sentence when only some sizes had it. ``bends`` lists the breaks of the optimal
    partition that were merged away for too little support (``between_bytes``,
    ``support``). ``network`` describes the network-wide L, o_s,
    o_r and o (values, CIs, the range they were fitted over, warnings). :meth:`to_json`
    gives the fitted-model document other tools read.
    """

    ranges: list[LoggpRange]
    success: bool
    message: str
    transport: str = "unknown"
    n: int | None = None
    criterion: dict[str, Any] = field(default_factory=dict)
    residuals: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    method: dict[str, Any] = field(default_factory=dict)
    o_r_source: str | None = None
    network: dict[str, Any] = field(default_factory=dict)
    bends: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The fitted-model document (``model`` = ``loggp``); non-finite numbers become null."""
        return _finite_json(
            {
                "model": "loggp",
                "version": __version__,
                "success": bool(self.success),
                "message": self.message,
                "transport": self.transport,
                "o_r_source": self.o_r_source,
                "network": self.network,
                "ranges": [r.to_json(with_support=i > 0) for i, r in enumerate(self.ranges)],
                "bends": [dict(b) for b in self.bends],
                "criterion": self.criterion,
                "method": self.method,
                "residuals": self.residuals,
                "n": self.n,
                "source": self.source,
            }
        )

    @property
    def reliable(self) -> bool:
        return self.success and all(r.reliable for r in self.ranges)

    def range_for(self, s: float) -> LoggpRange:
        """The range that applies to size s (see :func:`range_index`)."""
        return self.ranges[int(range_index(self, s))]


# --------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------


def _fmt_bytes(n: float) -> str:
    n = int(n)
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def _bound_messages(
    key: str,
    fit: _LineFit,
    from_bytes: int,
    span: int,
    *,
    intercept: bool,
    paper: bool = False,
) -> tuple[str | None, str | None]:
    """(warning, note) for a coefficient held at its bound 0.

    ``paper``: the receive overhead of this range is assumed equal to the send overhead
    (no measurement), so o_s is the paper's o.
    """
    est, se = (fit.a_free, fit.a_se) if intercept else (fit.b_free, fit.b_se)
    value = fit.a if intercept else fit.b
    if not (math.isfinite(est) and est < 0.0 and value <= 0.0):
        return None, None
    if key in ("O_s_us_per_byte", "O_r_us_per_byte") and est >= -_SIGNIFICANT_Z * se:
        # O = 0 is plain LogGP: nothing to note.
        return None, None
    name = {
        "L_us": "L",
        "o_s_us": "o" if paper else "o_s",
        "o_r_us": "o_r",
        "g_us": "g",
        "G_us_per_byte": "G",
        "O_s_us_per_byte": "O" if paper else "O_s",
        "O_r_us_per_byte": "O_r",
        "Glat_us_per_byte": "the latency slope G_lat",
    }[key]
    unit = "us" if intercept else "us/B"
    what = f"{est:.4g} {unit} (standard error {se:.2g} {unit})"
    if not (math.isfinite(se) and est < -_SIGNIFICANT_Z * se):
        return None, (
            f"{name} is at its bound 0: the unconstrained estimate {what} is consistent with 0"
        )
    o_s_name = "o(s)" if paper else "o_s(s)"
    l_series = "PRTT(1,0,s)/2 - 2 o(s)" if paper else "PRTT(1,0,s)/2 - o_s(s) - o_r(s)"
    series = {
        "L_us": l_series,
        "Glat_us_per_byte": l_series,
        "o_s_us": f"{o_s_name} = (PRTT(n,d,s) - PRTT(1,0,s))/(n-1) - d",
        "O_s_us_per_byte": o_s_name,
        "o_r_us": "the measured receive overhead o_r(s)",
        "O_r_us_per_byte": "the measured receive overhead o_r(s)",
        "g_us": "the gap line G_all(s)",
        "G_us_per_byte": "the gap line G_all(s)",
    }[key]
    if intercept:
        msg = f"{name} constrained to 0: {series} extrapolates to {what} at s=1"
        if from_bytes > 1:
            far = " far from s=1," if from_bytes - 1 > 0.05 * max(span, 1) else ""
            msg += (
                f"; the range starts at {from_bytes} B ({_fmt_bytes(from_bytes)}),{far} so the "
                "value at s=1 is an extrapolation"
            )
        elif key == "L_us" and paper:
            msg += (
                "; the measured overhead o(s) is too large for PRTT(1,0,s): it counts twice "
                "because the receive overhead is assumed equal to the send overhead (no "
                "receive-overhead records); if they differ, measure o_r"
            )
        elif key == "L_us":
            msg += "; the measured overheads o_s(s) + o_r(s) are too large for PRTT(1,0,s)"
        elif key == "o_s_us":
            msg += "; the delay between messages may be longer than d"
    else:
        msg = f"{name} constrained to 0: {series} decreases with size in this range (slope {what})"
    return msg, None


def _overlap_hint(ds: DerivedSeries, idx: npt.NDArray[np.int64]) -> str:
    """Where the measured overheads exceed PRTT(1,0,s)/2: by how much, and what it means."""
    keep = ds.o_valid[idx] & ds.o_r_measured[idx]
    excess = (ds.o_s + ds.o_r - ds.h)[idx]
    if not bool(np.any(keep & (excess > 0.0))):
        return ""
    i = int(np.argmax(np.where(keep, excess, -np.inf)))
    return (
        f"; o_s(s) + o_r(s) exceed PRTT(1,0,s)/2 by up to {excess[i]:.4g} us (at "
        f"{int(ds.sizes[idx][i])} B): the receive overlaps the send there, or the measured "
        "o_r is not a pure receive overhead (for example for messages larger than the "
        "transport's buffer, which cannot be complete before the receive starts)"
    )


def _overlap_note(
    ds: DerivedSeries, idx: npt.NDArray[np.int64], p1_model: FloatArray
) -> str | None:
    """A note for a range where o_s(s) + o_r(s) exceed PRTT(1,0,s)/2 significantly.

    ``p1_model`` is the model's PRTT(1,0,s) at the range's sizes.
    """
    keep = ds.o_valid[idx] & ds.o_r_measured[idx]
    excess = -ds.y_l[idx]
    sig = excess > _SIGNIFICANT_Z * ds.y_l_sigma[idx]
    if not bool(np.any(keep & sig)):
        return None
    i = int(np.argmax(np.where(keep, excess, -np.inf)))
    p1 = 2.0 * ds.h[idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        over = np.where(p1 > 0.0, p1_model / p1 - 1.0, np.nan)
    worst = float(np.nanmax(over)) if bool(np.any(np.isfinite(over))) else math.nan
    msg = (
        f"o_s(s) + o_r(s) exceed PRTT(1,0,s)/2 by up to {excess[i]:.4g} us (at "
        f"{int(ds.sizes[idx][i])} B): sending and receiving overlap in this range (a transfer "
        "pipelined through the transport's buffer, or a receive that includes the rest of "
        "the transfer), which LogGP's sequence o_s, L, o_r cannot express; L and o are the "
        "network-wide values of the first range, and L cannot be identified in this range"
    )
    if math.isfinite(worst) and worst > 0.0:
        msg += (
            f"; the model's PRTT(1,0,s) exceeds the measured one by up to {100 * worst:.0f}% here"
        )
    return msg


def _fit_range(ds: DerivedSeries, idx: npt.NDArray[np.int64]) -> dict[str, Any]:
    """The four weighted lines of one range, and where o_s(s) was not identifiable.

    ``o_problems`` are sentences about sizes left out of the overhead and L fits (d not
    above G_all(s)); ``o_identified`` is False where fewer than two sizes were left, so that
    all were used. The caller decides what they affect: the network-wide L and o in the
    first range, only the range's own overhead slopes elsewhere.
    """
    x = ds.x[idx]
    valid = ds.o_valid[idx]
    o_problems: list[str] = []
    o_identified = True
    use = valid
    if int(valid.sum()) < 2:
        o_problems.append(
            "o_s(s) is not identifiable: the delay d was not above G_all(s) at "
            f"{int((~valid).sum())} of {idx.size} sizes; all sizes were used, o may be wrong"
        )
        o_identified = False
        use = np.ones(idx.size, dtype=bool)
    elif not bool(valid.all()):
        bad = ", ".join(str(int(s)) for s in ds.sizes[idx][~valid])
        o_problems.append(
            f"d was not above G_all(s) at size(s) {bad} B: o_s(s) is not identifiable there; "
            "these sizes were left out of the o and L fits"
        )
    measured = ds.o_r_measured[idx] & use
    k_meas, m_use = int(measured.sum()), int(use.sum())
    if k_meas == 0:
        source = O_R_ASSUMED
    elif k_meas == m_use:
        source = O_R_MEASURED
    else:
        source = f"measured at {k_meas} of {m_use} sizes, assumed equal to o_s at the others"
    w_g = 1.0 / ds.g_all_sigma[idx] ** 2
    w_os = np.where(use, 1.0 / ds.o_s_sigma[idx] ** 2, 0.0)
    w_or = np.where(use, 1.0 / ds.o_r_sigma[idx] ** 2, 0.0)
    w_l = np.where(use, 1.0 / ds.y_l_sigma[idx] ** 2, 0.0)
    gfit = _fit_line(x, ds.g_all[idx], w_g)
    osfit = _fit_line(x, ds.o_s[idx], w_os)
    orfit = _fit_line(x, ds.o_r[idx], w_or) if k_meas > 0 else osfit
    lfit = _fit_line(x, ds.y_l[idx], w_l)
    return {
        "fits": {"g": gfit, "os": osfit, "or": orfit, "l": lfit},
        "weights": {"g": w_g, "os": w_os, "or": w_or, "l": w_l},
        "o_problems": o_problems,
        "o_identified": o_identified,
        "o_r_source": source,
        "paper": k_meas == 0,
    }


def _excess(
    resid: FloatArray, sigma: FloatArray, stat: FloatArray, w: FloatArray
) -> tuple[FloatArray, float]:
    """Centred standardised residuals and the fraction of their variance beyond the CIs."""
    keep = w > 0.0
    u = np.zeros_like(resid)
    m = int(keep.sum())
    if m < 3:
        return u, 0.0
    uk = resid[keep] / sigma[keep]
    uk = uk - uk.mean()
    u[keep] = uk
    ms = float(uk @ uk) / (m - 2)
    ms_stat = float(np.mean((stat[keep] / sigma[keep]) ** 2))
    if ms <= 0.0:
        return u, 0.0
    return u, max(0.0, ms - ms_stat) / ms


def _draw_series(
    tr: Triples,
    d: FloatArray,
    sigmas: tuple[FloatArray, FloatArray, FloatArray, FloatArray | None],
    rng: np.random.Generator,
    count: int,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """``count`` redraws of the raw values and the derived series of each (arrays (count, N)).

    PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s) and, where measured, o_r(s) are drawn from
    N(m, sigma^2) with the given standard uncertainties (``sigmas``: p1, pn, pd, o_r); the
    derived series are recomputed from the draws, which keeps their correlations.
    """
    n = len(tr)
    eps = rng.standard_normal((3, count, n))
    p1 = tr.p1 + sigmas[0] * eps[0]
    pn = tr.pn + sigmas[1] * eps[1]
    pd = tr.pd + sigmas[2] * eps[2]
    o_r_raw = np.asarray(tr.o_r, dtype=np.float64)
    if bool(np.isfinite(o_r_raw).any()):
        # Drawn only when measured, so that fits without o_r repeat the paper mode exactly.
        s_r = (np.zeros(n) if sigmas[3] is None
               else np.nan_to_num(np.asarray(sigmas[3], dtype=np.float64)))
        o_r_star = o_r_raw + s_r * rng.standard_normal((count, n))
    else:
        o_r_star = np.broadcast_to(o_r_raw, (count, n))
    return _derive(p1, pn, pd, d, o_r_star, tr.n_pn.astype(np.float64), tr.n_pd.astype(np.float64))


def _bootstrap(
    tr: Triples,
    ds: DerivedSeries,
    segs: list[npt.NDArray[np.int64]],
    fitted: list[dict[str, Any]],
    *,
    n_boot: int,
    seed: int,
) -> list[dict[str, FloatArray]]:
    """Bootstrap replicates of every parameter of every range (dict of arrays (n_boot,))."""
    rng = np.random.default_rng(seed)
    gall, o_s, o_r, _, y_l = _draw_series(
        tr, ds.d, (tr.p1_sigma, tr.pn_sigma, tr.pd_sigma, tr.o_r_sigma), rng, n_boot
    )
    out: list[dict[str, FloatArray]] = []
    for idx, fr in zip(segs, fitted, strict=True):
        x = ds.x[idx]
        reps: dict[str, FloatArray] = {}
        series = [
            ("g", gall[:, idx], ds.g_all[idx], ds.g_all_sigma[idx], ds.g_all_stat[idx]),
            ("os", o_s[:, idx], ds.o_s[idx], ds.o_s_sigma[idx], ds.o_s_stat[idx]),
            ("or", o_r[:, idx], ds.o_r[idx], ds.o_r_sigma[idx], ds.o_r_stat[idx]),
            ("l", y_l[:, idx], ds.y_l[idx], ds.y_l_sigma[idx], ds.y_l_stat[idx]),
        ]
        for name, ystar, y, sigma, stat in series:
            if name == "or" and fr["paper"]:
                # o_r is o_s here (the paper's assumption): the same replicates.
                reps["or_a"], reps["or_b"] = reps["os_a"], reps["os_b"]
                continue
            lf: _LineFit = fr["fits"][name]
            w = fr["weights"][name]
            resid = y - (lf.a + lf.b * x)
            u, frac = _excess(resid, sigma, stat, w)
            m = int((w > 0.0).sum())
            if frac > 0.0 and m >= 3:
                pick = rng.integers(0, idx.size, size=(n_boot, idx.size))
                # Draw only among the points that enter the fit.
                pool = np.flatnonzero(w > 0.0)
                pick = pool[pick % pool.size]
                ystar = ystar + math.sqrt(frac * m / (m - 2)) * sigma * u[pick]
            a, b = _nnls_lines(x, ystar, w)
            reps[name + "_a"] = a
            reps[name + "_b"] = b
        out.append(
            {
                "g_us": reps["g_a"],
                "G_us_per_byte": reps["g_b"],
                "o_us": 0.5 * (reps["os_a"] + reps["or_a"]),
                "O_us_per_byte": 0.5 * (reps["os_b"] + reps["or_b"]),
                "o_s_us": reps["os_a"],
                "O_s_us_per_byte": reps["os_b"],
                "o_r_us": reps["or_a"],
                "O_r_us_per_byte": reps["or_b"],
                "L_us": reps["l_a"],
                "Glat_us_per_byte": reps["l_b"],
            }
        )
    return out


def _break_support(
    tr: Triples,
    ds: DerivedSeries,
    ws: FloatArray,
    with_o_r: bool,
    starts: Sequence[int],
    *,
    penalty: float,
    min_seg: int,
    max_segments: int,
    n_support: int,
    seed: int,
) -> list[float]:
    """The support of each break of the optimal partition (see ``docs/fit.md``, section 3).

    ``starts`` are the indices where the partition's blocks after the first start. The raw
    values are redrawn ``n_support`` times from the noise model of the segmentation: each
    from N(m, u^2) with u its floored uncertainty (``ds.raw_sigma``, the values the
    normalisers propagate), and each derived series of the criterion gets independent
    N(0, sigma^2 - sigma_prop^2) on top where the absolute floor raised its normaliser
    sigma above the propagated sigma_prop, so that every series scatters by its
    normaliser. Every redraw is segmented with the same weights, penalty and constraints
    (:func:`segment_starts_batch`); the support of a break at index p is the fraction of
    redraws that have a block starting at p - 1, p or p + 1.
    """
    rng = np.random.default_rng([seed, _SUPPORT_STREAM])
    u = ds.raw_sigma
    gall, o_s, o_r, h, _ = _draw_series(
        tr, ds.d, (u["p1"], u["pn"], u["pd"], u["o_r"]), rng, n_support
    )
    prop = _propagate(
        u["p1"],
        u["pn"],
        u["pd"],
        u["o_r"],
        ds.o_r_measured,
        tr.n_pn.astype(np.float64),
        tr.n_pd.astype(np.float64),
    )
    draws = [(gall, ds.g_all_sigma, prop[0]), (o_s, ds.o_s_sigma, prop[1])]
    if with_o_r:
        draws.append((o_r, ds.o_r_sigma, prop[2]))
    draws.append((h, ds.h_sigma, prop[3]))
    rows = []
    for y, sigma, sp in draws:
        extra = np.sqrt(np.maximum(sigma**2 - sp**2, 0.0))
        rows.append(y + extra * rng.standard_normal(y.shape))
    ys = np.stack(rows, axis=1)  # (n_support, K, N)
    found = segment_starts_batch(
        ds.x, ys, ws, penalty=penalty, min_seg=min_seg, max_segments=max_segments
    )
    n = ds.x.size
    return [
        float(
            np.mean(
                found[:, max(p - _SUPPORT_WINDOW, 1) : min(p + _SUPPORT_WINDOW + 1, n)].any(axis=1)
            )
        )
        for p in starts
    ]


def _ci(samples: FloatArray, est: float) -> tuple[float, float]:
    lo, hi = (float(v) for v in np.quantile(samples, [0.025, 0.975]))
    lo, hi = max(lo, 0.0), max(hi, 0.0)
    return min(lo, est), max(hi, est)


def _normal_cis(
    f_g: _LineFit, f_os: _LineFit, f_or: _LineFit, f_l: _LineFit, *, paper: bool
) -> dict[str, tuple[float, float]]:
    """Normal-approximation CIs (estimate +- 1.96 SE of the unconstrained fit), for n_boot=0.

    The SE of o = (o_s + o_r)/2 treats o_s and o_r as independent (they come from different
    measurements), or as one value where o_r is assumed equal to o_s.
    """

    def one(est: float, se: float) -> tuple[float, float]:
        if not math.isfinite(se):
            return est, est
        return max(est - _Z95 * se, 0.0), max(est + _Z95 * se, est)

    def mean_se(a: float, b: float) -> float:
        return a if paper else 0.5 * math.hypot(a, b)

    return {
        "L_us": one(f_l.a, f_l.a_se_obs),
        "o_us": one(0.5 * (f_os.a + f_or.a), mean_se(f_os.a_se_obs, f_or.a_se_obs)),
        "g_us": one(f_g.a, f_g.a_se_obs),
        "G_us_per_byte": one(f_g.b, f_g.b_se_obs),
        "O_us_per_byte": one(0.5 * (f_os.b + f_or.b), mean_se(f_os.b_se_obs, f_or.b_se_obs)),
        "o_s_us": one(f_os.a, f_os.a_se_obs),
        "O_s_us_per_byte": one(f_os.b, f_os.b_se_obs),
        "o_r_us": one(f_or.a, f_or.a_se_obs),
        "O_r_us_per_byte": one(f_or.b, f_or.b_se_obs),
        "Glat_us_per_byte": one(f_l.b, f_l.b_se_obs),
    }


def _validate_options(
    rel_tol: float,
    abs_floor_us: float,
    penalty: float | None,
    penalty_factor: float,
    min_seg: int,
    max_segments: int,
    n_boot: int,
) -> None:
    if not (math.isfinite(rel_tol) and rel_tol >= 0.0):
        raise ValueError(f"rel_tol must be a finite number >= 0, got {rel_tol}")
    if not (math.isfinite(abs_floor_us) and abs_floor_us > 0.0):
        raise ValueError(f"abs_floor_us must be a finite number > 0, got {abs_floor_us}")
    if penalty is not None and not (math.isfinite(penalty) and penalty >= 0.0):
        raise ValueError(f"penalty must be None or a finite number >= 0, got {penalty}")
    if not (math.isfinite(penalty_factor) and penalty_factor >= 0.0):
        raise ValueError(f"penalty_factor must be a finite number >= 0, got {penalty_factor}")
    if min_seg < 2:
        raise ValueError(f"min_seg must be >= 2, got {min_seg}")
    if max_segments < 1:
        raise ValueError(f"max_segments must be >= 1, got {max_segments}")
    if n_boot != 0 and n_boot < 20:
        raise ValueError(f"n_boot must be 0 (normal-approximation CIs) or >= 20, got {n_boot}")


def _criterion_statement(
    rel_tol: float,
    abs_floor_us: float,
    penalty: float,
    series: Sequence[str],
    *,
    local_scatter: bool = True,
) -> str:
    floor = (
        "max(sigma_CI, max(rel_tol, local scatter)*m) of the raw values m (the interquartile "
        "mean where recorded, else the median; sigma_CI from the CI of the median; the local "
        "scatter: 1.4826 * median over 9 neighbouring sizes of |deviation of ln(m) "
        "from the log-log interpolation of its two neighbours| / sqrt(1+t^2+(1-t)^2); "
        if local_scatter
        else "max(sigma_CI, rel_tol*m) of the raw values m (the interquartile mean where "
        "recorded, else the median; "
    )
    return (
        "minimise over partitions of the sorted sizes into m <= max_segments contiguous "
        f"ranges of >= min_seg sizes: sum over ranges and over the series {', '.join(series)} "
        "of the weighted residual sum of squares of the best unconstrained "
        "line in s-1, each residual divided by max(sigma_prop, abs_floor), where sigma_prop "
        f"propagates {floor}rel_tol="
        f"{rel_tol:g}, abs_floor={abs_floor_us:g} us), plus penalty*(m-1) with penalty="
        f"{penalty:.6g}; exact by dynamic programming, ties to fewer ranges. Reported o_us = "
        "(o_s + o_r)/2 at s=1 (the symmetric LogGP o; PRTT(1,0,s) = 2 (L + 2o + (s-1)G) "
        "holds exactly); L and o are network-wide, fitted over the first range and repeated "
        "in every range (the paper's table), g and G per range"
    )


def _o_r_source_of(ds: DerivedSeries) -> str:
    k = int(ds.o_r_measured.sum())
    if k == 0:
        return O_R_ASSUMED
    if k == ds.sizes.size:
        return O_R_MEASURED
    return f"measured at {k} of {ds.sizes.size} sizes, assumed equal to o_s at the others"


def _fit_core(
    tr: Triples,
    *,
    transport: str,
    source: dict[str, Any],
    rel_tol: float,
    abs_floor_us: float,
    local_scatter: bool,
    penalty: float | None,
    penalty_factor: float,
    min_seg: int,
    max_segments: int,
    n_boot: int,
    seed: int,
    n_support: int,
    min_support: float,
) -> LoggpFit:
    _validate_options(rel_tol, abs_floor_us, penalty, penalty_factor, min_seg, max_segments, n_boot)
    if n_support != 0 and n_support < 10:
        raise ValueError(f"n_support must be 0 (no break support) or >= 10, got {n_support}")
    if not (math.isfinite(min_support) and 0.0 <= min_support <= 1.0):
        raise ValueError(f"min_support must be a number in [0, 1], got {min_support}")
    n_sizes = len(tr)
    n_common = int(np.bincount(tr.n_pn).argmax()) if n_sizes else None
    _, delay_info = _delays(tr)
    method = {
        "fit": "weighted bounded least squares (scipy.optimize.lsq_linear, coefficients >= 0)",
        "weights": (
            "1/sigma^2, sigma = max(propagated max(sigma_CI, max(rel_tol, local scatter)*median)"
            ", abs_floor)"
            if local_scatter
            else "1/sigma^2, sigma = max(propagated max(sigma_CI, rel_tol*median), abs_floor)"
        ),
        "ci": (
            "percentile bootstrap: raw medians (and measured o_r) resampled from their CIs "
            "plus resampled residuals for scatter beyond the CIs; ranges held fixed; clipped "
            "at 0"
            if n_boot > 0
            else "normal approximation: estimate +- 1.96 standard errors of the unconstrained "
            "weighted fit, scaled by its observed residual scatter; clipped at 0"
        ),
        "n_boot": n_boot,
        "seed": seed,
        "rel_tol": rel_tol,
        "abs_floor_us": abs_floor_us,
        "local_scatter": local_scatter,
        "delay": delay_info,
    }
    if n_sizes < 2:
        return LoggpFit(
            ranges=[],
            success=False,
            message=(
                f"need at least 2 sizes with all three patterns PRTT(1,0,s), PRTT(n,0,s), "
                f"PRTT(n,d,s); have {n_sizes}"
            ),
            transport=transport,
            n=n_common,
            source=source,
            method=method,
        )

    ds = derive_series(
        tr, rel_tol=rel_tol, abs_floor_us=abs_floor_us, local_scatter_floor=local_scatter
    )
    o_r_source = _o_r_source_of(ds)
    w_or = np.where(ds.o_valid & ds.o_r_measured, 1.0 / ds.o_r_sigma**2, 0.0)
    with_o_r = bool(np.any(w_or > 0.0))
    rows = [ds.g_all, ds.o_s, ds.h]
    wrows = [
        1.0 / ds.g_all_sigma**2,
        np.where(ds.o_valid, 1.0 / ds.o_s_sigma**2, 0.0),
        1.0 / ds.h_sigma**2,
    ]
    series_names = ["G_all(s)", "o_s(s)", "PRTT(1,0,s)/2"]
    if with_o_r:
        rows.insert(2, ds.o_r)
        wrows.insert(2, w_or)
        series_names.insert(2, "o_r(s)")
    ys = np.vstack(rows)
    ws = np.vstack(wrows)
    k_params = K_PARAMS_PER_SEGMENT if with_o_r else K_PARAMS_PER_SEGMENT_PAPER
    n_res = int(np.count_nonzero(ws > 0.0))
    lam = penalty if penalty is not None else bic_penalty(n_res, k_params, penalty_factor)
    seg: Segmentation = segment(
        ds.x, ys, ws, penalty=lam, min_seg=min_seg, max_segments=max_segments
    )
    dp_starts = [i for i, _ in seg.bounds[1:]]
    supports: list[float | None] = [None] * len(dp_starts)
    if n_support > 0 and dp_starts:
        supports = list(
            _break_support(
                tr,
                ds,
                ws,
                with_o_r,
                dp_starts,
                penalty=lam,
                min_seg=min_seg,
                max_segments=max_segments,
                n_support=n_support,
                seed=seed,
            )
        )
    kept = [
        (p, sup)
        for p, sup in zip(dp_starts, supports, strict=True)
        if sup is None or sup >= min_support - 1e-12
    ]
    edges = [0, *(p for p, _ in kept), n_sizes]
    segs = [np.arange(a, b) for a, b in itertools.pairwise(edges)]
    support_from: list[float | None] = [None, *(sup for _, sup in kept)]
    breaks_info = [
        {
            "between_bytes": [int(ds.sizes[p - 1]), int(ds.sizes[p])],
            "support": sup,
            "kept": sup is None or sup >= min_support - 1e-12,
        }
        for p, sup in zip(dp_starts, supports, strict=True)
    ]
    bends = [
        {"between_bytes": b["between_bytes"], "support": b["support"]}
        for b in breaks_info
        if not b["kept"]
    ]
    final_fit_cost = float(
        sum(line_sse(ds.x[idx], ys[k, idx], ws[k, idx]) for idx in segs for k in range(ys.shape[0]))
    )
    fitted = [_fit_range(ds, idx) for idx in segs]
    boots: list[dict[str, FloatArray] | None] = [None] * len(segs)
    if n_boot > 0:
        boots = list(_bootstrap(tr, ds, segs, fitted, n_boot=n_boot, seed=seed))

    replaced = set(delay_info["replaced_sizes"])
    # The network-wide L, o_s, o_r: the intercepts of the lines over the first segment of
    # the optimal partition. Where a bend with too little support was merged away, the
    # first range runs past it, and a line through a bend is a poor line: L and o belong
    # to the smallest messages, so they are fitted up to the first break or bend.
    net_idx = np.arange(0, dp_starts[0]) if dp_starts else segs[0]
    if net_idx.size == segs[0].size:
        fr0, boot0 = fitted[0], boots[0]
    else:
        fr0 = _fit_range(ds, net_idx)
        boot0 = None
        if n_boot > 0:
            boot0 = next(iter(_bootstrap(tr, ds, [net_idx], [fr0], n_boot=n_boot, seed=seed)))
    n_os: _LineFit = fr0["fits"]["os"]
    n_or: _LineFit = fr0["fits"]["or"]
    n_l: _LineFit = fr0["fits"]["l"]
    paper0 = bool(fr0["paper"])
    first_from = int(ds.sizes[net_idx[0]])
    first_last = int(ds.sizes[net_idx[-1]])
    net_values = {
        "L_us": n_l.a,
        "o_us": 0.5 * (n_os.a + n_or.a),
        "o_s_us": n_os.a,
        "o_r_us": n_or.a,
    }
    if boot0 is not None:
        net_ci = {k: _ci(boot0[k], v) for k, v in net_values.items()}
    else:
        cis0 = _normal_cis(fr0["fits"]["g"], n_os, n_or, n_l, paper=paper0)
        net_ci = {k: cis0[k] for k in net_values}
    net_warnings: list[str] = []
    net_notes: list[str] = []
    net_reliable = bool(fr0["o_identified"]) and net_idx.size >= min_seg
    if net_idx.size < min_seg:
        net_warnings.append(
            f"only {net_idx.size} sizes in the first range (fewer than min_seg={min_seg})"
        )
    net_warnings.extend(fr0["o_problems"])
    net_checks: list[tuple[str, _LineFit, bool]] = [
        ("L_us", n_l, True),
        ("o_s_us", n_os, True),
        ("O_s_us_per_byte", n_os, False),
        ("Glat_us_per_byte", n_l, False),
    ]
    if not paper0:
        net_checks[2:2] = [("o_r_us", n_or, True)]
        net_checks.append(("O_r_us_per_byte", n_or, False))
    span0 = first_last - first_from
    for key, lf, intercept in net_checks:
        warn, note = _bound_messages(key, lf, first_from, span0, intercept=intercept, paper=paper0)
        if warn is not None and key == "L_us" and not paper0:
            warn += _overlap_hint(ds, net_idx)
        if warn is not None:
            net_warnings.append(warn)
            net_reliable = False
        if note is not None:
            net_notes.append(note)
    first_label = f"{first_from} B .. {first_last} B"
    if len(segs) == 1 and not dp_starts:
        first_label = f"{first_from} B .."

    ranges: list[LoggpRange] = []
    for r, (idx, fr, bs) in enumerate(zip(segs, fitted, boots, strict=True)):
        f_g: _LineFit = fr["fits"]["g"]
        f_os: _LineFit = fr["fits"]["os"]
        f_or: _LineFit = fr["fits"]["or"]
        f_l: _LineFit = fr["fits"]["l"]
        paper = bool(fr["paper"])
        from_b = int(ds.sizes[idx[0]])
        last_b = int(ds.sizes[idx[-1]])
        span = last_b - from_b
        values = {
            **net_values,
            "g_us": f_g.a,
            "G_us_per_byte": f_g.b,
            "O_us_per_byte": 0.5 * (f_os.b + f_or.b),
            "O_s_us_per_byte": f_os.b,
            "O_r_us_per_byte": f_or.b,
            "Glat_us_per_byte": f_l.b,
        }
        own = {"o_s_us": f_os.a, "o_r_us": f_or.a}
        if bs is not None:
            ci = {k: _ci(bs[k], v) for k, v in values.items() if k not in net_values}
            own_ci = {k: _ci(bs[k], v) for k, v in own.items()}
        else:
            cis = _normal_cis(f_g, f_os, f_or, f_l, paper=paper)
            ci = {k: cis[k] for k in values if k not in net_values}
            own_ci = {k: cis[k] for k in own}
        ci.update(net_ci)
        ci = {k: ci[k] for k in values}
        reliable = net_reliable
        warnings: list[str] = []
        notes: list[str] = []
        if r == 0:
            warnings.extend(net_warnings)
            notes.extend(net_notes)
        else:
            prefix = f"network-wide L, o (fitted over the first range, {first_label}): "
            warnings.extend(prefix + w for w in net_warnings)
            notes.extend(
                f"d was not above G_all(s) here: the overhead slopes of this range may be "
                f"wrong ({p})"
                for p in fr["o_problems"]
            )
        if idx.size < min_seg and r > 0:
            warnings.append(f"only {idx.size} sizes in this range (fewer than min_seg={min_seg})")
            reliable = False
        own_checks: list[tuple[str, _LineFit, bool]] = [
            ("g_us", f_g, True),
            ("G_us_per_byte", f_g, False),
        ]
        for key, lf, intercept in own_checks:
            warn, note = _bound_messages(key, lf, from_b, span, intercept=intercept, paper=paper)
            if warn is not None:
                warnings.append(warn)
                reliable = False
            if note is not None:
                notes.append(note)
        if r > 0:
            slope_checks: list[tuple[str, _LineFit]] = [
                ("O_s_us_per_byte", f_os),
                ("Glat_us_per_byte", f_l),
            ]
            if not paper:
                slope_checks.insert(1, ("O_r_us_per_byte", f_or))
            for key, lf in slope_checks:
                # Only significantly negative slopes: a note (not a warning), since they do
                # not enter L, o, g or G.
                warn, _ = _bound_messages(key, lf, from_b, span, intercept=False, paper=paper)
                if warn is not None:
                    notes.append(f"{warn} (a slope of this range only; L, o, g, G unaffected)")
            x = ds.x[idx]
            p1_model = 2.0 * (
                values["L_us"]
                + values["o_s_us"]
                + values["o_r_us"]
                + x * (values["O_s_us_per_byte"] + values["O_r_us_per_byte"])
                + x * values["Glat_us_per_byte"]
            )
            if not paper:
                over = _overlap_note(ds, idx, p1_model)
                if over is not None:
                    notes.append(over)
        here = [int(s) for s in ds.sizes[idx] if int(s) in replaced]
        if here:
            e_ref = delay_info["overshoot_ref_us"]
            notes.append(
                f"the measured delay d_actual at {', '.join(f'{s} B' for s in here)} overshoots "
                f"the requested d far more than the typical {e_ref:.3g} us (a preempted delay "
                f"inflates its mean); d + {e_ref:.3g} us was used there"
            )
        chi2 = {"G_all": f_g.chi2_red, "o_s": f_os.chi2_red}
        if not paper:
            chi2["o_r"] = f_or.chi2_red
        chi2["L_line"] = f_l.chi2_red
        o_r_src = str(fr["o_r_source"])
        ranges.append(
            LoggpRange(
                from_bytes=from_b,
                to_bytes=last_b if r < len(segs) - 1 else None,
                o_r_source=o_r_src,
                ci95=ci,
                reliable=reliable,
                warnings=warnings,
                notes=notes,
                points=int(idx.size),
                last_measured_bytes=last_b,
                chi2_red=chi2,
                support_from=support_from[r],
                range_overhead={
                    **own,
                    "ci95": {k: list(v) for k, v in own_ci.items()},
                },
                **values,
            )
        )

    message = (
        f"{len(ranges)} protocol range(s) from {n_sizes} sizes; L and o network-wide "
        f"(fitted over the first range, {first_label})"
    )
    if not net_reliable:
        message += " and unreliable"
    if o_r_source != O_R_MEASURED:
        message += f"; o_r {o_r_source}"
    if not all(r.reliable for r in ranges):
        message += "; some ranges are unreliable"
    if bends:
        message += (
            f"; {len(bends)} bend(s) of the optimal partition merged away (break support "
            f"< {min_support:g})"
        )
    fit = LoggpFit(
        ranges=ranges,
        success=True,
        message=message,
        transport=transport,
        n=n_common,
        source=source,
        method=method,
        o_r_source=o_r_source,
        bends=bends,
        network={
            **net_values,
            "ci95": {k: list(v) for k, v in net_ci.items()},
            "from_bytes": first_from,
            "to_bytes": first_last if (len(segs) > 1 or dp_starts) else None,
            "range_index": 0,
            "o_r_source": str(fr0["o_r_source"]),
            "reliable": net_reliable,
            "warnings": net_warnings,
            "notes": net_notes,
            "definition": NETWORK_DEFINITION,
        },
    )
    fit.criterion = {
        "method": "penalised segmented least squares (dynamic programming)",
        "series": series_names,
        "rel_tol": rel_tol,
        "abs_floor_us": abs_floor_us,
        "local_scatter": local_scatter,
        "penalty": lam,
        "penalty_factor": penalty_factor if penalty is None else None,
        "k_params_per_segment": k_params,
        "n_residuals": n_res,
        "min_seg": min_seg,
        "max_segments": max_segments,
        "segments": len(ranges),
        "fit_cost": final_fit_cost,
        "cost": final_fit_cost + lam * (len(ranges) - 1),
        "optimal_partition": {
            "segments": len(seg.bounds),
            "from_bytes": [int(ds.sizes[i]) for i, _ in seg.bounds],
            "fit_cost": seg.fit_cost,
            "cost": seg.cost,
        },
        "break_support": {
            "rule": SUPPORT_RULE
            if n_support > 0
            else "not computed (n_support = 0): every break of the optimal partition is kept",
            "n_resamples": n_support,
            "min_support": min_support,
            "window_positions": _SUPPORT_WINDOW,
            "seed": seed,
            "breaks": breaks_info,
        },
        "fit_cost_by_segments": [c if math.isfinite(c) else None for c in seg.fit_cost_by_count],
        "o_r_source": o_r_source,
        "o_us": O_US_DEFINITION,
        "network": NETWORK_DEFINITION,
        "statement": _criterion_statement(
            rel_tol, abs_floor_us, lam, series_names, local_scatter=local_scatter
        ),
    }
    fit.residuals = _residuals(tr, ds, segs, fit)
    return fit


def _residuals(
    tr: Triples, ds: DerivedSeries, segs: list[npt.NDArray[np.int64]], fit: LoggpFit
) -> dict[str, Any]:
    ridx = np.zeros(len(tr), dtype=np.int64)
    for r, idx in enumerate(segs):
        ridx[idx] = r
    x = ds.x
    keys = (
        "g_us",
        "G_us_per_byte",
        "o_s_us",
        "O_s_us_per_byte",
        "o_r_us",
        "O_r_us_per_byte",
        "L_us",
        "Glat_us_per_byte",
    )
    par = np.array([[fit.ranges[r].value(k) for k in keys] for r in ridx])
    g_fit = par[:, 0] + par[:, 1] * x
    os_fit = par[:, 2] + par[:, 3] * x
    or_fit = par[:, 4] + par[:, 5] * x
    l_fit = par[:, 6] + par[:, 7] * x
    p1_fit = 2.0 * (l_fit + os_fit + or_fit)
    pn_fit = p1_fit + (tr.n_pn - 1) * g_fit
    pd_fit = p1_fit + (tr.n_pd - 1) * np.maximum(os_fit + ds.d, g_fit)

    def series(y: FloatArray, yf: FloatArray, sig: FloatArray) -> dict[str, Any]:
        return {
            "measured": y.tolist(),
            "fitted": yf.tolist(),
            "sigma": sig.tolist(),
            "normalised": ((y - yf) / sig).tolist(),
        }

    def rms(y: FloatArray, yf: FloatArray, sig: FloatArray, keep: BoolArray) -> float:
        z = ((y - yf) / sig)[keep]
        return float(np.sqrt(np.mean(z * z))) if z.size else math.nan

    allk = np.ones(len(tr), dtype=bool)

    def relative(y: FloatArray, yf: FloatArray) -> list[float]:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(yf > 0.0, (y - yf) / yf, np.nan)
        return [float(v) for v in r]

    rel = {
        "p1": relative(tr.p1, p1_fit),
        "pn": relative(tr.pn, pn_fit),
        "pd": relative(tr.pd, pd_fit),
    }
    finite = [abs(v) for vs in rel.values() for v in vs if math.isfinite(v)]
    max_rel = max(finite) if finite else math.nan
    os_ser = series(ds.o_s, os_fit, ds.o_s_sigma)
    os_ser["valid"] = ds.o_valid.tolist()
    or_keep = ds.o_valid & ds.o_r_measured
    or_ser = series(ds.o_r, or_fit, ds.o_r_sigma)
    or_ser["measured_o_r"] = ds.o_r_measured.tolist()
    or_ser["valid"] = ds.o_valid.tolist()
    return {
        "sizes": ds.sizes.tolist(),
        "range_index": ridx.tolist(),
        "d_us": ds.d.tolist(),
        "G_all_us": series(ds.g_all, g_fit, ds.g_all_sigma),
        "o_s_us": os_ser,
        "o_r_us": or_ser,
        "L_line_us": series(ds.y_l, l_fit, ds.y_l_sigma),
        "prtt_rel": rel,
        "rms_normalised": {
            "G_all": rms(ds.g_all, g_fit, ds.g_all_sigma, allk),
            "o_s": rms(ds.o_s, os_fit, ds.o_s_sigma, ds.o_valid),
            "o_r": rms(ds.o_r, or_fit, ds.o_r_sigma, or_keep) if or_keep.any() else math.nan,
            "L_line": rms(ds.y_l, l_fit, ds.y_l_sigma, ds.o_valid),
        },
        "max_abs_prtt_rel": float(max_rel),
        "local_scatter_rel": {k: v.tolist() for k, v in ds.scatter.items()},
    }


def _source_of(meas: Measurements, n_sizes: int) -> dict[str, Any]:
    h = meas.header
    return {
        "files": list(meas.paths),
        "tool": h.get("tool"),
        "version": h.get("version"),
        "host": h.get("host"),
        "ranks": h.get("ranks"),
        "transport_info": h.get("transport_info"),
        "timer": h.get("timer"),
        "params": h.get("params"),
        "started_utc": h.get("started_utc"),
        "blocks": len(meas.headers),
        "sizes": n_sizes,
        "reader_warnings": list(meas.warnings),
    }


def fit_loggp(
    meas: Measurements,
    *,
    rel_tol: float = 0.03,
    abs_floor_us: float = 0.01,
    local_scatter: bool = True,
    penalty: float | None = None,
    penalty_factor: float = 1.0,
    min_seg: int = 3,
    max_segments: int = 6,
    n_boot: int = 300,
    seed: int = 0,
    n_support: int = 100,
    min_support: float = 0.9,
) -> LoggpFit:
    """Fits LogGP parameters per automatically detected protocol range.

    Parameters
    ----------
    meas
        Measurements from :func:`railgauge.measurements.read_measurements` (or synth).
    rel_tol
        Relative reproducibility of one median: each raw median's uncertainty is at least
        ``rel_tol`` times its value (segmentation and weights; see docs/fit.md).
    abs_floor_us
        Absolute floor (us) of the uncertainty of a derived value.
    local_scatter
        Raise the ``rel_tol`` floor of each raw median to the robust local scatter of its
        series (:func:`local_scatter`), so that irregular scatter beyond ``rel_tol`` (a busy
        host, alignment effects) does not split ranges; False: ``rel_tol`` alone.
    penalty
        Cost of each range beyond the first, in squared normalised residuals; ``None``
        gives ``penalty_factor * k * ln(M)`` with M residuals (BIC), k = 9 parameters per
        extra range with a measured receive overhead, 7 without.
    penalty_factor
        Factor on the default penalty.
    min_seg
        Fewest sizes per range.
    max_segments
        Most ranges.
    n_boot
        Bootstrap resamples for the 95% CIs (>= 20), or 0 for quick normal-approximation
        CIs (estimate +- 1.96 standard errors).
    seed
        Seed of the bootstrap and of the break support (same seed, same result).
    n_support
        Redraws for the support of the breaks of the optimal partition (>= 10), or 0 to
        keep every break of the optimal partition (the criterion alone).
    min_support
        Breaks with support >= ``min_support`` are protocol changes; the others are
        merged away and reported as ``bends`` (see ``docs/fit.md``, section 3).

    Returns
    -------
    LoggpFit
        Per range L, o = (o_s + o_r)/2, g, G with 95% CIs, and o_s, o_r, their per-byte
        slopes, and where o_r came from (``o_r_source``: measured by ``orecv`` records, or
        assumed equal to o_s as in the paper). L, o, o_s and o_r are network-wide (fitted
        over the first range, the same values and CIs in every range, as in the paper's
        table; also in ``network``); g, G and the per-byte slopes are the range's own, and
        ``range_overhead`` holds the intercepts of the range's own overhead lines.
        ``success`` is False (with a ``message``) when fewer than two sizes have all three
        patterns. Bad arguments raise ``ValueError`` naming the argument.
    """
    tr = triples(meas)
    return _fit_core(
        tr,
        transport=meas.transport,
        source=_source_of(meas, len(tr)),
        rel_tol=rel_tol,
        abs_floor_us=abs_floor_us,
        local_scatter=local_scatter,
        penalty=penalty,
        penalty_factor=penalty_factor,
        min_seg=min_seg,
        max_segments=max_segments,
        n_boot=n_boot,
        seed=seed,
        n_support=n_support,
        min_support=min_support,
    )


def _as_array(
    name: str,
    v: ArrayLike | None,
    size: int,
    default: float | None,
    *,
    allow_nan: bool = False,
) -> FloatArray:
    if v is None:
        if default is None:
            raise ValueError(f"{name} is required")
        return np.full(size, default, dtype=np.float64)
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        a = np.full(size, float(a))
    if a.shape != (size,):
        raise ValueError(f"{name} must be a scalar or have the length of sizes ({size})")
    bad = np.isinf(a) if allow_nan else ~np.isfinite(a)
    if np.any(bad):
        raise ValueError(f"{name} must be finite" + (" or NaN" if allow_nan else ""))
    return a


def fit_loggp_arrays(
    sizes: ArrayLike,
    p1: ArrayLike,
    pn: ArrayLike,
    pd: ArrayLike,
    d: ArrayLike,
    n: ArrayLike,
    *,
    p1_sigma: ArrayLike | None = None,
    pn_sigma: ArrayLike | None = None,
    pd_sigma: ArrayLike | None = None,
    n_d: ArrayLike | None = None,
    o_r: ArrayLike | None = None,
    o_r_sigma: ArrayLike | None = None,
    d_actual: ArrayLike | None = None,
    transport: str = "unknown",
    source: Mapping[str, Any] | None = None,
    rel_tol: float = 0.03,
    abs_floor_us: float = 0.01,
    local_scatter: bool = True,
    penalty: float | None = None,
    penalty_factor: float = 1.0,
    min_seg: int = 3,
    max_segments: int = 6,
    n_boot: int = 300,
    seed: int = 0,
    n_support: int = 100,
    min_support: float = 0.9,
) -> LoggpFit:
    """:func:`fit_loggp` on arrays: PRTT(1,0,s), PRTT(n,0,s), PRTT(n_d,d,s) medians in us.

    ``*_sigma`` are standard uncertainties of the medians (default 0: the ``rel_tol`` floor
    alone); ``n`` (and ``n_d``, default ``n``) may be scalars or per-size arrays. ``o_r`` is
    the measured receive overhead (default: not measured, o_r = o_s as in the paper) and
    ``d_actual`` the measured delay (default: d); both may be NaN at sizes without them.
    """
    s = np.asarray(sizes, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError("sizes must be one-dimensional")
    m = s.size
    if np.any(s < 0) or np.any(s != np.round(s)):
        raise ValueError("sizes must be integers >= 0")
    order = np.argsort(s, kind="stable")
    if np.any(np.diff(s[order]) == 0):
        raise ValueError("sizes must be distinct")
    arrs = {
        "p1": _as_array("p1", p1, m, None),
        "pn": _as_array("pn", pn, m, None),
        "pd": _as_array("pd", pd, m, None),
        "d": _as_array("d", d, m, None),
        "p1_sigma": _as_array("p1_sigma", p1_sigma, m, 0.0),
        "pn_sigma": _as_array("pn_sigma", pn_sigma, m, 0.0),
        "pd_sigma": _as_array("pd_sigma", pd_sigma, m, 0.0),
        "o_r": _as_array("o_r", o_r, m, math.nan, allow_nan=True),
        "o_r_sigma": _as_array("o_r_sigma", o_r_sigma, m, 0.0, allow_nan=True),
        "d_actual": _as_array("d_actual", d_actual, m, math.nan, allow_nan=True),
    }
    n_arr = _as_array("n", n, m, None)
    nd_arr = _as_array("n_d", n_d, m, None) if n_d is not None else n_arr
    for name, a in arrs.items():
        if np.any(a < 0):
            raise ValueError(f"{name} must be >= 0")
    if np.any(n_arr < 2) or np.any(nd_arr < 2):
        raise ValueError("n and n_d must be >= 2")
    o_r_sigma_arr = np.where(np.isfinite(arrs["o_r"]), np.nan_to_num(arrs["o_r_sigma"]), np.nan)
    tr = Triples(
        sizes=s[order].astype(np.int64),
        p1=arrs["p1"][order],
        p1_sigma=arrs["p1_sigma"][order],
        pn=arrs["pn"][order],
        pn_sigma=arrs["pn_sigma"][order],
        n_pn=n_arr[order].astype(np.int64),
        pd=arrs["pd"][order],
        pd_sigma=arrs["pd_sigma"][order],
        n_pd=nd_arr[order].astype(np.int64),
        d=arrs["d"][order],
        d_actual=arrs["d_actual"][order],
        o_r=arrs["o_r"][order],
        o_r_sigma=o_r_sigma_arr[order],
    )
    return _fit_core(
        tr,
        transport=transport,
        source=dict(source) if source is not None else {"sizes": m},
        rel_tol=rel_tol,
        abs_floor_us=abs_floor_us,
        local_scatter=local_scatter,
        penalty=penalty,
        penalty_factor=penalty_factor,
        min_seg=min_seg,
        max_segments=max_segments,
        n_boot=n_boot,
        seed=seed,
        n_support=n_support,
        min_support=min_support,
    )


# --------------------------------------------------------------------------------------
# Loading and predicting
# --------------------------------------------------------------------------------------


def _num(doc: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> float | None:
    if key not in doc or doc[key] is None:
        if required:
            raise ModelError(f"{where}: missing '{key}'")
        return None
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        raise ModelError(f"{where}: '{key}' must be a finite number, got {v!r}")
    if float(v) < 0.0:
        raise ModelError(f"{where}: '{key}' must be >= 0, got {v!r}")
    return float(v)


def _range_from_json(doc: Any, where: str) -> LoggpRange:
    if not isinstance(doc, Mapping):
        raise ModelError(f"{where}: a range must be an object")
    fb = doc.get("from_bytes")
    if isinstance(fb, bool) or not isinstance(fb, int) or fb < 0:
        raise ModelError(f"{where}: 'from_bytes' must be an integer >= 0, got {fb!r}")
    tb = doc.get("to_bytes")
    if tb is not None and (isinstance(tb, bool) or not isinstance(tb, int) or tb < fb):
        raise ModelError(f"{where}: 'to_bytes' must be null or an integer >= from_bytes")
    vals = {k: _num(doc, k, where) for k in _CONTRACT_PARAMS}
    big_o = _num(doc, "O_us_per_byte", where, required=False)
    glat = _num(doc, "Glat_us_per_byte", where, required=False)
    split = {k: _num(doc, k, where, required=False) for k in _SPLIT_PARAMS}
    src = doc.get("o_r_source")
    ci: dict[str, tuple[float, float]] = {}
    raw_ci = doc.get("ci95", {})
    if not isinstance(raw_ci, Mapping):
        raise ModelError(f"{where}: 'ci95' must be an object")
    for k, v in raw_ci.items():
        if (
            not isinstance(v, list | tuple)
            or len(v) != 2
            or not all(isinstance(t, int | float) and not isinstance(t, bool) for t in v)
        ):
            raise ModelError(f"{where}: ci95['{k}'] must be [lo, hi]")
        ci[str(k)] = (float(v[0]), float(v[1]))
    own = doc.get("range_overhead")
    if own is not None:
        if not isinstance(own, Mapping):
            raise ModelError(f"{where}: 'range_overhead' must be an object")
        for k in ("o_s_us", "o_r_us"):
            _num(own, k, f"{where}: range_overhead", required=False)
    return LoggpRange(
        from_bytes=int(fb),
        to_bytes=None if tb is None else int(tb),
        L_us=float(vals["L_us"] or 0.0),
        o_us=float(vals["o_us"] or 0.0),
        g_us=float(vals["g_us"] or 0.0),
        G_us_per_byte=float(vals["G_us_per_byte"] or 0.0),
        O_us_per_byte=float(big_o or 0.0),
        Glat_us_per_byte=glat,
        o_r_source=str(src) if src is not None else None,
        ci95=ci,
        reliable=bool(doc.get("reliable", True)),
        warnings=[str(w) for w in doc.get("warnings", [])],
        notes=[str(w) for w in doc.get("notes", [])],
        points=int(doc.get("points", 0) or 0),
        last_measured_bytes=doc.get("last_measured_bytes"),
        o_s_us=split["o_s_us"],
        o_r_us=split["o_r_us"],
        O_s_us_per_byte=split["O_s_us_per_byte"],
        O_r_us_per_byte=split["O_r_us_per_byte"],
        range_overhead=dict(own) if own is not None else None,
        support_from=_support_of(doc, where),
    )


def _support_of(doc: Mapping[str, Any], where: str) -> float | None:
    v = doc.get("support_from")
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= float(v) <= 1.0:
        raise ModelError(f"{where}: 'support_from' must be null or a number in [0, 1], got {v!r}")
    return float(v)


def _bends_of(doc: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    raw = doc.get("bends") or []
    if not isinstance(raw, list):
        raise ModelError(f"{where}: 'bends' must be a list")
    out: list[dict[str, Any]] = []
    for i, b in enumerate(raw):
        ok = isinstance(b, Mapping)
        between = b.get("between_bytes") if ok else None
        sup = b.get("support") if ok else None
        if not (
            isinstance(between, list)
            and len(between) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in between)
            and (sup is None or (isinstance(sup, int | float) and not isinstance(sup, bool)))
        ):
            raise ModelError(
                f"{where}: bends[{i}] must be {{'between_bytes': [a, b], 'support': x}}"
            )
        out.append({"between_bytes": [int(between[0]), int(between[1])], "support": sup})
    return out


def loggp_from_json(doc: Mapping[str, Any], where: str = "model") -> LoggpFit:
    """Validates a fitted-model document and returns it as a :class:`LoggpFit`."""
    if not isinstance(doc, Mapping):
        raise ModelError(f"{where}: a model document must be a JSON object")
    model = doc.get("model")
    if model != "loggp":
        raise ModelError(f"{where}: not a loggp model (model = {model!r})")
    raw_ranges = doc.get("ranges")
    if not isinstance(raw_ranges, list) or not raw_ranges:
        raise ModelError(f"{where}: 'ranges' must be a non-empty list")
    ranges = [_range_from_json(r, f"{where}: ranges[{i}]") for i, r in enumerate(raw_ranges)]
    for i in range(1, len(ranges)):
        if ranges[i].from_bytes <= ranges[i - 1].from_bytes:
            raise ModelError(f"{where}: ranges must be sorted by increasing from_bytes")
    n = doc.get("n")
    return LoggpFit(
        ranges=ranges,
        success=bool(doc.get("success", True)),
        message=str(doc.get("message", "")),
        transport=str(doc.get("transport", "unknown")),
        n=int(n) if isinstance(n, int) and not isinstance(n, bool) else None,
        criterion=dict(doc.get("criterion") or {}),
        residuals=dict(doc.get("residuals") or {}),
        source=dict(doc.get("source") or {}),
        method=dict(doc.get("method") or {}),
        o_r_source=str(doc["o_r_source"]) if doc.get("o_r_source") is not None else None,
        network=dict(doc.get("network") or {}),
        bends=_bends_of(doc, where),
    )


def load_loggp_model(path: str | Path) -> LoggpFit:
    """Reads a fitted LogGP model (the JSON of :meth:`LoggpFit.to_json`) and validates it.

    Raises :class:`ModelError` (a ``ValueError``) naming the file when it cannot be read,
    is not JSON, or is not a valid ``loggp`` model.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{p}: cannot read model file: {exc.strerror}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{p}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    return loggp_from_json(doc, str(p))


def _as_fit(model: LoggpFit | Mapping[str, Any] | str | Path) -> LoggpFit:
    if isinstance(model, LoggpFit):
        if not model.ranges:
            raise ModelError("the model has no ranges (the fit failed)")
        return model
    if isinstance(model, str | Path):
        return load_loggp_model(model)
    return loggp_from_json(model)


def range_index(model: LoggpFit | Mapping[str, Any] | str | Path, s: ArrayLike) -> Any:
    """Index of the range that applies to size s: the last range whose from_bytes <= s.

    Sizes below the first range use the first range; sizes in the unmeasured gap between
    ranges use the lower range.
    """
    fit = _as_fit(model)
    starts = np.array([r.from_bytes for r in fit.ranges], dtype=np.float64)
    idx = np.searchsorted(starts, np.asarray(s, dtype=np.float64), side="right") - 1
    return np.clip(idx, 0, len(starts) - 1)


#: Columns of _params_at.
_P_L, _P_G_GAP, _P_GBIG, _P_GLAT, _P_OS, _P_OSB, _P_OR, _P_ORB, _P_O, _P_OB = range(10)


def _params_at(fit: LoggpFit, s: FloatArray) -> FloatArray:
    idx = range_index(fit, s)
    table = np.array(
        [
            [
                r.L_us,
                r.g_us,
                r.G_us_per_byte,
                r.Glat_us_per_byte if r.Glat_us_per_byte is not None else r.G_us_per_byte,
                r.value("o_s_us"),
                r.value("O_s_us_per_byte"),
                r.value("o_r_us"),
                r.value("O_r_us_per_byte"),
                r.o_us,
                r.O_us_per_byte,
            ]
            for r in fit.ranges
        ]
    )
    return np.asarray(table[idx])


def _ret(v: FloatArray, scalar: bool) -> Any:
    return float(v) if scalar else v


def g_all(model: LoggpFit | Mapping[str, Any] | str | Path, s: ArrayLike) -> Any:
    """G_all(s) = g + (s-1) G of the range of s, in us."""
    fit = _as_fit(model)
    sa = np.asarray(s, dtype=np.float64)
    p = _params_at(fit, sa)
    return _ret(p[..., _P_G_GAP] + (sa - 1.0) * p[..., _P_GBIG], sa.ndim == 0)


def overhead(
    model: LoggpFit | Mapping[str, Any] | str | Path,
    s: ArrayLike,
    side: Literal["both", "send", "recv"] = "both",
) -> Any:
    """The overhead at size s of the range of s, in us: the network-wide overhead at s=1
    plus the range's per-byte slope times (s-1).

    ``side="both"``: the symmetric o(s) = o + (s-1) O = (o_s(s) + o_r(s))/2;
    ``"send"``: o_s(s) = o_s + (s-1) O_s; ``"recv"``: o_r(s) = o_r + (s-1) O_r (both equal
    to o(s) in a model without them).
    """
    fit = _as_fit(model)
    sa = np.asarray(s, dtype=np.float64)
    p = _params_at(fit, sa)
    cols = {"both": (_P_O, _P_OB), "send": (_P_OS, _P_OSB), "recv": (_P_OR, _P_ORB)}
    if side not in cols:
        raise ValueError(f"side must be 'both', 'send' or 'recv', got {side!r}")
    a, b = cols[side]
    return _ret(p[..., a] + (sa - 1.0) * p[..., b], sa.ndim == 0)


def prtt(
    model: LoggpFit | Mapping[str, Any] | str | Path,
    n: ArrayLike,
    d: ArrayLike,
    s: ArrayLike,
) -> Any:
    """The model's PRTT(n, d, s) in us (scalars or broadcast arrays).

    With r the range of s: PRTT(1,0,s) = 2 (L + o_s(s) + o_r(s) + (s-1) G_lat,r), where
    o_s(s) = o_s + (s-1) O_s,r and o_r(s) = o_r + (s-1) O_r,r with the network-wide L, o_s,
    o_r (the same in every range of a fitted model) and the range's per-byte slopes, and
    G_lat,r the range's latency slope (G_r where a model has none); PRTT(n,d,s) =
    PRTT(1,0,s) + (n-1) max(o_s(s) + d, G_all(s)) with G_all(s) = g_r + (s-1) G_r (d = 0:
    PRTT(n,0,s) = PRTT(1,0,s) + (n-1) G_all(s)). A model with only the symmetric o has
    o_s = o_r = o: the paper's formulas. The values are read from each range as stored, so
    a model whose ranges hold different L or o (older files) is predicted as it says.
    """
    fit = _as_fit(model)
    sa, na, da = np.broadcast_arrays(
        np.asarray(s, dtype=np.float64),
        np.asarray(n, dtype=np.float64),
        np.asarray(d, dtype=np.float64),
    )
    p = _params_at(fit, sa)
    x = sa - 1.0
    o_s = p[..., _P_OS] + x * p[..., _P_OSB]
    o_r = p[..., _P_OR] + x * p[..., _P_ORB]
    gall = p[..., _P_G_GAP] + x * p[..., _P_GBIG]
    p1 = 2.0 * (p[..., _P_L] + o_s + o_r + x * p[..., _P_GLAT])
    per = np.where(da > 0.0, np.maximum(o_s + da, gall), gall)
    out = p1 + (na - 1.0) * per
    return _ret(out, sa.ndim == 0)
