"""BSP (Valiant 1990): supersteps of w + g h + l, fitted to the same points.

A superstep costs its computation w, g per unit of the h-relation (h = the most data a
processor sends or receives in it; here counted in bytes, i.e. fixed-size messages of one
byte) and the barrier latency l. A message and its answer take two supersteps (a message
received in a superstep can be used only in the next)::

    PRTT(n,d,s) = (n-1) d + g (n+1) s + 2 l    superstep 1: A computes the (n-1) delays and
                                               sends n s bytes; superstep 2: B answers s
    RTT(p)/p    = (2 l + 2 g p s) / p          superstep 1: rank 0 sends p s bytes;
                                               superstep 2: it receives p s bytes

g and l are fitted by least squares on relative errors (both >= 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from railgauge.models.base import Dataset, FloatArray, Point, need_points, relative_lsq

__all__ = ["MODEL", "BspModel"]


def _coef(pt: Point) -> tuple[float, float, float]:
    """(coefficient of l, coefficient of g, fixed time) of a point."""
    s = float(max(pt.s, 0))
    if pt.kind == "prtt":
        return 2.0, float(pt.n + 1) * s, float(pt.n - 1) * pt.d_us
    return 2.0 / pt.p, 2.0 * s, 0.0


@dataclass
class _Fitted:
    l_us: float
    g_us_per_byte: float
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def predict(self, points: Sequence[Point]) -> FloatArray:
        c = np.array([_coef(pt) for pt in points], dtype=np.float64).reshape(-1, 3)
        return np.asarray(c[:, 0] * self.l_us + c[:, 1] * self.g_us_per_byte + c[:, 2])

    def scope(self, point: Point) -> str | None:
        return None


class BspModel:
    name: str = "bsp"
    title: str = "BSP"
    params: tuple[str, ...] = ("l_us", "g_us_per_byte")
    uses: tuple[str, ...] = ("prtt", "onen")
    description: str = "supersteps w + g h + l; h in bytes; a message and its answer: 2 supersteps"

    def fit(self, train: Sequence[Point], data: Dataset) -> _Fitted:
        need_points(self.title, train, len(self.params))
        c = np.array([_coef(pt) for pt in train], dtype=np.float64)
        y = np.array([pt.y_us for pt in train], dtype=np.float64)
        notes = ["the barrier l is paid per superstep: no per-message cost beyond g per byte"]
        l_us, g = relative_lsq(c[:, :2], y, c[:, 2])
        return _Fitted(float(l_us), float(g), {"l_us": float(l_us), "g_us_per_byte": float(g)},
                       notes)


MODEL = BspModel()
