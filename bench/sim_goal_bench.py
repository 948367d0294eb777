"""Speed of `railgauge-sim goal` on GOAL text: the dissemination barrier on P ranks written
as GOAL (1-byte messages, labels and requires, no indentation, which LogGOPSim's txt2bin
also reads: P = 65536 gives the 123 MB file of docs/sim.md),
read and simulated; prints one JSON line per run and a median.

    .venv/bin/python bench/sim_goal_bench.py --sim build/x/railgauge-sim -P 65536 --runs 3

The file is written once to --dir (default /tmp) and kept for later runs."""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import time
from pathlib import Path


def write_dissemination(path: Path, P: int) -> None:
    rounds = math.ceil(math.log2(P)) if P > 1 else 0
    with path.open("w") as f:
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", required=True, help="path of railgauge-sim")
    ap.add_argument("-P", type=int, default=65536)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp"))
    args = ap.parse_args()
    path = args.dir / f"rg-dissemination-1b-{args.P}.goal"
    if not path.exists():
        write_dissemination(path, args.P)
    size = path.stat().st_size
    walls = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", args.sim, "goal", str(path),
                               "--L", "5", "--o", "1", "--g", "1", "--json", "--no-progress"],
                              capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
        doc = json.loads(proc.stdout)
        rss_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
        walls.append(wall)
        print(json.dumps({"P": args.P, "bytes": size, "events": doc["events"],
                          "makespan_us": doc["makespan_us"], "wall_s": round(wall, 3),
                          "read_s": doc.get("read_s"), "rss_mb": round(rss_mb, 1),
                          "events_per_s": round(doc["events"] / wall)}))
    med = statistics.median(walls)
    print(json.dumps({"median_wall_s": round(med, 3), "MB_per_s": round(size / med / 1e6, 1),
                      "events_per_s": round(doc["events"] / med)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
