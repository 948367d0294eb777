"""Entry point of the ``railgauge`` command.

User errors (a bad option, transport, size range or input file) exit 2 with one
line naming the problem; failed measurements exit 1 with the cause; neither
prints a traceback."""

from __future__ import annotations

import sys

import click

from railgauge import __version__
from railgauge.cli.common import FailError, UserError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="railgauge")
def cli() -> None:
    """railgauge: measure a network, model it (LogGP by PRTT, LoP for small messages),
    predict and tune algorithms on the model (the n-way barrier, rails, the receive
    window), and run them for real.

    Start with `railgauge gauge`."""


#: Each verb's purpose, as `railgauge --help` lists it (whole: click would cut a
#: docstring's first sentence at the terminal's width).
SHORT_HELP: dict[str, str] = {
    "gauge": "Measure, fit and report LogGP (and LoP, barriers)",
    "measure": "Measure PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s)",
    "fit": "Fit LogGP or LoP to measurements (Netgauge's too)",
    "report": "Plots and report.html from measurements or a model",
    "check": "How well a LogGP model predicts another run",
    "compare-models": "Rank PRAM, BSP, LogP, LogGP, LoP by prediction",
    "predict": "Predict a time from a fitted model",
    "run": "Run a program as N local ranks",
    "rails": "Several rails: bandwidth of each striping policy",
    "testbed": "Hosts joined by shaped rails (network namespaces)",
    "sim": "Simulate a schedule at scale on a model",
    "tune": "Choose the fastest algorithm from the model",
    "pmpi": "Put the n-way barrier under an MPI program",
    "rxwin": "Workloads over the adaptive shared receive window",
    "export": "The model for SimGrid, LogGOPSim, CODES/Netgauge",
}


def _register() -> None:
    from railgauge.cli import fit, gauge, measure, report, run

    cli.add_command(gauge.gauge)
    cli.add_command(measure.measure)
    cli.add_command(fit.fit)
    cli.add_command(report.report)
    cli.add_command(run.run)

    from railgauge.cli import rails, testbed

    cli.add_command(rails.rails)

    cli.add_command(testbed.testbed)

    from railgauge.cli import compare, predict

    cli.add_command(predict.predict)
    cli.add_command(compare.compare_models)

    from railgauge.cli import check

    cli.add_command(check.check)

    from railgauge.cli import sim

    cli.add_command(sim.sim)

    from railgauge.cli import tune

    cli.add_command(tune.tune)

    from railgauge.cli import pmpi

    cli.add_command(pmpi.pmpi)

    from railgauge.cli import rxwin

    cli.add_command(rxwin.rxwin)

    from railgauge.cli import export

    cli.add_command(export.export)


_register()
for _name, _cmd in cli.commands.items():
    _cmd.short_help = SHORT_HELP.get(_name, _cmd.short_help)


def main(argv: list[str] | None = None) -> None:
    try:
        rv = cli.main(args=argv, prog_name="railgauge", standalone_mode=False)
    except click.UsageError as exc:
        msg = exc.format_message().replace("\n", " ")
        print(f"railgauge: error: {msg}", file=sys.stderr)
        sys.exit(2)
    except click.ClickException as exc:
        print(f"railgauge: error: {exc.format_message()}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except UserError as exc:
        print(f"railgauge: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except FailError as exc:
        print(f"railgauge: failed: {exc}", file=sys.stderr)
        sys.exit(1)
    except click.Abort:
        print("railgauge: interrupted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("railgauge: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
