"""``railgauge compare-models``: which model predicts this machine best.

PRAM, BSP, LogP, LogGP and LoP (:mod:`railgauge.models`) are fitted to the same
measurements, PRTT points of ``railgauge gauge`` / ``measure`` and onen points of
``railgauge-bench onen`` (:mod:`railgauge.models.base` defines both), and each predicts
points it did not see:

* **over s**: the measured sizes, sorted, are dealt round-robin into K folds (interleaved, so
  every fold interpolates over the whole sweep); a fold's PRTT points (all patterns of its
  sizes) are held out, everything else trains;
* **over p**: likewise the p of every onen series are dealt into K folds, and a fold's onen
  points of all series are held out; where K folds would leave a series fewer than 6
  training p (LoP's six lambdas), it is leave-one-out instead.

Every point is predicted exactly once, by a fit that did not see it. The error of a
prediction is |predicted - measured| / measured; a model's score is the **median absolute
relative error** (MdARE) of its predictions. A model that does not describe some points
(LoP: PRTT trains) has coverage < 1 and ranks after every model that predicts all points;
among equals the smaller MdARE ranks first. The exact definitions: ``docs/lop.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from railgauge.jsonvalues import finite_json
from railgauge.measurements import Measurements, read_measurements
from railgauge.models import MODELS, Dataset, Fitted, Model, NotApplicable, Point
from railgauge.models.base import FloatArray
from railgauge.onen import OnenData, is_onen_file, read_onen

__all__ = [
    "Comparison",
    "ModelResult",
    "build_dataset",
    "compare_models",
    "read_inputs",
]

#: Fewest training p a series keeps in a K-fold split over p (LoP has six lambdas).
MIN_TRAIN_P = 6
METRIC = "median absolute relative error |predicted - measured| / measured of held-out points"


def read_inputs(paths: Sequence[str | Path]) -> tuple[Measurements | None, OnenData | None]:
    """Reads PRTT JSON Lines and onen files (JSON Lines or CSV), told apart by content."""
    onen_paths = [p for p in paths if is_onen_file(p)]
    prtt_paths = [p for p in paths if p not in onen_paths]
    meas = read_measurements(prtt_paths) if prtt_paths else None
    onen = read_onen(onen_paths) if onen_paths else None
    return meas, onen


def _prtt_label(pt: Any) -> str | None:
    return {"p1": "PRTT(1,0,s)", "pn": "PRTT(n,0,s)", "pd": "PRTT(n,d,s)"}.get(pt.kind)


def build_dataset(prtt: Measurements | None, onen: OnenData | None, *,
                  stat: str = "median") -> tuple[Dataset, list[str]]:
    """The points to predict, and notes on what was assumed."""
    if stat not in ("min", "median"):
        raise ValueError(f"stat must be 'min' or 'median', got {stat!r}")
    notes: list[str] = []
    points: list[Point] = []
    if prtt is not None:
        for rec in prtt.records:
            label = _prtt_label(rec)
            if label is None or rec.value_us <= 0.0:
                continue
            points.append(Point(kind="prtt", y_us=rec.value_us, s=rec.s, label=label, n=rec.n,
                                d_us=rec.delay_us, ref=rec))
    if onen is not None:
        other = "median" if stat == "min" else "min"
        swapped = no_size = 0
        for opt in onen.points:
            st = stat if opt.rtt(stat) is not None else other
            swapped += st != stat
            value = opt.per_peer(st)
            if value is None:
                continue
            no_size += opt.s is None
            points.append(Point(kind="onen", y_us=value, s=opt.s if opt.s is not None else 1,
                                label=f"RTT(p)/p {opt.direction} {opt.mode}", p=opt.p,
                                direction=opt.direction, mode=opt.mode, ref=opt))
        if swapped:
            notes.append(f"{swapped} onen point(s) have no {stat} round time; their {other} "
                         "is used")
        if no_size:
            notes.append(f"{no_size} onen point(s) give no message size: s = 1 B assumed")
    if not points:
        raise ValueError("no points to compare: the inputs hold no PRTT or onen measurements")
    return Dataset(points=points, prtt=prtt, onen=onen, stat=stat), notes


@dataclass
class ModelResult:
    """One model's held-out predictions and scores (``predicted`` aligned with the points;
    NaN where not predicted)."""

    name: str
    title: str
    n_params: int
    description: str
    status: str
    reason: str
    predicted: FloatArray
    why_not: list[str | None]
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    rank: int | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def covered(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        return np.isfinite(self.predicted)


@dataclass
class Comparison:
    """The result of :func:`compare_models`: the points and the ranked models."""

    dataset: Dataset
    results: list[ModelResult]
    folds: int
    s_folds: int
    p_folds: int
    notes: list[str] = field(default_factory=list)

    @property
    def measured(self) -> FloatArray:
        return np.array([pt.y_us for pt in self.dataset.points], dtype=np.float64)

    def ranking(self, kind: str | None = None) -> list[str]:
        """Model names, best first (over all points, or over the points of one kind)."""
        if kind is None:
            return [r.name for r in self.results if r.rank is not None]
        rows = [r for r in self.results if kind in r.summary.get("by_kind", {})
                and r.summary["by_kind"][kind].get("rank") is not None]
        return [r.name for r in sorted(rows, key=lambda r: r.summary["by_kind"][kind]["rank"])]

    def to_json(self, *, plot: str | None = None) -> dict[str, Any]:
        pts = self.dataset.points
        preds = []
        for i, pt in enumerate(pts):
            row: dict[str, Any] = {"kind": pt.kind, "label": pt.label, "s": pt.s,
                                   "measured_us": pt.y_us}
            if pt.kind == "prtt":
                row.update({"n": pt.n, "d_us": pt.d_us})
            else:
                row.update({"p": pt.p, "direction": pt.direction, "mode": pt.mode})
            row["predicted_us"] = {r.name: _num(r.predicted[i]) for r in self.results}
            preds.append(row)
        return finite_json({
            "metric": METRIC,
            "ranking": self.ranking(),
            "ranking_by_kind": {k: self.ranking(k) for k in self.dataset.kinds()},
            "models": [
                {
                    "rank": r.rank,
                    "name": r.name,
                    "title": r.title,
                    "parameters": r.n_params,
                    "description": r.description,
                    "status": r.status,
                    "reason": r.reason,
                    **r.summary,
                    "params": r.params,
                    "notes": r.notes,
                }
                for r in self.results
            ],
            "cv": {
                "folds": self.folds,
                "s_folds": self.s_folds,
                "p_folds": self.p_folds,
                "scheme": (
                    "PRTT points held out by size (sizes dealt round-robin into s_folds folds), "
                    "onen points by p (each series' p dealt round-robin into p_folds folds; "
                    f"leave-one-out where a series would keep fewer than {MIN_TRAIN_P} training "
                    "p); every point predicted once by a fit that did not see it"
                ),
            },
            "points": {k: sum(pt.kind == k for pt in pts) for k in self.dataset.kinds()},
            "stat": self.dataset.stat,
            "notes": self.notes,
            "plot": plot,
            "predictions": preds,
        })


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(float(v)) else None


def _folds(points: Sequence[Point], k: int) -> tuple[list[int], int, int]:
    """Fold id of every point (-1: never held out), the s folds and the p folds."""
    fold = [-1] * len(points)
    sizes = sorted({pt.s for pt in points if pt.kind == "prtt"})
    ks = min(k, len(sizes))
    s_fold = {s: i % ks for i, s in enumerate(sizes)} if ks else {}
    series: dict[tuple[str, str, int], list[int]] = {}
    for pt in points:
        if pt.kind == "onen":
            series.setdefault((pt.direction, pt.mode, pt.s), []).append(pt.p)
    kp = 0
    p_fold: dict[tuple[str, str, int, int], int] = {}
    for key, plist in series.items():
        ps = sorted(set(plist))
        kk = min(k, len(ps))
        if kk and len(ps) - math.ceil(len(ps) / kk) < MIN_TRAIN_P:
            kk = len(ps)  # leave-one-out
        kp = max(kp, kk)
        for i, p in enumerate(ps):
            p_fold[(*key, p)] = i % kk
    for i, pt in enumerate(points):
        if pt.kind == "prtt" and ks:
            fold[i] = s_fold[pt.s]
        elif pt.kind == "onen":
            fold[i] = ks + p_fold[(pt.direction, pt.mode, pt.s, pt.p)]
    return fold, ks, kp


def _summary(meas: FloatArray, pred: FloatArray, kinds: Sequence[str]) -> dict[str, Any]:
    def block(mask: np.ndarray[Any, np.dtype[np.bool_]]) -> dict[str, Any]:
        n = int(mask.sum())
        ok = mask & np.isfinite(pred)
        are = np.abs(pred[ok] - meas[ok]) / meas[ok]
        out: dict[str, Any] = {"points": n, "predicted": int(ok.sum()),
                               "coverage": float(ok.sum() / n) if n else 0.0}
        if are.size:
            out.update({"mdare": float(np.median(are)), "mean_are": float(np.mean(are)),
                        "p90_are": float(np.quantile(are, 0.9)), "max_are": float(np.max(are))})
        else:
            out.update({"mdare": None, "mean_are": None, "p90_are": None, "max_are": None})
        return out

    kind_arr = np.array(kinds)
    out = block(np.ones(meas.size, dtype=bool))
    out["by_kind"] = {k: block(kind_arr == k) for k in dict.fromkeys(kinds)}
    return out


def _rank_key(s: dict[str, Any]) -> tuple[int, float]:
    return (0 if s["coverage"] >= 1.0 else 1, s["mdare"] if s["mdare"] is not None else math.inf)


def compare_models(
    data: Dataset,
    *,
    models: Sequence[Model] | None = None,
    folds: int = 5,
) -> Comparison:
    """Cross-validates every model on the data set and ranks them (see the module docstring).

    A model that cannot be fitted in a fold (too few training points for its parameters,
    a kind of data it needs is missing) leaves that fold's points unpredicted; a model
    that cannot be fitted to the whole data set is reported as not fitted, with the reason.
    """
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds}")
    model_list = list(MODELS.values()) if models is None else list(models)
    pts = data.points
    meas = np.array([pt.y_us for pt in pts], dtype=np.float64)
    fold, ks, kp = _folds(pts, folds)
    fold_ids = sorted({f for f in fold if f >= 0})
    results: list[ModelResult] = []
    for model in model_list:
        pred = np.full(len(pts), math.nan)
        why: list[str | None] = [None] * len(pts)
        cache: dict[tuple[int, ...], Fitted | str] = {}

        def fitted(train_idx: list[int], model: Model = model,
                   cache: dict[tuple[int, ...], Fitted | str] = cache) -> Fitted | str:
            used = tuple(i for i in train_idx if pts[i].kind in model.uses)
            if used not in cache:
                try:
                    cache[used] = model.fit([pts[i] for i in train_idx], data)
                except NotApplicable as exc:
                    cache[used] = str(exc)
            return cache[used]

        for f in fold_ids:
            held = [i for i, fi in enumerate(fold) if fi == f]
            train = [i for i, fi in enumerate(fold) if fi != f]
            fit = fitted(train)
            if isinstance(fit, str):
                for i in held:
                    why[i] = fit
                continue
            values = fit.predict([pts[i] for i in held])
            for i, v in zip(held, values, strict=True):
                reason = fit.scope(pts[i])
                if reason is None and math.isfinite(float(v)) and float(v) > 0.0:
                    pred[i] = float(v)
                else:
                    why[i] = reason or f"non-positive prediction {float(v):.4g}"
        full = fitted(list(range(len(pts))))
        status, reason, params, notes = "ok", "", {}, []
        if isinstance(full, str):
            status, reason = "not fitted", full
        else:
            params, notes = dict(full.params), list(full.notes)
        missing = sorted({w for w in why if w is not None})
        res = ModelResult(
            name=model.name, title=model.title, n_params=len(model.params),
            description=model.description, status=status, reason=reason, predicted=pred,
            why_not=why, params=params, notes=notes + [f"not predicted: {w}" for w in missing],
        )
        res.summary = _summary(meas, pred, [pt.kind for pt in pts])
        if status == "ok" and res.summary["predicted"] == 0:
            res.status, res.reason = "not fitted", missing[0] if missing else "no predictions"
        results.append(res)
    ranked = sorted((r for r in results if r.status == "ok"), key=lambda r: _rank_key(r.summary))
    for i, r in enumerate(ranked, start=1):
        r.rank = i
    for kind in data.kinds():
        rows = [r for r in ranked if r.summary["by_kind"][kind]["predicted"] > 0]
        for i, r in enumerate(sorted(rows, key=lambda r: _rank_key(r.summary["by_kind"][kind])),
                              start=1):
            r.summary["by_kind"][kind]["rank"] = i
        for r in results:
            r.summary["by_kind"][kind].setdefault("rank", None)
    results = ranked + [r for r in results if r.status != "ok"]
    return Comparison(dataset=data, results=results, folds=folds, s_folds=ks, p_folds=kp)
