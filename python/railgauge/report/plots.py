"""Figures of a LogGP fit: the PRTT curves, the derived gap and overhead series, residuals.

Every function draws on its own :class:`matplotlib.figure.Figure` with the Agg canvas (no
pyplot state, no display needed) and writes a PNG to a path or a binary file object.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

from railgauge.fit.loggp import DerivedSeries, LoggpFit, derive_series, g_all, overhead, prtt
from railgauge.measurements import Measurements, Triples, triples

__all__ = ["format_bytes", "plot_gap", "plot_prtt", "plot_residuals"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
PathOrFile = str | Path | IO[bytes]

_DPI = 110
_SPAN_COLOURS = ("#f2f5fa", "#fbf6ec")
_SERIES_COLOURS = {"p1": "C0", "pn": "C1", "pd": "C2"}


def format_bytes(n: float) -> str:
    """A size in bytes for people: ``12 KiB`` when exact, else ``12289 B``; ``1.5 MiB``."""
    if not math.isfinite(n):
        return "inf"
    v = round(n)
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= f:
            if v % f == 0:
                return f"{v // f} {unit}"
            if v % (f // 2) == 0:
                return f"{v / f:.1f} {unit}"
            break
    return f"{v} B"


def _save(fig: Figure, path: PathOrFile) -> Path | None:
    FigureCanvasAgg(fig)
    fig.savefig(path, format="png", dpi=_DPI)
    return Path(path) if isinstance(path, str | Path) else None


def _size_axis(ax: Axes, smin: float, smax: float) -> None:
    """Log-scaled size axis with ticks at powers of two, labelled in B / KiB / MiB."""
    lo = max(smin, 1.0)
    hi = max(smax, lo * 2.0)
    ax.set_xscale("log", base=2)
    e0, e1 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    step = max(1, math.ceil((e1 - e0) / 10))
    ticks = [2.0**e for e in range(e0, e1 + 1, step)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_bytes(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo / 1.3, hi * 1.3)
    for label in ax.get_xticklabels():
        label.set_rotation(30)
        label.set_horizontalalignment("right")


def _range_edges(fit: LoggpFit, smin: float, smax: float) -> list[tuple[float, float]]:
    """Plot extents of the ranges: from the first measured size of a range to the first of
    the next (geometric midpoint of the unmeasured gap between them)."""
    edges: list[tuple[float, float]] = []
    rs = fit.ranges
    for i, r in enumerate(rs):
        start = max(float(r.from_bytes), 1.0) if i > 0 else max(smin, 1.0)
        if i > 0:
            prev_last = rs[i - 1].to_bytes or rs[i - 1].from_bytes
            start = math.sqrt(max(prev_last, 1) * max(r.from_bytes, 1))
        if i + 1 < len(rs):
            last = r.to_bytes if r.to_bytes is not None else r.from_bytes
            end = math.sqrt(max(last, 1) * max(rs[i + 1].from_bytes, 1))
        else:
            end = max(smax, start * 1.01)
        edges.append((start, end))
    return edges


def _percent(v: Any) -> str:
    return f"{100.0 * float(v):.0f}%" if isinstance(v, int | float) else "n/a"


def _shade_ranges(ax: Axes, fit: LoggpFit, smin: float, smax: float, *, label: bool) -> None:
    """The ranges as alternating shaded spans; a dashed line at every protocol change (with
    its break support in the range's label) and a dotted one at every bend (a break of the
    optimal partition merged away for too little support), labelled with its support."""
    edges = _range_edges(fit, smin, smax)
    for i, (a, b) in enumerate(edges):
        ax.axvspan(a, b, color=_SPAN_COLOURS[i % 2], zorder=0, lw=0)
        if i > 0:
            ax.axvline(a, color="0.25", ls="--", lw=1.3, zorder=1)
            sup = fit.ranges[i].support_from
            if label and sup is not None:
                _line_label(ax, a, f"change {_percent(sup)}", "0.15")
        if label:
            r = fit.ranges[i]
            tag = f"range {i + 1}: from {format_bytes(r.from_bytes)}"
            if not r.reliable:
                tag += " (unreliable)"
            ax.text(
                math.sqrt(a * b),
                1.01 + 0.04 * (i % 3),  # staggered, so that narrow ranges do not collide
                tag,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=8,
                color="0.25",
                clip_on=False,
            )
    for bend in fit.bends:
        lo, hi = (float(v) for v in bend["between_bytes"])
        at = math.sqrt(max(lo, 1.0) * max(hi, 1.0))
        ax.axvline(at, color="0.45", ls=":", lw=1.4, zorder=1)
        if label:
            _line_label(ax, at, f"bend {_percent(bend.get('support'))}", "0.3")


def _line_label(ax: Axes, at: float, text: str, colour: str) -> None:
    """A label along a vertical line, at the top of the axes, left of the line."""
    ax.text(
        at,
        0.98,
        text + " ",
        transform=ax.get_xaxis_transform(),
        rotation=90,
        ha="right",
        va="top",
        fontsize=7.5,
        color=colour,
        zorder=4,
        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75},
    )


def _boundary_legend(ax: Axes, fit: LoggpFit) -> None:
    """Legend entries for the dashed protocol changes and the dotted bends."""
    if len(fit.ranges) > 1:
        ax.plot([], [], color="0.25", ls="--", lw=1.3, label="protocol change (break support)")
    if fit.bends:
        ms = _min_support(fit)
        within = f" (support < {_percent(ms)})" if ms is not None else ""
        ax.plot(
            [], [], color="0.45", ls=":", lw=1.4, label=f"bend: not reproducible{within}, merged"
        )


def _min_support(fit: LoggpFit) -> float | None:
    bs = (fit.criterion or {}).get("break_support") or {}
    v = bs.get("min_support")
    return float(v) if isinstance(v, int | float) else None


def _grid(ax: Axes) -> None:
    ax.grid(True, which="major", color="0.85", lw=0.6)
    ax.set_axisbelow(True)


def _range_grid(fit: LoggpFit, smin: float, smax: float, points: int = 60) -> list[FloatArray]:
    return [
        np.geomspace(max(a, 1.0), max(b, a * 1.0001), points)
        for a, b in _range_edges(fit, smin, smax)
    ]


def _interp_d(sizes: FloatArray, d: FloatArray, s: FloatArray) -> FloatArray:
    """The delay d(s) between measured sizes, interpolated log-log (d > 0)."""
    ls = np.log(np.maximum(sizes, 1.0))
    ld = np.log(np.maximum(d, 1e-9))
    return np.asarray(np.exp(np.interp(np.log(np.maximum(s, 1.0)), ls, ld)))


def plot_prtt(
    meas: Measurements, fit: LoggpFit, path: PathOrFile, *, title: str | None = None
) -> Path | None:
    """PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) on log-log axes with 95% CI error bars,
    the fitted model curves and the protocol ranges."""
    tr = triples(meas)
    fig = Figure(figsize=(9.0, 5.6))
    ax = fig.add_subplot(1, 1, 1)
    if len(tr) == 0:
        ax.text(0.5, 0.5, "no sizes with all three patterns", ha="center", transform=ax.transAxes)
        return _save(fig, path)
    sizes = tr.sizes.astype(np.float64)
    smin, smax = float(sizes.min()), float(sizes.max())
    n = int(np.bincount(tr.n_pn).argmax())
    series = (
        ("p1", tr.p1, tr.p1_sigma, "PRTT(1,0,s)"),
        ("pn", tr.pn, tr.pn_sigma, f"PRTT({n},0,s)"),
        ("pd", tr.pd, tr.pd_sigma, f"PRTT({n},d,s)"),
    )
    for key, y, sig, label in series:
        ax.errorbar(
            np.maximum(sizes, 1.0),
            y,
            yerr=1.96 * sig,
            fmt="o",
            ms=3.5,
            color=_SERIES_COLOURS[key],
            ecolor=_SERIES_COLOURS[key],
            elinewidth=1.0,
            capsize=2,
            label=f"{label} measured (IQM or median, 95% CI)",
            zorder=3,
        )
    if fit.ranges:
        # The delay as the fit used it (d_us; d_actual in older files that recorded it).
        d_used = _derived(tr, fit).d
        _shade_ranges(ax, fit, smin, smax, label=True)
        _boundary_legend(ax, fit)
        for i, s in enumerate(_range_grid(fit, smin, smax)):
            d = _interp_d(sizes, d_used, s)
            curves = (
                ("p1", prtt(fit, 1, 0.0, s)),
                ("pn", prtt(fit, n, 0.0, s)),
                ("pd", prtt(fit, n, d, s)),
            )
            for key, yv in curves:
                ax.plot(
                    s,
                    yv,
                    "-",
                    color=_SERIES_COLOURS[key],
                    lw=1.4,
                    alpha=0.85,
                    label="LogGP model" if (i == 0 and key == "p1") else None,
                    zorder=2,
                )
    ax.set_yscale("log")
    _size_axis(ax, smin, smax)
    _grid(ax)
    ax.set_xlabel("message size s")
    ax.set_ylabel("round-trip time (us)")
    ax.set_title(
        title or f"PRTT over {meas.transport}: measurements and fitted LogGP model", pad=34
    )
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    return _save(fig, path)


def _derived(tr: Triples, fit: LoggpFit) -> DerivedSeries:
    """The derived series with the fit's normalisers."""
    m = fit.method or {}
    return derive_series(
        tr,
        rel_tol=float(m.get("rel_tol", 0.03)),
        abs_floor_us=float(m.get("abs_floor_us", 0.01)),
        local_scatter_floor=bool(m.get("local_scatter", True)),
    )


def plot_gap(
    meas: Measurements, fit: LoggpFit, path: PathOrFile, *, title: str | None = None
) -> Path | None:
    """G_all(s), the send and receive overheads o_s(s) and o_r(s), and PRTT(1,0,s)/2 -
    o_s(s) - o_r(s) per size with the fitted lines per range."""
    tr = triples(meas)
    fig = Figure(figsize=(9.0, 9.5))
    axes = [fig.add_subplot(3, 1, k) for k in (1, 2, 3)]
    if len(tr) == 0:
        axes[0].text(0.5, 0.5, "no data", ha="center", transform=axes[0].transAxes)
        return _save(fig, path)
    ds = _derived(tr, fit)
    sizes = np.maximum(ds.sizes.astype(np.float64), 1.0)
    smin, smax = float(sizes.min()), float(sizes.max())
    grids = _range_grid(fit, smin, smax) if fit.ranges else []
    measured_r = bool(ds.o_r_measured.any())
    l_name = "PRTT(1,0,s)/2 - o_s(s) - o_r(s)" if measured_r else "PRTT(1,0,s)/2 - 2 o(s)"

    def model_l(s: FloatArray) -> FloatArray:
        p1 = np.asarray(prtt(fit, 1, 0.0, s))
        o_sum = np.asarray(overhead(fit, s, "send")) + np.asarray(overhead(fit, s, "recv"))
        return np.asarray(0.5 * p1 - o_sum)

    # (axes, values, CI sigmas, shown mask, name, colour, marker, model, model label)
    Panel = tuple[Axes, FloatArray, FloatArray, BoolArray, str, str, str, Any, str]
    every = np.ones(ds.sizes.size, dtype=bool)
    panels: list[Panel] = [
        (
            axes[0],
            ds.g_all,
            ds.g_all_stat,
            every,
            "G_all(s) = (PRTT(n,0,s) - PRTT(1,0,s)) / (n-1)",
            "C0",
            "o",
            lambda s: g_all(fit, s),
            "g_r + (s-1) G_r",
        ),
        (
            axes[1],
            ds.o_s,
            ds.o_s_stat,
            ds.o_valid,
            "o_s(s) = (PRTT(n,d,s) - PRTT(1,0,s)) / (n-1) - d"
            + ("" if measured_r else "  (o_r assumed equal)"),
            "C0",
            "o",
            lambda s: overhead(fit, s, "send"),
            "o_s + (s-1) O_s,r  (o_s network-wide)",
        ),
    ]
    if measured_r:
        panels.append(
            (
                axes[1],
                ds.o_r,
                ds.o_r_stat,
                ds.o_valid & ds.o_r_measured,
                "o_r(s) measured (receive call, message already there)",
                "C2",
                "s",
                lambda s: overhead(fit, s, "recv"),
                "o_r + (s-1) O_r,r  (o_r network-wide)",
            )
        )
    panels.append(
        (
            axes[2],
            ds.y_l,
            ds.y_l_stat,
            ds.o_valid,
            l_name,
            "C0",
            "o",
            model_l,
            "L + (s-1) G_lat,r  (L network-wide)",
        )
    )
    fit_colours = {"C0": "C3", "C2": "C4"}
    left_out_shown: set[int] = set()
    for ax, y, sig, mask, name, colour, marker, model, mlabel in panels:
        k = axes.index(ax)
        ax.errorbar(
            sizes[mask],
            y[mask],
            yerr=1.96 * sig[mask],
            fmt=marker,
            ms=3.5,
            color=colour,
            capsize=2,
            elinewidth=1.0,
            label=f"{name} (95% CI)",
            zorder=3,
        )
        if k > 0 and not bool(ds.o_valid.all()) and k not in left_out_shown:
            left_out_shown.add(k)
            ax.plot(
                sizes[~ds.o_valid],
                y[~ds.o_valid],
                "x",
                color="0.5",
                label="left out: d not above G_all(s)",
                zorder=3,
            )
        if fit.ranges:
            for i, s in enumerate(grids):
                ax.plot(
                    s,
                    model(s),
                    "-",
                    color=fit_colours[colour],
                    lw=1.5,
                    label=f"model, range r: {mlabel}" if i == 0 else None,
                    zorder=2,
                )
    for k, ax in enumerate(axes):
        if fit.ranges:
            _shade_ranges(ax, fit, smin, smax, label=(k == 0))
            if k == 0:
                _boundary_legend(ax, fit)
        shown = [(y[m]) for a, y, _, m, *_ in panels if a is ax]
        vals = np.concatenate(shown) if shown else np.array([1.0])
        positive = bool(vals.size and np.all(vals > 0.0))
        mags = np.abs(vals[vals != 0.0])
        if positive and (vals.max() / max(vals.min(), 1e-12)) > 20.0:
            ax.set_yscale("log")
        elif mags.size and mags.max() / max(float(np.median(mags)), 1e-12) > 20.0:
            # Values of both signs over decades (L beyond a transport's buffer): symlog,
            # so that the small values stay visible.
            ax.set_yscale("symlog", linthresh=float(np.quantile(mags, 0.1)))
        _size_axis(ax, smin, smax)
        _grid(ax)
        ax.legend(loc="best", fontsize=8, framealpha=0.9)
    axes[0].set_ylabel("gap per message (us)")
    axes[1].set_ylabel("overhead (us)")
    axes[2].set_ylabel("latency part (us)")
    axes[2].set_xlabel("message size s")
    axes[0].set_title(title or f"Derived LogGP series over {meas.transport}", pad=34)
    fig.tight_layout()
    return _save(fig, path)


def plot_residuals(
    meas: Measurements, fit: LoggpFit, path: PathOrFile, *, title: str | None = None
) -> Path | None:
    """Normalised residuals of the fitted series, and the relative error of the model
    PRTT against each measured pattern."""
    tr = triples(meas)
    fig = Figure(figsize=(9.0, 7.0))
    ax1 = fig.add_subplot(2, 1, 1)
    ax2 = fig.add_subplot(2, 1, 2)
    if len(tr) == 0 or not fit.ranges:
        ax1.text(0.5, 0.5, "no fit", ha="center", transform=ax1.transAxes)
        return _save(fig, path)
    ds = _derived(tr, fit)
    sizes = np.maximum(ds.sizes.astype(np.float64), 1.0)
    s_model = ds.sizes.astype(np.float64)
    smin, smax = float(sizes.min()), float(sizes.max())
    os_fit = np.asarray(overhead(fit, s_model, "send"))
    or_fit = np.asarray(overhead(fit, s_model, "recv"))
    measured_r = bool(ds.o_r_measured.any())
    series = [
        ("G_all(s)", ds.g_all, np.asarray(g_all(fit, s_model)), ds.g_all_sigma, None, "o"),
        ("o_s(s)", ds.o_s, os_fit, ds.o_s_sigma, ds.o_valid, "s"),
    ]
    if measured_r:
        series.append(("o_r(s)", ds.o_r, or_fit, ds.o_r_sigma, ds.o_valid & ds.o_r_measured, "D"))
    series.append(
        (
            "PRTT(1,0,s)/2 - o_s(s) - o_r(s)" if measured_r else "PRTT(1,0,s)/2 - 2 o(s)",
            ds.y_l,
            0.5 * np.asarray(prtt(fit, 1, 0.0, s_model)) - os_fit - or_fit,
            ds.y_l_sigma,
            ds.o_valid,
            "^",
        )
    )
    _shade_ranges(ax1, fit, smin, smax, label=True)
    ax1.axhspan(-1.0, 1.0, color="0.9", zorder=0.5, lw=0, label="within 1 sigma")
    ax1.axhline(0.0, color="0.4", lw=0.8)
    for name, y, yf, sig, valid, marker in series:
        keep = np.ones(y.size, dtype=bool) if valid is None else valid
        ax1.plot(sizes[keep], ((y - yf) / sig)[keep], marker, ms=4, label=name, zorder=3)
    ax1.set_ylabel("residual / sigma")
    ax1.set_title(title or f"Fit residuals over {meas.transport}", pad=34)
    _size_axis(ax1, smin, smax)
    _grid(ax1)
    ax1.legend(loc="best", fontsize=8, ncol=4, framealpha=0.9)

    n = int(np.bincount(tr.n_pn).argmax())
    pats = (
        ("PRTT(1,0,s)", tr.p1, prtt(fit, 1, 0.0, s_model), "p1"),
        (f"PRTT({n},0,s)", tr.pn, prtt(fit, tr.n_pn, 0.0, s_model), "pn"),
        (f"PRTT({n},d,s)", tr.pd, prtt(fit, tr.n_pd, ds.d, s_model), "pd"),
    )
    _shade_ranges(ax2, fit, smin, smax, label=False)
    ax2.axhline(0.0, color="0.4", lw=0.8)
    for name, y, yf, key in pats:
        yfa = np.asarray(yf)
        ax2.plot(
            sizes,
            100.0 * (y - yfa) / yfa,
            "o-",
            ms=3.5,
            lw=0.8,
            color=_SERIES_COLOURS[key],
            label=name,
            zorder=3,
        )
    ax2.set_ylabel("(measured - model) / model (%)")
    ax2.set_xlabel("message size s")
    _size_axis(ax2, smin, smax)
    _grid(ax2)
    ax2.legend(loc="best", fontsize=8, ncol=3, framealpha=0.9)
    fig.tight_layout()
    return _save(fig, path)
