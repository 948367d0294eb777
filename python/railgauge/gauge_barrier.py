"""The barrier part of a gauge run with more than two ranks: each barrier of coll/ measured
over the gauge's transport (``railgauge-bench barrier``), beside the simulator's prediction
of the same schedule from the gauge's own fit -- the flag model (``model-flags.json``,
``railgauge-bench flagprtt``) where the barrier ran on shared-memory flags, else the LogGP fit
of messages -- and the choice `railgauge tune barrier` makes from that fit.

Never raises for a failed measurement or simulation: every problem is a ``reason`` or a
note, so the rest of the gauge report stands. The part's data (:class:`BarrierPart`) lives
in :mod:`railgauge.parts`, its rendering in :mod:`railgauge.report.barrier`."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from railgauge.parts import BarrierPart, BarrierRow

#: The barriers a gauge measures (nway:n for n = 2, 3; dissem is n = 1).
ALGORITHMS = ("linear", "binomial", "recdbl", "dissem", "nway:2", "nway:3")

__all__ = ["ALGORITHMS", "BarrierPart", "BarrierRow", "measure_barriers",
           "measure_flag_model", "predict_barriers"]


def measure_barriers(plan: Any, ranks: int, *, iterations: int = 500,
                     progress: Callable[[int, int, str], None] | None = None) -> BarrierPart:
    """Runs ``railgauge-bench barrier`` for each algorithm with ``ranks`` ranks under the
    plan's transport and launcher."""
    from railgauge.measure import MeasureError, _run_bench
    from railgauge.native import NativeToolError, find_tool

    part = BarrierPart(status="measured", ranks=ranks, transport=plan.transport)
    try:
        bench = find_tool("railgauge-bench")
    except NativeToolError as exc:
        return BarrierPart("not measured", ranks, plan.transport, reason=str(exc))
    with tempfile.TemporaryDirectory(prefix="railgauge-barrier-") as tmp:
        for k, alg in enumerate(ALGORITHMS):
            if progress is not None:
                progress(k, len(ALGORITHMS), alg)
            out = Path(tmp) / f"{alg.replace(':', '-')}.json"
            argv = [bench, "barrier", "--algorithm", alg, "--transport", plan.transport,
                    "--iterations", str(iterations), "--out", str(out)]
            row = BarrierRow(alg)
            try:
                res = _run_bench(plan, argv, ranks, 120.0)
            except (MeasureError, OSError) as exc:
                row.note = str(exc)
            else:
                if res.returncode != 0 or not out.exists():
                    row.note = f"the barrier benchmark failed: {res.failure}"
                else:
                    rec = json.loads(out.read_text())
                    row.measured_us = float(rec["median_us"])
                    row.p99_us = float(rec["p99_us"])
                    row.impl = rec.get("impl")
            part.rows.append(row)
        if progress is not None:
            progress(len(ALGORITHMS), len(ALGORITHMS), "done")
    if all(r.measured_us is None for r in part.rows):
        part.status = "not measured"
        part.reason = part.rows[0].note if part.rows else "no barrier measured"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if getattr(plan, "launcher", None) in (None, "local") and cpus and ranks > cpus:
        part.notes.append(f"{ranks} ranks on {cpus} CPUs are oversubscribed: every barrier "
                          "round waits for a rank that is not running, which no model of "
                          "the network describes")
    return part


def measure_flag_model(plan: Any, ranks: int, out_dir: Path, *,
                       iterations: int = 5000) -> tuple[Path | None, str | None]:
    """Measures the flag model (``railgauge-bench flagprtt``) with ``ranks`` ranks (2 where
    more would share CPUs) under the plan's launcher, fits it and writes
    ``out_dir/flagprtt.jsonl`` and ``out_dir/model-flags.json``: (the model's path, None) or
    (None, why not). Never raises for a failed measurement."""
    from railgauge.fit.flags import FlagFitError, fit_flags, read_flag_records
    from railgauge.measure import MeasureError, _run_bench
    from railgauge.native import NativeToolError, find_tool

    if plan.transport != "shm" or getattr(plan, "launcher", None) not in (None, "local"):
        return None, (f"the barrier runs on flags only over shm with local ranks (here "
                      f"{plan.transport})")
    try:
        bench = find_tool("railgauge-bench")
    except NativeToolError as exc:
        return None, str(exc)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n = ranks if cpus and ranks <= cpus else 2
    raw = out_dir / "flagprtt.jsonl"
    argv = [bench, "flagprtt", "--iterations", str(iterations), "--out", str(raw)]
    try:
        res = _run_bench(plan, argv, n, 60.0)
    except (MeasureError, OSError) as exc:
        return None, str(exc)
    if res.returncode != 0 or not raw.exists():
        return None, f"the flag benchmark failed: {res.failure}"
    try:
        model = fit_flags(read_flag_records(raw), transport=plan.transport, ranks=n)
    except FlagFitError as exc:
        return None, str(exc)
    path = out_dir / "model-flags.json"
    path.write_text(json.dumps(model, indent=2) + "\n")
    return path, None


def predict_barriers(part: BarrierPart, model: Path, flags: Path | None = None) -> None:
    """Adds the simulator's prediction of each measured barrier and the tuned choice: from
    ``flags`` (the gauge's model-flags.json) where the barriers ran on the shared-memory flags,
    else from ``model`` (the gauge's model-loggp.json); problems become notes."""
    from railgauge.native import NativeToolError, find_tool
    from railgauge.tune import TuneError, tune_barrier

    ran = {r.impl for r in part.rows if r.measured_us is not None}
    on_flags = ran == {"shm"}
    use = flags if on_flags and flags is not None else model
    part.engine = "flags" if use is flags else "messages"
    try:
        tr = tune_barrier(part.ranks, use, tool=find_tool("railgauge-sim"), ns=(2, 3),
                          engine=part.engine)
    except (TuneError, NativeToolError) as exc:
        part.notes.append(f"no simulated prediction: {exc}")
        return
    pred = {(f"nway:{r.n}" if r.algorithm == "nway" else r.algorithm): r.predicted_us
            for r in tr.table}
    for row in part.rows:
        row.predicted_us = pred.get(row.algorithm)
    part.tuned = f"nway:{tr.n}" if tr.algorithm == "nway" else tr.algorithm
    if part.engine == "flags":
        part.notes.append("predictions: railgauge's simulator on the gauge's flag model "
                          "(model-flags.json: the barrier ran on shared-memory flags), plus "
                          "its per-barrier call cost")
    else:
        part.notes.append("predictions: railgauge's simulator on the gauge's LogGP fit (2 "
                          "ranks, no L(p)); where ranks share CPUs, measurements also carry "
                          "the scheduler's wake-ups")
        if on_flags:
            part.notes.append("the barriers ran on shared-memory flags, but there is no flag "
                              "model: the messaging fit overpredicts what gathers signals")
