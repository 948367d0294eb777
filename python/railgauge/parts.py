"""The parts of a gauge run as data: what :mod:`railgauge.gauge_lop` and
:mod:`railgauge.gauge_barrier` produce and :mod:`railgauge.report` renders, so that the
report depends on this data and not on the modules that measure it.

:class:`LopPart` is the LoP part (the onen data, the LoP fit, the LogP prediction beside the
measured RTT(P)/P, the model comparison); :class:`BarrierPart` the barrier part (each
barrier of coll/ measured beside the simulator's prediction)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from railgauge.fit.lop import RTT_PARAMS, LopFit
from railgauge.jsonvalues import finite_json
from railgauge.onen import OnenData, OnenPoint, SeriesKey

__all__ = ["MIN_P", "STATUSES", "BarrierPart", "BarrierRow", "LopPart"]

#: Distinct p the six-lambda RTT fit needs (ranks: one more).
MIN_P = RTT_PARAMS

#: Values of :attr:`LopPart.status`.
STATUSES: tuple[str, ...] = ("fitted", "too few p", "fit failed", "not measured", "skipped")


@dataclass
class LopPart:
    """The LoP part of a gauge run (see the module docstring).

    ``status``: ``fitted`` (``fit`` holds the LoP fit), ``too few p`` (measured, but fewer
    than :data:`MIN_P` distinct p), ``fit failed`` (``reason`` says why), ``not measured``
    (the onen run failed or the tool has no onen pattern: ``reason`` in its words) or
    ``skipped`` (``--no-onen``). ``primary`` and ``stat`` name the series shown;
    ``logp`` is the slides' LogP prediction beside it (the model file's ``logp`` block),
    ``derived`` the pointwise quantities of :func:`derived_table`; ``comparison`` the
    model comparison (None with ``compare_error``)."""

    status: str
    reason: str | None = None
    ranks: int | None = None
    onen: OnenData | None = None
    onen_path: Path | None = None
    fit: LopFit | None = None
    model_path: Path | None = None
    primary: SeriesKey | None = None
    stat: str = "min"
    logp: dict[str, Any] | None = None
    derived: dict[str, Any] | None = None
    comparison: Any = None
    compare_error: str | None = None
    compare_path: Path | None = None
    compare_plot: Path | None = None
    wall_s: float | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return self.onen is not None

    def primary_points(self) -> list[OnenPoint]:
        if self.onen is None or self.primary is None:
            return []
        return self.onen.series(self.primary)

    def p_values(self) -> list[int]:
        return sorted({pt.p for pt in self.primary_points() if pt.rtt(self.stat) is not None})

    def headline(self) -> str:
        """One sentence on the LoP part (for the terminal and the report)."""
        if self.status == "fitted" and self.fit is not None:
            pr = self.fit.primary
            rtt = pr.rtt
            assert rtt is not None
            form = rtt.form + (" (fallback)" if rtt.fallback else "")
            ps = self.p_values()
            return (f"LoP fitted to {pr.direction} {pr.mode} ({pr.stat}) over p = "
                    f"{ps[0]}..{ps[-1]}: RTT(p) form {form}")
        if self.status == "skipped":
            return "onen not measured: skipped (--no-onen)"
        if self.status == "not measured":
            return f"onen not measured: {self.reason}"
        return f"LoP not fitted: {self.reason}"

    def summary(self) -> dict[str, Any]:
        """What ``gauge --json`` adds under the keys ``onen``, ``lop`` and ``compare``."""
        onen: dict[str, Any] = {
            "measured": self.measured,
            "file": str(self.onen_path) if self.onen_path is not None else None,
            "ranks": self.ranks,
            "reason": None if self.measured else self.reason,
            "wall_s": self.wall_s,
            "warnings": list(self.onen.warnings) if self.onen is not None else [],
        }
        if self.onen is not None:
            unsupported = self.onen.header.get("modes_unsupported")
            onen["modes_unsupported"] = unsupported if isinstance(unsupported, dict) else {}
            onen["series"] = [
                {"direction": k[0], "mode": k[1], "s": k[2],
                 "p": [pt.p for pt in self.onen.series(k)]}
                for k in self.onen.series_keys()
            ]
        lop: dict[str, Any] = {
            "status": self.status,
            "reason": self.reason,
            "message": self.headline(),
            "min_p": MIN_P,
            "min_ranks": MIN_P + 1,
            "model_file": str(self.model_path) if self.model_path is not None else None,
            "primary": (None if self.primary is None else
                        {"direction": self.primary[0], "mode": self.primary[1],
                         "s": self.primary[2], "stat": self.stat}),
            "p": self.p_values(),
            "success": None,
            "fallback": None,
            "rtt": None,
            "overhead_send": None,
            "overhead_recv": None,
            "latency_formula": None,
            "table": None,
            "logp": self.logp,
            "derived": self.derived,
            "notes": list(self.notes),
        }
        if self.fit is not None:
            doc = self.fit.to_json()
            for key in ("rtt", "overhead_send", "overhead_recv"):
                block = doc.get(key)
                lop[key] = None if block is None else {
                    k: block.get(k) for k in ("lambda", "ci95", "form", "fallback", "converged",
                                              "message", "rms_rel", "formula")
                }
            lop["latency_formula"] = doc.get("latency_formula")
            lop["table"] = doc.get("table")
            lop["success"] = doc.get("success")
            lop["fallback"] = doc.get("fallback")
        compare: dict[str, Any] = {
            "file": str(self.compare_path) if self.compare_path is not None else None,
            "plot": str(self.compare_plot) if self.compare_plot is not None else None,
            "error": self.compare_error,
        }
        if self.comparison is not None:
            full = self.comparison.to_json()
            compare.update({
                "metric": full["metric"],
                "ranking": full["ranking"],
                "ranking_by_kind": full["ranking_by_kind"],
                "points": full["points"],
                "models": [
                    {k: m.get(k) for k in ("rank", "name", "title", "parameters", "status",
                                           "reason", "mdare", "p90_are", "coverage")}
                    | {"by_kind": {kind: {"mdare": b.get("mdare"), "rank": b.get("rank"),
                                          "coverage": b.get("coverage")}
                                   for kind, b in (m.get("by_kind") or {}).items()}}
                    for m in full["models"]
                ],
                "cv": full["cv"],
            })
        return finite_json({"onen": onen, "lop": lop, "compare": compare})


@dataclass
class BarrierRow:
    algorithm: str
    measured_us: float | None = None
    p99_us: float | None = None
    predicted_us: float | None = None
    note: str | None = None
    #: The engine the runtime's barrier ran on: "shm" (the shared-memory flags) or
    #: "messages" (railgauge-bench barrier's "impl").
    impl: str | None = None

    @property
    def ratio(self) -> float | None:
        if self.measured_us and self.predicted_us is not None:
            return self.predicted_us / self.measured_us
        return None


@dataclass
class BarrierPart:
    """``status``: ``measured``, ``not measured`` (``reason`` says why) or ``skipped``."""

    status: str
    ranks: int
    transport: str
    reason: str | None = None
    rows: list[BarrierRow] = field(default_factory=list)
    tuned: str | None = None
    notes: list[str] = field(default_factory=list)
    #: The model the predictions came from: "flags" (model-flags.json) or "messages".
    engine: str | None = None

    def best(self) -> BarrierRow | None:
        done = [r for r in self.rows if r.measured_us is not None]
        return min(done, key=lambda r: r.measured_us or 0.0) if done else None

    def headline(self) -> str:
        if self.status != "measured":
            return f"barriers: {self.status}" + (f" ({self.reason})" if self.reason else "")
        b = self.best()
        text = f"barriers on {self.ranks} ranks over {self.transport}"
        if b is not None:
            text += f": fastest measured {b.algorithm} {b.measured_us:.3f} us"
        if self.tuned:
            text += f"; the model's choice {self.tuned}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "ranks": self.ranks, "transport": self.transport,
                "reason": self.reason, "tuned": self.tuned, "engine": self.engine,
                "notes": self.notes,
                "rows": [{**asdict(r), "predicted_over_measured": r.ratio} for r in self.rows]}
