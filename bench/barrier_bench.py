#!/usr/bin/env python3
"""The barrier family side by side in one run, for P = 2 .. --max-ranks: railgauge's runtime
barrier over shm (every algorithm, n-way for n = 2 .. 4), MPI_Barrier of Open MPI and of MPICH
(each flavour installed), the PMPI library's barrier under each MPI (dissemination and the
n-way ones), the choice of `railgauge tune barrier`, and the simulator's prediction of every
algorithm from the model of the engine the runtime's barrier ran on: the flag model
(`railgauge-bench flagprtt`, measured in every round of the same run, docs/coll.md) where it
ran on shared-memory flags, else the LogGP model that the same run fits (PRTT over shm on 2
ranks). Raw data from before the flag model (no "flags" in results.json) renders with the
LogGP predictions and says so.

    python3 bench/barrier_bench.py                      # P = 2 .. 8, 3 rounds, here
    python3 bench/barrier_bench.py --max-ranks 16 --no-write --raw-dir DIR   # a bigger box
    python3 bench/barrier_bench.py --from DIR --section barrier-16           # its files

Rounds interleave everything, medians over rounds are shown. Ranks above the CPUs are
oversubscribed, which the section says. Writes the section ``bench:<section>`` of
docs/BENCHMARKS.md and the raw results (results.json, model-loggp.json, model-flags.json and
each round's flagprtt-<k>.jsonl) in the raw folder.
Exit status: 0 done, 1 a run failed, 2 bad usage. Benchmarks never run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import BUILD, REPO, emit_section, machine_facts
from railgauge.fit.flags import fit_flags, read_flag_records
from railgauge.fit.loggp import fit_loggp
from railgauge.launcher import launch
from railgauge.measurements import read_measurements
from railgauge.mpilaunch import installed_flavours, mpi_command
from railgauge.native import find_tool
from railgauge.tune import tune_barrier

DOC = REPO / "docs" / "BENCHMARKS.md"
ALGORITHMS = ("linear", "binomial", "recdbl", "dissem", "nway:2", "nway:3", "nway:4")
#: The PMPI library's barriers measured: fixed ones (RG_PMPI_BARRIER) and "default", the
#: library's own choice without any setting (its tuned choice from the built-in flag model).
PMPI_ALGS = ("dissem", "nway:2", "nway:3", "default")
WRAPPERS = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}


def log(msg: str) -> None:
    print(f"barrier_bench: {msg}", file=sys.stderr, flush=True)


def rg_barrier_json(P: int, alg: str, iters: int) -> dict[str, Any]:
    """One run of railgauge-bench barrier; its JSON line (rank 0's stdout)."""
    rg = [sys.executable, "-m", "railgauge.cli.main"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    argv = [*rg, "run", "-n", str(P), "--transport", "shm", "--timeout", "300", "--",
            find_tool("railgauge-bench"), "barrier", "--algorithm", alg, "--iterations",
            str(iters), "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=400,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"railgauge barrier {alg} P={P}: {proc.stderr.strip()[-400:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            rec: dict[str, Any] = json.loads(line)
            return rec
    raise RuntimeError(f"railgauge barrier {alg} P={P}: no JSON line")


def build_check(flavour: str) -> Path:
    src = REPO / "native" / "pmpi" / "barrier_check.c"
    exe = BUILD / f"barrier_check-{flavour}"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        subprocess.run([WRAPPERS[flavour], "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def pmpi_lib(flavour: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "railgauge.cli.main", "pmpi",
                           "--print-path", "--mpi", flavour], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO / "python")}, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"no PMPI library for {flavour}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def mpi_barrier(flavour: str, P: int, iters: int, pmpi: str | None = None,
                alg: str | None = None) -> float:
    env = {}
    if pmpi is not None:
        env = {"LD_PRELOAD": pmpi}
        if alg != "default":
            env["RG_PMPI_BARRIER"] = alg or "dissem"
    return barrier_check_time(flavour, P, iters, env, f"{alg or ''}")


def barrier_check_time(flavour: str, P: int, iters: int, env: dict[str, str],
                       what: str = "") -> float:
    """The median MPI_Barrier (us) of `barrier_check ITERS 0 --time` on P ranks of the
    flavour, every rank given env."""
    exe = build_check(flavour)
    argv = mpi_command(flavour, [str(exe), str(iters), "0", "--time"], P, env=env)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False,
                          env={**os.environ, **env})
    if proc.returncode != 0:
        raise RuntimeError(f"{flavour} barrier P={P} {what}: "
                           f"{(proc.stderr or proc.stdout).strip()[-400:]}")
    for tok in proc.stdout.split():
        if tok.startswith("median_us="):
            return float(tok.split("=", 1)[1])
    raise RuntimeError(f"{flavour} barrier P={P}: no median in {proc.stdout[-200:]}")


FLOOR_NS = (1, 2, 3, 4)


def build_floor() -> Path:
    """bench/barrier_floor.c, compiled once into the bench folder."""
    src = REPO / "bench" / "barrier_floor.c"
    exe = BUILD / "barrier_floor"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        BUILD.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-Wall", "-Wextra", "-Werror",
                        "-std=c11", "-pthread", "-o", str(exe), str(src)], check=True)
    return exe


def floor_barrier(exe: Path, P: int, iters: int) -> dict[int, float]:
    """The bare n-way flag barrier between P pinned threads: median per n."""
    proc = subprocess.run([str(exe), "-P", str(P), "-n", ",".join(map(str, FLOOR_NS)),
                           "--iters", str(iters), "--warmup", "100"], capture_output=True,
                          text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"barrier_floor P={P}: {proc.stderr.strip()[-400:]}")
    return {int(d["n"]): float(d["median_us"])
            for d in (json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{"))}


def fit_model(raw: Path) -> Path:
    prtt = raw / "prtt-shm.jsonl"
    res = launch([find_tool("railgauge-bench"), "prtt", "--out", str(prtt), "--budget", "40",
                  "--max-size", "1KiB"], 2, transport="shm", timeout_s=300)
    if res.returncode != 0:
        raise RuntimeError(f"prtt: {res.failure}")
    fit = fit_loggp(read_measurements(prtt), seed=1)
    model = raw / "model-loggp.json"
    model.write_text(json.dumps(fit.to_json(), indent=1) + "\n")
    return model


def flag_round(raw: Path, k: int, ranks: int) -> dict[str, Any]:
    """One flagprtt run (ranks ranks, at most one per CPU) and its fit."""
    out = raw / f"flagprtt-{k}.jsonl"
    res = launch([find_tool("railgauge-bench"), "flagprtt", "--out", str(out)], ranks,
                 transport="shm", timeout_s=300)
    if res.returncode != 0:
        raise RuntimeError(f"flagprtt: {res.failure}")
    return fit_flags(read_flag_records(out), ranks=ranks)


def flag_model(raw: Path, fits: list[dict[str, Any]]) -> Path:
    """The run's flag model: the first round's document with the median over rounds of L, g
    and call_us (the parameters the simulator and the predictions use)."""
    doc = json.loads(json.dumps(fits[0]))
    for key in ("L_us", "g_us", "duplex_us"):
        v = statistics.median(f["ranges"][0].get(key, 0.0) for f in fits)
        doc["ranges"][0][key] = doc["network"][key] = v
    doc["call_us"] = statistics.median(f["call_us"] for f in fits)
    doc["rounds"] = len(fits)
    path = raw / "model-flags.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def measure(args: argparse.Namespace, raw: Path) -> dict[str, Any]:
    ranks = (sorted({int(x) for x in args.ranks.split(",")}) if args.ranks
             else list(range(2, args.max_ranks + 1)))
    flavours = [f for f in installed_flavours() if shutil.which(WRAPPERS[f])]
    pmpis = {}
    for f in flavours:
        try:
            pmpis[f] = pmpi_lib(f)
        except RuntimeError as exc:
            log(str(exc))
    log("fitting the LogGP model (PRTT over shm, 2 ranks)")
    model = fit_model(raw)
    sim = find_tool("railgauge-sim")
    pred: dict[str, dict[str, float]] = {}
    tuned: dict[str, dict[str, Any]] = {}
    for P in ranks:
        tr = tune_barrier(P, model, tool=sim, ns=(2, 3, 4))
        tuned[str(P)] = {"algorithm": tr.algorithm, "n": tr.n}
        pred[str(P)] = {(f"nway:{r.n}" if r.algorithm == "nway" else r.algorithm):
                        r.predicted_us for r in tr.table if r.predicted_us is not None}
    floor = build_floor()
    rounds: list[dict[str, Any]] = []
    fits: list[dict[str, Any]] = []
    nproc = os.cpu_count() or 2
    for k in range(args.rounds):
        log(f"round {k + 1}/{args.rounds}")
        row: dict[str, Any] = {}
        fits.append(flag_round(raw, k, max(2, min(max(ranks), nproc))))
        for P in ranks:
            for n, v in floor_barrier(floor, P, args.iterations).items():
                row[f"floor nway:{n} {P}"] = v
            for alg in ALGORITHMS:
                rec = rg_barrier_json(P, alg, args.iterations)
                row[f"rg {alg} {P}"] = rec["median_us"]
                row[f"impl {alg} {P}"] = rec.get("impl")
            for f in flavours:
                row[f"{f} {P}"] = mpi_barrier(f, P, args.iterations)
                if f in pmpis:
                    for alg in PMPI_ALGS:
                        row[f"pmpi-{f} {alg} {P}"] = mpi_barrier(f, P, args.iterations,
                                                                 pmpis[f], alg)
        rounds.append(row)
    return {"ranks": ranks, "flavours": flavours, "pmpi": sorted(pmpis), "pred": pred,
            "tuned": tuned, "rounds": rounds, "flags": flag_predictions(raw, fits, ranks)}


def flag_predictions(raw: Path, fits: list[dict[str, Any]], ranks: list[int]) -> dict[str, Any]:
    """The run's flag model (written into raw) and the simulator's predictions and tuned
    choice from it for every P."""
    fmodel = flag_model(raw, fits)
    sim = find_tool("railgauge-sim")
    fpred: dict[str, dict[str, float]] = {}
    ftuned: dict[str, dict[str, Any]] = {}
    for P in ranks:
        tr = tune_barrier(P, fmodel, tool=sim, ns=(2, 3, 4), engine="flags")
        ftuned[str(P)] = {"algorithm": tr.algorithm, "n": tr.n}
        fpred[str(P)] = {(f"nway:{r.n}" if r.algorithm == "nway" else r.algorithm):
                         r.predicted_us for r in tr.table if r.predicted_us is not None}
    return {"pred": fpred, "tuned": ftuned, "model": json.loads(fmodel.read_text())}


def refit_flags(res: dict[str, Any], raw: Path) -> None:
    """--refit: the flag model and its predictions again from the raw flagprtt records of
    every round in raw (the analysis of the current code; the measurements are the run's)."""
    files = sorted(raw.glob("flagprtt-*.jsonl"))
    if not files:
        raise RuntimeError(f"--refit: no flagprtt-*.jsonl in {raw}")
    ranks = (res.get("flags") or {}).get("model", {}).get("ranks") or 2
    fits = [fit_flags(read_flag_records(f), ranks=ranks) for f in files]
    res["flags"] = flag_predictions(raw, fits, res["ranks"])


def on_flags(res: dict[str, Any], P: int) -> bool | None:
    """Whether the runtime's barriers on P ranks ran on shared-memory flags in every round
    (None: the raw data does not say)."""
    impls = {r[k] for r in res["rounds"] for k in r if k.startswith("impl ") and
             k.endswith(f" {P}")}
    return None if not impls else impls == {"shm"}


def model_for(res: dict[str, Any], P: int) -> tuple[dict[str, float], dict[str, Any], str]:
    """The predictions, tuned choice and engine for P: the flag model's where the runtime
    ran on flags and the run measured one, else the LogGP fit's."""
    flags = res.get("flags")
    if flags is not None and on_flags(res, P):
        return flags["pred"][str(P)], flags["tuned"][str(P)], "flags"
    return res["pred"][str(P)], res["tuned"][str(P)], "messages"


def med(res: dict[str, Any], key: str) -> float | None:
    vals = [r[key] for r in res["rounds"] if key in r]
    return statistics.median(vals) if vals else None


def fmt(v: float | None, d: int = 2) -> str:
    return "-" if v is None else f"{v:.{d}f}"


def schedule_key(alg: str, P: int) -> Any:
    """The schedule of ``alg`` on P ranks (every rank's send and receive peers, round by
    round, as coll/sched.c plans them) for dissem, nway:n and recdbl at a power of two;
    the name for the others. Algorithms with one key are one schedule at that P: their
    measured difference is noise."""
    if alg == "recdbl" and P & (P - 1) == 0:
        rounds = P.bit_length() - 1
        return tuple(tuple(((me ^ (1 << r),), (me ^ (1 << r),)) for r in range(rounds))
                     for me in range(P))
    if alg != "dissem" and not alg.startswith("nway:"):
        return alg
    n = 1 if alg == "dissem" else int(alg.split(":", 1)[1])
    plan = []
    for me in range(P):
        rounds, base = [], 1
        while base < P:
            dist = [i * base for i in range(1, n + 1) if i * base < P]
            rounds.append((tuple(sorted((me + d) % P for d in dist)),
                           tuple(sorted((me - d) % P for d in dist))))
            base *= n + 1
        plan.append(tuple(rounds))
    return tuple(plan)


def section(res: dict[str, Any], facts: dict[str, Any], name: str, command: str) -> str:
    ranks, flavours = res["ranks"], res["flavours"]
    nproc = facts.get("nproc") or 0
    lines = [f"## The barrier family ({name})", "",
             f"{facts.get('how', 'Command')}: `{command}` ({facts.get('date', '?')}; "
             f"{facts.get('machine', '?')}). {len(res['rounds'])} round(s), every row measured "
             "in each round, medians of the per-barrier medians over rounds, in microseconds "
             "(railgauge-bench barrier and barrier_check --time: 100 warm-up barriers, then "
             f"{facts.get('iterations', '?')} timed, each rank timing each barrier from entry "
             "to exit).", ""]
    if nproc and max(ranks) > nproc:
        lines += [f"Ranks above {nproc} share the CPUs (oversubscribed): those rows measure "
                  "the scheduler as much as the barrier.", ""]
    hdr = "| P | " + " | ".join(ALGORITHMS) + " | tuned | " + \
        " | ".join(f"MPI_Barrier {f}" for f in flavours) + " |"
    lines += ["Measured (railgauge over shm; MPI_Barrier of each library):", "", hdr,
              "|" + "---:|" * (2 + len(ALGORITHMS) + len(flavours))]
    verdict_2x: list[bool] = []
    verdict_tuned: list[bool] = []
    for P in ranks:
        vals = {a: med(res, f"rg {a} {P}") for a in ALGORITHMS}
        t = model_for(res, P)[1]
        tl = f"nway:{t['n']}" if t["algorithm"] == "nway" else t["algorithm"]
        tv = vals.get(tl)
        best = min(v for v in vals.values() if v is not None)
        # The tuned schedule's time: the best measurement of any algorithm that is the
        # same schedule at this P (at P = 2, dissem, recdbl and every nway are one).
        same = [vals[a] for a in ALGORITHMS
                if vals[a] is not None and schedule_key(a, P) == schedule_key(tl, P)]
        if same:
            verdict_tuned.append(min(same) <= 1.05 * best)
        mpis = [med(res, f"{f} {P}") for f in flavours]
        if P >= 4 and (not nproc or nproc >= P):
            verdict_2x.append(all(m is not None and best * 2 <= m for m in mpis))
        lines.append(f"| {P} | " + " | ".join(fmt(vals[a]) for a in ALGORITHMS) +
                     f" | {tl} {fmt(tv)} | " + " | ".join(fmt(m) for m in mpis) + " |")
    floor_ok: list[bool] = []
    if any(k.startswith("floor ") for r in res["rounds"] for k in r):
        lines += ["", "The floor: the same n-way schedule on bare flags between pinned threads "
                  "(`bench/barrier_floor.c`: one release store per signal, spinning acquire "
                  "loads, no processes, no futex), beside the runtime's n-way barrier at the "
                  "same n, ratio runtime / floor:", "",
                  "| P | " + " | ".join(f"floor nway:{n}" for n in FLOOR_NS) +
                  " | best runtime / best floor |", "|" + "---:|" * (2 + len(FLOOR_NS))]
        for P in ranks:
            cells = []
            fl = {n: med(res, f"floor nway:{n} {P}") for n in FLOOR_NS}
            for n in FLOOR_NS:
                rt = med(res, f"rg {'dissem' if n == 1 else f'nway:{n}'} {P}")
                f = fl[n]
                cells.append("-" if f is None else
                             f"{fmt(f)}" + ("" if rt is None else f" ({rt / f:.2f}x)"))
            rts = [v for v in (med(res, f"rg {a} {P}") for a in ALGORITHMS) if v is not None]
            fls = [v for v in fl.values() if v is not None]
            ratio = min(rts) / min(fls) if rts and fls else None
            if ratio is not None and (not nproc or nproc >= P):
                floor_ok.append(ratio <= 1.5)
            lines.append(f"| {P} | " + " | ".join(cells) + f" | {fmt(ratio)} |")
    engines = {P: model_for(res, P)[2] for P in ranks}
    if "flags" not in res:
        lines += ["", "This raw data has no flag model (it was measured before `railgauge-bench "
                  "flagprtt`): the predictions and the tuned column are from the LogGP fit of "
                  "the runtime's messages, although the runtime's barrier ran on "
                  "shared-memory flags, whose gathers that fit overpredicts."]
    if set(engines.values()) == {"flags"}:
        fm = res["flags"]["model"]
        lines += ["", "Simulated from the flag model of the same run (`railgauge-bench "
                  "flagprtt` in every round, medians: L = "
                  f"{fm['ranges'][0]['L_us']:.3f} us, duplex = "
                  f"{fm['ranges'][0].get('duplex_us', 0.0):.3f} us, o = 0, g = "
                  f"{fm['ranges'][0]['g_us']:.4f} us, plus {fm['call_us']:.3f} us per barrier "
                  "call; docs/coll.md), "
                  "predicted / measured:", ""]
    elif "flags" in set(engines.values()):
        lines += ["", "Simulated from the flag model of the same run where the runtime ran on "
                  "flags (P = " + ", ".join(str(P) for P in ranks if engines[P] == "flags") +
                  "), else from its LogGP fit (PRTT over shm, 2 ranks), predicted / "
                  "measured:", ""]
    else:
        lines += ["", "Simulated from the LogGP fit of the same run (PRTT over shm, 2 ranks), "
                  "predicted / measured:", ""]
    lines += ["| P | " + " | ".join(ALGORITHMS) + " |", "|" + "---:|" * (1 + len(ALGORITHMS))]
    within: list[bool] = []
    for P in ranks:
        cells = []
        for a in ALGORITHMS:
            p = model_for(res, P)[0].get(a)
            m = med(res, f"rg {a} {P}")
            if p is None or m is None:
                cells.append("-")
                continue
            cells.append(f"{fmt(p)} / {fmt(m)} ({p / m:.2f})")
            if not nproc or nproc >= P:
                within.append(abs(p / m - 1) <= 0.2)
        lines.append(f"| {P} | " + " | ".join(cells) + " |")
    pmpi_ok: list[bool] = []
    pmpi_all: list[bool] = []
    if res["pmpi"]:
        lines += ["", "The PMPI library (LD_PRELOAD; RG_PMPI_BARRIER, or none: default, "
                  "the library's tuned choice; flags in an MPI shared window where the ranks "
                  "share a node, as here) against the library's own MPI_Barrier, ratio to it:",
                  "",
                  "| P | " + " | ".join(f"{f} {a}" for f in res["pmpi"] for a in PMPI_ALGS) +
                  " |", "|" + "---:|" * (1 + len(res["pmpi"]) * len(PMPI_ALGS))]
        for P in ranks:
            cells = []
            for f in res["pmpi"]:
                own = med(res, f"{f} {P}")
                for a in PMPI_ALGS:
                    v = med(res, f"pmpi-{f} {a} {P}")
                    cells.append("-" if v is None or not own
                                 else f"{fmt(v)} ({v / own:.2f})")
                    if v is not None and own:
                        pmpi_all.append(v <= 1.10 * own)
                        if not nproc or nproc >= P:
                            pmpi_ok.append(v <= 1.10 * own)
            lines.append(f"| {P} | " + " | ".join(cells) + " |")
    top = min(max(ranks), nproc) if nproc else max(ranks)
    span = f"P = 4 .. {top} (one rank per CPU)" if top >= 4 else \
        "P from 4 up with one rank per CPU (none here)"
    lines += ["", "Targets: runtime barrier at least 2x faster than MPI_Barrier of each library "
              f"at {span}: {verdict(verdict_2x)}; the best runtime barrier at most 1.5x the best "
              f"flag floor at P <= CPUs: {verdict(floor_ok)}; the PMPI barrier never more "
              f"than 10% slower than the library's own at P <= CPUs: {verdict(pmpi_ok)}"
              + (f" (at every P measured, oversubscribed ones included: "
                 f"{verdict(pmpi_all)})" if len(pmpi_all) > len(pmpi_ok) else "") + "; "
              f"the tuned choice within 5% of "
              f"the best fixed algorithm at every P (algorithms that are one schedule at "
              f"that P counted as one): {verdict(verdict_tuned)}; the simulator "
              f"within 20% of the measurement at P <= CPUs: {verdict(within)} "
              f"over {len(within)} cells."]
    return "\n".join(lines)


def verdict(oks: list[bool]) -> str:
    if not oks:
        return "not measured"
    return "PASS" if all(oks) else f"not met ({sum(oks)} of {len(oks)})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-ranks", type=int, default=8)
    ap.add_argument("--ranks", default=None,
                    help="comma-separated P values instead of 2 .. --max-ranks")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--section", default=None)
    ap.add_argument("--raw-dir", type=Path, default=None)
    ap.add_argument("--from", dest="from_dir", type=Path, default=None)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--refit", action="store_true",
                    help="with --from: fit the flag model and simulate its predictions again "
                         "from the raw flagprtt records (and keep them in results.json)")
    args = ap.parse_args(argv)
    if args.refit and args.from_dir is None:
        ap.error("--refit needs --from")
    if args.max_ranks < 2:
        ap.error("--max-ranks must be 2 or more")
    command = "python3 bench/barrier_bench.py " + shlex.join(sys.argv[1:] if argv is None
                                                              else argv)
    if args.from_dir is not None:
        res = json.loads((args.from_dir / "results.json").read_text())
        if args.refit:
            try:
                refit_flags(res, args.from_dir)
            except (RuntimeError, OSError, ValueError) as exc:
                log(str(exc))
                return 1
            (args.from_dir / "results.json").write_text(json.dumps(res, indent=1) + "\n")
        facts = res["facts"]
        facts["how"] = f"Measured with `{facts.pop('command', '?')}`; analysed with"
        name = args.section or "barrier-from"
    else:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
        raw = args.raw_dir or BUILD / f"barrier-{stamp}"
        raw.mkdir(parents=True, exist_ok=True)
        BUILD.mkdir(parents=True, exist_ok=True)
        mf = machine_facts(None)
        facts = {"date": mf["date"], "nproc": mf["nproc"], "iterations": args.iterations,
                 "machine": f"{mf['cpu']}, {mf['nproc']} CPUs, Linux {mf['kernel']}",
                 "command": command.strip()}
        try:
            res = measure(args, raw)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            log(str(exc))
            return 1
        res["facts"] = dict(facts)
        (raw / "results.json").write_text(json.dumps(res, indent=1) + "\n")
        log(f"raw results in {raw}")
        name = args.section or "barrier"
    md = section(res, facts, name, command.strip())
    emit_section(DOC, name, md, args.no_write, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
