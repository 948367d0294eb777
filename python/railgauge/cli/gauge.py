"""`railgauge gauge`: measure, fit, print the table and write the report."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from railgauge.cli.common import FailError, make_plan, measure_options, run_measurement
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
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Report folder (default: a new railgauge-report-<time> folder).")
@click.option("--json", "as_json", is_flag=True, help="Print the fitted model as JSON.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the bootstrap confidence intervals.")
def gauge(transport: str, quick: bool, min_size: int, max_size: int, n_msgs: int,
          budget: float | None, no_refine: bool, per_octave: int | None, verbose: int,
          quiet: int, out: Path | None,
          as_json: bool, seed: int) -> int:
    """Measure LogGP by PRTT, fit it per protocol range, and write a report.

    On the default (two local ranks over shared memory) this takes under a
    minute; --quick about a quarter of that."""
    term = Terminal(verbose - quiet)
    plan = make_plan(transport, quick, min_size, max_size, n_msgs, budget, no_refine,
                     per_octave)
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

    from railgauge.fit.loggp import fit_loggp
    from railgauge.measurements import read_measurements
    from railgauge.report.html import format_table, write_report

    meas = read_measurements(meas_path)
    fit = fit_loggp(meas, seed=seed)
    model = fit.to_json()
    (out_dir / "model-loggp.json").write_text(json.dumps(model, indent=2) + "\n")
    report = write_report(out_dir, meas, fit, {"wall_s": time.monotonic() - t0,
                                               "quick": quick,
                                               "refined_sizes": res.refined_sizes})
    wall = time.monotonic() - t0
    if as_json:
        term.result(json.dumps(model, indent=2))
        term.info(f"report: {out_dir}")
    else:
        term.result(format_table(fit))
        term.result(f"\nreport folder: {out_dir}\n  {report}\n  measured + fitted in {wall:.1f} s")
    return 0
