"""The LoP part of the gauge report: RTT(p) with the LoP fit and the LogP prediction, L(p),
t_1:n, and the model ranking (:mod:`railgauge.gauge_lop` computes them).

:func:`plot_gauge_lop` draws the three panels (also where there is no fit: the measured
points and the quantities derived from them), :func:`lop_html` writes the report's sections
and the figures (``lop.png``, ``compare-models.png``) beside it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from railgauge.fit.lop import CurveFit, rtt_function
from railgauge.parts import MIN_P, LopPart
from railgauge.report.barrier import num_cell

__all__ = ["comparison_html", "lop_html", "lop_text", "plot_gauge_lop"]

PathOrFile = str | Path | IO[bytes]
_DPI = 110


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _num(v: Any) -> str:
    if v is None or not isinstance(v, int | float) or not math.isfinite(float(v)):
        return "-"
    v = float(v)
    if v == 0.0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-4:
        return f"{v:.3e}"
    return f"{v:.4g}"


def _pct(v: Any) -> str:
    if v is None or not isinstance(v, int | float) or not math.isfinite(float(v)):
        return "-"
    return f"{100.0 * float(v):.1f}%"


def _save(fig: Figure, path: PathOrFile) -> Path | None:
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=_DPI)
    return Path(path) if isinstance(path, str | Path) else None


def _vals(xs: Sequence[Any], ys: Sequence[Any]) -> tuple[list[float], list[float]]:
    """The pairs whose y is a finite number."""
    out_x, out_y = [], []
    for x, y in zip(xs, ys, strict=True):
        if isinstance(y, int | float) and math.isfinite(float(y)):
            out_x.append(float(x))
            out_y.append(float(y))
    return out_x, out_y


def _series_label(key: tuple[str, str, int | None]) -> str:
    return f"{key[0]} {key[1]}"


def plot_gauge_lop(part: LopPart, path: PathOrFile) -> Path | None:
    """Three panels: RTT(p)/p measured (every series; the primary's min and median), the
    LoP fit and the LogP prediction; L(p) and o_s(p), fitted and derived from the measured
    points; t_1:n, fitted and derived."""
    fig = Figure(figsize=(14.0, 4.3))
    ax1 = fig.add_subplot(1, 3, 1)
    ax2 = fig.add_subplot(1, 3, 2)
    ax3 = fig.add_subplot(1, 3, 3)
    data = part.onen
    fit = part.fit
    pts = part.primary_points()
    prim = part.primary
    # Panel 1: RTT(p)/p.
    if data is not None and prim is not None:
        for st, marker in (("min", "o"), ("median", "s")):
            have = [pt for pt in pts if pt.rtt(st) is not None]
            if have:
                ax1.scatter([pt.p for pt in have], [float(pt.per_peer(st) or 0.0) for pt in have],
                            s=26, marker=marker, zorder=3,
                            label=f"measured {_series_label(prim)} ({st})")
        others = [k for k in data.series_keys() if k != prim]
        for i, key in enumerate(others):
            spts = [pt for pt in data.series(key) if pt.rtt(part.stat) is not None]
            if not spts:
                continue
            sx = [pt.p for pt in spts]
            sy = [float(pt.per_peer(part.stat) or 0.0) for pt in spts]
            ax1.plot(sx, sy, marker="x^v<>+*"[i % 7], ms=5, lw=0.8, alpha=0.6,
                     color=f"C{(i + 4) % 10}", label=f"{_series_label(key)} ({part.stat})")
    rtt: CurveFit | None = fit.primary.rtt if fit is not None else None
    if rtt is not None:
        lo, hi = rtt.p_range
        ps = np.linspace(lo, hi, 200)
        ax1.plot(ps, rtt_function(rtt.lam, ps), color="C3", lw=2, zorder=2,
                 label=f"LoP fit ({part.stat}, {rtt.form})")
    tab = (part.logp or {}).get("table") or []
    if tab:
        ax1.plot([r["P"] for r in tab], [r["logp_us"] for r in tab], color="0.25", ls="--",
                 marker="D", ms=4, label="LogP (4o+2L+(P-1)max{g,o})/P")
    ys1 = [float(v) for line in ax1.get_lines()
           for v in np.asarray(line.get_ydata(), dtype=np.float64).ravel()]
    ys1 += [float(v) for coll in ax1.collections
            for v in np.asarray(coll.get_offsets(), dtype=np.float64).reshape(-1, 2)[:, 1]]
    pos = [v for v in ys1 if math.isfinite(v) and v > 0.0]
    if pos and max(pos) / min(pos) > 8.0:
        ax1.set_yscale("log")  # LogP far from the measurement: both stay visible
    ax1.set_xlabel("peers addressed p")
    ax1.set_ylabel("RTT(p)/p (us)")
    ax1.set_title("round-trip time per peer", fontsize=11)
    # Panel 2: L(p), o_s(p).
    der = part.derived or {}
    ftab = fit.to_json().get("table") if fit is not None else None
    drew2 = False
    is_list = bool(der.get("list"))
    lname = "L_list(p)" if is_list else "L(p)"
    if ftab and ("L_us" in ftab or "L_list_us" in ftab):
        lkey = "L_us" if "L_us" in ftab else "L_list_us"
        ax2.plot(ftab["p"], ftab[lkey], color="C3", lw=2, label=f"{lname} from the LoP fit")
        ax2.plot(ftab["p"], ftab["o_s_us"], color="C0", lw=1.5, label="o_s(p) fit")
        drew2 = True
    if der:
        xs, ys = _vals(der["p"], der["L_us"])
        if xs:
            ax2.scatter(xs, ys, color="C3", marker="o", s=26, zorder=3,
                        label=f"{lname} from the measured points")
            drew2 = True
        for k, colour, marker, label in (("o_s_us", "C0", "s", "o_s(p) measured"),
                                         ("o_r_us", "C2", "^", "o_r(p) measured")):
            xs, ys = _vals(der["p"], der[k])
            if xs:
                ax2.scatter(xs, ys, color=colour, marker=marker, s=20, zorder=3, label=label)
                drew2 = True
    if drew2:
        ax2.axhline(0.0, color="0.6", lw=0.8)
        ax2.set_title(f"latency {lname} and posting overheads (per request)", fontsize=11)
    else:
        ax2.text(0.5, 0.5, "no send overheads measured:\nL(p) cannot be derived", ha="center",
                 va="center", transform=ax2.transAxes)
        ax2.set_title("latency L(p)", fontsize=11)
    ax2.set_xlabel("peers addressed p")
    ax2.set_ylabel("us")
    # Panel 3: t_1:n.
    drew3 = False
    tname = "t_1:n^list" if is_list else "t_1:n"
    if ftab and ("t_1n_us" in ftab or "t_1n_list_us" in ftab):
        tkey = "t_1n_us" if "t_1n_us" in ftab else "t_1n_list_us"
        ax3.plot(ftab["p"], ftab[tkey], color="C3", lw=2, label=f"{tname} from the LoP fit")
        drew3 = True
    lst = (fit.to_json().get("list") or {}) if fit is not None else {}
    ltab = lst.get("table") or {}
    if "t_1n_list_us" in ltab:
        ax3.plot(ltab["p"], ltab["t_1n_list_us"], color="C1", lw=1.5,
                 label="t_1:n^list from the list-mode fit")
        drew3 = True
    if der:
        xs, ys = _vals(der["p"], der["t_1n_us"])
        if xs:
            ax3.scatter(xs, ys, color="C3", s=26, zorder=3, label=f"{tname} from the measured "
                        "points")
            drew3 = True
    if drew3:
        ax3.set_title(f"{tname} = o(n) + n L(n): one message to each of n peers", fontsize=11)
    else:
        ax3.text(0.5, 0.5, "no send overheads measured:\nt_1:n cannot be derived",
                 ha="center", va="center", transform=ax3.transAxes)
        ax3.set_title("t_1:n", fontsize=11)
    ax3.set_xlabel("peers n")
    ax3.set_ylabel("us")
    p_all = [pt.p for pt in data.points] if data is not None else []
    for ax in (ax1, ax2, ax3):
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if p_all:
            ax.set_xlim(min(p_all) - 0.5, max(p_all) + 0.5)
        handles = ax.get_legend_handles_labels()[0]
        if handles:
            ax.legend(fontsize=6 if len(handles) > 5 else 7, ncol=2 if len(handles) > 6 else 1)
    if part.status == "too few p":
        fig.suptitle(f"no LoP curve: it needs RTT(p) at {MIN_P} or more p (gauge -n "
                     f"{MIN_P + 1} or more ranks); the measured points and what follows "
                     "from them", fontsize=10, color="#a8071a")
    elif part.status != "fitted":
        fig.suptitle("no LoP fit (see the report)", fontsize=10, color="#a8071a")
    fig.tight_layout()
    return _save(fig, path)


def _fit_table(part: LopPart) -> str:
    fit = part.fit
    if fit is None:
        return ""
    pr = fit.primary
    rows = []
    for name, cf in (("RTT(p)/p", pr.rtt), ("o_s(p)", pr.overhead_send),
                     ("o_r(p)", pr.overhead_recv)):
        if cf is None:
            continue
        cells = []
        for j, v in enumerate(cf.lam):
            ci = ""
            if cf.fixed[j]:
                ci = "fixed"
            elif cf.ci95 is not None:
                lo, hi = cf.ci95[j]
                ci = f"[{_num(lo)}, {_num(hi)}]"
            cells.append(f"<td>{_e(_num(v))}<br><span class='ci'>{_e(ci)}</span></td>")
        cells += ["<td></td>"] * (6 - len(cells))
        form = cf.form + (" (fallback)" if cf.fallback else "")
        cls = " class='bad'" if cf.fallback else ""
        rows.append(f"<tr{cls}><td class='l'>{_e(name)}</td><td class='l'>{_e(form)}</td>"
                    + "".join(cells) + f"<td>{_e(_pct(cf.rms_rel))}</td>"
                    f"<td class='l'>{_e(cf.message)}</td></tr>")
    head = "".join(f"<th>&lambda;{j}</th>" for j in range(1, 7))
    warns = [f"{name}: {w}" for name, cf in (("RTT", pr.rtt), ("o_s", pr.overhead_send),
                                               ("o_r", pr.overhead_recv))
             if cf is not None for w in cf.warnings]
    doc = fit.to_json()
    formula = doc.get("latency_formula")
    out = (
        "<div class='wide'><table class='ranges'><tr><th class='l'>function</th>"
        f"<th class='l'>form</th>{head}<th>rms rel</th><th class='l'>fit</th></tr>"
        + "".join(rows) + "</table></div>"
        "<p class='muted'>RTT(p)/p = &lambda;1/(&lambda;2 + p) + &lambda;3 + &lambda;4 (1 - "
        "e<sup>&lambda;5 (p - &lambda;6)</sup>) (&lambda;6 fixed at the smallest measured p); "
        "o(p) = &lambda;1 + &lambda;2/(&lambda;3 + p) per request. Below each value its 95% "
        "confidence interval (Jacobian; docs/lop.md).</p>"
    )
    if formula:
        out += f"<p>L(p) = <code>{_e(formula)}</code></p>"
    if warns:
        out += "<ul>" + "".join(f"<li class='warn'>{_e(w)}</li>" for w in warns) + "</ul>"
    return out


def _facts(part: LopPart) -> str:
    data = part.onen
    if data is None:
        return ""
    h = data.header
    timer = h.get("timer") if isinstance(h.get("timer"), dict) else {}
    assert isinstance(timer, dict)
    series = "; ".join(
        f"{_series_label(k)}: p = {_prange([pt.p for pt in data.series(k)])}"
        for k in data.series_keys()
    )
    sizes = sorted({pt.s for pt in data.points if pt.s is not None})
    wall = [float(f["wall_s"]) for f in data.footers
            if isinstance(f.get("wall_s"), int | float)]
    items = [
        ("onen file", str(part.onen_path) if part.onen_path else "-"),
        ("ranks", str(part.ranks) if part.ranks is not None else "-"),
        ("message size s", ", ".join(f"{s} B" for s in sizes) or "-"),
        ("series", series or "-"),
        ("shown and fitted", f"{_series_label(part.primary)} ({part.stat})"
         if part.primary is not None else "-"),
        ("measured by", f"{h.get('tool', '-')} {h.get('version', '')}".strip()),
        ("timer", str(timer.get("source", "-"))),
        ("benchmark time", f"{sum(wall):.1f} s" if wall else "-"),
        ("stable points", f"{sum(pt.stable is True for pt in data.points)} of "
                          f"{len(data.points)}"),
    ]
    unsupported = h.get("modes_unsupported")
    if isinstance(unsupported, dict) and unsupported:
        items.append(("modes not measured",
                      "; ".join(f"{m}: {why}" for m, why in unsupported.items())))
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in items)
    return f"<table class='facts'>{rows}</table>"


def _prange(ps: Sequence[int]) -> str:
    u = sorted(set(ps))
    if not u:
        return "-"
    if len(u) == 1:
        return str(u[0])
    if u == list(range(u[0], u[-1] + 1)):
        return f"{u[0]}..{u[-1]}"
    return ", ".join(str(p) for p in u)


def _beside_table(part: LopPart) -> str:
    """Per p: the measured RTT(P)/P, LoP's, LogP's, and L and t_1:n (fit and derived)."""
    pts = {pt.p: pt for pt in part.primary_points()}
    if not pts:
        return ""
    logp = {r["P"]: r for r in (part.logp or {}).get("table") or []}
    der = part.derived or {}
    dmap = {p: i for i, p in enumerate(der.get("p", []))}
    fit = part.fit
    ftab = (fit.to_json().get("table") or {}) if fit is not None else {}
    fmap = {p: i for i, p in enumerate(ftab.get("p", []))}
    lkey = "L_list_us" if "L_list_us" in ftab else "L_us"
    tkey = "t_1n_list_us" if "t_1n_list_us" in ftab else "t_1n_us"
    lname = "L_list" if der.get("list") else "L"
    tname = "t_1:n^list" if der.get("list") else "t_1:n"
    head = ("<tr><th>P</th><th>round min (us)</th><th>round median (us)</th>"
            "<th>measured RTT(P)/P (us)</th><th>LoP RTT(P)/P (us)</th>"
            "<th>LogP (4o+2L+(P-1)max{g,o})/P (us)</th><th>LogP error</th>"
            f"<th>{lname}(P) measured (us)</th><th>{lname}(P) LoP (us)</th>"
            f"<th>{tname} measured (us)</th><th>{tname} LoP (us)</th></tr>")
    rows = []
    for p in sorted(pts):
        pt = pts[p]
        meas = pt.per_peer(part.stat)
        lp = logp.get(p, {})
        lop_v = (float(rtt_function(fit.primary.rtt.lam, p))
                 if fit is not None and fit.primary.rtt is not None else None)
        err = None
        if isinstance(lp.get("logp_us"), int | float) and meas:
            err = (lp["logp_us"] - meas) / meas
        i, j = dmap.get(p), fmap.get(p)
        cells = [
            _num(pt.rtt_min_us), _num(pt.rtt_median_us), _num(meas), _num(lop_v),
            _num(lp.get("logp_us")), ("-" if err is None else f"{100 * err:+.1f}%"),
            _num(der["L_us"][i] if i is not None else None),
            _num(ftab[lkey][j] if j is not None and lkey in ftab else None),
            _num(der["t_1n_us"][i] if i is not None else None),
            _num(ftab[tkey][j] if j is not None and tkey in ftab else None),
        ]
        rows.append(f"<tr><td>{p}</td>" + "".join(f"<td>{_e(c)}</td>" for c in cells)
                    + "</tr>")
    src = (part.logp or {}).get("source")
    note = f"<p class='muted'>LogP: {_e(src)}.</p>" if src else ""
    return (f"<div class='wide'><table>{head}{''.join(rows)}</table></div>"
            "<p class='muted'>A round is rank 0's time for one message to each of P peers "
            "and all P answers; RTT(P)/P is a round divided by P, of the "
            f"{_e(part.stat)} rounds. The measured {lname}(P) and {tname} are computed "
            "from the measured round and send overheads of each P, the LoP ones from the "
            "fitted curves.</p>" + note)


def _records_table(part: LopPart) -> str:
    data = part.onen
    if data is None:
        return ""
    head = ("<tr><th class='l'>direction</th><th class='l'>mode</th><th>s (B)</th><th>p</th>"
            "<th>round min (us)</th><th>round median (us)</th><th>95% CI of median (us)</th>"
            "<th>o_s median / min (us)</th><th>o_r median / min (us)</th><th>count</th>"
            "<th>stable</th></tr>")
    rows = []
    for pt in data.points:
        ci = (f"[{_num(pt.ci95_median_us[0])}, {_num(pt.ci95_median_us[1])}]"
              if pt.ci95_median_us else "-")
        stable = "-" if pt.stable is None else ("yes" if pt.stable else "no")
        rows.append(
            f"<tr><td class='l'>{_e(pt.direction)}</td><td class='l'>{_e(pt.mode)}</td>"
            f"<td>{_e(pt.s if pt.s is not None else '-')}</td><td>{pt.p}</td>"
            f"<td>{_e(_num(pt.rtt_min_us))}</td><td>{_e(_num(pt.rtt_median_us))}</td>"
            f"<td>{_e(ci)}</td><td>{_e(_num(pt.os_us))} / {_e(_num(pt.os_min_us))}</td>"
            f"<td>{_e(_num(pt.or_us))} / {_e(_num(pt.or_min_us))}</td><td>{pt.count}</td>"
            f"<td>{stable}</td></tr>")
    return (f"<details><summary>onen records ({len(data.points)})</summary>"
            f"<div class='wide'><table class='meas'>{head}{''.join(rows)}</table></div>"
            "</details>")


def comparison_html(part: LopPart, figure: Any = None) -> str:
    """The model ranking as an HTML table, the figure (``figure(path, caption)`` embeds
    ``compare-models.png`` where given) and the notes."""
    comp = part.comparison
    if comp is None:
        return (f"<p class='warn'>No model comparison: {_e(part.compare_error or 'no data')}"
                "</p>")
    kinds = comp.dataset.kinds()
    kind_head = "".join(
        f"<th>{'PRTT' if k == 'prtt' else 'RTT(p)/p'} MdARE (rank)</th>" for k in kinds)
    head = (f"<tr><th>rank</th><th class='l'>model</th><th>parameters</th><th>MdARE</th>"
            f"{kind_head}<th>p90</th><th>coverage</th><th class='l'>notes</th></tr>")
    rows = []
    for r in comp.results:
        s = r.summary
        if r.status != "ok":
            rows.append(f"<tr class='bad'><td>-</td><td class='l'>{_e(r.title)}</td>"
                        f"<td>{r.n_params}</td><td>-</td>" + "<td>-</td>" * len(kinds)
                        + "<td>-</td><td>-</td>"
                        f"<td class='l'>not fitted: {_e(r.reason)}</td></tr>")
            continue
        per_kind = []
        for k in kinds:
            b = s["by_kind"][k]
            per_kind.append("-" if b["mdare"] is None else
                            f"{_pct(b['mdare'])} (#{b['rank']})")
        notes = "; ".join(n for n in r.notes if not n.startswith("not predicted"))
        missing = [n for n in r.notes if n.startswith("not predicted")]
        if missing:
            notes = "; ".join([notes, *missing]) if notes else "; ".join(missing)
        rows.append(f"<tr><td>{r.rank}</td><td class='l'><b>{_e(r.title)}</b></td>"
                    f"<td>{r.n_params}</td><td>{_e(_pct(s['mdare']))}</td>"
                    + "".join(f"<td>{_e(c)}</td>" for c in per_kind)
                    + f"<td>{_e(_pct(s['p90_are']))}</td><td>{_e(_pct(s['coverage']))}</td>"
                    f"<td class='l'><span class='note'>{_e(notes)}</span></td></tr>")
    pts = {k: sum(pt.kind == k for pt in comp.dataset.points) for k in kinds}
    cv = []
    if comp.s_folds:
        cv.append(f"over s ({comp.s_folds} folds of the PRTT sizes)")
    if comp.p_folds:
        cv.append(f"over p ({comp.p_folds} folds of each onen series' p)")
    ranking = " &gt; ".join(_e(n) for n in comp.ranking())
    out = (
        f"<div class='wide'><table>{head}{''.join(rows)}</table></div>"
        f"<p>Ranking: <b>{ranking or '-'}</b>.</p>"
        "<p class='muted'>Every model is fitted to the same points "
        f"({', '.join(f'{v} {k} points' for k, v in pts.items())}) and predicts the points "
        f"it did not see, cross-validated {' and '.join(cv) or '-'}; MdARE is the median "
        "absolute relative error |predicted - measured| / measured of those held-out "
        "predictions. A model that does not describe some points (LoP: PRTT trains; "
        "without onen data, LoP has nothing to fit) has coverage below 100% and ranks after "
        "the models that predict every point. Onen points are the "
        f"{_e(comp.dataset.stat)} RTT(p)/p (docs/lop.md, section 5).</p>"
    )
    if comp.notes:
        out += "<ul>" + "".join(f"<li class='note'>{_e(n)}</li>" for n in comp.notes) + "</ul>"
    if figure is not None and part.compare_plot is not None and part.compare_plot.exists():
        out += figure(part.compare_plot, "Measured against held-out predicted times, one "
                                         "panel per model (log-log; the line y = x and a "
                                         "±10% band), and the MdARE per kind of point")
    return out


def lop_intro(part: LopPart) -> str:
    """Two lines for the top of the report: the LoP part and the model ranking, linked to
    their sections."""
    cls = "" if part.status == "fitted" else " class='warn'"
    text = part.headline() if part.status != "too few p" else (
        f"LoP not fitted: the LoP curve needs more ranks (gauge -n {MIN_P + 1} or more); "
        f"measured p = {_prange(part.p_values())}")
    out = f"<p{cls}><a href='#lop'>{_e(text)}</a>.</p>"
    comp = part.comparison
    if comp is not None and comp.ranking():
        out += ("<p><a href='#compare'>Models ranked by the error of their held-out "
                f"predictions</a>: <b>{' &gt; '.join(_e(r.title) for r in comp.results if r.rank)}"
                "</b>.</p>")
    return out


def lop_html(part: LopPart, out_dir: str | Path, figure: Any) -> str:
    """The report's LoP and model-comparison sections; writes ``lop.png`` (where onen was
    measured) and ``compare-models.png`` into ``out_dir``. ``figure(path, caption)``
    returns the HTML that embeds a PNG."""
    from railgauge.report.compare import plot_comparison

    out = Path(out_dir)
    parts = ["<h2 id='lop'>LoP: latency against the number of peers (1:n / n:1)</h2>",
             "<p class='muted'>The 1:n pattern: rank 0 takes the time, sends one small "
             "message to each of p peers, each answers at once, rank 0 waits for all p "
             "answers and takes the time (n:1: the p peers address rank 0). LoP (Hoefler "
             "&amp; Rehm) describes the round-trip time per peer RTT(p)/p with six lambdas, "
             "the posting overheads o_s(p), o_r(p) with three, and derives the latency "
             "L(p) = RTT(p)/2 - (o_s(p) + o_s(1)) and t_1:n = o(n) + n L(n); LogP predicts "
             "(4o + 2L + (P-1) max{g, o})/P (docs/lop.md).</p>"]
    if part.status in ("not measured", "skipped"):
        parts.append(f"<p class='warn'>{_e(part.headline())}</p>")
    elif part.status != "fitted":
        parts.append(f"<p class='warn'>LoP not fitted: {_e(part.reason)}.</p>")
        if part.status == "too few p":
            parts.append(f"<p class='note'>The LoP curve needs more ranks: run "
                         f"<code>railgauge gauge -n {MIN_P + 1}</code> or more (p = 1 .. "
                         "ranks - 1). Shown: the measured points, L(p) and t_1:n computed "
                         "from them, and the LogP prediction of the LogGP fit above.</p>")
    else:
        parts.append(f"<p>{_e(part.headline())}. Model file: "
                     f"<code>{_e(part.model_path.name if part.model_path else '-')}</code> "
                     "(as <code>railgauge fit --model lop</code> writes it).</p>")
    for w in part.warnings:
        parts.append(f"<p class='warn'>{_e(w)}</p>")
    if part.onen is not None:
        parts.append(_facts(part))
        parts.append(_fit_table(part))
        png = out / "lop.png"
        plot_gauge_lop(part, png)
        parts.append(figure(png, "Left: RTT(p)/p measured, the LoP fit and the LogP "
                                 "prediction of the gauge's LogGP fit. Middle: L(p) and the "
                                 "posting overheads. Right: t_1:n."))
        parts.append(_beside_table(part))
        if part.notes:
            parts.append("<ul>" + "".join(f"<li class='note'>{_e(n)}</li>" for n in part.notes)
                         + "</ul>")
        parts.append(_records_table(part))
    parts.append("<h2 id='compare'>Which model predicts this machine: PRAM, BSP, LogP, "
                 "LogGP, LoP</h2>")
    if part.comparison is not None and part.compare_plot is not None:
        plot_comparison(part.comparison, part.compare_plot)
    parts.append(comparison_html(part, figure))
    return "\n".join(p for p in parts if p)


def lop_text(part: Any) -> str:
    """The LoP part and the model ranking as plain text for the terminal."""
    from railgauge.report.compare import as_text, comparison_table, lop_table

    lines = ["", part.headline()]
    if part.fit is not None:
        lines.append(as_text(lop_table(part.fit)))
        doc = part.fit.to_json()
        if doc.get("latency_formula"):
            lines.append(f"L(p) = {doc['latency_formula']}")
    rows = (part.logp or {}).get("table") or []
    der = part.derived or {}
    if rows:
        lmap = dict(zip(der.get("p", []), der.get("L_us", []), strict=True))
        src = str((part.logp or {}).get("source", ""))
        logp_from = "the LogGP fit" if src.startswith("LogGP") else "the two smallest p"
        lines.append(f"{'P':>4} {'RTT(P)/P':>10} {'LoP':>10} {'LogP':>10} {'L(P)':>10}   "
                     f"({part.stat}; LogP from {logp_from}; L(P) from the measured points)")
        for r in rows[:16]:
            lines.append(f"{r['P']:>4} {num_cell(r['measured_us'])} {num_cell(r.get('lop_us'))} "
                         f"{num_cell(r['logp_us'])} {num_cell(lmap.get(r['P']))}")
        if len(rows) > 16:
            lines.append(f"  ... {len(rows) - 16} more in the report")
    if part.comparison is not None:
        lines.append("")
        lines.append(as_text(comparison_table(part.comparison)))
        lines.append(f"ranking: {' > '.join(part.comparison.ranking())}")
    elif part.compare_error:
        lines.append(f"no model comparison: {part.compare_error}")
    return "\n".join(lines)
