"""The lines of one protocol range and what they say (docs/fit.md, section 4): the four
weighted lines, parameters held at a bound and why, overlap of sending and receiving, and
the statement of the criterion.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from railgauge.fit.defs import (
    _SIGNIFICANT_Z,
    O_R_ASSUMED,
    O_R_MEASURED,
    FloatArray,
)
from railgauge.fit.lines import (
    _fit_line,
    _LineFit,
)
from railgauge.fit.model import Piece
from railgauge.fit.series import (
    DerivedSeries,
)


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


#: The physical reason for L at its bound where sending and receiving overlap.
L_OVERLAP_REASON = (
    "; L is held at 0 with a reason: on this transport the receiver's work overlaps the "
    "sender's (on loopback TCP the kernel delivers the message to the receiver inside the "
    "send call; through a shared-memory buffer the copy is pipelined), so the time between "
    "the end of the send and the start of the receive, L, is below what PRTT can resolve; "
    "the predictions come from the pieces' own lines"
)
#: The physical reason for the latency slope G_lat at its bound where sending and
#: receiving overlap (the same evidence as for L: :func:`_overlap_significant`).
GLAT_OVERLAP_REASON = (
    "; G_lat is held at 0 with a reason: on this transport the receiver's work overlaps the "
    "sender's, more the larger the message (on loopback TCP the kernel delivers the message "
    "to the receiver inside the send call, so the transfer's time per byte is part of the "
    "send overhead o_s(s); through a shared-memory buffer the copy is pipelined), so "
    "PRTT(1,0,s)/2 - o_s(s) - o_r(s) falls with size and a latency that grows with size is "
    "not resolvable; the predictions come from the pieces' own lines"
)
#: The reason for g at its bound in a range far from s = 1.
G_EXTRAPOLATION_REASON = (
    "; g is held at 0 with a reason: it is the range's gap line extrapolated to s = 1, far "
    "below the range's sizes, where the line does not apply; the range's predictions come "
    "from its pieces' lines, anchored at its own sizes"
)


def _at_bound(fit: _LineFit, intercept: bool) -> bool:
    """Whether the coefficient (intercept or slope) of a bounded line is held at 0."""
    value = fit.a if intercept else fit.b
    # Held there by the bound on either coefficient: the free line has a negative one.
    free_neg = (math.isfinite(fit.a_free) and fit.a_free < 0.0) or (
        math.isfinite(fit.b_free) and fit.b_free < 0.0
    )
    return bool(value <= 0.0 and free_neg)


def _bound_entry(key: str, fit: _LineFit, intercept: bool, reason: str) -> dict[str, Any]:
    """A parameter held at its bound 0, with its unconstrained estimate and the reason."""
    est, se = (fit.a_free, fit.a_se) if intercept else (fit.b_free, fit.b_se)
    return {"parameter": key, "value": 0.0, "unconstrained": float(est),
            "standard_error": float(se), "reason": reason}


def _complete_bounds(
    bounds: list[dict[str, Any]],
    values: dict[str, float],
    r: int,
    lines: dict[str, tuple[_LineFit, bool]],
    *,
    o_r_measured: bool = False,
) -> None:
    """Adds to ``bounds`` every parameter of ``values`` held at 0 that has no entry yet,
    with its reason: an estimate consistent with 0 is physically near 0; O_s and O_r at 0
    are plain LogGP (it has no per-byte overhead); a slope of a later range (O_s, O_r,
    G_lat) enters neither L, o, g nor G, and falls where sending and receiving overlap;
    G_lat of the first range falling with o_r measured is that overlap too (the
    network-wide check's reason, GLAT_OVERLAP_REASON, over the whole range). A parameter
    without a reason gets an entry whose reason is None: the range's warnings say why it
    is a problem. O = (O_s + O_r)/2 at 0 with both its parts at 0 gets an entry that
    points to theirs."""
    have = {b["parameter"] for b in bounds}
    for key, (lf, intercept) in lines.items():
        if key in have or key not in values or values[key] > 0.0 or not _at_bound(lf, intercept):
            continue
        est, se = (lf.a_free, lf.a_se) if intercept else (lf.b_free, lf.b_se)
        reason: str | None = None
        if math.isfinite(se) and est >= -_SIGNIFICANT_Z * se:
            reason = (f"consistent with 0: the unconstrained estimate {est:.4g} is within "
                      f"1.96 standard errors ({se:.2g}) of 0")
        elif key in ("O_s_us_per_byte", "O_r_us_per_byte") and r == 0:
            reason = None
        elif key == "Glat_us_per_byte" and r == 0 and o_r_measured:
            # Measured over shm (2026-11-29), one range 1 B .. 1 MiB: G_lat -3.8e-5 us/B,
            # 4.9 standard errors below 0, held at 0 without a word.
            reason = GLAT_OVERLAP_REASON.strip("; ")
        elif key in ("O_s_us_per_byte", "O_r_us_per_byte", "Glat_us_per_byte") and r > 0:
            reason = ("a slope of this range only, which enters neither L, o, g nor G: it "
                      "falls with size where sending and receiving overlap (a transfer "
                      "pipelined through the transport's buffer); the range's predictions "
                      "come from its pieces")
        bounds.append(_bound_entry(key, lf, intercept, reason or ""))
        if reason is None:
            bounds[-1]["reason"] = None
    entries = {b["parameter"]: b for b in bounds}
    parts = ("O_s_us_per_byte", "O_r_us_per_byte")
    if (
        values.get("O_us_per_byte", 1.0) <= 0.0
        and "O_us_per_byte" not in entries
        and all(k in entries for k in parts)
    ):
        # With a part's reason None (a warning of the range names it), O's entry says so:
        # O is at 0 because its parts are, and the range is not reliable for them.
        said = all(entries[k].get("reason") for k in parts)
        bounds.append({"parameter": "O_us_per_byte", "value": 0.0, "unconstrained": None,
                       "standard_error": None,
                       "reason": "(O_s + O_r)/2 with both at 0 (see their entries"
                                 + (")" if said else " and the range's warnings)")})


def _overlap_significant(ds: DerivedSeries, idx: npt.NDArray[np.int64],
                         line: _LineFit | None = None) -> bool:
    """Whether o_s(s) + o_r(s) exceed PRTT(1,0,s)/2 significantly (sending and receiving
    overlap there): by more than 1.96 sigma at some measured size of idx, or, pooled over
    them, where ``line`` (the fit of PRTT(1,0,s)/2 - o_s(s) - o_r(s) over idx, L's line)
    has an intercept more than 1.96 standard errors below 0 and o_r was measured at the
    sizes (Open MPI's shared memory, 2026-11-28: an excess of up to 0.068 us at 16 B, at no
    size 1.96 sigma, the intercept -0.016 us with a standard error of 0.007 us)."""
    keep = ds.o_valid[idx] & ds.o_r_measured[idx]
    sig = -ds.y_l[idx] > _SIGNIFICANT_Z * ds.y_l_sigma[idx]
    if bool(np.any(keep & sig)):
        return True
    return bool(
        line is not None and np.any(keep) and math.isfinite(line.a_se)
        and line.a_free < -_SIGNIFICANT_Z * line.a_se
    )


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


def _free_line(x: FloatArray, y: FloatArray, w: FloatArray) -> tuple[float, float]:
    """The weighted least-squares line y ~ a + b (x - x[0]), not bounded: (a, b). One
    size (or no weight) gives a flat line through the mean."""
    use = w > 0.0
    if int(use.sum()) < 2:
        use = np.ones(x.size, dtype=bool)
        w = np.ones(x.size)
    xs, ys, ws = x[use] - x[0], y[use], w[use]
    if xs.size < 2 or float(np.ptp(xs)) == 0.0:
        return float(np.average(ys, weights=ws)), 0.0
    scale = float(np.max(np.abs(xs))) or 1.0
    sw = np.sqrt(ws / np.max(ws))
    a_mat = np.column_stack([sw, sw * xs / scale])
    coef, *_ = np.linalg.lstsq(a_mat, sw * ys, rcond=None)
    return float(coef[0]), float(coef[1] / scale)


def _positive_line(
    line: tuple[float, float], x: FloatArray, y: FloatArray, w: FloatArray
) -> tuple[float, float]:
    """The line, or where it is not positive over the piece's own sizes (data dominated by
    noise), a flat line at the weighted mean: a time is never predicted at or below 0."""
    a, b = line
    span = float(x[-1] - x[0])
    if a > 0.0 and a + b * span > 0.0:
        return line
    ok = (w > 0.0) & np.isfinite(y)
    mean = float(np.average(y[ok], weights=w[ok])) if bool(ok.any()) else float(np.nanmean(y))
    return (max(mean, 0.0), 0.0)


def _fit_pieces(ds: DerivedSeries, starts: Sequence[int]) -> list[Piece]:
    """The predictive model's pieces: one per block of the partition whose blocks start at
    ``starts`` (0 first), each with the free weighted lines of PRTT(1,0,s)/2, G_all(s),
    o_s(s) and o_r(s) anchored at its first size (docs/fit.md, section 4, *Predictions*).
    o_s and o_r are fitted where d was above G_all(s) (all sizes where fewer than two were);
    o_r is the o_s line where no receive overhead was measured."""
    edges = [*starts, ds.sizes.size]
    pieces: list[Piece] = []
    for a, b in itertools.pairwise(edges):
        idx = np.arange(a, b)
        x = ds.x[idx]
        valid = ds.o_valid[idx]
        if int(valid.sum()) < 2:
            valid = np.ones(idx.size, dtype=bool)
        w_os = np.where(valid, 1.0 / ds.o_s_sigma[idx] ** 2, 0.0)
        lines = {
            "h": _free_line(x, ds.h[idx], 1.0 / ds.h_sigma[idx] ** 2),
            "gall": _free_line(x, ds.g_all[idx], 1.0 / ds.g_all_sigma[idx] ** 2),
            "os": _free_line(x, ds.o_s[idx], w_os),
        }
        for key, series, sig in (("h", ds.h, ds.h_sigma), ("gall", ds.g_all, ds.g_all_sigma)):
            lines[key] = _positive_line(lines[key], x, series[idx], 1.0 / sig[idx] ** 2)
        measured = valid & ds.o_r_measured[idx]
        if bool(measured.any()):
            w_or = np.where(measured, 1.0 / ds.o_r_sigma[idx] ** 2, 0.0)
            lines["or"] = _free_line(x, ds.o_r[idx], w_or)
        else:
            lines["or"] = lines["os"]
        pieces.append(
            Piece(from_bytes=int(ds.sizes[a]), to_bytes=int(ds.sizes[b - 1]), lines=lines)
        )
    return pieces
