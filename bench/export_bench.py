#!/usr/bin/env python3
"""The exports of issue 20 proven against the simulators they feed, one run per transport.

Per transport (shm, tcp, and mpi under Open MPI where ``mpirun.openmpi`` is installed) the
script:

1. measures with the default gauge, ``railgauge gauge --no-onen --no-barrier`` (two sizes
   per octave and the refinement around the changes, 1 B .. 1 MiB, PRTT only), the run whose
   model a user exports;
2. exports to SimGrid (``railgauge export --to simgrid --hosts 2 --json``) and runs
   native/tools/smpi/prtt_smpi.c, built with ``smpicc``, under ``smpirun`` with the export
   and with SimGrid's defaults (the same platform file and hostfile, no ``--cfg`` of the
   export: SimGrid's own factors, no overheads, no rendezvous switch), each PRTT(n,d,s)
   with the delay d the gauge used; the relative errors of PRTT(1,0,s), PRTT(n,0,s) and
   PRTT(n,d,s) against the gauge's own measured points of the same run (their
   interquartile means, as the fit takes them);
3. runs the dissemination barrier and the pairwise alltoall at P = 64 under SMPI
   (native/tools/smpi/coll_smpi.c, algorithms pinned: ``smpi/barrier:ompi_bruck``,
   ``smpi/alltoall:pair``; the export with ``--hosts 64``) against ``railgauge sim`` on the
   same model (the barrier generated, the alltoall as GOAL);
4. with ``--loggopsim DIR`` (a folder holding LogGOPSim's ``txt2bin`` and ``LogGOPSim``,
   built by you from its public repository; this script never builds it): runs LogGOPSim
   with the flags of ``railgauge export --to loggopsim --size S`` on GOAL schedules at
   P = 64 (a dissemination barrier of 1 B messages, pairwise alltoalls of 1 KiB and
   128 KiB) against ``railgauge sim goal`` with the same range's parameters unrounded.

    RG_NATIVE_DIR=$PWD/build/native PYTHONPATH=python .venv/bin/python \\
        bench/export_bench.py --loggopsim ~/src/LogGOPSim/src/LogGOPSim

writes the section ``export`` of docs/BENCHMARKS.md (``--no-write``: print it) and the raw
results to ``--raw`` (default docs/data/export.json); ``--from FILE`` rewrites the section
from a kept raw file. Targets (issue 20): PRTT(1,0,s) and PRTT(n,d,s) median relative error
<= 5% and p90 <= 10%; the collectives within 10%; LogGOPSim and ``railgauge sim`` equal up
to the rounding of LogGOPSim's integer parameters.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shlex
import shutil
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import (
    BUILD,
    REPO,
    BenchError,
    emit_section,
    facts_md,
    find_railgauge,
    machine_facts,
    run_proc,
)
from railgauge.sim import pairwise_alltoall_goal
from sim_goal_bench import write_dissemination

DOC = REPO / "docs" / "BENCHMARKS.md"
RAW = REPO / "docs" / "data" / "export.json"
SMPI_SRC = REPO / "native" / "tools" / "smpi"
#: Options of the proof, not of the export (as in tests/test_export_simgrid.py): the
#: program's own computation is left out of the simulated time.
PROOF_CFG = ["--cfg=smpi/simulate-computation:no", "--cfg=smpi/wtime:0"]
COLL_CFG = ["--cfg=smpi/barrier:ompi_bruck", "--cfg=smpi/alltoall:pair"]
COLL_P = 64
COLLECTIVES: tuple[tuple[str, int], ...] = (("barrier", 0), ("alltoall", 8),
                                            ("alltoall", 1024))
#: LogGOPSim's schedules: (name, message size in bytes).
LGS_SCHEDULES: tuple[tuple[str, int], ...] = (("dissemination", 1), ("alltoall", 1024),
                                              ("alltoall", 131072))
GAUGE_ARGS = ["--no-onen", "--no-barrier"]
MEDIAN_TARGET, P90_TARGET, COLL_TARGET = 0.05, 0.10, 0.10
NO_SWITCH = 2**31 - 1
UNIT_US = {"ns": 1e-3, "ps": 1e-6}
LGS_KEYS = (("-L", "L"), ("-o", "o"), ("-g", "g"), ("-G", "G"), ("-O", "O"))


def log(msg: str) -> None:
    print(f"[export] {msg}", file=sys.stderr, flush=True)


class Runner:
    """railgauge's command line and the environment its children get."""

    def __init__(self, railgauge: list[str], env: dict[str, str]) -> None:
        self.railgauge = railgauge
        self.env = env

    def run(self, argv: list[str], *, timeout: float, what: str) -> str:
        res = run_proc(argv, timeout=timeout, env=self.env)
        if res.rc != 0 or res.timed_out:
            raise BenchError(f"{what}: {res.describe()}")
        return res.stdout

    def rg(self, args: list[str], *, timeout: float = 300.0) -> str:
        return self.run([*self.railgauge, *args], timeout=timeout, what=f"railgauge {args[0]}")

    def rg_json(self, args: list[str], *, timeout: float = 300.0) -> dict[str, Any]:
        out = self.rg(args, timeout=timeout)
        doc: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return doc


# ----------------------------------------------------------------------------------------
# Measured points, errors
# ----------------------------------------------------------------------------------------


def measured_points(path: Path) -> dict[str, dict[str, float]]:
    """The gauge's PRTT points, keyed "n/delayed/s": {"us": iqm (else median), "d_us"}."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if rec.get("type") != "prtt":
            continue
        t = rec.get("iqm_us") or rec.get("median_us")
        if t is None:
            continue
        key = point_key(int(rec["n"]), float(rec["d_us"]) > 0.0, int(rec["s"]))
        out[key] = {"us": float(t), "d_us": float(rec["d_us"])}
    return out


def point_key(n: int, delayed: bool, s: int) -> str:
    return f"{n}/{int(delayed)}/{s}"


def pattern(n: int, delayed: bool) -> str:
    return "p1" if n == 1 else ("pnd" if delayed else "pn0")


def quantile(xs: list[float], q: float) -> float:
    if not xs:
        return math.nan
    ys = sorted(xs)
    pos = q * (len(ys) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ys) - 1)
    return ys[lo] + (ys[hi] - ys[lo]) * (pos - lo)


def errors(points: list[dict[str, Any]], key: str) -> dict[str, dict[str, float]]:
    """Per pattern: median and p90 of |points[key] - measured| / measured, and the count."""
    out: dict[str, dict[str, float]] = {}
    for pat in ("p1", "pn0", "pnd"):
        rel = [abs(p[key] - p["measured_us"]) / p["measured_us"] for p in points
               if p["pattern"] == pat and p.get(key) is not None and p["measured_us"] > 0]
        out[pat] = {"median": statistics.median(rel) if rel else math.nan,
                    "p90": quantile(rel, 0.9), "count": len(rel)}
    return out


# ----------------------------------------------------------------------------------------
# Steps
# ----------------------------------------------------------------------------------------


def smpicc(src: str, dest: Path, runner: Runner) -> Path:
    exe = dest / src
    runner.run(["smpicc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra",
                "-Werror", "-O2", "-o", str(exe), str(SMPI_SRC / f"{src}.c")],
               timeout=180, what=f"smpicc {src}.c")
    return exe


def smpi_prtt(runner: Runner, exe: Path, args: list[str], n: int,
              sizes: list[str]) -> dict[str, float]:
    out = runner.run(["smpirun", "-np", "2", *args, *PROOF_CFG, str(exe), "-n", str(n),
                      "-r", "1", *sizes], timeout=600, what="smpirun prtt_smpi")
    res: dict[str, float] = {}
    for line in out.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            res[point_key(int(rec["n"]), float(rec["d_us"]) > 0.0, int(rec["s"]))] = \
                float(rec["us"])
    return res


def rendezvous_of(args: list[str]) -> int | None:
    for a in args:
        if a.startswith("--cfg=smpi/async-small-thresh:"):
            v = int(a.rsplit(":", 1)[1])
            return None if v >= NO_SWITCH else v
    return None


def prtt_step(runner: Runner, report: Path, work: Path, exe: Path) -> dict[str, Any]:
    """SMPI's PRTT with the export and with SimGrid's defaults against the gauge's points."""
    from railgauge.fit.model import prtt

    model = json.loads((report / "model-loggp.json").read_text(encoding="utf-8"))
    meas = measured_points(report / "measurements.jsonl")
    exp = runner.rg_json(["export", "--to", "simgrid", str(report), "--out",
                          str(work / "simgrid-2"), "--hosts", "2", "--json"])
    args = [str(a) for a in exp["smpirun_args"]]
    trains = Counter(int(k.split("/")[0]) for k in meas if not k.startswith("1/"))
    n = trains.most_common(1)[0][0] if trains else 16
    sizes = sorted({int(k.split("/")[2]) for k in meas})
    spec = []
    for s in sizes:
        pd = meas.get(point_key(n, True, s))
        spec.append(f"{s}@{pd['d_us']!r}" if pd else str(s))
    exported = smpi_prtt(runner, exe, args, n, spec)
    default = smpi_prtt(runner, exe, args[:4], n, spec)
    points = []
    for key, m in sorted(meas.items(), key=lambda kv: [int(x) for x in kv[0].split("/")]):
        nn, delayed, s = (int(x) for x in key.split("/"))
        if nn not in (1, n) or key not in exported:
            continue
        points.append({"n": nn, "s": s, "d_us": m["d_us"], "pattern": pattern(nn, bool(delayed)),
                       "measured_us": m["us"], "smpi_export_us": exported[key],
                       "smpi_default_us": default.get(key),
                       "model_us": float(prtt(model, nn, m["d_us"], s))})
    return {"n": n, "sizes": sizes, "smpirun_args": args, "rendezvous": rendezvous_of(args),
            "ranges": [r["from_bytes"] for r in model["ranges"]], "points": points,
            "errors": {k: errors(points, k) for k in ("smpi_export_us", "smpi_default_us",
                                                      "model_us")}}


def one_way(model: Path, s: int) -> dict[str, float]:
    """The one-way time and the gap of s bytes, as the model predicts them (PRTT(1,0,s)/2
    and G_all(s), from its pieces: what the SimGrid export carries) and as `railgauge sim
    --model` charges them (L + 2o + (s-1) max(O, G) and g + (s-1) G of its parameter set
    for s, railgauge.fit.simview)."""
    from railgauge.fit.model import g_all, load_loggp_model, prtt
    from railgauge.fit.simview import sim_sets

    fit = load_loggp_model(model)
    sets = sim_sets(fit)
    ss = next((x for x in sets if s <= x.to_bytes), sets[-1])
    return {"one_way_model_us": float(prtt(fit, 1, 0, s)) / 2,
            "one_way_sim_us": ss.L + 2 * ss.o + (s - 1) * max(ss.O, ss.G),
            "gap_model_us": float(g_all(fit, s)), "gap_sim_us": ss.g + (s - 1) * ss.G,
            "cpu_extra_us": max(0.0, (s - 1) * ss.O - ss.L)}


def coll_step(runner: Runner, report: Path, work: Path, exe: Path) -> list[dict[str, Any]]:
    exp = runner.rg_json(["export", "--to", "simgrid", str(report), "--out",
                          str(work / f"simgrid-{COLL_P}"), "--hosts", str(COLL_P), "--json"])
    args = [str(a) for a in exp["smpirun_args"]]
    rdv = rendezvous_of(args)
    s_flag = ["--S", str(rdv - 1)] if rdv is not None else []
    model = str(report / "model-loggp.json")
    rows = []
    for op, size in COLLECTIVES:
        out = runner.run(["smpirun", "-np", str(COLL_P), *args, *PROOF_CFG, *COLL_CFG,
                          str(exe), op, *([str(size)] if op == "alltoall" else [])],
                         timeout=600, what=f"smpirun coll_smpi {op}")
        smpi = float(json.loads(out.strip().splitlines()[-1])["makespan_us"])
        if op == "barrier":
            sim_args = ["barrier", "--algorithm", "dissemination", "-P", str(COLL_P)]
        else:
            goal = work / f"alltoall-{COLL_P}-{size}.goal"
            goal.write_text(pairwise_alltoall_goal(COLL_P, size), encoding="utf-8")
            sim_args = ["goal", str(goal)]
        sim = runner.rg_json(["sim", *sim_args, "--model", model, *s_flag, "--json"])
        rows.append({"op": op, "s": size, "smpi_us": smpi, "sim_us": float(sim["makespan_us"]),
                     **one_way(Path(model), max(size, 1)),
                     "platform": "star" if "<cluster" in
                     Path(exp["platform"]).read_text(encoding="utf-8") else "one host"})
    return rows


def lgs_step(runner: Runner, report: Path, work: Path, lgs: Path) -> list[dict[str, Any]]:
    """LogGOPSim with the exported flags against railgauge sim with the same parameter set
    unrounded (the export's values_us)."""
    from railgauge.fit.model import load_loggp_model
    from railgauge.fit.simview import sim_sets

    fit = load_loggp_model(report / "model-loggp.json")
    rows = []
    for name, size in LGS_SCHEDULES:
        goal = work / f"lgs-{name}-{COLL_P}-{size}.goal"
        if name == "dissemination":
            write_dissemination(goal, COLL_P)  # 1 B messages, as section sim's
        else:
            goal.write_text(pairwise_alltoall_goal(COLL_P, size), encoding="utf-8")
        binfile = goal.with_suffix(".bin")
        runner.run([str(lgs / "txt2bin"), "-i", str(goal), "-o", str(binfile)], timeout=300,
                   what="txt2bin")
        doc = runner.rg_json(["export", "--to", "loggopsim", str(report), "--size", str(size),
                              "--json"])
        flags = [str(f) for f in doc["flags"]]
        out = runner.run([str(lgs / "LogGOPSim"), "-f", str(binfile), *flags, "-b"],
                         timeout=600, what="LogGOPSim")
        mk = re.search(r"Maximum finishing time at host \d+:\s*([0-9.eE+-]+)", out)
        if mk is None:
            raise BenchError(f"LogGOPSim printed no makespan: {out[-400:]}")
        per = UNIT_US[doc["units"]]
        values = {key: float(doc["values_us"][key]) for _, key in LGS_KEYS}
        sim_flags: list[str] = []
        rounding = 0.0
        for flag, key in LGS_KEYS:
            v = values[key]
            sim_flags += [f"--{flag[1:]}", repr(v)]
            if v > 0:
                rounding = max(rounding, abs(round(v / per) * per - v) / v)
        if doc["S_bytes"] < NO_SWITCH:
            sim_flags += ["--S", str(doc["S_bytes"])]
        sim = runner.rg_json(["sim", "goal", str(goal), *sim_flags, "--json"])
        binfile.unlink(missing_ok=True)
        rows.append({"schedule": name, "s": size, "flags": flags, "units": doc["units"],
                     "range_from": doc["set"]["from_bytes"], "ranges": len(sim_sets(fit)),
                     "lgs_us": float(mk.group(1)) * per, "sim_us": float(sim["makespan_us"]),
                     "rounding": rounding})
    return rows


def transports_here(asked: str | None) -> list[str]:
    if asked:
        return [t.strip() for t in asked.split(",") if t.strip()]
    return ["shm", "tcp"] + (["mpi"] if shutil.which("mpirun.openmpi") else [])


def measure(args: argparse.Namespace, runner: Runner, work: Path) -> dict[str, Any]:
    bindir = work / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    prtt_exe = smpicc("prtt_smpi", bindir, runner)
    coll_exe = smpicc("coll_smpi", bindir, runner)
    simgrid = runner.run(["smpirun", "-version"], timeout=60, what="smpirun -version")
    rows: dict[str, dict[str, Any]] = {}
    for t in transports_here(args.transports):
        row: dict[str, Any] = {"transport": t}
        rows[t] = row
        tdir = work / t
        report = tdir / "gauge"
        tdir.mkdir(parents=True, exist_ok=True)
        gauge = ["gauge", "--transport", t, *GAUGE_ARGS, "--out", str(report)]
        if t == "mpi":
            gauge += ["--launcher", "mpirun"]
        row["gauge_args"] = gauge
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("gauge", partial(runner.rg, gauge, timeout=900)),
            ("prtt", partial(prtt_step, runner, report, tdir, prtt_exe)),
            ("coll", partial(coll_step, runner, report, tdir, coll_exe)),
        ]
        if args.loggopsim is not None:
            steps.append(("lgs", partial(lgs_step, runner, report, tdir, args.loggopsim)))
        for name, step in steps:
            log(f"{t}: {name}")
            try:
                result = step()
            except (BenchError, OSError, ValueError, KeyError) as exc:
                row.setdefault("failed", {})[name] = str(exc)[-1500:]
                log(f"{t}: {name} failed: {exc}")
                if name == "gauge":
                    break
                continue
            if name != "gauge":
                row[name] = result
    return {"simgrid": " ".join(simgrid.split())[:200], "rows": rows,
            "loggopsim": str(args.loggopsim) if args.loggopsim else None}


# ----------------------------------------------------------------------------------------
# The section
# ----------------------------------------------------------------------------------------

PATTERNS = (("p1", "PRTT(1,0,s)"), ("pn0", "PRTT(n,0,s)"), ("pnd", "PRTT(n,d,s)"))


def pct(v: float) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{100.0 * v:.1f}%"


def mp(e: dict[str, float]) -> str:
    return f"{pct(e['median'])} / {pct(e['p90'])}"


def prtt_lines(rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["### SMPI with the export against the gauge's own measurement", "",
             "Relative error |SMPI - measured| / measured over the gauge's sizes, median / "
             "p90; the measured value of a point is its interquartile mean (what the fit "
             "takes). \"defaults\": the same platform and hostfile (whose links carry the "
             "model's L and per-byte time), none of the export's `--cfg`: SimGrid's own "
             "lat/bw factors and eager/rendezvous thresholds, no overheads o_s(s), o_r(s). "
             "\"model\": the fitted model's own prediction, which the export carries: "
             "SMPI cannot be closer to the measurement than the model it is given.", "",
             "| transport | sizes, n | ranges (from B) | rendezvous at | pattern | SMPI, export "
             "| SMPI, defaults | model |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for t, row in rows.items():
        p = row.get("prtt")
        if p is None:
            lines.append(not_measured(t, row, "prtt", 8))
            continue
        e = p["errors"]
        for i, (pat, label) in enumerate(PATTERNS):
            head = [t, f"{len(p['sizes'])} ({p['sizes'][0]} B .. {p['sizes'][-1]:,} B), "
                    f"n = {p['n']}", ", ".join(str(r) for r in p["ranges"]),
                    f"{p['rendezvous']:,} B" if p["rendezvous"] else "none (all eager)"] \
                if i == 0 else ["", "", "", ""]
            lines.append("| " + " | ".join([*head, label, mp(e["smpi_export_us"][pat]),
                                            mp(e["smpi_default_us"][pat]),
                                            mp(e["model_us"][pat])]) + " |")
    lines.append("")
    for t, row in rows.items():
        p = row.get("prtt")
        if p is None:
            continue
        for pat, label in (("p1", "PRTT(1,0,s)"), ("pnd", "PRTT(n,d,s)")):
            e = p["errors"]["smpi_export_us"][pat]
            ok = e["median"] <= MEDIAN_TARGET and e["p90"] <= P90_TARGET
            line = (f"- {t}, {label}: median <= 5% and p90 <= 10%: **{'PASS' if ok else 'FAIL'}**"
                    f" (median {pct(e['median'])}, p90 {pct(e['p90'])}")
            m = p["errors"]["model_us"][pat]
            line += f"; the model's own: {pct(m['median'])}, {pct(m['p90'])})"
            if not ok and abs(e["median"] - m["median"]) <= 0.01 and \
                    abs(e["p90"] - m["p90"]) <= 0.02:
                line += (": SMPI carries the model, the error is the fitted model's own "
                         "against this gauge's points")
            line += "."
            lines.append(line)
        off = [q for q in p["points"] if q["pattern"] == "p1"
               and abs(q["smpi_export_us"] - q["model_us"]) > 0.02 * q["model_us"]]
        if off:
            lines.append(f"- {t}, PRTT(1,0,s): SMPI departs from the model it was given by "
                         f"more than 2% at {len(off)} of {len(p['sizes'])} sizes: "
                         + ", ".join(f"{q['s']:,} B ({q['smpi_export_us']:.2f} against "
                                     f"{q['model_us']:.2f} us)" for q in off)
                         + ": the export does not carry the model there (a fault of the "
                           "export or of SMPI's reading of it), not the model's own error.")
        e = p["errors"]["smpi_export_us"]["pn0"]
        lines.append(f"- {t}, PRTT(n,0,s): reported, no target (median {pct(e['median'])}, p90 "
                     f"{pct(e['p90'])}): SMPI has no per-message gap g; a train of back-to-back "
                     "messages costs the busier end's overhead max(o_s(s), o_r(s)) a message "
                     "and the messages in flight share the link, where LogGP charges "
                     "g + (s-1) G.")
    return lines


def not_measured(t: str, row: dict[str, Any], step: str, columns: int) -> str:
    """A table row saying why a step has no figures (its error, or the gauge's)."""
    failed = row.get("failed", {})
    msg = failed.get(step) or failed.get("gauge") or "step not run"
    why = " ".join(str(msg).split())[:300].replace("|", "\\|")
    return f"| {t} | not measured: {why} |" + " |" * (columns - 2)


#: How far railgauge sim's one-way time (its LogGOPS set's) may be from the model's for a
#: difference to count as explained by the engines' models.
COLL_FORMS = 0.05


def coll_expected(c: dict[str, Any]) -> float:
    """SMPI's makespan over railgauge sim's that the two simulators' own models give, were
    both exact on the model. A step of the pairwise alltoall (one message out, one in)
    costs SMPI the one-way time: it has no per-message gap g, and a rank's send overhead
    overlaps the message coming in. LogGOPS charges the larger of the gap G_all(s) and the
    one-way time plus ``cpu_extra_us``: a rank's CPU does its own send, o + (s-1) O, before
    the receive of its partner's message, whose head arrives after o + L, so where (s-1) O
    > L the step is longer by the difference. A dissemination round sends one message, so
    neither binds there. railgauge sim's own one-way time and gap are those of its
    parameter set (``one_way_sim_us``, ``gap_sim_us``), within COLL_FORMS of the model's
    where this may explain a difference."""
    if c["op"] != "alltoall":
        return 1.0
    # SMPI carries the model's one-way time; railgauge sim charges its parameter set's,
    # which may differ from it by a little within a piece (the column "one-way").
    sim_one = c.get("one_way_sim_us", c["one_way_model_us"])
    sim_gap = c.get("gap_sim_us", c["gap_model_us"])
    return c["one_way_model_us"] / max(sim_one + float(c.get("cpu_extra_us", 0.0)), sim_gap)


def coll_lines(rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["### Collectives at P = 64: SMPI against `railgauge sim` on the same model", "",
             f"`coll_smpi` under `smpirun -np {COLL_P}` on the export with `--hosts {COLL_P}` "
             "(SMPI's `ompi_bruck` barrier, the dissemination; its `pair` alltoall, step i "
             "with rank XOR i), against `railgauge sim barrier --algorithm dissemination` and "
             "`railgauge sim goal` on the same exchange written as GOAL, both with the "
             "gauge's model-loggp.json (`--S` from the export's rendezvous switch). A model "
             "measured within one host gives a one-host platform (every rank on it, the "
             "loopback a FATPIPE); a network model a star, one rank a host.", "",
             "Both simulators take the model's predictions: the export its pieces as SMPI's "
             "piecewise overheads and factors, `railgauge sim` one LogGOPS parameter set per "
             "piece (railgauge.fit.simview, docs/sim.md), so that its one-way time L + 2o + "
             "(s-1) max(O, G) and gap g + (s-1) G are the model's PRTT(1,0,s)/2 and G_all(s) "
             "(the columns \"one-way\" and \"gap\": the model's / railgauge sim's). Their own "
             "models still differ where a gap binds: SMPI has no per-message gap g, so a step "
             "of the pairwise alltoall costs it the one-way time, LogGOPS the larger of the "
             "one-way time and G_all(s); and a rank's CPU does its own send, o + (s-1) O, "
             "before it receives its partner's message, whose head arrives after o + L, so "
             "where (s-1) O "
             "> L LogGOPS adds the difference to a step, where SMPI overlaps them (the column "
             "\"CPU\"). \"expected\" is the ratio SMPI / sim that these alone give, with SMPI "
             "charging the model's one-way time and railgauge sim its set's (1 where neither "
             "binds and the two agree); a difference counts as explained when the ratio is "
             "within 10% of it and the set's one-way time within 5% of the model's.", "",
             "| transport | platform | collective | SMPI (us) | railgauge sim (us) | SMPI / "
             "sim | expected | one-way (us) | gap G_all(s) (us) | CPU (us) | verdict |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |"]
    verdicts: list[tuple[str, str, float, str]] = []
    for t, row in rows.items():
        if row.get("coll") is None:
            lines.append(not_measured(t, row, "coll", 11))
            continue
        for c in row["coll"]:
            ratio = c["smpi_us"] / c["sim_us"]
            exp = coll_expected(c)
            forms = abs(c["one_way_sim_us"] / c["one_way_model_us"] - 1)
            if abs(ratio - 1) <= COLL_TARGET:
                verdict = "PASS (within 10%)"
            elif abs(ratio / exp - 1) <= COLL_TARGET and forms <= COLL_FORMS:
                binds = ("the gap" if c["gap_sim_us"] > c["one_way_sim_us"]
                         + float(c.get("cpu_extra_us", 0.0)) else "the CPU")
                verdict = f"PASS ({binds}, expected)"
            else:
                verdict = "FAIL"
            what = "barrier" if c["op"] == "barrier" else f"alltoall {c['s']:,} B"
            lines.append(f"| {t} | {c['platform']} | {what} | {c['smpi_us']:.3f} | "
                         f"{c['sim_us']:.3f} | {ratio:.3f} | {exp:.3f} | "
                         f"{c['one_way_model_us']:.3f} / {c['one_way_sim_us']:.3f} | "
                         f"{c['gap_model_us']:.3f} / {c['gap_sim_us']:.3f} | "
                         f"{float(c.get('cpu_extra_us', 0.0)):.3f} | {verdict} |")
            verdicts.append((t, what, ratio, verdict))
    lines.append("")
    if verdicts:
        within = [v for v in verdicts if v[3].endswith("(within 10%)")]
        gap = [v for v in verdicts if v[3].endswith(", expected)")]
        bad = [v for v in verdicts if v[3] == "FAIL"]
        lines.append(
            "- Target SMPI within 10% of `railgauge sim`, or the reason they differ stated: "
            f"**{'PASS' if not bad else 'FAIL'}** ({len(within)} of {len(verdicts)} within "
            f"10%; {len(gap)} apart by where the two engines' models differ, SMPI's "
            "missing per-message gap or LogGOPS's one CPU for a send and a receive, and by no "
            "more than 10% beyond it"
            + (": " + ", ".join(f"{t} {w} (SMPI / sim {r:.3f})" for t, w, r, _ in gap)
               if gap else "")
            + (f"; not explained: {', '.join(f'{t} {w} ({r:.3f})' for t, w, r, _ in bad)}"
               if bad else "") + ").")
        if any(v[3].startswith("PASS (the gap") for v in verdicts):
            lines.append(
                "- Where a gap binds, the measurement sides with LogGOPS: G_all(s) is what a "
                "train of back-to-back messages of s bytes cost each in the gauge's own "
                "PRTT(n,0,s), so a rank that sends one message a step cannot step faster; "
                "SMPI's PRTT(n,0,s) misses the same term (section above).")
    return lines


def lgs_lines(rows: dict[str, dict[str, Any]], lgs: str | None) -> list[str]:
    lines = ["### LogGOPSim with the exported flags against `railgauge sim`", ""]
    if lgs is None:
        return [*lines, "LogGOPSim was not given (`--loggopsim DIR`): not measured."]
    lines += ["LogGOPSim (github.com/spcl/LogGOPSim, built in a scratch folder) on GOAL "
              f"schedules at P = {COLL_P} (`txt2bin`, then `LogGOPSim -f F.bin FLAGS -b`) "
              "with the flags of `railgauge export --to loggopsim REPORT --size S` (S the "
              "schedule's message size: the model's parameter set that holds it, one a piece, "
              "railgauge.fit.simview), against `railgauge sim goal` with that set's "
              "parameters unrounded (the export's `values_us`; us). Bound: the largest "
              "relative rounding of a parameter to LogGOPSim's integer unit; a makespan "
              "is a sum of parameters, so it moves by at most that much.", "",
              "| transport | schedule | set (from B) of sets | flags | LogGOPSim (us) | "
              "railgauge sim (us) | difference | bound | verdict |",
              "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    total = bad = 0
    for t, row in rows.items():
        if row.get("lgs") is None:
            lines.append(not_measured(t, row, "lgs", 9))
            continue
        for r in row["lgs"]:
            diff = (r["lgs_us"] - r["sim_us"]) / r["sim_us"]
            ok = abs(diff) <= r["rounding"] + 1e-6
            total += 1
            bad += not ok
            what = ("dissemination barrier" if r["schedule"] == "dissemination"
                    else "pairwise alltoall") + f", {r['s']:,} B"
            lines.append(f"| {t} | {what} | {r['range_from']} of {r['ranges']} | "
                         f"`{' '.join(r['flags'])}` ({r['units']}) | {r['lgs_us']:.4f} | "
                         f"{r['sim_us']:.4f} | {100 * diff:+.4f}% | "
                         f"{100 * r['rounding']:.4f}% | {'PASS' if ok else 'FAIL'} |")
    lines.append("")
    if total:
        lines.append(f"- Target identical up to the rounding of the integer parameters: "
                     f"**{'PASS' if not bad else 'FAIL'}** ({total - bad} of {total} "
                     "within their bound).")
    return lines


def section(raw: dict[str, Any]) -> str:
    facts = raw["facts"]
    lines = ["## Exports run in the simulators they feed (export)", "",
             "`bench/export_bench.py`: per transport the default gauge (`railgauge gauge "
             f"{' '.join(GAUGE_ARGS)}`: two sizes per octave and the refinement around its "
             "changes, 1 B .. 1 MiB, PRTT only), then the SimGrid export under "
             "`smpirun` (native/tools/smpi/prtt_smpi.c and coll_smpi.c, built with `smpicc`; "
             "`smpi/simulate-computation:no`, `smpi/wtime:0`: the program's own computation "
             f"left out) and the LogGOPSim export. SimGrid: {raw.get('simgrid', '?')}.", ""]
    lines += facts_md(facts, raw["command"], Path(raw.get("raw_path", str(RAW))))
    lines.append("")
    rows = raw["rows"]
    lines += [*prtt_lines(rows), "", *coll_lines(rows), "",
              *lgs_lines(rows, raw["loggopsim"])]
    return "\n".join(lines)


def this_checkout() -> tuple[list[str], dict[str, str]] | None:
    """The CLI of this checkout (python/), whose exports are the ones measured, ahead of an
    installed railgauge that may be older; else the one harness finds."""
    if not (REPO / "python" / "railgauge" / "cli" / "export.py").is_file():
        return find_railgauge(None)
    old = os.environ.get("PYTHONPATH")
    pypath = str(REPO / "python") + (os.pathsep + old if old else "")
    return [sys.executable, "-m", "railgauge.cli.main"], {"PYTHONPATH": pypath}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transports", default=None,
                    help="comma-separated (default: shm,tcp and mpi where Open MPI is installed)")
    ap.add_argument("--loggopsim", type=Path, default=None,
                    help="folder with LogGOPSim's txt2bin and LogGOPSim, built by you")
    ap.add_argument("--railgauge", default=None,
                    help="railgauge command (default: this checkout's, python -m)")
    ap.add_argument("--work", type=Path, default=None,
                    help="where gauge reports and exports go (default build/bench/export-<time>)")
    ap.add_argument("--raw", type=Path, default=RAW)
    ap.add_argument("--from", dest="from_file", type=Path, default=None,
                    help="write the section from a kept --raw file instead of measuring")
    ap.add_argument("--out", type=Path, default=DOC)
    ap.add_argument("--no-write", action="store_true", help="print the section instead")
    args = ap.parse_args(argv)
    if args.from_file is not None:
        raw = json.loads(args.from_file.read_text())
        emit_section(args.out, "export", section(raw), args.no_write, log)
        return 0
    for tool in ("smpicc", "smpirun"):
        if shutil.which(tool) is None:
            log(f"{tool} not found: SimGrid is needed (Debian: apt-get install libsimgrid-dev)")
            return 2
    if args.loggopsim is not None and not all(
            (args.loggopsim / n).is_file() for n in ("txt2bin", "LogGOPSim")):
        log(f"--loggopsim {args.loggopsim}: no txt2bin and LogGOPSim there")
        return 2
    found = this_checkout() if args.railgauge is None else find_railgauge(args.railgauge)
    if found is None:
        log("railgauge not found (give --railgauge)")
        return 2
    env = {**os.environ, **found[1], "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    native = REPO / "build" / "native"
    if "RG_NATIVE_DIR" not in env and native.is_dir():
        env["RG_NATIVE_DIR"] = str(native)
    sys.path.insert(0, str(REPO / "python"))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    work = args.work or BUILD / f"export-{stamp}"
    work.mkdir(parents=True, exist_ok=True)
    facts = machine_facts(None)
    try:
        raw = measure(args, Runner(found[0], env), work)
    except BenchError as exc:
        log(str(exc))
        return 1
    facts["loadavg_end"] = os.getloadavg()
    raw["facts"] = facts
    raw["command"] = "python3 bench/export_bench.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    raw["raw_path"] = str(args.raw)
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    args.raw.write_text(json.dumps(raw, indent=1) + "\n")
    log(f"raw results in {args.raw}; reports and exports in {work}")
    emit_section(args.out, "export", section(raw), args.no_write, log)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
