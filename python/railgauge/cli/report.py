"""`railgauge report`: plots and report.html from files."""

from __future__ import annotations

from pathlib import Path

import click

from railgauge.cli.common import UserError
from railgauge.terminal import Terminal


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "model_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="model-loggp.json (default: fit FILE now).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Report folder (default: FILE's folder).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
def report(file: Path, model_path: Path | None, out: Path | None, seed: int) -> int:
    """Write plots and a self-contained report.html for FILE."""
    from railgauge.fit.loggp import fit_loggp, load_loggp_model
    from railgauge.measurements import MeasurementError, read_measurements
    from railgauge.report.html import write_report

    term = Terminal()
    if not file.is_file():
        raise UserError(f"no such file: {file}")
    try:
        meas = read_measurements(file)
        fit = load_loggp_model(model_path) if model_path is not None else fit_loggp(meas, seed=seed)
    except (MeasurementError, ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    out_dir = out if out is not None else file.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    path = write_report(out_dir, meas, fit, None)
    term.result(str(path))
    return 0
