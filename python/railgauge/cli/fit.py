"""`railgauge fit`: a model from a measurements file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from railgauge.cli.common import UserError, no_file
from railgauge.terminal import Terminal


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", type=click.Choice(["auto", "loggp", "lop"]), default="auto",
              show_default=True,
              help="Model to fit: loggp (PRTT JSON Lines, a Netgauge loggp table) or lop "
                   "(onen JSON Lines or a CSV 'p,rtt_us[,os_us,or_us]'); auto: lop for onen "
                   "data (a .csv file, a CSV whose header has p and rtt_us, JSON Lines of the "
                   "onen pattern), else loggp.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the model JSON (default: model-<model>.json beside FILE).")
@click.option("--json", "as_json", is_flag=True, help="Print the model JSON to stdout.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed (loggp).")
@click.option("--format", "fmt", type=click.Choice(["auto", "railgauge", "netgauge"]),
              default="auto", show_default=True,
              help="loggp: FILE's format: railgauge JSON Lines, or the table Netgauge's loggp "
                   "pattern writes (netgauge -o FILE -x loggp); auto tells them apart by "
                   "content.")
@click.option("--stat", type=click.Choice(["min", "median"]), default="min", show_default=True,
              help="lop: the statistic of the primary fit (both are fitted).")
@click.option("--direction", type=click.Choice(["1:n", "n:1"]), default=None,
              help="lop: the direction of the primary series (default 1:n).")
@click.option("--mode", "posting", type=click.Choice(["single", "list", "inject", "rma"]),
              default=None, help="lop: the posting mode of the primary series (default: the "
                                 "first present of single, list, inject, rma).")
@click.option("--loggp", "loggp_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="lop: a model-loggp.json whose L, o, g give the LogP "
                                 "prediction (default: LogP calibrated on the two smallest "
                                 "p of the onen data).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="lop: also draw RTT(p)/p, the fit, LogP and L(p) (PNG).")
def fit(file: Path, model: str, out: Path | None, as_json: bool, seed: int, fmt: str,
        stat: str, direction: str | None, posting: str | None, loggp_path: Path | None,
        plot_path: Path | None) -> int:
    """Fit a model to FILE (loggp: JSON Lines of `railgauge measure`/`railgauge-bench prtt`,
    or a Netgauge loggp table; lop: JSON Lines of `railgauge-bench onen`, or a CSV with a
    header `p,rtt_us`)."""
    term = Terminal()
    if not file.is_file():
        raise UserError(no_file(file))
    if model == "auto":
        from railgauge.onen import is_lop_data

        model = "lop" if fmt == "auto" and is_lop_data(file) else "loggp"
    dest = out if out is not None else file.with_name(f"model-{model}.json")
    if model == "lop":
        if fmt != "auto":
            raise UserError("--format applies to --model loggp only")
        return _fit_lop(term, file, dest, as_json, stat, direction, posting, loggp_path,
                        plot_path)
    from railgauge.fit.loggp import fit_loggp
    from railgauge.measurements import MeasurementError
    from railgauge.netgauge import read_any
    from railgauge.report.html import format_table

    try:
        meas = read_any(file, fmt)
        sizes = len({p.s for p in meas.records})
        with term.status(f"fitting LogGP to {sizes} sizes (break support, CIs, 5-fold "
                         "cross-validation)"):
            result = fit_loggp(meas, seed=seed, accuracy=True)
    except (MeasurementError, ValueError) as exc:
        raise UserError(str(exc)) from None
    doc = result.to_json()
    dest.write_text(json.dumps(doc, indent=2) + "\n")
    if as_json:
        term.result(json.dumps(doc, indent=2))
    else:
        term.result(format_table(result))
        term.result(f"\nmodel: {dest}")
    for note in meas.warnings:  # the reader's findings (a Netgauge table's notes included)
        term.warn(note)
    return 0


def _fit_lop(term: Terminal, file: Path, dest: Path, as_json: bool, stat: str,
             direction: str | None, posting: str | None, loggp_path: Path | None,
             plot_path: Path | None) -> int:
    from railgauge.fit.lop import fit_lop
    from railgauge.onen import read_onen
    from railgauge.report.compare import as_text, lop_table, plot_lop

    if loggp_path is not None and not loggp_path.is_file():
        raise UserError(no_file(loggp_path))
    try:
        data = read_onen(file)
        result = fit_lop(data, stat=stat, direction=direction, mode=posting, loggp=loggp_path)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    doc = result.to_json()
    dest.write_text(json.dumps(doc, indent=2) + "\n")
    if plot_path is not None:
        plot_lop(result, plot_path)
    if as_json:
        term.result(json.dumps(doc, indent=2))
        return 0
    term.result(as_text(lop_table(result)))
    term.result(f"\n{doc['message']}")
    tab = doc.get("table") or {}
    if "L_us" in tab or "L_list_us" in tab:
        key = "L_us" if "L_us" in tab else "L_list_us"
        tkey = "t_1n_us" if key == "L_us" else "t_1n_list_us"
        name = "L" if key == "L_us" else "L_list"
        if name == "L":
            term.result(f"\nL(p) = {doc['latency_formula']}")
        pick = _sample(tab["p"])
        term.result(f"{'p':<10}" + "".join(f"{p:>9d}" for p in pick))
        for label, k in ((f"{name}(p)", key), ("t_1:n" if name == "L" else "t_1:n^list", tkey)):
            vals = dict(zip(tab["p"], tab[k], strict=True))
            term.result(f"{label:<10}" + "".join(f"{vals[p]:9.4g}" for p in pick) + "  us")
    logp = doc["logp"]
    rows = logp.get("table") or []
    if rows:
        term.result(f"\nLogP prediction {logp['formula']} beside the measured RTT(P)/P "
                    f"({logp['stat']}); {logp['source']}")
        chosen = set(_sample([r["P"] for r in rows]))
        term.result(f"{'P':>5} {'measured':>10} {'LoP':>10} {'LogP':>10}")
        for r in rows:
            if r["P"] in chosen:
                lop_v = "-" if r["lop_us"] is None else f"{r['lop_us']:.4g}"
                term.result(f"{r['P']:>5} {r['measured_us']:>10.4g} {lop_v:>10} "
                            f"{r['logp_us']:>10.4g}")
    for name, block in (("RTT", doc["rtt"]), ("o_s", doc["overhead_send"]),
                        ("o_r", doc["overhead_recv"])):
        for w in (block or {}).get("warnings", []):
            term.warn(f"{name}: {w}")
    for note in doc.get("notes", []):
        term.warn(note)
    term.result(f"\nmodel: {dest}")
    return 0


def _sample(ps: list[int], k: int = 8) -> list[int]:
    """At most k of the p values, spread over the range (first and last included)."""
    if len(ps) <= k:
        return list(ps)
    idx = sorted({round(i * (len(ps) - 1) / (k - 1)) for i in range(k)})
    return [ps[i] for i in idx]
