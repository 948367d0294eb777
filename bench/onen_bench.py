#!/usr/bin/env python3
"""The LoP curves of docs/BENCHMARKS.md: RTT(p) of the 1:n / n:1 benchmark, its LoP fit,
and the slides' LogP prediction from the LogGP model that the same run's PRTT measurement
fits, per transport (shm and tcp by default).

For each transport T, in one invocation:

* ``railgauge run -n 2 --transport T -- railgauge-bench prtt``: the PRTT sweep that
  ``railgauge gauge`` measures, fitted with LogGP (its L, o, g give the LogP prediction);
* ``railgauge run -n R --transport T -- railgauge-bench onen --modes single,list``: RTT(p)
  for p = 1 .. R-1, timed (the issue's target: R = 8 over shm in under 30 s);
* the analysis of ``railgauge gauge`` (``railgauge.gauge_lop.analyse_lop``): the LoP fit
  (min over rounds, as the paper), L(p) pointwise, and the LogP prediction
  (4o + 2L + (P-1) max{g, o})/P beside the measured RTT(P)/P; a plot per transport.

Measured elsewhere (a machine with more cores, where Python's packages may be missing),
the native tools run under ``mpirun`` and this script only analyses their files::

    python3 bench/onen_bench.py                          # 8 ranks, shm and tcp, here
    python3 bench/onen_bench.py --ranks 4 --transports shm --no-write
    python3 bench/onen_bench.py --from DIR --section onen-16

``--from DIR`` reads ``DIR/prtt-T.jsonl``, ``DIR/onen-T.jsonl`` and ``DIR/facts.json``
(``{"machine": ..., "commands": {T: [...]}, "onen_wall_s": {T: x}}``, written by the
command that measured them). Writes the section ``bench:<section>`` of docs/BENCHMARKS.md,
the plots docs/bench-<section>-<T>.png and the raw files under build/bench/.

Exit status: 0 done, 1 a measurement or fit failed, 2 bad usage or a missing tool.
Benchmarks are not tests and never run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    BUILD,
    REPO,
    BenchError,
    emit_section,
    find_railgauge,
    find_railgauge_bench,
    machine_facts,
    run_proc,
)

DOC = REPO / "docs" / "BENCHMARKS.md"
TARGET_S = 30.0


def log(msg: str) -> None:
    print(f"onen_bench: {msg}", file=sys.stderr, flush=True)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{float(v):.{digits}f}"


def measure(transport: str, ranks: int, out: Path, prtt_budget: float,
            onen_budget: float) -> dict[str, Any]:
    """Runs prtt (2 ranks) and onen (``ranks``) over ``transport``; returns the commands,
    the onen wall time and the file paths."""
    found = find_railgauge(None)
    bench = find_railgauge_bench(None)
    if found is None or bench is None:
        raise BenchError("railgauge or railgauge-bench not found (pip install . first, or "
                         "set RG_NATIVE_DIR)")
    rg, env = found
    full_env = {**os.environ, **env}
    prtt = out / f"prtt-{transport}.jsonl"
    onen = out / f"onen-{transport}.jsonl"
    cmd_prtt = [*rg, "run", "-n", "2", "--transport", transport, "--", bench, "prtt",
                "--out", str(prtt), "--budget", f"{prtt_budget:g}"]
    cmd_onen = [*rg, "run", "-n", str(ranks), "--transport", transport, "--", bench, "onen",
                "--out", str(onen), "--modes", "single,list", "--budget", f"{onen_budget:g}"]
    log(f"{transport}: prtt over 2 ranks")
    res = run_proc(cmd_prtt, timeout=prtt_budget + 120, env=full_env)
    if res.rc != 0:
        raise BenchError(f"prtt over {transport}: {res.describe()}")
    log(f"{transport}: onen over {ranks} ranks")
    t0 = time.monotonic()
    res = run_proc(cmd_onen, timeout=onen_budget + 120, env=full_env)
    wall = time.monotonic() - t0
    if res.rc != 0:
        raise BenchError(f"onen over {transport}: {res.describe()}")
    short = [shlex.join(["railgauge", *c[len(rg):]]).replace(bench, "railgauge-bench")
             .replace(str(out) + "/", "") for c in (cmd_prtt, cmd_onen)]
    return {"commands": short, "onen_wall_s": wall, "prtt": prtt, "onen": onen}


def analyse(transport: str, prtt: Path, onen: Path, out: Path, plot: Path) -> dict[str, Any]:
    """LogGP fit of the PRTT file, then gauge's LoP analysis of the onen file."""
    from railgauge.fit.loggp import fit_loggp
    from railgauge.gauge_lop import analyse_lop
    from railgauge.measurements import read_measurements
    from railgauge.report.lop import plot_gauge_lop

    meas = read_measurements(prtt)
    loggp = fit_loggp(meas, seed=1)
    part_dir = out / f"analysis-{transport}"
    part_dir.mkdir(parents=True, exist_ok=True)
    part = analyse_lop(meas, loggp, part_dir, onen_path=onen)
    fig = plot_gauge_lop(part, plot)
    points = part.onen.points if part.onen is not None else []
    return {"part": part, "plot": fig, "loggp": loggp, "points": points}


def section_md(section: str, facts: dict[str, Any], runs: dict[str, dict[str, Any]],
               results: dict[str, dict[str, Any]], ranks: int, command: str) -> str:
    lines = [f"## LoP: RTT(p), its fit, and LogP beside it ({section})", ""]
    if facts.get("measured_with"):
        lines.append(f"Measured on {facts.get('machine', '?')} ({facts.get('date', '?')}) with "
                     f"`{facts['measured_with']}`; analysed here with `{command}` (the raw files "
                     "are kept beside the document).")
    else:
        lines.append(f"Command: `{command}` ({facts.get('date', '?')}; "
                     f"{facts.get('machine', '')})")
    lines.append("")
    lines.append(
        "Per transport: the onen run's 1:n rounds (one message of 8 B to each of p peers, all "
        "answered), the LoP fit of their minimum per peer RTT(p)/p (the paper's choice), L(p) "
        "computed pointwise (RTT(p)/2 - (o_s(p) + o_s(1)), of the per-peer round), and the "
        "slides' LogP prediction (4o + 2L + (P-1) max{g, o})/P with L, o and g from the LogGP "
        "fit of the same run's PRTT measurement. All times in microseconds.")
    lines.append("")
    nproc = facts.get("nproc")
    if isinstance(nproc, int) and ranks > nproc:
        lines.append(
            f"**{ranks} ranks on {nproc} CPUs are oversubscribed**: the peers of a round share "
            "the cores and the ranks outside it sleep in the transport's wait, so each round "
            "pays scheduler wake-ups that neither LogP (fitted on 2 pinned ranks) nor the LoP "
            "fit's shape describes; the target is the run time. A section measured with a rank "
            "per core, where one is at hand, shows the model comparison.")
        lines.append("")
    for t, run in runs.items():
        res = results.get(t)
        lines.append(f"### {t}")
        lines.append("")
        for c in run.get("commands", []):
            lines.append(f"    {c}")
        lines.append("")
        if res is None:
            lines.append(f"Not analysed: {run.get('error', 'no result')}")
            lines.append("")
            continue
        part = res["part"]
        pts = res["points"]
        stable = sum(1 for pt in pts if getattr(pt, "stable", None))
        wall = run.get("onen_wall_s")
        ok = wall is not None and wall < TARGET_S and stable == len(pts)
        nr = run.get("ranks", ranks)
        lines.append(
            f"onen over {nr} ranks: {len(pts)} points (both directions, modes single and "
            f"list), {stable} stable (95% CI of the median within 2%), in "
            f"{_fmt(wall, 1)} s wall"
            + (f"; target (p = 1..{nr - 1} with stable medians in under {TARGET_S:.0f} s): "
               f"{'PASS' if ok else 'not met'}" if t == "shm" else "") + ".")
        lines.append("")
        lg = part.logp or {}
        logp_rows = {row["P"]: row for row in lg.get("table", [])}
        d = part.derived or {}
        lines.append(f"LoP fit: {part.status}" + (f" ({part.reason})" if part.reason else "")
                     + f"; statistic: {part.stat}.")
        if part.fit is not None:
            doc = part.fit.to_json()
            lam = doc["rtt"]["lambda"]
            ci = doc["rtt"].get("ci95") or [None] * len(lam)
            cells = []
            for i, v in enumerate(lam):
                c = ci[i] if i < len(ci) else None
                rng = (f" [{_fmt(c[0])}, {_fmt(c[1])}]" if isinstance(c, list | tuple)
                       and len(c) == 2 else "")
                cells.append(f"λ{i + 1} = {_fmt(v)}{rng}")
            lines.append("")
            lines.append("RTT(p) = λ1/(λ2 + p) + λ3 + λ4 (1 - e^(λ5 (p - λ6))): " +
                         ", ".join(cells) + ".")
            os_l = doc.get("overhead_send", {}).get("lambda")
            if os_l:
                lines.append(f"o_s(p) = λ1 + λ2/(λ3 + p): "
                             f"{', '.join(f'λ{i + 1} = {_fmt(v)}' for i, v in enumerate(os_l))}.")
        if lg:
            lines.append("")
            lines.append(f"LogP: {lg.get('source', '')}; L = {_fmt(lg.get('L_us'))}, "
                         f"o = {_fmt(lg.get('o_us'))}, g = {_fmt(lg.get('g_us'))}.")
        lines.append("")
        lines.append("| p | round min | round median | RTT(p)/p measured | LoP fit | "
                     "LogP prediction | LogP / measured | o_s(p) | L(p) |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        primary = part.primary_points()
        by_p = {pt.p: pt for pt in primary}
        for i, p in enumerate(d.get("p", [])):
            pt = by_p.get(p)
            row = logp_rows.get(p, {})
            meas_v, logp_v = row.get("measured_us"), row.get("logp_us")
            ratio = (logp_v / meas_v) if meas_v and logp_v is not None else None
            lines.append(
                f"| {p} | {_fmt(pt.rtt('min') if pt else None, 2)} | "
                f"{_fmt(pt.rtt('median') if pt else None, 2)} | {_fmt(d['rtt_us'][i], 3)} | "
                f"{_fmt(row.get('lop_us'), 3)} | {_fmt(logp_v, 3)} | {_fmt(ratio, 2)} | "
                f"{_fmt(d['o_s_us'][i], 3)} | {_fmt(d['L_us'][i], 3)} |")
        lines.append("")
        fit_err = [abs(r["lop_us"] / r["measured_us"] - 1.0) for r in logp_rows.values()
                   if r.get("lop_us") is not None and r.get("measured_us")]
        ratios = [r["logp_us"] / r["measured_us"] for r in logp_rows.values()
                  if r.get("logp_us") is not None and r.get("measured_us")]
        if fit_err and ratios:
            lines.append(f"Over p = 1..{max(logp_rows)}: the LoP fit is within "
                         f"{100 * max(fit_err):.1f}% of the measured RTT(p)/p (median "
                         f"{100 * sorted(fit_err)[len(fit_err) // 2]:.1f}%); LogP's prediction "
                         f"is {min(ratios):.2f} to {max(ratios):.2f} times the measurement.")
            lines.append("")
        if res.get("plot") is not None:
            plot_path = Path(res["plot"])
            docs = REPO / "docs"
            rel = plot_path.relative_to(docs) if plot_path.is_relative_to(docs) else plot_path
            lines.append(f"![RTT(p) over {t}]({rel})")
            lines.append("")
        for w in part.warnings + part.notes:
            lines.append(f"- {w}")
        if part.warnings or part.notes:
            lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=8, help="ranks of the onen run (default 8)")
    ap.add_argument("--transports", default="shm,tcp", help="comma-separated (default shm,tcp)")
    ap.add_argument("--prtt-budget", type=float, default=60.0,
                    help="seconds for each PRTT sweep (default 60)")
    ap.add_argument("--onen-budget", type=float, default=120.0,
                    help="seconds the onen run may take at most (default 120)")
    ap.add_argument("--from", dest="from_dir", type=Path,
                    help="analyse prtt-T.jsonl / onen-T.jsonl / facts.json measured elsewhere")
    ap.add_argument("--section", default=None,
                    help="section name in docs/BENCHMARKS.md (default onen, or onen-from)")
    ap.add_argument("--no-write", action="store_true", help="print, do not touch the docs")
    ap.add_argument("--raw-dir", type=Path, default=None,
                    help="where the measured files and facts.json go (default build/bench/)")
    args = ap.parse_args(argv)
    if args.ranks < 2:
        ap.error("--ranks must be 2 or more")
    args.transport_list = [t for t in args.transports.split(",") if t]
    if not args.transport_list:
        ap.error("--transports is empty")
    if args.section is None:
        args.section = "onen-from" if args.from_dir else "onen"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    out = args.raw_dir if args.raw_dir is not None else BUILD / f"onen-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, Any]] = {}
    failed = False
    if args.from_dir is not None:
        facts_path = args.from_dir / "facts.json"
        try:
            given = json.loads(facts_path.read_text())
        except (OSError, ValueError) as exc:
            log(f"cannot read {facts_path}: {exc}")
            return 2
        facts = {"date": given.get("date", "?"), "machine": given.get("machine", "?"),
                 "nproc": given.get("nproc"), "measured_with": given.get("measured_with")}
        for t in args.transport_list:
            runs[t] = {"commands": given.get("commands", {}).get(t, []),
                       "onen_wall_s": given.get("onen_wall_s", {}).get(t),
                       "ranks": given.get("ranks", args.ranks),
                       "prtt": args.from_dir / f"prtt-{t}.jsonl",
                       "onen": args.from_dir / f"onen-{t}.jsonl"}
        ranks = int(given.get("ranks", args.ranks))
    else:
        mf = machine_facts(None)
        facts = {"date": mf["date"], "nproc": mf["nproc"],
                 "machine": f"{mf['cpu']}, {mf['nproc']} CPUs, Linux {mf['kernel']}"}
        ranks = args.ranks
        for t in args.transport_list:
            try:
                runs[t] = measure(t, ranks, out, args.prtt_budget, args.onen_budget)
            except BenchError as exc:
                log(str(exc))
                runs[t] = {"error": str(exc)}
                failed = True
        ok = {t: r for t, r in runs.items() if "error" not in r}
        (out / "facts.json").write_text(json.dumps({
            **facts, "ranks": ranks,
            "measured_with": "python3 bench/onen_bench.py " + shlex.join(
                sys.argv[1:] if argv is None else argv),
            "commands": {t: r["commands"] for t, r in ok.items()},
            "onen_wall_s": {t: r["onen_wall_s"] for t, r in ok.items()}}, indent=2) + "\n")
    results: dict[str, dict[str, Any]] = {}
    for t, run in runs.items():
        if "error" in run:
            continue
        plot = REPO / "docs" / f"bench-{args.section}-{t.replace(':', '-')}.png"
        if args.no_write:
            plot = out / plot.name
        try:
            results[t] = analyse(t, Path(run["prtt"]), Path(run["onen"]), out, plot)
        except Exception as exc:
            log(f"{t}: analysis failed: {exc}")
            run["error"] = f"analysis failed: {exc}"
            failed = True
    command = "python3 bench/onen_bench.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    md = section_md(args.section, facts, runs, results, ranks, command.strip())
    (out / "section.md").write_text(md + "\n")
    emit_section(DOC, args.section, md, args.no_write, log)
    log(f"raw files in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
