#!/usr/bin/env python3
"""Message rate, broadcast and all-to-all among 4 hosts over two rails, in one run: one rank
per host, ``railgauge-bench msgrate`` (pairs 0->1 and 2->3, window 64), ``bcast`` (from rank
0, binomial tree) and ``alltoall`` (pairwise exchange), every byte verified, over each rail
alone (``tcp:<rail>``) and over the rails transport under binding, round-robin, even,
weighted (the weights each rail alone measured with ``bw`` at 4 MiB) and adaptive; beside
them the iperf3 aggregate (one stream per rail at once between two hosts) measured in the
same run. Every configuration runs once per round, in the same order; medians over rounds.

Needs root, iproute2/tc and iperf3. Builds its own testbed (4 hosts on a switch, rails
shaped as --rates, default 1gbit,2gbit) and removes it on every exit.

    python3 bench/rails_hosts_bench.py                       # 3 rounds, 1 s per point
    python3 bench/rails_hosts_bench.py --rounds 1 --time 0.5 --no-write
    python3 bench/rails_hosts_bench.py --from docs/data/rails-hosts

Writes the section ``bench:rails-hosts`` of docs/BENCHMARKS.md and the raw rows to
docs/data/rails-hosts/results.json (and build/bench/). Exit status: 0 done, 1 a run
failed, 2 no testbed or no iperf3. Benchmarks are not tests and never run in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import REPO, emit_section, machine_facts, testbed_raw
from railgauge import netns
from railgauge import rails as rl
from railgauge.units import format_size
from rails_bench import iperf3_clients, iperf3_result, iperf3_server

DOC = REPO / "docs" / "BENCHMARKS.md"
DATA = REPO / "docs" / "data" / "rails-hosts"
HOSTS = 4
#: (pattern, size): a small and a large size of each pattern.
CASES = (("msgrate", 8), ("msgrate", 64 << 10), ("bcast", 8), ("bcast", 4 << 20),
         ("alltoall", 8), ("alltoall", 1 << 20))


def log(msg: str) -> None:
    print(f"rails_hosts_bench: {msg}", file=sys.stderr, flush=True)


def iperf3_round(tb: netns.Testbed, secs: float) -> dict[str, float]:
    """MB/s of iperf3 between hosts 0 and 1: each rail alone, then one stream per rail at
    once (the aggregate)."""
    nr = len(tb.rails)
    row: dict[str, float] = {}
    try:
        with contextlib.ExitStack() as st:
            for r in range(nr):
                st.enter_context(iperf3_server(tb, r, 5201 + r))
            for r in range(nr):
                row[f"rail {r}"] = iperf3_result(iperf3_clients(tb, [r], secs)[0])
            row["aggregate"] = sum(iperf3_result(p)
                                   for p in iperf3_clients(tb, list(range(nr)), secs))
    except (RuntimeError, ValueError, KeyError) as exc:
        raise rl.RailsError(f"iperf3: {exc}") from None
    return row


def configs(tb: netns.Testbed, weights: list[float]) -> list[tuple[str, str, dict[str, str]]]:
    """(name, transport, env) of every configuration: each rail alone, then each policy."""
    names = [r.ifname for r in tb.rails]
    out = [(f"rail {r} alone", f"tcp:{names[r]}", {}) for r in range(len(names))]
    out += [(p, "rails", rl.rails_env(names, p, weights if p == "weighted" else None))
            for p in rl.POLICIES]
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    iperf: list[dict[str, float]] = []
    tb = netns.create(HOSTS, 2, args.rates)
    try:
        weights = rl.measure_rail_weights(tb, 4 << 20, time_s=args.time)
        log(f"weights (MB/s of each rail alone, bw at 4 MiB): {weights}")
        for rnd in range(args.rounds):
            iperf.append(iperf3_round(tb, args.iperf_time))
            log(f"round {rnd}: iperf3 {iperf[-1]}")
            for pattern, size in CASES:
                for name, transport, env in configs(tb, weights):
                    a = rl.pattern_args(pattern, size, time_s=args.time, warmup_s=0.2)
                    rec = rl.run_tool(tb, transport, env, a, HOSTS, timeout_s=120 + args.time)
                    if rec.get("verified") is not True:
                        raise rl.RailsError(f"{pattern} at {size} B over {name}: bytes "
                                            "arrived wrong")
                    rows.append({"round": rnd, "pattern": pattern, "size": size,
                                 "config": name,
                                 **{k: rec[k] for k in rl.PATTERN_FIGURES[pattern]},
                                 "split": [r["bytes"] for r in rl.rails_split(tb, rec)]})
                log(f"round {rnd}: {pattern} {format_size(size)} done")
    finally:
        netns.destroy(tb)
    cmd = "python3 bench/rails_hosts_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    return {"facts": machine_facts(None), "rates": args.rates, "hosts": HOSTS,
            "weights": weights, "rounds": args.rounds, "time_s": args.time,
            "command": cmd.strip(), "cases": [list(c) for c in CASES], "iperf3": iperf,
            "rows": rows}


def med(raw: dict[str, Any], pattern: str, size: int, config: str, key: str) -> float | None:
    v = [float(r[key]) for r in raw["rows"]
         if (r["pattern"], r["size"], r["config"]) == (pattern, size, config)]
    return statistics.median(v) if v else None


def cell(raw: dict[str, Any], pattern: str, size: int, config: str, agg: float) -> str:
    """The table's figure of one case: messages/s (msgrate 8 B), MB/s of both pairs with
    its share of twice the iperf3 aggregate (msgrate, large), the average and largest time
    over the ranks (bcast, alltoall small), MB/s sent per host with its share of the
    iperf3 aggregate (alltoall, large)."""
    if pattern == "msgrate" and size < 1024:
        v = med(raw, pattern, size, config, "msgs_per_s")
        return "" if v is None else f"{v / 1e3:.0f} k/s"
    if pattern == "msgrate" or (pattern == "alltoall" and size >= 1024):
        v = med(raw, pattern, size, config, "bandwidth_MBps")
        if v is None:
            return ""
        v, ref = (v, 2 * agg) if pattern == "msgrate" else (v / raw["hosts"], agg)
        return f"{v:.0f} MB/s ({100 * v / ref:.0f}%)"
    avg = med(raw, pattern, size, config, "avg_us")
    hi = med(raw, pattern, size, config, "max_us")
    if avg is None or hi is None:
        return ""
    if avg >= 1000:
        return f"{avg / 1e3:.2f} / {hi / 1e3:.2f} ms"
    return f"{avg:.0f} / {hi:.0f} us"


def versus(raw: dict[str, Any], pattern: str, size: int, names: list[str]) -> str:
    """'<case> <policy> <x>x': the policy with the best main figure (rate, bandwidth, or
    the slowest rank's time) over the best rail alone's."""
    key = {"msgrate": "msgs_per_s", "bcast": "max_us"}.get(
        pattern, "bandwidth_MBps" if size >= 1024 else "max_us")
    higher = key != "max_us"

    def score(name: str) -> float:
        v = med(raw, pattern, size, name, key)
        return float("nan") if v is None else (v if higher else 1.0 / v)

    alone = max(score(n) for n in names if "alone" in n)
    best = max((n for n in names if "alone" not in n), key=score)
    return f"{pattern} {format_size(size)} {best} {score(best) / alone:.2f}x"


def render(raw: dict[str, Any]) -> str:
    f = raw["facts"]
    cases = [(p, int(s)) for p, s in raw["cases"]]
    names = list(dict.fromkeys(r["config"] for r in raw["rows"]))
    ip = {k: statistics.median(d[k] for d in raw["iperf3"]) for k in raw["iperf3"][0]}
    agg = ip["aggregate"]
    head = "| configuration | " + " | ".join(f"{p} {format_size(s)}" for p, s in cases) + " |"
    out = [
        "## Rails among 4 hosts: message rate, broadcast, all-to-all (rails-hosts)",
        "",
        f"`{raw['command']}` ({f['date']}; {f['cpu']}, {f['nproc']} CPUs). Testbed: "
        f"{raw['hosts']} hosts on a switch (one bridge per rail), rails shaped {raw['rates']} "
        "at every host's end and at the switch's port towards it; one rank per host, so "
        f"{raw['hosts']} ranks on {f['nproc']} CPUs: the ranks are oversubscribed, and "
        "small messages measure the CPUs' turns as much as the network. "
        "`railgauge-bench msgrate` (ranks 0->1 and 2->3, window 64), `bcast` (root 0, "
        "binomial tree) and `alltoall` (pairwise exchange, the size per pair), every byte "
        f"verified, {raw['time_s']:g} s per point after 0.2 s of warm-up, over each rail "
        "alone (`tcp:<rail>`) and over the rails transport under each policy (weighted: "
        "the weights each rail alone measured with `bw` at 4 MiB, "
        f"{', '.join(f'{w:.0f}' for w in raw['weights'])} MB/s; stripes from 256 KiB, the "
        f"default). Medians of {raw['rounds']} round(s).",
        "",
        "iperf3 between two hosts in the same run (MB/s, medians): "
        + ", ".join(f"{k} {v:.0f}" for k, v in ip.items()) + " (one stream per rail at once).",
        "",
        "Cells: msgrate 8 B, messages/s of both pairs summed; msgrate 64 KiB, MB/s of both "
        "pairs (share of twice the iperf3 aggregate: two pairs on separate ports); bcast and "
        "alltoall 8 B and bcast 4 MiB, the time of one collective averaged over the ranks / "
        "of the slowest rank (medians over iterations, then rounds); alltoall 1 MiB, MB/s "
        "sent per host, P (P - 1) s / P over the slowest rank's time (share of the iperf3 "
        "aggregate).",
        "",
        head,
        "|---" * (len(cases) + 1) + "|",
    ]
    for name in names:
        out.append(f"| {name} | " + " | ".join(cell(raw, p, s, name, agg) for p, s in cases)
                   + " |")
    out += ["", "Best policy against the faster rail alone (its main figure; above 1 is better): "
            + "; ".join(versus(raw, p, s, names) for p, s in cases) + "."]
    out += ["", "Each rank times its part from its release (rank 0's word after it has "
            "every rank's report of the previous iteration) to its end, as osu_bcast times "
            "MPI_Bcast between barriers; the release is not timed and keeps iterations from "
            "overlapping. A rank released late may find its message already waiting, so "
            "the average at 8 B is a floor; the slowest rank's time is the collective's."]
    over = [name for name in names
            if (med(raw, "alltoall", 1 << 20, name, "bandwidth_MBps") or 0) / raw["hosts"]
            > agg]
    if over:
        out[-1] += (" Above the iperf3 aggregate (" + ", ".join(over) + "): the rails' "
                    "shapers (tbf, a bucket of 2 ms at the rate) let an idle rail send a "
                    "burst above its rate, and the release leaves the rails idle between "
                    "iterations of a few milliseconds; iperf3 streams.")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="1gbit,2gbit")
    ap.add_argument("--time", type=float, default=1.0, help="seconds per point")
    ap.add_argument("--iperf-time", type=float, default=2.0, help="seconds per iperf3 run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--from", dest="from_dir", type=Path,
                    help="re-render from DIR/results.json (as this script wrote it)")
    args = ap.parse_args()
    if args.rounds < 1 or args.time <= 0 or args.iperf_time <= 0:
        ap.error("--rounds must be 1 or more, --time and --iperf-time above 0")
    if args.from_dir is None and shutil.which("iperf3") is None:
        log("iperf3 is missing (apt-get install iperf3)")
        return 2
    rc, raw = testbed_raw(None if args.from_dir is None else args.from_dir / "results.json",
                          lambda: measure(args), "rails-hosts", log)
    if raw is None:
        return rc
    if args.from_dir is None and not args.no_write:
        DATA.mkdir(parents=True, exist_ok=True)
        (DATA / "results.json").write_text(json.dumps(raw, indent=1) + "\n")
        log(f"raw rows in {DATA / 'results.json'}")
    emit_section(DOC, "rails-hosts", render(raw), args.no_write, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
