#!/usr/bin/env python3
"""Bandwidth against message size for each rails policy on the testbed, beside each rail
alone, in one run: ``railgauge-bench bw`` (window 16, every byte verified) over ``tcp:<rail>``
for every rail and over the rails transport under binding, round-robin, even, weighted (the
weights the rails alone measured at 4 MiB) and adaptive, at each size. Rows are taken
round-robin over the configurations inside each round, so drift on this shared machine hits
all of them alike; medians over rounds.

Needs root and iproute2/tc; builds its own testbed (2 hosts, rails shaped as --rates, default
1gbit,2gbit) and removes it on every exit.

    python3 bench/rails_sizes_bench.py                      # 2 rounds, 1 s per point
    python3 bench/rails_sizes_bench.py --from build/bench/rails-sizes-<stamp>.json

Writes the section ``bench:rails-sizes`` of docs/BENCHMARKS.md, the plot
docs/bench-rails-sizes.png and the raw rows to build/bench/. Exit status: 0 done, 1 a run
failed, 2 no testbed. Benchmarks are not tests and never run in CI.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import REPO, emit_section, machine_facts, testbed_raw
from railgauge import netns
from railgauge import rails as rl
from railgauge.units import format_size, parse_size

DOC = REPO / "docs" / "BENCHMARKS.md"
PNG = REPO / "docs" / "bench-rails-sizes.png"
SIZES = "4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB"


def log(msg: str) -> None:
    print(f"rails_sizes_bench: {msg}", file=sys.stderr, flush=True)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    tb = netns.create(2, 2, args.rates)
    try:
        weights = rl.measure_rail_weights(tb, 4 << 20, time_s=args.time)
        log(f"weights (MB/s of each rail alone at 4 MiB): {weights}")
        for rnd in range(args.rounds):
            for size in sizes:
                alone = rl.measure_rail_weights(tb, size, time_s=args.time)
                for rail, mbps in enumerate(alone):
                    rows.append({"round": rnd, "size": size, "config": f"rail {rail} alone",
                                 "MBps": mbps})
                for policy in rl.POLICIES:
                    rec = rl.bench(tb, policy, size, time_s=args.time, warmup_s=0.2,
                                   weights=weights if policy == "weighted" else None)
                    if rec.get("verified") is not True:
                        raise rl.RailsError(f"{policy} at {size} B: bytes arrived wrong")
                    rows.append({"round": rnd, "size": size, "config": policy,
                                 "MBps": rec["bandwidth_MBps"]})
                log(f"round {rnd}: {format_size(size)} done")
    finally:
        netns.destroy(tb)
    cmd = "python3 bench/rails_sizes_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    return {"facts": machine_facts(None), "rates": args.rates, "weights": weights,
            "rounds": args.rounds, "time_s": args.time, "command": cmd.strip(),
            "sizes": sizes, "rows": rows}


def medians(raw: dict[str, Any]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for cfg in dict.fromkeys(r["config"] for r in raw["rows"]):
        out[cfg] = {}
        for size in raw["sizes"]:
            v = [r["MBps"] for r in raw["rows"] if r["config"] == cfg and r["size"] == size]
            if v:
                out[cfg][size] = statistics.median(v)
    return out


def plot(raw: dict[str, Any], med: dict[str, dict[int, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for cfg, pts in med.items():
        xs = sorted(pts)
        ax.plot(xs, [pts[x] * 8e-3 for x in xs], marker="o",
                linestyle="--" if "alone" in cfg else "-", label=cfg)
    ax.set_xscale("log", base=2)
    ax.set_xticks(raw["sizes"], [format_size(s) for s in raw["sizes"]])
    ax.set_xlabel("message size")
    ax.set_ylabel("bandwidth (Gbit/s)")
    ax.set_title(f"rails {raw['rates']}: bandwidth by policy (railgauge-bench bw, window 16)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PNG, dpi=110)
    plt.close(fig)


def render(raw: dict[str, Any], med: dict[str, dict[int, float]]) -> str:
    f = raw["facts"]
    sizes = raw["sizes"]
    head = "| configuration | " + " | ".join(format_size(s) for s in sizes) + " |"
    out = [
        "## Rails: bandwidth against message size, each policy (rails-sizes)",
        "",
        f"`{raw['command']}` ({f['date']}; {f['cpu']}, {f['nproc']} CPUs). Testbed: 2 hosts, "
        f"rails shaped {raw['rates']}; `railgauge-bench bw` (window 16, every byte verified, "
        f"{raw['time_s']:g} s per point) over each rail alone and over the rails transport "
        "under each policy (weighted: the weights the rails alone measured at 4 MiB, "
        f"{', '.join(f'{w:.0f}' for w in raw['weights'])} MB/s); stripes from 256 KiB (the "
        f"default). Medians of {raw['rounds']} round(s), MB/s.",
        "",
        head,
        "|---" * (len(sizes) + 1) + "|",
    ]
    for cfg, pts in med.items():
        out.append(f"| {cfg} | " + " | ".join(
            f"{pts[s]:.0f}" if s in pts else "" for s in sizes) + " |")
    best = {s: max(pts.get(s, 0.0) for cfg, pts in med.items() if "alone" in cfg)
            for s in sizes}
    low = [f"{cfg} at {format_size(s)} ({pts[s]:.0f})" for cfg, pts in med.items()
           if "alone" not in cfg for s in sizes if s in pts and pts[s] < 0.5 * best[s]]
    if low:
        out += ["", "Below half the faster rail alone: " + ", ".join(low) + ". Below the "
                "stripe size a message goes whole on the rail with the largest weight: under "
                "even the first of equal weights (here the slow rail), and under adaptive the "
                "same until striped traffic has taught it the rates (it learns from stripes "
                "only)."]
    out += ["", "A fault this table showed before (every policy near 60 MB/s at 16 and 32 KiB, "
            "between the inline size and the stripe size, where a message is a header and its "
            "bytes in two rail messages) was a missed wake-up: a stripe receive that completed "
            "at once when the matching posted it was left for the next progress call while the "
            "rank slept out RG_XPORT_BLOCK_NS; fixed (rg__rails_has_news in rails.c)."]
    out += ["", "![bandwidth by policy](bench-rails-sizes.png)"]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="1gbit,2gbit")
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--time", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--from", dest="from_file", type=Path)
    args = ap.parse_args()
    if args.rounds < 1 or args.time <= 0:
        ap.error("--rounds must be 1 or more and --time above 0")
    rc, raw = testbed_raw(args.from_file, lambda: measure(args), "rails-sizes", log)
    if raw is None:
        return rc
    med = medians(raw)
    if not args.no_write:
        plot(raw, med)
    emit_section(DOC, "rails-sizes", render(raw, med), args.no_write, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
