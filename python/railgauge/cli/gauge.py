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
)
from railgauge.cli.emitting import STACK_VERSION_OPTION, export_errors
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
@click.option("--emit", "emit", type=click.Choice(("openmpi", "ucx", "mpich")), default=None,
              help="With --rails: also write the rails' rates as this stack's settings "
                   "into the report folder (rails-<stack>.conf or .env; as `railgauge rails "
                   "emit`); with --json, its object under \"emit\".")
@STACK_VERSION_OPTION
def gauge(margs: MeasureArgs, verbose: int, quiet: int, ranks: int, no_onen: bool,
          no_barrier: bool, onen_budget: float | None, out: Path | None, as_json: bool,
          seed: int, rails_text: str | None, emit: str | None,
          stack_version: str | None) -> int:
    """Measure LogGP by PRTT, fit it per protocol range, measure 1:n / n:1 (LoP), compare
    the models, and write a report.

    On the default (two local ranks over shared memory) this takes under a
    minute; --quick about a quarter of that."""
    term = Terminal(verbose - quiet)
    plan = make_plan(margs)
    rail_names: list[str] | None = None
    if rails_text is not None:
        from railgauge.gauge_rails import RailsGaugeError, parse_rails

        try:
            rail_names = parse_rails(rails_text)
        except RailsGaugeError as exc:
            raise UserError(str(exc)) from None
    if emit is None and stack_version is not None:
        raise UserError("--stack-version goes with --emit")
    if emit is not None:
        if rail_names is None:
            raise UserError("--emit writes the rails' rates: give --rails")
        from railgauge.emit import RAILS_STACKS, resolve_version

        with export_errors():
            stack_version = resolve_version(emit, stack_version, RAILS_STACKS)
    out_dir = out if out is not None else default_out_dir()
    created = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FailError(f"cannot create the report folder {out_dir}: {exc.strerror}") from None
    from railgauge.gauge import GaugeError, GaugeOptions, run_gauge

    opts = GaugeOptions(ranks=ranks, no_onen=no_onen, no_barrier=no_barrier,
                        onen_budget=onen_budget, seed=seed, rail_names=rail_names)
    try:
        res = run_gauge(plan, opts, out_dir, term, quick=margs.quick)
    except GaugeError as exc:
        # A folder this run made and that holds nothing is not left behind.
        if created and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise FailError(str(exc)) from None
    emitted = None
    if emit is not None and res.rails is not None:
        emitted = _emit_rails(res.rails, emit, stack_version, out_dir)
        for w in emitted[0].warnings:
            term.warn(w)
    if as_json:
        doc = res.to_json()
        if emitted is not None:
            doc["emit"] = emitted[0].to_json(str(emitted[1]))
        term.result(json.dumps(doc, indent=2))
        term.info(f"report: {out_dir}")
        return 0
    from railgauge.report.html import format_table
    from railgauge.report.lop import lop_text

    term.result(format_table(res.fit))
    term.result(lop_text(res.part))
    if res.barrier is not None:
        from railgauge.report.barrier import barrier_text

        term.result(barrier_text(res.barrier))
    if res.rails is not None:
        term.result(res.rails.text() + f"\n  (rails.json in {out_dir})")
    if emitted is not None:
        term.result(f"  {emit} {emitted[0].version} settings: {emitted[1]}")
    term.result(f"\nreport folder: {out_dir}\n  {res.report}\n  measured + fitted in "
                f"{res.wall_s:.1f} s")
    return 0


def _emit_rails(part: Any, stack: str, version: str | None, out_dir: Path) -> tuple[Any, Path]:
    """The gauged rails' rates as the stack's file in the report folder."""
    from railgauge.emit import RailRate, emit_rails, write_emitted

    rails = [RailRate(r.name, r.transport, r.bandwidth_MBps) for r in part.rails]
    path = out_dir / f"rails-{stack}.{'conf' if stack == 'openmpi' else 'env'}"
    with export_errors():
        em = emit_rails(rails, stack, version, source=str(out_dir / "rails.json"))
        write_emitted(em, path)
    return em, path
