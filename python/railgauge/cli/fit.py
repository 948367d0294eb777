"""`railgauge fit`: a model from a measurements file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from railgauge.cli.common import UserError
from railgauge.terminal import Terminal


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", type=click.Choice(["loggp"]), default="loggp", show_default=True,
              help="Model to fit.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the model JSON (default: model-<model>.json beside FILE).")
@click.option("--json", "as_json", is_flag=True, help="Print the model JSON to stdout.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
def fit(file: Path, model: str, out: Path | None, as_json: bool, seed: int) -> int:
    """Fit a model to FILE (JSON Lines of `railgauge measure`/`railgauge-bench prtt`)."""
    from railgauge.fit.loggp import fit_loggp
    from railgauge.measurements import MeasurementError, read_measurements
    from railgauge.report.html import format_table

    term = Terminal()
    if not file.is_file():
        raise UserError(f"no such file: {file}")
    try:
        meas = read_measurements(file)
        result = fit_loggp(meas, seed=seed)
    except (MeasurementError, ValueError) as exc:
        raise UserError(str(exc)) from None
    doc = result.to_json()
    dest = out if out is not None else file.with_name(f"model-{model}.json")
    dest.write_text(json.dumps(doc, indent=2) + "\n")
    if as_json:
        term.result(json.dumps(doc, indent=2))
    else:
        term.result(format_table(result))
        term.result(f"\nmodel: {dest}")
    return 0
