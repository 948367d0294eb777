"""The flag model: LogGP-form parameters of a signal over the barrier's shared-memory flags
(``native/src/coll/flags.c``), fitted from ``railgauge-bench flagprtt`` (docs/coll.md, "The
flag model").

A signal is a release store of an epoch into the peer's cache line (then one fence per
round); a receive spins on its own line. The measurements follow the PRTT method of Hoefler,
Lichei and Rehm on the flag engine itself: PRTT(1,0), PRTT(n,0) with the n signals in one
round, PRTT(n,d) with n rounds d apart, the two-way exchange (both ranks signal each other at
once) and o_r(k), the reading of k lines already written by one writer or by k writers.

What the measurements show (docs/coll.md): the paper's decomposition PRTT(1,0) = 2(o_s + L +
o_r) does not hold for flags -- the sender's fence waits for the very line transfer that the
receiver's miss completes, so o_s + o_r exceeds PRTT(1,0)/2 and L comes out negative; a
signal costs more where both ends signal at once (the exchange) than alone (half the
ping-pong); and further signals of a round cost far less than the first (the stores drain in
parallel, the reads of further lines overlap). The simulator's parameters are therefore:

- ``L`` one signal alone: half the ping-pong PRTT(1,0), less the clock's read; ``o = 0`` (a
  signal keeps the CPU no longer than its latency, which L already holds);
- ``duplex`` what a signal costs beyond L where its receiver signalled too while it was on
  its way (docs/sim.md "Duplex"): the exchange's median, less the clock's, less L. A round of
  the dissemination family (every rank storing and reading at once) costs L + duplex, a
  round of the linear and binomial barriers (one direction at a time) L;
- ``g`` the cost of each further signal of a round: the largest of the slopes of PRTT(n,0)
  over n, of o_r(k) over k lines of one writer and of o_r(k) over k writers (measured where
  the run had more than two ranks);
- ``call_us`` the per-barrier cost outside the signals as the barrier benchmark times it (its
  clock read and the call: an empty flag run between two clock reads), which predictions of
  a benchmark's median add to the simulated makespan.

The paper's o_s, o_r and L are reported beside them (``paper``), as are the ping-pong and
its ratio to two exchanges."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: 0.2.0: L is one signal alone and duplex_us the exchange's extra (0.1.0: L was the
#: exchange, no duplex_us; such files still simulate as they did).
FLAG_MODEL_VERSION = "0.2.0"

#: The kinds of record a flag fit needs at least.
REQUIRED = ("clock", "call", "prtt1", "prttn", "exchange", "orecv1")


class FlagFitError(ValueError):
    """The records do not make a flag model (missing points, bad values, bad file)."""


def read_flag_records(path: Path) -> list[dict[str, Any]]:
    """The ``flag`` records of a ``railgauge-bench flagprtt --json`` file (JSON Lines)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise FlagFitError(f"{path}: cannot read: {exc.strerror}") from None
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise FlagFitError(f"{path}:{i}: not JSON: {exc}") from None
        if isinstance(rec, dict) and rec.get("type") == "flag":
            out.append(rec)
    if not out:
        raise FlagFitError(f"{path}: no flag records (is it railgauge-bench flagprtt --json "
                           "output?)")
    return out


def _num(rec: Mapping[str, Any], key: str) -> float:
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise FlagFitError(f"flag record {rec.get('kind')!r} n={rec.get('n')}: {key} = {v!r} "
                           "is not a number >= 0")
    return float(v)


def _slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope, None for fewer than two distinct x."""
    if len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def fit_flags(records: Iterable[Mapping[str, Any]], *, transport: str = "shm",
              ranks: int | None = None) -> dict[str, Any]:
    """The flag model (a ``model-flags.json`` document, LogGP schema with ``"engine":
    "flags"``) from flagprtt records. Raises FlagFitError."""
    clock = call = prtt1 = prttn = prttnd = exch = orecv1 = None
    n_batch = n_sep = 0
    d_sep = 0.0
    one_writer: dict[int, float] = {}
    k_writers: dict[int, float] = {}
    for rec in records:
        kind = rec.get("kind")
        n = int(rec.get("n") or 0)
        w = int(rec.get("writers") or 0)
        med = _num(rec, "median_us")
        if kind == "clock":
            clock = med
        elif kind == "call":
            call = med
        elif kind == "exchange":
            exch = med
        elif kind == "prtt" and _num(rec, "d_us") > 0:
            prttnd, n_sep = med, n
            d_sep = _num(rec, "d_actual_us") or _num(rec, "d_us")
        elif kind == "prtt" and n == 1:
            prtt1 = med
        elif kind == "prtt":
            prttn, n_batch = med, n
        elif kind == "orecv" and w == 1:
            one_writer[n] = med
        elif kind == "orecv" and w > 1:
            k_writers[w] = med
    orecv1 = one_writer.get(1)
    have = {"clock": clock, "call": call, "prtt1": prtt1, "prttn": prttn, "exchange": exch,
            "orecv1": orecv1}
    missing = [k for k in REQUIRED if have[k] is None]
    if missing:
        raise FlagFitError(f"the flag records lack {', '.join(missing)} (railgauge-bench "
                           "flagprtt writes them all)")
    assert clock is not None and call is not None and prtt1 is not None
    assert prttn is not None and exch is not None and orecv1 is not None
    if n_batch < 2:
        raise FlagFitError(f"PRTT(n,0) needs n >= 2, not {n_batch}")
    warnings: list[str] = []
    rtt = max(prtt1 - clock, 0.0)
    ex = max(exch - clock, 0.0)
    g_batch = max((prttn - prtt1) / (n_batch - 1), 0.0)
    ks = sorted(one_writer)
    slope_1w = _slope([float(k) for k in ks], [one_writer[k] for k in ks])
    slope_kw = None
    if k_writers:
        kw = {1: orecv1, **k_writers}
        slope_kw = _slope([float(k) for k in sorted(kw)], [kw[k] for k in sorted(kw)])
    gap = max(g_batch, slope_1w or 0.0, slope_kw or 0.0, 0.0)
    # The paper's decomposition of an isolated signal, for the record.
    o_r = max(orecv1 - clock, 0.0)
    o_s = None
    if prttnd is not None and n_sep >= 2:
        o_s = max((prttnd - prtt1) / (n_sep - 1) - d_sep, 0.0)
    L_paper = None if o_s is None else rtt / 2 - o_s - o_r
    if L_paper is not None and L_paper < 0:
        warnings.append(f"the paper's L = PRTT(1,0)/2 - o_s - o_r = {L_paper:.4g} us is below "
                        "0: the sender's fence and the reader's miss wait for one and the same "
                        "line transfer, so o_s and o_r are not additive for flags; the "
                        "simulator's L is half the measured ping-pong instead")
    if slope_kw is None:
        warnings.append("no reading from k writers (2 ranks): g is from one writer's lines, "
                        "which the reader's loads overlap more than lines of different cores")
    L = rtt / 2
    duplex = max(ex - L, 0.0)
    net = {"L_us": L, "o_us": 0.0, "o_s_us": o_s, "o_r_us": o_r, "g_us": gap,
           "duplex_us": duplex}
    rng = {"from_bytes": 0, "to_bytes": None, "L_us": L, "o_us": 0.0, "g_us": gap,
           "G_us_per_byte": 0.0, "O_us_per_byte": 0.0, "duplex_us": duplex}
    return {
        "model": "loggp",
        "engine": "flags",
        "version": FLAG_MODEL_VERSION,
        "success": True,
        "transport": transport,
        "ranks": ranks,
        "message": (f"flags: L {L:.4g} us (one signal), duplex {duplex:.4g} us (both ends "
                    f"at once), o 0, g {gap:.4g} us per further signal, {call:.4g} us per "
                    "barrier call"),
        "network": net,
        "ranges": [rng],
        "call_us": call,
        "definition": (
            "The flag engine's signals in LogGP form for the simulator (docs/coll.md, the flag "
            "model): L is one signal alone (half the ping-pong PRTT(1,0) of railgauge-bench "
            "flagprtt, less one clock read), duplex what a signal costs beyond L where its "
            "receiver signalled too while it was on its way (the exchange, less one clock "
            "read, less L; docs/sim.md, Duplex), o is 0 (a signal holds the CPU "
            "no longer than its latency, which L holds), g is the cost of each further signal "
            "of a round (the largest slope of PRTT(n,0) over n, of reading k lines of one "
            "writer and of reading the lines of k writers), call_us the benchmark's cost of a "
            "barrier beyond its signals (a clock read and the call), which predictions of a "
            "benchmark's time add to the makespan. paper: the PRTT decomposition of an "
            "isolated signal (o_s from PRTT(n,d), o_r read directly, L = PRTT(1,0)/2 - o_s - "
            "o_r)."),
        "paper": {"prtt1_us": rtt, "o_s_us": o_s, "o_r_us": o_r, "L_us": L_paper,
                  "g_batch_us": g_batch, "d_us": d_sep, "n": n_batch},
        "measured": {
            "clock_us": clock, "call_us": call, "prtt1_us": prtt1, "prttn_us": prttn,
            "n": n_batch, "prttnd_us": prttnd, "exchange_us": exch,
            "orecv_one_writer_us": {str(k): one_writer[k] for k in ks},
            "orecv_k_writers_us": {str(k): k_writers[k] for k in sorted(k_writers)},
            "read_slope_one_writer_us": slope_1w, "read_slope_k_writers_us": slope_kw,
            "pingpong_over_two_exchanges": rtt / (2 * ex) if ex > 0 else None},
        "warnings": warnings,
    }


def load_flag_model(path: Path) -> dict[str, Any]:
    """A ``model-flags.json``, checked: FlagFitError naming the problem otherwise."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise FlagFitError(f"{path}: cannot read the flag model: {exc.strerror}") from None
    except ValueError as exc:
        raise FlagFitError(f"{path}: not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("engine") != "flags" or doc.get("model") != "loggp":
        raise FlagFitError(f"{path}: not a flag model (\"model\": \"loggp\" with \"engine\": "
                           "\"flags\" expected; railgauge gauge writes model-flags.json)")
    call = doc.get("call_us", 0.0)
    if isinstance(call, bool) or not isinstance(call, (int, float)) or not math.isfinite(call) \
            or call < 0:
        raise FlagFitError(f"{path}: call_us = {call!r} is not a number >= 0")
    return doc


def model_engine(path: Path) -> str:
    """``flags`` for a flag model, ``messages`` for any other model file (which the
    simulator's own reader checks)."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return "messages"
    return "flags" if isinstance(doc, dict) and doc.get("engine") == "flags" else "messages"


def synth_flag_records(*, L: float, g: float, clock: float, call: float, o_s: float,
                       o_r: float, duplex: float = 0.0, n: int = 8, d: float | None = None,
                       read_slope: float | None = None, writers: int = 1,
                       writer_slope: float | None = None) -> list[dict[str, Any]]:
    """flagprtt records as a machine with these parameters would give them, noise-free (for
    tests of the fit): PRTT(1,0) = 2L + clock, the exchange L + duplex + clock,
    PRTT(n,0) = PRTT(1,0) + (n-1) g, PRTT(n,d) = PRTT(1,0) + (n-1)(o_s + d) (the paper's
    isolated o_s, not additive with L), o_r(k) = o_r + clock + (k-1) read_slope and from k
    writers o_r + clock + (k-1) writer_slope."""
    rtt = 2 * L + clock
    dd = rtt if d is None else d
    rs = g / 2 if read_slope is None else read_slope

    def rec(kind: str, nn: int, w: int, med: float, d_us: float = 0.0) -> dict[str, Any]:
        return {"type": "flag", "kind": kind, "n": nn, "writers": w, "d_us": d_us,
                "d_actual_us": d_us if kind == "prtt" else 0.0, "iterations": 1000,
                "median_us": med, "min_us": med}

    out = [rec("clock", 0, 0, clock), rec("call", 0, 0, call), rec("prtt", 1, 1, rtt),
           rec("prtt", n, 1, rtt + (n - 1) * g), rec("exchange", 1, 1, L + duplex + clock),
           rec("prtt", n, 1, rtt + (n - 1) * (o_s + dd), dd)]
    out += [rec("orecv", k, 1, o_r + clock + (k - 1) * rs, 2 * dd) for k in range(1, n + 1)]
    if writers > 1:
        ws = g if writer_slope is None else writer_slope
        out += [rec("orecv", 1, k, o_r + clock + (k - 1) * ws, 2 * dd)
                for k in range(2, writers + 1)]
    return out
