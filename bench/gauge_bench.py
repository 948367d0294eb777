#!/usr/bin/env python3
"""The LogGP model of ``railgauge gauge`` across runs (issue 18's targets): how well the
model of one run predicts the next run's measurements, beside how well the next run's
measurements agree with this run's; whether every run finds the same protocol changes; how
much each parameter moves between runs; how many runs have every range reliable; and the
wall time, for each transport (shm, tcp, ofi:tcp, mpi under Open MPI, mpi under MPICH, and
tcp between two hosts of a testbed: ``railgauge testbed up --hosts 2 --rails 1 --rate 1gbit``
before the rounds, ``railgauge testbed down`` after them, root only).

    python3 bench/gauge_bench.py                            # 10 rounds, all five transports
    python3 bench/gauge_bench.py --runs 2 --transports shm,tcp --no-write --raw-dir /tmp/gb
    python3 bench/gauge_bench.py --from /tmp/gb --no-write  # recompute from kept folders
    python3 bench/gauge_bench.py --from /tmp/gb --refit --no-write  # ... with today's fit

Runs are interleaved: round r runs every transport once (in an order that rotates from
round to round), so that slow drifts of the machine fall on all transports alike. A LogGP
run is ``railgauge gauge --transport T --no-onen --no-barrier --out DIR --json`` (the
default gauge without the LoP and barrier parts, which the targets are not about); with shm
among the transports each round also times the default shm gauge (``railgauge gauge --out
DIR --json``, target: the main job <= 30 s). Every run's report folder is kept under
``--raw-dir`` (default build/bench/gauge-<stamp>), with ``runs.json`` (command lines, wall
times, exit statuses, machine facts); ``--from DIR`` recomputes the section from them.

``--blind`` adds the blind-threshold benchmark (issue 18, item 7; subsection "Blind
thresholds" of the section): per stack (Open MPI, MPICH, libfabric, railgauge's own ofi
transport) one protocol threshold moved by its environment variable, ``--blind-runs`` times
(default 10), to values drawn by a seed (``--blind-seed``, else a random one; the draws of
a stack are those of tests/test_blind_thresholds.py for the same seed, the first one
exactly the test's). Each run sweeps a window around its value T (T/4 .. 4T, over ofi at
most 16 KiB), with the same window run first at the default settings
(``--blind-default-runs`` times, default 1); a run found T when a protocol change lies
within one step of the sweep of it, and invented a change when it shows one that is
neither near T nor near a change of the default runs of its window. Target: T found in
>= 9 of 10 runs, none invented. ``--blind-stacks`` picks stacks; the blind runs keep their
folders under ``--raw-dir``/blind and ``--from`` recomputes them too.

    python3 bench/gauge_bench.py --blind --blind-runs 2 --transports shm --runs 1 --no-write
    python3 bench/gauge_bench.py --blind --runs 0 --raw-dir /tmp/gbb   # the blind runs alone
    python3 bench/gauge_bench.py --from /tmp/gb --from /tmp/gbb         # ... in one section

railgauge is the one ``bench/run_bench.py`` finds (beside this Python, on PATH, or the CLI
module of python/), run with this checkout's python/ first on PYTHONPATH, so the code that
measures is the code that analyses (``--railgauge CMD`` runs CMD as it is).

Writes the section ``bench:gauge`` of docs/BENCHMARKS.md (``--section`` another name,
``--no-write`` prints it). Exit status: 0 done, 1 a run failed (the section says which),
2 bad usage or a missing tool. Benchmarks never run in CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from harness import (
    BUILD,
    REPO,
    BenchError,
    Tools,
    _git_commit,
    _on_sigterm,
    emit_section,
    facts_md,
    find_railgauge,
    machine_facts,
    run_proc,
    verdict,
)
from railgauge import blind
from railgauge.fit.accuracy import (
    PointError,
    by_decade,
    judged_records,
    noise,
    point_errors,
    summarize,
)
from railgauge.fit.loggp import load_loggp_model
from railgauge.hoststate import C2C_GAP, C2C_PROBE, STATE_GAP, points_host_state
from railgauge.measurements import Measurements, read_measurements

DOC = REPO / "docs" / "BENCHMARKS.md"

#: --transports name -> (folder name, label, `railgauge gauge` arguments).
TRANSPORTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "shm": ("shm", "shm", ("--transport", "shm")),
    "tcp": ("tcp", "tcp", ("--transport", "tcp")),
    "ofi:tcp": ("ofi-tcp", "ofi:tcp", ("--transport", "ofi:tcp")),
    "mpi-openmpi": ("mpi-openmpi", "mpi under Open MPI",
                    ("--transport", "mpi", "--launcher", "mpirun")),
    "mpi-mpich": ("mpi-mpich", "mpi under MPICH",
                  ("--transport", "mpi", "--launcher", "mpiexec")),
    # Issue 18: "and so does tcp between two `railgauge testbed` hosts (a real network path
    # with a shaped link)": two network namespaces joined by one veth rail shaped by tbf.
    "tcp-testbed": ("tcp-testbed", "tcp between two testbed hosts (1 Gbit/s)",
                    ("--transport", "tcp", "--netns", "testbed")),
}
#: The tool each transport needs beside railgauge.
NEEDS: dict[str, str] = {"mpi-openmpi": "mpirun.openmpi", "mpi-mpich": "mpiexec.mpich",
                         "tcp-testbed": "ip"}
#: The testbed of "tcp-testbed": built before the rounds, removed after them (also when the
#: benchmark is stopped); its ranks find their address on the rail's interface.
TESTBED = "tcp-testbed"
TESTBED_UP = ("testbed", "up", "--hosts", "2", "--rails", "1", "--rate", "1gbit")
TESTBED_ENV = {"RG_TCP_IFACE": "rail0"}
#: The timed default shm gauge (the main job), once per round.
DEFAULT_SHM = "shm-default"
LOGGP_FLAGS = ("--no-onen", "--no-barrier")

# Targets (issue 18).
PRED_MEDIAN_MAX = 0.05
PRED_P90_MAX = 0.12
DECADE_MEDIAN_MAX = 0.10
#: Measured-vs-measured p90 between runs must stay below today's upper bounds.
MVM_P90_BELOW: dict[str, float] = {"shm": 0.13, "tcp": 0.11}
SAME_RANGES_SHARE = 0.9
RELIABLE_SHARE = 0.9
CV_MAX = 0.10
MAIN_JOB_MAX_S = 30.0

#: The parameters whose spread across runs is judged.
PARAMS = ("L_us", "o_us", "g_us", "G_us_per_byte", "o_s_us", "o_r_us")
PARAM_NAMES = {"L_us": "L", "o_us": "o", "g_us": "g", "G_us_per_byte": "G",
               "o_s_us": "o_s", "o_r_us": "o_r"}
N_WORST = 6


class UsageError(Exception):
    """Bad options or a missing tool: exit status 2."""


def log(msg: str) -> None:
    print(f"gauge_bench: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Measuring


def gauge_argv(railgauge: list[str], entry: str, out_dir: Path, extra: list[str]) -> list[str]:
    if entry == DEFAULT_SHM:
        flags: list[str] = []
    else:
        flags = [*TRANSPORTS[entry][2], *LOGGP_FLAGS]
    return [*railgauge, "gauge", *flags, "--out", str(out_dir), "--json", *extra]


def display_argv(entry: str, extra: list[str]) -> str:
    """The command of one run as a reader would type it."""
    cmd = shlex.join(gauge_argv(["railgauge"], entry, Path("DIR"), extra))
    if entry == TESTBED:
        env = " ".join(f"{k}={v}" for k, v in TESTBED_ENV.items())
        cmd = f"{env} {cmd}` on `{shlex.join(['railgauge', *TESTBED_UP])}"
    return cmd


def rel_dir(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def save_index(raw: Path, index: dict[str, Any]) -> None:
    tmp = raw / "runs.json.tmp"
    tmp.write_text(json.dumps(index, indent=1, default=str) + "\n")
    tmp.replace(raw / "runs.json")


def run_kept(argv: list[str], timeout: float, env: dict[str, str],
             out_dir: Path) -> tuple[Any, str | None]:
    """Runs one gauge, keeping its stdout and stderr in out_dir: (the result, None or what
    went wrong)."""
    try:
        res = run_proc(argv, timeout=timeout, env=env)
    except BenchError as exc:
        raise UsageError(str(exc)) from None
    (out_dir / "gauge.stdout").write_text(res.stdout)
    (out_dir / "gauge.stderr").write_text(res.stderr)
    return res, None if res.rc == 0 else res.describe()


def measure(args: argparse.Namespace, railgauge: list[str], env: dict[str, str],
            raw: Path, index: dict[str, Any]) -> bool:
    """Runs the rounds; every run's entry is saved in raw/runs.json as it ends. Returns
    True when every run ended with exit status 0."""
    entries = list(args.transports)
    if "shm" in entries and not args.no_default_shm:
        entries.append(DEFAULT_SHM)
    extra = shlex.split(args.gauge_args)
    if TESTBED not in entries:
        return _rounds(args, railgauge, env, raw, index, entries, extra)
    up = run_proc([*railgauge, *TESTBED_UP], timeout=120, env=env)
    if up.rc != 0:
        raise UsageError(f"railgauge {' '.join(TESTBED_UP)} failed: {up.describe()} "
                         "(a testbed already up? railgauge testbed down)")
    try:
        return _rounds(args, railgauge, env, raw, index, entries, extra)
    finally:
        down = run_proc([*railgauge, "testbed", "down"], timeout=120, env=env)
        if down.rc != 0:
            log(f"railgauge testbed down failed: {down.describe()}")


def _rounds(args: argparse.Namespace, railgauge: list[str], env: dict[str, str], raw: Path,
            index: dict[str, Any], entries: list[str], extra: list[str]) -> bool:
    """The rounds of measure(), the testbed (if any) up."""
    all_ok = True
    for r in range(args.runs):
        order = entries[r % len(entries):] + entries[:r % len(entries)]
        for entry in order:
            folder = TRANSPORTS[entry][0] if entry != DEFAULT_SHM else DEFAULT_SHM
            out_dir = raw / folder / f"run-{r + 1:02d}"
            if out_dir.exists():
                shutil.rmtree(out_dir)
            out_dir.mkdir(parents=True)
            argv = gauge_argv(railgauge, entry, out_dir, extra)
            res, error = run_kept(argv, args.timeout,
                                  {**env, **TESTBED_ENV} if entry == TESTBED else env, out_dir)
            all_ok &= error is None
            index["runs"].append({
                "entry": entry, "round": r + 1, "dir": rel_dir(out_dir, raw),
                "argv": argv, "wall_s": res.wall_s, "rc": res.rc,
                "timed_out": res.timed_out, "error": error,
            })
            save_index(raw, index)
            what = "ok" if error is None else f"FAILED: {error[:300]}"
            log(f"round {r + 1}/{args.runs} {entry}: {res.wall_s:.1f} s, {what}")
    return all_ok


# --------------------------------------------------------------------------------------
# Loading a run


@dataclass
class Run:
    entry: str
    round: int
    dir: Path
    wall_s: float | None
    error: str | None = None
    doc: dict[str, Any] | None = None
    model: Any = None
    meas: Measurements | None = None
    grid: list[int] = field(default_factory=list)
    resolution_us: float | None = None
    #: The host's state the run's points describe: the middle of the band of railgauge-bench's
    #: probes it kept its passes from (railgauge.hoststate.host_state), in µs, and what a
    #: probe measured (PRTT(n,0,1); PRTT(1,0,1) before 2026-11-29).
    state_us: float | None = None
    state_probe: str | None = None
    #: The width of a state for that probe (the header's ``params.state_gap``: 1.25 for
    #: PRTT(n,0,1), 1.6 for the cache line "c2c").
    state_gap: float = STATE_GAP

    @property
    def ok(self) -> bool:
        return self.error is None and self.model is not None and self.meas is not None

    @property
    def ranges(self) -> list[dict[str, Any]]:
        return list((self.doc or {}).get("ranges") or [])


def refit_run(run_dir: Path, refit_root: Path, raw: Path) -> Path:
    """Fits RUN_DIR/measurements.jsonl (a round's or a blind run's) again with this
    checkout's fit (as `railgauge gauge` does: accuracy on, its default seed 0) into
    REFIT_ROOT/<the run's folder>/model-loggp.json, so that a change of the fit is judged
    on the same measurements; returns that path."""
    from railgauge.fit.loggp import fit_loggp

    meas = read_measurements(run_dir / "measurements.jsonl")
    fit = fit_loggp(meas, seed=0, accuracy=True)
    out = refit_root / rel_dir(run_dir, raw) / "model-loggp.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fit.to_json(), indent=2) + "\n")
    return out


def load_run(run: Run, model_path: Path | None = None) -> Run:
    """Reads DIR/model-loggp.json (or MODEL_PATH) and DIR/measurements.jsonl (unless the
    run failed)."""
    if run.error is not None:
        return run
    meas_path = run.dir / "measurements.jsonl"
    model_path = model_path or run.dir / "model-loggp.json"
    try:
        run.doc = json.loads(model_path.read_text())
        run.model = load_loggp_model(model_path)
        if not run.model.ranges:
            raise ValueError(f"{model_path}: the model has no ranges")
        run.meas = read_measurements(meas_path)
    except (OSError, ValueError) as exc:  # ModelError, MeasurementError are ValueErrors
        run.error = str(exc)
        run.model = run.meas = None
        return run
    header = run.meas.header
    params = header.get("params") if isinstance(header.get("params"), dict) else {}
    run.grid = sorted({int(v) for v in (params.get("sizes") or [])
                       if isinstance(v, int) and v > 0})
    timer = header.get("timer") if isinstance(header.get("timer"), dict) else {}
    res_ns = timer.get("resolution_ns")
    if isinstance(res_ns, int | float) and math.isfinite(res_ns) and res_ns > 0:
        run.resolution_us = float(res_ns) / 1000.0
    state = points_host_state(run.meas.records, header)
    run.state_us = None if state is None else float(state["probe_us"])
    run.state_probe = None if state is None else str(state["probe"])
    run.state_gap = STATE_GAP if state is None else float(state["gap"])
    return run


def fast_state_runs(runs: list[Run]) -> list[Run]:
    """The runs made in the host's fast state, among the runs whose probes measured what
    most runs' did (Run.state_probe). The runs fall into states: sorted by their state
    (Run.state_us), a run starts a new state where it is sqrt(gap) or more above the run
    before it or more than gap above the first of its state (gap: Run.state_gap, the
    width of the tool's band for that probe). A step of half a state's width (in ratio)
    between two runs is a gap between states: over ofi:tcp, runs at 127-128 us and at
    145-159 us by PRTT(16,0,1) were within 1.25x of each other but measured large messages
    up to 4x apart, while the runs of one state step by less than 1.05x. The fast state is
    the fastest with two runs or more (one run cannot predict another of its state; by
    the cache line, a whole run on one core's two hardware threads, 13-15 ns, is rare
    beside the 29-37 ns of two cores), else the fastest. Runs without probes are left
    out."""
    probes = [r.state_probe for r in runs if r.state_us is not None]
    if not probes:
        return []
    probe = max(sorted(set(probes)), key=probes.count)
    cand = sorted((r for r in runs if r.state_us is not None and r.state_probe == probe),
                  key=lambda r: float(r.state_us or 0.0))
    gap = max(r.state_gap for r in cand)
    step = math.sqrt(gap)
    states: list[list[Run]] = [[cand[0]]]
    for r in cand[1:]:
        v, prev = float(r.state_us or 0.0), float(states[-1][-1].state_us or 0.0)
        if v >= prev * step or v > gap * float(states[-1][0].state_us or 0.0):
            states.append([r])
        else:
            states[-1].append(r)
    fast = next((st for st in states if len(st) >= 2), states[0])
    keep = {id(r) for r in fast}
    return [r for r in runs if id(r) in keep]


def runs_from_index(raw: Path, index: dict[str, Any],
                    refit_root: Path | None = None) -> list[Run]:
    runs = []
    for e in index.get("runs", []):
        run = Run(entry=e["entry"], round=int(e["round"]), dir=raw / e["dir"],
                  wall_s=e.get("wall_s"), error=e.get("error"))
        model_path = None
        if refit_root is not None and run.error is None:
            try:
                model_path = refit_run(run.dir, refit_root, raw)
            except (OSError, ValueError) as exc:
                run.error = f"refit: {exc}"
        runs.append(load_run(run, model_path))
    return runs


def index_from_folders(raw: Path) -> dict[str, Any]:
    """An index for kept folders without runs.json (wall times unknown)."""
    runs: list[dict[str, Any]] = []
    folders = {v[0]: k for k, v in TRANSPORTS.items()} | {DEFAULT_SHM: DEFAULT_SHM}
    for folder, entry in folders.items():
        for d in sorted((raw / folder).glob("run-*")):
            m = re.fullmatch(r"run-(\d+)", d.name)
            if m and d.is_dir():
                runs.append({"entry": entry, "round": int(m.group(1)),
                             "dir": rel_dir(d, raw), "wall_s": None, "error": None})
    transports = [t for t in TRANSPORTS if any(r["entry"] == t for r in runs)]
    return {"command": None, "facts": None, "transports": transports, "runs": runs}


# --------------------------------------------------------------------------------------
# Analysis


def quantile(values: Sequence[float], q: float) -> float | None:
    v = [x for x in values if x is not None and math.isfinite(x)]
    return float(np.quantile(np.array(v, dtype=np.float64), q)) if v else None


#: Measured vs measured compares two PRTT(n,d,s) records only where their delays d agree
#: this closely: d is the size's PRTT(1,0,s) of the first pass, so a run that started a
#: size in a slow phase of the host measured PRTT(n,d,s) with another d, which is another
#: quantity ((n-1) d of it at small sizes), not a noisier measurement of the same one.
MVM_D_REL = 0.10


def mvm_errors(a: Measurements, b: Measurements) -> list[PointError]:
    """Run a's records against run b's at the same (pattern, n, s), and for PRTT(n,d,s)
    a d within MVM_D_REL: |a - b| / b with both the records' median_us (b plays the
    measurement, a the prediction)."""
    prev = {(p.kind, p.n, p.s): (p.median_us, p.d_us) for p in judged_records(a)}
    out: list[PointError] = []
    for p in judged_records(b):
        m_a, d_a = prev.get((p.kind, p.n, p.s), (None, 0.0))
        if m_a is None:
            continue
        if p.kind == "pd" and abs(d_a - p.d_us) > MVM_D_REL * max(abs(p.d_us), 1e-12):
            continue
        out.append(PointError(s=p.s, kind=p.kind, n=p.n, d_us=p.d_us, measured_us=p.median_us,
                              predicted_us=m_a, rel=abs(m_a - p.median_us) / p.median_us))
    return out


def snap(value: int, grid: list[int]) -> int:
    """`value` rounded up to the next size of `grid`; a value above the grid stays."""
    return next((g for g in grid if g >= value), value)


def signature(run: Run) -> tuple[int, ...]:
    """The run's protocol changes: from_bytes of ranges 1.., each snapped to the grid."""
    return tuple(snap(int(r["from_bytes"]), run.grid) for r in run.ranges[1:])


def within_one_step(sig: tuple[int, ...], ref: tuple[int, ...], grid: list[int]) -> bool:
    """The same changes within one step of the sweep: as many, each at most one grid
    size away (a value off the grid must be equal)."""
    if len(sig) != len(ref):
        return False
    pos = {g: i for i, g in enumerate(grid)}
    for a, b in zip(sig, ref, strict=True):
        if a == b:
            continue
        if a not in pos or b not in pos or abs(pos[a] - pos[b]) > 1:
            return False
    return True


def ci_includes_zero(rng: dict[str, Any], key: str) -> bool:
    ci = (rng.get("ci95") or {}).get(key)
    if not isinstance(ci, list | tuple) or len(ci) != 2:
        return False
    lo, hi = ci
    return isinstance(lo, int | float) and isinstance(hi, int | float) and lo <= 0.0 <= hi


def range_span_bytes(rng: dict[str, Any], grid: list[int]) -> float | None:
    """Bytes the range spans (to_bytes, else last_measured_bytes, else the grid's top,
    less from_bytes): a per-byte parameter times this is its time over the range."""
    top = rng.get("to_bytes") or rng.get("last_measured_bytes") or (grid[-1] if grid else None)
    lo = rng.get("from_bytes")
    if not isinstance(top, int | float) or not isinstance(lo, int | float):
        return None
    return max(float(top) - float(lo), 1.0)


_REASON_WORDS = re.compile(r"\bbound\b|resolution|\bzero\b|\b0\b|below|consistent with",
                           re.IGNORECASE)


def param_aliases(key: str) -> list[str]:
    base = re.sub(r"_us(_per_byte)?$", "", key)
    names = {key, base, PARAM_NAMES.get(key, base)}
    if base.startswith("Glat"):
        names.add("G_lat")
    return sorted(names, key=len, reverse=True)


def _reason_in(texts: list[str], key: str) -> str | None:
    """The first text that names the parameter and says why (a bound, 0, zero, the
    resolution, "below" or "consistent with")."""
    for text in texts:
        named = any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(a)}(?![A-Za-z0-9_])", text)
                    for a in param_aliases(key))
        if named and _REASON_WORDS.search(text):
            return text
    return None


def bound_reason(rng: dict[str, Any], key: str) -> str | None:
    """The reason the model states for the parameter at its bound: its entry in the
    range's ``bounds`` list (docs/fit.md, section 4), or for an entry without one a
    warning of the range that names it (a problem: the range is not reliable); for model
    files without that list, the first warning or note of the range that names it."""
    warnings = [str(t) for t in (rng.get("warnings") or [])]
    if isinstance(rng.get("bounds"), list):
        for b in rng["bounds"]:
            if isinstance(b, dict) and b.get("parameter") == key and b.get("reason"):
                return str(b["reason"])
        warned = _reason_in(warnings, key)
        return f"warning: {warned}" if warned else None
    return _reason_in([str(t) for t in (rng.get("notes") or [])] + warnings, key)


def is_param_key(key: str, value: Any) -> bool:
    return (key.endswith(("_us", "_us_per_byte")) and isinstance(value, int | float)
            and not isinstance(value, bool))


@dataclass
class ParamRow:
    range: int
    key: str
    n: int
    mean: float
    sd: float
    cv: float
    ci_zero_runs: int
    judged: str  # "cv" or "resolution"
    spread_us: float | None  # the spread judged against the resolution
    ok: bool | None


def param_rows(runs: list[Run], resolution_us: float | None) -> list[ParamRow]:
    nranges = min((len(r.ranges) for r in runs), default=0)
    rows: list[ParamRow] = []
    for k in range(nranges):
        spans = [s for r in runs if (s := range_span_bytes(r.ranges[k], r.grid)) is not None]
        span = statistics.median(spans) if spans else None
        for key in PARAMS:
            vals = [float(v) for r in runs
                    if isinstance(v := r.ranges[k].get(key), int | float)
                    and math.isfinite(v)]
            if not vals:
                continue
            mean = statistics.fmean(vals)
            sd = statistics.stdev(vals) if len(vals) > 1 else math.nan
            cv = sd / abs(mean) if mean else math.inf
            zero_runs = sum(1 for r in runs if ci_includes_zero(r.ranges[k], key))
            per_byte = key.endswith("_per_byte")
            # What the parameter adds to a time (over the range's span, per byte).
            size_us = abs(mean) * span if per_byte and span is not None else (
                None if per_byte else abs(mean))
            # Below the timer's resolution a parameter is physically near 0 at the grain
            # the gauge measures with, whatever its CI: judged by its spread there too.
            below_res = (size_us is not None and resolution_us is not None
                         and size_us < resolution_us)
            if len(vals) < 2:
                rows.append(ParamRow(k, key, len(vals), mean, sd, cv, zero_runs, "cv", None,
                                     None))
            elif zero_runs or below_res:
                spread = sd * span if per_byte and span is not None else (
                    None if per_byte else sd)
                ok = None if spread is None or resolution_us is None else \
                    spread <= resolution_us
                rows.append(ParamRow(k, key, len(vals), mean, sd, cv, zero_runs,
                                     "resolution", spread, ok))
            else:
                rows.append(ParamRow(k, key, len(vals), mean, sd, cv, 0, "cv", None,
                                     cv <= CV_MAX))
    return rows


@dataclass
class Summary:
    entry: str
    runs: list[Run]
    ok_runs: list[Run]
    pairs: list[dict[str, Any]]
    pred: dict[str, Any]
    pred_decades: list[dict[str, Any]]
    pred_worst: list[dict[str, Any]]
    mvm: dict[str, Any]
    mvm_decades: list[dict[str, Any]]
    held_median: float | None
    held_p90: float | None
    held_runs: int
    sigs: list[tuple[tuple[int, ...], int]]
    modal: int
    near: int
    near_ref: tuple[int, ...] | None
    params: list[ParamRow]
    resolution_us: float | None
    at_bound: list[dict[str, Any]]
    reliable_runs: int
    walls: list[float]


def summarize_entry(entry: str, runs: list[Run]) -> Summary:
    ok = [r for r in runs if r.ok]
    pairs: list[dict[str, Any]] = []
    pooled: list[PointError] = []
    pooled_mvm: list[PointError] = []
    for a, b in itertools.pairwise(ok):
        try:
            errs = point_errors(a.model, b.meas)
        except ValueError as exc:
            pairs.append({"a": a.round, "b": b.round, "error": str(exc)})
            continue
        mvm = mvm_errors(a.meas, b.meas) if a.meas and b.meas else []
        pooled += errs
        pooled_mvm += mvm
        pairs.append({"a": a.round, "b": b.round, "pred": summarize(errs),
                      "mvm": summarize(mvm)})
    worst = sorted(pooled, key=lambda e: -e.rel)[:N_WORST]
    held = [(r.doc or {}).get("accuracy", {}).get("held_out", {}) for r in ok]
    held_med = [h.get("median_rel") for h in held if h.get("median_rel") is not None]
    held_p90 = [h.get("p90_rel") for h in held if h.get("p90_rel") is not None]

    sig_count = Counter(signature(r) for r in ok)
    sigs = sorted(sig_count.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))
    modal = sigs[0][1] if sigs else 0
    near, near_ref = 0, None
    for ref, _ in sigs:
        c = sum(1 for r in ok if within_one_step(signature(r), ref, r.grid))
        if c > near:
            near, near_ref = c, ref

    resolutions = [r.resolution_us for r in ok if r.resolution_us is not None]
    resolution = statistics.median(resolutions) if resolutions else None

    at_bound: list[dict[str, Any]] = []
    for r in ok:
        for k, rng in enumerate(r.ranges):
            for key, v in rng.items():
                if is_param_key(key, v) and v <= 0.0:
                    at_bound.append({"round": r.round, "range": k, "key": key, "value": v,
                                     "reason": bound_reason(rng, key) if v == 0 else None})
    reliable = sum(1 for r in ok if r.ranges and all(rng.get("reliable") is True
                                                      for rng in r.ranges))
    return Summary(
        entry=entry, runs=runs, ok_runs=ok, pairs=pairs,
        pred=summarize(pooled), pred_decades=by_decade(sorted(pooled, key=lambda e: e.s)),
        pred_worst=[e.to_json() for e in worst],
        mvm=summarize(pooled_mvm),
        mvm_decades=by_decade(sorted(pooled_mvm, key=lambda e: e.s)),
        held_median=statistics.median(held_med) if held_med else None,
        held_p90=statistics.median(held_p90) if held_p90 else None,
        held_runs=len(held_med),
        sigs=sigs, modal=modal, near=near, near_ref=near_ref,
        params=param_rows(ok, resolution), resolution_us=resolution,
        at_bound=at_bound, reliable_runs=reliable,
        walls=[r.wall_s for r in runs if r.wall_s is not None],
    )


# --------------------------------------------------------------------------------------
# Markdown


def pct(v: float | None) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{100.0 * v:.1f}%"


def fmt_s(v: float | None) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.1f} s"


def fmt_g(v: float | None) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.4g}"


def fmt_bytes_range(lo: int, hi: int) -> str:
    return f"{lo}–{hi} B"


def fmt_sig(sig: tuple[int, ...] | None) -> str:
    if sig is None:
        return "n/a"
    return "none" if not sig else ", ".join(f"{v} B" for v in sig)


def need(n: int, share: float) -> int:
    return math.ceil(share * n - 1e-9)


def targets_md(s: Summary, label: str, default_walls: list[float] | None,
               heading: str | None = None) -> list[str]:
    n = len(s.runs)
    okn = len(s.ok_runs)
    rows: list[tuple[str, str, bool | str | None]] = []
    npairs = sum(1 for p in s.pairs if "pred" in p)
    pm, p90 = s.pred.get("median_rel"), s.pred.get("p90_rel")
    rows.append((f"model of run i predicting run i+1's PRTT points: median <= "
                 f"{PRED_MEDIAN_MAX:.0%}", f"{pct(pm)} ({s.pred.get('points', 0)} points, "
                 f"{npairs} pairs)", None if pm is None else pm <= PRED_MEDIAN_MAX))
    worst_pair = max((p["pred"]["p90_rel"] for p in s.pairs
                      if "pred" in p and p["pred"]["p90_rel"] is not None), default=None)
    rows.append((f"… p90 <= {PRED_P90_MAX:.0%}",
                 f"{pct(p90)} (worst pair {pct(worst_pair)}; max {pct(s.pred.get('max_rel'))})",
                 None if p90 is None else p90 <= PRED_P90_MAX))
    dec = [d for d in s.pred_decades if d["median_rel"] is not None]
    if dec:
        w = max(dec, key=lambda d: d["median_rel"])
        dec_txt = (f"worst {pct(w['median_rel'])} at "
                   f"{fmt_bytes_range(w['from_bytes'], w['to_bytes'])} "
                   f"({sum(1 for d in dec if d['median_rel'] > DECADE_MEDIAN_MAX)} of "
                   f"{len(dec)} decades above)")
        dec_ok: bool | None = all(d["median_rel"] <= DECADE_MEDIAN_MAX for d in dec)
    else:
        dec_txt, dec_ok = "n/a", None
    rows.append((f"… median of every decade of sizes <= {DECADE_MEDIAN_MAX:.0%}", dec_txt,
                 dec_ok))
    mp90 = s.mvm.get("p90_rel")
    bound = MVM_P90_BELOW.get(s.entry)
    mvm_txt = f"median {pct(s.mvm.get('median_rel'))}, p90 {pct(mp90)}"
    if bound is not None:
        rows.append((f"measured vs measured between runs: p90 below {bound:.0%}", mvm_txt,
                     None if mp90 is None else mp90 < bound))
    else:
        rows.append(("measured vs measured between runs (shown beside the model; no target "
                     "for this transport)", mvm_txt, "(no target)"))
    k = need(n, SAME_RANGES_SHARE)
    rows.append((f"same protocol changes (within one sweep step) in >= {k} of {n} runs",
                 f"{s.near} of {n} within one step of ({fmt_sig(s.near_ref)}); identical "
                 f"set in {s.modal} of {n}", s.near >= k if okn else None))
    judged = [p for p in s.params if p.ok is not None]
    failed = [p for p in judged if not p.ok]
    unjudged = [p for p in s.params if p.ok is None]
    if judged:
        worst_cv = max((p for p in judged if p.judged == "cv"), key=lambda p: p.cv,
                       default=None)
        txt = (f"{len(judged) - len(failed)} of {len(judged)} pass"
               + (f"; largest CV {pct(worst_cv.cv)} ({PARAM_NAMES[worst_cv.key]} of range "
                  f"{worst_cv.range})" if worst_cv else "")
               + ("; failing: " + ", ".join(f"{PARAM_NAMES[p.key]}[{p.range}]"
                                            for p in failed[:8]) if failed else "")
               + (f"; {len(unjudged)} not judged" if unjudged else ""))
        cv_ok: bool | None = not failed
    else:
        txt, cv_ok = "n/a (fewer than 2 runs with a model)", None
    rows.append((f"CV <= {CV_MAX:.0%} of every parameter of every range present in all runs "
                 "(CI including 0, or below the timer's resolution: spread <= timer "
                 "resolution)", txt, cv_ok))
    negative = [b for b in s.at_bound if b["value"] < 0]
    unexplained = [b for b in s.at_bound if b["value"] == 0 and b["reason"] is None]
    if s.at_bound:
        bound_txt = (f"{len(s.at_bound)} at 0 or below; {len(unexplained)} without a stated "
                     f"reason, {len(negative)} negative")
    else:
        bound_txt = "none at a bound"
    rows.append(("no parameter at a bound without its stated reason", bound_txt,
                 (not unexplained and not negative) if okn else None))
    k = need(n, RELIABLE_SHARE)
    rows.append((f"every range reliable in >= {k} of {n} runs", f"{s.reliable_runs} of {n}",
                 s.reliable_runs >= k if n else None))
    rows.append(("runs that produced a model", f"{okn} of {n}", okn == n if n else None))
    if default_walls is not None:
        med = statistics.median(default_walls) if default_walls else None
        rows.append((f"the main job (default `railgauge gauge` on shm): median wall <= "
                     f"{MAIN_JOB_MAX_S:.0f} s",
                     f"median {fmt_s(med)}, max {fmt_s(max(default_walls, default=None))} "
                     f"({len(default_walls)} run(s))",
                     None if med is None else med <= MAIN_JOB_MAX_S))
    lines = [heading or f"### {label}: targets", "", "| target | measured | result |",
             "| --- | --- | --- |"]
    for what, measured, ok in rows:
        res = ok if isinstance(ok, str) else verdict(ok)
        lines.append(f"| {what} | {measured} | {res} |")
    return lines


def state_text(r: Run) -> str:
    """A run's state as its probe reads: the cache line in ns, PRTT(16,0,1) in µs."""
    if r.state_us is None:
        return ""
    if r.state_probe == C2C_PROBE:
        return f"{fmt_g(r.state_us * 1e3)} ns"
    return f"{fmt_g(r.state_us)} µs"


def fast_state_md(s: Summary, label: str) -> list[str]:
    """The targets over the runs of the host's fast state (fast_state_runs), with every
    run's state."""
    fast = fast_state_runs(s.ok_runs)
    fastest = min((float(r.state_us or 0.0) for r in fast), default=0.0)

    def state(r: Run) -> str:
        if r.state_us is None:
            return "none"
        return state_text(r) + ("" if r in fast else
                                " (faster)" if r.state_us < fastest else " (slow)")

    states = ", ".join(f"{r.round}: {state(r)}" for r in s.ok_runs)
    head = (f"#### {label}: the same targets over the {len(fast)} of {len(s.runs)} runs in the "
            "host's fast state")
    probes = ", ".join(sorted({"c2c: the cache line between the ranks, one way"
                               if r.state_probe == C2C_PROBE else f"{r.state_probe}, µs"
                               for r in s.ok_runs if r.state_probe}))
    lines = [head, "", f"Host state per round (probe {probes or 'none'}): "
             f"{states or 'none'}."]
    if len(fast) < 2:
        return [*lines, "", "Fewer than two runs in the fast state: nothing to compare."]
    sub = summarize_entry(s.entry, fast)
    rows = targets_md(sub, label, None, heading="")
    return [*lines, *rows[1:]]


def reliable_text(r: Run) -> str:
    """"yes" when every range of the run's model is reliable, else "no" and the ranges
    that are not, each with its held-out p90, where the model has it the visit-spread p90
    of its points (``ranges[i].accuracy``), and where it predicts within the targets, that
    another check is why."""
    bad = [rng for rng in r.ranges if rng.get("reliable") is not True]
    if not bad:
        return "yes"
    parts = []
    for rng in bad:
        got = rng.get("accuracy")
        acc: dict[str, Any] = got if isinstance(got, dict) else {}
        got = acc.get("visit_spread")
        visit: dict[str, Any] = got if isinstance(got, dict) else {}
        bits = [f"held out p90 {pct(acc.get('p90_rel'))}"] if acc.get("p90_rel") is not None \
            else []
        if visit.get("p90_rel") is not None:
            bits.append(f"visit {pct(visit.get('p90_rel'))}")
        if acc.get("reliable") is True:
            bits.append("predicts within the targets: another check of docs/fit.md, "
                        "section 4")
        parts.append(f"{rng.get('from_bytes')} B" + (f" ({', '.join(bits)})" if bits else ""))
    return "no: " + "; ".join(parts)


def details_md(s: Summary, label: str) -> list[str]:
    lines = [f"### {label}: details", ""]
    lines += ["Each pair: the model of the first run against the PRTT records of the second, "
              "and the first run's records against the second's (measured vs measured).", "",
              "| pair (rounds) | points | model median | model p90 | model max | "
              "meas. vs meas. median | meas. vs meas. p90 |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in s.pairs:
        if "error" in p:
            lines.append(f"| {p['a']} → {p['b']} | error: {p['error']} | | | | | |")
            continue
        pr, mv = p["pred"], p["mvm"]
        lines.append(f"| {p['a']} → {p['b']} | {pr['points']} | {pct(pr['median_rel'])} | "
                     f"{pct(pr['p90_rel'])} | {pct(pr['max_rel'])} | {pct(mv['median_rel'])} | "
                     f"{pct(mv['p90_rel'])} |")
    if not s.pairs:
        lines.append("| (fewer than two runs with a model) | | | | | | |")
    mvm_by = {(d["from_bytes"], d["to_bytes"]): d for d in s.mvm_decades}
    lines += ["", "By decade of sizes (all pairs pooled; the measured-vs-measured groups are "
              "matched by their bounds):", "",
              "| sizes | points | model median | model p90 | meas. vs meas. median | "
              "meas. vs meas. p90 |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for d in s.pred_decades:
        m = mvm_by.get((d["from_bytes"], d["to_bytes"]), {})
        lines.append(f"| {fmt_bytes_range(d['from_bytes'], d['to_bytes'])} | {d['points']} | "
                     f"{pct(d['median_rel'])} | {pct(d['p90_rel'])} | "
                     f"{pct(m.get('median_rel'))} | {pct(m.get('p90_rel'))} |")
    if s.pred_worst:
        lines += ["", "Largest misses of the model (all pairs): "
                  + "; ".join(f"{w['pattern']} n={w['n']} s={w['s']} B: predicted "
                              f"{w['predicted_us']:.4g} µs, measured {w['measured_us']:.4g} µs "
                              f"({w['signed_rel']:+.1%})" for w in s.pred_worst) + "."]
    lines += ["", f"The model's own accuracy (`accuracy.held_out` of model-loggp.json, k-fold "
              f"cross-validation over sizes), median over {s.held_runs} runs: median "
              f"{pct(s.held_median)}, p90 {pct(s.held_p90)}."]
    lines += ["", "Protocol changes (from_bytes of ranges 1.., each rounded up to the run's "
              "planned sweep):", "", "| changes | runs |", "| --- | ---: |"]
    for sig, c in s.sigs:
        lines.append(f"| {fmt_sig(sig)} | {c} |")
    res_txt = (f"{s.resolution_us * 1000.0:.1f} ns" if s.resolution_us is not None
               else "unknown")
    lines += ["", f"Parameters of the ranges present in all runs (matched by index; timer "
              f"resolution {res_txt}, median of the runs' headers):", "",
              "| range | parameter | runs | mean | sd | CV | runs with CI ∋ 0 | judged by | "
              "result |", "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for p in s.params:
        unit = "µs/B" if p.key.endswith("_per_byte") else "µs"
        by = ("CV" if p.judged == "cv" else
              f"spread {fmt_g(p.spread_us)} µs vs resolution"
              + (" (sd × range span)" if p.key.endswith("_per_byte") else ""))
        lines.append(f"| {p.range} | {PARAM_NAMES[p.key]} ({unit}) | {p.n} | {fmt_g(p.mean)} | "
                     f"{fmt_g(p.sd)} | {pct(p.cv) if math.isfinite(p.cv) else 'undefined'} | "
                     f"{p.ci_zero_runs} | {by} | {verdict(p.ok)} |")
    if not s.params:
        lines.append("| | (no range in all runs) | | | | | | | |")
    if s.at_bound:
        lines += ["", "Parameters at 0 or below:", ""]
        for b in s.at_bound:
            why = ("negative" if b["value"] < 0 else
                   f"reason: “{b['reason'][:220]}”" if b["reason"] else
                   "no stated reason in the range's notes or warnings")
            lines.append(f"- round {b['round']}, range {b['range']}, {b['key']} = "
                         f"{b['value']:.4g}: {why}")
    lines += ["", "Per run (visit spread: how far a point measured again in the run's "
              "reference state of the host differs from visit to visit, `noise."
              "visit_spread_rel` of docs/fit.md, section 4a; an unreliable range is named "
              "with its own held-out p90 and visit-spread p90):", "",
              "| round | wall | host state | ranges | changes | all ranges reliable | "
              "held-out median | held-out p90 | visit spread p90 |",
              "| ---: | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |"]
    for r in s.runs:
        if not r.ok:
            lines.append(f"| {r.round} | {fmt_s(r.wall_s)} | | failed | | | | | |")
            continue
        held = (r.doc or {}).get("accuracy", {}).get("held_out", {})
        visit = (noise(r.meas)["visit_spread_rel"] if r.meas is not None else {}).get("p90")
        lines.append(f"| {r.round} | {fmt_s(r.wall_s)} | {state_text(r)} | {len(r.ranges)} | "
                     f"{fmt_sig(signature(r))} | {reliable_text(r)} | "
                     f"{pct(held.get('median_rel'))} | {pct(held.get('p90_rel'))} | "
                     f"{pct(visit)} |")
    walls = s.walls
    lines += ["", f"Wall time of a run: median {fmt_s(statistics.median(walls) if walls else None)}"
              f", max {fmt_s(max(walls, default=None))}."]
    failed = [r for r in s.runs if not r.ok]
    if failed:
        lines += ["", "Failed runs:", ""]
        lines += [f"- round {r.round}: {(r.error or '?')[:600]}" for r in failed]
    return lines


# --------------------------------------------------------------------------------------
# Blind thresholds (issue 18, item 7)

#: Sizes per octave of a blind run's sweep, and one step of it.
BLIND_FOUND_SHARE = 0.9
BLIND_FOLDER = "blind"


def measure_blind(args: argparse.Namespace, railgauge: list[str], env: dict[str, str],
                  raw: Path, index: dict[str, Any]) -> bool:
    """The blind runs: per stack and distinct drawn value, the default runs of its window
    first; then the moved runs, round i running every stack's i-th draw (in an order
    that rotates). Every run's entry is saved in raw/runs.json ("blind_runs") as it ends.
    Returns True when every run ended with exit status 0."""
    stacks = list(args.blind_stacks)
    draws = {k: blind.draws(args.blind_seed, k, args.blind_runs) for k in stacks}
    index["blind"] = {"seed": args.blind_seed, "runs": args.blind_runs,
                      "default_runs": args.blind_default_runs, "stacks": stacks,
                      "draws": draws, "per_octave": blind.PER_OCTAVE,
                      "candidates": {k: list(blind.STACKS[k].candidates) for k in stacks}}
    index["blind_runs"] = []
    # Every run starts from the default settings of all stacks.
    base = {k: v for k, v in env.items() if k not in {s.var for s in blind.STACKS.values()}}
    plan: list[tuple[str, str, int, int]] = []  # (key, kind, number, t)
    for j in range(args.blind_default_runs):
        for key in stacks:
            plan += [(key, "default", j + 1, t) for t in sorted(set(draws[key]))]
    for i in range(args.blind_runs):
        order = stacks[i % len(stacks):] + stacks[:i % len(stacks)]
        plan += [(key, "moved", i + 1, draws[key][i]) for key in order]
    all_ok = True
    for n, (key, kind, number, t) in enumerate(plan):
        stack = blind.STACKS[key]
        name = (f"default-T{t}-{number:02d}" if kind == "default"
                else f"run-{number:02d}-T{t}")
        out_dir = raw / BLIND_FOLDER / key / name
        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        run_env = dict(base)
        if kind == "moved":
            run_env[stack.var] = str(t)
        argv = [*blind.gauge_argv(railgauge, key, t, out_dir), "--json"]
        res, error = run_kept(argv, args.timeout, run_env, out_dir)
        all_ok &= error is None
        index["blind_runs"].append({
            "stack": key, "kind": kind, "number": number, "t": t, "var": stack.var,
            "window": list(blind.window(stack, t)), "dir": rel_dir(out_dir, raw),
            "argv": argv, "env": {stack.var: str(t)} if kind == "moved" else {},
            "wall_s": res.wall_s, "rc": res.rc, "timed_out": res.timed_out, "error": error,
        })
        save_index(raw, index)
        what = "ok" if error is None else f"FAILED: {error[:300]}"
        setting = f"{stack.var}={t}" if kind == "moved" else f"default, window of T={t}"
        log(f"blind {n + 1}/{len(plan)} {key} {kind} {number} ({setting}): "
            f"{res.wall_s:.1f} s, {what}")
    return all_ok


def blind_index_from_folders(raw: Path) -> list[dict[str, Any]]:
    """Entries for kept blind folders without runs.json (T from the folder's name)."""
    out: list[dict[str, Any]] = []
    for key, stack in blind.STACKS.items():
        for d in sorted((raw / BLIND_FOLDER / key).glob("*")):
            m = (re.fullmatch(r"default-T(\d+)-(\d+)", d.name)
                 or re.fullmatch(r"run-(\d+)-T(\d+)", d.name))
            if m is None or not d.is_dir():
                continue
            default = d.name.startswith("default")
            t, number = ((int(m.group(1)), int(m.group(2))) if default
                         else (int(m.group(2)), int(m.group(1))))
            out.append({"stack": key, "kind": "default" if default else "moved",
                        "number": number, "t": t, "var": stack.var,
                        "window": list(blind.window(stack, t)), "dir": rel_dir(d, raw),
                        "wall_s": None, "error": None})
    return out


@dataclass
class BlindRun:
    stack: str
    kind: str  # "default" or "moved"
    number: int
    t: int
    window: tuple[int, int]
    dir: Path
    wall_s: float | None
    error: str | None
    changes: list[int] | None = None
    #: the fit's bends (breaks merged away for too little support): (lo, hi, support)
    bends: list[tuple[int, int, float | None]] = field(default_factory=list)
    # moved runs, judged against the default runs of the same window:
    found: bool | None = None
    invented: list[int] | None = None
    #: a change of the default runs of the window lies near T too (found proves less)
    near_default: bool = False
    #: the invented changes that every other moved run with the same T shows too, as a
    #: change or as a bend (a break its fit saw there but merged for too little
    #: support): a protocol change the move revealed (another threshold that only
    #: matters once the moved one lies above it), not one made up by noise
    revealed: list[int] = field(default_factory=list)

    def breaks_seen(self) -> list[int]:
        """Where this run's fit saw a break: its changes and the upper sizes (the
        from_bytes a change there would have) of its bends."""
        return list(self.changes or []) + [hi for _lo, hi, _sup in self.bends]

    @property
    def ok(self) -> bool:
        return self.error is None and self.changes is not None


def load_blind_run(e: dict[str, Any], raw: Path, refit_root: Path | None = None) -> BlindRun:
    """A blind run's changes and bends from its model-loggp.json, or with REFIT_ROOT from
    this checkout's fit of its measurements (refit_run: into REFIT_ROOT/<its folder>)."""
    r = BlindRun(stack=e["stack"], kind=e["kind"], number=int(e["number"]), t=int(e["t"]),
                 window=(int(e["window"][0]), int(e["window"][1])), dir=raw / e["dir"],
                 wall_s=e.get("wall_s"), error=e.get("error"))
    if r.error is None:
        path = r.dir / "model-loggp.json"
        try:
            if refit_root is not None:
                path = refit_run(r.dir, refit_root, raw)
            doc = json.loads(path.read_text())
            ranges = doc.get("ranges")
            if not isinstance(ranges, list) or not ranges:
                raise ValueError(f"{path}: the model has no ranges")
            r.changes = [int(rng["from_bytes"]) for rng in ranges[1:]]
            for b in doc.get("bends") or []:
                between = b.get("between_bytes") if isinstance(b, dict) else None
                if isinstance(between, list) and len(between) == 2:
                    sup = b.get("support")
                    r.bends.append((int(between[0]), int(between[1]),
                                    float(sup) if isinstance(sup, int | float) else None))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            r.error = str(exc)
    return r


@dataclass
class BlindSummary:
    key: str
    moved: list[BlindRun]
    defaults: list[BlindRun]
    #: per window: the changes of its default runs that produced a model (None: none did)
    default_changes: dict[tuple[int, int], list[int] | None]
    found: int
    invented_runs: int
    unjudged: int
    ok: bool | None
    #: runs with an invented change that is not revealed (see BlindRun.revealed)
    unexplained_runs: int = 0


def summarize_blind(key: str, runs: list[BlindRun]) -> BlindSummary:
    moved = sorted((r for r in runs if r.kind == "moved"), key=lambda r: r.number)
    defaults = sorted((r for r in runs if r.kind == "default"),
                      key=lambda r: (r.window, r.number))
    windows = sorted({r.window for r in runs})
    default_changes: dict[tuple[int, int], list[int] | None] = {}
    for w in windows:
        good = [r for r in defaults if r.window == w and r.ok]
        default_changes[w] = (sorted({c for r in good for c in (r.changes or [])})
                              if good else None)
    found = invented_runs = unjudged = 0
    for r in moved:
        if not r.ok:
            r.found = False  # a failed run found nothing
            continue
        changes = r.changes or []
        r.found = any(blind.within_one_step(c, r.t) for c in changes)
        found += r.found
        known = default_changes.get(r.window)
        if known is None:
            unjudged += 1
            continue
        r.near_default = any(blind.within_one_step(d, r.t) for d in known)
        r.invented = [c for c in changes if not blind.within_one_step(c, r.t)
                      and not any(blind.same_change(c, d) for d in known)]
        invented_runs += bool(r.invented)
    unexplained = 0
    for r in moved:
        twins = [o for o in moved if o is not r and o.ok and o.t == r.t]
        r.revealed = [c for c in (r.invented or []) if twins and all(
            any(blind.same_change(c, d) for d in o.breaks_seen()) for o in twins)]
        unexplained += bool(set(r.invented or []) - set(r.revealed))
    n = len(moved)
    if not n:
        ok: bool | None = None
    elif found < need(n, BLIND_FOUND_SHARE) or unexplained:
        ok = False
    else:
        ok = None if unjudged else True
    return BlindSummary(key=key, moved=moved, defaults=defaults,
                        default_changes=default_changes, found=found,
                        invented_runs=invented_runs, unjudged=unjudged, ok=ok,
                        unexplained_runs=unexplained)


def fmt_changes(changes: list[int] | None) -> str:
    if changes is None:
        return "n/a"
    return "none" if not changes else ", ".join(f"{c} B" for c in changes)


def fmt_bends(bends: list[tuple[int, int, float | None]]) -> str:
    if not bends:
        return "none"
    return ", ".join(f"{lo}–{hi} B" + (f" ({sup:.0%})" if sup is not None else "")
                     for lo, hi, sup in bends)


def blind_md(summaries: list[BlindSummary], meta: dict[str, Any]) -> list[str]:
    seed = meta.get("seed")
    seed_txt = (f"seed {seed} (replay: `--blind-seed {seed}`; the test: "
                f"`RG_BLIND_SEED={seed} pytest tests/test_blind_thresholds.py` draws each "
                "stack's first value)" if seed is not None else "seed unknown")
    lines = [
        "### Blind thresholds",
        "",
        "Written by `bench/gauge_bench.py --blind`. Per stack one protocol threshold is "
        "moved by its environment variable to a value T drawn from the stack's calibrated "
        f"candidates by a seeded generator ({seed_txt}), and `railgauge gauge` is not told: "
        f"`railgauge gauge <transport> --min-size T/{blind.WINDOW_BELOW} --max-size "
        f"T*{blind.WINDOW_ABOVE} --per-octave {blind.PER_OCTAVE} --no-onen --no-barrier` "
        f"(over ofi:tcp the window ends at {blind.OFI_WINDOW_MAX} B: above it railgauge's "
        "ofi transport sends a head and a tail, and the tail crosses the threshold again). "
        "Each window is first run at the default settings (none of the stacks' variables "
        "set). **Found**: a protocol change (from_bytes of a range 1.. of "
        "model-loggp.json) in (T / 2^(1/4), T · 2^(1/4) + 1], one step of the sweep. "
        "**Invented**: a change neither near T nor within one step of a change of the "
        "default runs of the same window (a default change that disappears because its "
        "threshold was moved is not counted). **Revealed**: an invented change that every "
        "other run with the same T shows too (at least one other), as a change or as a bend "
        "within one step (a break its fit saw there but merged for too little support): "
        "another protocol change that only shows once the moved threshold lies above it, "
        "which the default runs cannot see; it is counted among the invented and shown, "
        "but does not fail the target. Target: T found in >= 9 of 10 runs, none "
        "invented that is not revealed; a failed run counts as not found. Bends (breaks "
        "the fit merged away for too little support, `bends` of model-loggp.json) are "
        "shown but are not changes.",
        "",
        "| stack | variable | runs | found | invented | values drawn | result |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for s in summaries:
        n = len(s.moved)
        stack = blind.STACKS[s.key]
        drawn = ", ".join(str(r.t) for r in s.moved) or "none"
        revealed_runs = s.invented_runs - s.unexplained_runs
        inv = (f"{s.invented_runs} of {n}"
               + (f" ({revealed_runs} revealed: the same break in every run with that T)"
                  if revealed_runs else "")
               + (f" ({s.unjudged} not judged: no default run)" if s.unjudged else ""))
        near = sum(1 for r in s.moved if r.near_default)
        found_txt = f"{s.found} of {n}" + (f" ({near} with a default change near T)"
                                           if near else "")
        lines.append(f"| {stack.label} | `{stack.var}` | {n} | {found_txt} | {inv} | "
                     f"{drawn} | {verdict(s.ok)} |")
    for s in summaries:
        stack = blind.STACKS[s.key]
        cands = (meta.get("candidates") or {}).get(s.key, stack.candidates)
        lines += ["", f"#### {stack.label}: `{stack.var}`", "",
                  f"Candidates: {', '.join(str(c) for c in cands)}; gauge arguments "
                  f"`{shlex.join(stack.gauge_args)}`.", "",
                  "| run | T | window | changes found | found | invented | bends (support) "
                  "| wall |",
                  "| --- | ---: | --- | --- | --- | --- | --- | ---: |"]
        for w, known in s.default_changes.items():
            runs = [r for r in s.defaults if r.window == w]
            failed = sum(1 for r in runs if not r.ok)
            walls = [r.wall_s for r in runs if r.wall_s is not None]
            if not runs:
                lines.append(f"| default: none kept | (unset) | {fmt_bytes_range(*w)} | n/a "
                             "| | | | |")
                continue
            bends = "; ".join(fmt_bends(r.bends) for r in runs if r.ok)
            lines.append(f"| default ×{len(runs)}" + (f" ({failed} failed)" if failed else "")
                         + f" | (unset) | {fmt_bytes_range(*w)} | {fmt_changes(known)} | | | "
                         f"{bends} | {fmt_s(statistics.median(walls) if walls else None)} |")
        for r in s.moved:
            if not r.ok:
                lines.append(f"| {r.number} | {r.t} B | {fmt_bytes_range(*r.window)} | "
                             f"failed | no | | | {fmt_s(r.wall_s)} |")
                continue
            inv = "n/a" if r.invented is None else fmt_changes(r.invented)
            if r.revealed:
                inv += f" (revealed: {fmt_changes(r.revealed)})"
            found = ("**no**" if not r.found else
                     "yes (a default change is near T too)" if r.near_default else "yes")
            lines.append(f"| {r.number} | {r.t} B | {fmt_bytes_range(*r.window)} | "
                         f"{fmt_changes(r.changes)} | {found} | {inv} | {fmt_bends(r.bends)} | "
                         f"{fmt_s(r.wall_s)} |")
        failed_runs = [r for r in s.defaults + s.moved if r.error is not None]
        if failed_runs:
            lines += ["", "Failed runs:", ""]
            lines += [f"- {r.kind} {r.number} (T = {r.t}): {r.error[:600]}"
                      for r in failed_runs if r.error]
    return lines


def section_md(summaries: dict[str, Summary], default_runs: list[Run], n_rounds: int,
               extra: list[str], facts: dict[str, Any], command: str, raw: Path,
               blind_lines: list[str] | None = None) -> str:
    cmds = "; ".join(f"{TRANSPORTS[e][1]}: `{display_argv(e, extra)}`" for e in summaries)
    lines = [
        f"## railgauge gauge: the LogGP model across runs ({n_rounds} rounds)",
        "",
        "Written by `bench/gauge_bench.py`. Each round runs `railgauge gauge` once per "
        "transport, in an order that rotates from round to round (so slow drifts of the "
        "machine fall on every transport alike), each into a fresh report folder DIR: "
        f"{cmds}"
        + (f"; and the default gauge on shm, `{display_argv(DEFAULT_SHM, extra)}`, timed as "
           "the main job" if default_runs else "")
        + ". Wall times include starting Python.",
        "",
        "- **Prediction**: the model of each run (DIR/model-loggp.json) predicts the PRTT "
        "records of the next run (DIR/measurements.jsonl: PRTT(1,0,s), PRTT(n,0,s) and "
        "PRTT(n,d,s) of every size that has them; `orecv` records are not judged): "
        "rel = |predicted − measured| / measured against each record's `median_us` "
        "(`railgauge.fit.accuracy.point_errors`), pooled over all pairs; decades of the size "
        "in bytes as in `accuracy.by_decade` (a decade with fewer than 3 points joins the "
        "next). **Measured vs measured**: each record of a run against the next run's record "
        "of the same pattern, n and s (both `median_us`, relative to the later one; two "
        "PRTT(n,d,s) records only where their delays d agree within "
        f"{MVM_D_REL:.0%}, since d, the size's first PRTT(1,0,s), makes them different "
        "quantities otherwise): the noise floor the model is compared with.",
        "- **Protocol changes**: a run's from_bytes of ranges 1.., each rounded up to the next "
        "size of its planned sweep (`params.sizes` of the first header of "
        "measurements.jsonl); two runs have the same changes within one sweep step when they "
        "have as many and each is at most one size of the sweep away.",
        "- **Parameters**: ranges matched by index over the runs that produced a model, only "
        "indices every such run has; CV = standard deviation / |mean|. A parameter whose "
        "95% CI (`ranges[i].ci95`) includes 0 in some run, or whose mean is below the timer's "
        "resolution (`timer.resolution_ns` of the header; both physically near 0 at the grain "
        "the gauge measures with), is judged instead by its standard deviation against that "
        "resolution; for a per-byte parameter, mean and standard deviation times the bytes "
        "the range spans. A parameter at 0 has a stated reason when its entry in the range's "
        "`bounds` list has one, or when a warning of its range names it and says why (a "
        "problem: that range is not reliable; older files: a note or warning).",
        "- **Reliable**: a run counts when every range of its model has `reliable: true`.",
        "- **Host state**: railgauge-bench probes the host before every visit of a size "
        "and after each pass of its kinds and keeps each point's passes from one state of "
        "the host (docs/fit.md, section 1); a run's state is the middle of the band of "
        "probes it kept its passes from (`railgauge.hoststate.reference_state_us`). Where "
        "the two ranks share a host the probe is a cache line bounced between them "
        f"(`state_probe` c2c, one way; a state is a band {C2C_GAP}x wide), else a few "
        f"PRTT(16,0,1) (a band {STATE_GAP}x wide; before 2026-11-29 PRTT(1,0,1)). On this "
        "two-vCPU virtual machine the line takes 13-15, 29-37 or 145-167 ns, for whole runs "
        "or parts of them: where the hypervisor puts the two vCPUs (one core's two hardware "
        "threads, two cores under one L3, two chiplets), which the guest cannot choose, and "
        "every transport's round trips follow it. The targets are judged over all runs; "
        "below each table the same targets over the runs made in the fast state (sorted by "
        "state, a run starts a new state where it is sqrt(width) or more above the run "
        "before it or more than the width above the first of its state: a step of half a "
        "state's width is a gap between states; the fast state is the fastest with two runs "
        "or more), each predicting the next such run, show how much of the miss is the "
        "host changing between runs.",
        "",
    ]
    for e, s in summaries.items():
        defaults = ([r.wall_s for r in default_runs if r.wall_s is not None and r.error is None]
                    if e == "shm" and default_runs else None)
        lines += [*targets_md(s, TRANSPORTS[e][1], defaults), ""]
        lines += [*fast_state_md(s, TRANSPORTS[e][1]), ""]
    if default_runs:
        s = summarize_entry(DEFAULT_SHM, default_runs)
        lines += [*fast_state_md(s, "default gauge on shm (the main job)"), ""]
    for e, s in summaries.items():
        lines += [*details_md(s, TRANSPORTS[e][1]), ""]
    if default_runs:
        walls = ", ".join(fmt_s(r.wall_s) + ("" if r.error is None else " (failed)")
                          for r in default_runs)
        lines += [f"Default shm gauge (the main job), wall time per round: {walls}.", ""]
        bad = [r for r in default_runs if r.error is not None]
        if bad:
            lines += ["Failed default runs (left out of the target):", ""]
            lines += [f"- round {r.round}: {(r.error or '')[:600]}" for r in bad]
            lines.append("")
    if blind_lines:
        lines += [*blind_lines, ""]
    lines += facts_md(facts, command, raw)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------


def parse_names(text: str, known: Sequence[str], what: str) -> list[str]:
    """A comma-separated list of names from ``known``, without repeats, in order."""
    out = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in out if t not in known]
    if bad or not out:
        raise argparse.ArgumentTypeError(
            f"unknown {what}(s) {', '.join(bad) or '(none)'}; choose from " + ",".join(known))
    return list(dict.fromkeys(out))


def parse_transports(text: str) -> list[str]:
    return parse_names(text, list(TRANSPORTS), "transport")


def parse_blind_stacks(text: str) -> list[str]:
    return parse_names(text, list(blind.STACKS), "stack")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/gauge_bench.py",
        description="The LogGP model of `railgauge gauge` across runs, per transport: "
                    "prediction of the next run, protocol changes, parameter spread, "
                    "reliability and wall time (issue 18's targets); writes section gauge of "
                    "docs/BENCHMARKS.md.")
    p.add_argument("--transports", type=parse_transports, default=None,
                   help="comma-separated, from " + ",".join(TRANSPORTS)
                   + " (default: all five; with --from, those of the kept runs)")
    p.add_argument("--runs", type=int, default=10,
                   help="rounds; each runs every transport once (default 10; 0 with --blind: "
                        "the blind runs only)")
    p.add_argument("--raw-dir", type=Path, default=None,
                   help="folder that keeps every run's report folder and runs.json "
                        "(default build/bench/gauge-<stamp>)")
    p.add_argument("--from", dest="from_dirs", type=Path, action="append", default=None,
                   help="recompute the section from a --raw-dir of an earlier run, "
                        "measuring nothing; twice: the rounds from the first folder that has "
                        "them, the blind runs from the first that has them (a --blind "
                        "--runs 0 run kept apart)")
    p.add_argument("--refit", action="store_true",
                   help="with --from: fit the kept measurements again with this checkout's "
                        "fit (into FROM/refit/) instead of reading the kept models")
    p.add_argument("--no-write", action="store_true",
                   help="print the section instead of writing it into the document")
    p.add_argument("--section", default="gauge", help="section name (default gauge)")
    p.add_argument("--out", type=Path, default=DOC,
                   help="document to update (default docs/BENCHMARKS.md)")
    p.add_argument("--no-default-shm", action="store_true",
                   help="leave out the timed default shm gauge of each round")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds one gauge run may take (default 600)")
    p.add_argument("--gauge-args", default="",
                   help="extra arguments for every `railgauge gauge` (not the --blind runs, "
                        "whose arguments are fixed)")
    p.add_argument("--railgauge", default=None,
                   help="railgauge command, run as it is (default: found like run_bench.py "
                        "does, with this checkout's python/ first on PYTHONPATH)")
    p.add_argument("--blind", action="store_true",
                   help="also run the blind-threshold benchmark (subsection \"Blind "
                        "thresholds\"): per stack a protocol threshold moved to drawn values")
    p.add_argument("--blind-runs", type=int, default=10,
                   help="moved runs per stack with --blind (default 10)")
    p.add_argument("--blind-stacks", type=parse_blind_stacks, default=None,
                   help="comma-separated, from " + ",".join(blind.STACKS)
                   + " (default: all four; with --from, those of the kept runs)")
    p.add_argument("--blind-seed", type=int, default=None,
                   help="seed of the drawn thresholds (default: a random one, printed and "
                        "kept in runs.json)")
    p.add_argument("--blind-default-runs", type=int, default=1,
                   help="runs at the default settings per window with --blind (default 1)")
    args = p.parse_args(argv)
    if args.blind_runs < 1 or args.blind_default_runs < 1:
        p.error("--blind-runs and --blind-default-runs must be at least 1")
    if args.blind_seed is None:
        args.blind_seed = random.SystemRandom().randrange(1, 2**31)
    if args.runs < 0 or (args.runs == 0 and not args.blind):
        p.error("--runs must be at least 1 (0 only with --blind)")
    if args.from_dirs is not None and args.raw_dir is not None:
        p.error("--from and --raw-dir exclude each other")
    if args.from_dirs is not None and len(args.from_dirs) > 2:
        p.error("--from takes at most two folders (the rounds', the blind runs')")
    if args.refit and args.from_dirs is None:
        p.error("--refit needs --from")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.section):
        p.error("--section takes a name of letters, digits, '-' and '_'")
    return args


def railgauge_command(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    found = find_railgauge(args.railgauge)
    if found is None:
        raise UsageError("railgauge: not on PATH and not importable from python/ "
                         "(`python3 -m pip install .`, or pass --railgauge CMD)")
    cmd, env = found
    env = {**os.environ, **env}
    if args.railgauge is None:
        old = env.get("PYTHONPATH")
        py = str(REPO / "python")
        if not old or old.split(os.pathsep)[0] != py:
            env["PYTHONPATH"] = py + (os.pathsep + old if old else "")
        # The native tools of this checkout's build too, not a copy that an older
        # `pip install .` left beside the Python (railgauge.native.find_tool looks there
        # first): a stale railgauge-bench measures with yesterday's code.
        native = REPO / "build" / "native"
        if not env.get("RG_NATIVE_DIR") and (native / "railgauge-bench").is_file():
            env["RG_NATIVE_DIR"] = str(native)
    return cmd, env


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    command = shlex.join(["python3", "bench/gauge_bench.py",
                          *(sys.argv[1:] if argv is None else argv)])
    out_path = args.out if args.out.is_absolute() else Path.cwd() / args.out
    failed = False
    blind_raw: Path | None = None
    if args.from_dirs is not None:
        kept: list[tuple[Path, dict[str, Any]]] = []
        for d in args.from_dirs:
            kraw = d.resolve()
            idx_path = kraw / "runs.json"
            if idx_path.is_file():
                kidx = json.loads(idx_path.read_text())
            elif kraw.is_dir():
                kidx = index_from_folders(kraw)
                kidx["blind_runs"] = blind_index_from_folders(kraw)
            else:
                log(f"{kraw}: no such folder")
                return 2
            kept.append((kraw, kidx))
        with_rounds = [(r, i) for r, i in kept if i.get("runs")]
        if not with_rounds:
            log(f"{', '.join(str(r) for r, _ in kept)}: no kept rounds")
            return 2
        raw, index = with_rounds[0]
        blind_from = next(((r, i) for r, i in kept if i.get("blind_runs")), None)
        if blind_from is not None and blind_from[0] != raw:
            blind_raw = blind_from[0]
            index = {**index, "blind_runs": blind_from[1]["blind_runs"],
                     "blind": blind_from[1].get("blind")}
        facts = dict(index.get("facts") or {})
        if not facts:
            mf = machine_facts(None)
            facts = mf | {"date": f"analysed {mf['date']} (measurement date unknown)"}
        measured_by = "\n".join(dict.fromkeys(
            str(i["command"]) for _, i in kept if i.get("command")))
        # With --refit the models are this checkout's fit of the kept measurements;
        # without, the measuring commit's, and only the judgement (blind thresholds, host
        # states, targets) is this checkout's.
        here = _git_commit()
        if here:
            command += (f"  # models fitted at commit {here}" if args.refit
                        else f"  # judged at commit {here}")
        command = (f"{measured_by}\n# analysed with:\n{command}" if measured_by
                   else command)
        transports = args.transports or list(index.get("transports") or [])
        args.gauge_args = index.get("gauge_args", args.gauge_args)
    else:
        transports = args.transports or list(TRANSPORTS)
        if args.runs == 0:
            # The blind runs alone: a section of them only would replace the rounds'.
            transports = []
            if not args.no_write:
                log("--runs 0: the section is printed, not written; write it with "
                    "--from ROUNDS_DIR --from THIS_DIR")
                args.no_write = True
        args.transports = transports
        args.blind_stacks = args.blind_stacks or list(blind.STACKS)
        missing = [f"{t}: {NEEDS[t]} not found" for t in transports
                   if t in NEEDS and shutil.which(NEEDS[t]) is None]
        if TESTBED in transports and os.geteuid() != 0:
            missing.append(f"{TESTBED}: network namespaces need root")
        if args.blind:
            missing += [f"blind stack {k}: {why} (leave it out with --blind-stacks)"
                        for k in args.blind_stacks if (why := blind.missing(k)) is not None]
        try:
            cmd, env = railgauge_command(args)
            if missing:
                raise UsageError("missing tools:\n  - " + "\n  - ".join(missing)
                                 + "\n(leave those out with --transports)")
        except UsageError as exc:
            log(str(exc))
            return 2
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        raw = (args.raw_dir or BUILD / f"gauge-{stamp}").resolve()
        raw.mkdir(parents=True, exist_ok=True)
        facts = machine_facts(Tools(cc="", floor=Path(), railgauge=cmd,
                                    railgauge_env={k: v for k, v in env.items()
                                                   if k in ("PYTHONPATH", "RG_NATIVE_DIR")}))
        index: dict[str, Any] = {"command": command, "facts": facts,
                                 "transports": transports, "gauge_args": args.gauge_args,
                                 "railgauge": cmd, "runs": []}
        save_index(raw, index)
        log(f"{args.runs} round(s) of {', '.join(transports)}"
            + ("" if "shm" not in transports or args.no_default_shm else " + default shm")
            + f"; raw folders in {raw}")
        try:
            failed = not measure(args, cmd, env, raw, index)
            if args.blind:
                log(f"blind thresholds: {', '.join(args.blind_stacks)}, {args.blind_runs} "
                    f"run(s) each, seed {args.blind_seed}")
                failed |= not measure_blind(args, cmd, env, raw, index)
        except UsageError as exc:
            log(str(exc))
            return 2
        facts["loadavg_end"] = os.getloadavg()
        index["facts"] = facts
        save_index(raw, index)

    if args.refit:
        log(f"fitting the kept measurements again into {raw / 'refit'}")
    runs = runs_from_index(raw, index, raw / "refit" if args.refit else None)
    failed |= any(r.error is not None for r in runs)
    summaries = {t: summarize_entry(t, sorted((r for r in runs if r.entry == t),
                                              key=lambda r: r.round))
                 for t in transports}
    default_runs = sorted((r for r in runs if r.entry == DEFAULT_SHM and "shm" in transports),
                          key=lambda r: r.round)
    n_rounds = max((r.round for r in runs), default=0)
    blind_lines = None
    if index.get("blind_runs"):
        meta = dict(index.get("blind") or {})
        stacks = [k for k in (args.blind_stacks or meta.get("stacks") or blind.STACKS)
                  if k in blind.STACKS and any(e["stack"] == k for e in index["blind_runs"])]
        braw = blind_raw or raw
        if args.refit:
            log(f"fitting the blind runs' measurements again into {braw / 'refit'}")
        bruns = [load_blind_run(e, braw, braw / "refit" if args.refit else None)
                 for e in index["blind_runs"] if e["stack"] in stacks]
        failed |= any(r.error is not None for r in bruns)
        blind_lines = blind_md([summarize_blind(k, [r for r in bruns if r.stack == k])
                          for k in stacks], meta)
    md = section_md(summaries, default_runs, n_rounds, shlex.split(args.gauge_args), facts,
                    command, raw, blind_lines)
    emit_section(out_path, args.section, md, args.no_write, log)
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("gauge_bench: interrupted", file=sys.stderr)
        sys.exit(130)
