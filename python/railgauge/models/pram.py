"""PRAM (Fortune & Wyllie 1978) as a communication model: one parameter, the step time.

The PRAM's processors run in lock-step and reach any memory cell in one step; all costs of
parallelisation are ignored. As a model of message passing (one message = one write of the
sender and one read of the receiver, one step tau each; a processor does one step at a
time, different processors work in parallel; the size of a message costs nothing)::

    PRTT(n,d,s) = (n + 3) tau + (n-1) d        A's n writes, B's read of the last, B's
                                               answer, A's read (the busy delays d are
                                               computation, charged as they are)
    RTT(p)/p    = max(2p, p + 3) tau / p       rank 0 writes p messages, then reads the p
                                               answers (the last is ready 3 steps after
                                               its message was written)

tau is fitted by least squares on relative errors (tau >= 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from railgauge.models.base import Dataset, FloatArray, Point, need_points, relative_lsq

__all__ = ["MODEL", "PramModel"]


def _coef(pt: Point) -> tuple[float, float]:
    """(steps, fixed time) of a point: time = steps * tau + fixed."""
    if pt.kind == "prtt":
        return float(pt.n + 3), float(pt.n - 1) * pt.d_us
    return max(2.0 * pt.p, pt.p + 3.0) / pt.p, 0.0


@dataclass
class _Fitted:
    tau_us: float
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def predict(self, points: Sequence[Point]) -> FloatArray:
        return np.array([a * self.tau_us + b for a, b in map(_coef, points)], dtype=np.float64)

    def scope(self, point: Point) -> str | None:
        return None


class PramModel:
    name: str = "pram"
    title: str = "PRAM"
    params: tuple[str, ...] = ("tau_us",)
    uses: tuple[str, ...] = ("prtt", "onen")
    description: str = "one synchronous step tau per access; message size and latency cost nothing"

    def fit(self, train: Sequence[Point], data: Dataset) -> _Fitted:
        need_points(self.title, train, len(self.params))
        coef = np.array([_coef(pt) for pt in train], dtype=np.float64)
        y = np.array([pt.y_us for pt in train], dtype=np.float64)
        (tau,) = relative_lsq(coef[:, :1], y, coef[:, 1])
        notes = []
        if len({pt.s for pt in train}) > 1:
            notes.append("no size parameter: a message of any size costs one step")
        return _Fitted(float(tau), {"tau_us": float(tau)}, notes)


MODEL = PramModel()
