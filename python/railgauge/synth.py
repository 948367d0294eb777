"""Synthetic PRTT measurements from known LogGP parameters.

Used by the tests (parameter recovery, protocol-change detection) and for demonstrations
without a network. The generator follows the model of Hoefler, Lichei and Rehm (2007), with
the send overhead o_s (the paper's o) and the receive overhead o_r kept apart (by default
o_r = o_s, the paper's assumption)::

    o_s(s)      = o + (s-1) O                       (O = 0 is plain LogGP)
    o_r(s)      = o_r + (s-1) O_r                   (default o_r = o, O_r = O)
    PRTT(1,0,s) = 2 (L + o_s(s) + o_r(s) + (s-1) G)
    G_all(s)    = g + (s-1) G
    PRTT(n,0,s) = PRTT(1,0,s) + (n-1) G_all(s)
    PRTT(n,d,s) = PRTT(1,0,s) + (n-1) max(o_s(s) + d, G_all(s))

The delay d is chosen as ``railgauge-bench prtt`` chooses it, from the measured values:
d = PRTT(1,0,s), or PRTT(2,0,s) = PRTT(1,0,s) + G_all(s) where PRTT(1,0,s) is not at
least 1.25 G_all(s) ("high gaps"). The busy delay that elapses overshoots d by
``overshoot_us`` (a real spin loop overshoots by a timer read or so). ``delay`` says how the
tool dealt with that: ``"corrected"`` (the current C tool) corrects every sample, so the
samples are those of a delay of exactly d, and records the overshoot as
``delay_excess_us`` (information only); ``"d_actual"`` (older tools) leaves the samples
uncorrected (delay d + overshoot) and records the delay that elapsed as ``d_actual_us``;
``"none"`` leaves them uncorrected and records nothing. Like the C tool, every size also gets
an ``orecv`` record: the receive overhead o_r(s) measured directly (each sample one receive
call).

Noise model: every point summarises ``reps`` samples; a sample is the true time times
``1 + noise * N(0, 1)``. A record carries their median with the distribution-free binomial
order statistic CI of the median (as the C statistics compute it) and, like the C tool, the
interquartile mean ``iqm_us`` (``iqm=False`` leaves it out, as older files). ``jitter`` adds
a systematic relative error per point, ``1 + jitter * N(0, 1)``, that the CI does not show
(like a cache or alignment effect at one size).

``bend`` = (centre_bytes, factor, width_octaves) makes the per-byte gap a smooth function of
the size, as cache effects do: every range's G is multiplied by

    b(s) = 1 + (factor - 1) / (1 + exp(-log2(s / centre_bytes) / width_octaves))

(1 well below the centre, ``factor`` well above it, a logistic transition over a few
``width_octaves``), in G_all(s) = g + (s-1) G b(s) and in PRTT(1,0,s) alike. It is no
protocol change: there is no size where the behaviour changes abruptly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from railgauge import __version__
from railgauge.measurements import Measurements, PrttPoint

__all__ = [
    "PAPER_TABLE",
    "Bend",
    "RangeParams",
    "bend_factor",
    "o_r_true",
    "prtt_true",
    "sweep_sizes",
    "synth_prtt",
    "write_jsonl",
]

#: (from_bytes, L_us, o_us, g_us, G_us_per_byte), optionally followed by O_us_per_byte,
#: o_r_us and O_r_us_per_byte (o_us and O_us_per_byte are then the send overhead o_s, O_s).
RangeParams = tuple[float, ...]
#: A smooth change of the per-byte gap: (centre_bytes, factor, width_octaves).
Bend = tuple[float, float, float]

#: The numeric results of the paper (Hoefler, Lichei, Rehm 2007), per transport.
PAPER_TABLE: dict[str, list[RangeParams]] = {
    "TCP": [(1, 45.74, 3.46, 0.915, 0.00849)],
    "SCI": [(1, 5.48, 6.10, 7.78, 0.0045), (12289, 5.48, 6.10, 13.34, 0.0037)],
    "OFED": [(1, 5.96, 4.72, 5.14, 0.00073), (12289, 5.96, 4.72, 21.39, 0.00103)],
    "GM": [(1, 10.53, 1.27, 9.44, 0.0092), (32769, 10.53, 1.27, 52.01, 0.0042)],
}

_HIGH_GAP_RATIO = 1.25
_SYNTH_TIME = "2007-03-30T00:00:00Z"


def sweep_sizes(
    max_bytes: int = 1 << 20,
    *,
    per_octave: int = 2,
    refine_at: Sequence[int] = (),
) -> list[int]:
    """A log-spaced size sweep 1 .. max_bytes plus refinement points.

    ``per_octave`` sizes per factor of two (rounded to integers); for every size ``r`` in
    ``refine_at`` the points r - r/4, r - r/8, r - 1, r, r + r/8, r + r/4 are added, as a
    refinement sweep around a suspected protocol change would.
    """
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
    if per_octave < 1:
        raise ValueError(f"per_octave must be >= 1, got {per_octave}")
    out: set[int] = set()
    k = 0
    while True:
        s = round(2.0 ** (k / per_octave))
        if s > max_bytes:
            break
        out.add(int(s))
        k += 1
    out.add(int(max_bytes))
    for r in refine_at:
        for s in (r - r // 4, r - r // 8, r - 1, r, r + r // 8, r + r // 4):
            if 1 <= s <= max_bytes:
                out.add(int(s))
    return sorted(out)


def _range_for(params_by_range: Sequence[RangeParams], s: float) -> RangeParams:
    chosen = params_by_range[0]
    for p in params_by_range:
        if s >= p[0]:
            chosen = p
    return chosen


def _unpack(p: RangeParams) -> tuple[float, float, float, float, float, float, float]:
    """(L, o_s, g, G, O_s, o_r, O_r) of a range; o_r and O_r default to o_s and O_s."""
    if not 5 <= len(p) <= 8:
        raise ValueError(
            "params_by_range entries must be (from_bytes, L, o, g, G) optionally followed by "
            f"O, o_r, O_r, got {p!r}"
        )
    L, o, g, G = p[1], p[2], p[3], p[4]
    big_o = p[5] if len(p) > 5 else 0.0
    o_r = p[6] if len(p) > 6 else o
    big_o_r = p[7] if len(p) > 7 else big_o
    return L, o, g, G, big_o, o_r, big_o_r


def bend_factor(bend: Bend | None, s: float) -> float:
    """The factor b(s) on the per-byte gap G of a ``bend`` (1 without one)."""
    if bend is None:
        return 1.0
    centre, factor, width = bend
    if not (centre > 0.0 and factor > 0.0 and width > 0.0):
        raise ValueError(
            f"bend must be (centre_bytes > 0, factor > 0, width_octaves > 0), got {bend}"
        )
    z = math.log2(max(s, 1.0) / centre) / width
    return 1.0 + (factor - 1.0) / (1.0 + math.exp(-z))


def o_r_true(params_by_range: Sequence[RangeParams], s: float) -> float:
    """The noise-free receive overhead o_r(s) = o_r + (s-1) O_r in us."""
    *_, o_r, big_o_r = _unpack(_range_for(params_by_range, s))
    return o_r + (s - 1.0) * big_o_r


def prtt_true(
    params_by_range: Sequence[RangeParams],
    n: int,
    d: float,
    s: float,
    *,
    bend: Bend | None = None,
) -> float:
    """The noise-free PRTT(n, d, s) in us of the piecewise LogGP(S) model; d is the delay
    that elapses between two sends. ``bend``: G is multiplied by :func:`bend_factor`."""
    L, o, g, G, per_byte_o, o_r, per_byte_o_r = _unpack(_range_for(params_by_range, s))
    G *= bend_factor(bend, s)
    o_s = o + (s - 1.0) * per_byte_o
    o_r_s = o_r + (s - 1.0) * per_byte_o_r
    p1 = 2.0 * (L + o_s + o_r_s + (s - 1.0) * G)
    if n == 1:
        return p1
    g_all = g + (s - 1.0) * G
    if d == 0.0:
        return p1 + (n - 1) * g_all
    return p1 + (n - 1) * max(o_s + d, g_all)


def _median_ci(sorted_x: npt.NDArray[np.float64]) -> tuple[float, float]:
    """Distribution-free 95% CI of the median from order statistics (binomial)."""
    m = sorted_x.size
    if m < 6:
        return float(sorted_x[0]), float(sorted_x[-1])
    # Largest j with P(B <= j - 1) <= 0.025 for B ~ Bin(m, 1/2); interval [x_(j), x_(m-j+1)].
    j = int(stats.binom.ppf(0.025, m, 0.5))
    j = max(j, 1)
    return float(sorted_x[j - 1]), float(sorted_x[m - j])


def _iqm(sorted_x: npt.NDArray[np.float64]) -> float:
    """The interquartile mean as the C tool computes it: the mean of x[m/4 .. m - m/4)."""
    m = sorted_x.size
    lo, hi = m // 4, m - m // 4
    if hi <= lo:
        lo, hi = 0, m
    return float(sorted_x[lo:hi].mean())


def _summarise(
    rng: np.random.Generator,
    true_us: float,
    noise: float,
    reps: int,
    jitter: float,
    iqm: bool = True,
) -> dict[str, Any]:
    centre = true_us * (1.0 + jitter * rng.standard_normal()) if jitter > 0.0 else true_us
    x = centre * (1.0 + noise * rng.standard_normal(reps))
    x = np.maximum(x, 1e-6)
    x.sort()
    lo, hi = _median_ci(x)
    return {
        "min_us": float(x[0]),
        "median_us": float(np.median(x)),
        "iqm_us": _iqm(x) if iqm else None,
        "mean_us": float(x.mean()),
        "p99_us": float(np.quantile(x, 0.99)),
        "max_us": float(x[-1]),
        "stddev_us": float(x.std(ddof=1)) if reps > 1 else 0.0,
        "count": int(reps),
        "ci95_median_us": (lo, hi),
    }


def synth_prtt(
    params_by_range: Sequence[RangeParams],
    sizes: Sequence[int] | None = None,
    *,
    n: int = 16,
    noise: float = 0.01,
    seed: int = 0,
    reps: int = 200,
    jitter: float = 0.0,
    transport: str = "synthetic",
    orecv: bool = True,
    overshoot_us: float = 0.0,
    delay: Literal["corrected", "d_actual", "none"] = "corrected",
    iqm: bool = True,
    bend: Bend | None = None,
) -> Measurements:
    """Synthetic PRTT measurements of a piecewise LogGP model.

    Parameters
    ----------
    params_by_range
        ``(from_bytes, L, o, g, G)``, optionally followed by ``O``, ``o_r``, ``O_r``, per
        protocol range, in us and us/byte (``o``, ``O`` are the send overhead; ``o_r``,
        ``O_r`` default to them); a size uses the last range whose ``from_bytes`` is <= it
        (the first range also below its ``from_bytes``). Values that are physically impossible
        (a negative L) are allowed, to test how a fit deals with such data, as long as
        every time is positive.
    sizes
        Message sizes in bytes; default :func:`sweep_sizes` ().
    n
        Messages per train for PRTT(n,0,s) and PRTT(n,d,s) (>= 2).
    noise
        Relative standard deviation of one round-trip sample.
    seed
        Seed of the random generator (results are reproducible).
    reps
        Samples per point (the reported values are their median, mean, ...).
    jitter
        Relative standard deviation of a systematic error per point, not shown by its CI.
    transport
        The transport name written to the header.
    orecv
        Also write an ``orecv`` record per size (the measured receive overhead o_r(s), each
        sample one receive call, with the same noise model); False gives a file as the
        paper's method (and older tools) would, without o_r.
    overshoot_us
        The busy delay that elapses exceeds the requested d by this much (>= 0).
    delay
        ``"corrected"`` (the current C tool): the samples are those of a delay of exactly d,
        ``delay_excess_us`` = ``overshoot_us`` is recorded (information only);
        ``"d_actual"`` (older files): the samples include the overshoot and the delay that
        elapsed is recorded as ``d_actual_us``; ``"none"``: the samples include the
        overshoot, nothing is recorded.
    iqm
        Record the interquartile mean ``iqm_us`` of the samples (False: only the median
        and the other statistics, as older files).
    bend
        ``(centre_bytes, factor, width_octaves)``: a smooth change of the per-byte gap G by
        ``factor`` around ``centre_bytes`` (see the module docstring); no protocol change.

    Returns
    -------
    Measurements
        The same object :func:`railgauge.measurements.read_measurements` returns.
    """
    if not params_by_range:
        raise ValueError("params_by_range must hold at least one range")
    for p in params_by_range:
        _unpack(p)
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if noise < 0.0 or jitter < 0.0:
        raise ValueError("noise and jitter must be >= 0")
    if not (math.isfinite(overshoot_us) and overshoot_us >= 0.0):
        raise ValueError(f"overshoot_us must be a finite number >= 0, got {overshoot_us}")
    if delay not in ("corrected", "d_actual", "none"):
        raise ValueError(f"delay must be 'corrected', 'd_actual' or 'none', got {delay!r}")
    if bend is not None:
        bend_factor(bend, 1.0)  # validates it
    size_list = sweep_sizes() if sizes is None else [int(s) for s in sizes]
    if any(s < 0 for s in size_list):
        raise ValueError("sizes must be >= 0")
    rng = np.random.default_rng(seed)
    ranges = sorted(params_by_range, key=lambda p: p[0])

    records: list[PrttPoint] = []
    line = 2
    for s in sorted(set(size_list)):
        p1_true = prtt_true(ranges, 1, 0.0, s, bend=bend)
        pn_true = prtt_true(ranges, n, 0.0, s, bend=bend)
        if p1_true <= 0.0 or pn_true <= 0.0:
            raise ValueError(f"the parameters give a non-positive PRTT at s={s}")
        p1 = _summarise(rng, p1_true, noise, reps, jitter, iqm)
        pn = _summarise(rng, pn_true, noise, reps, jitter, iqm)
        p1_med = p1["median_us"]
        gall_meas = (pn["median_us"] - p1_med) / (n - 1)
        d = p1_med if p1_med >= _HIGH_GAP_RATIO * gall_meas else p1_med + max(gall_meas, 0.0)
        d = round(d, 3)
        d_act = d + overshoot_us
        d_samples = d if delay == "corrected" else d_act
        pd = _summarise(
            rng, prtt_true(ranges, n, d_samples, s, bend=bend), noise, reps, jitter, iqm
        )
        da = d_act if delay == "d_actual" else None
        excess = overshoot_us if delay == "corrected" else None
        for nn, dd, summ in ((1, 0.0, p1), (n, 0.0, pn), (n, d, pd)):
            records.append(
                PrttPoint(
                    n=nn,
                    d_us=dd,
                    s=s,
                    stable=True,
                    file="<synthetic>",
                    line=line,
                    d_actual_us=da if dd > 0.0 else None,
                    delay_excess_us=excess if dd > 0.0 else None,
                    **summ,
                )
            )
            line += 1
        if orecv:
            o_r = o_r_true(ranges, s)
            if o_r <= 0.0:
                raise ValueError(f"the parameters give a non-positive o_r at s={s}")
            summ = _summarise(rng, o_r, noise, reps, jitter, iqm)
            records.append(
                PrttPoint(
                    n=n,
                    d_us=d,
                    s=s,
                    stable=True,
                    file="<synthetic>",
                    line=line,
                    type="orecv",
                    d_actual_us=da,
                    **summ,
                )
            )
            line += 1

    header: dict[str, Any] = {
        "type": "header",
        "tool": "railgauge-synth",
        "version": __version__,
        "pattern": "prtt",
        "transport": transport,
        "transport_info": {
            "synthetic": True,
            "params_by_range": [list(p) for p in ranges],
        },
        "host": "synthetic",
        "ranks": 2,
        "timer": {"source": "synthetic", "resolution_ns": 1.0, "overhead_ns": 0.0},
        "params": {
            "n": n,
            "noise": noise,
            "reps": reps,
            "jitter": jitter,
            "seed": seed,
            "orecv": orecv,
            "overshoot_us": overshoot_us,
            "delay": delay,
            "iqm": iqm,
            "bend": None if bend is None else list(bend),
        },
        "started_utc": _SYNTH_TIME,
    }
    footer = {"type": "footer", "wall_s": 0.0, "points": len(records), "status": "ok"}
    return Measurements(
        header=header,
        records=records,
        transport=transport,
        headers=[header],
        footers=[footer],
        paths=["<synthetic>"],
    )


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_jsonl(meas: Measurements, path: str | Path) -> Path:
    """Writes measurements as one JSON Lines block (header, records, footer)."""
    out = Path(path)
    lines = [json.dumps(meas.header, sort_keys=False)]
    for pt in meas.records:
        rec = {k: _json_safe(v) for k, v in pt.to_record().items()}
        lines.append(json.dumps(rec))
    footer = (
        meas.footers[-1]
        if meas.footers
        else {
            "type": "footer",
            "wall_s": 0.0,
            "points": len(meas.records),
            "status": "ok",
        }
    )
    lines.append(json.dumps(footer))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
