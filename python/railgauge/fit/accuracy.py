"""How well a LogGP model predicts PRTT measurements: point errors, held-out accuracy by
k-fold cross-validation over sizes, and the measurement's own noise beside it.

The error of one point is the relative error of the model's PRTT against the record's
``median_us``::

    rel = |predicted - measured| / measured

for every ``prtt`` record of the three patterns PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s)
(``orecv`` records are inputs of the fit, not judged). PRTT(n,d,s) is predicted with the
delay d the fit uses (:func:`record_delays`: ``d_us`` in current files, the plausible
``d_actual_us`` in older ones; see ``docs/fit.md``, section 1).

Sizes are grouped by decade of the size in bytes (1-9, 10-99, 100-999, ...; a size of 0
counts below 1); a decade with fewer than :data:`MIN_DECADE_POINTS` points joins the next,
and a short last group joins the one before it (:func:`decade_groups`).

:func:`cross_validate` holds out every k-th size (size index i in fold i mod k, so that each
fold spans the whole sweep), removes all records of those sizes, refits, and judges the
held-out records with the fold's model: the ``accuracy`` object of ``model-loggp.json``.
:func:`noise` gives the run's own noise per point, the limit a model can reach.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from railgauge.fit.loggp import (
    LoggpFit,
    ModelError,
    derive_series,
    fit_loggp,
    local_scatter,
    prtt,
    range_index,
)
from railgauge.hoststate import LEGACY_PROBE, format_band, pass_in, points_host_state
from railgauge.measurements import Measurements, PrttPoint, triples

__all__ = [
    "CHECK_DECADE_MEDIAN_REL",
    "CV_FAST_OPTIONS",
    "MIN_DECADE_POINTS",
    "PATTERNS",
    "RELIABLE_MEDIAN_REL",
    "RELIABLE_P90_REL",
    "PointError",
    "attach_accuracy",
    "by_decade",
    "cross_validate",
    "decade_groups",
    "judged_records",
    "noise",
    "per_range",
    "point_errors",
    "predictive_reliable",
    "record_delays",
    "summarize",
    "worst",
]

FloatArray = npt.NDArray[np.float64]

#: Fewest points of a decade group (a shorter decade joins the next).
MIN_DECADE_POINTS = 3
#: A range is reliable (predictive meaning) when its held-out points have a median
#: relative error <= RELIABLE_MEDIAN_REL and a 90th percentile <= RELIABLE_P90_REL.
RELIABLE_MEDIAN_REL = 0.05
RELIABLE_P90_REL = 0.12
#: `railgauge check` passes when every decade's median relative error is within this.
CHECK_DECADE_MEDIAN_REL = 0.10
#: The pattern names of the judged record kinds.
PATTERNS: dict[str, str] = {"p1": "PRTT(1,0,s)", "pn": "PRTT(n,0,s)", "pd": "PRTT(n,d,s)"}
#: Fit options that make a cross-validation fold cheaper without changing the fitted
#: values: the bootstrap only gives CIs, which the held-out errors do not use (the break
#: support, which decides the ranges, is kept).
CV_FAST_OPTIONS: dict[str, Any] = {"n_boot": 0}
#: How many of the worst points are listed.
N_WORST = 8
#: The worst held-out points named per range (its accuracy and its warning).
N_WORST_RANGE = 3

CV_METHOD = (
    "k-fold cross-validation over sizes: the distinct sizes of the PRTT records in ascending "
    "order, size index i in fold i mod k (every fold spans the whole sweep); for each fold "
    "all records of its sizes (PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s) and orecv) are removed, "
    "the model is refitted on the rest, and the fold's PRTT records are predicted with the "
    "fold's model; rel = |predicted - median_us| / median_us, PRTT(n,d,s) predicted with the "
    "delay d the fit uses. A fold whose fit fails is skipped and counted. The first size of "
    "each protocol range but the first of the model fitted to all sizes (anchored_sizes) "
    "stays in every fold and is not judged: held out, it lies between two measured sizes "
    "across a change, and which side a fold puts it on is the sweep's resolution, not the "
    "model's accuracy"
)
DECADE_RULE = (
    "decades of the size in bytes (1-9, 10-99, 100-999, ...); a decade with fewer than "
    f"{MIN_DECADE_POINTS} points joins the next, a short last group joins the one before it; "
    "from_bytes is the lower bound of the group's first decade"
)
NOISE_MEASURES: dict[str, str] = {
    "ci95_half_rel": "half-width of the record's 95% CI of the median / median_us: how "
    "precisely this run knows the median",
    "low_spread_rel": "(median_us - min_us) / median_us: the spread of the samples below "
    "their median (the fastest sample is not inflated by a preempted one, unlike stddev_us)",
    "local_scatter_rel": "robust local relative scatter of the point about its pattern's "
    "smooth curve over the neighbouring sizes (railgauge.fit.loggp.local_scatter): how far "
    "neighbouring medians scatter beyond their CIs",
    "visit_spread_rel": "(slowest - fastest) / fastest of the interquartile means of the "
    "record's passes made in the run's reference state of the host (railgauge-bench prtt "
    "visits every size in passes, each in its own order): how far the same point measured "
    "again in the same host state differs from visit to visit; None with fewer than two "
    "such passes (one pass, older files, Netgauge's)",
    "limit_rel": "max(ci95_half_rel, local_scatter_rel): the error a model cannot go below "
    "at that point (the headline median_rel / p90_rel)",
}


@dataclass(frozen=True)
class PointError:
    """The model's error at one PRTT record.

    ``kind`` is ``p1``, ``pn`` or ``pd``; ``pattern`` its name (``PRTT(n,d,s)``); ``d_us``
    the delay the prediction used (0 for PRTT(1,0,s) and PRTT(n,0,s)); ``rel`` =
    |predicted - measured| / measured with ``measured_us`` the record's median.
    ``fold`` is the cross-validation fold that held the point out (None outside
    cross-validation).
    """

    s: int
    kind: str
    n: int
    d_us: float
    measured_us: float
    predicted_us: float
    rel: float
    fold: int | None = None

    @property
    def pattern(self) -> str:
        return PATTERNS.get(self.kind, self.kind)

    @property
    def signed_rel(self) -> float:
        """(predicted - measured) / measured: > 0 where the model predicts too much."""
        return (self.predicted_us - self.measured_us) / self.measured_us

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "s": int(self.s),
            "pattern": self.pattern,
            "n": int(self.n),
            "d_us": float(self.d_us),
            "measured_us": float(self.measured_us),
            "predicted_us": float(self.predicted_us),
            "rel": float(self.rel),
            "signed_rel": float(self.signed_rel),
        }
        if self.fold is not None:
            out["fold"] = int(self.fold)
        return out


# --------------------------------------------------------------------------------------
# Point errors
# --------------------------------------------------------------------------------------


def judged_records(meas: Measurements) -> list[PrttPoint]:
    """The records that are judged: the PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) records
    with a positive median (``orecv`` and other records are not)."""
    return [p for p in meas.records if p.kind in PATTERNS and p.median_us > 0.0]


def record_delays(meas: Measurements) -> dict[tuple[int, int], float]:
    """The delay d the fit uses for each PRTT(n,d,s) record, keyed by (s, n).

    The fit's own rule (:func:`railgauge.fit.loggp.derive_series`, ``d``): ``d_us`` where
    no ``d_actual_us`` is recorded (current files: the samples are corrected to delays of
    exactly ``d_us``), else the recorded ``d_actual_us`` unless it is implausibly long
    (then ``d_us`` plus the typical overshoot). It applies to the record of each size that
    the fit uses (the largest n); any other PRTT(n,d,s) record of a size takes its own
    :attr:`~railgauge.measurements.PrttPoint.delay_us`.
    """
    out: dict[tuple[int, int], float] = {}
    for p in meas.records:
        if p.kind == "pd":
            out[(p.s, p.n)] = float(p.delay_us)
    tr = triples(meas)
    if len(tr):
        ds = derive_series(tr)
        for s, n, d in zip(tr.sizes, tr.n_pd, ds.d, strict=True):
            out[(int(s), int(n))] = float(d)
    return out


def _errors_of(
    model: LoggpFit,
    records: Sequence[PrttPoint],
    delays: Mapping[tuple[int, int], float],
    fold: int | None = None,
) -> list[PointError]:
    if not records:
        return []
    s = np.array([p.s for p in records], dtype=np.float64)
    n = np.array([p.n for p in records], dtype=np.float64)
    d = np.array(
        [delays.get((p.s, p.n), p.delay_us) if p.kind == "pd" else 0.0 for p in records],
        dtype=np.float64,
    )
    pred = np.atleast_1d(np.asarray(prtt(model, n=n, d=d, s=s), dtype=np.float64))
    out: list[PointError] = []
    for p, dd, yp in zip(records, d, pred, strict=True):
        m = float(p.median_us)
        out.append(
            PointError(
                s=int(p.s),
                kind=p.kind,
                n=int(p.n),
                d_us=float(dd),
                measured_us=m,
                predicted_us=float(yp),
                rel=abs(float(yp) - m) / m,
                fold=fold,
            )
        )
    return out


def point_errors(model: LoggpFit, meas: Measurements) -> list[PointError]:
    """The model's relative error at every judged PRTT record of ``meas`` (in the order
    of ``meas.records``: by size, then n, then d).

    Raises :class:`~railgauge.fit.loggp.ModelError` for a model without ranges.
    """
    return _errors_of(model, judged_records(meas), record_delays(meas))


# --------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------


def _q(values: FloatArray, q: float) -> float | None:
    return float(np.quantile(values, q)) if values.size else None


def _stats(values: Iterable[float]) -> dict[str, Any]:
    v = np.array([x for x in values if math.isfinite(x)], dtype=np.float64)
    return {
        "points": int(v.size),
        "median_rel": _q(v, 0.5),
        "p90_rel": _q(v, 0.9),
        "max_rel": float(v.max()) if v.size else None,
    }


def summarize(errors: Sequence[PointError]) -> dict[str, Any]:
    """``{"points", "median_rel", "p90_rel", "max_rel"}`` of the errors' ``rel`` (None
    for no points; the 90th percentile interpolates linearly between order statistics)."""
    return _stats(e.rel for e in errors)


def _decade_of(s: int) -> int:
    """floor(log10(s)) exactly for integers (-1 for s = 0)."""
    return len(str(int(s))) - 1 if s >= 1 else -1


def _decade_low(dec: int) -> int:
    return 0 if dec < 0 else 10**dec


def decade_groups(sizes: Sequence[int]) -> list[tuple[int, int, list[int]]]:
    """Groups point indices by decade of their size with the merge rule of the module.

    Returns ``(from_bytes, to_bytes, indices)`` per group, ascending: ``from_bytes`` the
    lower bound of the group's first decade (1, 10, 100, ...; 0 for a size of 0),
    ``to_bytes`` the upper bound of its last decade (9, 99, ...). Decades without points
    are not groups; a decade with fewer than :data:`MIN_DECADE_POINTS` points joins the
    next one, and a last group still short joins the group before it (if there is one).
    """
    by_dec: dict[int, list[int]] = {}
    for i, s in enumerate(sizes):
        by_dec.setdefault(_decade_of(int(s)), []).append(i)
    groups: list[tuple[int, int, list[int]]] = []
    pending: list[int] = []
    first_dec: int | None = None
    for dec in sorted(by_dec):
        if first_dec is None:
            first_dec = dec
        pending.extend(by_dec[dec])
        if len(pending) >= MIN_DECADE_POINTS:
            groups.append((_decade_low(first_dec), 10 ** (dec + 1) - 1, pending))
            pending, first_dec = [], None
    if pending:
        last_dec = max(by_dec)
        if groups:
            lo, _, idx = groups[-1]
            groups[-1] = (lo, 10 ** (last_dec + 1) - 1, idx + pending)
        else:
            assert first_dec is not None
            groups.append((_decade_low(first_dec), 10 ** (last_dec + 1) - 1, pending))
    return groups


def by_decade(errors: Sequence[PointError]) -> list[dict[str, Any]]:
    """``[{"from_bytes", "to_bytes", "median_rel", "p90_rel", "max_rel", "points"}, ...]``:
    the errors by decade of the size (:func:`decade_groups`)."""
    out: list[dict[str, Any]] = []
    for lo, hi, idx in decade_groups([e.s for e in errors]):
        st = _stats(errors[i].rel for i in idx)
        out.append(
            {
                "from_bytes": lo,
                "to_bytes": hi,
                "median_rel": st["median_rel"],
                "p90_rel": st["p90_rel"],
                "max_rel": st["max_rel"],
                "points": st["points"],
            }
        )
    return out


def worst(errors: Sequence[PointError], count: int = N_WORST) -> list[dict[str, Any]]:
    """The ``count`` largest errors as JSON objects, largest first."""
    top = sorted(errors, key=lambda e: (-e.rel, e.s, e.kind))[:count]
    return [e.to_json() for e in top]


def predictive_reliable(summary: Mapping[str, Any]) -> bool | None:
    """The predictive meaning of ``reliable``: median <= 5% and p90 <= 12% of the held-out
    errors (None without points)."""
    med, p90 = summary.get("median_rel"), summary.get("p90_rel")
    if med is None or p90 is None:
        return None
    return bool(med <= RELIABLE_MEDIAN_REL and p90 <= RELIABLE_P90_REL)


def per_range(model: LoggpFit, errors: Sequence[PointError]) -> list[dict[str, Any]]:
    """Per range of ``model``: the errors of the points whose size falls in it
    ({points, median_rel, p90_rel, max_rel}) and ``reliable`` (:func:`predictive_reliable`).
    """
    idx = (
        np.atleast_1d(range_index(model, np.array([e.s for e in errors], dtype=np.float64)))
        if errors
        else np.zeros(0, dtype=np.int64)
    )
    out: list[dict[str, Any]] = []
    for r, rng in enumerate(model.ranges):
        mine = [e for e, i in zip(errors, idx, strict=True) if int(i) == r]
        st = _stats(e.rel for e in mine)
        out.append(
            {
                "from_bytes": int(rng.from_bytes),
                "to_bytes": None if rng.to_bytes is None else int(rng.to_bytes),
                **st,
                "reliable": predictive_reliable(st),
                "worst": worst(mine, N_WORST_RANGE),
            }
        )
    return out


def worst_text(points: Sequence[Mapping[str, Any]]) -> str:
    """The worst held-out points of a range in words: "PRTT(n,0,s) at 131072 B: 861.5 us
    measured, 455.5 predicted (-47%)", joined by "; "."""
    return "; ".join(
        f"{w['pattern']} at {w['s']} B: {w['measured_us']:.4g} us measured, "
        f"{w['predicted_us']:.4g} predicted ({100.0 * w['signed_rel']:+.0f}%)"
        for w in points
    )


# --------------------------------------------------------------------------------------
# Cross-validation
# --------------------------------------------------------------------------------------


def _judged_sizes(meas: Measurements) -> list[int]:
    return sorted({p.s for p in judged_records(meas)})


def anchored_sizes(model: LoggpFit, sizes: Sequence[int]) -> list[int]:
    """The sizes that stay in every fold: of each protocol range but the first of
    ``model``, its first size among ``sizes`` (the size the change was found at)."""
    if not model.success or len(model.ranges) < 2:
        return []
    out: list[int] = []
    ordered = sorted(sizes)
    for rng in model.ranges[1:]:
        first = next((s for s in ordered if s >= rng.from_bytes), None)
        if first is not None and (rng.to_bytes is None or first <= rng.to_bytes) \
                and first not in out:
            out.append(first)
    return out


def cross_validate(
    meas: Measurements,
    *,
    k: int = 5,
    seed: int = 0,
    fit: Callable[..., LoggpFit] | None = None,
    model: LoggpFit | None = None,
    **fit_options: Any,
) -> dict[str, Any]:
    """k-fold cross-validation of the LogGP fit over sizes: the ``accuracy`` object.

    Parameters
    ----------
    meas
        The measurements the model is fitted to.
    k
        Folds (>= 5, at most the number of sizes): size index i (ascending) in fold i mod k.
    seed
        Passed to every fold's fit (``seed=seed``).
    fit
        ``fit(measurements, seed=seed, **fit_options) -> LoggpFit``; default
        :func:`railgauge.fit.loggp.fit_loggp`.
    model
        The model fitted to all of ``meas``, whose ranges ``per_range`` reports on; None
        fits it here with the same ``fit`` and options.
    fit_options
        Passed to ``fit``; :data:`CV_FAST_OPTIONS` makes each fold cheaper without changing
        the fitted values.

    Returns
    -------
    dict
        ``held_out`` ({points, median_rel, p90_rel, max_rel}) and ``by_decade`` (the
        contract), plus ``k``, ``anchored_sizes`` (:func:`anchored_sizes`: in every fold,
        not judged), ``folds`` (per fold: sizes, points, median_rel, or the reason it was
        skipped), ``skipped_folds``, ``per_range`` (the held-out errors of the points
        in each range of ``model`` and whether they meet the predictive ``reliable``
        targets), ``worst`` (the largest held-out errors), ``method``, ``decades``,
        ``fit_options``.

    Raises
    ------
    ValueError
        ``k`` < 5, or fewer sizes than folds.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 5:
        raise ValueError(f"cross-validation needs k >= 5 folds, got {k!r}")
    sizes = _judged_sizes(meas)
    if len(sizes) < k:
        raise ValueError(f"cross-validation with k={k} needs at least {k} sizes, got {len(sizes)}")
    do_fit: Callable[..., LoggpFit] = fit if fit is not None else fit_loggp
    full = model
    if full is None:
        try:
            full = do_fit(meas, seed=seed, **fit_options)
        except ValueError:
            full = None
    anchors = anchored_sizes(full, sizes) if full is not None else []
    anchor_set = set(anchors)
    free = [s for s in sizes if s not in anchor_set]
    if len(free) < k:
        free, anchors = sizes, []
    fold_of = {s: i % k for i, s in enumerate(free)}
    delays = record_delays(meas)
    judged = judged_records(meas)
    errors: list[PointError] = []
    folds: list[dict[str, Any]] = []
    skipped = 0
    for f in range(k):
        held = {s for s, ff in fold_of.items() if ff == f}
        train = dataclasses.replace(
            meas, records=[p for p in meas.records if p.s not in held]
        )
        entry: dict[str, Any] = {"fold": f, "sizes": len(held)}
        try:
            fold_model = do_fit(train, seed=seed, **fit_options)
            if not fold_model.success or not fold_model.ranges:
                raise ModelError(fold_model.message or "the fit failed")
            errs = _errors_of(fold_model, [p for p in judged if p.s in held], delays, fold=f)
        except ValueError as exc:  # ModelError and MeasurementError are ValueErrors
            skipped += 1
            entry["skipped"] = str(exc)
            folds.append(entry)
            continue
        errors.extend(errs)
        st = summarize(errs)
        entry.update(points=st["points"], median_rel=st["median_rel"], p90_rel=st["p90_rel"])
        folds.append(entry)
    errors.sort(key=lambda e: (e.s, e.kind, e.n))
    ranges = (
        per_range(full, errors) if full is not None and full.success and full.ranges else []
    )
    return {
        "held_out": summarize(errors),
        "by_decade": by_decade(errors),
        "k": k,
        "anchored_sizes": anchors,
        "per_range": ranges,
        "worst": worst(errors),
        "folds": folds,
        "skipped_folds": skipped,
        "reliable_rule": {
            "median_rel_max": RELIABLE_MEDIAN_REL,
            "p90_rel_max": RELIABLE_P90_REL,
        },
        "method": CV_METHOD,
        "decades": DECADE_RULE,
        "fit_options": {"seed": seed, **_plain(fit_options)},
    }


def attach_accuracy(
    model: LoggpFit, meas: Measurements, *, k: int = 5, seed: int = 0, **fit_options: Any
) -> LoggpFit:
    """Cross-validates ``model`` (fitted to ``meas`` with ``fit_options``) and writes what
    it finds into it: ``model.accuracy`` (:func:`cross_validate`'s object with the run's
    own :func:`noise` beside it, under ``noise``), each range's ``accuracy`` and the
    predictive meaning of ``reliable``: a range whose held-out points miss by a median
    above 5% or a p90 above 12% is not reliable, and a warning says by how much
    (docs/fit.md, section 4). Folds are fitted with ``n_boot = 0`` (the bootstrap changes
    the CIs, not the fitted values). A run with fewer sizes than folds gets an accuracy
    object without points and a reason. Returns ``model``."""
    if not model.success or not model.ranges:
        return model
    opts = {**fit_options, **CV_FAST_OPTIONS}
    try:
        acc = cross_validate(meas, k=k, seed=seed, model=model, **opts)
    except ValueError as exc:
        model.accuracy = {
            "held_out": summarize([]),
            "by_decade": [],
            "k": k,
            "reason": str(exc),
            "noise": noise(meas),
        }
        return model
    band = reference_band(meas)
    acc["noise"] = noise(meas, band=band)
    model.accuracy = acc
    state_note = host_state_note(acc["noise"]["host_states"], model.source.get("host_state"))
    if state_note is not None:
        model.network.setdefault("notes", []).append(state_note)
    visits = visit_spread_by_range(model, meas, band)
    for rng, pr, vs in zip(model.ranges, acc["per_range"], visits, strict=True):
        rng.accuracy = {
            key: pr.get(key)
            for key in ("points", "median_rel", "p90_rel", "max_rel", "reliable", "worst")
        }
        rng.accuracy["visit_spread"] = vs
        if pr.get("reliable") is False:
            rng.reliable = False
            rng.warnings.append(
                f"the range predicts its held-out points ({pr['points']}, {k}-fold "
                f"cross-validation over sizes) with a median error of "
                f"{100.0 * pr['median_rel']:.1f}% and a p90 of {100.0 * pr['p90_rel']:.1f}% "
                f"(reliable needs <= {100.0 * RELIABLE_MEDIAN_REL:g}% and "
                f"<= {100.0 * RELIABLE_P90_REL:g}%); the worst: "
                f"{worst_text(pr.get('worst') or [])}{visit_text(vs)}"
            )
    held = acc["held_out"]
    if held.get("points"):
        model.message += (
            f"; held out ({k}-fold over sizes): median {100.0 * held['median_rel']:.1f}%, "
            f"p90 {100.0 * held['p90_rel']:.1f}%"
        )
    return model


def visit_spread_by_range(model: LoggpFit, meas: Measurements,
                          band: tuple[float, float] | None) -> list[dict[str, Any]]:
    """Per range of ``model``: the :func:`visit_spread` of the judged records whose size
    falls in it (passes in ``band``, the run's :func:`reference_band`), ``{"points",
    "median_rel", "p90_rel", "max_rel", "at"}`` (``at``: the record of the largest,
    ``{"s", "pattern"}``, None without points)."""
    recs = [(p, v) for p in judged_records(meas)
            if (v := visit_spread(p, band)) is not None]
    idx = (np.atleast_1d(range_index(model, np.array([p.s for p, _ in recs], dtype=np.float64)))
           if recs else np.zeros(0, dtype=np.int64))
    out: list[dict[str, Any]] = []
    for r in range(len(model.ranges)):
        mine = [(p, v) for (p, v), i in zip(recs, idx, strict=True) if int(i) == r]
        top = max(mine, key=lambda pv: pv[1]) if mine else None
        out.append({
            **_stats(v for _, v in mine),
            "at": None if top is None else {"s": int(top[0].s),
                                            "pattern": PATTERNS[top[0].kind]},
        })
    return out


def visit_text(vs: Mapping[str, Any]) -> str:
    """The sentence an unreliable range's warning gains where its points differ from visit
    to visit by more than the reliable p90 (:data:`RELIABLE_P90_REL`): the points measured
    again in one state of the host do not repeat to within what the model is asked for."""
    p90 = vs.get("p90_rel")
    if not isinstance(p90, float) or p90 <= RELIABLE_P90_REL:
        return ""
    at = vs.get("at") or {}
    return (
        f"; its points measured again in the same state of the host differ from visit to "
        f"visit by a p90 of {100.0 * p90:.1f}% (up to {100.0 * float(vs['max_rel']):.0f}%, "
        f"{at.get('pattern', '?')} at {at.get('s', '?')} B; {vs['points']} records): at "
        "these sizes the transport's round trip depends on the visit (what it carried before, "
        "other load at the time), "
        "more than a line through the sizes can follow (docs/fit.md, section 8)"
    )


def _plain(opts: Mapping[str, Any]) -> dict[str, Any]:
    return {
        str(key): v if isinstance(v, bool | int | float | str | None) else repr(v)
        for key, v in opts.items()
    }


# --------------------------------------------------------------------------------------
# The run's own noise
# --------------------------------------------------------------------------------------


#: Passes of one point further apart than this ratio (slowest / fastest) measured two
#: states of the host, not noise (docs/fit.md, section 1: "The host's two states").
HOST_STATE_RATIO = 2.0
#: The share of such points above which the model says so.
HOST_STATE_SHARE = 0.05


def host_states(meas: Measurements) -> dict[str, Any] | None:
    """How many records of a run in passes have passes more than HOST_STATE_RATIO apart
    (the host changed speed while the run measured them): ``points`` (records with two
    passes or more), ``split``, ``share``, ``max_ratio`` and the median ratio of the split
    ones; None for a run without passes."""
    ratios = [max(p.pass_iqm_us) / min(p.pass_iqm_us) for p in judged_records(meas)
              if p.pass_iqm_us is not None and len(p.pass_iqm_us) >= 2]
    if not ratios:
        return None
    split = [r for r in ratios if r > HOST_STATE_RATIO]
    return {
        "points": len(ratios),
        "split": len(split),
        "share": len(split) / len(ratios),
        "ratio_threshold": HOST_STATE_RATIO,
        "max_ratio": max(ratios),
        "median_split_ratio": float(np.median(split)) if split else None,
    }


def host_state_note(states: Mapping[str, Any] | None,
                    probe: Mapping[str, Any] | None = None) -> str | None:
    """A sentence for the model where the host changed speed during the run; ``probe``
    (:func:`railgauge.hoststate.host_state` of the run) names the state its points keep."""
    if states is None or states["share"] < HOST_STATE_SHARE:
        return None
    kept = "each point keeps its fastest passes"
    band = probe.get("band_us") if probe is not None else None
    if probe is not None and isinstance(band, list) and len(band) == 2:
        name = str(probe.get("probe", LEGACY_PROBE))
        kept = (f"each point keeps its passes made in the state most points were measured "
                f"in ({probe.get('in_band')} of {probe.get('points')}: probe "
                f"{name} {format_band(name, band[0], band[1])})")
    return (
        f"the host changed speed during this run: at {states['split']} of {states['points']} "
        f"points the passes differ by more than {HOST_STATE_RATIO:g}x (median "
        f"{states['median_split_ratio']:.2f}x, up to {states['max_ratio']:.2f}x); {kept}, "
        "but a run made wholly in another state measures that state, so compare runs "
        "made in the same one (railgauge check says whether two runs are; docs/fit.md, "
        "section 1)"
    )


def _nan_if_none(v: float | None) -> float:
    return math.nan if v is None else v


def reference_band(meas: Measurements) -> tuple[float, float] | None:
    """The band of probes of the run's reference state of the host (the passes each point
    keeps were made in it: :func:`railgauge.hoststate.points_host_state`); None for a run
    without probes."""
    st = points_host_state(meas.records, meas.header)
    band = st.get("band_us") if st is not None else None
    if isinstance(band, list) and len(band) == 2:
        return float(band[0]), float(band[1])
    return None


def visit_spread(p: PrttPoint, band: tuple[float, float] | None) -> float | None:
    """(slowest - fastest) / fastest of the interquartile means of the passes of ``p``
    whose probes before and after both lie in ``band`` (a pass without a probe counts;
    ``band`` None: every pass): the spread of one point from visit to visit in one state
    of the host. None with fewer than two such passes."""
    iqm = p.pass_iqm_us
    if iqm is None or len(iqm) < 2:
        return None
    before = list(p.pass_state_us or ())
    after = list(p.pass_state_after_us or ())
    kept = [float(v) for j, v in enumerate(iqm)
            if band is None or pass_in((before[j] if j < len(before) else 0.0,
                                        after[j] if j < len(after) else 0.0), *band)]
    if len(kept) < 2 or min(kept) <= 0.0:
        return None
    return max(kept) / min(kept) - 1.0


def noise(meas: Measurements, *, band: tuple[float, float] | None = None) -> dict[str, Any]:
    """The run's own noise per judged PRTT record, summarised and by decade.

    Per record (see :data:`NOISE_MEASURES`): ``ci95_half_rel`` (the CI of the median
    relative to it; None without a CI), ``low_spread_rel`` (None without a min_us),
    ``local_scatter_rel`` (scatter about the smooth curve of the record's pattern and n;
    0 where a pattern has fewer than 5 sizes), ``visit_spread_rel`` (:func:`visit_spread`;
    None with fewer than two passes in the run's reference state) and ``limit_rel`` =
    max(ci95_half_rel, local_scatter_rel). The top-level ``median_rel``, ``p90_rel`` and the
    ``by_decade`` medians are those of ``limit_rel``; each measure also has its own median
    and p90. ``band``: the run's :func:`reference_band` where the caller has it (None: found
    here; a run without probes has none either way).
    """
    recs = judged_records(meas)
    scatter = np.zeros(len(recs))
    series: dict[tuple[str, int], list[int]] = {}
    for i, p in enumerate(recs):
        series.setdefault((p.kind, p.n), []).append(i)
    for idx in series.values():
        idx = sorted(idx, key=lambda i: recs[i].s)
        sc = local_scatter([recs[i].s for i in idx], [recs[i].median_us for i in idx])
        scatter[idx] = sc
    ci_rel = np.array(
        [
            (p.ci95_median_us[1] - p.ci95_median_us[0]) / (2.0 * p.median_us)
            if p.ci95_median_us is not None
            else math.nan
            for p in recs
        ]
    )
    low_rel = np.array(
        [(p.median_us - p.min_us) / p.median_us if p.min_us is not None else math.nan
         for p in recs]
    )
    ref = reference_band(meas) if band is None else band
    visit = np.array([_nan_if_none(visit_spread(p, ref)) for p in recs], dtype=np.float64)
    limit = np.fmax(ci_rel, scatter)
    measures = {
        "ci95_half_rel": ci_rel,
        "low_spread_rel": low_rel,
        "local_scatter_rel": scatter,
        "visit_spread_rel": visit,
        "limit_rel": limit,
    }

    def med_p90(v: FloatArray) -> dict[str, Any]:
        st = _stats(v.tolist())
        return {"median": st["median_rel"], "p90": st["p90_rel"]}

    decades: list[dict[str, Any]] = []
    for lo, hi, idx in decade_groups([p.s for p in recs]):
        sel = np.array(idx, dtype=np.int64)
        entry: dict[str, Any] = {
            "from_bytes": lo,
            "to_bytes": hi,
            "median_rel": med_p90(limit[sel])["median"],
            "points": len(idx),
        }
        for name, v in measures.items():
            if name != "limit_rel":
                entry[name] = med_p90(v[sel])["median"]
        decades.append(entry)
    head = _stats(limit.tolist())
    return {
        "points": len(recs),
        "median_rel": head["median_rel"],
        "p90_rel": head["p90_rel"],
        **{name: med_p90(v) for name, v in measures.items() if name != "limit_rel"},
        "by_decade": decades,
        "measures": dict(NOISE_MEASURES),
        "host_states": host_states(meas),
    }
