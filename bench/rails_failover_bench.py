#!/usr/bin/env python3
"""Rail failover on the testbed, side by side in one run: a fixed volume (default 1 GiB in
4 MiB messages, every byte verified) over each rail alone (``tcp:<rail>``), over both rails
(weighted striping, the weights the rails alone measured), and over both rails with one
rail's link set down on the first host part-way through (each rail in turn); then recovery:
a longer volume over both rails, one rail's link down for --down-for seconds and up again, the
rail taken back into use (RG_RAILS_RETRY). The issue's target: a rail set down mid-transfer
costs at most 1 s beyond the time of the remaining rail alone.

Needs root and iproute2/tc. Builds its own testbed (2 hosts, rails shaped as --rates, default
1gbit,2gbit) and removes it on every exit; a link set down is set up again after each run.

    python3 bench/rails_failover_bench.py                       # 2 rounds, 1 GiB, down at 1.5 s
    python3 bench/rails_failover_bench.py --rounds 1 --bytes 256MiB --at 0.5 --no-write
    python3 bench/rails_failover_bench.py --from build/bench/rails-failover-<stamp>.json

Writes the section ``bench:rails-failover`` of docs/BENCHMARKS.md and the raw rows to
build/bench/. Exit status: 0 done, 1 a run failed, 2 bad usage or no testbed.
Benchmarks are not tests and never run in CI.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import REPO, emit_section, machine_facts, testbed_raw
from railgauge import netns
from railgauge.launcher import launch
from railgauge.native import find_tool
from railgauge.rails import RailsError, rails_env

DOC = REPO / "docs" / "BENCHMARKS.md"
TARGET_S = 1.0


def log(msg: str) -> None:
    print(f"rails_failover_bench: {msg}", file=sys.stderr, flush=True)


def transfer(tb: netns.Testbed, transport: str, env: dict[str, str], total: str,
             down: int | None, at_s: float, up_s: float | None = None) -> dict[str, Any]:
    """One bw run of ``total`` bytes; rail ``down`` set down on host 0 ``at_s`` s in (and
    up again ``up_s`` s in, else after the run)."""
    tool = find_tool("railgauge-bench")
    with tempfile.TemporaryDirectory(prefix="railgauge-failover-") as tmp:
        out = Path(tmp) / "bw.json"
        argv = [tool, "bw", "--size", "4MiB", "--bytes", total, "--warmup", "0",
                "--window", "16", "--verify", "--out", str(out)]
        timer = up = None
        if down is not None:
            timer = threading.Timer(at_s, lambda: tb.set_link(down, False, host=0))
            timer.start()
            if up_s is not None:
                up = threading.Timer(up_s, lambda: tb.set_link(down, True, host=0))
                up.start()
        try:
            res = launch(argv, 2, transport=transport, env=env, timeout_s=600,
                         netns=tb.hosts[:2])
        finally:
            if timer is not None:
                timer.cancel()
                if up is not None:
                    up.cancel()
                tb.set_link(down, True, host=0)
                time.sleep(3)   # the link's addresses and neighbours back before the next
        if res.returncode != 0:
            raise RailsError(f"bw over {transport} failed: {res.failure}")
        rec: dict[str, Any] = json.loads(out.read_text().splitlines()[0])
    if rec.get("verified") is not True:
        raise RailsError(f"bw over {transport}: {rec.get('bad_bytes')} bytes arrived wrong")
    info = rec.get("transport_info") or {}
    row: dict[str, Any] = {"transport": transport, "down": down, "seconds": rec["seconds"],
                           "bandwidth_MBps": rec["bandwidth_MBps"], "verified": True}
    if "failovers" in info:
        row.update({k: info.get(k) for k in ("failovers", "resent_bytes", "events",
                                             "recoveries")})
        row["states"] = [r.get("state") for r in info.get("rails", [])]
    return row


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    tb = netns.create(2, 2, args.rates)
    try:
        names = [r.ifname for r in tb.rails]
        for rnd in range(args.rounds):
            alone = []
            for rail, name in enumerate(names):
                row = transfer(tb, f"tcp:{name}", {}, args.bytes, None, 0)
                row.update(case="alone", rail=rail, round=rnd)
                rows.append(row)
                alone.append(row["bandwidth_MBps"])
                log(f"round {rnd}: {name} alone {row['seconds']:.2f} s")
            env = rails_env(names, "weighted", alone)
            row = transfer(tb, "rails", env, args.bytes, None, 0)
            row.update(case="both", round=rnd)
            rows.append(row)
            log(f"round {rnd}: both {row['seconds']:.2f} s")
            for down in range(len(names)):
                row = transfer(tb, "rails", env, args.bytes, down, args.at)
                row.update(case="down", rail=down, round=rnd)
                rows.append(row)
                log(f"round {rnd}: {names[down]} set down at {args.at:g} s: "
                    f"{row['seconds']:.2f} s, states {row.get('states')}")
            # Recovery: a longer volume, the link down for --down-for seconds.
            row = transfer(tb, "rails", env, args.recovery_bytes, None, 0)
            row.update(case="both-long", round=rnd)
            rows.append(row)
            for down in range(len(names)):
                row = transfer(tb, "rails", env, args.recovery_bytes, down, args.at,
                               up_s=args.at + args.down_for)
                row.update(case="down-up", rail=down, round=rnd)
                rows.append(row)
                log(f"round {rnd}: {names[down]} down {args.at:g} .. "
                    f"{args.at + args.down_for:g} s: {row['seconds']:.2f} s, "
                    f"recoveries {row.get('recoveries')}, states {row.get('states')}")
    finally:
        netns.destroy(tb)
    cmd = "python3 bench/rails_failover_bench.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:])
    return {"facts": machine_facts(None), "rates": args.rates, "bytes": args.bytes,
            "at_s": args.at, "rounds": args.rounds, "command": cmd.strip(), "rows": rows,
            "recovery_bytes": args.recovery_bytes, "down_for_s": args.down_for}


def render(raw: dict[str, Any]) -> str:
    rows = raw["rows"]

    def med(case: str, rail: int | None = None) -> float:
        v = [r["seconds"] for r in rows
             if r["case"] == case and (rail is None or r.get("rail") == rail)]
        return statistics.median(v) if v else float("nan")

    rates = raw["rates"].split(",")
    f = raw["facts"]
    out = [
        "## Rail failover (rails-failover)",
        "",
        f"`{raw['command']}` ({f['date']}; {f['cpu']}, {f['nproc']} CPUs). Testbed: 2 hosts, "
        f"rails shaped {raw['rates']}; {raw['bytes']} in 4 MiB messages (window 16), every "
        "byte verified; each rail alone over `tcp:<rail>`, both with weighted striping at the "
        "weights the rails alone measured, and both with one rail's link set down on the "
        f"first host {raw['at_s']:g} s in (found dead by `RG_TCP_DEAD_AFTER`, 1 s). Medians "
        f"of {raw['rounds']} round(s), seconds for the whole volume.",
        "",
        "| case | seconds | the remaining rail alone | cost beyond it | resent | rails after |",
        "|---|---:|---:|---:|---:|---|",
    ]
    verdicts = []
    for rail, rate in enumerate(rates):
        out.append(f"| rail {rail} ({rate}) alone | {med('alone', rail):.2f} | | | | |")
    out.append(f"| both, weighted | {med('both'):.2f} | | | | |")
    for rail, rate in enumerate(rates):
        left = 1 - rail
        t, ref = med("down", rail), med("alone", left)
        last = [r for r in rows if r["case"] == "down" and r.get("rail") == rail][-1]
        resent = statistics.median(float(r.get("resent_bytes") or 0) for r in rows
                                   if r["case"] == "down" and r.get("rail") == rail)
        out.append(f"| rail {rail} ({rate}) set down | {t:.2f} | {ref:.2f} | "
                   f"{t - ref:+.2f} | {resent / 1e6:.1f} MB | {', '.join(last['states'])} |")
        verdicts.append(f"rail {rail} down: {t - ref:+.2f} s "
                        f"({'PASS' if t - ref <= TARGET_S else 'not met'})")
    out += ["", "Target: a rail set down mid-transfer costs at most 1 s beyond the time of "
            "the remaining rail alone, every byte verified: " + "; ".join(verdicts) + ".",
            ""]
    if any(r["case"] == "down-up" for r in rows):
        out += _render_recovery(raw, med, rates)
    else:
        out.append("Not in this run: a rail taken back when its link returns.")
    return "\n".join(out)


def _render_recovery(raw: dict[str, Any], med: Any, rates: list[str]) -> list[str]:
    rows, at, back = raw["rows"], raw["at_s"], raw["at_s"] + raw["down_for_s"]
    out = [
        f"Recovery: {raw['recovery_bytes']} over both rails, one rail's link down from "
        f"{at:g} s to {back:g} s in (`RG_RAILS_RETRY` 1 s: rank 0 looks at its end's carrier "
        "every second and then opens the rail anew); \"back in use\" is the time from the "
        "link coming up to the rail's `up` event; \"least cost\" is what the outage costs at "
        "the least, the time the rail was out (link down to `up` event) times its share of "
        "the bandwidth (its rate alone over the sum); the rest is mostly the time to find "
        "the rail dead (`RG_TCP_DEAD_AFTER`), while its stripes hold the messages back "
        "(medians).",
        "",
        "| case | seconds | both rails, no failure | cost | least cost | back in use after "
        "the link | rails after |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    ref = med("both-long")
    speed = [1.0 / med("alone", k) for k in range(len(rates))]
    for rail, rate in enumerate(rates):
        mine = [r for r in rows if r["case"] == "down-up" and r.get("rail") == rail]
        if not mine:
            continue
        t = statistics.median(r["seconds"] for r in mine)
        ups = [e["t_s"] - back for r in mine for e in (r.get("events") or [])
               if e.get("what") == "up"]
        back_in = f"{statistics.median(ups):.2f} s" if ups else "not taken back"
        out_s = back + (statistics.median(ups) if ups else 0.0) - at
        least = out_s * speed[rail] / sum(speed)
        out.append(f"| rail {rail} ({rate}) down and up | {t:.2f} | {ref:.2f} | "
                   f"{t - ref:+.2f} | {least:+.2f} | {back_in} ({len(ups)} of {len(mine)} "
                   "runs) | "
                   f"{', '.join(mine[-1].get('states') or [])} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="1gbit,2gbit")
    ap.add_argument("--bytes", default="1GiB")
    ap.add_argument("--at", type=float, default=1.5, help="seconds in when the link goes down")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--recovery-bytes", default="2GiB",
                    help="the volume of the recovery runs (long enough to outlast the outage)")
    ap.add_argument("--down-for", type=float, default=2.0,
                    help="seconds a link stays down in the recovery runs")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--from", dest="from_file", type=Path)
    args = ap.parse_args()
    if args.rounds < 1 or args.at <= 0 or args.down_for <= 0:
        ap.error("--rounds must be 1 or more, --at and --down-for above 0")
    rc, raw = testbed_raw(args.from_file, lambda: measure(args), "rails-failover", log)
    if raw is None:
        return rc
    emit_section(DOC, "rails-failover", render(raw), args.no_write, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
