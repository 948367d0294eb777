"""The barrier part of a gauge run as text (the terminal) and HTML (report.html)."""

from __future__ import annotations

from html import escape
from typing import Any

from railgauge.parts import BarrierPart

__all__ = ["barrier_html", "barrier_text", "num_cell"]


def barrier_text(part: BarrierPart) -> str:
    lines = ["", part.headline()]
    if part.status != "measured":
        return "\n".join(lines)
    lines.append(f"{'barrier':>10} {'median':>10} {'p99':>10} {'simulated':>10} {'sim/meas':>9}")
    for r in part.rows:
        lines.append(f"{r.algorithm:>10} {num_cell(r.measured_us)} {num_cell(r.p99_us)} "
                     f"{num_cell(r.predicted_us)} {num_cell(r.ratio, 9)}"
                     + (f"   ({r.note})" if r.note else ""))
    lines += [f"  note: {n}" for n in part.notes]
    return "\n".join(lines)


def barrier_html(part: BarrierPart) -> str:
    head = f"<h2>Barriers</h2><p>{escape(part.headline())}.</p>"
    if part.status != "measured":
        return head
    rows = "".join(
        f"<tr><td>{escape(r.algorithm)}</td><td>{_h(r.measured_us)}</td><td>{_h(r.p99_us)}"
        f"</td><td>{_h(r.predicted_us)}</td><td>{_h(r.ratio)}</td>"
        f"<td>{escape(r.note or '')}</td></tr>" for r in part.rows)
    notes = "".join(f"<li>{escape(n)}</li>" for n in part.notes)
    return (head + "<table><tr><th>barrier</th><th>median (us)</th><th>p99 (us)</th>"
            "<th>simulated (us)</th><th>simulated / measured</th><th></th></tr>" + rows +
            "</table>" + (f"<ul class='muted'>{notes}</ul>" if notes else ""))


def num_cell(v: Any, width: int = 10) -> str:
    """A number right-aligned in ``width`` columns (4 significant digits), '-' for none."""
    return f"{v:>{width}.4g}" if isinstance(v, int | float) else f"{'-':>{width}}"


def _h(v: float | None) -> str:
    return f"{v:.4g}" if v is not None else "-"
