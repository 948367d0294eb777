"""`railgauge tune`: choose an algorithm and its parameters from the fitted model."""

from __future__ import annotations

import json
from pathlib import Path

import click

from railgauge.cli.common import FailError, UserError
from railgauge.terminal import Terminal


@click.group()
def tune() -> None:
    """Choose algorithms from the fitted model (simulated on the native simulator)."""


@tune.command("barrier")
@click.option("-P", "P", type=click.IntRange(1, 1 << 26), required=True,
              help="Number of ranks.")
@click.option("--model", "model", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="model-loggp.json (or model-lop.json) from `railgauge fit`.")
@click.option("--max-n", type=click.IntRange(2, 64), default=7, show_default=True,
              help="Try the n-way dissemination with n = 2 .. this.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also draw the predicted time against P (powers of two up to P) for "
                   "every algorithm into this PNG.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {algorithm, n, predicted_us, table} as JSON.")
def barrier(P: int, model: Path, max_n: int, plot: Path | None, as_json: bool) -> int:
    """Which barrier, and which n, for P ranks: every algorithm simulated on the model."""
    from railgauge.native import NativeToolError, find_tool
    from railgauge.tune import (
        TuneError,
        barrier_curves,
        plot_barrier_curves,
        plot_points,
        tune_barrier,
    )

    term = Terminal()
    ns = tuple(range(2, max_n + 1))
    try:
        tool = find_tool("railgauge-sim")
        res = tune_barrier(P, model, tool=tool, ns=ns)
        if plot is not None:
            curves = barrier_curves(plot_points(P), model, tool=tool, ns=ns)
            choice = f"nway:{res.n}" if res.algorithm == "nway" else res.algorithm
            plot_barrier_curves(curves, plot, title=f"barrier on the model {model.name}",
                                choice=choice)
    except NativeToolError as exc:
        raise FailError(str(exc)) from None
    except TuneError as exc:
        if exc.user:
            raise UserError(str(exc)) from None
        raise FailError(str(exc)) from None
    if as_json:
        term.result(json.dumps(res.to_json()))
        return 0
    term.result(f"barrier on {P} ranks, model {model}:")
    term.result(f"  {'algorithm':<10s} {'n':>3s} {'predicted':>14s}")
    for row in res.table:
        t = f"{row.predicted_us:11.3f} us" if row.predicted_us is not None else "   (too large)"
        term.result(f"  {row.algorithm:<10s} {row.n:>3d} {t:>14s}")
    label = f"nway --n {res.n}" if res.algorithm == "nway" else res.algorithm
    term.result(f"choice: {label} ({res.predicted_us:.3f} us)")
    if plot is not None:
        term.result(f"plot: {plot}")
    return 0
