"""Resampling (docs/fit.md, sections 3 and 5): the bootstrap of the confidence intervals
and the break support of the protocol changes, both drawing the raw values from their
uncertainties and recomputing the derived series.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from railgauge.fit.defs import (
    _SUPPORT_STREAM,
    _SUPPORT_WINDOW,
    _Z95,
    FloatArray,
)
from railgauge.fit.lines import (
    _LineFit,
    _nnls_lines,
)
from railgauge.fit.segment import (
    segment_starts_batch,
)
from railgauge.fit.series import (
    DerivedSeries,
    _derive,
    _propagate,
)
from railgauge.measurements import Triples


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
    planned: Sequence[int] | None = None,
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
    redraws that have a block starting within one step of the planned sweep of it
    (:func:`support_columns`: at p - 1, p or p + 1 where no refinement sizes lie between,
    and nearer to it than to another break).
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
    cols = support_columns(ds.sizes, starts, planned)
    return [float(np.mean(found[:, c].any(axis=1))) if c else 0.0 for c in cols]


def _grid_position(s: float, grid: Sequence[int]) -> float:
    """The position of size s on the sorted planned sweep ``grid``, interpolated on a log
    scale (k at grid[k]; beyond the ends the end step continues)."""
    k = bisect.bisect_right(grid, s) - 1
    k = min(max(k, 0), len(grid) - 2)
    lo, hi = grid[k], grid[k + 1]
    return k + math.log(s / lo) / math.log(hi / lo)


def support_columns(
    sizes: Sequence[int] | npt.NDArray[Any],
    starts: Sequence[int],
    planned: Sequence[int] | None,
) -> list[list[int]]:
    """For each break of the optimal partition (a block starting at index p of ``sizes``,
    between s_(p-1) and s_p), the block starts q of a redraw that support it: those within
    one step of the planned sweep, i.e. a break between s_(q-1) and s_q whose span reaches
    to less than one planned step from the break's span on either side, and nearer to this
    break than to any other of the partition (a redraw's break supports one break only).
    On a grid without refinement sizes the window is q = p - 1, p, p + 1
    (_SUPPORT_WINDOW); where the refinement measured sizes between two planned ones around
    a change, it spans them all, so that sizes added to locate a change do not spread its
    support over more positions and lower it. Without a planned sweep: +-_SUPPORT_WINDOW
    positions."""
    n = len(sizes)
    grid = sorted({int(v) for v in planned or () if int(v) > 0})
    if len(grid) >= 2 and n >= 2 and int(min(sizes)) > 0:
        pos = [_grid_position(float(s), grid) for s in sizes]
    else:
        pos = [float(i) for i in range(n)]
    eps = 1e-9
    windows: list[set[int]] = []
    for p in starts:
        lo_edge = pos[p - 1] - _SUPPORT_WINDOW + eps   # pos(s_q) must lie above
        hi_edge = pos[p] + _SUPPORT_WINDOW - eps       # pos(s_(q-1)) must lie below
        qs = {q for q in range(1, n) if pos[q] > lo_edge and pos[q - 1] < hi_edge}
        qs |= set(range(max(p - _SUPPORT_WINDOW, 1), min(p + _SUPPORT_WINDOW + 1, n)))
        windows.append(qs)
    cols: list[list[int]] = [[] for _ in starts]
    for q in range(1, n):
        mine = [i for i, w in enumerate(windows) if q in w]
        if mine:
            mid = 0.5 * (pos[q - 1] + pos[q])
            best = min(mine, key=lambda i: abs(0.5 * (pos[starts[i] - 1] + pos[starts[i]]) - mid))
            cols[best].append(q)
    return cols


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
