"""LogGP as railgauge fits it (:mod:`railgauge.fit.loggp`): L, o_s, o_r, g, G per protocol
range, from the PRTT training points (and the receive-overhead records of their sizes).

    PRTT(n,d,s) = the fitted model's prediction (:func:`railgauge.fit.loggp.prtt`)
    RTT(p)/p    = (PRTT(1,0,s) + (p-1) max(G_all(s), o_s(s))) / p

The second line is the slides' LogP prediction (4o + 2L + (P-1) max{g, o})/P with LogGP's
quantities at the size s of the onen messages: PRTT(1,0,s) = 2 (L + o_s + o_r + (s-1) G_lat)
is 4o + 2L at s, and the sender's gap per message is max(G_all(s), o_s(s)). The onen points
are not used for the fit: LogGP predicts them from point-to-point measurements, as the
slides do. Without PRTT points LogGP is not fitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from railgauge.fit.loggp import LoggpFit, fit_loggp, g_all, overhead, prtt
from railgauge.measurements import Measurements
from railgauge.models.base import Dataset, FloatArray, NotApplicable, Point

__all__ = ["MODEL", "LoggpModel", "loggp_predict"]


def loggp_predict(fit: LoggpFit, points: Sequence[Point]) -> FloatArray:
    """The LogGP model's time for each point (see the module docstring)."""
    out = np.empty(len(points), dtype=np.float64)
    for i, pt in enumerate(points):
        s = float(max(pt.s, 1))
        if pt.kind == "prtt":
            out[i] = float(prtt(fit, pt.n, pt.d_us, s))
        else:
            gap = max(float(g_all(fit, s)), float(overhead(fit, s, "send")))
            out[i] = (float(prtt(fit, 1, 0.0, s)) + (pt.p - 1) * gap) / pt.p
    return out


@dataclass
class _Fitted:
    fit: LoggpFit
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def predict(self, points: Sequence[Point]) -> FloatArray:
        return loggp_predict(self.fit, points)

    def scope(self, point: Point) -> str | None:
        return None


class LoggpModel:
    name: str = "loggp"
    title: str = "LogGP"
    params: tuple[str, ...] = ("L_us", "o_s_us", "o_r_us", "g_us", "G_us_per_byte")
    uses: tuple[str, ...] = ("prtt",)
    description: str = "railgauge's LogGP fit (protocol ranges) of the PRTT points"

    def fit(self, train: Sequence[Point], data: Dataset) -> _Fitted:
        if data.prtt is None or not any(pt.kind == "prtt" for pt in train):
            raise NotApplicable("LogGP is fitted to PRTT measurements; there are none")
        sizes = {pt.s for pt in train if pt.kind == "prtt"}
        keep = {id(pt.ref) for pt in train if pt.kind == "prtt"}
        src = data.prtt
        records = [r for r in src.records
                   if id(r) in keep or (r.type == "orecv" and r.s in sizes)]
        meas = Measurements(header=src.header, records=records, transport=src.transport,
                            headers=src.headers, footers=src.footers, paths=src.paths)
        fit = fit_loggp(meas, n_boot=0)
        if not fit.success:
            raise NotApplicable(f"LogGP fit failed: {fit.message}")
        first = fit.ranges[0]
        params = {
            "ranges": len(fit.ranges),
            "L_us": first.L_us,
            "o_s_us": first.value("o_s_us"),
            "o_r_us": first.value("o_r_us"),
            "g_us": first.g_us,
            "G_us_per_byte": first.G_us_per_byte,
        }
        notes = []
        if any(pt.kind == "onen" for pt in data.points):
            notes.append("fitted to the PRTT points only; RTT(p)/p is predicted from them")
        return _Fitted(fit, params, notes)


MODEL = LoggpModel()
