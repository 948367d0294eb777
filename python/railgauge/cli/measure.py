"""`railgauge measure`: only the measurement, into a JSON Lines file."""

from __future__ import annotations

from pathlib import Path

import click

from railgauge.cli.common import MeasureArgs, make_plan, measure_options, run_measurement
from railgauge.terminal import Terminal


@click.command()
@measure_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("measurements.jsonl"), show_default=True,
              help="JSON Lines file to write.")
def measure(margs: MeasureArgs, verbose: int, quiet: int, out: Path) -> int:
    """Measure PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) over a size sweep."""
    term = Terminal(verbose - quiet)
    plan = make_plan(margs)
    res = run_measurement(plan, out, term)
    term.result(f"{res.points} points in {res.wall_s:.1f} s -> {out}")
    return 0
