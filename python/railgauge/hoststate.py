"""The host's states (docs/fit.md, section 1): railgauge-bench prtt probes the host before
every visit of a size with a few 1-byte round trips, and on the two-vCPU virtual machine
of the benchmarks those probes take two values 3-4x apart for seconds to minutes at a
time (where the hypervisor puts the two vCPUs). These functions mirror the tool's cut
between the two states (prtt.c, rg__bench_state_cut), name the state a run's points
describe, and compare the states of two runs, from the records alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

#: The host's two states (railgauge-bench prtt, rg__bench_state_cut; docs/fit.md, section
#: 1): the probes' best split on a log scale, each side at least STATE_MIN probes, is two
#: states where the sides' medians are at least STATE_RATIO apart with at most the share
#: STATE_VALLEY of the probes in the middle third between them.
STATE_RATIO = 1.25
STATE_VALLEY = 0.1
STATE_MIN = 3
#: A refined size whose every probe is this factor or more from the sweep's reference
#: state was measured in another state (:func:`off_state_sizes`).
STATE_GAP = 1.25


def state_cut(probes: list[float]) -> float:
    """railgauge-bench's cut between two states of the host (prtt.c, rg__bench_state_cut):
    the split of the sorted probes with the largest between-class variance of their
    logarithms (Otsu's rule; each side STATE_MIN probes or more), where the sides' medians
    a < b are at least STATE_RATIO apart and at most STATE_VALLEY of the probes lie strictly
    between a (b/a)^(1/3) and b (a/b)^(1/3); the cut is sqrt(a b). 0.0 where the probes show
    one state."""
    xs = sorted(float(v) for v in probes if v > 0)
    n = len(xs)
    if n < 2 * STATE_MIN:
        return 0.0
    logs = [math.log(v) for v in xs]
    total = sum(logs)
    s1, best, k = 0.0, -1.0, 0
    for i in range(1, n):
        s1 += logs[i - 1]
        if i < STATE_MIN or n - i < STATE_MIN:
            continue
        w = i / n
        v = w * (1.0 - w) * ((total - s1) / (n - i) - s1 / i) ** 2
        if v > best:
            best, k = v, i
    a, b = xs[(k - 1) // 2], xs[k + (n - k - 1) // 2]
    if b < STATE_RATIO * a:
        return 0.0
    r = (b / a) ** (1.0 / 3.0)
    valley = sum(a * r < v < b / r for v in xs)
    if valley > STATE_VALLEY * n:
        return 0.0
    return math.sqrt(a * b)


def _probes(rec: dict[str, Any]) -> list[float]:
    vals = rec.get("pass_state_us")
    if not isinstance(vals, list):
        return []
    return [float(v) for v in vals if isinstance(v, (int, float)) and v > 0]


def _probes_by_size(records: list[dict[str, Any]]) -> dict[int, list[float]]:
    """Each size's probes of the host's state, one a visit: those of its record with the
    most passes (the kinds of a size share a visit's probe)."""
    out: dict[int, list[float]] = {}
    for r in records:
        s = r.get("s")
        if r.get("type") in ("prtt", "orecv") and isinstance(s, int):
            ps = _probes(r)
            if len(ps) > len(out.get(s, [])):
                out[s] = ps
    return out


def reference_state_us(records: list[dict[str, Any]]) -> float | None:
    """The state of the host a run's points describe (railgauge-bench keeps each point's
    passes from it, prtt.c: rg__bench_state_cut): the side of the probes' cut in which
    more sizes have a probe (the faster on a tie); the median of that side's probes (of
    all of them where they show one state). None for a run without probes."""
    st = _state_of(_probes_by_size(records))
    return None if st is None else st[0]


def _state_of(by_size: Mapping[int, list[float]]) -> tuple[float, int, float] | None:
    """(reference state, probes, cut) of each size's probes: see :func:`reference_state_us`
    and :func:`state_cut`; None without probes."""
    probes = sorted(v for ps in by_size.values() for v in ps)
    if not probes:
        return None
    cut = state_cut(probes)
    if cut == 0.0:
        ref = probes
    else:
        fast = sum(any(v <= cut for v in ps) for ps in by_size.values())
        slow = sum(any(v > cut for v in ps) for ps in by_size.values())
        ref = ([v for v in probes if v <= cut] if fast >= slow
               else [v for v in probes if v > cut])
    return ref[len(ref) // 2], len(probes), cut


def off_state_sizes(records: list[dict[str, Any]], ref_us: float) -> list[int]:
    """Sizes of a refinement run none of whose passes was made in the state of the sweep
    it refines (ref_us, :func:`reference_state_us` of the sweep): every probe of the size's
    records at least STATE_GAP from ref_us, slower or faster. Measured in another state,
    such a size is not comparable with its neighbours: on the two-core development host
    two refinement sizes measured 1.47x slower than the sizes around them formed a
    protocol range of their own."""
    probes_of: dict[int, list[float]] = {}
    for r in records:
        s = r.get("s")
        if r.get("type") in ("prtt", "orecv") and isinstance(s, int):
            probes_of.setdefault(s, []).extend(_probes(r))
    return sorted(s for s, ps in probes_of.items()
                  if ps and not any(same_state(v, ref_us) for v in ps))


def host_state(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The state of the host a run's points describe, for the model and ``railgauge
    check``: ``{"probe_us": x, "probes": n, "cut_us": c}`` with x its
    :func:`reference_state_us`, n the probes of its sizes and c the cut between its two
    states (None where they show one); None for a run without probes (older files,
    Netgauge's, a run in one pass)."""
    st = _state_of(_probes_by_size([dict(r) for r in records if isinstance(r, Mapping)]))
    if st is None:
        return None
    ref, n, cut = st
    return {"probe_us": ref, "probes": n, "cut_us": cut if cut > 0.0 else None}


def kept_side(state: Mapping[str, Any] | None) -> str | None:
    """Which of a run's two states its points describe, ``"faster"`` or ``"slower"``
    (``state``: :func:`host_state`); None where the run showed one state or has none."""
    cut = (state or {}).get("cut_us")
    probe = (state or {}).get("probe_us")
    if not isinstance(cut, int | float) or cut <= 0 or not isinstance(probe, int | float):
        return None
    return "faster" if probe <= cut else "slower"


def points_host_state(points: Iterable[Any]) -> dict[str, Any] | None:
    """:func:`host_state` of a run's :class:`railgauge.measurements.PrttPoint` records (those
    with probes)."""
    return host_state(
        {"type": p.type, "s": p.s, "pass_state_us": list(p.pass_state_us)}
        for p in points if getattr(p, "pass_state_us", None) is not None
    )


def same_state(a_us: float, b_us: float) -> bool:
    """Whether two runs' states (their ``probe_us``) are one state of the host: less than
    STATE_GAP apart."""
    lo, hi = sorted((a_us, b_us))
    return lo > 0.0 and hi < STATE_GAP * lo
