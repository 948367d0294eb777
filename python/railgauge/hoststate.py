"""The host's states (docs/fit.md, section 1): railgauge-bench prtt probes the host before
every visit of a size and after each pass of its kinds, with a cache line bounced between
its two ranks where they share a host (``params.state_probe`` "c2c", since 2026-11-29; the
one-way time, in us) or else with a few PRTT(n,0,1). On the two-vCPU virtual machine of the
benchmarks those probes take two or three values for seconds to minutes at a time (where
the hypervisor puts the two vCPUs: the line 13-15, 29-37 or 145-167 ns, PRTT(16,0,1) over
shm 0.6, 1.0 or 4 us). These functions mirror the tool's choice of the run's reference
state (prtt.c, rg__bench_state_band), name the state a run's points describe, and compare
the states of two runs, from the records alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

#: The width of a state: railgauge-bench's reference state is the band from c / sqrt(GAP)
#: to c sqrt(GAP) about a probe c (prtt.c, RG_BENCH_STATE_GAP); two runs whose states are
#: less than STATE_GAP apart are in one state (:func:`same_state`), and a refined size
#: whose every probe is STATE_GAP or more from the sweep's state was measured in another
#: (:func:`off_state_sizes`).
STATE_GAP = 1.25
#: The width of a state probed by the cache line (prtt.c, RG_BENCH_C2C_GAP; the header's
#: ``params.state_gap`` says which a run used): its placements are 2.2x and 5x apart.
C2C_GAP = 1.6
#: What the probes of files made before 2026-11-29 measured (their headers do not say).
LEGACY_PROBE = "PRTT(1,0,1)"
#: The name of the cache-line probe (``params.state_probe`` "c2c").
C2C_PROBE = "c2c"


def header_gap(header: Mapping[str, Any] | None) -> float:
    """The width of a run's states, from its header (``params.state_gap``; STATE_GAP in
    files that do not say)."""
    params = (header or {}).get("params")
    g = params.get("state_gap") if isinstance(params, Mapping) else None
    if isinstance(g, int | float) and not isinstance(g, bool) and math.isfinite(g) and g > 1:
        return float(g)
    return STATE_GAP


def _records_gap(records: Iterable[Mapping[str, Any]]) -> float:
    """header_gap of the first header among records (STATE_GAP without one)."""
    for r in records:
        if isinstance(r, Mapping) and r.get("type") == "header":
            return header_gap(r)
    return STATE_GAP


def format_probe(probe: str, value_us: float) -> str:
    """A probe's value as a reader wants it: the cache line in ns, PRTT in us."""
    if probe == C2C_PROBE:
        return f"cache line {value_us * 1e3:.3g} ns one way"
    return f"{probe} {value_us:.3g} us"


def format_band(probe: str, lo_us: float, hi_us: float) -> str:
    """A band of probes as a reader wants it (:func:`format_probe`)."""
    if probe == C2C_PROBE:
        return f"{lo_us * 1e3:.3g}-{hi_us * 1e3:.3g} ns"
    return f"{lo_us:.3g}-{hi_us:.3g} us"


def _probes(rec: Mapping[str, Any], key: str = "pass_state_us") -> list[float]:
    vals = rec.get(key)
    if not isinstance(vals, list):
        return []
    return [float(v) if isinstance(v, (int, float)) and v > 0 else 0.0 for v in vals]


def _pass_probes(rec: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(before, after) of each pass of a record (0.0 where a pass has no probe; older
    files have no probe after a pass)."""
    before = _probes(rec)
    after = _probes(rec, "pass_state_after_us")
    after += [0.0] * (len(before) - len(after))
    return list(zip(before, after[: len(before)], strict=True))


def _points(records: Iterable[Mapping[str, Any]]) -> list[list[tuple[float, float]]]:
    return [_pass_probes(r) for r in records
            if isinstance(r, Mapping) and r.get("type") in ("prtt", "orecv")]


def pass_in(pair: tuple[float, float], lo: float, hi: float) -> bool:
    """Whether a pass's probes before and after it both lie in [lo, hi] (no probe, 0.0,
    counts; prtt.c, rg__bench_pass_in)."""
    return all(v <= 0.0 or lo <= v <= hi for v in pair)


#: A band covers a run when all but this share of its points have a pass in it (both its
#: probes in the band): 98%, so that a point whose only fast pass straddled two fast
#: placements does not keep a whole run in a slow one (prtt.c, RG__BENCH_COVERS).
COVER_SHARE = 0.98


def state_band(records: Iterable[Mapping[str, Any]],
               gap: float | None = None) -> dict[str, Any] | None:
    """railgauge-bench's reference state of a run (prtt.c, rg__bench_choose_band), of the
    bands gap wide about each probe p of the run (p / sqrt(gap) .. p sqrt(gap)): where
    bands cover the points (all but 2%, :data:`COVER_SHARE`, with a pass with both its
    probes in the band), the fastest
    state such bands describe (those about probes from the fastest of them up to sqrt(gap)
    above it), and among its covering bands the one in which the points have the most
    passes, counting at most two a point; else (as before 2026-11-30) the band with the
    most such passes of all. The fastest of equals. ``{"mid_us": p, "band_us": [lo, hi],
    "points": n, "in_band": k}`` with k of the n points having such a pass; None without
    probes. gap None: the run's header among the records says (:func:`header_gap`)."""
    records = list(records)
    if gap is None:
        gap = _records_gap(records)
    points = _points(records)
    probed = sum(1 for pt in points if pt)  # records without probes (older files) aside
    values = sorted({v for pt in points for pair in pt for v in pair if v > 0.0})
    if not values:
        return None
    w = math.sqrt(gap)

    def score(c: float) -> tuple[int, int]:
        """(passes in the band, at most two a point; points with one at least)."""
        lo, hi = c / w, c * w
        per = [min(2, sum(pass_in(pair, lo, hi) for pair in pt)) for pt in points]
        return sum(per), sum(k > 0 for k in per)

    scores = {c: score(c) for c in values}
    full = [c for c in values if 50 * scores[c][1] >= 49 * probed]  # COVER_SHARE
    cands = [c for c in full if c <= full[0] * w] if full else values
    best, mid = 0, 0.0
    for c in cands:
        if scores[c][0] > best:
            best, mid = scores[c][0], c
    if best == 0:
        return None
    lo, hi = mid / w, mid * w
    return {"mid_us": mid, "band_us": [lo, hi], "points": len(points),
            "in_band": scores[mid][1]}


def reference_state_us(records: list[dict[str, Any]],
                       gap: float | None = None) -> float | None:
    """The state of the host a run's points describe (railgauge-bench keeps each point's
    passes made in it): the probe at the middle of its band (:func:`state_band`). None for
    a run without probes."""
    band = state_band(records, gap)
    return None if band is None else float(band["mid_us"])


def off_state_sizes(records: list[dict[str, Any]], ref_us: float) -> list[int]:
    """Sizes of a refinement run not measured in the state of the sweep it refines
    (ref_us, :func:`reference_state_us` of the sweep). Measured in another state, such a
    size is not comparable with its neighbours: on the two-core development host two
    refinement sizes measured 1.47x slower than the sizes around them formed a protocol
    range of their own. A record of a run given that state (``--state-ref``) says
    whether any of its passes was made in it (``in_state``); a size is off when one of its
    records says false. Older records: when every probe of the size's records is at
    least the run's gap (:func:`header_gap`) from ref_us, slower or faster."""
    gap = _records_gap(records)
    probes_of: dict[int, list[float]] = {}
    off: set[int] = set()
    for r in records:
        s = r.get("s")
        if r.get("type") not in ("prtt", "orecv") or not isinstance(s, int):
            continue
        flag = r.get("in_state")
        if isinstance(flag, bool):
            if not flag:
                off.add(s)
            continue
        probes_of.setdefault(s, []).extend(
            v for pair in _pass_probes(r) for v in pair if v > 0.0)
    off.update(s for s, ps in probes_of.items()
               if ps and not any(same_state(v, ref_us, gap) for v in ps))
    return sorted(off)


def probe_name(header: Mapping[str, Any] | None) -> str:
    """What a run's probes of the host's state measured, from its header: "c2c" (the cache
    line between the ranks, ``params.state_probe``), else PRTT(n,0,1) with n its
    ``params.state_probe_n`` (railgauge-bench prtt since 2026-11-29), PRTT(1,0,1) in older
    files. Runs whose probes measured different things cannot be compared by them."""
    params = (header or {}).get("params")
    if isinstance(params, Mapping) and params.get("state_probe") == C2C_PROBE:
        return C2C_PROBE
    n = params.get("state_probe_n") if isinstance(params, Mapping) else None
    return f"PRTT({n},0,1)" if isinstance(n, int) and n >= 1 else LEGACY_PROBE


def host_state(records: Iterable[Mapping[str, Any]],
               probe: str = LEGACY_PROBE, gap: float = STATE_GAP) -> dict[str, Any] | None:
    """The state of the host a run's points describe, for the model and ``railgauge
    check``: ``{"probe_us": x, "band_us": [lo, hi], "points": n, "in_band": k, "probe":
    p, "gap": g}``: x the middle of its band (:func:`state_band`, g wide), k of the run's n
    points measured in it, p what a probe measured (:func:`probe_name`); None for a run
    without probes (older files, Netgauge's, a run in one pass)."""
    band = state_band(records, gap)
    if band is None:
        return None
    return {"probe_us": band["mid_us"], "band_us": band["band_us"], "points": band["points"],
            "in_band": band["in_band"], "probe": probe, "gap": gap}


def points_host_state(points: Iterable[Any],
                      header: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """:func:`host_state` of a run's :class:`railgauge.measurements.PrttPoint` records (those
    with probes), with the run's ``header`` naming the probe (:func:`probe_name`)."""
    return host_state(
        ({"type": p.type, "s": p.s, "pass_state_us": list(p.pass_state_us),
          "pass_state_after_us": list(getattr(p, "pass_state_after_us", None) or [])}
         for p in points if getattr(p, "pass_state_us", None) is not None),
        probe_name(header), header_gap(header),
    )


def same_state(a_us: float, b_us: float, gap: float = STATE_GAP) -> bool:
    """Whether two runs' states (their ``probe_us``) are one state of the host: less than
    gap apart (STATE_GAP for PRTT probes, C2C_GAP for the cache line)."""
    lo, hi = sorted((a_us, b_us))
    return lo > 0.0 and hi < gap * lo


def measure_c2c(timeout_s: float = 20.0) -> dict[str, Any] | None:
    """The cache line's one-way time between the first two CPUs this process may run on
    (those `railgauge run` pins ranks 0 and 1 to), by ``railgauge-bench c2c``: its record,
    or None where it cannot be measured (one CPU, no native tool, a CPU that does not
    answer). On a machine of its own it names the CPUs' relation (one core's two hardware
    threads, one L3, two chiplets or sockets); on a virtual machine, where the hypervisor
    runs the two vCPUs at that moment: on the two-vCPU development host 13, 31 or 155 ns,
    with the shared-memory round trip 0.12, 0.19 or 0.72 us (docs/fit.md, section 1)."""
    import json
    import subprocess

    from railgauge.native import NativeToolError, find_tool

    try:
        tool = find_tool("railgauge-bench")
        proc = subprocess.run([tool, "c2c"], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except (NativeToolError, OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    try:
        rec = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    ok = (isinstance(rec, dict) and rec.get("type") == "c2c"
          and isinstance(rec.get("one_way_ns"), (int, float)) and rec["one_way_ns"] > 0)
    return rec if ok else None


def c2c_record(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """A ``c2c`` record (the gauge's: a cache line's one-way time between the ranks' CPUs
    before and after its measurement, docs/fit.md section 1) reduced to its valid keys:
    ``before_ns`` and ``after_ns`` (positive finite numbers or None; at least one) and
    ``cpus``; None where neither time is valid."""
    def ns(v: Any) -> float | None:
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0
        return float(v) if ok else None

    before, after = ns(rec.get("before_ns")), ns(rec.get("after_ns"))
    if before is None and after is None:
        return None
    cpus = rec.get("cpus")
    ok_cpus = (isinstance(cpus, list) and len(cpus) == 2
               and all(isinstance(c, int) and not isinstance(c, bool) for c in cpus))
    return {"before_ns": before, "after_ns": after, "cpus": cpus if ok_cpus else None}


def _c2c_level(rec: Mapping[str, Any]) -> tuple[float, bool]:
    """A reduced ``c2c`` record's time (the mean of before and after) and whether the CPUs
    moved during its run (before and after C2C_GAP apart or more: the cache line's
    placements are 2.2x and 5x apart, each up to 1.3x wide, so that 29 and 37 ns are one
    placement, as the probe of railgauge-bench prtt has them)."""
    vals = [v for v in (rec["before_ns"], rec["after_ns"]) if v is not None]
    return sum(vals) / len(vals), max(vals) >= C2C_GAP * min(vals)


def c2c_text(path: Any) -> str | None:
    """The last valid ``c2c`` record of a measurements file (appended by the gauge) in
    words, or None: "31 ns before, 155 ns after (CPUs 0 and 1)"; where the two are C2C_GAP
    (1.6x) apart or more it adds that the host moved the CPUs during the run."""
    import json
    from pathlib import Path

    rec: dict[str, Any] | None = None
    try:
        with Path(path).open(encoding="utf-8") as f:
            for line in f:
                if '"c2c"' in line:
                    try:
                        cand = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(cand, dict) and cand.get("type") == "c2c":
                        rec = c2c_record(cand) or rec
    except OSError:
        return None
    if rec is None:
        return None
    parts = [f"{rec[f'{k}_ns']:.0f} ns {k}" for k in ("before", "after")
             if rec[f"{k}_ns"] is not None]
    cpus = rec["cpus"]
    text = ", ".join(parts) + (f" (CPUs {cpus[0]} and {cpus[1]})" if cpus is not None else "")
    if _c2c_level(rec)[1]:
        text += ": the CPUs' placement changed during the run (docs/fit.md, section 1)"
    return text


def compare_c2c(model: Mapping[str, Any] | None,
                meas: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The cache-line times of two runs (``c2c`` records, reduced here by
    :func:`c2c_record`: the model's run's, from its ``source.c2c``, and the measurements'):
    each run's time (the mean of before and after), their ratio, whether each run's CPUs
    moved during it (before and after C2C_GAP apart or more), and ``same``: one placement
    (True: less than C2C_GAP apart, the width of a state the cache line probes in
    railgauge-bench prtt), two (False), or not known (None: a run's CPUs moved). None where
    either run has none."""
    ra = c2c_record(model) if isinstance(model, Mapping) else None
    rb = c2c_record(meas) if isinstance(meas, Mapping) else None
    if ra is None or rb is None:
        return None
    a, b = _c2c_level(ra), _c2c_level(rb)
    same = None if a[1] or b[1] else same_state(a[0], b[0], C2C_GAP)
    return {"model_ns": a[0], "measurements_ns": b[0], "ratio": b[0] / a[0],
            "model_moved": a[1], "measurements_moved": b[1], "same": same, "gap": C2C_GAP}
