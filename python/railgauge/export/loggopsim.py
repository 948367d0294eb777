"""The model as LogGOPSim's command-line parameters (the same line serves ATLAHS, whose
simulation backend is LogGOPSim).

LogGOPSim (github.com/spcl/LogGOPSim, ``src/LogGOPSim/loggopsim_cmdline.ggo``) takes one
parameter set per run, each an integer in one time unit of the user's choosing (the unit
of the GOAL schedule's ``calc`` times too): ``-L`` latency, ``-o`` overhead (paid at the
sender and at the receiver), ``-g`` gap per message, ``-G`` gap per byte, ``-O`` overhead
per byte, ``-S`` the size up to which a message is eager (``size <= S``; above it
rendezvous). railgauge's model maps onto them as ``railgauge sim`` takes it
(:func:`railgauge.fit.simview.sim_sets`): one parameter set per piece of the model,
chosen so that LogGOPSim's one-way time L + 2o + (s-1) max(O, G) and gap g + (s-1) G are
the model's PRTT(1,0,s)/2 and G_all(s) (a model without pieces: its range's L_us, o_us,
g_us, G_us_per_byte, O_us_per_byte); the set of the chosen size; S = the rendezvous size
- 1 (:func:`rendezvous_at`).

The unit is ns unless rounding to whole ns would change a parameter that is not 0 by more
than :data:`MAX_ROUNDING` (a per-byte G of 0.48 ns rounds to 0 ns, or a G of 1.4 ns to 1):
then ps. ``units`` in the result says which.
"""

from __future__ import annotations

import math
from typing import Any

from railgauge.export.common import ExportSource, loggp_fit
from railgauge.export.files import ExportError
from railgauge.fit.simview import SimSet, sim_sets

__all__ = ["MAX_ROUNDING", "NO_RENDEZVOUS_S", "export_loggopsim", "parse_size_span"]

#: The largest relative change rounding may make to a parameter before a finer unit is used.
MAX_ROUNDING = 0.01
#: LogGOPSim's S (a C int on its command line) where every message is eager.
NO_RENDEZVOUS_S = 2**31 - 1
#: Microseconds per unit.
_UNITS: dict[str, float] = {"ns": 1e-3, "ps": 1e-6}
#: Flag and the parameter of a SimSet (the order of the flags on the line).
_PARAMS: tuple[tuple[str, str], ...] = (
    ("-L", "L"), ("-o", "o"), ("-g", "g"), ("-G", "G"), ("-O", "O"),
)


def parse_size_span(text: str) -> tuple[int, int]:
    """``SIZE`` or ``LO-HI`` (bytes; k, M, G suffixes of 1024) as (lo, hi)."""
    from railgauge.units import parse_size

    parts = text.split("-") if "-" in text.strip("-") else [text]
    try:
        vals = [int(parse_size(p.strip())) for p in parts]
    except ValueError as exc:
        raise ExportError(f"--size: {exc}") from None
    if len(vals) > 2 or any(v < 1 for v in vals) or vals[0] > vals[-1]:
        raise ExportError(f"--size: a size >= 1 B or a span LO-HI with LO <= HI, got {text!r}")
    return vals[0], vals[-1]


def _sets_over(sets: list[SimSet], lo: int, hi: int) -> list[SimSet]:
    """The parameter sets that hold a size of lo..hi (a size between two sets belongs to the
    lower one, as in the model's predictions)."""
    out = []
    for i, ss in enumerate(sets):
        start = 1 if i == 0 else ss.from_bytes
        end = sets[i + 1].from_bytes - 1 if i + 1 < len(sets) else math.inf
        if start <= hi and lo <= end:
            out.append(ss)
    return out


def _choose_unit(values: dict[str, float]) -> str:
    for unit in ("ns", "ps"):
        per = _UNITS[unit]
        if all(v == 0.0 or abs(round(v / per) * per - v) <= MAX_ROUNDING * v
               for v in values.values()):
            return unit
    return "ps"


def _flags(ss: SimSet, unit: str, s_param: int) -> list[str]:
    per = _UNITS[unit]
    vals = ss.as_dict()
    out: list[str] = []
    for flag, key in _PARAMS:
        out += [flag, str(round(vals[key] / per))]
    return [*out, "-S", str(s_param)]


def export_loggopsim(src: ExportSource, *, span: tuple[int, int] | None,
                     rendezvous: int | None, rendezvous_reason: str) -> dict[str, Any]:
    """LogGOPSim's flags for the sizes ``span`` (lo, hi in bytes; None: every size).

    Returns the ``--json`` object: ``flags`` (the arguments, in order), ``units`` (``ns``
    or ``ps``), ``S_bytes`` and ``rendezvous`` (the rendezvous size, None: all eager) with
    ``rendezvous_reason``, ``range`` (the model range the flags are taken from), ``set``
    (the sizes of the parameter set within it) and ``values_us`` (its values unrounded),
    ``per_range`` (every parameter set of the span with its own flags, in the same unit)
    and ``notes`` (where one set cannot hold the model).
    """
    fit = loggp_fit(src)
    lo, hi = span if span is not None else (1, 2**63)
    sets = sim_sets(fit)
    used = _sets_over(sets, lo, hi)
    if not used:
        raise ExportError("--size: no range of the model holds these sizes")
    s_param = NO_RENDEZVOUS_S if rendezvous is None else max(rendezvous - 1, 0)
    values = {f"{ss.from_bytes}:{k}": v for ss in used for k, v in ss.as_dict().items()}
    bad = sorted({k.split(":")[1] for k, v in values.items() if not math.isfinite(v) or v < 0})
    if bad:
        raise ExportError(f"{src.model_path or 'model'}: {', '.join(bad)} not a number >= 0 "
                          "in a range of the model")
    unit = _choose_unit(values)
    chosen = used[0]
    rng = fit.ranges[chosen.range_index]
    notes: list[str] = list(chosen.notes)
    if span is not None and span[0] == span[1]:
        what = f"{lo} B"
    elif span is not None:
        what = f"{lo}..{hi} B"
    else:
        what = "every size"
    if len(used) > 1:
        notes.append(
            f"{what} crosses {len(used)} parameter sets of the model (its pieces: protocol "
            "ranges and the bends within them), and LogGOPSim takes one parameter set per "
            f"run: the flags are those of the first ({chosen.from_bytes} B ..); 'per_range' "
            "lists each set's (run one simulation per size band, or give --size)"
        )
    o_s, o_r = rng.value("o_s_us"), rng.value("o_r_us")
    if abs(o_s - o_r) > 0.1 * max(o_s, o_r, 1e-12) or abs(chosen.o - 0.5 * (o_s + o_r)) > \
            0.1 * max(o_s, o_r, 1e-12):
        notes.append(
            f"o = {chosen.o:.4g} us: LogGOPSim has one overhead for both sides, the model "
            f"measured o_s = {o_s:.4g} us and o_r = {o_r:.4g} us; o is what makes "
            "LogGOPSim's one-way time L + 2o + (s-1) max(O, G) the model's PRTT(1,0,s)/2 "
            f"from {chosen.from_bytes} B (docs/export.md)"
        )
    if unit == "ps":
        notes.append("parameters in picoseconds (whole nanoseconds would round G or O off by "
                     f"more than {100.0 * MAX_ROUNDING:.0f}%): the GOAL schedule's calc times "
                     "must be in ps too")
    def _to(ss: SimSet) -> int | None:
        return None if math.isinf(ss.to_bytes) else int(ss.to_bytes)

    per_range = [{"from_bytes": ss.from_bytes, "to_bytes": _to(ss),
                  "flags": _flags(ss, unit, s_param)} for ss in used]
    return {
        "flags": _flags(chosen, unit, s_param),
        "units": unit,
        "S_bytes": s_param,
        "rendezvous": rendezvous,
        "rendezvous_reason": rendezvous_reason,
        "sizes": None if span is None else [lo, hi],
        "range": {"from_bytes": rng.from_bytes, "to_bytes": rng.to_bytes},
        "set": {"from_bytes": chosen.from_bytes, "to_bytes": _to(chosen)},
        "values_us": chosen.as_dict(),
        "per_range": per_range,
        "notes": notes,
    }
