"""The model as a LogGOPS simulator's parameters: what `railgauge sim` and the LogGOPSim
export (``railgauge export --to loggopsim``) take from a ``model-loggp.json``.

A LogGOPS simulator (LogGOPSim, and railgauge's engine, native/src/sim/engine.c, which
matches it) charges a message of s bytes: the sender's CPU o + (s-1) O, its NIC's gap
g + (s-1) G; the message arrives o + L after the send starts, and the receiver's CPU takes
o + (s-1) max(O, G). So its one-way time is L + 2o + (s-1) max(O, G) and its gap between
messages g + (s-1) G.

The model predicts from its pieces (docs/fit.md, section 4): per piece, lines of
PRTT(1,0,s)/2 = h(s) and G_all(s) anchored at the piece's first size f. Given the paper's
range parameters instead (network-wide L and o, a range's g, G, O), a simulator's one-way
time departs from the model's own PRTT(1,0,s)/2 wherever the curve of a range bends or
steps (measured: 25-31% at 1 KiB over Open MPI's shared memory and over loopback TCP,
docs/BENCHMARKS.md, section export). So a simulator gets one parameter set per piece,
chosen so that its two times are the model's at the piece's first size and follow its
slopes:

* G = the slope of G_all (>= 0), g = G_all(f) - (f-1) G; where that is negative, g = 0
  and G = G_all(f) / (f-1) (exact at f, the slope lost);
* O = (O_s + O_r)/2 of the range, at most G; where h's slope exceeds G, G = h's slope
  (LogGP's one G for the wire and the gap, as in the paper's PRTT(1,0,s)) and g = G_all(f)
  - (f-1) G (>= 0), so that max(O, G) is h's slope; the CPUs' O is not raised, which would
  keep both ends busy for the transfer and serialise a rank's send and receive (a one-way
  time that grows slower than the gap is not LogGOPS: a note says so);
* A = h(f) - (f-1) max(O, G), the one-way line's value at s = 1: L = min(network L, A),
  o = (A - L)/2, so that L + 2o + (f-1) max(O, G) = h(f). Where A < 0 (a steep piece far
  from s = 1), L = o = 0 and O = h(f)/(f-1) where G allows.

A model without pieces (older files) gives its ranges' parameters as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from railgauge.fit.model import LoggpFit, Piece

__all__ = ["SimSet", "sim_sets"]


@dataclass(frozen=True)
class SimSet:
    """One parameter set of a simulator (us, us per byte) for the sizes ``from_bytes`` ..
    ``to_bytes`` (inclusive; ``math.inf`` for the last), taken from range ``range_index``
    of the model (from its piece at ``from_bytes`` where it has pieces)."""

    from_bytes: int
    to_bytes: float
    L: float
    o: float
    g: float
    G: float
    O: float  # noqa: E741 - LogGOPS's name
    range_index: int
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, float]:
        return {"L": self.L, "o": self.o, "g": self.g, "G": self.G, "O": self.O}


def _piece_set(p: Piece, nxt: Piece | None, L_net: float, O_avg: float,
               range_index: int) -> SimSet:
    f = float(p.from_bytes)
    x = max(f - 1.0, 0.0)
    h_a, h_b = p.lines["h"]
    ga_a, ga_b = p.lines["gall"]
    h_a, ga_a = max(h_a, 0.0), max(ga_a, 0.0)
    notes: list[str] = []
    G = max(ga_b, 0.0)
    g = ga_a - x * G
    if g < 0.0:
        g, G = 0.0, ga_a / x
    O = min(max(O_avg, 0.0), G)  # noqa: E741
    if h_b > G:
        # The one-way time grows faster than the gap: LogGP's single G (the paper's
        # PRTT(1,0,s) = 2 (L + 2o + (s-1) G)) takes the one-way slope, not the CPUs' O,
        # which would keep both ends busy for it and serialise a rank's send and receive.
        G = h_b
        g = max(ga_a - x * G, 0.0)
    if h_b < 0.9 * G:
        notes.append(
            f"from {p.from_bytes} B the model's one-way time grows by {h_b:.4g} us/B, less "
            f"than its gap per byte G = {G:.4g} us/B, which a LogGOPS simulator charges the "
            "receiver too: its one-way time grows by G there")
    m = max(O, G)
    A = h_a - x * m
    if A >= 0.0:
        L = min(max(L_net, 0.0), A)
        o = 0.5 * (A - L)
    else:
        L = o = 0.0
        if x > 0 and G * x <= h_a:
            O = h_a / x  # noqa: E741
        else:
            notes.append(
                f"from {p.from_bytes} B the gap per byte alone, (s-1) G, exceeds the model's "
                "one-way time: the simulator's is longer there")
    to = float(nxt.from_bytes - 1) if nxt is not None else math.inf
    return SimSet(from_bytes=p.from_bytes, to_bytes=to, L=L, o=o, g=g, G=G, O=O,
                  range_index=range_index, notes=tuple(notes))


def sim_sets(fit: LoggpFit) -> list[SimSet]:
    """The model's parameter sets for a LogGOPS simulator, in order of size (see the module
    docstring): one per piece where every range has pieces, else one per range."""
    ranges = fit.ranges
    if ranges and all(r.pieces for r in ranges):
        owned = [(i, p) for i, r in enumerate(ranges) for p in r.pieces]
        out = []
        for k, (i, p) in enumerate(owned):
            nxt = owned[k + 1][1] if k + 1 < len(owned) else None
            out.append(_piece_set(p, nxt, ranges[0].L_us, ranges[i].O_us_per_byte, i))
        return out
    out = []
    for i, r in enumerate(ranges):
        # As railgauge sim has always taken ranges: a size up to a range's last measured
        # one, sizes between two ranges the upper one.
        to = float(r.to_bytes) if r.to_bytes is not None and i + 1 < len(ranges) else math.inf
        out.append(SimSet(from_bytes=r.from_bytes, to_bytes=to, L=r.L_us, o=r.o_us,
                          g=r.g_us, G=r.G_us_per_byte, O=r.O_us_per_byte, range_index=i))
    return out
