"""LoP (Hoefler & Rehm): the six-lambda RTT(p) per onen series (:mod:`railgauge.fit.lop`).

    RTT(p)/p    = l1/(l2 + p) + l3 + l4 (1 - exp(l5 (p - l6)))   fitted per (direction,
                                                                  mode, s) series
    PRTT(1,0,s) = RTT(1) of the first 1:n series                  one ping-pong with one
                                                                  peer, for any s

LoP is a model of small messages addressed to p peers, one message per peer: it has no
size parameter and does not describe trains of messages to one peer, so PRTT(n,0,s) and
PRTT(n,d,s) (n > 1) are outside it (not predicted: they count against its coverage). A
series needs at least 6 distinct p in the training points; the fit falls back to simpler
forms where the six-lambda form does not converge (see :func:`railgauge.fit.lop.fit_rtt`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from railgauge.fit.lop import RTT_PARAMS, CurveFit, LopInputError, fit_rtt
from railgauge.models.base import Dataset, FloatArray, NotApplicable, Point
from railgauge.onen import DIRECTIONS, MODES

__all__ = ["MODEL", "LopModel"]

SeriesId = tuple[str, str, int]


def _series_of(pt: Point) -> SeriesId:
    return (pt.direction, pt.mode, pt.s)


def _order(key: SeriesId) -> tuple[int, int, int]:
    return (DIRECTIONS.index(key[0]) if key[0] in DIRECTIONS else 9,
            MODES.index(key[1]) if key[1] in MODES else 9, key[2])


@dataclass
class _Fitted:
    curves: dict[SeriesId, CurveFit]
    skipped: dict[SeriesId, str]
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def primary(self) -> CurveFit | None:
        keys = sorted(self.curves, key=_order)
        return self.curves[keys[0]] if keys else None

    def scope(self, point: Point) -> str | None:
        if point.kind == "onen":
            key = _series_of(point)
            if key in self.curves:
                return None
            return self.skipped.get(key, "no LoP fit of this series")
        if point.n == 1 and point.d_us == 0.0:
            return None if self.primary is not None else "no 1:n series fitted"
        return "LoP does not describe trains of messages to one peer (PRTT with n > 1)"

    def predict(self, points: Sequence[Point]) -> FloatArray:
        out = np.full(len(points), math.nan)
        for i, pt in enumerate(points):
            if self.scope(pt) is not None:
                continue
            curve = self.curves[_series_of(pt)] if pt.kind == "onen" else self.primary
            assert curve is not None
            out[i] = float(curve(float(pt.p)))
        return out


class LopModel:
    name: str = "lop"
    title: str = "LoP"
    params: tuple[str, ...] = tuple(f"l{i}" for i in range(1, RTT_PARAMS + 1))
    uses: tuple[str, ...] = ("onen",)
    description: str = "the six-lambda RTT(p) per 1:n / n:1 series; small messages only"

    def fit(self, train: Sequence[Point], data: Dataset) -> _Fitted:
        groups: dict[SeriesId, list[Point]] = {}
        for pt in train:
            if pt.kind == "onen":
                groups.setdefault(_series_of(pt), []).append(pt)
        if not groups:
            raise NotApplicable("LoP is fitted to onen (1:n / n:1) measurements; there are none")
        curves: dict[SeriesId, CurveFit] = {}
        skipped: dict[SeriesId, str] = {}
        for key in sorted(groups, key=_order):
            pts = groups[key]
            try:
                curves[key] = fit_rtt([pt.p for pt in pts], [pt.y_us for pt in pts])
            except LopInputError as exc:
                skipped[key] = str(exc)
        if not curves:
            why = dict.fromkeys(skipped.values())
            raise NotApplicable("LoP has 6 parameters per series: " + "; ".join(why))
        params = {f"{d} {m} s={s}": {"form": c.form, "lambda": c.lam}
                  for (d, m, s), c in curves.items()}
        notes = [f"{d} {m} s={s}: {c.message}" for (d, m, s), c in curves.items() if c.fallback]
        notes += [f"{d} {m} s={s} not fitted: {why}" for (d, m, s), why in skipped.items()]
        if any(pt.kind == "prtt" for pt in data.points):
            notes.append("predicts PRTT(1,0,s) as RTT(1) for every s; trains (n > 1) are "
                         "outside the model")
        return _Fitted(curves, skipped, params, notes)


MODEL = LopModel()
