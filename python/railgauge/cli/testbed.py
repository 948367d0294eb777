"""`railgauge testbed up|down|status`: several hosts joined by rails on this machine.

`up` builds network namespaces (the hosts) joined by rails (veth pairs, or a bridge
per rail for more than two hosts), addresses from 198.18.0.0/15, each rail shaped to
its rate with tc, and records it in a state file, so that `down` and `status` (and
`railgauge run --netns testbed`) find it. Needs root."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING

import click

from railgauge.cli.common import FailError, UserError
from railgauge.terminal import Terminal

if TYPE_CHECKING:
    from railgauge.netns import Testbed


@click.group()
def testbed() -> None:
    """Hosts (network namespaces) joined by rails on this machine, for multi-host runs.

    railgauge testbed up --hosts 2 --rails 2 --rate 1gbit,2gbit; railgauge testbed down."""


def _describe(tb: Testbed, term: Terminal, missing: list[str]) -> None:
    from railgauge.netns import format_rate

    for h, ns in enumerate(tb.hosts):
        term.result(f"  host {h}: {ns}" + ("  (missing)" if ns in missing else ""))
    if tb.switch:
        term.result(f"  switch: {tb.switch} (a bridge per rail)"
                    + ("  (missing)" if tb.switch in missing else ""))
    for rail in tb.rails:
        rate = format_rate(rail.rate_bps)
        shaped = f"{rate} ({tb.shaper})" if rail.rate_bps is not None else rate
        term.result(f"  rail {rail.index}: {rail.ifname} {rail.subnet}, {shaped}: "
                    + ", ".join(rail.addresses))


@testbed.command()
@click.option("--hosts", type=click.IntRange(2, 254), default=2, show_default=True,
              help="Hosts (network namespaces).")
@click.option("--rails", type=click.IntRange(1, 512), default=1, show_default=True,
              help="Rails (network paths joining every host), one subnet each.")
@click.option("--rate", default=None, metavar="RATE[,RATE...]",
              help="Rate of each rail as tc takes it (1gbit, 500mbit); one for all rails or "
                   "one per rail; 'none' leaves a rail unshaped. Default: unshaped.")
@click.option("--shaper", type=click.Choice(["tbf", "htb"]), default="tbf", show_default=True,
              help="tc qdisc that shapes the rails.")
@click.option("--json", "as_json", is_flag=True, help="Print the testbed as JSON.")
def up(hosts: int, rails: int, rate: str | None, shaper: str, as_json: bool) -> int:
    """Build the testbed and leave it up (until `railgauge testbed down`)."""
    from railgauge import netns

    term = Terminal()
    try:
        netns.parse_rates(rate, rails)
    except ValueError as exc:
        raise UserError(f"--rate: {exc}") from None
    try:
        old = netns.load_state()
    except netns.TestbedError as exc:
        raise FailError(str(exc)) from None
    if old is not None:
        if not old.missing():
            raise UserError(f"a testbed is already up ({', '.join(old.hosts)}); "
                            "railgauge testbed down first")
        # Parts of it are gone (a reboot, or removed by hand): remove the rest, forget it.
        try:
            netns.destroy(old)
        except netns.TestbedError as exc:
            raise FailError(str(exc)) from None
        netns.clear_state()
    try:
        tb = netns.create(hosts, rails, rate, shaper=shaper, persistent=True)
    except netns.TestbedError as exc:
        raise FailError(f"cannot build the testbed: {exc}") from None
    try:
        path = netns.save_state(tb)
    except OSError as exc:
        netns.destroy(tb)
        raise FailError(f"cannot write the testbed state: {exc}") from None
    if as_json:
        term.result(json.dumps({**tb.to_json(), "state": str(path)}, indent=2))
        return 0
    term.result(f"testbed up: {hosts} hosts, {rails} rail(s) (state: {path})")
    _describe(tb, term, [])
    iface = tb.rails[0].ifname
    term.result("run ranks on it, for example:")
    term.result(f"  RG_TCP_IFACE={iface} railgauge run -n {hosts} --netns testbed "
                "--transport tcp -- railgauge-bench pingpong --sizes 8,1MiB")
    term.result(f"  RG_OFI_IFACE={iface} railgauge gauge --netns testbed --transport ofi:tcp")
    term.result(f"  {shlex.join(tb.exec_argv(0, ['iperf3', '-s']))}")
    return 0


@testbed.command()
@click.option("--all", "all_", is_flag=True,
              help="Also remove every testbed of `testbed up` whose state file is lost (any "
                   "railgauge-tb-* namespace), not only the one recorded.")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
def down(all_: bool, as_json: bool) -> int:
    """Remove the testbed (and the leftovers of testbeds whose process died)."""
    from railgauge import netns

    term = Terminal()
    try:
        netns.check_available()
    except netns.TestbedError as exc:
        raise FailError(str(exc)) from None
    removed: list[str] = []
    try:
        tb = netns.load_state()
    except netns.TestbedError as exc:
        term.info(f"ignoring {exc}")
        tb = None
    try:
        if tb is not None:
            removed += [ns for ns in tb.namespaces if ns not in tb.missing()]
            netns.destroy(tb)
        # Namespaces of dead owners (and with --all, of lost `testbed up` states).
        removed += netns.cleanup_stale(include_persistent=all_)
    except netns.TestbedError as exc:
        raise FailError(str(exc)) from None
    netns.clear_state()
    if as_json:
        term.result(json.dumps({"removed": removed}))
    elif removed:
        term.result(f"testbed down: removed {', '.join(removed)}")
    else:
        term.result("no testbed was up")
    return 0


@testbed.command()
@click.option("--json", "as_json", is_flag=True, help="Print the testbed as JSON.")
def status(as_json: bool) -> int:
    """Show the testbed that is up, and whether all of it is still there.

    Exit status 0 when a complete testbed is up or none is; 1 when parts are missing."""
    from railgauge import netns

    term = Terminal()
    try:
        tb = netns.load_state()
    except netns.TestbedError as exc:
        raise FailError(str(exc)) from None
    if tb is None:
        if as_json:
            term.result(json.dumps({"up": False}))
        else:
            term.result("no testbed is up")
        return 0
    missing = tb.missing()
    if as_json:
        term.result(json.dumps({"up": not missing, **tb.to_json(), "missing": missing,
                                "state": str(netns.state_path())}, indent=2))
    else:
        term.result(f"testbed {'up' if not missing else 'BROKEN'}: {len(tb.hosts)} hosts, "
                    f"{len(tb.rails)} rail(s) (state: {netns.state_path()})")
        _describe(tb, term, missing)
    if missing:
        raise FailError(f"namespaces of the testbed are missing: {', '.join(missing)} "
                        "(railgauge testbed down removes the rest)")
    return 0
