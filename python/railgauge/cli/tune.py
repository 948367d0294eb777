"""`railgauge tune`: choose an algorithm and its parameters from the fitted model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from railgauge.cli.common import FailError, UserError
from railgauge.cli.emitting import (
    OUT_OPTION,
    STACK_VERSION_OPTION,
    check_out,
    export_errors,
    finish,
)
from railgauge.terminal import Terminal

if TYPE_CHECKING:
    from railgauge.tune import RxwinTuneResult


@contextmanager
def _tune_errors() -> Iterator[None]:
    """The simulator missing, or a tuning that failed: FailError; bad input: UserError."""
    from railgauge.native import NativeToolError
    from railgauge.tune import TuneError

    try:
        yield
    except NativeToolError as exc:
        raise FailError(str(exc)) from None
    except TuneError as exc:
        if exc.user:
            raise UserError(str(exc)) from None
        raise FailError(str(exc)) from None


@click.group()
def tune() -> None:
    """Choose algorithms from the fitted model (simulated on the native simulator)."""


@tune.command("barrier")
@click.option("-P", "P", required=True, metavar="P|LIST|A..B",
              help="Number of ranks: one value, a list (2,4,8) or a range (2..4096: the "
                   "powers of two between and both ends).")
@click.option("--model", "model", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="model-loggp.json (or model-lop.json) from `railgauge fit`, "
                                  "or model-flags.json from `railgauge gauge` over shm.")
@click.option("--engine", type=click.Choice(("auto", "flags", "messages")), default="auto",
              show_default=True,
              help="The barrier's engine the model describes: auto = that of the file given "
                   "(model-flags.json: the shared-memory flags; others: messages); flags "
                   "takes the model-flags.json beside a messaging model (a gauge report "
                   "folder); messages refuses a flag model. --emit always simulates the "
                   "stack's messages.")
@click.option("--max-n", type=click.IntRange(2, 64), default=7, show_default=True,
              help="Try the n-way dissemination with n = 2 .. this.")
@click.option("--emit", "emit", type=click.Choice(("openmpi", "openmpi-json", "mpich")),
              default=None,
              help="Choose among the stack's own barrier algorithms (simulated as the stack "
                   "implements them) for each P and write them in the stack's format: "
                   "openmpi a coll_tuned dynamic rules file, openmpi-json the same in Open "
                   "MPI's JSON rules schema, mpich the settings of every layer (and a JSON "
                   "selection file where the choice depends on P).")
@STACK_VERSION_OPTION
@OUT_OPTION
@click.option("--plot", "plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also draw the predicted time against P (powers of two up to P) for "
                   "every algorithm into this PNG.")
@click.option("--json", "as_json", is_flag=True,
              help="Print {algorithm, n, predicted_us, table} as JSON (a list of P: "
                   "{\"results\": [...]}); with --emit, the stack's object {stack, version, "
                   "settings, file, content, reasons, choices}.")
def barrier(P: str, model: Path, engine: str, max_n: int, emit: str | None,
            stack_version: str | None, out: Path | None, plot: Path | None,
            as_json: bool) -> int:
    """Which barrier, and which n, for P ranks: every algorithm simulated on the model;
    with --emit, which of an MPI stack's own algorithms, written as that stack's settings."""
    from railgauge.native import find_tool
    from railgauge.stacks.choose import parse_ranks
    from railgauge.tune import barrier_curves, plot_barrier_curves, plot_points, tune_barrier

    term = Terminal()
    if emit is None and (stack_version is not None or out is not None):
        raise UserError("--stack-version and --out go with --emit")
    if emit is not None and plot is not None:
        raise UserError("--plot draws railgauge's own algorithms: give it without --emit")
    with _tune_errors():
        Ps = parse_ranks(P)
    check_out(out)
    if emit is not None:
        return _emit_barrier(term, Ps, model, emit, stack_version, out, as_json)
    ns = tuple(range(2, max_n + 1))
    with _tune_errors():
        tool = find_tool("railgauge-sim")
        results = [tune_barrier(p, model, tool=tool, ns=ns, engine=engine) for p in Ps]
        if plot is not None:
            res = results[-1]
            curves = barrier_curves(plot_points(Ps[-1]), model, tool=tool, ns=ns,
                                    engine=engine)
            choice = f"nway:{res.n}" if res.algorithm == "nway" else res.algorithm
            plot_barrier_curves(curves, plot, title=f"barrier on the model {model.name}",
                                choice=choice)
    if as_json:
        doc = (results[0].to_json() if len(results) == 1
               else {"results": [r.to_json() for r in results]})
        term.result(json.dumps(doc))
        return 0
    if len(results) > 1:
        res = results[0]
        term.result(f"barrier on {len(Ps)} sizes, model {res.model} (engine {res.engine}):")
        if res.note:
            term.result(f"  note: {res.note}")
        term.result(f"  {'P':>8s} {'choice':<10s} {'predicted':>14s}  next best")
        for r in results:
            second = r.table[1] if len(r.table) > 1 else None
            nxt = ("-" if second is None or second.predicted_us is None
                   else _label(second.algorithm, second.n))
            label = _label(r.algorithm, r.n)
            term.result(f"  {r.P:>8d} {label:<10s} {r.predicted_us:11.3f} us  {nxt}")
        if plot is not None:
            term.result(f"plot: {plot}")
        return 0
    res = results[0]
    term.result(f"barrier on {res.P} ranks, model {res.model} (engine {res.engine}"
                + (", predictions include its per-barrier call cost" if res.engine == "flags"
                   else "") + "):")
    if res.note:
        term.result(f"  note: {res.note}")
    term.result(f"  {'algorithm':<10s} {'n':>3s} {'predicted':>14s}")
    for row in res.table:
        t = f"{row.predicted_us:11.3f} us" if row.predicted_us is not None else "   (too large)"
        term.result(f"  {row.algorithm:<10s} {row.n:>3d} {t:>14s}")
    label = f"nway --n {res.n}" if res.algorithm == "nway" else res.algorithm
    term.result(f"choice: {label} ({res.predicted_us:.3f} us)")
    if plot is not None:
        term.result(f"plot: {plot}")
    return 0


def _write_side_files(em: Any, out: Path | None) -> None:
    """The selection files the settings name (MPICH, where the choice depends on P), beside
    --out; without --out they are in --json's "files" only, and a warning says so."""
    from railgauge.export.files import ExportError, write_file_atomic

    files: dict[str, str] = getattr(em, "files", {})
    if not files:
        return
    if out is None:
        em.warnings.append("the choice depends on the communicator's size, so the settings "
                           f"name {', '.join(sorted(files))} in this folder: give --out FILE "
                           "to write them beside FILE (--json carries them under \"files\")")
        return
    for name, text in files.items():
        path = out.resolve().parent / name
        try:
            write_file_atomic(path, text)
        except OSError as exc:
            raise ExportError(f"{path}: cannot write: {exc.strerror}") from None


def _label(algorithm: str, n: int) -> str:
    return f"nway:{n}" if algorithm == "nway" else algorithm


def _emit_barrier(term: Terminal, Ps: list[int], model: Path, fmt: str,
                  stack_version: str | None, out: Path | None, as_json: bool) -> int:
    """`tune barrier --emit`: the stack's algorithms simulated per P, the fastest written."""
    import importlib

    from railgauge.emit import resolve_version
    from railgauge.native import find_tool
    from railgauge.stacks import BARRIER_FORMATS
    from railgauge.stacks.choose import choose_barrier, model_warnings

    stack = BARRIER_FORMATS[fmt]
    with export_errors():
        version = resolve_version(stack, stack_version, tuple(sorted(set(
            BARRIER_FORMATS.values()))))
        mod = importlib.import_module(f"railgauge.stacks.{stack}")
        algorithms = mod.barrier_algorithms(version)
    with _tune_errors():
        tool = find_tool("railgauge-sim")
        res = choose_barrier(Ps, model, tool=tool, stack=stack, version=version,
                             algorithms=algorithms,
                             default=lambda p: mod.default_barrier(version, p))
    with export_errors():
        if stack == "mpich":
            where = out.resolve().parent if out is not None else Path.cwd()
            em = mod.emit_barrier(res.choices, version, fmt, file_dir=str(where))
        elif out is not None:
            em = mod.emit_barrier(res.choices, version, fmt, rules_file=str(out.resolve()))
        else:
            em = mod.emit_barrier(res.choices, version, fmt)
        _write_side_files(em, out)
    em.warnings[:0] = model_warnings(model, stack)
    if not as_json:
        term.info(f"{stack} {version}: the barrier per communicator size on the model {model} "
                  "(simulated, us):")
        for c in res.choices:
            row = "  ".join(f"{r.algorithm.name}={r.predicted_us:.2f}"
                            if r.predicted_us is not None else f"{r.algorithm.name}=-"
                            for r in res.tables[c.P])
            term.info(f"  P={c.P}: {c.algorithm.name} (default {res.defaults[c.P].name}); "
                      f"{row}")
    return finish(term, em, out, as_json,
                  {"choices": res.choices_json(), "table": res.table_json()})


def _int_list(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...]:
    if value is None:
        return ()
    try:
        return tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r}: a comma-separated list of buffer counts",
                                 ctx=ctx, param=param) from None


def _float_list(ctx: click.Context, param: click.Parameter,
                value: str | None) -> tuple[float, ...]:
    if value is None:
        return ()
    try:
        return tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(f"{value!r}: a comma-separated list of milliseconds",
                                 ctx=ctx, param=param) from None


@tune.command("rxwin")
@click.option("--model", "model", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="model-loggp.json from `railgauge fit`.")
@click.option("--pattern", required=True,
              type=click.Choice(("alltoall", "halo2d", "halo3d", "incast", "mix")),
              help="The workload (as `railgauge rxwin eval`).")
@click.option("-n", "nranks", type=click.IntRange(2, 4096), default=64, show_default=True,
              help="Number of ranks to simulate.")
@click.option("--iters", type=click.IntRange(1, 1000000), default=10, show_default=True,
              help="Phases of the workload per simulation.")
@click.option("--w-init", "w_inits", callback=_int_list, default="1,8,32", show_default=True,
              help="W_init values to try (comma-separated).")
@click.option("--w-max", "w_maxes", callback=_int_list, default="16,64,256,1024,4096",
              show_default=True, help="W_max values to try (comma-separated).")
@click.option("--rnr-timer-ms", "timers", callback=_float_list, default="0.01,0.1,1,10",
              show_default=True, help="RNR timers to try, ms (comma-separated).")
@click.option("--tolerance", type=float, default=0.02, show_default=True,
              help="Settings within this fraction of the best time count as fast.")
@click.option("--eager-limit", type=click.IntRange(0, 1 << 30), default=16384,
              show_default=True, help="Messages up to this many bytes use the window.")
@click.option("--emit", "emit", type=click.Choice(("mvapich2", "ucx", "openmpi")),
              default=None,
              help="Write the choice as this stack's receive-queue settings: mvapich2 "
                   "MV2_SRQ_*; ucx UCX_RC/UD_RX_QUEUE_LEN (a fixed length, simulated too); "
                   "openmpi the same through its pml ucx.")
@STACK_VERSION_OPTION
@OUT_OPTION
@click.option("--json", "as_json", is_flag=True,
              help="Print {w_init, w_max, rnr_timer_ms, window, time_s, mem_bytes_mean, "
                   "table, ...} as JSON; with --emit, the stack's object {stack, version, "
                   "settings, file, content, reasons} with this under \"tune\".")
def rxwin(model: Path, pattern: str, nranks: int, iters: int, w_inits: tuple[int, ...],
          w_maxes: tuple[int, ...], timers: tuple[float, ...], tolerance: float,
          eager_limit: int, emit: str | None, stack_version: str | None, out: Path | None,
          as_json: bool) -> int:
    """Which receive window (W_init, W_max) and RNR timer for a workload: the least memory
    within the tolerance of the best simulated time; --emit writes it as an MPI stack's
    receive-queue settings, each with its reason."""
    from railgauge.emit import RXWIN_STACKS, resolve_version
    from railgauge.native import find_tool
    from railgauge.tune import tune_rxwin

    term = Terminal()
    if emit is None and (stack_version is not None or out is not None):
        raise UserError("--stack-version and --out go with --emit")
    check_out(out)
    if emit is not None:
        with export_errors():
            stack_version = resolve_version(emit, stack_version, RXWIN_STACKS)
    with _tune_errors():
        tool = find_tool("railgauge-sim")
        res = tune_rxwin(pattern, model, tool=tool, nranks=nranks, iters=iters,
                         w_inits=w_inits, w_maxes=w_maxes, timers_ms=timers,
                         tolerance=tolerance, eager_limit=eager_limit)
    if emit is not None:
        return _emit_rxwin(term, res, emit, stack_version, out, as_json, tool, eager_limit)
    if as_json:
        term.result(json.dumps(res.to_json()))
        return 0
    term.result(f"receive window for {pattern} on {nranks} ranks ({iters} phases), model "
                f"{model}; best time {res.best_time_s * 1e3:.4f} ms, tolerance "
                f"{res.tolerance:.0%}:")
    term.result(f"  {'window':<22s} {'timer ms':>9s} {'time ms':>10s} {'rel':>6s} "
                f"{'mem KiB mean':>13s} {'max':>9s} {'limits':>7s} {'rnr':>8s}")
    for r in res.table:
        mark = " <- choice" if r is res.choice else ""
        term.result(f"  {r.window:<22s} {r.rnr_timer_ms:>9g} {r.time_s * 1e3:>10.4f} "
                    f"{r.time_s / res.best_time_s:>6.3f} {r.mem_mean / 1024:>13.1f} "
                    f"{r.mem_max / 1024:>9.0f} {r.limit_events:>7d} {r.rnr:>8d}{mark}")
    c = res.choice
    term.result(f"choice: RG_PROTO_RXWIN={c.window} RG_PROTO_RNR=1 "
                f"RG_PROTO_RNR_TIMER_MS={c.rnr_timer_ms:g} ({c.time_s * 1e3:.4f} ms, "
                f"{c.mem_mean / 1024:.1f} KiB per rank)")
    return 0


def _emit_rxwin(term: Terminal, res: RxwinTuneResult, stack: str, version: str | None,
                out: Path | None, as_json: bool, tool: str, eager_limit: int) -> int:
    from railgauge.emit import emit_rxwin, rxwin_queue_choice

    with _tune_errors():
        q = rxwin_queue_choice(res, tool=tool, eager_limit=eager_limit)
    with export_errors():
        em = emit_rxwin(q, stack, version)
    return finish(term, em, out, as_json, {"tune": res.to_json()})
