"""Reading PRTT measurement files (JSON Lines written by ``railgauge-bench prtt``).

A file is a sequence of blocks, each a ``header`` record, measurement records and a
``footer`` record. Several blocks may follow each other in one file (a coarse sweep, then
refinement sweeps appended to it), and several files may be read together; they are treated
as one stream in the order given.

Record types used here::

    {"type": "header", "transport": "shm", "host": ..., "timer": {...}, "params": {...}, ...}
    {"type": "prtt", "n": 16, "d_us": 0.0, "s": 1024, "median_us": ..., "iqm_us": ...,
     "count": ..., "ci95_median_us": [lo, hi], "min_us": ..., "mean_us": ..., "p99_us": ...,
     "max_us": ..., "stddev_us": ..., "stable": true}
    {"type": "prtt", "n": 16, "d_us": 3.1, "delay_excess_us": 0.06, "s": 1024, ...}
    {"type": "prtt", "n": 16, "d_us": 3.1, "d_actual_us": 3.2, "s": 1024, ...}   (older files)
    {"type": "orecv", "n": 16, "d_us": 3.1, "s": 1024, "median_us": ..., "count": ...,
     "ci95_median_us": [lo, hi], ...}
    {"type": "footer", "wall_s": ..., "points": ..., "status": "ok"}

Every other record type is ignored (forward compatibility). The times of ``prtt`` records
are round-trip times in microseconds. ``iqm_us`` (optional) is the interquartile mean of the
samples, the point estimate of a record where present (:attr:`PrttPoint.value_us`; the
median otherwise): where the clock advances in coarse steps the median sits on that grid,
while the IQM is dithered below it. The uncertainty is that of the median (its CI).

The busy delays of PRTT(n,d,s) overshoot the requested ``d_us`` a little. The current
``railgauge-bench`` corrects every sample for the overshoot of each of its delays (the
samples are "as if every delay lasted exactly d_us") and records the mean overshoot as
``delay_excess_us``, information only. Older files instead record ``d_actual_us``, the
measured mean length of the busy delays, with uncorrected samples
(:attr:`PrttPoint.delay_us` is then the delay that elapsed).
The times of ``orecv`` records are not round trips: each sample is the receiver's mean time
of one receive call when the message was already there, the receive overhead o_r(s).

A later ``prtt`` record for the same key ``(n, d_us > 0, s)`` replaces an earlier one only
if its ``count`` is larger; likewise a later ``orecv`` record for the same size ``s``.

Problems in the input raise :class:`MeasurementError` (a ``ValueError``) whose message names
the file and the line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from railgauge.hoststate import c2c_record
from railgauge.textin import TextInputError, read_text

__all__ = [
    "MeasurementError",
    "Measurements",
    "PrttPoint",
    "Triples",
    "read_measurements",
    "sizes_triples",
    "triples",
]

#: Keys a ``prtt`` record must have.
REQUIRED_PRTT_KEYS: tuple[str, ...] = ("n", "d_us", "s", "median_us", "count")
#: Optional time keys of a ``prtt`` record; validated when present and not null.
OPTIONAL_TIME_KEYS: tuple[str, ...] = (
    "min_us",
    "mean_us",
    "iqm_us",
    "p99_us",
    "max_us",
    "stddev_us",
)
#: Keys a ``header`` record must have.
REQUIRED_HEADER_KEYS: tuple[str, ...] = ("transport",)

# z value of a two-sided 95% normal interval; converts a CI half-width to a sigma.
_Z95 = 1.959963984540054
# Asymptotic ratio of the standard error of the median to that of the mean (normal data).
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2.0)

PointKind = Literal["p1", "pn", "pd", "orecv", "other"]
RecordType = Literal["prtt", "orecv"]
#: The record types read as measurements.
RECORD_TYPES: tuple[str, ...] = ("prtt", "orecv")
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class MeasurementError(ValueError):
    """A measurement file cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class PrttPoint:
    """One PRTT(n, d, s) measurement: summary statistics of round-trip times in us.

    With ``type == "orecv"`` the point is a receive-overhead measurement instead: its times
    are the receiver's mean time of one receive call (o_r(s)), not round trips.
    ``iqm_us`` is the interquartile mean of the samples (None in older files); the point
    estimate :attr:`value_us` uses it where present. ``d_actual_us`` is the measured mean
    length of the busy delays of older files, whose samples are not corrected for the
    overshoot (None when not recorded); ``delay_excess_us`` is the mean overshoot per delay
    that the current tool has already subtracted from every sample (information only).
    """

    n: int
    d_us: float
    s: int
    median_us: float
    count: int
    min_us: float | None = None
    mean_us: float | None = None
    p99_us: float | None = None
    max_us: float | None = None
    stddev_us: float | None = None
    ci95_median_us: tuple[float, float] | None = None
    stable: bool | None = None
    file: str = ""
    line: int = 0
    type: RecordType = "prtt"
    d_actual_us: float | None = None
    iqm_us: float | None = None
    delay_excess_us: float | None = None
    #: The interquartile mean of each pass of a run in passes (None: one pass, older files).
    pass_iqm_us: tuple[float, ...] | None = None
    #: The probe of the host's state before each pass (railgauge-bench prtt; 0 where a
    #: pass has none; None: one pass, older files). See :mod:`railgauge.hoststate`.
    pass_state_us: tuple[float, ...] | None = None
    #: The probe just after each pass (0 where a pass has none; None: older files): a pass
    #: whose two probes show different states straddled a change of the host's state.
    pass_state_after_us: tuple[float, ...] | None = None
    #: Whether a pass of the point was made in the run's reference state of the host
    #: (railgauge-bench prtt's ``in_state``; None: older files, one pass). False: the point
    #: kept its fastest passes, all made in another state.
    in_state: bool | None = None

    @property
    def kind(self) -> PointKind:
        """``p1`` for PRTT(1,0,s), ``pn`` for PRTT(n,0,s), ``pd`` for PRTT(n,d,s), d > 0,
        ``orecv`` for a receive-overhead record."""
        if self.type == "orecv":
            return "orecv"
        if self.n == 1 and self.d_us == 0.0:
            return "p1"
        if self.n > 1 and self.d_us == 0.0:
            return "pn"
        if self.n > 1 and self.d_us > 0.0:
            return "pd"
        return "other"

    @property
    def key(self) -> tuple[str, int, bool, int]:
        """The replacement key: ``("prtt", n, d_us > 0, s)``, or ``("orecv", 0, True, s)``
        (one receive-overhead record per size)."""
        if self.type == "orecv":
            return ("orecv", 0, True, self.s)
        return ("prtt", self.n, self.d_us > 0.0, self.s)

    @property
    def delay_us(self) -> float:
        """The delay the samples correspond to: ``d_actual_us`` when recorded (older files,
        uncorrected samples), else ``d_us`` (current files: the samples are corrected to
        delays of exactly ``d_us``; ``delay_excess_us`` is information only)."""
        return self.d_actual_us if self.d_actual_us is not None else self.d_us

    @property
    def value_us(self) -> float:
        """The point estimate: ``iqm_us`` where recorded, else ``median_us``."""
        return self.iqm_us if self.iqm_us is not None else self.median_us

    @property
    def sigma_us(self) -> float:
        """Standard uncertainty of the median.

        From the 95% CI of the median (half-width / 1.96) when present, otherwise from the
        standard deviation (sqrt(pi/2) * stddev / sqrt(count)), otherwise 0 (unknown; the fit
        then relies on its relative tolerance floor).
        """
        if self.ci95_median_us is not None:
            lo, hi = self.ci95_median_us
            return max(hi - lo, 0.0) / (2.0 * _Z95)
        if self.stddev_us is not None and self.count > 0:
            return _MEDIAN_SE_FACTOR * self.stddev_us / math.sqrt(self.count)
        return 0.0

    def to_record(self) -> dict[str, Any]:
        """The JSON Lines record of this point (``type`` = ``prtt`` or ``orecv``)."""
        rec: dict[str, Any] = {"type": self.type, "n": self.n, "d_us": self.d_us}
        if self.d_actual_us is not None:
            rec["d_actual_us"] = self.d_actual_us
        if self.delay_excess_us is not None:
            rec["delay_excess_us"] = self.delay_excess_us
        rec["s"] = self.s
        for key in ("min_us", "median_us", "mean_us", "iqm_us", "p99_us", "max_us", "stddev_us"):
            if key != "iqm_us" or self.iqm_us is not None:
                rec[key] = getattr(self, key)
        rec["count"] = self.count
        rec["ci95_median_us"] = (
            list(self.ci95_median_us) if self.ci95_median_us is not None else None
        )
        rec["stable"] = self.stable
        if self.pass_iqm_us is not None:
            rec["pass_iqm_us"] = list(self.pass_iqm_us)
        if self.pass_state_us is not None:
            rec["pass_state_us"] = list(self.pass_state_us)
        if self.pass_state_after_us is not None:
            rec["pass_state_after_us"] = list(self.pass_state_after_us)
        if self.in_state is not None:
            rec["in_state"] = self.in_state
        return rec


@dataclass
class Measurements:
    """The PRTT measurements of one or more files.

    ``header`` is the first header record; ``headers`` and ``footers`` hold all of them in
    order. ``records`` holds the surviving ``prtt`` and ``orecv`` records (after
    replacement), sorted by size, then type (``prtt`` first), then n, then d. ``warnings``
    lists non-fatal findings (an interrupted run, for example).
    """

    header: dict[str, Any]
    records: list[PrttPoint]
    transport: str
    headers: list[dict[str, Any]] = field(default_factory=list)
    footers: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The gauge's ``c2c`` record (the last valid one), reduced by
    #: :func:`railgauge.hoststate.c2c_record`.
    c2c: dict[str, Any] | None = None

    @property
    def host(self) -> str:
        return str(self.header.get("host", ""))


@dataclass(frozen=True)
class Triples:
    """Per-size arrays of the three PRTT patterns, for the sizes that have all three.

    ``p1`` = PRTT(1,0,s), ``pn`` = PRTT(n_pn,0,s), ``pd`` = PRTT(n_pd,d,s) in us, each the
    record's point estimate (:attr:`PrttPoint.value_us`: the interquartile mean where
    recorded, else the median), with their standard uncertainties ``*_sigma`` (from the CI
    of the median). ``d`` is the requested delay of PRTT(n_pd,d,s), ``d_actual`` the
    measured one of older files (NaN where not recorded, as in current files, whose samples
    are corrected to d; :attr:`d_eff` falls back to ``d``). ``o_r`` is the measured receive
    overhead o_r(s) (point estimate of the ``orecv`` record, NaN where the size has none)
    with its standard uncertainty ``o_r_sigma``. Left out (None), the optional arrays are
    all NaN.
    """

    sizes: IntArray
    p1: FloatArray
    p1_sigma: FloatArray
    pn: FloatArray
    pn_sigma: FloatArray
    n_pn: IntArray
    pd: FloatArray
    pd_sigma: FloatArray
    n_pd: IntArray
    d: FloatArray
    d_actual: FloatArray | None = None
    o_r: FloatArray | None = None
    o_r_sigma: FloatArray | None = None

    def __post_init__(self) -> None:
        for name in ("d_actual", "o_r", "o_r_sigma"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.full(self.sizes.shape, np.nan))

    def __len__(self) -> int:
        return int(self.sizes.size)

    @property
    def d_eff(self) -> FloatArray:
        """The delay that elapsed: ``d_actual`` where recorded, else ``d``."""
        da = np.asarray(self.d_actual, dtype=np.float64)
        return np.where(np.isfinite(da), da, self.d)

    @property
    def o_r_measured(self) -> npt.NDArray[np.bool_]:
        """True where the size has a measured receive overhead."""
        return np.isfinite(np.asarray(self.o_r, dtype=np.float64))


def _where(path: str, line: int) -> str:
    return f"{path}:{line}"


def finite_number(value: Any) -> bool:
    """A JSON number (not a bool) that is finite."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def record_ci95(
    rec: dict[str, Any], where: str, error: type[ValueError]
) -> tuple[float, float] | None:
    """A record's ``ci95_median_us`` as (lo, hi) with 0 <= lo <= hi, None where absent or
    [null, null] (the C JSON writer writes a non-finite number as null: no CI known);
    anything else raises ``error`` naming WHERE."""
    raw_ci = rec.get("ci95_median_us")
    if isinstance(raw_ci, list) and len(raw_ci) == 2 and raw_ci[0] is None and raw_ci[1] is None:
        return None
    if raw_ci is None:
        return None
    if not isinstance(raw_ci, list) or len(raw_ci) != 2 or not all(
        finite_number(v) for v in raw_ci
    ):
        raise error(
            f"{where}: 'ci95_median_us' must be [lo, hi] with finite numbers, got {raw_ci!r}"
        )
    lo, hi = float(raw_ci[0]), float(raw_ci[1])
    if lo < 0.0 or hi < 0.0:
        raise error(f"{where}: 'ci95_median_us' has a negative bound {raw_ci!r}")
    if lo > hi:
        raise error(f"{where}: 'ci95_median_us' has lo > hi {raw_ci!r}")
    return (lo, hi)


def record_stable(rec: dict[str, Any], where: str, error: type[ValueError]) -> bool | None:
    """A record's ``stable``: true, false or absent/null (None); anything else raises."""
    stable = rec.get("stable")
    if stable is not None and not isinstance(stable, bool):
        raise error(f"{where}: 'stable' must be true, false or null, got {stable!r}")
    return stable


def _int_value(rec: dict[str, Any], key: str, where: str) -> int:
    value = rec[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MeasurementError(f"{where}: '{key}' must be an integer, got {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise MeasurementError(f"{where}: '{key}' must be an integer, got {value!r}")
    return int(value)


def time_value(value: Any, key: str, where: str, error: type[Exception] = MeasurementError, *,
               required: bool = False) -> float | None:
    """A record's time in us: a finite number >= 0; None where it is null and not required.
    Raises error naming where and key otherwise."""
    if value is None:
        if required:
            raise error(f"{where}: '{key}' is null; a finite time is required")
        return None
    if not finite_number(value):
        what = "a finite number" if required else "a finite number or null"
        raise error(f"{where}: '{key}' must be {what}, got {value!r}")
    out = float(value)
    if out < 0.0:
        raise error(f"{where}: '{key}' is negative ({out!r} us)")
    return out


def _parse_prtt(rec: dict[str, Any], path: str, line: int) -> PrttPoint:
    where = _where(path, line)
    rtype: RecordType = "orecv" if rec.get("type") == "orecv" else "prtt"
    missing = [k for k in REQUIRED_PRTT_KEYS if k not in rec]
    if missing:
        raise MeasurementError(
            f"{where}: {rtype} record is missing required key(s): {', '.join(missing)}"
        )
    n = _int_value(rec, "n", where)
    if n < 1:
        raise MeasurementError(f"{where}: 'n' must be >= 1, got {n}")
    s = _int_value(rec, "s", where)
    if s < 0:
        raise MeasurementError(f"{where}: message size 's' must be >= 0, got {s}")
    count = _int_value(rec, "count", where)
    if count < 1:
        raise MeasurementError(f"{where}: 'count' must be >= 1, got {count}")
    d_us = time_value(rec.get("d_us"), "d_us", where, required=True)
    median = time_value(rec.get("median_us"), "median_us", where, required=True)
    assert d_us is not None and median is not None
    d_actual = time_value(rec.get("d_actual_us"), "d_actual_us", where)
    excess = rec.get("delay_excess_us")
    if excess is not None and not finite_number(excess):
        raise MeasurementError(
            f"{where}: 'delay_excess_us' must be a finite number, got {excess!r}"
        )
    times = {k: time_value(rec.get(k), k, where) for k in OPTIONAL_TIME_KEYS}

    ci = record_ci95(rec, where, MeasurementError)
    stable = record_stable(rec, where, MeasurementError)
    passes = rec.get("pass_iqm_us")
    if passes is not None and (
        not isinstance(passes, list)
        or not passes
        or not all(finite_number(v) and float(v) > 0.0 for v in passes)
    ):
        raise MeasurementError(
            f"{where}: 'pass_iqm_us' must be a list of positive finite numbers, got {passes!r}"
        )
    probe_lists: dict[str, tuple[float, ...] | None] = {}
    for key in ("pass_state_us", "pass_state_after_us"):
        states = rec.get(key)
        if states is not None and (
            not isinstance(states, list)
            or not all(finite_number(v) and float(v) >= 0.0 for v in states)
        ):
            raise MeasurementError(
                f"{where}: '{key}' must be a list of finite numbers >= 0, got {states!r}"
            )
        probe_lists[key] = None if states is None else tuple(float(v) for v in states)
    in_state = rec.get("in_state")
    if in_state is not None and not isinstance(in_state, bool):
        raise MeasurementError(f"{where}: 'in_state' must be true or false, got {in_state!r}")

    return PrttPoint(
        n=n,
        d_us=d_us,
        s=s,
        median_us=median,
        count=count,
        ci95_median_us=ci,
        stable=stable,
        file=path,
        line=line,
        type=rtype,
        d_actual_us=d_actual,
        delay_excess_us=None if excess is None else float(excess),
        pass_iqm_us=None if passes is None else tuple(float(v) for v in passes),
        pass_state_us=probe_lists["pass_state_us"],
        pass_state_after_us=probe_lists["pass_state_after_us"],
        in_state=in_state,
        **times,
    )


def json_records(path: Path | str, text: str,
                 error: type[Exception]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON Lines records of text with their line numbers; blank lines skipped, a line
    that is not a JSON object raises error naming path and line."""
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise error(
                f"{path}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})"
            ) from exc
        if not isinstance(rec, dict):
            raise error(f"{path}:{lineno}: a record must be a JSON object")
        yield lineno, rec


def _iter_records(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        text = read_text(path)
    except TextInputError as exc:
        raise MeasurementError(f"{path}: {exc}") from None
    return json_records(path, text, MeasurementError)


@dataclass
class Blocks:
    """What a reader of header / records / footer blocks keeps across the files of one
    fit: the headers and footers, the warnings, and the one transport they all name."""

    headers: list[dict[str, Any]] = field(default_factory=list)
    footers: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    transport: str | None = None
    transport_where: str = ""


def read_blocks(path: Path, records: Iterable[tuple[int, dict[str, Any]]], blocks: Blocks, *,
                point_types: Iterable[str], on_point: Callable[[dict[str, Any], int], None],
                error: type[Exception],
                check_header: Callable[[dict[str, Any], str], None] | None = None,
                on_other: Callable[[dict[str, Any]], None] | None = None) -> None:
    """One file's blocks into blocks: each header (checked by check_header, then for its
    transport) opens a block, point records (types in point_types) go to on_point with
    their line number, a footer closes the block; other record types go to on_other where
    given and are otherwise ignored on purpose (forward compatibility). Raises error for a
    file without a header, a record before the first header, or a transport other than the
    other headers'."""
    in_block = False
    seen_header = False
    kinds = set(point_types)
    for lineno, rec in records:
        rtype = rec.get("type")
        where = _where(str(path), lineno)
        if rtype == "header":
            if check_header is not None:
                check_header(rec, where)
            tr = rec.get("transport")
            if not isinstance(tr, str) or not tr:
                raise error(f"{where}: header 'transport' must be a non-empty string")
            if blocks.transport is None:
                blocks.transport, blocks.transport_where = tr, where
            elif tr != blocks.transport:
                raise error(
                    f"{where}: transport '{tr}' differs from '{blocks.transport}' of the header "
                    f"at {blocks.transport_where}; measurements of different transports cannot "
                    "be fitted together"
                )
            if in_block:
                blocks.warnings.append(f"{where}: header without a footer before it")
            blocks.headers.append(rec)
            in_block = True
            seen_header = True
        elif rtype == "footer":
            if not seen_header:
                raise error(f"{where}: footer before any header")
            blocks.footers.append(rec)
            status = rec.get("status", "ok")
            if status != "ok":
                blocks.warnings.append(f"{where}: footer status is '{status}'")
            in_block = False
        elif rtype in kinds:
            if not seen_header:
                raise error(f"{where}: {rtype} record before any header (missing header)")
            on_point(rec, lineno)
        elif on_other is not None:
            on_other(rec)
    if not seen_header:
        raise error(f"{path}: no header record (missing header)")
    if in_block:
        blocks.warnings.append(f"{path}: the last block has no footer (interrupted run?)")


def read_measurements(paths: str | Path | Sequence[str | Path]) -> Measurements:
    """Reads one or more JSON Lines measurement files.

    Parameters
    ----------
    paths
        A path or a sequence of paths, read in order as one stream.

    Returns
    -------
    Measurements
        The first header, every header and footer, and the ``prtt`` and ``orecv`` records
        after replacement (a later ``prtt`` record for the same ``(n, d_us > 0, s)``, or a
        later ``orecv`` record for the same ``s``, replaces an earlier one only if its
        ``count`` is larger).

    Raises
    ------
    MeasurementError
        Naming file and line, for unreadable files or JSON, a record before any header,
        missing required keys, negative or non-finite times, sizes < 0, and headers that
        disagree on the transport.
    """
    path_list = [paths] if isinstance(paths, str | Path) else list(paths)
    if not path_list:
        raise MeasurementError("no measurement file given")

    blocks = Blocks()
    best: dict[tuple[str, int, bool, int], PrttPoint] = {}
    c2c: list[dict[str, Any]] = []

    def on_other(rec: dict[str, Any]) -> None:
        if rec.get("type") == "c2c":
            got = c2c_record(rec)
            if got is not None:
                c2c.append(got)

    def check_header(rec: dict[str, Any], where: str) -> None:
        missing = [k for k in REQUIRED_HEADER_KEYS if k not in rec]
        if missing:
            raise MeasurementError(
                f"{where}: header is missing required key(s): {', '.join(missing)}"
            )

    for p in path_list:
        path = Path(p)

        def on_point(rec: dict[str, Any], lineno: int, path: Path = path) -> None:
            point = _parse_prtt(rec, str(path), lineno)
            old = best.get(point.key)
            if old is None or point.count > old.count:
                best[point.key] = point

        read_blocks(path, _iter_records(path), blocks, point_types=RECORD_TYPES,
                    on_point=on_point, error=MeasurementError, check_header=check_header,
                    on_other=on_other)

    transport = blocks.transport
    headers, footers, warnings = blocks.headers, blocks.footers, blocks.warnings
    assert transport is not None
    records = sorted(best.values(), key=lambda q: (q.s, q.type != "prtt", q.n, q.d_us))
    return Measurements(
        header=headers[0],
        records=records,
        transport=transport,
        headers=headers,
        footers=footers,
        paths=[str(p) for p in path_list],
        warnings=warnings,
        c2c=c2c[-1] if c2c else None,
    )


def triples(meas: Measurements) -> Triples:
    """The sizes that have all three patterns, as arrays sorted by size.

    Where a size has PRTT(n,0,s) or PRTT(n,d,s) records for several n, the record with the
    largest n is used (the error of the derived per-message values shrinks as 1/(n-1)).
    The values are the records' point estimates (``iqm_us`` where recorded, else
    ``median_us``). The receive overhead ``o_r`` and ``d_actual`` are NaN where not measured.
    """
    by_size: dict[int, dict[str, PrttPoint]] = {}
    orecv: dict[int, PrttPoint] = {}
    for pt in meas.records:
        kind = pt.kind
        if kind == "other":
            continue
        if kind == "orecv":
            orecv[pt.s] = pt  # one per size after replacement
            continue
        slot = by_size.setdefault(pt.s, {})
        old = slot.get(kind)
        if old is None or pt.n > old.n:
            slot[kind] = pt
    sizes = sorted(s for s, slot in by_size.items() if len(slot) == 3)
    rows = [by_size[s] for s in sizes]

    def arr(kind: str, attr: str) -> FloatArray:
        return np.array([float(getattr(r[kind], attr)) for r in rows], dtype=np.float64)

    def opt(values: Iterable[float | None]) -> FloatArray:
        return np.array([math.nan if v is None else v for v in values], dtype=np.float64)

    o_r_pts = [orecv.get(s) for s in sizes]

    return Triples(
        sizes=np.array(sizes, dtype=np.int64),
        p1=arr("p1", "value_us"),
        p1_sigma=arr("p1", "sigma_us"),
        pn=arr("pn", "value_us"),
        pn_sigma=arr("pn", "sigma_us"),
        n_pn=np.array([r["pn"].n for r in rows], dtype=np.int64),
        pd=arr("pd", "value_us"),
        pd_sigma=arr("pd", "sigma_us"),
        n_pd=np.array([r["pd"].n for r in rows], dtype=np.int64),
        d=arr("pd", "d_us"),
        d_actual=opt(r["pd"].d_actual_us for r in rows),
        o_r=opt(p.value_us if p is not None else None for p in o_r_pts),
        o_r_sigma=opt(p.sigma_us if p is not None else None for p in o_r_pts),
    )


def sizes_triples(meas: Measurements) -> list[int]:
    """The measured sizes that have all three patterns PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s)
    (with or without a receive-overhead record)."""
    return [int(s) for s in triples(meas).sizes]
