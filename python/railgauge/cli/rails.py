"""`railgauge rails bench`: bandwidth over all the testbed's rails with a policy.

Runs two ranks on the first two hosts of the testbed (`railgauge testbed up --rails 2
--rate 1gbit,2gbit`) over the rails transport, streaming messages one way (or both ways,
--bidir) with every byte checked, and prints the bandwidth and how many bytes each rail
carried. The weighted policy takes --weights, or measures each rail alone first.
--pattern msgrate, bcast or alltoall runs that pattern instead, one rank on each of the
testbed's first --hosts hosts (`railgauge testbed up --hosts 4 ...`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from railgauge.cli.common import FailError, UserError, size_option
from railgauge.cli.emitting import (
    OUT_OPTION,
    STACK_VERSION_OPTION,
    check_out,
    export_errors,
    finish,
)
from railgauge.terminal import Terminal


@click.group()
def rails() -> None:
    """Several rails between hosts: the rails transport's policies, measured.

    railgauge testbed up --rails 2 --rate 1gbit,2gbit; railgauge rails bench --policy
    weighted --size 4MiB; railgauge rails bench --pattern alltoall --hosts 4 (a testbed
    of 4 hosts); railgauge rails emit rails.json --emit openmpi (the measured rates as
    Open MPI's, UCX's or MPICH's settings)."""


def _print_pattern(term: Terminal, rec: dict[str, Any]) -> None:
    head = f"{rec['policy']}, {rec['pattern']} on {rec['hosts']} hosts, {rec['size_bytes']} B: "
    if rec["pattern"] == "msgrate":
        term.result(head + f"{rec['msgs_per_s'] / 1e6:.3f} M messages/s "
                    f"({rec['bandwidth_MBps']:.1f} MB/s)")
    else:
        term.result(head + f"{rec['avg_us']:.1f} us average over the ranks (smallest "
                    f"{rec['min_us']:.1f}, largest {rec['max_us']:.1f}; medians)"
                    + (f", {rec['bandwidth_MBps']:.1f} MB/s" if rec["pattern"] == "alltoall"
                       else ""))
    _print_split(term, rec["rails"])


def _print_split(term: Terminal, rails: list[dict[str, Any]]) -> None:
    total = sum(r["bytes"] for r in rails) or 1
    for r in rails:
        term.result(f"  {r['name']}: {r['bytes'] / 1e6:.1f} MB "
                    f"({100.0 * r['bytes'] / total:.1f}%)")


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
@click.option("--window", type=click.IntRange(1, 1024), default=None,
              help="Messages in flight per batch (bw, default 16) or per window "
                   "(msgrate, default 64).")
@click.option("--bidir", is_flag=True, help="Both ranks send (osu_bibw; bw only).")
@click.option("--no-verify", is_flag=True, help="Do not check the bytes received.")
@click.option("--pattern", type=click.Choice(["bw", "msgrate", "bcast", "alltoall"]),
              default="bw", show_default=True,
              help="bw: streaming between 2 hosts; msgrate (pairs 0->1, 2->3, ...), bcast "
                   "(from rank 0, binomial tree) or alltoall (pairwise exchange; --size per "
                   "pair) among --hosts hosts (railgauge-bench PATTERN --help).")
@click.option("--hosts", type=click.IntRange(2, 254), default=2, show_default=True,
              help="Ranks, one per testbed host (the testbed must have that many).")
@click.option("--emit", "emit", type=click.Choice(("openmpi", "ucx", "mpich")), default=None,
              help="Also write the rails' measured rates (--weights measure) as this "
                   "stack's settings (as `railgauge rails emit`); with --json, its object "
                   "with the bench's record under \"bench\".")
@STACK_VERSION_OPTION
@OUT_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def bench(policy: str, size: int, time_s: float, warmup_s: float, weights: str | None,
          window: int | None, bidir: bool, no_verify: bool, pattern: str, hosts: int,
          emit: str | None, stack_version: str | None, out: Path | None,
          as_json: bool) -> int:
    """Bandwidth of two ranks on the testbed's first two hosts over all its rails, or a
    message-rate or collective pattern among --hosts hosts."""
    from railgauge import netns
    from railgauge import rails as rl

    if emit is None and (stack_version is not None or out is not None):
        raise UserError("--stack-version and --out go with --emit")
    if emit is not None and weights is not None and weights != "measure":
        raise UserError("--emit writes the rails' measured rates: give --weights measure, "
                        "not weights")
    check_out(out)
    term = Terminal()
    tb = netns.load_state()
    if tb is None:
        raise UserError("no testbed is up: railgauge testbed up --hosts 2 --rails 2 "
                        "--rate 1gbit,2gbit")
    if size <= 0 or size > 1 << 30:
        raise UserError("--size must be 1 B .. 1 GiB")
    if pattern == "bw" and hosts != 2:
        raise UserError("bw runs between 2 hosts; --hosts is for msgrate, bcast and alltoall")
    if pattern != "bw" and bidir:
        raise UserError("--bidir is an option of the bw pattern")
    if pattern in ("bcast", "alltoall") and window is not None:
        raise UserError(f"--window is an option of bw and msgrate, not of {pattern}")
    if hosts > len(tb.hosts):
        raise UserError(f"--hosts {hosts}: the testbed has {len(tb.hosts)} hosts (railgauge "
                        f"testbed up --hosts {hosts} ...)")
    wlist: list[float] | None = None
    try:
        if weights is not None and weights != "measure":
            wlist = rl.parse_weights(weights, len(tb.rails))
        elif weights == "measure" or policy == "weighted" or emit is not None:
            # The rails' bandwidths: at the message size for bw, at 4 MiB for the other
            # patterns, whose sizes (8 B messages) say little of a rail's bandwidth.
            term.detail("measuring each rail alone for the weights")
            wlist = rl.measure_rail_weights(tb, size if pattern == "bw" else 4 << 20)
            term.detail("rail bandwidths (MB/s): " + ", ".join(f"{w:.1f}" for w in wlist))
        if pattern != "bw":
            rec = rl.bench_pattern(tb, policy, pattern, size, hosts=hosts, time_s=time_s,
                                   warmup_s=warmup_s, weights=wlist, verify=not no_verify,
                                   window=window)
        else:
            rec = rl.bench(tb, policy, size, time_s=time_s, warmup_s=warmup_s, weights=wlist,
                           bidir=bidir, verify=not no_verify,
                           window=16 if window is None else window)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    except rl.RailsError as exc:
        raise FailError(str(exc)) from None
    if not no_verify and not rec.get("verified", False):
        raise FailError("bytes arrived wrong")
    if emit is not None:
        return _emit_measured(term, tb, wlist or [], emit, stack_version, out, as_json, rec,
                              size if pattern == "bw" else 4 << 20)
    if as_json:
        click.echo(json.dumps(rec))
    elif pattern != "bw":
        _print_pattern(term, rec)
    else:
        term.result(f"{policy}: {rec['bandwidth_MBps']:.1f} MB/s "
                    f"({rec['bandwidth_MBps'] * 8e-3:.3f} Gbit/s), {size} B messages"
                    + (", both ways" if bidir else ""))
        _print_split(term, rec["rails"])
    return 0


def _emit_measured(term: Terminal, tb: Any, rates: list[float], stack: str,
                   version: str | None, out: Path | None, as_json: bool,
                   rec: dict[str, Any], size: int) -> int:
    """The bench's result, then the rates measured for its weights as the stack's file."""
    from railgauge.emit import RailRate, emit_rails

    if not as_json:
        term.info(f"{rec['policy']}: {rec.get('bandwidth_MBps', 0.0):.1f} MB/s")
    rails = [RailRate(r.ifname, f"tcp:{r.ifname}", w)
             for r, w in zip(tb.rails, rates, strict=True)]
    with export_errors():
        em = emit_rails(rails, stack, version,
                        source=f"rails bench, each rail alone at {size} B")
    return finish(term, em, out, as_json, {"bench": rec})


@rails.command("emit")
@click.argument("rails_json", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--emit", "emit", type=click.Choice(("openmpi", "ucx", "mpich")),
              required=True,
              help="openmpi: btl_tcp_if_include and btl_tcp_bandwidth_<if> (an MCA "
                   "parameter file); ucx: UCX_NET_DEVICES and the rail counts; mpich: the "
                   "same UCX variables for its ch4:ucx device.")
@STACK_VERSION_OPTION
@OUT_OPTION
@click.option("--json", "as_json", is_flag=True,
              help='Print {"stack", "version", "settings", "file", "content", "reasons"}.')
def emit_cmd(rails_json: Path, emit: str, stack_version: str | None, out: Path | None,
             as_json: bool) -> int:
    """The rates of a rails.json (`railgauge gauge --rails`) as an MPI stack's settings,
    each with its reason."""
    from railgauge.emit import emit_rails, read_rails_json

    term = Terminal()
    check_out(out)
    with export_errors():
        rails = read_rails_json(rails_json)
        em = emit_rails(rails, emit, stack_version, source=str(rails_json))
    return finish(term, em, out, as_json)
