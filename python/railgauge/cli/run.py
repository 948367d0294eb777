"""`railgauge run`: start N local ranks of a program, bootstrapped together."""

from __future__ import annotations

import click

from railgauge.cli.common import TRANSPORT, FailError, UserError, netns_option
from railgauge.terminal import Terminal


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("-n", "--ranks", "nranks", type=click.IntRange(1, 1024), required=True,
              help="Number of ranks.")
@click.option("--transport", type=TRANSPORT, default=None,
              help="Transport the ranks use (passed as RG_TRANSPORT).")
@click.option("--timeout", type=click.FloatRange(0.1, None), default=None,
              help="End every rank after this many seconds.")
@click.option("--bind", type=click.Choice(["auto", "core", "none"]), default="auto",
              show_default=True,
              help="Pin rank r to the r-th CPU (auto: when there are enough CPUs).")
@click.option("--netns", default=None, metavar="NS0,NS1,...",
              help="Run rank r in network namespace NS[r mod count] (ip netns exec; root). "
                   "'testbed' takes the hosts of `railgauge testbed up`. Ranks then need "
                   "RG_TCP_IFACE / RG_OFI_IFACE (or the SUBNET variants) to find their "
                   "addresses.")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
def run(nranks: int, transport: str | None, timeout: float | None, bind: str,
        netns: str | None, argv: tuple[str, ...]) -> int:
    """Run PROG ARGS as N local ranks: railgauge run -n N -- PROG ARGS.

    If a rank dies, every other rank is ended and the exit status names it."""
    from railgauge.launcher import LaunchError, launch

    term = Terminal()
    namespaces = netns_option(netns)
    try:
        res = launch(list(argv), nranks, transport=transport, timeout_s=timeout,
                     on_event=term.detail, bind=bind, netns=namespaces)
    except LaunchError as exc:
        raise UserError(str(exc)) from None
    if res.returncode != 0:
        raise FailError(res.failure or f"exit status {res.returncode}")
    return 0
