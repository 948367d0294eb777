"""`railgauge check`: how well a LogGP model predicts the PRTT points of a run.

Exit 0 when the median relative error of every decade of sizes is within 10%, 3 when
not (the worst points are listed); 2 for bad input (one line), as everywhere.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from railgauge.cli.common import UserError, no_file
from railgauge.terminal import Terminal

if TYPE_CHECKING:
    from railgauge.fit.loggp import LoggpFit
    from railgauge.measurements import Measurements

#: Exit status when a decade's median error exceeds the limit.
EXIT_OFF = 3
MODEL_NAME = "model-loggp.json"
MEASUREMENTS_NAME = "measurements.jsonl"


def _reader() -> Callable[[Path], Measurements]:
    """The reader of MEASUREMENTS: railgauge JSON Lines or a Netgauge loggp table, told
    apart by content."""
    from railgauge.netgauge import read_any as read

    return read


def _resolve(path: Path, name: str, what: str) -> Path:
    """A file, or ``name`` inside a report folder; UserError when there is none."""
    if path.is_dir():
        inner = path / name
        if not inner.is_file():
            raise UserError(f"{path}: a folder without {name} (give the {what} file)")
        return inner
    if not path.is_file():
        raise UserError(no_file(path))
    return path


def _pct(v: float | None) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{100.0 * v:.1f}%"


def _decade_label(lo: int, hi: int) -> str:
    return f"{lo}-{hi} B"


def _stored_accuracy(path: Path) -> dict[str, Any] | None:
    """The model file's own ``accuracy`` object (held out on its run), if it has one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    acc = doc.get("accuracy") if isinstance(doc, dict) else None
    if not isinstance(acc, dict):
        return None
    try:
        json.dumps(acc, allow_nan=False)
    except ValueError:
        return None
    return acc


def _model_state(model: LoggpFit) -> tuple[float, str] | None:
    """The host's state of the model's run (``source.host_state``: ``probe_us`` and what the
    probe measured, PRTT(1,0,1) in older models), if recorded."""
    from railgauge.hoststate import LEGACY_PROBE

    st = model.source.get("host_state")
    if not isinstance(st, dict):
        return None
    v, probe = st.get("probe_us"), st.get("probe")
    if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
        return None
    return float(v), probe if isinstance(probe, str) else LEGACY_PROBE


def _host_states(model: LoggpFit, meas: Measurements) -> dict[str, Any] | None:
    """The host's state of the model's run against that of the measurements (docs/fit.md,
    section 1): both probes, their ratio and whether they are one state (None where the
    two runs' probes measured different things); None where either run has no probes."""
    from railgauge.hoststate import points_host_state, same_state

    mine = _model_state(model)
    st = points_host_state(meas.records, meas.header)
    if mine is None or st is None:
        return None
    a, probe = mine
    b = float(st["probe_us"])
    comparable = probe == st["probe"]
    gap = float(st["gap"])  # points_host_state: the run's header_gap, already checked
    return {"model_probe_us": a, "measurements_probe_us": b, "ratio": b / a,
            "probe": probe, "measurements_probe": st["probe"],
            "same": same_state(a, b, gap) if comparable else None, "gap": gap}


def _placements(model: LoggpFit, meas: Measurements) -> dict[str, Any] | None:
    """The cache line's time between the ranks' CPUs in the model's run against the
    measurements' (the gauge's ``c2c`` records; docs/fit.md, section 1): on a virtual
    machine, whether the two runs had their vCPUs in one placement. None where either run
    has no such record."""
    from railgauge.hoststate import compare_c2c

    src = model.source.get("c2c")
    return compare_c2c(src if isinstance(src, dict) else None, meas.c2c)


def check_document(model_path: Path, meas_path: Path) -> dict[str, Any]:
    """The check of the model file against the measurements file as one JSON object.

    Raises :class:`UserError` for unreadable or invalid input.
    """
    from railgauge.fit.accuracy import (
        CHECK_DECADE_MEDIAN_REL,
        by_decade,
        noise,
        per_range,
        point_errors,
        summarize,
        worst,
    )
    from railgauge.fit.loggp import ModelError, load_loggp_model

    model_file = _resolve(model_path, MODEL_NAME, "model")
    meas_file = _resolve(meas_path, MEASUREMENTS_NAME, "measurements")
    try:
        model = load_loggp_model(model_file)
    except (ModelError, ValueError) as exc:
        raise UserError(str(exc)) from None
    if not model.ranges:
        raise UserError(f"{model_file}: the model has no ranges (its fit failed)")
    try:
        meas = _reader()(meas_file)
    except (ValueError, OSError) as exc:
        raise UserError(str(exc)) from None
    try:
        errs = point_errors(model, meas)
    except ValueError as exc:
        raise UserError(f"{model_file}: {exc}") from None
    if not errs:
        raise UserError(f"{meas_file}: no PRTT(1,0,s), PRTT(n,0,s) or PRTT(n,d,s) records")
    decades = by_decade(errs)
    off = [
        d for d in decades
        if d["median_rel"] is not None and d["median_rel"] > CHECK_DECADE_MEDIAN_REL
    ]
    return {
        "model": str(model_file),
        "measurements": str(meas_file),
        "transport": {"model": model.transport, "measurements": meas.transport},
        "errors": summarize(errs),
        "by_decade": decades,
        "per_range": per_range(model, errs),
        "worst": worst(errs),
        "noise": noise(meas),
        "model_accuracy": _stored_accuracy(model_file),
        "host_state": _host_states(model, meas),
        "cpu_placement": _placements(model, meas),
        "decade_median_rel_max": CHECK_DECADE_MEDIAN_REL,
        "decades_off": [d["from_bytes"] for d in off],
        "pass": not off,
        "rule": (
            "rel = |predicted - median_us| / median_us over every PRTT(1,0,s), PRTT(n,0,s) "
            "and PRTT(n,d,s) record (orecv records are not judged); pass when the median "
            f"rel of every decade of sizes is <= {CHECK_DECADE_MEDIAN_REL:g}"
        ),
    }


def _text(doc: dict[str, Any]) -> str:
    e = doc["errors"]
    nz = doc["noise"]
    tr = doc["transport"]
    lines = [
        f"model {doc['model']} ({tr['model']}) against {doc['measurements']} "
        f"({tr['measurements']}), {e['points']} PRTT points",
        f"error |predicted - measured| / measured: median {_pct(e['median_rel'])}, "
        f"p90 {_pct(e['p90_rel'])}, max {_pct(e['max_rel'])}",
        f"these measurements' own noise (per point max(CI half-width, local scatter)): "
        f"median {_pct(nz['median_rel'])}, p90 {_pct(nz['p90_rel'])}",
    ]
    visit = nz.get("visit_spread_rel") or {}
    if visit.get("median") is not None:
        lines.append(
            f"a point of these measurements measured again in the same host state (visit to "
            f"visit): median {_pct(visit['median'])}, p90 {_pct(visit.get('p90'))}"
        )
    acc = doc.get("model_accuracy") or {}
    held = acc.get("held_out") if isinstance(acc, dict) else None
    if isinstance(held, dict):
        lines.append(
            f"the model's held-out error on its own run: median "
            f"{_pct(held.get('median_rel'))}, p90 {_pct(held.get('p90_rel'))}"
        )
    hs = doc.get("host_state")
    if isinstance(hs, dict):
        from railgauge.hoststate import format_probe

        probe = hs["probe"]
        mine = format_probe(probe, hs["model_probe_us"])
        theirs = format_probe(str(hs.get("measurements_probe")), hs["measurements_probe_us"])
        if hs["same"] is None:
            lines.append(
                f"the host's state: the model's run probed it by {mine}, these "
                f"measurements by {theirs}: not comparable (made by different versions of "
                "railgauge-bench, or one run's ranks shared a host and the other's did not)"
            )
        else:
            lines.append(
                f"the host's state (railgauge-bench's probe): {mine} in the model's run, "
                f"{theirs} in these measurements "
                f"({hs['ratio']:.2f}x): "
                + ("one state" if hs["same"] else
                   f"another state of the host ({hs['gap']:g}x apart or more): what differs "
                   "between the runs is the host as much as the model")
            )
    cp = doc.get("cpu_placement")
    if isinstance(cp, dict):
        line = (f"the cache line between the ranks' CPUs: {cp['model_ns']:.0f} ns one way in "
                f"the model's run, {cp['measurements_ns']:.0f} ns in these measurements: ")
        if cp["same"] is None:
            line += ("the CPUs moved during "
                     + ("both runs" if cp["model_moved"] and cp["measurements_moved"] else
                        "the model's run" if cp["model_moved"] else "these measurements")
                     + ", so which placement each point had is not known")
        elif cp["same"]:
            line += "one placement"
        else:
            line += (f"two placements of the CPUs ({cp['gap']:g}x apart or more): the runs "
                     "measured two machines, and what differs is the host as much as the model")
        lines.append(line)
    noise_by = {d["from_bytes"]: d for d in nz["by_decade"]}
    rows = [["sizes", "points", "median", "p90", "max", "noise"]]
    for d in doc["by_decade"]:
        nd = noise_by.get(d["from_bytes"])
        rows.append([
            _decade_label(d["from_bytes"], d["to_bytes"]),
            str(d["points"]),
            _pct(d["median_rel"]),
            _pct(d["p90_rel"]),
            _pct(d["max_rel"]),
            _pct(nd["median_rel"]) if nd is not None else "-",
        ])
    lines.append("")
    lines.extend(_table(rows))
    rows = [["range", "points", "median", "p90", "max"]]
    for r in doc["per_range"]:
        to = "inf" if r["to_bytes"] is None else str(r["to_bytes"])
        rows.append([f"{r['from_bytes']}-{to} B", str(r["points"]), _pct(r["median_rel"]),
                     _pct(r["p90_rel"]), _pct(r["max_rel"])])
    lines.append("")
    lines.extend(_table(rows))
    rows = [["s (B)", "pattern", "n", "d (us)", "measured (us)", "predicted (us)", "error"]]
    for w in doc["worst"]:
        rows.append([str(w["s"]), w["pattern"], str(w["n"]), f"{w['d_us']:.4g}",
                     f"{w['measured_us']:.4g}", f"{w['predicted_us']:.4g}",
                     f"{100.0 * w['signed_rel']:+.1f}%"])
    lines.append("")
    lines.append("worst points:")
    lines.extend(_table(rows))
    lines.append("")
    limit = _pct(doc["decade_median_rel_max"])
    if doc["pass"]:
        lines.append(f"pass: the median error of every decade of sizes is within {limit}")
    else:
        off = [d for d in doc["by_decade"] if d["from_bytes"] in doc["decades_off"]]
        lines.append(
            f"off: median error above {limit} in "
            + ", ".join(
                f"{_decade_label(d['from_bytes'], d['to_bytes'])} ({_pct(d['median_rel'])})"
                for d in off
            )
        )
    return "\n".join(lines)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for j, r in enumerate(rows):
        out.append("  ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)
        ).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


@click.command(short_help="How well a LogGP model predicts a run's PRTT points.")
@click.argument("model_path", metavar="MODEL", type=click.Path(path_type=Path))
@click.argument("meas_path", metavar="MEASUREMENTS", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the check as one JSON object.")
def check(model_path: Path, meas_path: Path, as_json: bool) -> int:
    """How well MODEL (a model-loggp.json, or a report folder with one) predicts the PRTT
    points of MEASUREMENTS (a measurements.jsonl, a Netgauge loggp table, or a report
    folder with a measurements.jsonl), e.g. of another run or another machine: the
    relative error |predicted - measured| / measured
    of every PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) record, overall, by decade of sizes
    and per range, the worst points, and the measurements' own noise beside them.

    Exit 0 when the median error of every decade of sizes is within 10%, 3 when not (the
    worst points are listed), 2 for bad input."""
    term = Terminal()
    doc = check_document(model_path, meas_path)
    if as_json:
        term.result(json.dumps(doc, indent=2, allow_nan=False))
    else:
        term.result(_text(doc))
    return 0 if doc["pass"] else EXIT_OFF
