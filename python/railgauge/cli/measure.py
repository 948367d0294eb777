"""`railgauge measure`: only the measurement, into a JSON Lines file (or Netgauge's table)."""

from __future__ import annotations

from pathlib import Path

import click

from railgauge.cli.common import MeasureArgs, UserError, make_plan, measure_options, run_measurement
from railgauge.terminal import Terminal


@click.command()
@measure_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write (default measurements.jsonl; loggp.out with --format "
                   "netgauge).")
@click.option("--format", "fmt", type=click.Choice(["railgauge", "netgauge"]),
              default="railgauge", show_default=True,
              help="railgauge: JSON Lines; netgauge: Netgauge's loggp table (as `railgauge "
                   "export --to netgauge`, L, g, G from a fit of the run), the JSON Lines "
                   "kept beside it as OUT.jsonl.")
def measure(margs: MeasureArgs, verbose: int, quiet: int, out: Path | None, fmt: str) -> int:
    """Measure PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) over a size sweep."""
    term = Terminal(verbose - quiet)
    plan = make_plan(margs)
    if fmt == "railgauge":
        dest = out if out is not None else Path("measurements.jsonl")
        res = run_measurement(plan, dest, term)
        term.result(f"{res.points} points in {res.wall_s:.1f} s -> {dest}")
        return 0
    from railgauge.export.common import load_source
    from railgauge.export.files import ExportError
    from railgauge.export.netgauge import CODES_MAX_ROWS, export_netgauge

    table = out if out is not None else Path("loggp.out")
    raw = table.with_name(table.name + ".jsonl")
    res = run_measurement(plan, raw, term)
    try:
        doc = export_netgauge(load_source(raw), table, max_rows=CODES_MAX_ROWS)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    term.result(f"{res.points} points in {res.wall_s:.1f} s -> {table} ({doc['rows']} rows; "
                f"JSON Lines: {raw})")
    return 0
