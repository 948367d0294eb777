"""`railgauge gauge`: measure, fit, print the table and write the report."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from railgauge.cli.common import (
    FailError,
    MeasureArgs,
    UserError,
    make_plan,
    measure_options,
    run_measurement,
)
from railgauge.terminal import Terminal


def default_out_dir() -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(f"railgauge-report-{stamp}")
    out, k = base, 1
    while out.exists():
        k += 1
        out = Path(f"{base}-{k}")
    return out


@click.command()
@measure_options
@click.option("-n", "--ranks", type=click.IntRange(2, 4096), default=2, show_default=True,
              help="Ranks of the 1:n / n:1 (onen) measurement of the LoP model: p = 1 .. "
                   "N-1 peers (PRTT always runs between ranks 0 and 1). The LoP curve needs "
                   "N >= 7; with 2 ranks only p = 1 is measured. (-n is --ranks; --n is "
                   "the PRTT train length.)")
@click.option("--no-onen", is_flag=True,
              help="Skip the onen measurement (and the LoP fit); the models are still "
                   "compared on the PRTT data.")
@click.option("--no-barrier", is_flag=True,
              help="With more than two ranks, skip the barrier section (every barrier of "
                   "coll/ measured beside the simulator's prediction from this fit).")
@click.option("--onen-budget", type=click.FloatRange(1.0, 86400.0), default=None,
              help="Seconds the onen measurement may take (default: a third of --budget, at "
                   "least 5).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Report folder (default: a new railgauge-report-<time> folder).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the fitted LogGP model as JSON, with the keys onen, lop and "
                   "compare added.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the bootstrap confidence intervals.")
@click.option("--rails", "rails_text", default=None, metavar="R0,R1,...|testbed",
              help="Also measure each rail alone (PRTT over tcp:<rail>: an interface, address "
                   "or subnet, as RG_RAILS_LIST takes them; 'testbed' for the rails of "
                   "`railgauge testbed up`), fit it, and write rails.json with the weights "
                   "of the weighted policy (the rails' bandwidths 1/G) and the RG_RAILS_* "
                   "settings that use them. With --netns the ranks run there.")
def gauge(margs: MeasureArgs, verbose: int, quiet: int, ranks: int, no_onen: bool,
          no_barrier: bool, onen_budget: float | None, out: Path | None, as_json: bool,
          seed: int, rails_text: str | None) -> int:
    """Measure LogGP by PRTT, fit it per protocol range, measure 1:n / n:1 (LoP), compare
    the models, and write a report.

    On the default (two local ranks over shared memory) this takes under a
    minute; --quick about a quarter of that."""
    term = Terminal(verbose - quiet)
    plan = make_plan(margs)
    quick = margs.quick
    rail_names: list[str] | None = None
    if rails_text is not None:
        from railgauge.gauge_rails import RailsGaugeError, parse_rails

        try:
            rail_names = parse_rails(rails_text)
        except RailsGaugeError as exc:
            raise UserError(str(exc)) from None
    out_dir = out if out is not None else default_out_dir()
    created = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FailError(f"cannot create the report folder {out_dir}: {exc.strerror}") from None
    t0 = time.monotonic()
    meas_path = out_dir / "measurements.jsonl"
    try:
        res = run_measurement(plan, meas_path, term)
    except FailError:
        # A folder this run made and that holds nothing is not left behind.
        if created and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise
    term.detail(f"measured {res.points} points in {res.wall_s:.1f} s"
                + (f"; refined at {res.refined_sizes}" if res.refined_sizes else ""))
    onen_path: Path | None = None
    not_measured: str | None = None
    onen_wall: float | None = None
    if not no_onen:
        ob = onen_budget if onen_budget is not None else max(5.0, plan.budget_s / 3.0)
        onen_path, not_measured, onen_wall = measure_onen_step(
            plan, out_dir / "onen.jsonl", term, ranks=ranks, budget_s=ob)
        if not_measured is not None:
            term.warn(f"onen not measured: {not_measured}")
    barrier = None
    if ranks > 2 and not no_barrier:
        from railgauge.gauge_barrier import measure_barriers

        with term.progress(f"barriers over {plan.transport}, {ranks} ranks") as bcb:
            barrier = measure_barriers(plan, ranks, progress=bcb)
        if barrier.reason:
            term.warn(f"barriers not measured: {barrier.reason}")

    flags_path: Path | None = None
    if plan.transport == "shm":
        from railgauge.gauge_barrier import measure_flag_model

        with term.status("flag model (the shared-memory barrier's signals)"):
            flags_path, why = measure_flag_model(plan, ranks, out_dir)
        if why is not None:
            term.warn(f"flag model not measured: {why}")

    rails = None
    if rail_names is not None:
        from railgauge.gauge_rails import RailsGaugeError, measure_rails

        try:
            rails = measure_rails(plan, rail_names, out_dir,
                                  lambda p, path: run_measurement(p, path, term), seed=seed)
        except RailsGaugeError as exc:
            raise FailError(str(exc)) from None

    from railgauge.fit.loggp import fit_loggp
    from railgauge.gauge_lop import LopPart, analyse_lop
    from railgauge.measurements import read_measurements
    from railgauge.report.html import format_table, write_report

    meas = read_measurements(meas_path)
    with term.status("fitting LogGP and cross-validating it"):
        fit = fit_loggp(meas, seed=seed, accuracy=True)
    model = fit.to_json()
    (out_dir / "model-loggp.json").write_text(json.dumps(model, indent=2) + "\n")
    if barrier is not None and barrier.status == "measured":
        from railgauge.gauge_barrier import predict_barriers

        with term.status("simulating the barriers on the fit"):
            predict_barriers(barrier, out_dir / "model-loggp.json", flags_path)
    if barrier is not None:
        (out_dir / "barrier.json").write_text(json.dumps(barrier.to_json(), indent=2) + "\n")
    with term.status("LoP fit and model comparison"):
        try:
            part = analyse_lop(meas, fit, out_dir, onen_path=onen_path,
                               not_measured=not_measured, skipped=no_onen,
                               ranks=None if no_onen else ranks, wall_s=onen_wall)
        except Exception as exc:  # the measurements and the LogGP report still count
            part = LopPart(status="fit failed", reason=f"the LoP analysis failed: {exc!r}",
                           ranks=ranks, compare_error="the LoP analysis failed")
            term.warn(part.reason or "")
    for w in part.warnings:
        term.warn(w)
    report = write_report(out_dir, meas, fit, {"wall_s": time.monotonic() - t0,
                                               "quick": quick,
                                               "refined_sizes": res.refined_sizes,
                                               "onen_ranks": None if no_onen else ranks,
                                               "onen": part.headline(),
                                               **({"barriers": barrier.headline()}
                                                  if barrier is not None else {})},
                          lop=part, barrier=barrier)
    wall = time.monotonic() - t0
    if as_json:
        term.result(json.dumps({**model, **part.summary(),
                                **({"flags": json.loads(flags_path.read_text())}
                                   if flags_path is not None else {}),
                                **({"barrier": barrier.to_json()} if barrier is not None
                                   else {}),
                                **({"rails": rails.to_json()} if rails is not None
                                   else {})}, indent=2))
        term.info(f"report: {out_dir}")
    else:
        term.result(format_table(fit))
        term.result(lop_text(part))
        if barrier is not None:
            from railgauge.report.barrier import barrier_text

            term.result(barrier_text(barrier))
        if rails is not None:
            term.result(rails.text() + f"\n  (rails.json in {out_dir})")
        term.result(f"\nreport folder: {out_dir}\n  {report}\n  measured + fitted in {wall:.1f} s")
    return 0


def measure_onen_step(plan: Any, out: Path, term: Terminal, *, ranks: int,
                      budget_s: float) -> tuple[Path | None, str | None, float | None]:
    """Runs ``railgauge-bench onen`` with a progress display: (the file, None, its wall
    time) or (None, why not, None). A tool without the onen pattern, a failed run or a
    launcher that cannot start are reasons, never errors: the gauge goes on without onen."""
    from railgauge.launcher import LaunchError
    from railgauge.measure import MeasureError, measure_onen
    from railgauge.native import NativeToolError

    try:
        with term.progress(f"1:n / n:1 over {plan.transport}, {ranks} ranks") as cb:
            res = measure_onen(plan, out, ranks=ranks, budget_s=budget_s, progress=cb)
    except (MeasureError, NativeToolError, LaunchError) as exc:
        return None, str(exc), None
    term.detail(f"measured {res.points} onen points in {res.wall_s:.1f} s")
    return res.path, None, res.wall_s


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
            lines.append(f"{r['P']:>4} {_n(r['measured_us'])} {_n(r.get('lop_us'))} "
                         f"{_n(r['logp_us'])} {_n(lmap.get(r['P']))}")
        if len(rows) > 16:
            lines.append(f"  ... {len(rows) - 16} more in the report")
    if part.comparison is not None:
        lines.append("")
        lines.append(as_text(comparison_table(part.comparison)))
        lines.append(f"ranking: {' > '.join(part.comparison.ranking())}")
    elif part.compare_error:
        lines.append(f"no model comparison: {part.compare_error}")
    return "\n".join(lines)


def _n(v: Any) -> str:
    return f"{v:>10.4g}" if isinstance(v, int | float) else f"{'-':>10}"
