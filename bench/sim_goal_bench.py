"""Speed of railgauge's simulator beside LogGOPSim, side by side in one run.

For each P, the dissemination barrier is simulated three ways, alternating run by run:

- railgauge, generated: ``railgauge-sim barrier --algorithm dissemination -P P``;
- railgauge, from GOAL text: the same barrier written as GOAL (1-byte messages, labels,
  four ``requires`` per round, no indentation, which LogGOPSim's ``txt2bin`` reads too;
  P = 65536 gives a 123 MB file), ``railgauge-sim goal FILE``, which reports the time spent
  reading (``read_s``) apart from simulating;
- LogGOPSim, when ``--loggopsim DIR`` names a directory holding its ``txt2bin`` and
  ``LogGOPSim`` programs, built by you from its public repository (this script never builds
  it): ``txt2bin`` once per P (timed), then ``LogGOPSim -f F.bin -b`` per run.

Every run's makespan and event count are compared across the three (they must agree; the
script stops if not). Medians of ``--runs`` runs; max RSS from ``/usr/bin/time``.

    .venv/bin/python bench/sim_goal_bench.py --sim build/native/railgauge-sim \\
        --loggopsim ~/src/LogGOPSim/src/LogGOPSim -P 65536,262144 --runs 3

writes the section ``sim`` of docs/BENCHMARKS.md (``--no-write``: print it) and the raw
rows to build/bench/sim-<stamp>.json. GOAL files are written once to ``--dir`` and kept.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import BUILD, REPO, emit_section, machine_facts

DOC = REPO / "docs" / "BENCHMARKS.md"
PARAMS = ["--L", "5", "--o", "1", "--g", "1"]


def log(msg: str) -> None:
    print(f"sim_goal_bench: {msg}", file=sys.stderr, flush=True)


def write_dissemination(path: Path, P: int) -> None:
    rounds = math.ceil(math.log2(P)) if P > 1 else 0
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as f:
        f.write(f"num_ranks {P}\n")
        for r in range(P):
            out = [f"rank {r} {{\n"]
            for k in range(rounds):
                d = (1 << k) % P
                out.append(f"s{k}: send 1b to {(r + d) % P} tag {k}\n")
                out.append(f"r{k}: recv 1b from {(r - d) % P} tag {k}\n")
                if k:
                    out.append(f"s{k} requires s{k - 1}\ns{k} requires r{k - 1}\n"
                               f"r{k} requires s{k - 1}\nr{k} requires r{k - 1}\n")
            out.append("}\n")
            f.write("".join(out))
    tmp.replace(path)


def timed(argv: list[str]) -> tuple[str, float, float]:
    """Runs argv under /usr/bin/time; returns its stdout, the wall time (s) and the max
    RSS (MB). Raises RuntimeError on failure."""
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "RSS %M", *argv], capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({proc.returncode}): "
                           f"{proc.stderr.strip()[-500:]}")
    m = re.search(r"RSS (\d+)", proc.stderr)
    return proc.stdout, wall, int(m.group(1)) / 1024 if m else math.nan


def run_railgauge(sim: str, args: list[str]) -> dict[str, Any]:
    out, wall, rss = timed([sim, *args, *PARAMS, "--json", "--no-progress"])
    doc = json.loads(out)
    return {"wall_s": wall, "tool_wall_s": doc["wall_s"], "read_s": doc.get("read_s") or 0.0,
            "events": doc["events"], "makespan": doc["makespan_us"], "rss_mb": rss}


def run_loggopsim(lgs: Path, binfile: Path) -> dict[str, Any]:
    out, wall, rss = timed([str(lgs / "LogGOPSim"), "-f", str(binfile), "-L", "5", "-o", "1",
                            "-g", "1", "-G", "0", "-O", "0", "-S", "65535", "-b"])
    ev = re.search(r"Events:\s*(\d+)", out)
    mk = re.search(r"Maximum finishing time at host \d+:\s*([0-9.eE+-]+)", out)
    if ev is None or mk is None:
        raise RuntimeError(f"LogGOPSim printed no event count or makespan:\n{out[-500:]}")
    return {"wall_s": wall, "events": int(ev.group(1)), "makespan": float(mk.group(1)),
            "rss_mb": rss}


def measure(sim: str, lgs: Path | None, P: int, runs: int, gdir: Path) -> dict[str, Any]:
    goal = gdir / f"rg-dissemination-1b-{P}.goal"
    if not goal.exists():
        log(f"writing {goal}")
        write_dissemination(goal, P)
    row: dict[str, Any] = {"P": P, "goal_bytes": goal.stat().st_size, "gen": [], "goal": [],
                           "lgs": []}
    binfile = gdir / f"rg-dissemination-1b-{P}.bin"
    if lgs is not None:
        _, row["txt2bin_s"], row["txt2bin_rss_mb"] = timed(
            [str(lgs / "txt2bin"), "-i", str(goal), "-o", str(binfile)])
    for k in range(runs):
        log(f"P = {P}: run {k + 1}/{runs}")
        row["gen"].append(run_railgauge(sim, ["barrier", "--algorithm", "dissemination",
                                              "-P", str(P)]))
        row["goal"].append(run_railgauge(sim, ["goal", str(goal), "--S", "65535"]))
        if lgs is not None:
            row["lgs"].append(run_loggopsim(lgs, binfile))
    seen = {(r["events"], r["makespan"]) for key in ("gen", "goal", "lgs") for r in row[key]}
    if len(seen) != 1:
        raise RuntimeError(f"P = {P}: the runs disagree on (events, makespan): {sorted(seen)}")
    if lgs is not None:
        binfile.unlink(missing_ok=True)
    return row


def med(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def section(rows: list[dict[str, Any]], facts: dict[str, Any], runs: int, command: str,
            have_lgs: bool) -> str:
    lines = ["## Simulator: events per second beside LogGOPSim (sim)", "",
             f"`{command}`", "",
             f"Machine: {facts.get('cpu', '?')}, {facts.get('nproc', '?')} cores. Medians of "
             f"{runs} runs, taken alternately in one run of the script; wall = the process's "
             "wall time (start-up included); the simulation alone is railgauge's wall "
             "less its reading (`read_s`) "
             "and LogGOPSim's run from its binary schedule (it does not parse). Parameters "
             "L = 5, o = 1, g = 1 us; every run's makespan and event count agree. "
             "`sim barrier` generates the schedule on the fly from P = 65,536 up (below, "
             "it builds it in memory from coll/'s plan), so its rate is the engine's "
             "alone; GOAL text is read into a stored schedule first.", ""]
    if not have_lgs:
        lines += ["LogGOPSim was not given (`--loggopsim DIR`): railgauge's side only.", ""]
    lines += ["| P | events | railgauge `sim barrier` | railgauge GOAL text: read + simulate "
              "(MB) | LogGOPSim: txt2bin + simulate (MB) | events/s: generated / stored / "
              "LogGOPSim | simulation speed-up: generated, stored | from text: speed-up |",
              "| ---: | ---: | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        ev = row["gen"][0]["events"]
        g_w, g_rss = med(row["gen"], "wall_s"), med(row["gen"], "rss_mb")
        t_w, t_r = med(row["goal"], "wall_s"), med(row["goal"], "read_s")
        t_sim = statistics.median(r["tool_wall_s"] - r["read_s"] for r in row["goal"])
        t_rss = med(row["goal"], "rss_mb")
        cells = [f"{row['P']:,}", f"{ev:,}", f"{g_w:.3f} s ({g_rss:.0f} MB)",
                 f"{t_r:.2f} + {t_sim:.2f} s = {t_w:.2f} s ({t_rss:.0f})"]
        if row["lgs"]:
            l_w, l_rss = med(row["lgs"], "wall_s"), med(row["lgs"], "rss_mb")
            t2b = row["txt2bin_s"]
            cells += [f"{t2b:.2f} + {l_w:.2f} s = {t2b + l_w:.2f} s ({l_rss:.0f})",
                      f"{ev / g_w / 1e6:.1f} M / {ev / t_sim / 1e6:.1f} M / "
                      f"{ev / l_w / 1e6:.2f} M",
                      f"{l_w / g_w:.1f}x, {l_w / t_sim:.1f}x",
                      f"{(t2b + l_w) / t_w:.1f}x"]
        else:
            cells += ["", f"{ev / g_w / 1e6:.1f} M / {ev / t_sim / 1e6:.1f} M / -", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if have_lgs:
        def speedups(key: str) -> list[tuple[int, float]]:
            out = []
            for row in rows:
                lw = med(row["lgs"], "wall_s")
                if key == "gen":
                    ours = med(row["gen"], "wall_s")
                elif key == "stored":
                    ours = statistics.median(r["tool_wall_s"] - r["read_s"]
                                             for r in row["goal"])
                else:
                    ours, lw = med(row["goal"], "wall_s"), lw + row["txt2bin_s"]
                out.append((row["P"], lw / ours))
            return out

        for key, what in (("gen", "generated schedule, simulation"),
                          ("stored", "GOAL schedule, simulation alone"),
                          ("text", "GOAL text, reading included (LogGOPSim: txt2bin too)")):
            sp = speedups(key)
            met = [f"{P:,}" for P, x in sp if x >= 10]
            lines.append(f"- Target events/s >= 10x LogGOPSim's, {what}: "
                         + ("PASS at every P" if len(met) == len(sp) else
                            f"met at P = {', '.join(met)}" if met else "not met")
                         + " (" + ", ".join(f"{x:.1f}x" for _, x in sp) + ").")
    for row in rows:
        if row["P"] == 1 << 20:
            w, rss = med(row["gen"], "wall_s"), med(row["gen"], "rss_mb")
            ok = "PASS" if w <= 3 and rss <= 1024 else "not met"
            lines.append(f"- Target: a 1,048,576-rank dissemination barrier in at most 3 s and "
                         f"1 GiB: {w:.2f} s, {rss:.0f} MB, {ok}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim", help="path of railgauge-sim (needed unless --from)")
    ap.add_argument("--loggopsim", type=Path,
                    help="directory with LogGOPSim's txt2bin and LogGOPSim, built by you")
    ap.add_argument("-P", default="65536", help="rank counts, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp"), help="where GOAL files go")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--from", dest="from_file", type=Path,
                    help="render the section from a raw file of an earlier run")
    args = ap.parse_args(argv)
    if args.from_file is not None:
        doc = json.loads(args.from_file.read_text())
        md = section(doc["rows"], doc["facts"], len(doc["rows"][0]["gen"]), doc["command"],
                     bool(doc["rows"][0]["lgs"]))
        emit_section(DOC, "sim", md, args.no_write, log)
        return 0
    if args.sim is None:
        log("--sim PATH (railgauge-sim) is needed to measure")
        return 2
    try:
        Ps = [int(x) for x in args.P.split(",")]
    except ValueError:
        log(f"-P {args.P!r}: expected rank counts like 65536,262144")
        return 2
    if args.runs < 1 or any(P < 2 for P in Ps):
        log("--runs and every P must be at least 1 and 2")
        return 2
    if args.loggopsim is not None and not all(
            (args.loggopsim / n).is_file() for n in ("txt2bin", "LogGOPSim")):
        log(f"--loggopsim {args.loggopsim}: no txt2bin and LogGOPSim there")
        return 2
    rows = []
    try:
        for P in Ps:
            rows.append(measure(args.sim, args.loggopsim, P, args.runs, args.dir))
    except (RuntimeError, OSError, json.JSONDecodeError, KeyError) as exc:
        log(str(exc))
        return 1
    BUILD.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    raw = BUILD / f"sim-{stamp}.json"
    facts = machine_facts(None)
    command = "python3 bench/sim_goal_bench.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    raw.write_text(json.dumps({"facts": facts, "command": command, "rows": rows}, indent=1))
    md = section(rows, facts, args.runs, command, args.loggopsim is not None)
    emit_section(DOC, "sim", md, args.no_write, log)
    log(f"raw results in {raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
