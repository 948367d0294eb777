#!/usr/bin/env python3
"""Side-by-side shm benchmark of railgauge against a bare ring, libfabric and MPI.

Runs, in one invocation and interleaved by round so that machine noise hits every
implementation alike:

* ``spsc-floor``: a bare lock-free SPSC ring between two pinned processes
  (bench/spsc_floor.c), the floor; ``spsc-floor-seq`` is the same ring with the
  consumer polling a sequence word in the slot instead of the head index;
* ``railgauge``: ``railgauge run -n 2 --transport shm -- railgauge-bench pingpong``;
* ``libfabric shm``: ``fi_pingpong -p shm -e rdm`` (server and client);
* ``openmpi`` (and ``mpich`` when installed): bench/mpi_pingpong.c;

and the ``ofi-tcp`` and ``mpi`` sections (railgauge over libfabric's tcp provider and
over MPI beside the plain programs).  Writes its sections of docs/BENCHMARKS.md (between
``<!-- bench:NAME:begin -->`` and ``<!-- bench:NAME:end -->``, keeping the rest of
the file) and the raw results to build/bench/results-<date>.json.  The ``gauge`` section
(the LogGP model's prediction and stability over runs) is bench/gauge_bench.py's.

    python3 bench/run_bench.py                      # 5 rounds
    python3 bench/run_bench.py --rounds 1
    python3 bench/run_bench.py --section foundation --skip-railgauge

Exit status: 0 done, 1 a benchmark failed (the document says which), 2 bad usage
or a missing tool.  Benchmarks are not tests and never run in CI.
"""

import argparse
import datetime as dt
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (
    BUILD,
    CFLAGS,
    REPO,
    BenchError,
    ProcResult,
    Tools,
    UsageError,
    _kill_group,
    _ompi_env,
    _on_sigterm,
    _which,
    facts_md,
    find_railgauge,
    find_railgauge_bench,
    fmt_bw,
    fmt_us,
    free_tcp_port,
    json_lines,
    machine_facts,
    run_proc,
    verdict,
    write_sections,
)

SIZES: tuple[int, ...] = (1, 8, 1048576)
MIB = 1048576
SECTIONS = ("foundation", "ofi-tcp", "mpi")

# Display order and labels of the latency rows.
IMPLS: dict[str, str] = {
    "spsc-floor": "spsc-floor (bare SPSC ring, head/tail)",
    "spsc-floor-seq": "spsc-floor-seq (bare SPSC ring, flag in slot)",
    "railgauge": "railgauge shm",
    "railgauge-ofi-shm": "railgauge ofi:shm (libfabric shm provider)",
    "libfabric-shm": "libfabric shm (fi_pingpong)",
    "openmpi": "Open MPI (btl vader)",
    "mpich": "MPICH",
}

TARGET_RATIO = 1.2


# --------------------------------------------------------------------------------------
# Processes: every child runs in its own session and its whole group is killed on every
# exit path (timeout, error, Ctrl-C, SIGTERM), so no server or rank outlives the script.


# --------------------------------------------------------------------------------------
# Tools


def build_tools(args: argparse.Namespace, need_railgauge: bool, need_latency: bool) -> Tools:
    missing: list[str] = []
    cc = _which(args.cc) or ""
    if need_latency and not cc:
        missing.append(f"C compiler `{args.cc}` (apt-get install gcc, or pass --cc)")
    tools = Tools(cc=cc, floor=BUILD / "spsc_floor")
    if need_latency:
        tools.mpirun_openmpi = _which("mpirun.openmpi")
        mpicc = _which("mpicc.openmpi")
        if not (tools.mpirun_openmpi and mpicc):
            missing.append("Open MPI: mpicc.openmpi / mpirun.openmpi "
                           "(apt-get install libopenmpi-dev openmpi-bin)")
        tools.fi_pingpong = _which("fi_pingpong")
        if not tools.fi_pingpong:
            missing.append("fi_pingpong (apt-get install libfabric-bin)")
        tools.taskset = _which("taskset")
    if need_railgauge:
        found = find_railgauge(args.railgauge)
        if found is None:
            missing.append("railgauge: not on PATH and not importable from python/ "
                           "(run `python3 -m pip install .` at the repository root, "
                           "or pass --railgauge CMD)")
        else:
            tools.railgauge, tools.railgauge_env = found
        tools.railgauge_bench = find_railgauge_bench(args.railgauge_bench)
        if need_latency and not tools.railgauge_bench:
            missing.append("railgauge-bench: not in $RG_NATIVE_DIR, beside python, on PATH, "
                           "nor in build/native/ (build native/ with CMake or "
                           "`python3 -m pip install .`, or pass --railgauge-bench PATH)")
    if missing:
        hint = ("\n(--skip-railgauge runs the other rows without railgauge)"
                if need_railgauge else "")
        raise UsageError("missing tools:\n  - " + "\n  - ".join(missing) + hint)
    if not need_latency:
        return tools

    BUILD.mkdir(parents=True, exist_ok=True)
    _compile([cc, *CFLAGS, "-o", str(tools.floor), str(REPO / "bench" / "spsc_floor.c")])
    tools.mpi_openmpi = BUILD / "mpi_pingpong_openmpi"
    _compile(["mpicc.openmpi", *CFLAGS, "-o", str(tools.mpi_openmpi),
              str(REPO / "bench" / "mpi_pingpong.c")])
    if not args.no_mpich and _which("mpicc.mpich") and _which("mpiexec.mpich"):
        tools.mpiexec_mpich = _which("mpiexec.mpich")
        tools.mpi_mpich = BUILD / "mpi_pingpong_mpich"
        _compile(["mpicc.mpich", *CFLAGS, "-o", str(tools.mpi_mpich),
                  str(REPO / "bench" / "mpi_pingpong.c")])
    return tools


def _compile(argv: list[str]) -> None:
    log(f"build: {shlex.join(argv)}")
    res = run_proc(argv, timeout=300, cwd=REPO)
    if res.rc != 0:
        raise BenchError(f"build failed: {res.describe()}")


# --------------------------------------------------------------------------------------
# One latency measurement per implementation: each returns {size: record} where a record
# has at least oneway_us (µs) and bw_MBps (10^6 bytes/s).

Records = dict[int, dict[str, Any]]


def _sizes_arg() -> str:
    return ",".join(str(s) for s in SIZES)


def _c_bench_args(args: argparse.Namespace) -> list[str]:
    return ["--sizes", _sizes_arg(), "--iters", str(args.iters), "--batches", str(args.batches),
            "--warmup", str(args.warmup), "--group", str(args.group),
            "--big-bytes", str(args.big_bytes), "--min-iters", str(args.min_iters)]


def _records_by_size(text: str, impl: str) -> Records:
    out: Records = {}
    for rec in json_lines(text):
        if "s" in rec and "oneway_us" in rec:
            rec["impl"] = impl
            out[int(rec["s"])] = rec
    return out


def _check_sizes(recs: Records, res: ProcResult, what: str) -> Records:
    missing = [s for s in SIZES if s not in recs]
    if missing:
        raise BenchError(f"{what}: no result for sizes {missing}; {res.describe()}")
    return recs


def bench_floor(tools: Tools, args: argparse.Namespace, signal_mode: str) -> Records:
    impl = "spsc-floor" if signal_mode == "head" else "spsc-floor-seq"
    argv = [str(tools.floor), *_c_bench_args(args), "--signal", signal_mode, "--impl", impl,
            "--cores", args.cores]
    res = run_proc(argv, timeout=args.timeout)
    if res.rc != 0:
        raise BenchError(res.describe())
    return _check_sizes(_records_by_size(res.stdout, impl), res, impl)


def bench_openmpi(tools: Tools, args: argparse.Namespace) -> Records:
    assert tools.mpirun_openmpi and tools.mpi_openmpi
    argv = [tools.mpirun_openmpi, "--allow-run-as-root", "--oversubscribe", "-n", "2",
            "--bind-to", "core", "--mca", "btl", "self,vader",
            str(tools.mpi_openmpi), "openmpi", *_c_bench_args(args)]
    res = run_proc(argv, timeout=args.timeout, env=_ompi_env())
    if res.rc != 0:
        raise BenchError(res.describe())
    return _check_sizes(_records_by_size(res.stdout, "openmpi"), res, "openmpi")


def bench_mpich(tools: Tools, args: argparse.Namespace) -> Records:
    assert tools.mpiexec_mpich and tools.mpi_mpich
    argv = [tools.mpiexec_mpich, "-n", "2", "-bind-to", "core",
            str(tools.mpi_mpich), "mpich", *_c_bench_args(args)]
    res = run_proc(argv, timeout=args.timeout)
    if res.rc != 0:
        raise BenchError(res.describe())
    return _check_sizes(_records_by_size(res.stdout, "mpich"), res, "mpich")


def parse_fi_pingpong(text: str) -> dict[str, Any] | None:
    """The data row of fi_pingpong's table, keyed by its header.

    fi_pingpong (fabtests util/pingpong.c) prints
    ``bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec`` with
    usec/xfer = elapsed / (iterations * 2) and MB/sec = bytes * iterations * 2 / elapsed
    (bytes per µs), elapsed from gettimeofday around all iterations."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head = line.split()
        if "usec/xfer" in head and "MB/sec" in head:
            for row in lines[i + 1:]:
                vals = row.split()
                if len(vals) == len(head):
                    try:
                        return {
                            "usec_per_xfer": float(vals[head.index("usec/xfer")]),
                            "MB_per_sec": float(vals[head.index("MB/sec")]),
                            "row": row.strip(),
                        }
                    except ValueError:
                        return None
    return None


def bench_fi_pingpong(tools: Tools, args: argparse.Namespace) -> Records:
    assert tools.fi_pingpong
    out: Records = {}
    cores = args.cores.split(",")
    for s in SIZES:
        iters = args.iters * args.batches if s <= 4096 else max(
            args.min_iters, args.big_bytes // s) * args.batches
        out[s] = _fi_pingpong_one(tools, args, s, iters, cores)
    return out


def _fi_pingpong_one(tools: Tools, args: argparse.Namespace, size: int, iters: int,
                     cores: list[str], provider: str = "shm",
                     impl: str = "libfabric-shm") -> dict[str, Any]:
    assert tools.fi_pingpong
    port = free_tcp_port()
    base = [tools.fi_pingpong, "-p", provider, "-e", "rdm", "-I", str(iters), "-S", str(size)]

    def pinned(core: str, argv: list[str]) -> list[str]:
        return [tools.taskset, "-c", core, *argv] if tools.taskset else argv

    server_argv = pinned(cores[0], [*base, "-B", str(port)])
    client_argv = pinned(cores[1], [*base, "-P", str(port), "127.0.0.1"])
    deadline = time.monotonic() + args.timeout
    server = subprocess.Popen(server_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        # The server accepts exactly one control connection, so it cannot be probed:
        # the client retries while the server is still coming up.
        for _attempt in range(200):
            res = run_proc(client_argv, timeout=max(1.0, deadline - time.monotonic()))
            refused = "failed to connect" in (res.stderr + res.stdout)
            if res.rc == 0 or not refused or server.poll() is not None:
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        try:
            s_out, s_err = server.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            s_out, s_err = "", "server did not exit"
    finally:
        _kill_group(server)
        if server.poll() is None:
            server.wait()
    if res.rc != 0:
        raise BenchError(f"fi_pingpong client: {res.describe()}; server: {s_err.strip()[-300:]}")
    row = parse_fi_pingpong(res.stdout)
    if row is None:
        raise BenchError(f"fi_pingpong: no result table in output: {res.stdout[-300:]!r}")
    return {
        "impl": impl,
        "s": size,
        # usec/xfer is the mean one-way time (half the mean round trip) over all iterations.
        "oneway_us": row["usec_per_xfer"],
        "mean_oneway_us": row["usec_per_xfer"],
        # MB/sec = size / usec/xfer, in bytes/µs = 10^6 bytes/s.
        "bw_MBps": row["MB_per_sec"],
        "iters": iters,
        "row": row["row"],
        "server_row": (parse_fi_pingpong(s_out) or {}).get("row"),
    }


def bench_railgauge(tools: Tools, args: argparse.Namespace, transport: str = "shm",
                    impl: str = "railgauge") -> Records:
    assert tools.railgauge and tools.railgauge_bench
    argv = [*tools.railgauge, "run", "-n", "2", "--transport", transport,
            *shlex.split(args.railgauge_run_args), "--",
            tools.railgauge_bench, "pingpong", "--sizes", _sizes_arg(),
            *shlex.split(args.railgauge_bench_args)]
    res = run_proc(argv, timeout=args.timeout, env={**os.environ, **tools.railgauge_env})
    if res.rc != 0:
        raise BenchError(res.describe())
    out: Records = {}
    header: dict[str, Any] | None = None
    for rec in json_lines(res.stdout):
        if rec.get("type") == "header":
            header = rec
        elif rec.get("type") == "pingpong" and "s" in rec and "median_us" in rec:
            s = int(rec["s"])
            oneway = float(rec["median_us"]) / 2.0
            out[s] = {
                "impl": impl,
                "s": s,
                # median_us is the median round trip; one-way is half of it.
                "oneway_us": oneway,
                "min_oneway_us": float(rec["min_us"]) / 2.0 if "min_us" in rec else None,
                "bw_MBps": s / oneway if oneway > 0 else None,
                "count": rec.get("count"),
                "raw": rec,
            }
    if header is not None:
        for rec in out.values():
            rec["header"] = header
    return _check_sizes(out, res, impl)


# --------------------------------------------------------------------------------------
# The rounds


@dataclass
class LatencyRun:
    rounds: int
    order: list[str]
    per_round: list[dict[str, Records]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


def latency_rounds(tools: Tools, args: argparse.Namespace, impls: list[str]) -> LatencyRun:
    runners = {
        "spsc-floor": lambda: bench_floor(tools, args, "head"),
        "spsc-floor-seq": lambda: bench_floor(tools, args, "seq"),
        "railgauge": lambda: bench_railgauge(tools, args),
        "railgauge-ofi-shm": lambda: bench_railgauge(tools, args, "ofi:shm", "railgauge-ofi-shm"),
        "libfabric-shm": lambda: bench_fi_pingpong(tools, args),
        "openmpi": lambda: bench_openmpi(tools, args),
        "mpich": lambda: bench_mpich(tools, args),
    }
    run = LatencyRun(rounds=args.rounds, order=impls)
    for r in range(args.rounds):
        # Rotate the order every round so no implementation always runs first or last.
        order = impls[r % len(impls):] + impls[:r % len(impls)]
        this: dict[str, Records] = {}
        for impl in order:
            t0 = time.monotonic()
            try:
                this[impl] = runners[impl]()
                s8 = this[impl][8]["oneway_us"]
                log(f"round {r + 1}/{args.rounds} {impl}: 8 B one-way {s8:.3f} us "
                    f"({time.monotonic() - t0:.1f} s)")
            except BenchError as exc:
                log(f"round {r + 1}/{args.rounds} {impl}: FAILED: {exc}")
                run.errors.append({"round": r, "impl": impl, "error": str(exc)})
        run.per_round.append(this)
    return run


@dataclass
class ImplSummary:
    impl: str
    rounds_ok: int
    oneway: dict[int, float]
    oneway_min: dict[int, float]
    oneway_max: dict[int, float]
    bw_1mib: float | None


def summarize_latency(run: LatencyRun) -> dict[str, ImplSummary]:
    out: dict[str, ImplSummary] = {}
    for impl in run.order:
        recs = [rnd[impl] for rnd in run.per_round if impl in rnd]
        if not recs:
            continue
        ow = {s: [float(r[s]["oneway_us"]) for r in recs] for s in SIZES}
        bws = [float(r[MIB]["bw_MBps"]) for r in recs if r[MIB].get("bw_MBps")]
        out[impl] = ImplSummary(
            impl=impl,
            rounds_ok=len(recs),
            oneway={s: statistics.median(v) for s, v in ow.items()},
            oneway_min={s: min(v) for s, v in ow.items()},
            oneway_max={s: max(v) for s, v in ow.items()},
            bw_1mib=statistics.median(bws) if bws else None,
        )
    return out


# --------------------------------------------------------------------------------------
# ofi-tcp: railgauge over libfabric's tcp provider (tcp;ofi_rxm) beside fi_pingpong -p tcp,
# 8 B one-way time, interleaved round by round.

OFI_TCP_SIZE = 8
OFI_TCP_TARGET = 1.1
OFI_TCP_IMPLS: dict[str, str] = {
    "railgauge-ofi-tcp": "railgauge ofi:tcp (railgauge-bench pingpong)",
    "railgauge-ofi-tcp-unsafe": "railgauge ofi:tcp, RG_OFI_SEND_SAFE=0 (injects, staging buffer)",
    "libfabric-tcp": "libfabric tcp;ofi_rxm (fi_pingpong -p tcp -e rdm)",
}
#: railgauge-bench runs the 8 B point until its median is known to 0.01% (the tightest
#: target it takes), 1 s or 100000 round trips, about as long as one fi_pingpong run of
#: --iters round trips: both are exposed to the machine's noise alike, and the many
#: short interleaved rounds let the median over rounds drop the rounds a burst of other
#: work hit (fi_pingpong's figure is a mean over all its iterations, so is the one
#: compared).
OFI_TCP_BENCH_ARGS = ("--max-reps", "100000", "--point-budget", "1", "--target-rel", "0.0001")


def ofi_tcp_tools(tools: Tools) -> None:
    """Fills in and checks what the ofi-tcp section needs beyond build_tools()."""
    tools.fi_pingpong = tools.fi_pingpong or _which("fi_pingpong")
    tools.taskset = tools.taskset or _which("taskset")
    missing = []
    if not tools.fi_pingpong:
        missing.append("fi_pingpong (apt-get install libfabric-bin)")
    if not tools.railgauge_bench:
        missing.append("railgauge-bench (build native/ or pass --railgauge-bench PATH)")
    if missing:
        raise UsageError("missing tools for the ofi-tcp section:\n  - " + "\n  - ".join(missing))


def bench_railgauge_ofi_tcp(tools: Tools, args: argparse.Namespace,
                            impl: str = "railgauge-ofi-tcp",
                            env: dict[str, str] | None = None) -> dict[str, Any]:
    assert tools.railgauge and tools.railgauge_bench
    argv = [*tools.railgauge, "run", "-n", "2", "--transport", "ofi:tcp",
            *shlex.split(args.railgauge_run_args), "--",
            tools.railgauge_bench, "pingpong", "--sizes", str(OFI_TCP_SIZE),
            *OFI_TCP_BENCH_ARGS, *shlex.split(args.railgauge_bench_args)]
    res = run_proc(argv, timeout=args.timeout,
                   env={**os.environ, **tools.railgauge_env, **(env or {})})
    if res.rc != 0:
        raise BenchError(res.describe())
    header: dict[str, Any] = {}
    for rec in json_lines(res.stdout):
        if rec.get("type") == "header":
            header = rec
        elif rec.get("type") == "pingpong" and rec.get("s") == OFI_TCP_SIZE:
            return {
                "impl": impl,
                "s": OFI_TCP_SIZE,
                # median_us and mean_us are round trips; one-way is half.
                "oneway_us": float(rec["median_us"]) / 2.0,
                "mean_oneway_us": float(rec["mean_us"]) / 2.0,
                "count": rec.get("count"),
                "transport_info": header.get("transport_info"),
                "raw": rec,
            }
    raise BenchError(f"railgauge ofi:tcp: no {OFI_TCP_SIZE} B record; {res.describe()}")


def ofi_tcp_round_count(args: argparse.Namespace) -> int:
    """Rounds of the ofi-tcp section: --rounds x --batches short rounds."""
    return int(args.rounds * args.batches)


def bench_fi_pingpong_tcp(tools: Tools, args: argparse.Namespace) -> dict[str, Any]:
    iters = args.iters
    rec = _fi_pingpong_one(tools, args, OFI_TCP_SIZE, iters, args.cores.split(","),
                           provider="tcp", impl="libfabric-tcp")
    return rec


@dataclass
class OfiTcpRun:
    rounds: int
    per_round: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def values(self, impl: str, key: str) -> list[float]:
        return [float(rnd[impl][key]) for rnd in self.per_round if impl in rnd]


def ofi_tcp_rounds(tools: Tools, args: argparse.Namespace) -> OfiTcpRun:
    runners = {
        "railgauge-ofi-tcp": lambda: bench_railgauge_ofi_tcp(tools, args),
        "railgauge-ofi-tcp-unsafe": lambda: bench_railgauge_ofi_tcp(
            tools, args, "railgauge-ofi-tcp-unsafe", {"RG_OFI_SEND_SAFE": "0"}),
        "libfabric-tcp": lambda: bench_fi_pingpong_tcp(tools, args),
    }
    impls = list(OFI_TCP_IMPLS)
    rounds = ofi_tcp_round_count(args)
    run = OfiTcpRun(rounds=rounds)
    for r in range(rounds):
        order = impls[r % len(impls):] + impls[:r % len(impls)]
        this: dict[str, dict[str, Any]] = {}
        for impl in order:
            t0 = time.monotonic()
            try:
                this[impl] = runners[impl]()
                log(f"ofi-tcp round {r + 1}/{rounds} {impl}: 8 B one-way "
                    f"{this[impl]['oneway_us']:.3f} us (mean "
                    f"{this[impl]['mean_oneway_us']:.3f}) ({time.monotonic() - t0:.1f} s)")
            except BenchError as exc:
                log(f"ofi-tcp round {r + 1}/{rounds} {impl}: FAILED: {exc}")
                run.errors.append({"round": r, "impl": impl, "error": str(exc)})
        run.per_round.append(this)
    return run


def ofi_tcp_md(run: OfiTcpRun, args: argparse.Namespace, facts: dict[str, Any],
               command: str, raw: Path) -> str:
    def med(impl: str, key: str) -> float | None:
        vals = run.values(impl, key)
        return statistics.median(vals) if vals else None

    def span(impl: str, key: str) -> str:
        vals = run.values(impl, key)
        return f"{fmt_us(min(vals))}–{fmt_us(max(vals))}" if vals else "n/a"

    lines = [
        "## ofi:tcp: railgauge beside fi_pingpong over libfabric's tcp provider",
        "",
        f"Two processes on one host exchange {OFI_TCP_SIZE} B messages in a ping-pong over "
        "libfabric's `tcp;ofi_rxm` provider (the host's first interface, as both pick by "
        f"default). One-way time in µs = half a round trip. Medians over {run.rounds} "
        "round(s); each round runs every row, in an order that rotates from round to round.",
        "",
        "| implementation | one-way mean (µs) | mean min–max over rounds | one-way median (µs) "
        "| rounds |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for impl, label in OFI_TCP_IMPLS.items():
        n = len(run.values(impl, "oneway_us"))
        median_cell = fmt_us(med(impl, "oneway_us")) if impl.startswith("railgauge") \
            else "n/a (prints a mean only)"
        lines.append(f"| {label} | {fmt_us(med(impl, 'mean_oneway_us'))} | "
                     f"{span(impl, 'mean_oneway_us')} | {median_cell} | {n}/{run.rounds} |")
    rg, fi = med("railgauge-ofi-tcp", "mean_oneway_us"), med("libfabric-tcp", "mean_oneway_us")
    ok = None if rg is None or fi is None else rg <= OFI_TCP_TARGET * fi
    measured = (f"{fmt_us(rg)} µs vs {OFI_TCP_TARGET} × {fmt_us(fi)} µs = "
                f"{fmt_us(OFI_TCP_TARGET * fi)} µs ({rg / fi:.2f}x)"
                if rg is not None and fi is not None else "n/a")
    lines += [
        "",
        "| target | measured | result |",
        "| --- | --- | --- |",
        f"| railgauge ofi:tcp within 10% of fi_pingpong -p tcp (8 B one-way, mean vs mean) "
        f"| {measured} | {verdict(ok)} |",
    ]
    if run.errors:
        lines += ["", "Failed runs (left out of the medians):", ""]
        lines += [f"- round {e['round'] + 1}, {e['impl']}: {e['error']}" for e in run.errors]
    lines += [
        "",
        "How each row is measured:",
        "",
        "- **railgauge ofi:tcp**: `railgauge run -n 2 --transport ofi:tcp -- railgauge-bench "
        f"pingpong --sizes {OFI_TCP_SIZE} {' '.join(OFI_TCP_BENCH_ARGS)}`: every round trip "
        "is timed on its own (TSC) after a warm-up, until the 95% confidence interval of the "
        "median is within 0.01% of it, 1 s or 100000 round trips, whichever comes first (the "
        "raw results hold the counts); the record's `mean_us` and `median_us` are round "
        "trips, halved here. Over tcp railgauge sends "
        "without `fi_tinjectdata` and with tcp's staging send buffer off (`RG_OFI_SEND_SAFE=1`, "
        "the default: a completed send must not wait in the process for a later call, see "
        "docs/transports.md); the second row is the same with `RG_OFI_SEND_SAFE=0` (injects "
        "and the staging buffer, as fi_pingpong has them). Completions are read with "
        "`fi_cq_read` (spinning, then `sched_yield`, as every railgauge wait).",
        "- **fi_pingpong**: `fi_pingpong -p tcp -e rdm -I N -S 8` (libfabric's fabtests, "
        f"N = {args.iters}), server on core {args.cores.split(',')[0]} and "
        f"client on core {args.cores.split(',')[1]} (taskset), control connection on "
        "127.0.0.1. It prints `usec/xfer` = elapsed / (2 × iterations), the mean one-way time "
        "over all iterations (gettimeofday around the loop, no warm-up).",
        "",
        "The target compares means, since fi_pingpong prints only a mean; the median of "
        "railgauge is shown beside it. A mean takes in every preemption, so each run is "
        f"short (about a second) and there are {run.rounds} rounds (--rounds × --batches), "
        "interleaved: the median over rounds leaves out the rounds that a burst of other "
        "work on the machine hit, and the min–max column shows how far they went. Loopback "
        "TCP goes through the kernel on both sides, so a busy machine shifts every row. It "
        "shifts railgauge's more: after `RG_XPORT_SPIN_NS` (2 µs) a railgauge wait polls "
        "with `sched_yield`, which hands the core to the other work, where fi_pingpong "
        "spins until the scheduler preempts it; `RG_XPORT_SPIN_NS=1s` makes railgauge "
        "spin too.",
        "",
    ]
    lines += facts_md(facts, command, raw)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# mpi: railgauge over its mpi transport beside the plain MPI ping-pong (bench/mpi_pingpong.c),
# 8 B one-way time, for each MPI flavour installed, interleaved round by round.

MPI_SIZE = 8
MPI_TARGET = 1.1
#: flavour -> (label, launcher, compiler wrapper, launcher options shared by both rows)
MPI_FLAVOURS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "openmpi": ("Open MPI", "mpirun.openmpi", "mpicc.openmpi",
                ("--allow-run-as-root", "--oversubscribe", "-n", "2", "--bind-to", "core",
                 "--mca", "btl", "self,vader")),
    "mpich": ("MPICH", "mpiexec.mpich", "mpicc.mpich", ("-n", "2", "-bind-to", "core")),
}
#: railgauge-bench times every round trip; 2 s of them give a median as stable as the
#: plain program's (a median over 5 x 100000 round trips in samples of 16).
MPI_BENCH_ARGS = ("--max-reps", "200000", "--point-budget", "2", "--target-rel", "0.0001")


@dataclass
class MpiRun:
    flavours: list[str]
    rounds: int
    per_round: list[dict[str, dict[str, Any]]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def values(self, impl: str) -> list[float]:
        return [float(rnd[impl]["oneway_us"]) for rnd in self.per_round if impl in rnd]


def mpi_tools(tools: Tools, args: argparse.Namespace) -> list[str]:
    """Builds bench/mpi_pingpong.c for every flavour whose launcher and wrapper exist
    (--no-mpich leaves MPICH out) and returns those flavours; raises UsageError when
    none is installed or railgauge-bench is missing."""
    if not tools.railgauge_bench:
        raise UsageError("missing tools for the mpi section:\n  - railgauge-bench (build "
                         "native/ or pass --railgauge-bench PATH)")
    found = []
    for flavour, (_label, launcher, wrapper, _opts) in MPI_FLAVOURS.items():
        if flavour == "mpich" and args.no_mpich:
            continue
        if _which(launcher) and _which(wrapper):
            found.append(flavour)
    if not found:
        raise UsageError("missing tools for the mpi section:\n  - Open MPI or MPICH "
                         "(apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev)")
    BUILD.mkdir(parents=True, exist_ok=True)
    for flavour in found:
        _compile([MPI_FLAVOURS[flavour][2], *CFLAGS, "-o", str(BUILD / f"mpi_pingpong_{flavour}"),
                  str(REPO / "bench" / "mpi_pingpong.c")])
    return found


def _mpi_launch(flavour: str) -> list[str]:
    _label, launcher, _wrapper, opts = MPI_FLAVOURS[flavour]
    found = _which(launcher)
    assert found is not None
    return [found, *opts]


def bench_mpi_plain(args: argparse.Namespace, flavour: str) -> dict[str, Any]:
    opts = _c_bench_args(args)
    opts[opts.index("--sizes") + 1] = str(MPI_SIZE)
    argv = [*_mpi_launch(flavour), str(BUILD / f"mpi_pingpong_{flavour}"), flavour, *opts]
    res = run_proc(argv, timeout=args.timeout, env=_ompi_env())
    if res.rc != 0:
        raise BenchError(res.describe())
    rec = _records_by_size(res.stdout, f"plain-{flavour}").get(MPI_SIZE)
    if rec is None:
        raise BenchError(f"mpi_pingpong ({flavour}): no {MPI_SIZE} B record; {res.describe()}")
    return rec


def bench_mpi_railgauge(tools: Tools, args: argparse.Namespace, flavour: str
                        ) -> dict[str, Any]:
    assert tools.railgauge_bench
    argv = [*_mpi_launch(flavour), tools.railgauge_bench, "pingpong", "--transport", "mpi",
            "--sizes", str(MPI_SIZE), *MPI_BENCH_ARGS, *shlex.split(args.railgauge_bench_args)]
    res = run_proc(argv, timeout=args.timeout, env=_ompi_env())
    if res.rc != 0:
        raise BenchError(res.describe())
    header: dict[str, Any] = {}
    for rec in json_lines(res.stdout):
        if rec.get("type") == "header":
            header = rec
        elif rec.get("type") == "pingpong" and rec.get("s") == MPI_SIZE:
            return {
                "impl": f"railgauge-{flavour}",
                "s": MPI_SIZE,
                # median_us is the median round trip; one-way is half.
                "oneway_us": float(rec["median_us"]) / 2.0,
                "mean_oneway_us": float(rec["mean_us"]) / 2.0,
                "count": rec.get("count"),
                "transport_info": header.get("transport_info"),
                "raw": rec,
            }
    raise BenchError(f"railgauge mpi ({flavour}): no {MPI_SIZE} B record; {res.describe()}")


def mpi_rounds(tools: Tools, args: argparse.Namespace, flavours: list[str]) -> MpiRun:
    runners: dict[str, Any] = {}
    for fl in flavours:
        runners[f"railgauge-{fl}"] = lambda fl=fl: bench_mpi_railgauge(tools, args, fl)
        runners[f"plain-{fl}"] = lambda fl=fl: bench_mpi_plain(args, fl)
    impls = list(runners)
    run = MpiRun(flavours=flavours, rounds=args.rounds)
    for r in range(args.rounds):
        k = r % len(impls)
        this: dict[str, dict[str, Any]] = {}
        for impl in impls[k:] + impls[:k]:
            t0 = time.monotonic()
            try:
                this[impl] = runners[impl]()
                log(f"mpi round {r + 1}/{args.rounds} {impl}: {MPI_SIZE} B one-way "
                    f"{this[impl]['oneway_us']:.3f} us ({time.monotonic() - t0:.1f} s)")
            except BenchError as exc:
                log(f"mpi round {r + 1}/{args.rounds} {impl}: FAILED: {exc}")
                run.errors.append({"round": r, "impl": impl, "error": str(exc)})
        run.per_round.append(this)
    return run


def mpi_verdicts(run: MpiRun) -> dict[str, dict[str, Any]]:
    """flavour -> railgauge and plain medians over rounds, their ratio and the verdict."""
    out: dict[str, dict[str, Any]] = {}
    for fl in run.flavours:
        rg, plain = run.values(f"railgauge-{fl}"), run.values(f"plain-{fl}")
        rg_med = statistics.median(rg) if rg else None
        pl_med = statistics.median(plain) if plain else None
        ok = None if rg_med is None or pl_med is None else rg_med <= MPI_TARGET * pl_med
        out[fl] = {"railgauge_us": rg_med, "plain_us": pl_med, "ok": ok,
                   "ratio": rg_med / pl_med if rg_med and pl_med else None}
    return out


def mpi_md(run: MpiRun, args: argparse.Namespace, facts: dict[str, Any], command: str,
           raw: Path) -> str:
    verdicts = mpi_verdicts(run)

    def span(impl: str) -> str:
        vals = run.values(impl)
        return f"{fmt_us(min(vals))}–{fmt_us(max(vals))}" if vals else "n/a"

    lines = [
        "## mpi: railgauge over MPI beside the plain MPI ping-pong",
        "",
        f"Two processes on one host exchange {MPI_SIZE} B messages in a ping-pong through MPI: "
        "`railgauge-bench pingpong --transport mpi` (railgauge's mpi transport: MPI_Isend and "
        "MPI_Irecv, polled with MPI_Test) beside `bench/mpi_pingpong.c` (MPI_Send and "
        "MPI_Recv), both started by the same launcher command. One-way time in µs = half a "
        f"round trip (medians). Each figure is the median over {run.rounds} round(s); each "
        "round runs every row, in an order that rotates from round to round.",
        "",
        "| MPI | railgauge mpi (µs) | min–max over rounds | plain MPI (µs) | "
        "min–max over rounds | railgauge / plain | rounds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for fl in run.flavours:
        v = verdicts[fl]
        ratio = f"{v['ratio']:.2f}x" if v["ratio"] else "n/a"
        lines.append(
            f"| {MPI_FLAVOURS[fl][0]} | {fmt_us(v['railgauge_us'])} | "
            f"{span(f'railgauge-{fl}')} | {fmt_us(v['plain_us'])} | {span(f'plain-{fl}')} | "
            f"{ratio} | {len(run.values(f'railgauge-{fl}'))}/{run.rounds} |")
    lines += ["", "| target | measured | result |", "| --- | --- | --- |"]
    for fl in run.flavours:
        v = verdicts[fl]
        measured = (f"{fmt_us(v['railgauge_us'])} µs vs {MPI_TARGET} × {fmt_us(v['plain_us'])} "
                    f"µs = {fmt_us(MPI_TARGET * v['plain_us'])} µs"
                    if v["railgauge_us"] is not None and v["plain_us"] is not None else "n/a")
        lines.append(f"| railgauge mpi within 10% of the plain MPI ping-pong "
                     f"({MPI_FLAVOURS[fl][0]}, {MPI_SIZE} B one-way) | {measured} | "
                     f"{verdict(v['ok'])} |")
    if run.errors:
        lines += ["", "Failed runs (left out of the medians):", ""]
        lines += [f"- round {e['round'] + 1}, {e['impl']}: {e['error']}" for e in run.errors]
    launches = "; ".join(f"{MPI_FLAVOURS[fl][0]}: `{MPI_FLAVOURS[fl][1]} "
                         f"{' '.join(MPI_FLAVOURS[fl][3])}`" for fl in run.flavours)
    lines += [
        "",
        "How each row is measured:",
        "",
        f"- Launchers, the same for both rows: {launches} (OMPI_ALLOW_RUN_AS_ROOT=1, "
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1).",
        f"- **railgauge mpi**: `railgauge-bench pingpong --transport mpi --sizes {MPI_SIZE} "
        f"{' '.join(MPI_BENCH_ARGS)}`: every round trip is timed on its own (TSC, its read "
        "cost subtracted) for 2 s after a warm-up; the record's `median_us` is a round trip, "
        "halved here.",
        "- **plain MPI**: `bench/mpi_pingpong.c` built with the flavour's `mpicc`, "
        f"`--sizes {MPI_SIZE}` and the foundation section's settings: the median over samples "
        "of 16 round trips, halved.",
        "",
        "The plain program blocks in MPI_Send and MPI_Recv; a railgauge transport is "
        "non-blocking by contract (isend, irecv, progress), so its figure also carries "
        "MPI's request objects (MPI_Isend/MPI_Irecv, MPI_Test) and railgauge's wait loop, "
        "which is what the target bounds.",
        "",
    ]
    lines += facts_md(facts, command, raw)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Machine facts


# --------------------------------------------------------------------------------------
# Markdown


def foundation_md(run: LatencyRun, summ: dict[str, ImplSummary], args: argparse.Namespace,
                  facts: dict[str, Any], command: str, raw: Path) -> str:
    floor = summ.get("spsc-floor")
    floor8 = floor.oneway[8] if floor else None
    lines = [
        "## Foundation: shm latency and bandwidth",
        "",
        "Two processes on one host exchange messages in a ping-pong. One-way time is half the "
        "round trip, in µs; bandwidth at 1 MiB is 1 MiB / one-way time in MB/s "
        "(10^6 bytes/s). Each figure is the median over "
        f"{run.rounds} round(s); in every round each implementation ran once, in an order "
        "that rotates from round to round, so machine noise falls on all of them alike. The "
        "last column is the implementation's 8 B one-way time divided by the floor's.",
        "",
        "| implementation | one-way 1 B (µs) | one-way 8 B (µs) | 8 B min–max over rounds (µs) "
        "| bandwidth 1 MiB (MB/s) | 8 B / floor | rounds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for impl in run.order:
        label = IMPLS[impl]
        sm = summ.get(impl)
        if sm is None:
            lines.append(f"| {label} | n/a | n/a | n/a | n/a | n/a | 0/{run.rounds} |")
            continue
        ratio = f"{sm.oneway[8] / floor8:.2f}x" if floor8 else "n/a"
        lines.append(
            f"| {label} | {fmt_us(sm.oneway[1])} | {fmt_us(sm.oneway[8])} | "
            f"{fmt_us(sm.oneway_min[8])}–{fmt_us(sm.oneway_max[8])} | {fmt_bw(sm.bw_1mib)} | "
            f"{ratio} | {sm.rounds_ok}/{run.rounds} |")

    rg = summ.get("railgauge")
    rg8 = rg.oneway[8] if rg else None

    def below(other: str) -> tuple[bool | None, str]:
        o = summ.get(other)
        if rg8 is None or o is None:
            return None, "n/a"
        return rg8 < o.oneway[8], f"{fmt_us(rg8)} µs vs {fmt_us(o.oneway[8])} µs"

    ratio_ok = None if rg8 is None or floor8 is None else rg8 <= TARGET_RATIO * floor8
    ratio_txt = (f"{fmt_us(rg8)} µs vs {TARGET_RATIO} × {fmt_us(floor8)} µs = "
                 f"{fmt_us(TARGET_RATIO * floor8)} µs ({rg8 / floor8:.2f}x)"
                 if rg8 is not None and floor8 else "n/a")
    ompi_ok, ompi_txt = below("openmpi")
    fi_ok, fi_txt = below("libfabric-shm")
    lines += [
        "",
        "Targets (railgauge shm, 8 B one-way):",
        "",
        "| target | measured | result |",
        "| --- | --- | --- |",
        f"| at most {TARGET_RATIO}x the floor (spsc-floor) | {ratio_txt} | "
        f"{verdict(ratio_ok)} |",
        f"| below Open MPI | {ompi_txt} | {verdict(ompi_ok)} |",
        f"| below libfabric shm | {fi_txt} | {verdict(fi_ok)} |",
    ]
    rofi, fi = summ.get("railgauge-ofi-shm"), summ.get("libfabric-shm")
    if rofi is not None and fi is not None:
        r8, f8 = rofi.oneway[8], fi.oneway[8]
        ok = r8 <= 1.1 * f8
        lines += [
            "",
            "Target of the ofi transport (railgauge over libfabric's shm provider, 8 B one-way):",
            "",
            "| target | measured | result |",
            "| --- | --- | --- |",
            f"| within 10% of fi_pingpong -p shm | {fmt_us(r8)} µs vs 1.1 × {fmt_us(f8)} µs = "
            f"{fmt_us(1.1 * f8)} µs | {verdict(ok)} |",
            "",
            "(fi_pingpong's figure is a mean over all iterations, railgauge's a median.)",
        ]
    seq = summ.get("spsc-floor-seq")
    if rg8 is not None and seq is not None:
        lines += [
            "",
            f"For reference, against the faster floor variant (spsc-floor-seq, "
            f"{fmt_us(seq.oneway[8])} µs) railgauge's 8 B one-way time is "
            f"{rg8 / seq.oneway[8]:.2f}x.",
        ]
    if run.errors:
        lines += ["", "Failed runs (left out of the medians):", ""]
        lines += [f"- round {e['round'] + 1}, {e['impl']}: {e['error']}" for e in run.errors]
    lines += [
        "",
        "How each row is measured:",
        "",
        f"- **spsc-floor**: `bench/spsc_floor.c`. Two processes (fork) pinned to cores "
        f"{args.cores}, two lock-free single-producer/single-consumer rings in a shared "
        "anonymous mapping (one per direction), head and tail on their own cache lines, C11 "
        "acquire/release, pure spinning with `_mm_pause`; a message is copied into ring slots "
        "(32 KiB chunks, 16 slots) and copied out by the peer, which answers with the same "
        f"size. {args.warmup} warm-up round trips (payload checked), then {args.batches} "
        f"batches of {args.iters} round trips (for 1 MiB: {args.big_bytes} bytes per "
        f"batch, at least {args.min_iters} round trips). The TSC (rdtscp, calibrated "
        "against CLOCK_MONOTONIC) is read once per sample of "
        f"{args.group} round trips for 1 B and 8 B and once per round trip for 1 MiB: on "
        "AMD processors the TSC advances in steps of 10 ns (a 100 MHz reference "
        "clock), which is a tenth of a small round trip here. One-way = median over the "
        "samples of the mean round trip / 2. **spsc-floor-seq** is the same ring, but the "
        "consumer polls a sequence word inside the slot instead of the producer's head, so "
        "a small message moves one cache line instead of two.",
        "- **railgauge shm**: `railgauge run -n 2 --transport shm -- railgauge-bench pingpong "
        f"--sizes {_sizes_arg()}`; its `median_us` is the median round trip, so one-way = "
        "median_us / 2 and bandwidth = s / (median_us / 2). Where the ranks run is left to "
        "railgauge's launcher. If railgauge-bench times every round trip alone, its small-"
        "size medians move in steps of the timer (10 ns per round trip on AMD, 5 ns "
        "one-way), which near a 50 ns floor is a tenth of the figure.",
        "- **libfabric shm**: `fi_pingpong -p shm -e rdm -I N -S s` (libfabric's fabtests), "
        f"server on core {args.cores.split(',')[0]} and client on core "
        f"{args.cores.split(',')[1]} (taskset), control connection on 127.0.0.1. It prints "
        "`usec/xfer` = elapsed / (2 × iterations), i.e. the **mean** one-way time over all "
        "iterations (gettimeofday around the whole loop, no warm-up, 0.01 µs resolution), "
        "and `MB/sec` = 2 × iterations × s / elapsed = s / usec/xfer in bytes/µs = MB/s. "
        "The table takes usec/xfer as the one-way time and MB/sec as the bandwidth. "
        f"N = {args.iters * args.batches} for 1 B and 8 B, "
        f"{max(args.min_iters, args.big_bytes // MIB) * args.batches} for 1 MiB.",
        "- **Open MPI**: `bench/mpi_pingpong.c` (MPI_Send/MPI_Recv, timed like the floor), "
        "`mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 --bind-to core "
        "--mca btl self,vader` with OMPI_ALLOW_RUN_AS_ROOT=1 and "
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (vader's single-copy mechanism is left at its "
        "default, CMA).",
    ]
    if "mpich" in run.order:
        lines.append("- **MPICH**: the same program built with `mpicc.mpich`, run with "
                     "`mpiexec.mpich -n 2 -bind-to core`.")
    lines += [
        "",
        "Two processes spinning on the only two cores of a machine also shared with other "
        "work get preempted: a spinning wait that does not yield then stretches to a "
        "scheduler tick. The medians resist that; the min–max column shows how much the "
        "rounds disagreed. On a virtual machine the placement of the virtual CPUs can change "
        "between runs and shift every row together, which is why all rows come from one "
        "interleaved run.",
        "",
    ]
    lines += facts_md(facts, command, raw)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(f"run_bench: {msg}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run_bench.py",
        description="Side-by-side shm benchmark (floor, railgauge, libfabric, MPI), railgauge "
                    "over ofi:tcp and over MPI; writes docs/BENCHMARKS.md (the gauge section "
                    "is bench/gauge_bench.py's).")
    p.add_argument("--rounds", type=int, default=5,
                   help="interleaved rounds of the latency benchmark (default 5)")
    p.add_argument("--skip-railgauge", action="store_true",
                   help="leave railgauge out of the latency rounds (and skip ofi-tcp)")
    p.add_argument("--no-mpich", action="store_true", help="leave out the MPICH row")
    p.add_argument("--no-floor-seq", action="store_true",
                   help="leave out the spsc-floor-seq row")
    p.add_argument("--section", action="append", choices=SECTIONS, default=None,
                   help="section(s) to produce; repeatable (default: all)")
    p.add_argument("--out", type=Path, default=REPO / "docs" / "BENCHMARKS.md",
                   help="document to update (default docs/BENCHMARKS.md)")
    p.add_argument("--iters", type=int, default=100000,
                   help="timed round trips per batch for 1 B and 8 B (default 100000)")
    p.add_argument("--batches", type=int, default=5, help="batches per size (default 5)")
    p.add_argument("--group", type=int, default=16,
                   help="round trips per timed sample for 1 B and 8 B (default 16)")
    p.add_argument("--warmup", type=int, default=10000,
                   help="warm-up round trips per size (default 10000)")
    p.add_argument("--big-bytes", type=int, default=256 << 20,
                   help="bytes per batch that bound the round trips of 1 MiB (default 256 MiB)")
    p.add_argument("--min-iters", type=int, default=100,
                   help="least round trips per batch (default 100)")
    p.add_argument("--cores", default="0,1", help="the two cores to pin to (default 0,1)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds any one benchmark command may take (default 300)")
    p.add_argument("--railgauge", default=None, help="railgauge command (default: found)")
    p.add_argument("--railgauge-bench", default=None,
                   help="path of railgauge-bench (default: found like railgauge does)")
    p.add_argument("--railgauge-run-args", default="",
                   help="extra arguments for `railgauge run` before `--`")
    p.add_argument("--railgauge-bench-args", default="",
                   help="extra arguments for `railgauge-bench pingpong`")
    p.add_argument("--cc", default="cc", help="C compiler for spsc_floor (default cc)")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.iters < 1 or args.batches < 1:
        p.error("--rounds, --iters and --batches must be at least 1")
    if not re.fullmatch(r"\d+,\d+", args.cores):
        p.error("--cores takes two core numbers, e.g. 0,1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    sections = list(dict.fromkeys(args.section or SECTIONS))
    if args.skip_railgauge and "ofi-tcp" in sections:
        sections.remove("ofi-tcp")
    if not sections:
        log("nothing to do: every section is skipped")
        return 2
    do_latency = "foundation" in sections
    do_ofi_tcp = "ofi-tcp" in sections
    do_mpi = "mpi" in sections
    command = shlex.join(["python3", "bench/run_bench.py",
                          *(sys.argv[1:] if argv is None else argv)])
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    raw_path = BUILD / f"results-{stamp}.json"
    out_path = args.out if args.out.is_absolute() else Path.cwd() / args.out

    try:
        tools = build_tools(args, need_railgauge=not args.skip_railgauge,
                            need_latency=do_latency)
        if do_ofi_tcp:
            ofi_tcp_tools(tools)
        mpi_flavours = mpi_tools(tools, args) if do_mpi else []
    except UsageError as exc:
        print(f"run_bench: {exc}", file=sys.stderr)
        return 2
    except BenchError as exc:
        print(f"run_bench: {exc}", file=sys.stderr)
        return 1
    facts = machine_facts(tools)
    raw: dict[str, Any] = {"command": command, "args": {k: str(v) for k, v in
                                                          vars(args).items()},
                           "machine": facts, "sizes": list(SIZES)}
    md: dict[str, str] = {}
    failed = False

    if do_latency:
        impls = ["spsc-floor"]
        if not args.no_floor_seq:
            impls.append("spsc-floor-seq")
        if not args.skip_railgauge:
            impls += ["railgauge", "railgauge-ofi-shm"]
        impls += ["libfabric-shm", "openmpi"]
        if tools.mpi_mpich:
            impls.append("mpich")
        run = latency_rounds(tools, args, impls)
        summ = summarize_latency(run)
        failed |= bool(run.errors)
        raw["latency"] = {
            "order": run.order,
            "rounds": [{impl: {str(s): rec for s, rec in recs.items()}
                        for impl, recs in rnd.items()} for rnd in run.per_round],
            "errors": run.errors,
            "summary": {k: vars(v) for k, v in summ.items()},
        }
    if do_ofi_tcp:
        ofi_run = ofi_tcp_rounds(tools, args)
        failed |= bool(ofi_run.errors)
        raw["ofi_tcp"] = {"rounds": ofi_run.per_round, "errors": ofi_run.errors}

    if do_mpi:
        mpi_run = mpi_rounds(tools, args, mpi_flavours)
        mpi_ok = mpi_verdicts(mpi_run)
        failed |= bool(mpi_run.errors)
        raw["mpi"] = {"rounds": mpi_run.per_round, "errors": mpi_run.errors,
                      "summary": mpi_ok}

    facts["loadavg_end"] = os.getloadavg()
    if do_latency:
        md["foundation"] = foundation_md(run, summ, args, facts, command, raw_path)
    if do_ofi_tcp:
        md["ofi-tcp"] = ofi_tcp_md(ofi_run, args, facts, command, raw_path)
    if do_mpi:
        md["mpi"] = mpi_md(mpi_run, args, facts, command, raw_path)
    BUILD.mkdir(parents=True, exist_ok=True)
    raw_path.write_text(json.dumps(raw, indent=1, default=str) + "\n")
    write_sections(out_path, md)
    log(f"wrote {out_path} ({', '.join(md)}) and {raw_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("run_bench: interrupted", file=sys.stderr)
        sys.exit(130)
