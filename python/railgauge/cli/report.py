"""`railgauge report`: plots and report.html from files."""

from __future__ import annotations

from pathlib import Path

import click

from railgauge.cli.common import UserError, no_file
from railgauge.terminal import Terminal


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "model_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="model-loggp.json (default: fit FILE now).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Report folder (default: FILE's folder).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--format", "fmt", type=click.Choice(["auto", "railgauge", "netgauge"]),
              default="auto", show_default=True,
              help="FILE's format: railgauge JSON Lines, or the table Netgauge's loggp "
                   "pattern writes; auto tells them apart by content.")
@click.option("--onen", "onen_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="onen records (railgauge-bench onen) for the LoP part and the model "
                   "comparison (default: onen.jsonl beside FILE, where there is one).")
def report(file: Path, model_path: Path | None, out: Path | None, seed: int, fmt: str,
           onen_path: Path | None) -> int:
    """Write plots and a self-contained report.html for FILE (railgauge measurements or a
    Netgauge loggp table; with the LoP part and the model comparison where there are onen
    records, as `railgauge gauge` writes them)."""
    from railgauge.fit.loggp import fit_loggp, load_loggp_model
    from railgauge.measurements import MeasurementError
    from railgauge.netgauge import read_any
    from railgauge.report.html import write_report

    term = Terminal()
    if not file.is_file():
        raise UserError(no_file(file))
    try:
        meas = read_any(file, fmt)
        fit = (
            load_loggp_model(model_path)
            if model_path is not None
            else fit_loggp(meas, seed=seed, accuracy=True)
        )
    except (MeasurementError, ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    if onen_path is not None and not onen_path.is_file():
        raise UserError(no_file(onen_path))
    if onen_path is None and (file.parent / "onen.jsonl").is_file():
        onen_path = file.parent / "onen.jsonl"
    out_dir = out if out is not None else file.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    lop = None
    if onen_path is not None:
        from railgauge.gauge_lop import analyse_lop

        lop = analyse_lop(meas, fit, out_dir, onen_path=onen_path)
        for w in lop.warnings:
            term.warn(w)
        if lop.status == "not measured":
            raise UserError(str(lop.reason))
    path = write_report(out_dir, meas, fit, None, lop=lop)
    term.result(str(path))
    return 0
