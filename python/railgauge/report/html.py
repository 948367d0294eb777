"""The LogGP report: one self-contained HTML file, and the same table as plain text.

:func:`write_report` writes ``report.html`` (inline CSS, the figures embedded as base64
PNG data URIs, no external resources) and, beside it, the figures as PNG files.
:func:`format_table` renders the ranges as plain text for a terminal.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from railgauge import __version__
from railgauge.fit.loggp import LoggpFit, LoggpRange
from railgauge.hoststate import LEGACY_PROBE, format_band, format_probe
from railgauge.measurements import Measurements, PrttPoint
from railgauge.report.plots import format_bytes, plot_gap, plot_prtt, plot_residuals

__all__ = ["format_table", "write_report"]

#: Columns of the text table: (JSON key, header, unit).
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("L_us", "L", "us"),
    ("o_s_us", "o_s", "us"),
    ("o_r_us", "o_r", "us"),
    ("g_us", "g", "us"),
    ("G_us_per_byte", "G", "us/B"),
)
#: Columns of the HTML table: the text table's plus the per-byte overheads.
HTML_COLUMNS: tuple[tuple[str, str, str], ...] = (
    *COLUMNS,
    ("O_s_us_per_byte", "O_s", "us/B"),
    ("O_r_us_per_byte", "O_r", "us/B"),
)
#: Where a model has no o_s / o_r (an older file), these keys stand in for them.
_FALLBACK = {
    "o_s_us": "o_us",
    "o_r_us": "o_us",
    "O_s_us_per_byte": "O_us_per_byte",
    "O_r_us_per_byte": "O_us_per_byte",
}

FIGURES: tuple[tuple[str, str, str], ...] = (
    ("prtt.png", "PRTT measurements and model", "plot_prtt"),
    (
        "gap.png",
        "Derived series G_all(s), the send and receive overheads o_s(s) and o_r(s), and "
        "PRTT(1,0,s)/2 - o_s(s) - o_r(s)",
        "plot_gap",
    ),
    ("residuals.png", "Residuals", "plot_residuals"),
)


def _num(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    if v == 0.0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-4:
        return f"{v:.3e}"
    return f"{v:.4g}"


def range_label(r: LoggpRange) -> str:
    """``1 B .. 12 KiB`` or ``12289 B ..`` (open-ended last range)."""
    hi = format_bytes(r.to_bytes) if r.to_bytes is not None else ""
    return f"{format_bytes(r.from_bytes)} .. {hi}".rstrip()


def _ci_text(r: LoggpRange, key: str) -> str:
    ci = r.ci95.get(key)
    if ci is None and key in _FALLBACK and getattr(r, key, None) is None:
        ci = r.ci95.get(_FALLBACK[key])
    if ci is None:
        return ""
    return f"[{_num(ci[0])}, {_num(ci[1])}]"


def _pct(v: Any) -> str:
    return f"{100.0 * float(v):.0f}%" if isinstance(v, int | float) else "-"


def support_lines(fit: LoggpFit) -> list[str]:
    """Sentences on the break support: the changes kept (with their support) and the bends
    merged away (with theirs); empty for a model without break support."""
    bs = (fit.criterion or {}).get("break_support") or {}
    n_res = bs.get("n_resamples")
    min_sup = bs.get("min_support")
    if not (fit.bends or n_res or any(r.support_from is not None for r in fit.ranges)):
        return []
    rule = (
        f"a break is kept where at least {_pct(min_sup)} of {n_res} redraws of the data from "
        "their noise model find a break within one size of it"
        if n_res and isinstance(min_sup, int | float)
        else "break support as recorded in the model"
    )
    out = [f"Break support: {rule}."]
    changes = [
        f"{format_bytes(prev.last_measured_bytes or prev.to_bytes or prev.from_bytes)} | "
        f"{format_bytes(r.from_bytes)} ({_pct(r.support_from)})"
        for prev, r in zip(fit.ranges, fit.ranges[1:], strict=False)
    ]
    out.append(
        "Protocol changes kept: " + (", ".join(changes) if changes else "none (one range)") + "."
    )
    bends = [
        f"{format_bytes(b['between_bytes'][0])} | {format_bytes(b['between_bytes'][1])} "
        f"({_pct(b.get('support'))})"
        for b in fit.bends
    ]
    out.append(
        "Bends (breaks of the optimal partition not reproduced by the redraws, merged into "
        "the ranges around them): " + (", ".join(bends) if bends else "none") + "."
    )
    return out


def _num_txt(v: object) -> str:
    """A header number to 3 significant digits (the JSON keeps all of them)."""
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _run_notes(fit: LoggpFit) -> list[str]:
    """The notes of the whole run that no range repeats (the host's states)."""
    own = {n for r in fit.ranges for n in r.notes}
    return [str(n) for n in (fit.network or {}).get("notes", []) if str(n) not in own]


def _network_sentence(fit: LoggpFit) -> str:
    """Where L and o come from: network-wide (a fitted model) or per range (older files)."""
    keys = ("L_us", "o_us")
    same = all(r.value(k) == fit.ranges[0].value(k) for r in fit.ranges for k in keys)
    if not same:
        return "L and o differ between the ranges of this model (an older model file)."
    net = fit.network
    if net.get("from_bytes") is not None:
        lo, hi = int(net["from_bytes"]), net.get("to_bytes")
        where = f"{format_bytes(lo)} .. {format_bytes(int(hi))}" if hi is not None else (
            f"{format_bytes(lo)} .."
        )
        return (
            f"L, o_s, o_r are network-wide, fitted over the smallest sizes ({where}: the first "
            "range up to its first bend) and repeated in every range, as in the paper's table; "
            "g, G (and O_s, O_r) are per range."
        )
    return "L, o_s, o_r are the same in every range; g, G (and O_s, O_r) are per range."


def _pct1(v: Any) -> str:
    return "-" if not isinstance(v, int | float) or v != v else f"{100.0 * float(v):.1f}%"


def _visit_words(nz: dict[str, Any]) -> str:
    """The noise sentence's tail: how far a point measured again in the host's state
    differs from visit to visit (``noise.visit_spread_rel``; none for runs without
    passes)."""
    vs = nz.get("visit_spread_rel")
    if not isinstance(vs, dict) or not isinstance(vs.get("median"), int | float):
        return ""
    return (f"; a point measured again in the same host state (visit to visit): median "
            f"{_pct1(vs.get('median'))}, p90 {_pct1(vs.get('p90'))}")


def accuracy_lines(fit: LoggpFit) -> list[str]:
    """The model's predictive accuracy in words and a small table: held-out errors (k-fold
    over sizes) beside the run's own noise, overall and per decade of sizes."""
    acc = fit.accuracy
    if not acc:
        return []
    held = acc.get("held_out") or {}
    if not held.get("points"):
        reason = acc.get("reason", "no held-out points")
        return [f"accuracy: not cross-validated ({reason})"]
    nz = acc.get("noise") or {}
    lines = [
        f"accuracy: the model predicts its held-out points ({acc.get('k')}-fold over sizes, "
        f"{held['points']} points) with a median error of {_pct1(held.get('median_rel'))}, "
        f"p90 {_pct1(held.get('p90_rel'))}, max {_pct1(held.get('max_rel'))}; the run's own "
        f"noise (CI of each median, scatter about its neighbours): median "
        f"{_pct1(nz.get('median_rel'))}, p90 {_pct1(nz.get('p90_rel'))}{_visit_words(nz)}",
    ]
    noise_by = {d.get("from_bytes"): d for d in nz.get("by_decade") or []}
    rows = []
    for d in acc.get("by_decade") or []:
        nz_med = _pct1(noise_by.get(d["from_bytes"], {}).get("median_rel"))
        rows.append(
            f"  {d['from_bytes']:>8} B ..  held out median {_pct1(d.get('median_rel')):>6}"
            f"  ({d.get('points')} points)   noise {nz_med:>6}"
        )
    return lines + rows


def host_state_line(fit: LoggpFit) -> list[str]:
    """The host's state the model's points describe (``source.host_state``: railgauge-bench's
    probes; docs/fit.md, section 1), as one line; none for files without probes."""
    st = (fit.source or {}).get("host_state")
    if not isinstance(st, dict) or not isinstance(st.get("probe_us"), int | float):
        return []
    probe = str(st["probe"]) if isinstance(st.get("probe"), str) else LEGACY_PROBE
    band = st.get("band_us")
    seen = ""
    if isinstance(band, list) and len(band) == 2:
        seen = (f" ({st.get('in_band')} of {st.get('points')} points measured in its band "
                f"{format_band(probe, band[0], band[1])})")
    return [f"host state: probe {format_probe(probe, st['probe_us'])}{seen}; compare runs made "
            "in one state (railgauge check says)"]


def format_table(fit: LoggpFit) -> str:
    """The fitted ranges as a plain-text table (values, then 95% CIs, then warnings)."""
    head = f"LogGP fit, transport {fit.transport}"
    if fit.n is not None:
        head += f", n = {fit.n}"
    if fit.o_r_source is not None:
        head += f", o_r {fit.o_r_source}"
    lines = [head, fit.message]
    if not fit.ranges:
        return "\n".join(lines)
    header = ["range"] + [f"{name} ({unit})" for _, name, unit in COLUMNS] + ["reliable"]
    rows: list[list[str]] = []
    for r in fit.ranges:
        rows.append(
            [range_label(r)]
            + [_num(r.value(k)) for k, _, _ in COLUMNS]
            + ["yes" if r.reliable else "NO"]
        )
        rows.append(["  95% CI"] + [_ci_text(r, k) for k, _, _ in COLUMNS] + [""])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(widths[i]) for i, c in enumerate(row[1:], start=1)
        ]
        return "  ".join(cells).rstrip()

    lines.append("")
    lines.append(fmt(header))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(fmt(row) for row in rows)
    notes: list[str] = [f"run: note: {n}" for n in _run_notes(fit)]
    for i, r in enumerate(fit.ranges, start=1):
        notes.extend(f"range {i}: warning: {w}" for w in r.warnings)
        notes.extend(f"range {i}: note: {w}" for w in r.notes)
    lines.append("")
    lines.append(
        "o_s, o_r: send and receive overhead at s=1; the model's o (o_us) = (o_s + o_r)/2."
    )
    lines.append(_network_sentence(fit))
    lines.extend(support_lines(fit))
    lines.extend(accuracy_lines(fit))
    lines.extend(host_state_line(fit))
    if notes:
        lines.append("")
        lines.extend(notes)
    return "\n".join(lines)


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
.wide { overflow-x: auto; max-width: 100%; }
table.ranges { font-size: 0.8em; }
th, td { border: 1px solid #d6d6d6; padding: 0.25em 0.6em; text-align: right; vertical-align: top; }
th { background: #f2f4f7; }
td.l, th.l { text-align: left; }
table.facts td:first-child { text-align: left; font-weight: 600; background: #fafafa; }
table.facts td { text-align: left; }
.ci { color: #666; font-size: 0.85em; white-space: nowrap; }
.bad { background: #fff1f0; }
.warn { color: #a8071a; }
.note { color: #555; }
.muted { color: #777; font-size: 0.9em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
details summary { cursor: pointer; color: #333; margin: 0.6em 0; }
figcaption { color: #555; font-size: 0.9em; }
code { background: #f5f5f5; padding: 0 0.2em; }
"""


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _facts(meas: Measurements, fit: LoggpFit) -> list[tuple[str, str]]:
    h = meas.header
    timer = h.get("timer") if isinstance(h.get("timer"), Mapping) else {}
    assert isinstance(timer, Mapping)
    timer_txt = ", ".join(
        part
        for part in (
            str(timer.get("source", "")),
            f"resolution {_num_txt(timer['resolution_ns'])} ns" if "resolution_ns" in timer else "",
            f"read cost {_num_txt(timer['overhead_ns'])} ns (subtracted from every sample)"
            if "overhead_ns" in timer
            else "",
        )
        if part
    )
    info = h.get("transport_info")
    facts = [
        ("transport", meas.transport),
        ("transport info", _compact(info) if info else "-"),
        ("host", str(h.get("host", "-"))),
        ("ranks", str(h.get("ranks", "-"))),
        ("timer", timer_txt or "-"),
        ("measured by", f"{h.get('tool', '-')} {h.get('version', '')}".strip()),
        ("started (UTC)", str(h.get("started_utc", "-"))),
        ("measurement blocks", str(len(meas.headers))),
        ("files", ", ".join(meas.paths)),
        ("messages per train n", str(fit.n) if fit.n is not None else "-"),
        ("parameters", _compact(h.get("params")) if h.get("params") else "-"),
    ]
    return facts


def _compact(v: Any) -> str:
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={_compact(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        if len(v) > 12:
            return f"[{', '.join(_compact(x) for x in v[:12])}, ... ({len(v)} items)]"
        return "[" + ", ".join(_compact(x) for x in v) + "]"
    return str(v)


def _bytes_exact(n: int) -> str:
    text = format_bytes(n)
    return text if text == f"{n} B" else f"{text} ({n} B)"


def _own_cell(r: LoggpRange, key: str) -> str:
    """The range's own intercept (range_overhead) with its CI, or '-'."""
    own = r.range_overhead or {}
    v = own.get(key)
    if not isinstance(v, int | float) or isinstance(v, bool):
        return "<td>-</td>"
    ci = (own.get("ci95") or {}).get(key)
    ci_txt = f"[{_num(ci[0])}, {_num(ci[1])}]" if isinstance(ci, list | tuple) else ""
    return f"<td>{_e(_num(float(v)))}<br><span class='ci'>{_e(ci_txt)}</span></td>"


def _ranges_table(fit: LoggpFit) -> str:
    if not fit.ranges:
        return f"<p class='warn'>No model: {_e(fit.message)}</p>"
    head = "".join(f"<th>{_e(name)} ({_e(unit)})</th>" for _, name, unit in HTML_COLUMNS)
    head += "<th>range's own o_s (us)</th><th>range's own o_r (us)</th>"
    rows = []
    for i, r in enumerate(fit.ranges, start=1):
        cells = "".join(
            f"<td>{_e(_num(r.value(k)))}<br><span class='ci'>{_e(_ci_text(r, k))}</span></td>"
            for k, _, _ in HTML_COLUMNS
        )
        cells += _own_cell(r, "o_s_us") + _own_cell(r, "o_r_us")
        to = _e(_bytes_exact(r.to_bytes)) if r.to_bytes is not None else "&infin;"
        rel = "yes" if r.reliable else "<span class='warn'>no</span>"
        cls = "" if r.reliable else " class='bad'"
        sup = _pct(r.support_from) if i > 1 else "-"
        rows.append(
            f"<tr{cls}><td class='l'>range {i}</td>"
            f"<td class='l'>{_e(_bytes_exact(r.from_bytes))}</td>"
            f"<td class='l'>{to}</td><td>{_e(sup)}</td><td>{r.points}</td>{cells}"
            f"<td>{rel}</td></tr>"
        )
    notes: list[str] = [f"<li class='note'>run: {_e(n)}</li>" for n in _run_notes(fit)]
    for i, r in enumerate(fit.ranges, start=1):
        notes.extend(f"<li class='warn'>range {i}: {_e(w)}</li>" for w in r.warnings)
        notes.extend(f"<li class='note'>range {i}: {_e(w)}</li>" for w in r.notes)
    out = (
        "<div class='wide'><table class='ranges'><tr><th class='l'></th><th class='l'>from</th>"
        f"<th class='l'>to (last measured)</th><th>break support</th><th>sizes</th>{head}"
        "<th>reliable</th></tr>"
        + "".join(rows)
        + "</table></div>"
        + "<p class='muted'>Values are the bounded weighted least-squares estimates; below each, "
        "the 95% confidence interval. o_s and o_r are the send and receive overheads at s=1 "
        f"(o_r {_e(fit.o_r_source or 'as in the model file')}); the model's symmetric LogGP "
        "overhead is o = (o_s + o_r)/2, with which PRTT(1,0,s) = 2 (L + 2o + (s-1)G) holds. "
        f"{_e(_network_sentence(fit))} "
        "O_s and O_r are the per-byte overheads of LogGOPS (0 for plain LogGP), the slopes of "
        "the range's own o_s(s) and o_r(s) lines; the range's own o_s and o_r are those lines' "
        "intercepts at s=1 (extras, not used by the model: beyond the first range they are "
        "extrapolations, and where sending and receiving overlap they have no LogGP meaning). "
        "A range applies from its first measured size up to the first measured size of the "
        "next range. Break support: the fraction of redraws of the data that find the change "
        "at the range's start again.</p>"
    )
    sup_lines = support_lines(fit)
    if sup_lines:
        out += "<p>" + "<br>".join(_e(t) for t in sup_lines) + "</p>"
    if notes:
        out += "<ul>" + "".join(notes) + "</ul>"
    return out


def _criterion(fit: LoggpFit) -> str:
    c = fit.criterion
    if not c:
        return ""
    items = [
        ("method", c.get("method")),
        ("series", ", ".join(c.get("series", []))),
        ("receive overhead o_r", c.get("o_r_source")),
        ("reported o", c.get("o_us")),
        ("L and o", c.get("network")),
        ("relative tolerance", c.get("rel_tol")),
        ("absolute floor (us)", c.get("abs_floor_us")),
        ("penalty per extra range", _num(c.get("penalty"))),
        ("fewest sizes per range", c.get("min_seg")),
        ("most ranges", c.get("max_segments")),
        ("fit cost (chosen)", _num(c.get("fit_cost"))),
        (
            "fit cost by number of ranges",
            ", ".join(_num(v) for v in (c.get("fit_cost_by_segments") or [])),
        ),
        ("criterion", c.get("statement")),
    ]
    opt = c.get("optimal_partition") or {}
    bs = c.get("break_support") or {}
    if opt:
        items.append(
            (
                "optimal partition (before break support) starts at",
                ", ".join(format_bytes(v) for v in opt.get("from_bytes", [])),
            )
        )
    if bs:
        items += [
            ("break support rule", bs.get("rule")),
            ("redraws, fewest support kept", f"{bs.get('n_resamples')}, {bs.get('min_support')}"),
            (
                "breaks of the optimal partition",
                ", ".join(
                    f"{format_bytes(b['between_bytes'][0])} | {format_bytes(b['between_bytes'][1])}"
                    f": {_pct(b.get('support'))} ({'kept' if b.get('kept') else 'bend, merged'})"
                    for b in bs.get("breaks", [])
                )
                or "none",
            ),
        ]
    m = fit.method
    if m:
        items += [("fit", m.get("fit")), ("confidence intervals", m.get("ci"))]
    rows = "".join(
        f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in items if v not in (None, "")
    )
    return f"<table class='facts'>{rows}</table>"


def _kind_label(pt: PrttPoint) -> str:
    if pt.kind == "orecv":
        return f"o_r(s) (receive, n={pt.n})"
    if pt.kind == "p1":
        return "PRTT(1,0,s)"
    if pt.kind == "pn":
        return f"PRTT({pt.n},0,s)"
    if pt.kind == "pd":
        return f"PRTT({pt.n},d,s)"
    return f"PRTT({pt.n},{pt.d_us:g},s)"


def _measurement_table(meas: Measurements) -> str:
    head = (
        "<tr><th>s (B)</th><th class='l'>pattern</th><th>d (us)</th><th>d actual (us)</th>"
        "<th>delay excess (us)</th><th>IQM (us)</th><th>median (us)</th>"
        "<th>95% CI of median (us)</th><th>min (us)</th><th>p99 (us)</th><th>count</th>"
        "<th>stable</th></tr>"
    )
    rows = []
    for pt in meas.records:
        ci = (
            f"[{_num(pt.ci95_median_us[0])}, {_num(pt.ci95_median_us[1])}]"
            if pt.ci95_median_us
            else "-"
        )
        stable = "-" if pt.stable is None else ("yes" if pt.stable else "no")
        rows.append(
            f"<tr><td>{pt.s}</td><td class='l'>{_e(_kind_label(pt))}</td>"
            f"<td>{_e(_num(pt.d_us))}</td><td>{_e(_num(pt.d_actual_us))}</td>"
            f"<td>{_e(_num(pt.delay_excess_us))}</td><td>{_e(_num(pt.iqm_us))}</td>"
            f"<td>{_e(_num(pt.median_us))}</td><td>{_e(ci)}</td>"
            f"<td>{_e(_num(pt.min_us))}</td><td>{_e(_num(pt.p99_us))}</td>"
            f"<td>{pt.count}</td><td>{stable}</td></tr>"
        )
    return f"<table class='meas'>{head}{''.join(rows)}</table>"


def _figure(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f"<figure><img alt='{_e(caption)}' src='data:image/png;base64,{data}'>"
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _range_worst(acc: Mapping[str, Any] | None) -> str:
    """A range's largest held-out error in words ("PRTT(n,0,s) at 131072 B: -47%"), or ""
    (older model files have none)."""
    top = (acc or {}).get("worst") or []
    if not top or not isinstance(top[0], Mapping):
        return ""
    w = top[0]
    rel = w.get("signed_rel")
    return (f"{w.get('pattern', '')} at {w.get('s')} B"
            + (f": {100.0 * rel:+.0f}%" if isinstance(rel, int | float) else ""))


def _accuracy_html(fit: LoggpFit) -> str:
    """How well the model predicts, beside the run's own noise (next to the residuals)."""
    acc = fit.accuracy
    if not acc:
        return ""
    held = acc.get("held_out") or {}
    if not held.get("points"):
        return (f"<h2>Predictive accuracy</h2><p>Not cross-validated: "
                f"{_e(acc.get('reason', 'no held-out points'))}.</p>")
    nz = acc.get("noise") or {}
    noise_by = {d.get("from_bytes"): d for d in nz.get("by_decade") or []}
    rows = "".join(
        f"<tr><td>{_e(d['from_bytes'])} B .. {_e(d.get('to_bytes', ''))} B</td>"
        f"<td>{_e(d.get('points'))}</td><td>{_pct1(d.get('median_rel'))}</td>"
        f"<td>{_pct1(d.get('p90_rel'))}</td>"
        f"<td>{_pct1(noise_by.get(d['from_bytes'], {}).get('median_rel'))}</td></tr>"
        for d in acc.get("by_decade") or []
    )
    per = "".join(
        f"<tr><td>{_e(range_label(r))}</td><td>{_e((r.accuracy or {}).get('points'))}</td>"
        f"<td>{_pct1((r.accuracy or {}).get('median_rel'))}</td>"
        f"<td>{_pct1((r.accuracy or {}).get('p90_rel'))}</td>"
        f"<td>{_pct1(((r.accuracy or {}).get('visit_spread') or {}).get('p90_rel'))}</td>"
        f"<td>{'yes' if r.reliable else 'NO'}</td>"
        f"<td class=\"l\">{_e(_range_worst(r.accuracy))}</td></tr>"
        for r in fit.ranges
    )
    worst = "".join(
        f"<tr><td>{_e(w.get('s'))} B</td><td>{_e(w.get('pattern', w.get('kind')))}</td>"
        f"<td>{_e(_num(w.get('measured_us')))}</td><td>{_e(_num(w.get('predicted_us')))}</td>"
        f"<td>{_pct1(w.get('rel'))}</td></tr>"
        for w in acc.get("worst") or []
    )
    return f"""<h2>Predictive accuracy</h2>
<p>Each size's PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) predicted by a model fitted without
that size ({_e(acc.get('k'))}-fold cross-validation over sizes, every fold refitted from
scratch): median error {_pct1(held.get('median_rel'))}, p90 {_pct1(held.get('p90_rel'))},
max {_pct1(held.get('max_rel'))} over {_e(held.get('points'))} points. Beside it the run's own
noise, the limit any model meets (per point the larger of the CI of its median and its
scatter about its neighbours): median {_pct1(nz.get('median_rel'))}, p90
{_pct1(nz.get('p90_rel'))}{_e(_visit_words(nz))}. A range is reliable when its held-out points
have a median error &le; 5% and a p90 &le; 12% (docs/fit.md); its visit spread is how far its
points measured again in the same host state differ from visit to visit (p90).</p>
<table><tr><th class="l">sizes</th><th>points</th><th>held-out median</th><th>held-out p90</th>
<th>noise median</th></tr>{rows}</table>
<table><tr><th class="l">range</th><th>points</th><th>median</th><th>p90</th>
<th>visit spread p90</th><th>reliable</th>
<th class="l">its worst held-out point</th></tr>{per}</table>
<p class="muted">The worst held-out points:</p>
<table><tr><th>size</th><th class="l">pattern</th><th>measured (us)</th><th>predicted (us)</th>
<th>error</th></tr>{worst}</table>"""


def write_report(
    out_dir: str | Path,
    meas: Measurements,
    fit: LoggpFit,
    extra: Mapping[str, Any] | None = None,
    *,
    lop: Any = None,
    barrier: Any = None,
) -> Path:
    """Writes ``report.html`` (self-contained) and the figures as PNGs into ``out_dir``.

    Parameters
    ----------
    out_dir
        Folder to write into (created if missing).
    meas
        The measurements the fit was made from.
    fit
        The fit (from :func:`railgauge.fit.loggp.fit_loggp` or ``load_loggp_model``).
    extra
        Further facts shown in a table (for example the wall time of the run).
    lop
        The LoP part of a gauge run (:class:`railgauge.parts.LopPart`): adds the LoP
        section (RTT(p), the fit, L(p), t_1:n, LogP beside the measured RTT(P)/P) and the
        model comparison, with their figures ``lop.png`` and ``compare-models.png``.
    barrier
        The barrier part of a gauge run (:class:`railgauge.parts.BarrierPart`):
        adds a section with each barrier measured beside its simulated prediction.

    Returns
    -------
    Path
        The path of ``report.html``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plotters = {"plot_prtt": plot_prtt, "plot_gap": plot_gap, "plot_residuals": plot_residuals}
    figures = []
    for name, caption, fn in FIGURES:
        png = out / name
        plotters[fn](meas, fit, png)
        figures.append(_figure(png, caption))

    facts = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in _facts(meas, fit))
    extra_html = ""
    if extra:
        extra_rows = "".join(
            f"<tr><td>{_e(k)}</td><td>{_e(_compact(v))}</td></tr>" for k, v in extra.items()
        )
        extra_html = f"<h2>Run</h2><table class='facts'>{extra_rows}</table>"
    reader_warn = ""
    if meas.warnings:
        reader_warn = (
            "<ul>" + "".join(f"<li class='warn'>{_e(w)}</li>" for w in meas.warnings) + "</ul>"
        )
    lop_html = lop_intro = ""
    if lop is not None:
        from railgauge.report.lop import lop_html as render_lop
        from railgauge.report.lop import lop_intro as render_intro

        lop_html = render_lop(lop, out, _figure)
        lop_intro = render_intro(lop)
    if barrier is not None:
        from railgauge.report.barrier import barrier_html

        lop_html += barrier_html(barrier)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    doc = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>railgauge LogGP report: {_e(meas.transport)} on {_e(meas.host or "-")}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>LogGP parameters of {_e(meas.transport)} on {_e(meas.host or "-")}</h1>
<p class="muted">railgauge {_e(__version__)}: LogGP by parametrised round-trip times
(Hoefler, Lichei, Rehm 2007), protocol ranges found by penalised segmented least squares.
{_e(fit.message)}.</p>
{lop_intro}
<h2>Measurement</h2>
<table class="facts">{facts}</table>
{reader_warn}
<h2>Model</h2>
{_ranges_table(fit)}
<h2>Figures</h2>
{"".join(figures)}
{_accuracy_html(fit)}
{lop_html}
<h2>Protocol-range criterion and fit</h2>
{_criterion(fit)}
{extra_html}
<h2>Measurements</h2>
<p class="muted">PRTT times are round trips. The times of o_r(s) rows are not: each sample is
the receiver's mean time of one receive call when the message was already there. The fit uses
the interquartile mean (IQM) of a record where recorded, else its median, with the
uncertainty from the 95% CI of the median. Delay excess is the mean overshoot of the busy
delays, already subtracted from every sample by the tool (information only; the fit uses d).
d actual (older files only) is the measured mean length of the busy delays of uncorrected
samples; the fit then uses it as the delay.</p>
{_measurement_table(meas)}
<p class="muted">Generated {now} by railgauge {_e(__version__)}.</p>
</body>
</html>
"""
    path = out / "report.html"
    path.write_text(doc, encoding="utf-8")
    return path
