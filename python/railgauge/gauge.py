"""The steps of ``railgauge gauge`` as one library function, :func:`run_gauge`: measure
PRTT (refined around protocol changes), 1:n / n:1 (LoP), the barriers with more than two
ranks, the shared-memory flag model, each rail alone; fit LogGP (cross-validated), simulate
the barriers on the fit, fit LoP and compare the models; write the report folder. The CLI
(:mod:`railgauge.cli.gauge`) parses options and prints; everything here takes its settings
as arguments and reports progress through ``ui`` (a :class:`railgauge.terminal.Terminal`).

A failed PRTT measurement raises :class:`GaugeError`; every later part that fails (onen, the
barriers, the flag model, the LoP analysis) becomes a reason in the report, so the
measurements and the LogGP model still stand."""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railgauge.terminal import Terminal

__all__ = [
    "GaugeError",
    "GaugeOptions",
    "GaugeResult",
    "fit_boundaries",
    "measure_onen_step",
    "measure_prtt_step",
    "run_gauge",
]


class GaugeError(Exception):
    """A step the gauge cannot do without (the PRTT measurement, a rail): the cause."""


@dataclass
class GaugeOptions:
    """The gauge's settings beyond the measurement plan."""

    ranks: int = 2
    no_onen: bool = False
    no_barrier: bool = False
    #: Seconds for the onen measurement (None: a third of the PRTT budget, at least 5).
    onen_budget: float | None = None
    seed: int = 0
    #: Measure each of these rails alone (``--rails``); None: no rails.
    rail_names: list[str] | None = None


@dataclass
class GaugeResult:
    """What a gauge run made: the files are in ``out_dir``."""

    out_dir: Path
    meas: Any
    fit: Any
    model: dict[str, Any]
    part: Any
    barrier: Any = None
    rails: Any = None
    flags_path: Path | None = None
    report: Path | None = None
    wall_s: float = 0.0
    refined_sizes: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """What ``gauge --json`` prints: the model, the LoP part's summary, the flag model,
        the barriers and the rails where measured."""
        return {**self.model, **self.part.summary(),
                **({"flags": json.loads(self.flags_path.read_text())}
                   if self.flags_path is not None else {}),
                **({"barrier": self.barrier.to_json()} if self.barrier is not None else {}),
                **({"rails": self.rails.to_json()} if self.rails is not None else {})}


def fit_boundaries(path: Any, bend_support: float | None = None) -> list[tuple[int, int]]:
    """Where a quick fit of the file puts protocol changes: (last size of a range, first
    size of the next); the refinement measures between them. With ``bend_support``, also
    the bends of the optimal partition whose break support is at least that (breaks the
    fit merged away for too little support: measured more closely, a real change gains
    support; a step of the sweep's noise need not)."""
    from railgauge.fit.loggp import fit_loggp
    from railgauge.measurements import read_measurements

    fit = fit_loggp(read_measurements(path), n_boot=0)
    out = [(r.to_bytes, nxt.from_bytes) for r, nxt in zip(fit.ranges, fit.ranges[1:], strict=False)
           if r.to_bytes is not None]
    if bend_support is not None:
        for b in (fit.criterion.get("break_support") or {}).get("breaks") or []:
            sup = b.get("support")
            if (not b.get("kept") and "merged" not in b and sup is not None
                    and sup >= bend_support):
                lo, hi = b["between_bytes"]
                out.append((int(lo), int(hi)))
    return sorted(set(out))


def measure_prtt_step(plan: Any, out: Path, ui: Terminal) -> Any:
    """PRTT over the plan's sweep (and its refinement) into ``out``, with a progress
    display; GaugeError with the cause where it fails."""
    from railgauge.hoststate import measure_c2c
    from railgauge.launcher import LaunchError
    from railgauge.measure import MeasureError, measure_prtt
    from railgauge.native import NativeToolError

    one_host = _one_host(plan)
    c2c_before = measure_c2c() if one_host else None
    try:
        with ui.progress(f"PRTT over {plan.transport}") as cb:
            res = measure_prtt(plan, out, progress=cb,
                               fit_boundaries=functools.partial(
                                   fit_boundaries, bend_support=plan.refine_support))
    except (MeasureError, NativeToolError, LaunchError) as exc:
        raise GaugeError(str(exc)) from None
    append_placement(plan, out)
    if one_host:
        append_c2c(out, c2c_before, measure_c2c())
    return res


def _one_host(plan: Any) -> bool:
    """Whether the plan's ranks start on this host (no --hosts, --hostfile or --netns)."""
    return all(getattr(plan, k, None) is None for k in ("hosts", "hostfile", "netns"))


def append_c2c(out: Path, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
    """Appends a ``c2c`` record to the measurements: the cache line's one-way time between
    the ranks' CPUs just before and just after the PRTT measurement (``railgauge-bench
    c2c``; docs/fit.md, section 1: on a virtual machine it says where the hypervisor ran the
    two vCPUs). Nothing where neither could be measured; readers skip the record type."""
    if before is None and after is None:
        return
    rec: dict[str, Any] = {"type": "c2c",
                           "cpus": (before or after or {}).get("cpus"),
                           "before_ns": before["one_way_ns"] if before else None,
                           "after_ns": after["one_way_ns"] if after else None}
    try:
        with Path(out).open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    except OSError:
        pass


def append_placement(plan: Any, out: Path) -> None:
    """Appends a ``placement`` record to the measurements: where the ranks ran, as far as
    the launch says (the header names rank 0's host only). ``one_host`` is True where the
    ranks were started without --hosts, --hostfile or --netns (railgauge's launcher starts
    them here; an MPI launcher without hosts does too, outside a batch allocation that
    spreads them). Readers skip the record type (docs/fit.md); the exports read it
    (docs/export.md). A file that cannot be appended to is left as it is."""
    rec = {
        "type": "placement",
        "launcher": getattr(plan, "launcher", None) or "local",
        "hosts": getattr(plan, "hosts", None),
        "hostfile": getattr(plan, "hostfile", None),
        "netns": getattr(plan, "netns", None),
        "one_host": _one_host(plan),
    }
    try:
        with Path(out).open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    except OSError:
        pass


def measure_onen_step(plan: Any, out: Path, ui: Terminal, *, ranks: int,
                      budget_s: float) -> tuple[Path | None, str | None, float | None]:
    """Runs ``railgauge-bench onen`` with a progress display: (the file, None, its wall
    time) or (None, why not, None). A tool without the onen pattern, a failed run or a
    launcher that cannot start are reasons, never errors: the gauge goes on without onen."""
    from railgauge.launcher import LaunchError
    from railgauge.measure import MeasureError, measure_onen
    from railgauge.native import NativeToolError

    try:
        with ui.progress(f"1:n / n:1 over {plan.transport}, {ranks} ranks") as cb:
            res = measure_onen(plan, out, ranks=ranks, budget_s=budget_s, progress=cb)
    except (MeasureError, NativeToolError, LaunchError) as exc:
        return None, str(exc), None
    ui.detail(f"measured {res.points} onen points in {res.wall_s:.1f} s")
    return res.path, None, res.wall_s


def run_gauge(plan: Any, opts: GaugeOptions, out_dir: Path, ui: Terminal,
              *, quick: bool = False) -> GaugeResult:
    """Every step of the gauge into ``out_dir`` (which must exist); see the module
    docstring. Raises GaugeError where the PRTT measurement or a rail fails."""
    t0 = time.monotonic()
    meas_path = out_dir / "measurements.jsonl"
    res = measure_prtt_step(plan, meas_path, ui)
    from railgauge.hoststate import c2c_text

    c2c = c2c_text(meas_path)
    ui.detail(f"measured {res.points} points in {res.wall_s:.1f} s"
              + (f"; refined at {res.refined_sizes}" if res.refined_sizes else "")
              + (f"; refinement at {res.refine_dropped} left out: measured only in "
                 "another state of the host than the sweep (docs/fit.md, section 1)"
                 if res.refine_dropped else ""))
    if c2c is not None:
        ui.detail(f"a cache line between the ranks' CPUs, one way: {c2c}")
    ranks = opts.ranks
    onen_path: Path | None = None
    not_measured: str | None = None
    onen_wall: float | None = None
    if not opts.no_onen:
        ob = opts.onen_budget if opts.onen_budget is not None else max(5.0, plan.budget_s / 3.0)
        onen_path, not_measured, onen_wall = measure_onen_step(
            plan, out_dir / "onen.jsonl", ui, ranks=ranks, budget_s=ob)
        if not_measured is not None:
            ui.warn(f"onen not measured: {not_measured}")
    barrier = None
    if ranks > 2 and not opts.no_barrier:
        from railgauge.gauge_barrier import measure_barriers

        with ui.progress(f"barriers over {plan.transport}, {ranks} ranks") as bcb:
            barrier = measure_barriers(plan, ranks, progress=bcb)
        if barrier.reason:
            ui.warn(f"barriers not measured: {barrier.reason}")

    flags_path: Path | None = None
    if plan.transport == "shm":
        from railgauge.gauge_barrier import measure_flag_model

        with ui.status("flag model (the shared-memory barrier's signals)"):
            flags_path, why = measure_flag_model(plan, ranks, out_dir)
        if why is not None:
            ui.warn(f"flag model not measured: {why}")

    rails = None
    if opts.rail_names is not None:
        from railgauge.gauge_rails import RailsGaugeError, measure_rails

        try:
            rails = measure_rails(plan, opts.rail_names, out_dir,
                                  lambda p, path: measure_prtt_step(p, path, ui),
                                  seed=opts.seed)
        except RailsGaugeError as exc:
            raise GaugeError(str(exc)) from None

    from railgauge.fit.loggp import fit_loggp
    from railgauge.gauge_lop import analyse_lop
    from railgauge.measurements import read_measurements
    from railgauge.parts import LopPart
    from railgauge.report.html import write_report

    meas = read_measurements(meas_path)
    with ui.status("fitting LogGP and cross-validating it"):
        fit = fit_loggp(meas, seed=opts.seed, accuracy=True)
    model = fit.to_json()
    (out_dir / "model-loggp.json").write_text(json.dumps(model, indent=2) + "\n")
    if barrier is not None and barrier.status == "measured":
        from railgauge.gauge_barrier import predict_barriers

        with ui.status("simulating the barriers on the fit"):
            predict_barriers(barrier, out_dir / "model-loggp.json", flags_path)
    if barrier is not None:
        (out_dir / "barrier.json").write_text(json.dumps(barrier.to_json(), indent=2) + "\n")
    with ui.status("LoP fit and model comparison"):
        try:
            part = analyse_lop(meas, fit, out_dir, onen_path=onen_path,
                               not_measured=not_measured, skipped=opts.no_onen,
                               ranks=None if opts.no_onen else ranks, wall_s=onen_wall)
        except Exception as exc:  # the measurements and the LogGP report still count
            part = LopPart(status="fit failed", reason=f"the LoP analysis failed: {exc!r}",
                           ranks=ranks, compare_error="the LoP analysis failed")
            ui.warn(part.reason or "")
    for w in part.warnings:
        ui.warn(w)
    report = write_report(out_dir, meas, fit, {"wall_s": time.monotonic() - t0,
                                               "quick": quick,
                                               "refined_sizes": res.refined_sizes,
                                               "refine_dropped": res.refine_dropped,
                                               **({"cache line between the ranks' CPUs": c2c}
                                                  if c2c is not None else {}),
                                               "onen_ranks": None if opts.no_onen else ranks,
                                               "onen": part.headline(),
                                               **({"barriers": barrier.headline()}
                                                  if barrier is not None else {})},
                          lop=part, barrier=barrier)
    return GaugeResult(out_dir=out_dir, meas=meas, fit=fit, model=model, part=part,
                       barrier=barrier, rails=rails, flags_path=flags_path, report=report,
                       wall_s=time.monotonic() - t0, refined_sizes=list(res.refined_sizes))
