"""`railgauge sim`: simulate a GOAL schedule or a collective under LogGOPS."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from railgauge.cli.common import FailError, UserError, no_file
from railgauge.terminal import Terminal


def _param_options(f: Any) -> Any:
    opts = [
        click.option("--L", "L", type=float, default=None, help="Latency L (us; default 0)."),
        click.option("--o", "o", type=float, default=None, help="Overhead o (us; default 0)."),
        click.option("--g", "g", type=float, default=None, help="Gap g (us; default 0)."),
        click.option("--G", "g_byte", type=float, default=None,
                     help="Gap per byte G (us/byte; default 0)."),
        click.option("--O", "o_byte", type=float, default=None,
                     help="Overhead per byte O (us/byte; default 0)."),
        click.option("--S", "S", type=float, default=None,
                     help="Rendezvous above S bytes (default inf: always eager)."),
        click.option("--duplex", "duplex", type=float, default=None,
                     help="Added to a message's latency where its receiver sent while it "
                          "was on its way (us; default 0; the flag model's exchange, "
                          "docs/sim.md \"Duplex\")."),
        click.option("--model", "model", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="Take L, o, g, G, O from a model-loggp.json instead "
                                        "of the flags: one set per protocol range, chosen by "
                                        "message size (S stays --S); or simulate under LoP "
                                        "from a model-lop.json (docs/sim.md)."),
        click.option("--lop-list", is_flag=True,
                     help="With a LoP model: the sends of a batch are posted as one list "
                          "(the model's list-mode fits, L_list)."),
        click.option("--first-range", is_flag=True,
                     help="With --model: the first protocol range's parameters for every "
                          "message size."),
        click.option("--per-rank", is_flag=True,
                     help="Report finish_us even above 4096 ranks."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
        click.option("--trace", "trace", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="Write every operation's time on each CPU and NIC as "
                                        "Chrome trace JSON (open it in Perfetto)."),
        click.option("--trace-max-ranks", type=click.IntRange(1), default=4096,
                     show_default=True, help="Refuse --trace above this many ranks."),
        click.option("--progress/--no-progress", default=None,
                     help="Show progress on stderr (default: when stderr is a terminal)."),
        click.option("--rails", "rails", default=None, metavar="FILE|G0,G1,...",
                     help="Each NIC as rails (multirail striping, docs/sim.md \"Rails\"): a "
                          "rails.json of `railgauge gauge --rails` (per-rail L, o, G and "
                          "weights) or per-rail G values (us/byte) over the other "
                          "parameters."),
        click.option("--policy", "rails_policy", default=None,
                     type=click.Choice(["binding", "round-robin", "even", "weighted",
                                        "adaptive"]),
                     help="With --rails: how messages are placed (default: the file's, "
                          "else even)."),
        click.option("--stripe-min", "stripe_min", type=click.IntRange(0), default=None,
                     help="With --rails: messages below this many bytes go whole "
                          "(default 262144)."),
        click.option("--weights", "rails_weights", default=None, metavar="W0,W1,...",
                     help="With --rails, weighted/adaptive: one weight per rail (default: "
                          "the file's; weighted 1/G, adaptive equal)."),
        click.option("--adapt-alpha", "adapt_alpha", type=float, default=None,
                     help="With --rails, adaptive: smoothing of the learnt shares, 0 < A "
                          "<= 1 (default 0.3)."),
        click.option("--adapt-floor", "adapt_floor", type=float, default=None,
                     help="With --rails, adaptive: the least share of a rail, 0 <= F * "
                          "rails < 1 (default 0.05)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _params(L: float | None, o: float | None, g: float | None, g_byte: float | None,
            o_byte: float | None, S: float | None, model: Path | None,
            first_range: bool, lop_list: bool = False,
            duplex: float | None = None) -> dict[str, Any]:
    from railgauge.sim import SimError, params_from_model

    flags = {"L": L, "o": o, "g": g, "G": g_byte, "O": o_byte, "duplex": duplex}
    if model is not None:
        given = [f"--{k}" for k, v in flags.items() if v is not None]
        if given:
            raise UserError(f"--model replaces {', '.join(given)}: give one or the other")
        if not model.is_file():
            raise UserError(no_file(model))
        try:
            params = params_from_model(model, piecewise=not first_range, lop_list=lop_list)
        except SimError as exc:
            raise UserError(str(exc)) from None
        if "lop_rtt" in params and S is not None:
            raise UserError("--S: the LoP model has no rendezvous threshold")
        if "lop_rtt" in params and first_range:
            raise UserError("--first-range applies to a LogGP model, not LoP")
    else:
        if first_range:
            raise UserError("--first-range needs --model")
        if lop_list:
            raise UserError("--lop-list needs --model model-lop.json")
        params = {k: (v if v is not None else 0.0) for k, v in flags.items()}
    if S is not None:
        params["S"] = S
    return params


def _rails(rails: str | None, policy: str | None, stripe_min: int | None,
           weights: str | None, alpha: float | None, floor: float | None) -> dict[str, Any]:
    """The rails options for `run_sim` (empty without --rails); UserError where a rails
    option comes without --rails. The tool checks the values themselves."""
    given = {"--policy": policy, "--stripe-min": stripe_min, "--weights": weights,
             "--adapt-alpha": alpha, "--adapt-floor": floor}
    if rails is None:
        named = [k for k, v in given.items() if v is not None]
        if named:
            raise UserError(f"{', '.join(named)} {'needs' if len(named) == 1 else 'need'} "
                            "--rails")
        return {}
    out: dict[str, Any] = {"rails": rails}
    for key, value in (("policy", policy), ("stripe_min", stripe_min),
                       ("weights", weights), ("adapt_alpha", alpha), ("adapt_floor", floor)):
        if value is not None:
            out[key] = value
    return out


def _summary(name: str, stat: Any) -> str:
    return (f"{name:<9s} min {stat['min']:.6g}  mean {stat['mean']:.6g}  "
            f"max {stat['max']:.6g} us")


def _run(mode_args: list[str], params: dict[str, Any], calc_unit: str | None,
         per_rank: bool, as_json: bool, trace: Path | None, trace_max_ranks: int,
         progress: bool | None = None, rails: dict[str, Any] | None = None) -> int:
    from railgauge.native import NativeToolError, find_tool
    from railgauge.sim import SimError, run_sim

    term = Terminal()
    try:
        tool = find_tool("railgauge-sim")
        show = sys.stderr.isatty() if progress is None else progress
        doc = run_sim(tool, mode_args, params, calc_unit=calc_unit, per_rank=per_rank,
                      trace=trace, trace_max_ranks=trace_max_ranks if trace else None,
                      progress=show, rails=rails or None)
    except NativeToolError as exc:
        raise FailError(str(exc)) from None
    except SimError as exc:
        if exc.user:
            raise UserError(str(exc)) from None
        raise FailError(str(exc)) from None
    if as_json:
        term.result(json.dumps(doc))
        return 0
    term.result(f"makespan  {doc['makespan_us']:.6g} us")
    term.result(f"events    {doc['events']}")
    term.result(f"wall      {doc['wall_s']:.3f} s")
    stats = doc.get("stats", {})
    for key, name in (("overhead_us", "overhead"), ("wait_us", "wait"), ("calc_us", "calc")):
        if key in stats:
            term.result(_summary(name, stats[key]))
    rl = doc.get("rails")
    if isinstance(rl, dict):
        term.result(f"rails     {rl['nrails']}, {rl['policy']}, stripes from "
                    f"{rl['stripe_min']:.0f} bytes")
        for one in rl.get("per_rail", []):
            term.result(f"rail {one['rail']:<4d} {one['bytes']:.0f} bytes in {one['pieces']} "
                        f"pieces, busy {one['send_busy_us']:.6g} us sending, "
                        f"{one['recv_busy_us']:.6g} us receiving")
    finish = doc.get("finish_us")
    if finish is not None and (per_rank or len(finish) <= 16):
        for rank, t in enumerate(finish):
            term.result(f"rank {rank:<6d} {t:.6g} us")
    elif finish:
        term.result(f"finish    {min(finish):.6g} .. {max(finish):.6g} us over {len(finish)} "
                    "ranks (--per-rank lists them)")
    return 0


@click.group()
def sim() -> None:
    """Simulate a schedule at scale under LogP / LogGP / LogGOPS (floating-point us)."""


@sim.command("goal")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--calc-unit", type=click.Choice(["ns", "us", "ms", "s"]), default="ns",
              show_default=True, help="Unit of `calc` durations in the GOAL file.")
@_param_options
def goal(file: Path, calc_unit: str, L: float | None, o: float | None, g: float | None,
         g_byte: float | None, o_byte: float | None, S: float | None, duplex: float | None,
         model: Path | None,
         first_range: bool, lop_list: bool, per_rank: bool, as_json: bool,
         trace: Path | None, trace_max_ranks: int, progress: bool | None,
         rails: str | None, rails_policy: str | None, stripe_min: int | None,
         rails_weights: str | None, adapt_alpha: float | None,
         adapt_floor: float | None) -> int:
    """Simulate the GOAL schedule FILE (LogGOPSim's schedule language)."""
    if not file.is_file():
        raise UserError(no_file(file))
    params = _params(L, o, g, g_byte, o_byte, S, model, first_range, lop_list, duplex)
    rl = _rails(rails, rails_policy, stripe_min, rails_weights, adapt_alpha, adapt_floor)
    return _run(["goal", str(file)], params, calc_unit, per_rank, as_json, trace,
                trace_max_ranks, progress, rl)


@sim.command("barrier")
@click.option("--algorithm", default="dissemination", show_default=True,
              help="Barrier algorithm: linear, binomial, recdbl, dissem (dissemination), "
                   "nway (with --n N, or nway:N), and the stacks' own: ring (Open MPI's "
                   "double ring), kdissem:K, recexch:K (MPICH's); the schedules of coll/ "
                   "(docs/coll.md).")
@click.option("--n", "n", type=click.IntRange(1, 1025), default=None,
              help="n of the n-way dissemination, K of kdissem and recexch.")
@click.option("-P", "P", type=click.IntRange(1, 1 << 26), required=True, help="Number of ranks.")
@_param_options
def barrier(algorithm: str, n: int | None, P: int, L: float | None, o: float | None,
            g: float | None,
            g_byte: float | None, o_byte: float | None, S: float | None,
            duplex: float | None,
            model: Path | None, first_range: bool, lop_list: bool, per_rank: bool,
            as_json: bool, trace: Path | None, trace_max_ranks: int,
            progress: bool | None, rails: str | None, rails_policy: str | None,
            stripe_min: int | None, rails_weights: str | None, adapt_alpha: float | None,
            adapt_floor: float | None) -> int:
    """Simulate a barrier on P ranks."""
    params = _params(L, o, g, g_byte, o_byte, S, model, first_range, lop_list, duplex)
    rl = _rails(rails, rails_policy, stripe_min, rails_weights, adapt_alpha, adapt_floor)
    mode = ["barrier", "--algorithm", algorithm, "-P", str(P)]
    if n is not None:
        mode += ["--n", str(n)]
    return _run(mode, params, None, per_rank, as_json, trace, trace_max_ranks, progress, rl)
