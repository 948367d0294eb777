"""What every model of :mod:`railgauge.models` has: the points it predicts, and its API.

A **point** is one measured time that a model can be asked to predict (``docs/lop.md``,
section "compare-models" says what each model predicts for each kind):

* ``prtt``: PRTT(n, d, s) of ``railgauge gauge`` / ``measure`` in us, the record's point
  estimate (the interquartile mean where recorded, else the median), for a message of s
  bytes, a train of n messages with a busy delay d between sends.
* ``onen``: the per-peer round-trip time RTT(p)/p of ``railgauge-bench onen`` in us (a
  round's time divided by p, the median or the minimum over the rounds), for p peers
  addressed at once with messages of s bytes, in one direction and posting mode.

A model is a module with one object satisfying :class:`Model`: ``fit(train, data)``
returns a :class:`Fitted` whose ``predict(points)`` gives the predicted times (NaN for a
point the model does not describe, with the reason in ``scope``); a model that cannot be
fitted to the training points raises :class:`NotApplicable` with the reason (too few
points for its parameters, a kind of data it needs is absent).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from railgauge.measurements import Measurements
from railgauge.onen import OnenData

__all__ = ["Dataset", "Fitted", "Model", "NotApplicable", "Point", "relative_lsq"]

FloatArray = npt.NDArray[np.float64]

#: Point kinds.
KINDS: tuple[str, ...] = ("prtt", "onen")


class NotApplicable(Exception):
    """The model cannot be fitted to these training points; the message says why."""


@dataclass(frozen=True)
class Point:
    """One measured time to predict (see the module docstring).

    ``label`` names the pattern: ``PRTT(1,0,s)``, ``PRTT(n,0,s)``, ``PRTT(n,d,s)`` or
    ``RTT(p)/p <direction> <mode>``. ``ref`` is the source record (a
    :class:`railgauge.measurements.PrttPoint` or :class:`railgauge.onen.OnenPoint`).
    """

    kind: str
    y_us: float
    s: int
    label: str
    n: int = 1
    d_us: float = 0.0
    p: int = 1
    direction: str = ""
    mode: str = ""
    ref: Any = field(default=None, compare=False, hash=False)


@dataclass
class Dataset:
    """The points of a comparison and their sources (``prtt``: the PRTT measurements,
    ``onen``: the onen data, either may be None); ``stat`` is the onen statistic."""

    points: list[Point]
    prtt: Measurements | None
    onen: OnenData | None
    stat: str = "median"

    def kinds(self) -> list[str]:
        return [k for k in KINDS if any(pt.kind == k for pt in self.points)]


class Fitted(Protocol):
    """A model fitted to training points."""

    params: dict[str, Any]
    notes: list[str]

    def predict(self, points: Sequence[Point]) -> FloatArray:
        """Predicted times in us, NaN where the model does not describe the point."""
        ...

    def scope(self, point: Point) -> str | None:
        """None if the model predicts the point, else why not."""
        ...


class Model(Protocol):
    """A performance model: its name, its parameters, and how it is fitted."""

    name: str
    title: str
    params: tuple[str, ...]
    #: The point kinds its fit reads (a fit depends on the training points of these only).
    uses: tuple[str, ...]
    description: str

    def fit(self, train: Sequence[Point], data: Dataset) -> Fitted: ...


def relative_lsq(a: FloatArray, y: FloatArray, offset: FloatArray | None = None, *,
                 nonneg: bool = True) -> FloatArray:
    """Least squares of a x + offset ~ y on relative residuals ((a x + offset - y)/y), with
    x >= 0 if ``nonneg``."""
    from scipy.optimize import lsq_linear

    b = np.zeros_like(y) if offset is None else offset
    aw = a / y[:, None]
    bounds = (0.0, np.inf) if nonneg else (-np.inf, np.inf)
    return np.asarray(lsq_linear(aw, (y - b) / y, bounds=bounds).x, dtype=np.float64)


def need_points(name: str, train: Sequence[Point], k: int, what: str = "points") -> None:
    """Raises NotApplicable when fewer than k training points remain."""
    if len(train) < k:
        raise NotApplicable(
            f"{name} has {k} parameters but only {len(train)} training {what}"
        )
