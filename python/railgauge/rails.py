"""Multirail runs: the settings of the ``rails`` transport and the bandwidth benchmark on
the testbed (``railgauge rails bench``).

The rails transport (native/src/rails/, docs/transports.md) runs one tcp instance per
rail and a scheduler that places or stripes each message by a policy. This module checks
its settings before any rank starts (a duplicate rail, a weight of zero, a policy that does
not exist: one clear error), measures each rail alone where the weighted policy needs
weights, and runs ``railgauge-bench bw`` between the testbed's first two hosts, or
``msgrate``, ``bcast`` and ``alltoall`` among its first N hosts.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from railgauge.launcher import launch
from railgauge.native import find_tool
from railgauge.netns import Testbed

#: The scheduler's policies (RG_RAILS_POLICY).
POLICIES = ("binding", "round-robin", "even", "weighted", "adaptive")

#: The patterns of ``railgauge rails bench``: bw between two hosts, and message rate,
#: broadcast and all-to-all among ``--hosts`` hosts (railgauge-bench msgrate, bcast,
#: alltoall).
PATTERNS = ("bw", "msgrate", "bcast", "alltoall")
COLL_PATTERNS = PATTERNS[1:]

#: The figures each of those patterns reports (keys of its JSON line).
PATTERN_FIGURES = {
    "msgrate": ("msgs_per_s", "bandwidth_MBps"),
    "bcast": ("avg_us", "min_us", "max_us"),
    "alltoall": ("avg_us", "min_us", "max_us", "bandwidth_MBps"),
}


class RailsError(RuntimeError):
    """A rails run failed (the message says which rank and why)."""


def parse_weights(text: str, nrails: int) -> list[float]:
    """'1,2' as weights for ``nrails`` rails; ValueError for a weight <= 0, not a number,
    or a count that is not the rails'."""
    items = [t.strip() for t in text.split(",")]
    out: list[float] = []
    for item in items:
        try:
            w = float(item)
        except ValueError:
            raise ValueError(f"weight {item!r} is not a number") from None
        if not (w > 0 and math.isfinite(w)):
            raise ValueError(f"weight {item!r} is not above zero")
        out.append(w)
    if len(out) != nrails:
        raise ValueError(f"{len(out)} weights for {nrails} rails: give one per rail")
    return out


def rails_env(rails: Sequence[str], policy: str,
              weights: Sequence[float] | None = None) -> dict[str, str]:
    """The RG_RAILS_* settings of a run over ``rails`` (interfaces, addresses or
    subnets); ValueError for a bad list, policy or weights."""
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r} does not exist; the policies are "
                         f"{', '.join(POLICIES)}")
    names = [r.strip() for r in rails]
    if len(names) < 1 or any(not n for n in names):
        raise ValueError("the rail list is empty or has an empty item")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"the rail list names {', '.join(dup)} more than once")
    env = {"RG_RAILS_LIST": ",".join(names), "RG_RAILS_POLICY": policy}
    if weights is not None:
        if len(weights) != len(names):
            raise ValueError(f"{len(weights)} weights for {len(names)} rails")
        if any(not (w > 0 and math.isfinite(w)) for w in weights):
            raise ValueError("every weight must be above zero")
        env["RG_RAILS_WEIGHTS"] = ",".join(f"{w:.6g}" for w in weights)
    return env


def run_tool(tb: Testbed, transport: str, env: dict[str, str], args: Sequence[str],
             hosts: int = 2, timeout_s: float = 300.0) -> dict[str, Any]:
    """``railgauge-bench ARGS --out FILE`` as one rank on each of the testbed's first
    ``hosts`` hosts over ``transport``; the first JSON line it wrote (RailsError if it
    failed or wrote none)."""
    if hosts < 2 or hosts > len(tb.hosts):
        raise RailsError(f"{hosts} hosts asked for; the testbed has {len(tb.hosts)} "
                         "(railgauge testbed up --hosts N)")
    what = f"{args[0]} over {transport}"
    with tempfile.TemporaryDirectory(prefix="railgauge-rails-") as tmp:
        out = Path(tmp) / "out.json"
        res = launch([find_tool("railgauge-bench"), *args, "--out", str(out)], hosts,
                     transport=transport, env=env, timeout_s=timeout_s,
                     netns=tb.hosts[:hosts])
        if res.returncode != 0:
            raise RailsError(f"{what} failed: {res.failure}")
        try:
            rec: dict[str, Any] = json.loads(out.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError) as exc:
            raise RailsError(f"{what} wrote no result: {exc}") from None
    return rec


def _bw(tb: Testbed, transport: str, env: dict[str, str], size: int, time_s: float,
        warmup_s: float, bidir: bool, verify: bool, window: int,
        timeout_s: float) -> dict[str, Any]:
    args = ["bw", "--size", str(size), "--time", f"{time_s:g}", "--warmup", f"{warmup_s:g}",
            "--window", str(window)]
    if bidir:
        args.append("--bidir")
    if verify:
        args.append("--verify")
    return run_tool(tb, transport, env, args, 2, timeout_s)


def pattern_args(pattern: str, size: int, *, time_s: float, warmup_s: float,
                 verify: bool = True, window: int | None = None) -> list[str]:
    """The arguments of ``railgauge-bench PATTERN`` (msgrate, bcast or alltoall) at one
    size; ValueError for another pattern."""
    if pattern not in COLL_PATTERNS:
        raise ValueError(f"pattern {pattern!r} is not one of {', '.join(COLL_PATTERNS)}")
    args = [pattern, "--size", str(size), "--time", f"{time_s:g}",
            "--warmup", f"{warmup_s:g}"]
    if window is not None:
        args += ["--window", str(window)]
    if verify:
        args.append("--verify")
    return args


def measure_rail_weights(tb: Testbed, size: int, *, time_s: float = 1.0,
                         timeout_s: float = 120.0) -> list[float]:
    """Each rail's bandwidth alone (bw over ``tcp:<rail>``), in MB/s: the weights of the
    weighted policy, as railgauge measured them."""
    out = []
    for rail in tb.rails:
        rec = _bw(tb, f"tcp:{rail.ifname}", {}, size, time_s, 0.2, False, False, 16,
                  timeout_s)
        out.append(float(rec["bandwidth_MBps"]))
    return out


def rails_split(tb: Testbed, rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The bytes each rail carried in a rails run (its transport_info), with the rail's
    name, its weight at the end and its shaped rate."""
    rails = [r.ifname for r in tb.rails]
    per = (rec.get("transport_info") or {}).get("rails") or []
    return [{"name": rails[i] if i < len(rails) else r.get("name"),
             "bytes": int(r.get("bytes_sent", 0)),
             "weight": r.get("weight"),
             "rate": tb.rails[i].rate_bps if i < len(tb.rails) else None}
            for i, r in enumerate(per)]


def bench_pattern(tb: Testbed, policy: str, pattern: str, size: int, *, hosts: int = 2,
                  time_s: float = 3.0, warmup_s: float = 0.5,
                  weights: Sequence[float] | None = None, verify: bool = True,
                  window: int | None = None, timeout_s: float = 300.0) -> dict[str, Any]:
    """``railgauge-bench PATTERN`` (msgrate, bcast or alltoall) with one rank on each of
    the testbed's first ``hosts`` hosts over all its rails with ``policy``: ``policy``,
    ``pattern``, ``hosts``, ``size_bytes``, the pattern's figures (PATTERN_FIGURES),
    ``rails`` as bench() gives them, and ``verified`` where checked."""
    env = rails_env([r.ifname for r in tb.rails], policy, weights)
    args = pattern_args(pattern, size, time_s=time_s, warmup_s=warmup_s, verify=verify,
                        window=window)
    rec = run_tool(tb, "rails", env, args, hosts, timeout_s)
    out: dict[str, Any] = {"policy": policy, "pattern": pattern, "hosts": hosts,
                           "size_bytes": int(rec["size_bytes"])}
    out.update({k: float(rec[k]) for k in PATTERN_FIGURES[pattern]})
    out["rails"] = rails_split(tb, rec)
    out["seconds"] = float(rec["seconds"])
    out["weights_given"] = list(weights) if weights is not None else None
    if verify:
        out["verified"] = bool(rec.get("verified"))
    return out


def bench(tb: Testbed, policy: str, size: int, *, time_s: float = 3.0,
          warmup_s: float = 0.5, weights: Sequence[float] | None = None,
          bidir: bool = False, verify: bool = True, window: int = 16,
          timeout_s: float = 300.0,
          on_event: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Streams ``size``-byte messages between the testbed's first two hosts over all its
    rails with ``policy``; returns the contract's record (``policy``, ``size_bytes``,
    ``bandwidth_MBps``, ``rails`` with each rail's ``name`` and ``bytes``) and more."""
    if len(tb.hosts) < 2:
        raise RailsError("the testbed needs 2 hosts")
    rails = [r.ifname for r in tb.rails]
    env = rails_env(rails, policy, weights)
    rec = _bw(tb, "rails", env, size, time_s, warmup_s, bidir, verify, window, timeout_s)
    out: dict[str, Any] = {
        "policy": policy,
        "size_bytes": int(rec["size_bytes"]),
        "bandwidth_MBps": float(rec["bandwidth_MBps"]),
        "rails": rails_split(tb, rec),
        "bidir": bool(rec.get("bidir")),
        "seconds": float(rec["seconds"]),
        "weights_given": list(weights) if weights is not None else None,
    }
    if verify:
        out["verified"] = bool(rec.get("verified"))
    return out
