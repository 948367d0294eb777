#!/usr/bin/env python3
"""The host's states, measured at their cause: the time a cache line takes between the two
CPUs the ranks run on (``railgauge-bench c2c``) beside the shared-memory round trips that
railgauge-bench's state probes measure (PRTT(1,0,1) and PRTT(16,0,1) over shm), alternated
--samples times, --pause seconds apart. On a machine of its own the cache line's time is
fixed; on the two-vCPU virtual machine of docs/BENCHMARKS.md it takes a few values, one per
placement of the vCPUs by the hypervisor, and the round trips follow it (docs/fit.md,
section 1). A sample counts when the cache line's time before and after its round trips
agree within 1.25x (the CPUs did not move while it ran); its class is that of its cache-line
time (sorted times split where one is 1.6x or more above the one before).

    python3 bench/hoststate_bench.py                    # 40 samples, 3 s apart
    python3 bench/hoststate_bench.py --samples 10 --no-write
    python3 bench/hoststate_bench.py --from build/bench/hoststate-<stamp>.json

Writes the section ``bench:hoststate`` of docs/BENCHMARKS.md and the raw samples to
build/bench/. Exit status: 0 done, 1 a measurement failed, 2 bad usage.
Benchmarks are not tests and never run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import BUILD, REPO, emit_section, facts_md, machine_facts
from railgauge.hoststate import STATE_GAP
from railgauge.launcher import launch
from railgauge.native import NativeToolError, find_tool

DOC = REPO / "docs" / "BENCHMARKS.md"
#: Sorted cache-line times split into classes where one is this much above the one before.
CLASS_GAP = 1.6


def log(msg: str) -> None:
    print(f"hoststate_bench: {msg}", file=sys.stderr, flush=True)


def c2c(tool: str) -> float:
    """One ``railgauge-bench c2c``: the one-way time in ns."""
    proc = subprocess.run([tool, "c2c"], capture_output=True, text=True, timeout=60,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"railgauge-bench c2c failed: {proc.stderr.strip()}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["one_way_ns"])


def probe(tool: str) -> dict[str, float]:
    """PRTT(1,0,1) and PRTT(16,0,1) over shm (median, us), as railgauge-bench's probes."""
    with tempfile.TemporaryDirectory(prefix="railgauge-hoststate-") as tmp:
        out = Path(tmp) / "p.jsonl"
        res = launch([tool, "prtt", "--sizes", "1", "--n", "16", "--point-budget", "0.1",
                      "--out", str(out)], 2, transport="shm", timeout_s=60)
        if res.returncode != 0:
            raise RuntimeError(f"railgauge-bench prtt over shm failed: {res.failure}")
        got: dict[str, float] = {}
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "prtt" and rec.get("d_us") == 0:
                got[f"prtt{rec['n']}_us"] = float(rec["median_us"])
    if set(got) != {"prtt1_us", "prtt16_us"}:
        raise RuntimeError(f"railgauge-bench prtt gave {sorted(got)}, not PRTT(1,0,1) and "
                           "PRTT(16,0,1)")
    return got


def measure(samples: int, pause_s: float) -> dict[str, Any]:
    tool = find_tool("railgauge-bench")
    rows: list[dict[str, Any]] = []
    for i in range(samples):
        before = c2c(tool)
        p = probe(tool)
        after = c2c(tool)
        rows.append({"t": time.time(), "c2c_before_ns": before, "c2c_after_ns": after, **p})
        log(f"{i + 1}/{samples}: cache line {before:.0f} / {after:.0f} ns, PRTT(1,0,1) "
            f"{p['prtt1_us']:.3f} us, PRTT(16,0,1) {p['prtt16_us']:.3f} us")
        if i + 1 < samples:
            time.sleep(pause_s)
    return {"samples": rows, "pause_s": pause_s}


def classes(values: list[float]) -> list[tuple[float, float]]:
    """The classes of the cache-line times: (lowest, highest) of each, ascending."""
    vals = sorted(values)
    out: list[tuple[float, float]] = []
    lo = prev = vals[0]
    for v in vals[1:]:
        if v >= prev * CLASS_GAP:
            out.append((lo, prev))
            lo = v
        prev = v
    out.append((lo, prev))
    return out


def section(raw: dict[str, Any], command: str, raw_path: Path) -> str:
    rows = raw["samples"]
    steady = [r for r in rows
              if max(r["c2c_before_ns"], r["c2c_after_ns"])
              < STATE_GAP * min(r["c2c_before_ns"], r["c2c_after_ns"])]
    md = ["## The host's states: where the two vCPUs run (hoststate)", ""]
    md += [
        "Written by `bench/hoststate_bench.py`. Each sample: the time a cache line takes "
        "one way between the two CPUs the ranks run on (`railgauge-bench c2c`: two threads "
        "pinned to CPUs 0 and 1 bounce one line, the median of 25 means of 2000 round "
        "trips), then PRTT(1,0,1) and PRTT(16,0,1) over shm (`railgauge-bench prtt --sizes 1 "
        "--n 16`, the state probes of docs/fit.md, section 1), then the cache line again; "
        f"{len(rows)} samples, {raw['pause_s']:g} s apart. A sample counts where the cache "
        f"line's two times agree within {STATE_GAP}x (the CPUs did not move during it): "
        f"{len(steady)} of {len(rows)}. Classes: the sorted cache-line times (the mean of "
        f"each sample's two) split where one is {CLASS_GAP}x or more above the one before.",
        "",
    ]
    if steady:
        mean = {id(r): (r["c2c_before_ns"] + r["c2c_after_ns"]) / 2 for r in steady}
        md += ["| cache line, one way (ns) | samples | median (ns) | PRTT(1,0,1) median (µs) "
               "| PRTT(16,0,1) median (µs) | PRTT(16,0,1) range (µs) |",
               "| --- | ---: | ---: | ---: | ---: | --- |"]
        for lo, hi in classes(list(mean.values())):
            sel = [r for r in steady if lo <= mean[id(r)] <= hi]
            p16 = [r["prtt16_us"] for r in sel]
            md.append(f"| {lo:.0f}–{hi:.0f} | {len(sel)} | "
                      f"{statistics.median(mean[id(r)] for r in sel):.1f} | "
                      f"{statistics.median(r['prtt1_us'] for r in sel):.3f} | "
                      f"{statistics.median(p16):.3f} | {min(p16):.3f}–{max(p16):.3f} |")
        md.append("")
    md += ["Every sample in order (ns, µs):", "",
           "| # | cache line before | after | PRTT(1,0,1) | PRTT(16,0,1) |",
           "| ---: | ---: | ---: | ---: | ---: |"]
    md += [f"| {i} | {r['c2c_before_ns']:.0f} | {r['c2c_after_ns']:.0f} | "
           f"{r['prtt1_us']:.3f} | {r['prtt16_us']:.3f} |" for i, r in enumerate(rows, 1)]
    md += ["", *facts_md(raw.get("facts") or machine_facts(None), command, raw_path)]
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--pause", type=float, default=3.0, help="seconds between samples")
    ap.add_argument("--from", dest="from_file", type=Path, help="raw samples of an earlier run")
    ap.add_argument("--no-write", action="store_true", help="print the section instead")
    args = ap.parse_args(argv)
    if args.samples < 1 or args.pause < 0:
        log("--samples must be 1 or more and --pause 0 or more")
        return 2
    command = "python3 bench/hoststate_bench.py " + " ".join(argv or sys.argv[1:])
    if args.from_file is not None:
        raw = json.loads(args.from_file.read_text())
        raw_path = args.from_file
        command = (f"{raw.get('command', 'python3 bench/hoststate_bench.py')}\n"
                   f"python3 bench/hoststate_bench.py --from {raw_path}")
    else:
        facts = machine_facts(None)
        try:
            raw = measure(args.samples, args.pause)
        except (RuntimeError, NativeToolError, OSError, subprocess.TimeoutExpired) as exc:
            log(str(exc))
            return 1
        facts["loadavg_end"] = os.getloadavg()
        raw["facts"] = facts
        raw["command"] = command.strip()
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
        raw_path = BUILD / f"hoststate-{stamp}.json"
        raw_path.parent.mkdir(parents=True, exist_ok=True)
        raw_path.write_text(json.dumps(raw, indent=1))
        log(f"raw samples in {raw_path}")
    emit_section(DOC, "hoststate", section(raw, command.strip(), raw_path), args.no_write, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
