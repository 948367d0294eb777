"""LogP (Culler et al. 1993): latency L, overhead o, gap g; no size parameter.

Small messages of a fixed size, so the same times for every s::

    PRTT(1,0,s) = 2 L + 4 o                          (a ping-pong: two sends, two receives)
    PRTT(n,d,s) = 2 L + 4 o + (n-1) max(o + d, g)    (d = 0: max(o, g); the sender is busy
                                                      o + d per message, or waits for g)
    RTT(p)/p    = (4 o + 2 L + (p-1) max(g, o)) / p  (the slides' 1:n n:1 prediction)

L, o, g >= 0 are fitted by least squares on relative errors (``scipy.optimize.least_squares``
from a fixed grid of starting points; the lowest cost wins).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from railgauge.models.base import Dataset, FloatArray, Point, need_points

__all__ = ["MODEL", "LogpModel", "logp_predict"]


def logp_predict(points: Sequence[Point], L: float, o: float, g: float) -> FloatArray:
    """LogP's time for each point (see the module docstring)."""
    out = np.empty(len(points), dtype=np.float64)
    for i, pt in enumerate(points):
        base = 2.0 * L + 4.0 * o
        if pt.kind == "prtt":
            step = max(o + pt.d_us, g) if pt.d_us > 0.0 else max(o, g)
            out[i] = base + (pt.n - 1) * step
        else:
            out[i] = (base + (pt.p - 1) * max(g, o)) / pt.p
    return out


@dataclass
class _Fitted:
    L_us: float
    o_us: float
    g_us: float
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def predict(self, points: Sequence[Point]) -> FloatArray:
        return logp_predict(points, self.L_us, self.o_us, self.g_us)

    def scope(self, point: Point) -> str | None:
        return None


class LogpModel:
    name: str = "logp"
    title: str = "LogP"
    params: tuple[str, ...] = ("L_us", "o_us", "g_us")
    uses: tuple[str, ...] = ("prtt", "onen")
    description: str = "latency L, overhead o, gap g; message size not modelled"

    def fit(self, train: Sequence[Point], data: Dataset) -> _Fitted:
        need_points(self.title, train, len(self.params))
        y = np.array([pt.y_us for pt in train], dtype=np.float64)
        pts = list(train)

        def fun(x: FloatArray) -> FloatArray:
            return np.asarray((logp_predict(pts, *x) - y) / y, dtype=np.float64)

        scale = float(np.median(y))
        best = None
        for fl, fo, fg in itertools.product((0.05, 0.3), (0.02, 0.1, 0.25), (0.02, 0.2, 1.0)):
            res = least_squares(fun, np.array([fl, fo, fg]) * scale, bounds=(0.0, np.inf),
                                method="trf", x_scale="jac")
            if best is None or res.cost < best.cost:
                best = res
        assert best is not None
        L, o, g = (float(v) for v in best.x)
        notes = []
        if len({pt.s for pt in train}) > 1:
            notes.append("no size parameter: it predicts the same time for every message size")
        if not any(pt.kind == "prtt" and pt.d_us > 0.0 for pt in train):
            notes.append("without PRTT(n,d,s) points L and o are not separable (only 2L + 4o is)")
        return _Fitted(L, o, g, {"L_us": L, "o_us": o, "g_us": g}, notes)


MODEL = LogpModel()
