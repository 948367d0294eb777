"""Pieces shared by the CLI modules: error kinds, option parsers."""

from __future__ import annotations

from typing import Any

import click

from railgauge.units import parse_size


class UserError(Exception):
    """Bad input from the user: exit 2, one line."""


class FailError(Exception):
    """A failed measurement or run: exit 1 with the cause."""


def size_option(ctx: click.Context, param: click.Parameter, value: Any) -> int | None:
    """click callback: a size with units, as an int."""
    if value is None:
        return None
    try:
        return parse_size(str(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def verbosity(verbose: int, quiet: int) -> int:
    return verbose - quiet


def measure_options(f: Any) -> Any:
    """The options `gauge` and `measure` share."""
    from railgauge.measure import TRANSPORTS

    opts = [
        click.option("--transport", type=click.Choice(TRANSPORTS), default="shm",
                     show_default=True, help="Transport to measure."),
        click.option("--quick", is_flag=True,
                     help="Trade precision for time (one size per octave, looser targets)."),
        click.option("--min-size", default="1", callback=size_option, show_default=True,
                     help="Smallest message size (units allowed: 64KiB)."),
        click.option("--max-size", default="1MiB", callback=size_option, show_default=True,
                     help="Largest message size."),
        click.option("--per-octave", type=click.IntRange(1, 16), default=None,
                     help="Sizes per doubling of the sweep (default 4, --quick 1)."),
        click.option("--n", "n_msgs", type=click.IntRange(2, 4096), default=16,
                     show_default=True, help="Successive messages of PRTT(n,*,s)."),
        click.option("--budget", type=click.FloatRange(1.0, 86400.0), default=None,
                     help="Seconds the measurement may take (default 45, --quick 15)."),
        click.option("--no-refine", is_flag=True,
                     help="Skip the refinement sweep around protocol changes."),
        click.option("-v", "--verbose", count=True, help="More detail on stderr."),
        click.option("-q", "--quiet", count=True, help="Less output on stderr."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def make_plan(transport: str, quick: bool, min_size: int, max_size: int, n_msgs: int,
              budget: float | None, no_refine: bool, per_octave: int | None = None) -> Any:
    from railgauge.measure import MeasurePlan

    plan = MeasurePlan.quick() if quick else MeasurePlan()
    plan.transport = transport
    plan.min_size = min_size
    plan.max_size = max_size
    plan.n = n_msgs
    plan.refine = not no_refine
    if per_octave is not None:
        plan.per_octave = per_octave
    if budget is not None:
        plan.budget_s = budget
    try:
        plan.validate()
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return plan


def fit_boundaries(path: Any) -> list[tuple[int, int]]:
    """Where a quick fit of the file puts protocol changes: (last size of a
    range, first size of the next)."""
    from railgauge.fit.loggp import fit_loggp
    from railgauge.measurements import read_measurements

    fit = fit_loggp(read_measurements(path), n_boot=0)
    return [(r.to_bytes, nxt.from_bytes) for r, nxt in zip(fit.ranges, fit.ranges[1:], strict=False)
            if r.to_bytes is not None]


def run_measurement(plan: Any, out: Any, term: Any) -> Any:
    from railgauge.launcher import LaunchError
    from railgauge.measure import MeasureError, measure_prtt
    from railgauge.native import NativeToolError

    try:
        with term.progress(f"PRTT over {plan.transport}") as cb:
            return measure_prtt(plan, out, progress=cb, fit_boundaries=fit_boundaries)
    except (MeasureError, NativeToolError) as exc:
        raise FailError(str(exc)) from None
    except LaunchError as exc:
        raise FailError(str(exc)) from None
