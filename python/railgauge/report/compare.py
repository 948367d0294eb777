"""Figures and tables of the LoP fit and of ``railgauge compare-models``.

:func:`plot_comparison` draws measured against held-out predicted times, one panel per
model, and the scores; :func:`plot_lop` draws RTT(p)/p with the LoP fit, the LogP
prediction and L(p). Both use their own :class:`matplotlib.figure.Figure` on the Agg canvas
(no pyplot state, no display). :func:`comparison_table` and :func:`lop_table` build the
rich tables the CLI prints.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import IO, Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from rich.table import Table

from railgauge.compare import Comparison
from railgauge.fit.lop import CurveFit, LopFit, rtt_function, series_table

__all__ = ["as_text", "comparison_table", "lop_table", "plot_comparison", "plot_lop"]

PathOrFile = str | Path | IO[bytes]
_DPI = 110
_LABEL_STYLE = {
    "PRTT(1,0,s)": ("C0", "o"),
    "PRTT(n,0,s)": ("C1", "s"),
    "PRTT(n,d,s)": ("C2", "^"),
}


def _style(label: str) -> tuple[str, str]:
    if label in _LABEL_STYLE:
        return _LABEL_STYLE[label]
    return ("C3", "D") if "1:n" in label else ("C4", "v")


def _pct(v: Any) -> str:
    return "-" if v is None or not math.isfinite(float(v)) else f"{100.0 * float(v):.1f}%"


def as_text(renderable: Any, width: int = 160) -> str:
    """A rich renderable as plain text (no colour codes), for ``Terminal.result``."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(renderable)
    return buf.getvalue().rstrip("\n")


def _save(fig: Figure, path: PathOrFile) -> Path | None:
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=_DPI)
    return Path(path) if isinstance(path, str | Path) else None


def plot_comparison(comp: Comparison, path: PathOrFile) -> Path | None:
    """Measured against predicted (held out) per model, log-log with the line y = x, and a
    bar chart of the scores per point kind."""
    results = comp.results
    ncols = 3
    nrows = math.ceil((len(results) + 1) / ncols)
    fig = Figure(figsize=(4.2 * ncols, 3.9 * nrows))
    meas = comp.measured
    labels = [pt.label for pt in comp.dataset.points]
    lo = float(np.min(meas)) / 1.5
    hi = float(np.max(meas)) * 1.5
    for k, res in enumerate(results):
        ax = fig.add_subplot(nrows, ncols, k + 1)
        head = f"{res.rank}. {res.title}" if res.rank is not None else res.title
        if res.status != "ok":
            ax.set_title(f"{head}: not fitted", fontsize=10)
            ax.text(0.5, 0.5, "\n".join(textwrap.wrap(res.reason, 40)), ha="center",
                    va="center", fontsize=8, transform=ax.transAxes)
            ax.set_axis_off()
            continue
        s = res.summary
        ax.set_title(f"{head}: MdARE {_pct(s['mdare'])}, coverage {_pct(s['coverage'])}",
                     fontsize=10)
        ax.plot([lo, hi], [lo, hi], color="0.4", lw=1, ls="--", zorder=1)
        ax.fill_between([lo, hi], [lo / 1.1, hi / 1.1], [lo * 1.1, hi * 1.1], color="0.92",
                        zorder=0, label="±10%")
        for lab in dict.fromkeys(labels):
            idx = [i for i, x in enumerate(labels) if x == lab and res.covered[i]]
            if not idx:
                continue
            colour, marker = _style(lab)
            ax.scatter(meas[idx], res.predicted[idx], s=14, c=colour, marker=marker,
                       alpha=0.75, label=lab, zorder=2, linewidths=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("measured (us)")
        ax.set_ylabel("predicted, held out (us)")
        ax.grid(True, which="major", alpha=0.3)
        if k == 0:
            ax.legend(fontsize=7, loc="upper left")
    ax = fig.add_subplot(nrows, ncols, len(results) + 1)
    kinds = comp.dataset.kinds()
    ok = [r for r in results if r.status == "ok"]
    width = 0.8 / max(len(kinds), 1)
    x = np.arange(len(ok))
    for j, kind in enumerate(kinds):
        vals = [r.summary["by_kind"][kind]["mdare"] for r in ok]
        ax.bar(x + (j - (len(kinds) - 1) / 2) * width,
               [100.0 * v if v is not None else 0.0 for v in vals], width,
               label="PRTT points" if kind == "prtt" else "RTT(p)/p points")
    ax.set_xticks(x, [r.title for r in ok])
    ax.set_ylabel("MdARE (%)")
    ax.set_title("median absolute relative error", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("compare-models: measured against held-out predictions", fontsize=12)
    fig.tight_layout()
    return _save(fig, path)


def comparison_table(comp: Comparison) -> Table:
    """The ranking as a rich table."""
    kinds = comp.dataset.kinds()
    table = Table(title="models ranked by the median absolute relative error of held-out "
                        "predictions")
    table.add_column("rank", justify="right")
    table.add_column("model")
    table.add_column("params", justify="right")
    table.add_column("MdARE", justify="right")
    for kind in kinds:
        table.add_column("PRTT" if kind == "prtt" else "RTT(p)/p", justify="right")
    table.add_column("p90", justify="right")
    table.add_column("coverage", justify="right")
    table.add_column("notes")
    for r in comp.results:
        s = r.summary
        if r.status != "ok":
            table.add_row("-", r.title, str(r.n_params), "-", *["-" for _ in kinds], "-", "-",
                          f"not fitted: {r.reason}")
            continue
        per_kind = []
        for kind in kinds:
            b = s["by_kind"][kind]
            per_kind.append("-" if b["mdare"] is None else
                            f"{_pct(b['mdare'])} (#{b['rank']})")
        notes = "; ".join(n for n in r.notes if not n.startswith("not predicted"))
        table.add_row(str(r.rank), r.title, str(r.n_params), _pct(s["mdare"]), *per_kind,
                      _pct(s["p90_are"]), _pct(s["coverage"]), notes)
    return table


def _ci_cell(fit: CurveFit, j: int) -> str:
    v = fit.lam[j]
    if fit.fixed[j]:
        return f"{v:.5g} (fixed)"
    if fit.ci95 is None:
        return f"{v:.5g}"
    lo, hi = fit.ci95[j]
    return f"{v:.5g} [{lo:.4g}, {hi:.4g}]"


def lop_table(fit: LopFit) -> Table:
    """The primary fits' lambdas with their 95% CIs as a rich table."""
    pr = fit.primary
    table = Table(title=f"LoP fit, {fit.transport}, {pr.direction} {pr.mode}"
                        + (f", s = {pr.s} B" if pr.s is not None else "") + f", {pr.stat}")
    table.add_column("function")
    table.add_column("form")
    for j in range(6):
        table.add_column(f"l{j + 1} [95% CI]", justify="right")
    table.add_column("rms rel", justify="right")
    for name, cf in (("RTT(p)/p", pr.rtt), ("o_s(p)", pr.overhead_send),
                     ("o_r(p)", pr.overhead_recv)):
        if cf is None:
            continue
        cells = [_ci_cell(cf, j) for j in range(len(cf.lam))]
        cells += [""] * (6 - len(cells))
        form = cf.form + (" (fallback)" if cf.fallback else "")
        table.add_row(name, form, *cells, _pct(cf.rms_rel))
    return table


def plot_lop(fit: LopFit, path: PathOrFile) -> Path | None:
    """RTT(p)/p measured (min and median), the LoP fit and the LogP prediction; o_s(p) and
    L(p) where the data have send overheads."""
    pr = fit.primary
    fig = Figure(figsize=(11.0, 4.2))
    ax = fig.add_subplot(1, 2, 1)
    pts = pr.points
    for st, marker in (("min", "o"), ("median", "s")):
        have = [pt for pt in pts if pt.rtt(st) is not None]
        if have:
            ax.scatter([pt.p for pt in have], [float(pt.per_peer(st) or 0.0) for pt in have], s=16,
                       marker=marker, label=f"measured ({st})", alpha=0.8)
    if pr.rtt is not None:
        lo, hi = pr.rtt.p_range
        ps = np.linspace(lo, hi, 200)
        ax.plot(ps, rtt_function(pr.rtt.lam, ps), color="C3",
                label=f"LoP fit ({pr.stat}, {pr.rtt.form})")
    tab = fit.logp.get("table") or []
    if tab:
        ax.plot([r["P"] for r in tab], [r["logp_us"] for r in tab], color="0.3", ls="--",
                label="LogP (4o+2L+(P-1)max{g,o})/P")
    ax.set_xlabel("peers addressed p")
    ax.set_ylabel("RTT(p)/p (us)")
    ax.set_title("round-trip time per peer")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax2 = fig.add_subplot(1, 2, 2)
    doc_tab = series_table(pr) if pr.rtt is not None else {}
    if "L_us" in doc_tab or "L_list_us" in doc_tab:
        key = "L_us" if "L_us" in doc_tab else "L_list_us"
        ax2.plot(doc_tab["p"], doc_tab[key], color="C3", label=key.replace("_us", "(p)"))
        ax2.plot(doc_tab["p"], doc_tab["o_s_us"], color="C0", label="o_s(p)")
        ax2.set_title("L(p) and the send overhead")
        ax2.legend(fontsize=8)
    else:
        ax2.text(0.5, 0.5, "no send overheads in the data:\nL(p) cannot be derived",
                 ha="center", va="center", transform=ax2.transAxes)
    ax2.set_xlabel("peers addressed p")
    ax2.set_ylabel("us")
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)
