#!/usr/bin/env python3
"""The shared receive window evaluated as the paper does (its figures 2 and 3): for each
workload (alltoall, halo2d, halo3d, incast, mix) and transport, the run time and the
communication memory (mean over ranks of each rank's high-water mark) of a fixed window of
512, of the adaptive scheme for W_max = 16 .. 4096 (W_init = 8), of the adaptive scheme with
reclaiming, and of smaller fixed windows (to find the smallest fixed window that reaches the
best time); then an RNR-timer sweep at a small W_max. RNR is on for every window. Then the
same rows from the simulator at 1024 ranks (`railgauge-sim rxwin`, docs/sim.md): fixed:512,
adaptive:8:W_max for W_max = 16 .. 4096, with reclaim, and the RNR-timer sweep at W_max = 16,
under a fitted shm model (docs/data/barrier-16/model-loggp.json unless --sim-model or
--sim-L/--sim-o/--sim-g are given; --no-sim leaves them out).

    python3 bench/rxwin_bench.py                          # 8 ranks, shm and tcp, 3 rounds
    python3 bench/rxwin_bench.py -n 16 --no-write --raw-dir DIR     # a machine with 16 cores
    python3 bench/rxwin_bench.py --from DIR --section rxwin-16      # its files, written here

Every configuration runs once per round, rounds interleaved; medians shown. Writes the
section ``bench:<section>`` of docs/BENCHMARKS.md and a plot docs/bench-<section>.png
(memory and relative time per configuration). Benchmarks never run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import BUILD, REPO, emit_section, machine_facts
from railgauge.rxwin import RxwinError, eval_rxwin, sim_params, sim_rxwin

DOC = REPO / "docs" / "BENCHMARKS.md"
PATTERNS = ("alltoall", "halo2d", "halo3d", "incast", "mix")
ADAPTIVE = tuple(f"adaptive:8:{w}" for w in (16, 64, 256, 1024, 4096))
FIXED = ("fixed:8", "fixed:32", "fixed:128", "fixed:512")
CONFIGS = (*FIXED, *ADAPTIVE, "adaptive:8:4096:reclaim")
TIMERS = (0.01, 0.1, 1.0, 10.0)
SWEEP_WINDOW = "adaptive:8:16"
SIM_SWEEP = "mix"  # the simulated RNR-timer sweep's workload
SIM_CONFIGS = ("fixed:512", *ADAPTIVE, "adaptive:8:4096:reclaim")
SIM_MODEL = REPO / "docs" / "data" / "barrier-16" / "model-loggp.json"


def log(msg: str) -> None:
    print(f"rxwin_bench: {msg}", file=sys.stderr, flush=True)


def one(pattern: str, n: int, transport: str, window: str, timer: float,
        iters: int) -> dict[str, Any]:
    rec = eval_rxwin(pattern, n, window, transport=transport, rnr_timer_ms=timer, iters=iters)
    if not rec.get("verified"):
        raise RxwinError(f"{pattern} {window} over {transport}: not verified")
    return {"time_s": rec["time_s"], "mem": rec["mem_bytes"]["mean"],
            "mem_max": rec["mem_bytes"]["max"], "rnr": rec["rnr"],
            "limit_events": rec["limit_events"]}


def measure(args: argparse.Namespace, raw: Path, facts: dict[str, Any]) -> dict[str, Any]:
    """Every round's results are saved as they come (raw/results.json), so that a run cut
    short keeps its finished rounds."""
    rounds: list[dict[str, Any]] = []
    res: dict[str, Any] = {"n": args.n, "transports": args.transports, "timer": args.timer,
                           "iters": args.iters, "rounds": rounds, "facts": dict(facts)}
    for k in range(args.rounds):
        log(f"round {k + 1}/{args.rounds}")
        row: dict[str, Any] = {}
        for t in args.transports:
            for p in PATTERNS:
                for c in CONFIGS:
                    row[f"{t} {p} {c}"] = one(p, args.n, t, c, args.timer, args.iters)
            for tm in TIMERS:
                row[f"{t} incast timer {tm:g}"] = one("incast", args.n, t, SWEEP_WINDOW, tm,
                                                      args.iters)
        rounds.append(row)
        (raw / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    return res


def simulate(args: argparse.Namespace) -> dict[str, Any]:
    """The simulator's rows (deterministic: one run each)."""
    flags = {"L": args.sim_L, "o": args.sim_o, "g": args.sim_g}
    model = None if any(v is not None for v in flags.values()) else args.sim_model
    params = sim_params(model, **flags)
    rows: dict[str, Any] = {}
    for p in PATTERNS:
        for c in SIM_CONFIGS:
            log(f"simulating {p} {c} on {args.sim_n} ranks")
            rec = sim_rxwin(p, args.sim_n, c, params=params, rnr_timer_ms=args.timer,
                            iters=args.sim_iters)
            if not rec["verified"]:
                raise RxwinError(f"simulated {p} {c}: not verified")
            rows[f"{p} {c}"] = {"time_s": rec["time_s"], "mem": rec["mem_bytes"]["mean"],
                                "mem_max": rec["mem_bytes"]["max"], "rnr": rec["rnr"],
                                "limit_events": rec["limit_events"], "wall_s": rec["wall_s"]}
    for tm in TIMERS:
        rec = sim_rxwin(SIM_SWEEP, args.sim_n, SWEEP_WINDOW, params=params, rnr_timer_ms=tm,
                        iters=args.sim_iters)
        rows[f"{SIM_SWEEP} timer {tm:g}"] = {"time_s": rec["time_s"],
                                        "mem": rec["mem_bytes"]["mean"],
                                        "mem_max": rec["mem_bytes"]["max"], "rnr": rec["rnr"]}
    return {"n": args.sim_n, "iters": args.sim_iters, "timer": args.timer, "sweep": SIM_SWEEP,
            "model": (str(Path(model).resolve().relative_to(REPO))
                      if model is not None and Path(model).resolve().is_relative_to(REPO)
                      else str(model) if model is not None else None),
            "params": {k: v for k, v in flags.items() if v is not None}, "rows": rows}


def sim_section(sim: dict[str, Any]) -> list[str]:
    rows = sim["rows"]
    src = f"the model {sim['model']}" if sim.get("model") else \
        "LogGOPS " + ", ".join(f"{k} = {v:g}" for k, v in sim["params"].items())
    lines = [f"### simulator, {sim['n']} ranks", "",
             f"`railgauge-sim rxwin` under {src}: {sim['iters']} phases per workload, "
             f"512-byte messages, RNR timer {sim['timer']:g} ms (deterministic, one run "
             "each). Cells: memory (KiB, mean over ranks of the high-water mark) and time "
             "relative to fixed:512.", "",
             "| workload | " + " | ".join(SIM_CONFIGS) + " |",
             "|---|" + "---:|" * len(SIM_CONFIGS)]
    for p in PATTERNS:
        base = rows[f"{p} fixed:512"]["time_s"]
        cells = [f"{kib(rows[f'{p} {c}']['mem'])} KiB, {rows[f'{p} {c}']['time_s'] / base:.2f}"
                 for c in SIM_CONFIGS]
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    sweep = sim.get("sweep", "incast")
    lines += ["", f"Simulated RNR-timer sweep, {sweep}, {SWEEP_WINDOW} ({sweep}: its phases "
              "of computation keep the receivers' CPUs busy while messages land, so the "
              "window fills; the model's receivers keep up with the other workloads):", "",
              "| timer (ms) | time (s) | memory (KiB, mean) | memory (KiB, max) | RNR |",
              "|---:|---:|---:|---:|---:|"]
    for tm in TIMERS:
        r = rows[f"{sweep} timer {tm:g}"]
        lines.append(f"| {tm:g} | {r['time_s']:.6f} | {kib(r['mem'])} | {kib(r['mem_max'])} "
                     f"| {r['rnr']} |")
    return [*lines, ""]


def med(res: dict[str, Any], key: str, field: str) -> float:
    return statistics.median(r[key][field] for r in res["rounds"])


def kib(b: float) -> str:
    return f"{b / 1024:.0f}"


def plot(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ts = res["transports"]
    fig, axes = plt.subplots(2, len(ts), figsize=(6.5 * len(ts), 7), squeeze=False)
    x = range(len(CONFIGS))
    for j, t in enumerate(ts):
        for p in PATTERNS:
            base_t = med(res, f"{t} {p} fixed:512", "time_s")
            mem = [med(res, f"{t} {p} {c}", "mem") / 1024 for c in CONFIGS]
            rel = [med(res, f"{t} {p} {c}", "time_s") / base_t for c in CONFIGS]
            axes[0][j].plot(x, mem, marker="o", label=p)
            axes[1][j].plot(x, rel, marker="o", label=p)
        axes[0][j].set_yscale("log")
        axes[0][j].set_ylabel("communication memory per rank (KiB, mean)")
        axes[0][j].set_title(f"{t}, {res['n']} ranks")
        axes[1][j].set_ylabel("run time / fixed:512")
        axes[1][j].axhline(1.0, color="grey", lw=0.8)
        for a in (axes[0][j], axes[1][j]):
            a.set_xticks(list(x))
            a.set_xticklabels([c.replace("adaptive:", "ad:").replace(":reclaim", ":rc")
                               for c in CONFIGS], rotation=45, ha="right", fontsize=8)
            a.grid(alpha=0.3)
        axes[0][j].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def section(res: dict[str, Any], facts: dict[str, Any], name: str, command: str,
            png: str | None) -> str:
    n = res["n"]
    lines = [f"## The shared receive window ({name})", "",
             f"{facts.get('how', 'Command')}: `{command}` ({facts.get('date', '?')}; "
             f"{facts.get('machine', '?')}). {n} ranks, {res['iters']} phases per workload, "
             f"512-byte messages, RNR on with a {res['timer']:g} ms timer; "
             f"{len(res['rounds'])} round(s), medians. Memory: the mean over ranks of each "
             "rank's high-water mark of communication memory (posted buffers, unexpected "
             "queue, rendezvous control), KiB; time: the workload's run time.", ""]
    if facts.get("nproc") and n > facts["nproc"]:
        lines += [f"{n} ranks on {facts['nproc']} CPUs are oversubscribed: times carry the "
                  "scheduler's noise, memory does not.", ""]
    ok_mem, ok_time, ok_min = [], [], []
    for t in res["transports"]:
        lines += [f"### {t}", "", "| workload | " + " | ".join(CONFIGS) + " |",
                  "|---|" + "---:|" * len(CONFIGS)]
        for p in PATTERNS:
            base_t = med(res, f"{t} {p} fixed:512", "time_s")
            base_m = med(res, f"{t} {p} fixed:512", "mem")
            cells = []
            for c in CONFIGS:
                m = med(res, f"{t} {p} {c}", "mem")
                tt = med(res, f"{t} {p} {c}", "time_s")
                cells.append(f"{kib(m)} KiB, {tt / base_t:.2f}")
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
            am = med(res, f"{t} {p} adaptive:8:4096", "mem")
            at = med(res, f"{t} {p} adaptive:8:4096", "time_s")
            ok_mem.append(am <= base_m / 3)
            ok_time.append(at <= 1.02 * base_t)
            best_t = min(med(res, f"{t} {p} {c}", "time_s") for c in FIXED)
            good = [c for c in FIXED if med(res, f"{t} {p} {c}", "time_s") <= 1.02 * best_t]
            small = min(med(res, f"{t} {p} {c}", "mem") for c in good)
            ok_min.append(am <= max(1.1 * small, small + 512 * 1024))
        lines += ["", f"RNR-timer sweep, incast, {SWEEP_WINDOW}:", "",
                  "| timer (ms) | time (s) | memory (KiB, mean) | memory (KiB, max) | RNR |",
                  "|---:|---:|---:|---:|---:|"]
        for tm in TIMERS:
            key = f"{t} incast timer {tm:g}"
            lines.append(f"| {tm:g} | {med(res, key, 'time_s'):.4f} | "
                         f"{kib(med(res, key, 'mem'))} | {kib(med(res, key, 'mem_max'))} | "
                         f"{med(res, key, 'rnr'):.0f} |")
        lines.append("")
    if res.get("sim"):
        lines += sim_section(res["sim"])
    lines += ["Cells: memory, and time relative to fixed:512 of the same workload.", "",
              f"Targets: adaptive:8:4096 uses at most 1/3 of fixed:512's memory: "
              f"{verdict(ok_mem)}; with run time within 2% of it: {verdict(ok_time)}; its "
              f"memory within 10% (or 512 KiB) of the smallest fixed window that reaches the "
              f"best time: {verdict(ok_min)}."]
    if png:
        lines += ["", f"![memory and relative time per configuration]({png})"]
    return "\n".join(lines)


def verdict(oks: list[bool]) -> str:
    return "PASS" if oks and all(oks) else f"not met ({sum(oks)} of {len(oks)})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--transports", default="shm,tcp")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--timer", type=float, default=0.1)
    ap.add_argument("--section", default=None)
    ap.add_argument("--raw-dir", type=Path, default=None)
    ap.add_argument("--from", dest="from_dir", type=Path, default=None)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--no-sim", action="store_true", help="leave out the simulator's rows")
    ap.add_argument("--sim-n", type=int, default=1024, help="ranks to simulate")
    ap.add_argument("--sim-iters", type=int, default=5, help="phases per simulated workload")
    ap.add_argument("--sim-model", type=Path, default=SIM_MODEL,
                    help="model-loggp.json for the simulator (default: the fitted shm model "
                         "in docs/data/barrier-16)")
    ap.add_argument("--sim-L", type=float, default=None, help="simulate with this L instead")
    ap.add_argument("--sim-o", type=float, default=None, help="... and this o")
    ap.add_argument("--sim-g", type=float, default=None, help="... and this g")
    ap.add_argument("--add-sim", action="store_true",
                    help="with --from: simulate here and store the rows in its results.json "
                         "(a machine lent for the real runs need not spend its time on them)")
    args = ap.parse_args(argv)
    args.transports = [t for t in args.transports.split(",") if t]
    command = "python3 bench/rxwin_bench.py " + shlex.join(sys.argv[1:] if argv is None
                                                            else argv)
    if args.from_dir is not None:
        res = json.loads((args.from_dir / "results.json").read_text())
        if args.add_sim:
            try:
                res["sim"] = simulate(args)
            except RxwinError as exc:
                log(str(exc))
                return 1
            (args.from_dir / "results.json").write_text(json.dumps(res, indent=1) + "\n")
        facts = res["facts"]
        facts["how"] = f"Measured with `{facts.pop('command', '?')}`; analysed with"
        name = args.section or "rxwin-from"
    else:
        mf = machine_facts(None)
        facts = {"date": mf["date"], "nproc": mf["nproc"], "command": command.strip(),
                 "machine": f"{mf['cpu']}, {mf['nproc']} CPUs, Linux {mf['kernel']}"}
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
        raw = args.raw_dir or BUILD / f"rxwin-{stamp}"
        raw.mkdir(parents=True, exist_ok=True)
        try:
            res = measure(args, raw, facts)
            if not args.no_sim:
                res["sim"] = simulate(args)
                (raw / "results.json").write_text(json.dumps(res, indent=1) + "\n")
        except RxwinError as exc:
            log(str(exc))
            return 1
        log(f"raw results in {raw}")
        name = args.section or "rxwin"
    png_name = f"bench-{name}.png"
    png = None
    if not args.no_write:
        plot(res, REPO / "docs" / png_name)
        png = png_name
    md = section(res, facts, name, command.strip(), png)
    emit_section(DOC, name, md, args.no_write, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
