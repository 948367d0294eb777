"""The derived series of the LogGP fit (docs/fit.md, section 2): G_all(s), o_s(s), o_r(s),
y_L(s) and PRTT(1,0,s)/2 per measured size, their uncertainties, the delay rule and the
local scatter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from railgauge.fit.defs import (
    _OVERSHOOT_TOL_REL_D,
    _OVERSHOOT_TOL_US,
    ArrayLike,
    BoolArray,
    FloatArray,
    IntArray,
)
from railgauge.measurements import Triples

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


#: A raw value differing from both its neighbours in the same direction by more than
#: SPIKE_K times its floored relative uncertainty is an isolated spike (:func:`spike_scatter`).
SPIKE_K = 3.0


def spike_scatter(y: ArrayLike, tol: ArrayLike) -> FloatArray:
    """The relative uncertainty of each isolated spike of a raw series (values in the order
    of their sizes), 0 elsewhere.

    A value y_i is a spike when it lies above both its neighbours or below both, by more
    than SPIKE_K tol_i each in ln y (tol_i its relative floor, max(rel_tol, local scatter)):
    ``a = ln y_i - ln y_{i-1}``, ``b = ln y_i - ln y_{i+1}`` of one sign and
    ``min(|a|, |b|) > SPIKE_K tol_i``. Its uncertainty is then ``exp(min(|a|, |b|)) - 1``:
    the deviation itself, so that it weighs in the criterion and the fits like a value one
    uncertainty from its neighbours, not like the ten or more of a measurement the local
    scatter (a median over nine sizes) does not see. A step between two protocol ranges is
    not a spike: the value next to it agrees with its neighbour on its own side. The end
    values and values that are not finite and positive are never spikes.
    """
    y_arr = np.asarray(y, dtype=np.float64)
    t_arr = np.broadcast_to(np.asarray(tol, dtype=np.float64), y_arr.shape)
    out = np.zeros(y_arr.size)
    use = np.flatnonzero(np.isfinite(y_arr) & (y_arr > 0.0))
    if use.size < 3:
        return out
    ly = np.log(y_arr[use])
    a = ly[1:-1] - ly[:-2]
    b = ly[1:-1] - ly[2:]
    dev = np.minimum(np.abs(a), np.abs(b))
    spike = (np.sign(a) == np.sign(b)) & (dev > SPIKE_K * np.log1p(t_arr[use[1:-1]]))
    out[use[1:-1]] = np.where(spike, np.expm1(dev), 0.0)
    return out


#: A raw value farther than TRANSITION_K times its floored relative uncertainty from the
#: trends of both its sides, and between them, is a transition point
#: (:func:`transition_scatter`); an end value that far from the trend of its two inner
#: neighbours, TRANSITION_END_K, is an end point of another protocol.
TRANSITION_K = 3.0
TRANSITION_END_K = 5.0
#: A size is a transition point where at least this many of its raw series (PRTT(1,0,s),
#: PRTT(n,0,s), PRTT(n,d,s), o_r(s)) are (derive_series).
TRANSITION_SERIES = 2
#: Whether derive_series marks transition points (the tests compare without).
TRANSITIONS = True


def transition_scatter(sizes: ArrayLike, y: ArrayLike, tol: ArrayLike) -> FloatArray:
    """The relative uncertainty of each transition point of a raw series (values in the
    order of their sizes), 0 elsewhere.

    A protocol range needs ``min_seg`` sizes, so a single size that belongs to neither of
    two ranges cannot be left alone by the criterion: it gets a range of three sizes, and
    the break after that range is a change the transport does not have. Two kinds:

    * a value between the levels of a step: in ln y against ln s, the trend of its two left
      neighbours extrapolated to it and the trend of its two right neighbours extrapolated
      to it lie on opposite sides of it, each more than TRANSITION_K tol_i away;
    * an end value (the first or the last size) more than TRANSITION_END_K tol_i from the
      trend of its two inner neighbours extrapolated to it: the sweep's first size still in
      the protocol below, or its last already in the next.

    Its uncertainty is then the smaller deviation, ``exp(min |dev|) - 1``, so that it weighs
    like a value one uncertainty from the nearer range. Values that are not finite and
    positive are never transition points; a series of fewer than five such values has none.
    """
    s_arr = np.asarray(sizes, dtype=np.float64)
    y_arr = np.asarray(y, dtype=np.float64)
    t_arr = np.broadcast_to(np.asarray(tol, dtype=np.float64), y_arr.shape)
    out = np.zeros(y_arr.size)
    use = np.flatnonzero(np.isfinite(y_arr) & (y_arr > 0.0) & (s_arr > 0.0))
    m = use.size
    if m < 5:
        return out
    lx = np.log(s_arr[use])
    ly = np.log(y_arr[use])
    lt = np.log1p(t_arr[use])

    def extrapolate(i: int, j: int, k: int) -> float:
        """The line in (ln s, ln y) through points j and k, at point i."""
        return float(ly[j] + (ly[k] - ly[j]) * (lx[i] - lx[j]) / (lx[k] - lx[j]))

    for i in range(2, m - 2):
        left = ly[i] - extrapolate(i, i - 2, i - 1)
        right = ly[i] - extrapolate(i, i + 1, i + 2)
        dev = min(abs(left), abs(right))
        if left * right < 0.0 and dev > TRANSITION_K * lt[i]:
            out[use[i]] = np.expm1(dev)
    for i, (j, k) in ((0, (1, 2)), (m - 1, (m - 2, m - 3))):
        dev = abs(ly[i] - extrapolate(i, j, k))
        if dev > TRANSITION_END_K * lt[i]:
            out[use[i]] = np.expm1(dev)
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
    if local_scatter_floor:
        # An isolated spike weighs as one uncertainty from its neighbours (spike_scatter).
        for k, v in raw.items():
            spikes = spike_scatter(v, tol[k])
            scatter[k] = np.maximum(scatter[k], spikes)
            tol[k] = np.maximum(tol[k], spikes)
        if TRANSITIONS:
            # A transition point between two protocols shows in the message's transfer as
            # a whole: a size is one where at least two of its raw series are.
            trans = {k: transition_scatter(tr.sizes, v, tol[k]) for k, v in raw.items()}
            marked = sum((t > 0.0).astype(np.int64) for t in trans.values())
            point = marked >= TRANSITION_SERIES
            for k, t in trans.items():
                t = np.where(point, t, 0.0)
                scatter[k] = np.maximum(scatter[k], t)
                tol[k] = np.maximum(tol[k], t)
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
