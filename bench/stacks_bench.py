#!/usr/bin/env python3
"""The barrier that `railgauge tune barrier --emit` writes for Open MPI and for MPICH,
measured in the stack beside every fixed algorithm of that stack and its default, side by
side in one run (issue 21, docs/stacks.md).

For each MPI installed: a gauge over that MPI (`railgauge gauge --transport mpi
--launcher L --no-onen --no-barrier`) gives the model; `railgauge tune barrier --emit
STACK -P LIST --model M --out F --json` writes the stack's settings; then, in every round
and for every P, `native/pmpi/barrier_check ITER 0 --time` (MPI_Barrier timed from entry to
exit on every rank, median over all) runs under the stack's default (no setting), under
each of its fixed algorithms (Open MPI: `coll_tuned_use_dynamic_rules 1` and
`coll_tuned_barrier_algorithm N`; MPICH: the settings railgauge writes for that one
algorithm at every size) and under the emitted settings. Rounds rotate the order.

    python3 bench/stacks_bench.py                    # -P 2,4,8, 15 rounds (3 above 2), here
    python3 bench/stacks_bench.py --from DIR         # the section again from DIR's files

Targets (issue 21): at P <= CPUs the emitted choice within 5% of the best fixed algorithm
of the stack and never more than 5% slower than its default; oversubscribed P reported,
not judged. Writes the section ``bench:stacks`` of docs/BENCHMARKS.md and the raw results
(results.json, each stack's model and emitted files) into the raw folder (default
docs/data/stacks/). Exit status: 0 done, 1 a run failed, 2 bad usage. Never run in CI.
"""

from __future__ import annotations

import argparse
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

from barrier_bench import WRAPPERS, barrier_check_time
from harness import REPO, emit_section, machine_facts
from railgauge.mpilaunch import installed_flavours
from railgauge.stacks import BarrierChoice, StackAlgorithm

DOC = REPO / "docs" / "BENCHMARKS.md"
RAW = REPO / "docs" / "data" / "stacks"
LAUNCHERS = {"openmpi": "mpirun", "mpich": "mpiexec"}
#: The --emit format written for each stack.
FORMATS = {"openmpi": "openmpi", "mpich": "mpich"}
TOL = 0.05
#: The eager limit of the receive-queue simulations (tune rxwin's default).
EAGER = 16384


def log(msg: str) -> None:
    print(f"stacks_bench: {msg}", file=sys.stderr, flush=True)


def railgauge(*argv: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "import sys; from railgauge.cli.main import main; "
           "sys.exit(main())", *argv]
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)


def gauge_model(flavour: str, raw: Path) -> Path:
    out = raw / f"gauge-{flavour}"
    if out.exists():
        shutil.rmtree(out)
    proc = railgauge("gauge", "--transport", "mpi", "--launcher", LAUNCHERS[flavour],
                     "--no-onen", "--no-barrier", "--out", str(out), "--json")
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"gauge over {flavour}: {proc.stderr.strip()[-400:]}")
    model = out / "model-loggp.json"
    keep = raw / f"model-{flavour}.json"
    keep.write_text(model.read_text())
    shutil.rmtree(out)
    return keep


def tune_emit(flavour: str, Ps: list[int], model: Path, raw: Path) -> dict[str, Any]:
    """`railgauge tune barrier --emit` into raw; its JSON object."""
    out = raw / f"emitted-{flavour}.{'rules' if flavour == 'openmpi' else 'env'}"
    argv = ["tune", "barrier", "--emit", FORMATS[flavour], "-P", ",".join(map(str, Ps)),
            "--model", str(model), "--out", str(out), "--json"]
    proc = railgauge(*argv)
    if proc.returncode != 0:
        raise RuntimeError(f"railgauge {' '.join(argv)}: {proc.stderr.strip()[-400:]}")
    doc: dict[str, Any] = json.loads(proc.stdout)
    doc["command"] = "railgauge " + shlex.join(argv)
    return doc


def settings_env(stack: str, settings: dict[str, str]) -> dict[str, str]:
    """A stack's settings as the environment of its ranks."""
    if stack == "openmpi":
        return {f"OMPI_MCA_{k}": str(v) for k, v in settings.items()}
    return {k: str(v) for k, v in settings.items()}


def fixed_configs(stack: str, version: str, P: int, raw: Path) -> list[tuple[str, dict[str, str]]]:
    """(label, environment) of each fixed algorithm of the stack at P."""
    import importlib

    mod = importlib.import_module(f"railgauge.stacks.{stack}")
    out: list[tuple[str, dict[str, str]]] = []
    for alg in mod.barrier_algorithms(version):
        if not alg.accepts(P):
            continue
        if stack == "openmpi":
            out.append((alg.name, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                                   "OMPI_MCA_coll_tuned_barrier_algorithm": str(alg.id)}))
        else:
            out.append((alg.name, mpich_fixed_env(mod, alg, version, P, raw)))
    return out


def mpich_fixed_env(mod: Any, alg: StackAlgorithm, version: str, P: int,
                    raw: Path) -> dict[str, str]:
    """The settings railgauge writes to force one MPICH algorithm at P (its files, if any,
    written into raw)."""
    where = raw / f"fixed-{alg.name}-{P}"
    where.mkdir(parents=True, exist_ok=True)
    em = mod.emit_barrier([BarrierChoice(P=P, algorithm=alg, predicted_us=0.0)], version,
                          "mpich", file_dir=str(where))
    for name, text in (getattr(em, "files", None) or {}).items():
        (where / name).write_text(text)
    return dict(em.settings)


def rxwin_part(model: Path, ranks: int, patterns: list[str]) -> dict[str, Any]:
    """`tune rxwin` at `ranks` simulated ranks per pattern, and every configuration it
    simulated: the adaptive grid (MVAPICH2's SRQ settings are its choice) and the fixed
    lengths (UCX's queue is one of them). The emitted settings are simulated again as the
    stack takes them: MVAPICH2's window with its first limit and the RNR timer of the
    InfiniBand code written (at or above the chosen one), UCX's queue raised to its
    working least."""
    from railgauge.emit import UCX_RX_QUEUE_MIN, ib_rnr_code, rxwin_queue_choice
    from railgauge.native import find_tool
    from railgauge.rxwin import sim_params, sim_rxwin
    from railgauge.tune import tune_rxwin

    tool = find_tool("railgauge-sim")
    params = sim_params(model)
    out: dict[str, Any] = {}
    for pat in patterns:
        log(f"tune rxwin --pattern {pat} -n {ranks} (simulated)")
        res = tune_rxwin(pat, model, tool=tool, nranks=ranks, eager_limit=EAGER)
        q = rxwin_queue_choice(res, tool=tool, eager_limit=EAGER)

        def again(window: str, timer_ms: float, limit: int | None = None,
                  pat: str = pat, iters: int = res.iters) -> dict[str, Any]:
            doc = sim_rxwin(pat, ranks, window, params=params, rnr_timer_ms=timer_ms,
                            iters=iters, limit=limit, eager_limit=EAGER, tool=tool)
            return {"window": window, "rnr_timer_ms": timer_ms,
                    "time_s": float(doc["time_s"]),
                    "mem_mean": float(doc["mem_bytes"]["mean"])}

        out[pat] = {
            "tolerance": res.tolerance, "best_time_s": q.best_time_s,
            "grid": [{"window": r.window, "rnr_timer_ms": r.rnr_timer_ms, "time_s": r.time_s,
                      "mem_mean": r.mem_mean} for r in res.table],
            "fixed": [{"window": f"fixed:{n}", "time_s": t, "mem_mean": m}
                      for n, t, m in q.fixed_rows],
            "mvapich2": again(f"adaptive:{q.w_init}:{q.w_max}",
                              ib_rnr_code(q.rnr_timer_ms)[1], max(1, min(q.limit, q.w_init))),
            "ucx": again(f"fixed:{max(UCX_RX_QUEUE_MIN, q.fixed_len)}", q.rnr_timer_ms)}
    return out


def measure(args: argparse.Namespace, raw: Path) -> dict[str, Any]:
    Ps = sorted({int(x) for x in args.ranks.split(",")})
    flavours = [f for f in installed_flavours() if shutil.which(WRAPPERS[f])]
    stacks: dict[str, Any] = {}
    for f in flavours:
        log(f"{f}: gauge over MPI for the model")
        model = gauge_model(f, raw)
        em = tune_emit(f, Ps, model, raw)
        configs = {str(P): [("default", {}), *fixed_configs(f, em["version"], P, raw),
                            ("emitted", settings_env(f, em["settings"]))] for P in Ps}
        stacks[f] = {"version": em["version"], "emitted": em, "model": model.name,
                     "configs": {P: [c[0] for c in cs] for P, cs in configs.items()},
                     "envs": {P: dict(cs) for P, cs in configs.items()}}
    rx = None
    if args.rxwin_ranks > 0 and flavours:
        rx = rxwin_part(raw / f"model-{flavours[0]}.json", args.rxwin_ranks,
                        ["alltoall", "incast"])
    cpus = os.cpu_count() or 1
    rounds: list[dict[str, float]] = []
    for k in range(args.rounds):
        log(f"round {k + 1}/{args.rounds}")
        row: dict[str, float] = {}
        for f in flavours:
            for P in Ps:
                over = cpus < P
                if over and k >= args.over_rounds:
                    continue
                iters = args.over_iterations if over else args.iterations
                cs = list(stacks[f]["envs"][str(P)].items())
                shift = k % len(cs)
                for label, env in cs[shift:] + cs[:shift]:
                    row[f"{f} {P} {label}"] = barrier_check_time(f, P, iters, env, label)
        rounds.append(row)
    return {"ranks": Ps, "flavours": flavours, "stacks": stacks, "rounds": rounds,
            "iterations": args.iterations, "over_iterations": args.over_iterations,
            "cpus": cpus, "rxwin": rx, "rxwin_ranks": args.rxwin_ranks}


def render(res: dict[str, Any], facts: dict[str, Any], command: str, section: str = "stacks",
           raw: Path = RAW) -> str:
    from harness import facts_md

    cpus = int(res["cpus"])
    lines = [f"## MPI stacks: the emitted barrier beside every fixed algorithm ({section})", ""]
    lines += facts_md(facts, command, raw / "results.json")
    over_iters = res.get("over_iterations", res["iterations"])
    lines += ["", "Written by `bench/stacks_bench.py`. Per MPI installed: a gauge over that "
              "MPI gives the model, `railgauge tune barrier --emit` writes the stack's "
              "settings for every P, and `native/pmpi/barrier_check N 0 --time` (MPI_Barrier "
              f"of the whole world, N = {res['iterations']} timed barriers after 100 untimed "
              f"where P <= CPUs, N = {over_iters} where oversubscribed; every rank times each "
              "barrier from entry to exit, median over all) runs under the stack's default "
              "(no setting), each fixed algorithm and the emitted settings. Every round runs "
              "them all, in an order that rotates from round to round; oversubscribed P only "
              "in the first rounds. Figures: median over the rounds of each run's median, µs. "
              "The ratios are medians over the rounds of the ratio within each round (the "
              "emitted run against the best fixed algorithm's, the one with the least median, "
              "and against the default's, both measured in the same round), which cancels "
              "the machine's slow and fast spells that last longer than a round.", ""]
    verdicts: list[bool] = []
    for f in res["flavours"]:
        st = res["stacks"][f]
        em = st["emitted"]
        lines += [f"### {f} {st['version']}", "", f"`{em['command']}`", ""]
        choice = {str(c["P"]): c for c in em["choices"]}
        lines += ["| P | ranks per CPU | rounds | default | fixed algorithms (µs) | emitted (its "
                  "choice) | vs best fixed | vs default | verdict |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for P in res["ranks"]:
            labels = st["configs"][str(P)]
            rows = [r for r in res["rounds"] if f"{f} {P} emitted" in r]
            med = {lab: statistics.median(r[f"{f} {P} {lab}"] for r in rows) for lab in labels}
            fixed = {lab: v for lab, v in med.items() if lab not in ("default", "emitted")}
            best_lab = min(fixed, key=lambda k: fixed[k])

            rb, rd = (statistics.median(r[f"{f} {P} emitted"] / r[f"{f} {P} {other}"]
                                        for r in rows) for other in (best_lab, "default"))
            over = cpus < P
            ok = None if over else (rb <= 1 + TOL and rd <= 1 + TOL)
            if ok is not None:
                verdicts.append(ok)
            fx = ", ".join(f"{lab} {v:.2f}" for lab, v in fixed.items())
            c = choice.get(str(P), {})
            lines.append(f"| {P} | {P / cpus:.1f}{' (oversubscribed)' if over else ''} | "
                         f"{len(rows)} | {med['default']:.2f} | {fx} | {med['emitted']:.2f} "
                         f"({c.get('algorithm', '?')}) | {rb:.3f} ({best_lab}) | {rd:.3f} | "
                         f"{'reported' if ok is None else ('PASS' if ok else '**FAIL**')} |")
        lines.append("")
    judged = "PASS" if verdicts and all(verdicts) else (
        "not measured" if not verdicts else f"not met ({sum(verdicts)} of {len(verdicts)})")
    lines += [f"Barrier targets: at P <= CPUs the emitted choice within 5% of the best fixed "
              f"algorithm and at most 5% slower than the stack's default: {judged}; "
              "oversubscribed P reported, not judged.", ""]
    lines += render_rxwin(res)
    lines += ["", *render_rails(REPO / "docs" / "data" / "rails.json")]
    return "\n".join(lines) + "\n"


def render_rails(path: Path) -> list[str]:
    """The rails target from section rails' raw rows (bench/rails_bench.py, which measures
    Open MPI with the emitted settings beside its default split and the hand-set weights in
    one run on the two-rail testbed)."""
    head = ("### Rails", "", "Open MPI started with `railgauge rails emit --emit openmpi` "
            "(loaded as `mca_base_param_files`) on the two-rail testbed (1 and 2 Gbit/s), "
            "beside its default split and the weights set by hand, in one run of "
            "`bench/rails_bench.py` (section rails; raw rows in `docs/data/rails.json`).", "")
    try:
        rows = json.loads(path.read_text())["rows"]
    except (OSError, ValueError, KeyError):
        return [*head, "Not measured: no docs/data/rails.json (run bench/rails_bench.py)."]
    keys = ("iperf3 aggregate", "ompi both rails", "ompi both rails weighted",
            "ompi both rails emitted")
    if not rows or not all(k in r for r in rows for k in keys):
        return [*head, "Not measured: the rails run has no Open MPI rows."]
    agg, dflt, hand, em = (statistics.median(float(r[k]) for r in rows) for k in keys)
    ok = em >= 0.936 * agg and em >= 0.99 * hand and em >= 1.4 * dflt
    return [*head, "| Open MPI | MB/s | of iperf3's aggregate |", "| --- | ---: | ---: |",
            f"| default split | {dflt:.1f} | {100 * dflt / agg:.1f}% |",
            f"| btl_tcp_bandwidth_<rail> set by hand | {hand:.1f} | {100 * hand / agg:.1f}% |",
            f"| the emitted settings | {em:.1f} | {100 * em / agg:.1f}% |", "",
            f"Rails target: the emitted settings at least the hand-set figure (93.6% of the "
            f"aggregate in the runs issue 21 quotes; {100 * hand / agg:.1f}% in this run, "
            f"the same values, so within 1% of it) and >= 1.4x the default split "
            f"({em / dflt:.2f}x): {'PASS' if ok else 'not met'} ({len(rows)} rounds, "
            "medians)."]


def render_rxwin(res: dict[str, Any]) -> list[str]:
    rx = res.get("rxwin")
    if not rx:
        return ["Receive queues: not simulated in this run (--rxwin-ranks 0)."]
    model = f"model-{res['flavours'][0]}.json"
    lines = [f"### Receive queues at {res['rxwin_ranks']} simulated ranks", "",
             f"`railgauge tune rxwin --model {model} --pattern PATTERN -n "
             f"{res['rxwin_ranks']} --emit mvapich2|ucx` on the model of this run's gauge "
             "(its default grid of W_init, W_max and RNR timers, and fixed lengths from 4 up). "
             "MVAPICH2's SRQ settings carry the adaptive window chosen (its SRQ can also be "
             "held fixed, SIZE = MAX_SIZE: every configuration is one of its settings); "
             "UCX's queue does not grow and works from 4 entries, so the configurations it "
             "can be set to are the fixed lengths >= 4, and its setting is the one chosen "
             "among them. The emitted settings are simulated again as the stack takes them. "
             "'Reaches the best time': within the tuner's tolerance of the fastest "
             "configuration simulated; the least memory is over the configurations the stack "
             "can be set to that reach it (the least over all of them beside it).", "",
             "| pattern | stack | emitted | time / best | mean memory (KiB) | least memory "
             "reaching the best, the stack's (KiB) | least of all (KiB) | memory / least "
             "| verdict |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    verdicts = []
    for pat, d in rx.items():
        best, tol = d["best_time_s"], d["tolerance"]
        fixed_ok = [c for c in d["fixed"] if int(c["window"].split(":")[1]) >= 4]
        for stack, configs in (("mvapich2", d["grid"] + d["fixed"]), ("ucx", fixed_ok)):
            e = d[stack]
            reach = [c for c in configs if c["time_s"] <= best * (1 + tol)]
            every = [c for c in d["grid"] + d["fixed"] if c["time_s"] <= best * (1 + tol)]
            least = min([c["mem_mean"] for c in reach] or [float("nan")])
            ok = bool(reach) and e["time_s"] <= best * (1 + tol) and \
                e["mem_mean"] <= 1.10 * least
            verdicts.append(ok)
            lines.append(f"| {pat} | {stack} | {e['window']} | {e['time_s'] / best:.3f} | "
                         f"{e['mem_mean'] / 1024:.1f} | {least / 1024:.1f} | "
                         f"{min(c['mem_mean'] for c in every) / 1024:.1f} | "
                         f"{e['mem_mean'] / least:.3f} | {'PASS' if ok else '**FAIL**'} |")
    lines += ["", "Receive-queue target: the emitted settings reach the simulator's best time "
              "with memory within 10% of the least among the configurations that reach it: "
              + ("PASS" if all(verdicts) else
                 f"not met ({sum(verdicts)} of {len(verdicts)})") + "."]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-P", "--ranks", default="2,4,8")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--over-rounds", type=int, default=3,
                    help="Rounds that also run the oversubscribed P (reported, not judged).")
    ap.add_argument("--over-iterations", type=int, default=200,
                    help="Barriers per run where P is above the CPUs (each may take ms).")
    ap.add_argument("--rxwin-ranks", type=int, default=1024,
                    help="Simulated ranks of the receive-queue part (0: skip it).")
    ap.add_argument("--raw-dir", type=Path, default=RAW)
    ap.add_argument("--from", dest="from_dir", type=Path, default=None,
                    help="Render the section from this raw folder's results.json.")
    ap.add_argument("--section", default="stacks",
                    help="The section of docs/BENCHMARKS.md (stacks-16 from a 16-core box).")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if min(args.rounds, args.iterations, args.over_rounds, args.over_iterations) < 1:
        ap.error("--rounds, --iterations, --over-rounds and --over-iterations must be >= 1")
    raw = args.from_dir or args.raw_dir
    raw.mkdir(parents=True, exist_ok=True)
    command = "python3 bench/stacks_bench.py " + shlex.join(sys.argv[1:])
    if args.from_dir is None:
        facts = machine_facts(None)
        facts["loadavg_start"] = list(os.getloadavg())
        try:
            res = measure(args, raw)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            log(str(exc))
            return 1
        facts["loadavg_end"] = list(os.getloadavg())
        res.update(facts=facts, command=command)
        (raw / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    else:
        res = json.loads((raw / "results.json").read_text())
    emit_section(DOC, args.section, render(res, res["facts"], res["command"], args.section, raw),
                 args.no_write, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
