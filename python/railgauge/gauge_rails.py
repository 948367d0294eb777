"""`railgauge gauge --rails`: each rail measured alone and the weights of the weighted
policy written (issue 8, docs/transports.md#rails).

Every rail gets the gauge's own PRTT measurement over ``tcp:<rail>`` (an interface, an
address or a subnet, as ``RG_RAILS_LIST`` takes them), a LogGP fit, and from the fit of
its largest messages the rail's bandwidth 1/G. The weights are those bandwidths, scaled
so the fastest rail has weight 1; ``rails.json`` holds them with each rail's fit and the
``RG_RAILS_*`` settings that run the rails with them.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class RailsGaugeError(RuntimeError):
    """A rail list that cannot be used (``user``), or a rail that could not be fitted."""

    def __init__(self, message: str, *, user: bool = False) -> None:
        super().__init__(message)
        self.user = user


@dataclass
class RailFit:
    name: str
    transport: str
    model_file: str
    L_us: float
    o_us: float
    G_us_per_byte: float
    bandwidth_MBps: float
    fitted_from_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "transport": self.transport, "model": self.model_file,
                "L_us": self.L_us, "o_us": self.o_us, "G_us_per_byte": self.G_us_per_byte,
                "bandwidth_MBps": self.bandwidth_MBps,
                "fitted_from_bytes": self.fitted_from_bytes}


@dataclass
class RailsPart:
    rails: list[RailFit] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rails": [r.to_json() for r in self.rails], "weights": self.weights,
                "policy": "weighted", "env": self.env}

    def text(self) -> str:
        lines = ["rails (each measured alone; weights for RG_RAILS_POLICY=weighted):"]
        for r, w in zip(self.rails, self.weights, strict=True):
            lines.append(f"  {r.name:<20s} G {r.G_us_per_byte:.6g} us/B  "
                         f"{r.bandwidth_MBps:10.1f} MB/s  L {r.L_us:.2f} us  o {r.o_us:.2f} us"
                         f"  weight {w:.4g}")
        lines.append("  " + " ".join(f"{k}={v}" for k, v in self.env.items()))
        return "\n".join(lines)


def parse_rails(text: str) -> list[str]:
    """--rails R0,R1,... or 'testbed' (the rails of `railgauge testbed up`): the rail
    names. RailsGaugeError (user) for an empty item, a duplicate, or no testbed."""
    if text.strip() == "testbed":
        from railgauge.netns import TestbedError, load_state

        try:
            tb = load_state()
        except TestbedError as exc:
            raise RailsGaugeError(str(exc), user=True) from None
        if tb is None:
            raise RailsGaugeError("--rails testbed: no testbed is up (railgauge testbed up)",
                                  user=True)
        return [r.ifname for r in tb.rails]
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise RailsGaugeError(f"--rails {text!r}: give rails (interfaces, addresses or "
                              "subnets) separated by commas", user=True)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RailsGaugeError(f"--rails names {', '.join(dup)} more than once", user=True)
    return names


def _transport(rail: str) -> str:
    return rail if rail.startswith(("tcp:", "ofi:")) else f"tcp:{rail}"


def rail_bandwidth(fit: Any) -> tuple[float, int]:
    """The bandwidth (MB/s, = bytes/us) of a fit's last range, 1/G, and where that range
    starts. RailsGaugeError when G is not a positive number."""
    if not fit.success or not fit.ranges:
        raise RailsGaugeError(f"the LogGP fit failed: {fit.message}")
    last = fit.ranges[-1]
    G = float(last.G_us_per_byte)
    if not (G > 0 and math.isfinite(G)):
        raise RailsGaugeError(f"the fit of its largest messages has G = {G:g} us/B: no "
                              "bandwidth (measure larger messages: --max-size)")
    return 1.0 / G, int(last.from_bytes)


def measure_rails(plan: Any, rails: list[str], out_dir: Path,
                  measure: Callable[[Any, Path], Any], *, seed: int = 0) -> RailsPart:
    """Measures every rail alone with ``plan`` (its transport replaced by the rail's, its
    budget shared among the rails) through ``measure(plan, path)``, fits each, and writes
    rail<i>-measurements.jsonl, rail<i>-model-loggp.json and rails.json into out_dir."""
    from railgauge.fit.loggp import fit_loggp
    from railgauge.measurements import read_measurements
    from railgauge.rails import rails_env

    part = RailsPart()
    for i, rail in enumerate(rails):
        p = copy.copy(plan)
        p.transport = _transport(rail)
        p.budget_s = max(5.0, plan.budget_s / len(rails))
        meas_path = out_dir / f"rail{i}-measurements.jsonl"
        measure(p, meas_path)
        meas = read_measurements(meas_path)
        largest = max((r.s for r in meas.records if r.type == "prtt" and r.n > 1),
                      default=0)
        if largest < min(p.max_size, 65536):
            raise RailsGaugeError(
                f"rail {rail} ({p.transport}): its measurement stopped at {largest} bytes "
                f"of {p.max_size} (a rail that slow, or one that stalled: give --budget "
                "more seconds, or check the rail)")
        fit = fit_loggp(meas, seed=seed)
        try:
            bw, start = rail_bandwidth(fit)
        except RailsGaugeError as exc:
            raise RailsGaugeError(f"rail {rail} ({p.transport}): {exc}") from None
        model_path = out_dir / f"rail{i}-model-loggp.json"
        model_path.write_text(json.dumps(fit.to_json(), indent=2) + "\n")
        first = fit.ranges[0]
        part.rails.append(RailFit(name=rail, transport=p.transport, model_file=model_path.name,
                                  L_us=float(first.L_us), o_us=float(first.o_us),
                                  G_us_per_byte=1.0 / bw, bandwidth_MBps=bw,
                                  fitted_from_bytes=start))
    top = max(r.bandwidth_MBps for r in part.rails)
    part.weights = [round(r.bandwidth_MBps / top, 4) or 1e-4 for r in part.rails]
    part.env = rails_env([r.name for r in part.rails], "weighted", part.weights)
    (out_dir / "rails.json").write_text(json.dumps(part.to_json(), indent=2) + "\n")
    return part
