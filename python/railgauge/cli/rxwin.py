"""`railgauge rxwin`: workloads over the shared receive window (docs/rxwin.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from railgauge.cli.common import FailError, UserError
from railgauge.terminal import Terminal


@click.group()
def rxwin() -> None:
    """The adaptive shared receive window of the runtime: run and measure workloads."""


@rxwin.command("eval")
@click.option("--pattern", required=True,
              type=click.Choice(("alltoall", "halo2d", "halo3d", "incast", "mix")),
              help="The workload.")
@click.option("-n", "nranks", type=click.IntRange(2, 4096), default=4, show_default=True,
              help="Number of local ranks.")
@click.option("--transport", default="shm", show_default=True,
              type=click.Choice(("shm", "tcp", "ofi:tcp", "ofi:shm", "ofi:udp")),
              help="Transport under the runtime.")
@click.option("--window", default="adaptive:8:4096", show_default=True,
              help="fixed:N or adaptive:W_init:W_max[:reclaim] (RG_PROTO_RXWIN).")
@click.option("--rnr-timer-ms", type=float, default=None,
              help="Receiver-not-ready retry timer, 0.01 to 655.36 ms (default 1).")
@click.option("--no-rnr", is_flag=True,
              help="No refusals: messages the window cannot take wait in the transport.")
@click.option("--limit", type=click.IntRange(1, 65536), default=None,
              help="The first limit (RG_PROTO_RXWIN_LIMIT; default W_init/2).")
@click.option("--iters", type=click.IntRange(1, 1000000), default=50, show_default=True,
              help="Phases of the workload.")
@click.option("--size", type=click.IntRange(24, 1 << 26), default=512, show_default=True,
              help="Bytes per message.")
@click.option("--burst", type=click.IntRange(1, 1000000), default=32, show_default=True,
              help="incast and mix: messages per sender and phase.")
@click.option("--compute-us", type=click.FloatRange(0, 1e7), default=None,
              help="Busy time before each phase (default 0; mix 200, unequal per rank).")
@click.option("--sim", is_flag=True,
              help="Run it in the simulator instead (railgauge-sim rxwin: the window, limit "
                   "events and RNR with the timer under LogGOPS; -n up to 4096).")
@click.option("--model", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="--sim: LogGOPS parameters from a model-loggp.json (railgauge fit).")
@click.option("--L", "L", type=float, default=None, help="--sim: latency L (us).")
@click.option("--o", "o", type=float, default=None, help="--sim: overhead o (us).")
@click.option("--g", "g", type=float, default=None, help="--sim: gap g (us).")
@click.option("--G", "g_byte", type=float, default=None, help="--sim: gap per byte G (us/byte).")
@click.option("--O", "o_byte", type=float, default=None,
              help="--sim: overhead per byte O (us/byte).")
@click.option("--eager-limit", type=click.IntRange(0, 1 << 30), default=None,
              help="--sim: messages up to this many bytes use the window (default: the "
                   "runtime's eager limit over --transport, shm 16 KiB, tcp 32 KiB).")
@click.option("--json", "as_json", is_flag=True,
              help='Print {"time_s", "mem_bytes": {min, mean, max}, "limit_events", "rnr", '
                   '"retries", "messages", "verified", ...} as JSON.')
def eval_cmd(pattern: str, nranks: int, transport: str, window: str,
             rnr_timer_ms: float | None, no_rnr: bool, limit: int | None, iters: int,
             size: int, burst: int, compute_us: float | None, sim: bool, model: Path | None,
             L: float | None, o: float | None, g: float | None, g_byte: float | None,
             o_byte: float | None, eager_limit: int | None, as_json: bool) -> int:
    """Run a workload with a window setting; report time, memory, limit events and RNR."""
    from railgauge.rxwin import EAGER_LIMIT, RxwinError, eval_rxwin, sim_params, sim_rxwin

    term = Terminal()
    flags = {"L": L, "o": o, "g": g, "G": g_byte, "O": o_byte}
    try:
        if not sim:
            given = [f"--{k}" for k, v in flags.items() if v is not None]
            given += ["--model"] if model is not None else []
            given += ["--eager-limit"] if eager_limit is not None else []
            if given:
                raise RxwinError(f"{', '.join(given)}: only with --sim")
            res = eval_rxwin(pattern, nranks, window, transport=transport,
                             rnr_timer_ms=rnr_timer_ms, rnr=not no_rnr, iters=iters,
                             size=size, burst=burst, compute_us=compute_us, limit=limit)
        else:
            if no_rnr:
                raise RxwinError("--no-rnr: the simulator models the window with RNR")
            params = sim_params(model, **flags)
            res = sim_rxwin(pattern, nranks, window, params=params, rnr_timer_ms=rnr_timer_ms,
                            iters=iters, size=size, burst=burst, compute_us=compute_us,
                            limit=limit, per_rank=True,
                            eager_limit=eager_limit if eager_limit is not None
                            else EAGER_LIMIT[transport])
            res["transport"] = transport
    except RxwinError as exc:
        if exc.user:
            raise UserError(str(exc)) from None
        raise FailError(str(exc)) from None
    if as_json:
        term.result(json.dumps(res))
        return 0
    mem = res["mem_bytes"]
    where = "simulated" if sim else f"over {transport}"
    term.result(
        f"{pattern} on {nranks} ranks {where}, window {res['window']}: "
        f"{res['time_s']:.4f} s, memory per rank min/mean/max "
        f"{mem['min']}/{mem['mean']:.0f}/{mem['max']} B, {res['limit_events']} limit events, "
        f"{res['rnr']} RNR replies, {res['retries']} retries, {res['messages']} messages, "
        f"{'verified' if res['verified'] else 'NOT verified'}")
    return 0
