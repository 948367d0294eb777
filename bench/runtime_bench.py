#!/usr/bin/env python3
"""The messaging runtime (native/src/proto) beside memcpy and MPI, in one run.

Interleaved by round, so that the noise of the machine hits every row alike:

* message rate: 8-byte messages in windows of 64, acknowledged per window
  (the OSU message-rate pattern), rank 0 to rank 1 over shm:
  ``railgauge run -n 2 -- railgauge-proto-test --test rate`` against Open MPI's
  shared memory (``--mca btl self,vader``) and MPICH running bench/mpi_msgrate.c,
  the same pattern;
* bandwidth: 4 MiB messages in windows of 16, each in a buffer of its own
  (64 MiB per side, more than the caches hold), through the rendezvous path
  over shm (``--test bw``, which also measures memcpy over the same buffers in
  the same process), with the rendezvous modes side by side (split: both sides
  copy; get: the receiver reads all; data channel: through the rings) and
  Open MPI for reference.

Targets (issue 4): rate at least Open MPI's; 4 MiB bandwidth at least 80% of
memcpy's. Writes the ``runtime`` section of docs/BENCHMARKS.md.

    python3 bench/runtime_bench.py                 # 5 rounds of 2 s per row
    python3 bench/runtime_bench.py --rounds 1 --seconds 1

Exit status: 0 done, 1 a benchmark failed, 2 bad usage or a missing tool.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    BUILD,
    CFLAGS,
    REPO,
    BenchError,
    _ompi_env,
    emit_section,
    find_railgauge,
    json_lines,
    machine_facts,
    run_proc,
)

DOC = REPO / "docs" / "BENCHMARKS.md"
BW_SIZE = 4 * 1048576


def log(msg: str) -> None:
    print(f"runtime_bench: {msg}", file=sys.stderr, flush=True)


def find_proto_test() -> str | None:
    cands: list[Path] = []
    if os.environ.get("RG_NATIVE_DIR"):
        cands.append(Path(os.environ["RG_NATIVE_DIR"]) / "railgauge-proto-test")
    cands.append(Path(sys.executable).parent / "railgauge-proto-test")
    found = shutil.which("railgauge-proto-test")
    if found:
        cands.append(Path(found))
    cands.append(REPO / "build" / "native" / "railgauge-proto-test")
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c.resolve())
    return None


def compile_msgrate(wrapper: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    res = run_proc([wrapper, *CFLAGS, "-o", str(out), str(REPO / "bench" / "mpi_msgrate.c")],
                   timeout=300, cwd=REPO)
    if res.rc != 0:
        raise BenchError(res.describe())


def parse_kv(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        rg = find_railgauge(None)
        tool = find_proto_test()
        if rg is None or tool is None:
            raise SystemExit("runtime_bench: railgauge and railgauge-proto-test are needed "
                             "(bash scripts/install.sh, or build native/ and set RG_NATIVE_DIR)")
        self.rg, self.rg_env = rg
        self.tool = tool
        self.ompi: Path | None = None
        self.mpich: Path | None = None
        if shutil.which("mpicc.openmpi") and shutil.which("mpirun.openmpi"):
            self.ompi = BUILD / "mpi_msgrate_openmpi"
            compile_msgrate("mpicc.openmpi", self.ompi)
        if not args.no_mpich and shutil.which("mpicc.mpich") and shutil.which("mpiexec.mpich"):
            self.mpich = BUILD / "mpi_msgrate_mpich"
            compile_msgrate("mpicc.mpich", self.mpich)

    def proto(self, test: str, env: dict[str, str]) -> dict[str, str]:
        argv = [*self.rg, "run", "-n", "2", "--transport", "shm", "--",
                self.tool, "--test", test, "--seconds", str(self.args.seconds)]
        res = run_proc(argv, timeout=self.args.seconds * 10 + 60,
                       env={**os.environ, **self.rg_env, **env})
        if res.rc != 0:
            raise BenchError(res.describe())
        for line in res.stdout.splitlines():
            if line.startswith(test + " "):
                return parse_kv(line)
        raise BenchError(f"no '{test}' line; {res.describe()}")

    def mpi(self, flavour: str, size: int, window: int, distinct: bool) -> dict[str, Any]:
        extra = ["--size", str(size), "--window", str(window), "--seconds",
                 str(self.args.seconds), *(["--distinct"] if distinct else [])]
        if flavour == "openmpi":
            assert self.ompi
            argv = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-n", "2",
                    "--bind-to", "core", "--mca", "btl", "self,vader", str(self.ompi),
                    "openmpi", *extra]
            env = _ompi_env()
        else:
            assert self.mpich
            argv = ["mpiexec.mpich", "-n", "2", "-bind-to", "core", str(self.mpich), "mpich",
                    *extra]
            env = dict(os.environ)
        res = run_proc(argv, timeout=self.args.seconds * 10 + 60, env=env)
        if res.rc != 0:
            raise BenchError(res.describe())
        for rec in json_lines(res.stdout):
            if "messages_per_s" in rec:
                return rec
        raise BenchError(f"no result line; {res.describe()}")

    def rows(self) -> dict[str, Callable[[], dict[str, float]]]:
        def rate_rg() -> dict[str, float]:
            return {"rate": float(self.proto("rate", {})["messages_per_s"])}

        def bw_rg(env: dict[str, str]) -> Callable[[], dict[str, float]]:
            def run() -> dict[str, float]:
                kv = self.proto("bw", env)
                return {"MBps": float(kv["MBps"]), "memcpy_MBps": float(kv["memcpy_MBps"])}
            return run

        def rate_mpi(flavour: str) -> Callable[[], dict[str, float]]:
            def run() -> dict[str, float]:
                return {"rate": float(self.mpi(flavour, 8, 64, False)["messages_per_s"])}
            return run

        def bw_mpi(flavour: str) -> Callable[[], dict[str, float]]:
            def run() -> dict[str, float]:
                return {"MBps": float(self.mpi(flavour, BW_SIZE, 16, True)["MBps"])}
            return run

        rows: dict[str, Callable[[], dict[str, float]]] = {"rate:railgauge": rate_rg}
        if self.ompi:
            rows["rate:openmpi"] = rate_mpi("openmpi")
        if self.mpich:
            rows["rate:mpich"] = rate_mpi("mpich")
        rows["bw:railgauge"] = bw_rg({})
        rows["bw:railgauge-get"] = bw_rg({"RG_PROTO_SPLIT_MIN": "0"})
        rows["bw:railgauge-channel"] = bw_rg({"RG_PROTO_GET": "0"})
        if self.ompi:
            rows["bw:openmpi"] = bw_mpi("openmpi")
        return rows


LABELS = {
    "rate:railgauge": "railgauge proto over shm",
    "rate:openmpi": "Open MPI (vader)",
    "rate:mpich": "MPICH (its default ch4 device, ucx here)",
    "bw:railgauge": "railgauge rendezvous, split (default: both sides copy)",
    "bw:railgauge-get": "railgauge rendezvous, get (`RG_PROTO_SPLIT_MIN=0`)",
    "bw:railgauge-channel": "railgauge rendezvous, data channel (`RG_PROTO_GET=0`)",
    "bw:openmpi": "Open MPI (vader, its single-copy default)",
}


def summarize(per_round: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    def vals(row: str, key: str) -> list[float]:
        return [r[row][key] for r in per_round if row in r and key in r[row]]

    out: dict[str, Any] = {}
    rows = sorted({k for r in per_round for k in r})
    for row in rows:
        for key in ("rate", "MBps", "memcpy_MBps"):
            v = vals(row, key)
            if v:
                out[f"{row}:{key}"] = {"median": statistics.median(v), "min": min(v),
                                       "max": max(v), "n": len(v)}
    # Targets: per-round ratios, so that a slow round hits both sides.
    ratios = [r["rate:railgauge"]["rate"] / r["rate:openmpi"]["rate"]
              for r in per_round if "rate:railgauge" in r and "rate:openmpi" in r]
    if ratios:
        out["rate_ratio"] = {"median": statistics.median(ratios), "values": ratios}
    bw = [r["bw:railgauge"]["MBps"] / r["bw:railgauge"]["memcpy_MBps"]
          for r in per_round if "bw:railgauge" in r]
    if bw:
        out["bw_ratio"] = {"median": statistics.median(bw), "values": bw}
    return out


def fmt(v: float, unit: str) -> str:
    return f"{v / 1e6:.2f} M/s" if unit == "rate" else f"{v / 1000:.2f} GB/s"


def markdown(summ: dict[str, Any], args: argparse.Namespace, facts: dict[str, Any],
             command: str, errors: list[str]) -> str:
    lines = [
        "## Messaging runtime: message rate and rendezvous bandwidth over shm",
        "",
        f"Measured {facts.get('date', '')} on {facts.get('cpu', 'this machine')} "
        f"({facts.get('nproc', '?')} cores), {args.rounds} round(s) of {args.seconds} s per "
        "row, rows interleaved in each round. Command:",
        "",
        f"    {command}",
        "",
        "### 8-byte message rate (window of 64, acknowledged per window)",
        "",
        "| implementation | median | min | max |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in ("rate:railgauge", "rate:openmpi", "rate:mpich"):
        s = summ.get(f"{row}:rate")
        if s:
            lines.append(f"| {LABELS[row]} | {fmt(s['median'], 'rate')} | "
                         f"{fmt(s['min'], 'rate')} | {fmt(s['max'], 'rate')} |")
    rr = summ.get("rate_ratio")
    if rr:
        ok = rr["median"] >= 1.0
        lines += ["", f"Target: railgauge at least Open MPI's rate. Median of the per-round "
                  f"ratios railgauge / Open MPI: **{rr['median']:.2f}** "
                  f"({', '.join(f'{x:.2f}' for x in rr['values'])}): "
                  f"**{'PASS' if ok else 'FAIL'}**."]
    lines += [
        "",
        "### 4 MiB bandwidth (window of 16, a buffer per message)",
        "",
        "| implementation | median | min | max |",
        "| --- | ---: | ---: | ---: |",
    ]
    mc = summ.get("bw:railgauge:memcpy_MBps")
    if mc:
        lines.append(f"| memcpy over the same buffers, one process | {fmt(mc['median'], 'bw')} | "
                     f"{fmt(mc['min'], 'bw')} | {fmt(mc['max'], 'bw')} |")
    for row in ("bw:railgauge", "bw:railgauge-get", "bw:railgauge-channel", "bw:openmpi"):
        s = summ.get(f"{row}:MBps")
        if s:
            lines.append(f"| {LABELS[row]} | {fmt(s['median'], 'bw')} | "
                         f"{fmt(s['min'], 'bw')} | {fmt(s['max'], 'bw')} |")
    br = summ.get("bw_ratio")
    if br:
        ok = br["median"] >= 0.8
        lines += ["", f"Target: the rendezvous path at least 80% of memcpy. Median of the "
                  f"per-round ratios: **{br['median'] * 100:.0f}%** "
                  f"({', '.join(f'{x * 100:.0f}%' for x in br['values'])}): "
                  f"**{'PASS' if ok else 'FAIL'}**."]
    lines += [
        "",
        "How: `railgauge-proto-test --test rate|bw` (native/tools/proto_test.c) and "
        "bench/mpi_msgrate.c run the same pattern. The split mode lets the receiver read the "
        "first half of a payload (process_vm_readv) while the sender writes the second "
        "(process_vm_writev), so the copy runs on both cores; memcpy runs on one. This VM's "
        "speed changes by up to 3x with the placement of its vCPUs, so rows are compared "
        "within a round.",
    ]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {e}" for e in errors]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--no-mpich", action="store_true")
    ap.add_argument("--no-write", action="store_true", help="print, do not write the doc")
    args = ap.parse_args(argv)
    if args.rounds < 1 or not args.seconds > 0:
        ap.error("--rounds >= 1 and --seconds > 0")
    command = "python3 bench/runtime_bench.py " + shlex.join(argv if argv is not None
                                                            else sys.argv[1:])
    runner = Runner(args)
    rows = runner.rows()
    per_round: list[dict[str, dict[str, float]]] = []
    errors: list[str] = []
    names = list(rows)
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        this: dict[str, dict[str, float]] = {}
        for name in order:
            t0 = time.monotonic()
            try:
                this[name] = rows[name]()
                log(f"round {r + 1}/{args.rounds} {name}: {this[name]} "
                    f"({time.monotonic() - t0:.1f} s)")
            except BenchError as exc:
                errors.append(f"round {r + 1} {name}: {str(exc).splitlines()[0]}")
                log(f"round {r + 1}/{args.rounds} {name}: FAILED: {exc}")
        per_round.append(this)
    summ = summarize(per_round)
    facts = machine_facts(None)
    facts.setdefault("date", dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))
    raw = BUILD / f"runtime-{dt.datetime.now(dt.UTC).strftime('%Y%m%d-%H%M%S')}.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps({"per_round": per_round, "summary": summ, "errors": errors},
                              indent=1))
    text = markdown(summ, args, facts, command, errors)
    emit_section(DOC, "runtime", text, args.no_write, log)
    log(f"raw results in {raw}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
