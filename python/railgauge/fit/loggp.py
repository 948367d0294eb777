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

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

# The public names of the fit's modules, importable from here as before the split.
from railgauge.fit.defs import (
    _SUPPORT_WINDOW,
    K_PARAMS_PER_SEGMENT,
    K_PARAMS_PER_SEGMENT_PAPER,
    NETWORK_DEFINITION,
    O_R_MEASURED,
    O_US_DEFINITION,
    PARAMS,
    SUPPORT_RULE,
    ArrayLike,
    BoolArray,
    FloatArray,
    ModelError,
)
from railgauge.fit.lines import (  # noqa: F401
    _design,
    _LineFit,
    _nnls_lines,
)
from railgauge.fit.model import (
    LoggpFit,
    LoggpRange,
    g_all,
    load_loggp_model,
    loggp_from_json,
    overhead,
    prtt,
    range_index,
)
from railgauge.fit.rangefit import (
    G_EXTRAPOLATION_REASON,
    GLAT_OVERLAP_REASON,
    L_OVERLAP_REASON,
    _at_bound,
    _bound_entry,
    _bound_messages,
    _complete_bounds,
    _criterion_statement,
    _fit_pieces,
    _fit_range,
    _o_r_source_of,
    _overlap_hint,
    _overlap_note,
    _overlap_significant,
    _validate_options,
)
from railgauge.fit.resample import (
    _bootstrap,
    _break_support,
    _ci,
    _normal_cis,
)
from railgauge.fit.segment import (
    Segmentation,
    bic_penalty,
    line_sse,
    segment,
)
from railgauge.fit.series import (
    DerivedSeries,
    _delays,
    derive_series,
    local_scatter,
)
from railgauge.hoststate import points_host_state
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

#: Why a supported break was merged away by :func:`_within_one_step`.
WITHIN_STEP_REASON = (
    "within one step of the planned sweep of a better-supported break: the sizes between "
    "them are the refinement's, inside the transition, not a protocol range of their own"
)


def _within_one_step(
    kept: Sequence[tuple[int, float | None]],
    sizes: Sequence[int] | npt.NDArray[Any],
    planned: Sequence[int] | None,
) -> set[int]:
    """The breaks (indices into ``sizes``) to merge away because a range between two kept
    breaks holds no size of the planned sweep: the refinement measures sizes between two
    planned ones around a protocol change, and those transition sizes may form a range of
    their own in one run and not in the next. Of two such breaks the better-supported one
    stays (the earlier one on a tie). Without a planned sweep nothing is merged."""
    grid = sorted({int(v) for v in planned or () if int(v) > 0})
    if not grid or len(kept) < 2:
        return set()

    def step(s: int) -> int:  # the planned size a range from s starts on, rounded up
        return next((g for g in grid if g >= s), grid[-1] + 1)

    drop: set[int] = set()
    live = [(p, -1.0 if sup is None else float(sup)) for p, sup in kept]
    changed = True
    while changed:
        changed = False
        for (p, sp), (q, sq) in itertools.pairwise(live):
            if step(int(sizes[p])) == step(int(sizes[q])):
                gone = q if sp >= sq else p
                drop.add(gone)
                live = [(i, v) for i, v in live if i != gone]
                changed = True
                break
    return drop


#: Redraws of the break support: 400 keep the Monte-Carlo standard error of a support near
#: the threshold 0.9 at 1.5 points (100 gave up to 3 points: a break of support 0.88 was
#: kept in some seeds and runs and not in others); above SUPPORT_REDRAWS_SIZES sizes (a
#: Netgauge sweep of 1025 sizes: 400 redraws would take minutes) 100.
SUPPORT_REDRAWS = 400
SUPPORT_REDRAWS_LONG = 100
SUPPORT_REDRAWS_SIZES = 256


def support_redraws(n_sizes: int) -> int:
    """The default number of redraws of the break support for a sweep of ``n_sizes``."""
    return SUPPORT_REDRAWS if n_sizes <= SUPPORT_REDRAWS_SIZES else SUPPORT_REDRAWS_LONG


def _file_bound(key: str, lf: _LineFit, intercept: bool, warn: str | None, note: str | None,
                bounds: list[dict[str, Any]], warnings: list[str], notes: list[str]) -> bool:
    """Files the outcome of a parameter's bound check (:func:`_bound_messages`): a warning,
    or a note and, where the parameter sits at its bound, a ``bounds`` entry with that note
    as its reason. False where it was a warning (the range is then not reliable)."""
    if warn is not None:
        warnings.append(warn)
    elif (note is not None and _at_bound(lf, intercept)
          and not any(b["parameter"] == key for b in bounds)):
        bounds.append(_bound_entry(key, lf, intercept, note))
    if note is not None:
        notes.append(note)
    return warn is None


def _method_info(*, n_boot: int, seed: int, rel_tol: float, abs_floor_us: float,
                 local_scatter: bool, delay_info: dict[str, Any]) -> dict[str, Any]:
    """The fit's ``method`` block: how the lines, their weights and their CIs are made."""
    return {
        "fit": "weighted bounded least squares (scipy.optimize.lsq_linear, coefficients >= 0)",
        "weights": (
            "1/sigma^2, sigma = max(propagated max(sigma_CI, max(rel_tol, local scatter, "
            "spike, transition)*median), abs_floor)"
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


@dataclasses.dataclass
class _Partition:
    """The protocol ranges chosen (section 3 of docs/fit.md): the criterion's series and
    weights, the optimal partition, the support of its breaks, and the blocks kept."""

    ys: FloatArray
    ws: FloatArray
    series_names: list[str]
    with_o_r: bool
    k_params: int
    n_res: int
    lam: float
    seg: Segmentation
    #: Where the optimal partition's blocks after the first start (bends included).
    dp_starts: list[int]
    #: The sizes (indices) of each protocol range.
    segs: list[npt.NDArray[np.int64]]
    support_from: list[float | None]
    breaks_info: list[dict[str, Any]]
    bends: list[dict[str, Any]]


def _partition(
    tr: Triples,
    ds: DerivedSeries,
    *,
    penalty: float | None,
    penalty_factor: float,
    min_seg: int,
    max_segments: int,
    n_support: int,
    min_support: float,
    seed: int,
    planned: Sequence[int] | None,
) -> _Partition:
    """Segments the derived series, draws the support of each break and keeps those with
    enough support, one per step of the planned sweep."""
    n_sizes = len(tr)
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
                planned=planned,
            )
        )
    kept = [
        (p, sup)
        for p, sup in zip(dp_starts, supports, strict=True)
        if sup is None or sup >= min_support - 1e-12
    ]
    within_step = _within_one_step(kept, ds.sizes, planned)
    kept = [(p, sup) for p, sup in kept if p not in within_step]
    edges = [0, *(p for p, _ in kept), n_sizes]
    segs = [np.arange(a, b) for a, b in itertools.pairwise(edges)]
    support_from: list[float | None] = [None, *(sup for _, sup in kept)]
    breaks_info = [
        {
            "between_bytes": [int(ds.sizes[p - 1]), int(ds.sizes[p])],
            "support": sup,
            "kept": (sup is None or sup >= min_support - 1e-12) and p not in within_step,
            **({"merged": WITHIN_STEP_REASON} if p in within_step else {}),
        }
        for p, sup in zip(dp_starts, supports, strict=True)
    ]
    bends = [
        {"between_bytes": b["between_bytes"], "support": b["support"],
         **({"merged": b["merged"]} if "merged" in b else {})}
        for b in breaks_info
        if not b["kept"]
    ]
    return _Partition(
        ys=ys, ws=ws, series_names=series_names, with_o_r=with_o_r, k_params=k_params,
        n_res=n_res, lam=lam, seg=seg, dp_starts=dp_starts, segs=segs,
        support_from=support_from, breaks_info=breaks_info, bends=bends,
    )


@dataclasses.dataclass
class _Network:
    """The network-wide L, o_s, o_r (section 4 of docs/fit.md): the lines over the first
    block of the optimal partition, their CIs, bounds, warnings and notes."""

    idx: npt.NDArray[np.int64]
    fr0: dict[str, Any]
    n_os: _LineFit
    n_or: _LineFit
    n_l: _LineFit
    paper0: bool
    first_from: int
    first_last: int
    values: dict[str, float]
    ci: dict[str, tuple[float, float]]
    warnings: list[str]
    notes: list[str]
    reliable: bool
    bounds: list[dict[str, Any]]


def _network(
    tr: Triples,
    ds: DerivedSeries,
    part: _Partition,
    fitted: list[dict[str, Any]],
    boots: list[dict[str, FloatArray] | None],
    *,
    n_boot: int,
    seed: int,
    min_seg: int,
) -> _Network:
    """The network-wide parameters, fitted up to the first break or bend."""
    dp_starts, segs = part.dp_starts, part.segs
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
    net_bounds: list[dict[str, Any]] = []
    for key, lf, intercept in net_checks:
        warn, note = _bound_messages(key, lf, first_from, span0, intercept=intercept, paper=paper0)
        if warn is not None and key in ("L_us", "Glat_us_per_byte") and not paper0:
            # A bound with a physical reason (docs/fit.md, section 4): the receiver's work
            # overlaps the sender's, so the time between them (L), and its growth with
            # size (G_lat), are not resolvable. For L the evidence is an excess of the
            # measured overheads over PRTT(1,0,s)/2; for G_lat it is the warning itself: a
            # slope significantly below 0 with o_r measured (not paper0), overheads that
            # grow faster than the one-way time, which pieces in sequence cannot do.
            if key == "Glat_us_per_byte" or _overlap_significant(ds, net_idx, lf):
                reason = L_OVERLAP_REASON if key == "L_us" else GLAT_OVERLAP_REASON
                note = warn + _overlap_hint(ds, net_idx) + reason
                net_bounds.append(_bound_entry(key, lf, intercept, reason.strip("; ")))
                warn = None
            else:
                warn += _overlap_hint(ds, net_idx)
        if not _file_bound(key, lf, intercept, warn, note, net_bounds, net_warnings, net_notes):
            net_reliable = False
    if n_l.a_free < 0.0 and net_values["L_us"] <= 0.0:
        # L held at 0: the overheads o_s + o_r exceed PRTT(1,0,1)/2 by -L'. The symmetric
        # o of the contract keeps the paper's PRTT(1,0,1) = 2 (L + 2o) (docs/fit.md, section
        # 4): o = (o_s + o_r + L')/2, the part of the overheads not overlapped.
        shift = 0.5 * float(n_l.a_free)
        o_sum = net_values["o_us"]
        net_values["o_us"] = max(0.0, o_sum + shift)
        lo, hi = net_ci["o_us"]
        net_ci["o_us"] = (max(0.0, lo + shift), max(0.0, hi + shift))
        net_notes.append(
            f"o = {net_values['o_us']:.4g} us, not (o_s + o_r)/2 = {o_sum:.4g} us: with L held "
            f"at 0, o = (o_s + o_r + L')/2 with L' = {n_l.a_free:.4g} us the unconstrained "
            "intercept of L, so that L + 2o is PRTT(1,0,1)/2 as the paper's formula has it (a "
            "simulator that takes L and o charges the one-way time measured; o_s and o_r stay "
            "as measured)"
        )
    return _Network(
        idx=net_idx, fr0=fr0, n_os=n_os, n_or=n_or, n_l=n_l, paper0=paper0,
        first_from=first_from, first_last=first_last, values=net_values, ci=net_ci,
        warnings=net_warnings, notes=net_notes, reliable=net_reliable, bounds=net_bounds,
    )


def _range(
    r: int,
    idx: npt.NDArray[np.int64],
    fr: dict[str, Any],
    bs: dict[str, FloatArray] | None,
    *,
    ds: DerivedSeries,
    net: _Network,
    n_ranges: int,
    first_label: str,
    min_seg: int,
    support_from: list[float | None],
    all_pieces: list[Any],
    replaced: set[int],
    delay_info: dict[str, Any],
) -> LoggpRange:
    """Range r of the model: its own g, G and per-byte slopes beside the network-wide L
    and o, CIs, bounds with their reasons, warnings and notes."""
    net_values, net_ci, net_reliable = net.values, net.ci, net.reliable
    net_warnings, net_notes, net_bounds = net.warnings, net.notes, net.bounds
    n_l, n_os, n_or = net.n_l, net.n_os, net.n_or
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
    bounds = [dict(b) for b in net_bounds]
    for key, lf, intercept in own_checks:
        warn, note = _bound_messages(key, lf, from_b, span, intercept=intercept, paper=paper)
        if warn is not None and intercept and r > 0 and from_b - 1 > 0.05 * max(span, 1):
            # g of a range far from s = 1 is the extrapolation of its gap line: a bound
            # there has a reason, and the range's pieces predict from its own sizes.
            note = warn + G_EXTRAPOLATION_REASON
            bounds.append(_bound_entry(key, lf, intercept, G_EXTRAPOLATION_REASON.strip("; ")))
            warn = None
        if not _file_bound(key, lf, intercept, warn, note, bounds, warnings, notes):
            reliable = False
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
    _complete_bounds(bounds, values, r, {
        "L_us": (n_l, True), "o_s_us": (n_os, True), "o_r_us": (n_or, True),
        "g_us": (f_g, True), "G_us_per_byte": (f_g, False),
        "O_s_us_per_byte": (f_os, False), "O_r_us_per_byte": (f_or, False),
        "Glat_us_per_byte": (f_l, False),
    }, o_r_measured=not paper)
    chi2 = {"G_all": f_g.chi2_red, "o_s": f_os.chi2_red}
    if not paper:
        chi2["o_r"] = f_or.chi2_red
    chi2["L_line"] = f_l.chi2_red
    o_r_src = str(fr["o_r_source"])
    return (
        LoggpRange(
            from_bytes=from_b,
            to_bytes=last_b if r < n_ranges - 1 else None,
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
            pieces=[p for p in all_pieces if from_b <= p.from_bytes <= last_b],
            bounds=bounds,
            **cast(dict[str, Any], values),
        )
    )



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
    n_support: int | None,
    min_support: float,
    planned: Sequence[int] | None = None,
) -> LoggpFit:
    _validate_options(rel_tol, abs_floor_us, penalty, penalty_factor, min_seg, max_segments, n_boot)
    if n_support is None:
        n_support = support_redraws(len(tr))
    if n_support != 0 and n_support < 10:
        raise ValueError(f"n_support must be 0 (no break support) or >= 10, got {n_support}")
    if not (math.isfinite(min_support) and 0.0 <= min_support <= 1.0):
        raise ValueError(f"min_support must be a number in [0, 1], got {min_support}")
    n_sizes = len(tr)
    n_common = int(np.bincount(tr.n_pn).argmax()) if n_sizes else None
    _, delay_info = _delays(tr)
    method = _method_info(n_boot=n_boot, seed=seed, rel_tol=rel_tol, abs_floor_us=abs_floor_us,
                          local_scatter=local_scatter, delay_info=delay_info)
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
    part = _partition(
        tr, ds, penalty=penalty, penalty_factor=penalty_factor, min_seg=min_seg,
        max_segments=max_segments, n_support=n_support, min_support=min_support, seed=seed,
        planned=planned,
    )
    ys, ws, segs, dp_starts = part.ys, part.ws, part.segs, part.dp_starts
    final_fit_cost = float(
        sum(line_sse(ds.x[idx], ys[k, idx], ws[k, idx]) for idx in segs for k in range(ys.shape[0]))
    )
    fitted = [_fit_range(ds, idx) for idx in segs]
    # The predictive model follows every break of the optimal partition, bends included.
    all_pieces = _fit_pieces(ds, [0, *dp_starts])
    boots: list[dict[str, FloatArray] | None] = [None] * len(segs)
    if n_boot > 0:
        boots = list(_bootstrap(tr, ds, segs, fitted, n_boot=n_boot, seed=seed))

    replaced = set(delay_info["replaced_sizes"])
    # The network-wide L, o_s, o_r: the intercepts of the lines over the first segment of
    # the optimal partition. Where a bend with too little support was merged away, the
    # first range runs past it, and a line through a bend is a poor line: L and o belong
    # to the smallest messages, so they are fitted up to the first break or bend.
    net = _network(tr, ds, part, fitted, boots, n_boot=n_boot, seed=seed, min_seg=min_seg)
    first_from, first_last, net_reliable = net.first_from, net.first_last, net.reliable
    first_label = f"{first_from} B .. {first_last} B"
    if len(segs) == 1 and not dp_starts:
        first_label = f"{first_from} B .."

    ranges = [
        _range(r, idx, fr, bs, ds=ds, net=net, n_ranges=len(segs), first_label=first_label,
               min_seg=min_seg, support_from=part.support_from, all_pieces=all_pieces,
               replaced=replaced, delay_info=delay_info)
        for r, (idx, fr, bs) in enumerate(zip(segs, fitted, boots, strict=True))
    ]

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
    if part.bends:
        message += (
            f"; {len(part.bends)} bend(s) of the optimal partition merged away (break support "
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
        bends=part.bends,
        network={
            **net.values,
            "ci95": {k: list(v) for k, v in net.ci.items()},
            "from_bytes": first_from,
            "to_bytes": first_last if (len(segs) > 1 or dp_starts) else None,
            "range_index": 0,
            "o_r_source": str(net.fr0["o_r_source"]),
            "reliable": net_reliable,
            "warnings": net.warnings,
            "notes": net.notes,
            "bounds": net.bounds,
            "definition": NETWORK_DEFINITION,
        },
    )
    fit.criterion = {
        "method": "penalised segmented least squares (dynamic programming)",
        "series": part.series_names,
        "rel_tol": rel_tol,
        "abs_floor_us": abs_floor_us,
        "local_scatter": local_scatter,
        "penalty": part.lam,
        "penalty_factor": penalty_factor if penalty is None else None,
        "k_params_per_segment": part.k_params,
        "n_residuals": part.n_res,
        "min_seg": min_seg,
        "max_segments": max_segments,
        "segments": len(ranges),
        "fit_cost": final_fit_cost,
        "cost": final_fit_cost + part.lam * (len(ranges) - 1),
        "optimal_partition": {
            "segments": len(part.seg.bounds),
            "from_bytes": [int(ds.sizes[i]) for i, _ in part.seg.bounds],
            "fit_cost": part.seg.fit_cost,
            "cost": part.seg.cost,
        },
        "break_support": {
            "rule": SUPPORT_RULE
            if n_support > 0
            else "not computed (n_support = 0): every break of the optimal partition is kept",
            "n_resamples": n_support,
            "min_support": min_support,
            "window_positions": _SUPPORT_WINDOW,
            "window_planned_steps": _SUPPORT_WINDOW if planned else None,
            "seed": seed,
            "breaks": part.breaks_info,
        },
        "fit_cost_by_segments": [
            c if math.isfinite(c) else None for c in part.seg.fit_cost_by_count
        ],
        "o_r_source": o_r_source,
        "o_us": O_US_DEFINITION,
        "network": NETWORK_DEFINITION,
        "statement": _criterion_statement(
            rel_tol, abs_floor_us, part.lam, part.series_names, local_scatter=local_scatter
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
        "host_state": points_host_state(meas.records, meas.header),
        **({"c2c": meas.c2c} if meas.c2c is not None else {}),
    }


def out_of_state_sizes(meas: Measurements) -> list[int]:
    """Sizes a record of which says it was measured only in another state of the host than the
    run's reference state (``in_state`` false: railgauge-bench kept its fastest passes, none in
    the reference band; the refinement's own test of its sizes against the sweep's state is
    :func:`railgauge.hoststate.off_state_sizes`). The fit leaves them out: in the runs of
    2026-11-29 (up to 51 such records of 328 where the host changed state often) a tenth of
    them lay more than 1.2x above the interpolation of their neighbours and a tenth below 0.6x
    of it; refitting those runs without them, every range was reliable in 8 of 10 Open MPI runs
    against 5 and 5 of 10 tcp runs against 4. None are left out where that would leave fewer
    than two sizes."""
    off = sorted({r.s for r in meas.records if r.in_state is False})
    left = {r.s for r in meas.records} - set(off)
    return off if len(left) >= 2 else []


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
    n_support: int | None = None,
    min_support: float = 0.9,
    accuracy: bool = False,
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
        keep every break of the optimal partition (the criterion alone); None:
        :func:`support_redraws` of the number of sizes (400, 100 above 256 sizes).
    min_support
        Breaks with support >= ``min_support`` are protocol changes; the others are
        merged away and reported as ``bends`` (see ``docs/fit.md``, section 3).
    accuracy
        Also cross-validate the model (5-fold over sizes, each fold refitted with the same
        options): ``accuracy`` in the result, each range's held-out errors, and ranges
        that do not predict their held-out points within 5% (median) and 12% (p90) marked
        not reliable (:func:`railgauge.fit.accuracy.attach_accuracy`). About five more fits.

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
    off_state = out_of_state_sizes(meas)
    full = meas
    if off_state:
        drop = set(off_state)
        meas = dataclasses.replace(meas, records=[r for r in meas.records if r.s not in drop])
    tr = triples(meas)
    options: dict[str, Any] = {
        "rel_tol": rel_tol,
        "abs_floor_us": abs_floor_us,
        "local_scatter": local_scatter,
        "penalty": penalty,
        "penalty_factor": penalty_factor,
        "min_seg": min_seg,
        "max_segments": max_segments,
        "n_boot": n_boot,
        "n_support": n_support,
        "min_support": min_support,
    }
    header_params = meas.header.get("params") if isinstance(meas.header, Mapping) else None
    planned = header_params.get("sizes") if isinstance(header_params, Mapping) else None
    source = _source_of(full, len(tr))
    source["off_state_sizes"] = off_state
    fit = _fit_core(
        tr,
        transport=meas.transport,
        source=source,
        seed=seed,
        planned=[int(v) for v in planned if isinstance(v, int | float)]
        if isinstance(planned, list)
        else None,
        **options,
    )
    if fit.success and off_state:
        fit.message += (
            f"; {len(off_state)} size(s) left out, measured only in another state of the host "
            f"than the run's (in_state false; docs/fit.md, section 1): "
            + ", ".join(f"{s} B" for s in off_state)
        )
    extrapolated = meas.header.get("extrapolated") if isinstance(meas.header, Mapping) else None
    if fit.success and fit.ranges and extrapolated:
        # A sweep that starts far above 1 B (a Netgauge file of large sizes only): L and o
        # are the first range's lines extrapolated to s = 1.
        text = (
            f"L and o are extrapolations: the smallest measured size is "
            f"{int(fit.ranges[0].from_bytes)} B, far above s = 1, and L, o_s, o_r are the "
            f"first range's lines extrapolated there"
        )
        fit.network.setdefault("notes", []).append(text)
        for rng in fit.ranges:
            rng.notes.append(text)
    params = meas.header.get("params") if isinstance(meas.header, Mapping) else None
    noisy = params.get("noise_dominated") if isinstance(params, Mapping) else None
    if fit.success and fit.ranges and noisy:
        # The reader found the table dominated by noise (a Netgauge file whose rows scatter
        # beyond any protocol change): no range of it can be relied on.
        why = noisy if isinstance(noisy, str) else (
            "the measurements are dominated by noise (the reader's check: see "
            "source.reader_warnings)"
        )
        for rng in fit.ranges:
            rng.reliable = False
            rng.warnings.append(str(why))
    if accuracy:
        from railgauge.fit.accuracy import attach_accuracy

        attach_accuracy(fit, meas, seed=seed, **options)
    return fit


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
    n_support: int | None = None,
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
