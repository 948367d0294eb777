"""`railgauge rails bench`: bandwidth over all the testbed's rails with a policy.

Runs two ranks on the first two hosts of the testbed (`railgauge testbed up --rails 2
--rate 1gbit,2gbit`) over the rails transport, streaming messages one way (or both ways,
--bidir) with every byte checked, and prints the bandwidth and how many bytes each rail
carried. The weighted policy takes --weights, or measures each rail alone first."""

from __future__ import annotations

import json

import click

from railgauge.cli.common import FailError, UserError, size_option
from railgauge.terminal import Terminal


@click.group()
def rails() -> None:
    """Several rails between hosts: the rails transport's policies, measured.

    railgauge testbed up --rails 2 --rate 1gbit,2gbit; railgauge rails bench --policy
    weighted --size 4MiB."""


@rails.command()
@click.option("--policy", type=click.Choice(["binding", "round-robin", "even", "weighted",
                                             "adaptive"]), default="even", show_default=True,
              help="How messages are placed on the rails (docs/transports.md).")
@click.option("--size", default="4MiB", callback=size_option, show_default=True,
              help="Message size (units allowed).")
@click.option("--time", "time_s", type=click.FloatRange(0.1, 3600), default=3.0,
              show_default=True, help="Seconds measured (after a warm-up).")
@click.option("--warmup", "warmup_s", type=click.FloatRange(0, 600), default=0.5,
              show_default=True, help="Seconds of warm-up (adaptive: convergence).")
@click.option("--weights", default=None, metavar="W1,W2,...|measure",
              help="Weights of the rails (weighted, adaptive's start); 'measure' (the "
                   "default of weighted): each rail's bandwidth alone, measured first.")
@click.option("--window", type=click.IntRange(1, 1024), default=16, show_default=True,
              help="Messages in flight per batch.")
@click.option("--bidir", is_flag=True, help="Both ranks send (osu_bibw).")
@click.option("--no-verify", is_flag=True, help="Do not check the bytes received.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def bench(policy: str, size: int, time_s: float, warmup_s: float, weights: str | None,
          window: int, bidir: bool, no_verify: bool, as_json: bool) -> int:
    """Bandwidth of two ranks on the testbed's first two hosts over all its rails."""
    from railgauge import netns
    from railgauge import rails as rl

    term = Terminal()
    tb = netns.load_state()
    if tb is None:
        raise UserError("no testbed is up: railgauge testbed up --hosts 2 --rails 2 "
                        "--rate 1gbit,2gbit")
    if size <= 0 or size > 1 << 30:
        raise UserError("--size must be 1 B .. 1 GiB")
    wlist: list[float] | None = None
    try:
        if weights is not None and weights != "measure":
            wlist = rl.parse_weights(weights, len(tb.rails))
        elif weights == "measure" or policy == "weighted":
            term.detail("measuring each rail alone for the weights")
            wlist = rl.measure_rail_weights(tb, size)
            term.detail("rail bandwidths (MB/s): " + ", ".join(f"{w:.1f}" for w in wlist))
        rec = rl.bench(tb, policy, size, time_s=time_s, warmup_s=warmup_s, weights=wlist,
                       bidir=bidir, verify=not no_verify, window=window)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    except rl.RailsError as exc:
        raise FailError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(rec))
    else:
        term.result(f"{policy}: {rec['bandwidth_MBps']:.1f} MB/s "
                    f"({rec['bandwidth_MBps'] * 8e-3:.3f} Gbit/s), {size} B messages"
                    + (", both ways" if bidir else ""))
        total = sum(r["bytes"] for r in rec["rails"]) or 1
        for r in rec["rails"]:
            term.result(f"  {r['name']}: {r['bytes'] / 1e6:.1f} MB "
                        f"({100.0 * r['bytes'] / total:.1f}%)")
    if not no_verify and not rec.get("verified", False):
        raise FailError("bytes arrived wrong")
    return 0
