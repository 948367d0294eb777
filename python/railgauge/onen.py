"""Reading 1:n / n:1 measurements (``railgauge-bench onen``) for the LoP model.

Two input formats, both described exactly in ``docs/lop.md``:

* **JSON Lines** as the native benchmark writes them: blocks of a ``header`` record (as in
  :mod:`railgauge.measurements`, with ``"pattern": "onen"``), ``onen`` records and a
  ``footer`` record::

    {"type": "onen", "direction": "1:n", "mode": "single", "p": 3, "s": 8,
     "rtt_min_us": 21.9, "rtt_median_us": 24.1, "count": 2000,
     "ci95_median_us": [23.8, 24.4], "os_us": 0.61, "os_min_us": 0.55,
     "or_us": 0.32, "or_min_us": 0.29, "stable": true}

  ``rtt_*_us`` is the time of one whole round (rank 0 sends to p peers and has all p
  answers back), ``os_us`` / ``or_us`` the time of the posting calls of one round divided
  by p (per request). Every other record type is ignored (forward compatibility).

* **CSV** for data measured elsewhere: a header line ``p,rtt_us`` with the optional columns
  ``os_us``, ``or_us`` (and ``direction``, ``mode``, ``s``), a row per p; ``rtt_us`` has the
  meaning of ``rtt_median_us`` (the round's time, the point estimate) and ``os_us`` /
  ``or_us`` that of the records. Several rows for one p (and direction, mode, s), in one
  file or in several CSV files read together, are repeated measurements: they are combined
  into one point whose ``rtt_us``, ``os_us`` and ``or_us`` are the medians over the rows
  (``os_us`` / ``or_us`` over the rows that give one) and whose ``count`` is the number of
  rows; :attr:`OnenData.notes` says which p were combined (the LoP fit's ``notes``).

The model works with the per-peer round-trip time RTT(p)/p, the quantity the LoP paper fits
and the slides plot (:attr:`OnenPoint.per_peer`). Problems raise :class:`OnenError` (a
``ValueError``) naming the file and the line.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from railgauge import __version__
from railgauge.measurements import (
    Blocks,
    json_records,
    read_blocks,
    record_ci95,
    record_stable,
    time_value,
)
from railgauge.textin import TextInputError, plain_suffix, read_text

__all__ = [
    "DIRECTIONS",
    "MODES",
    "STATS",
    "OnenData",
    "OnenError",
    "OnenPoint",
    "SeriesKey",
    "is_onen_file",
    "read_onen",
    "synth_onen",
    "write_onen_jsonl",
]


#: Values of the ``direction`` key: rank 0 addresses p peers (1:n), or p peers address rank 0
#: (n:1).
DIRECTIONS: tuple[str, ...] = ("1:n", "n:1")
#: Values of the ``mode`` key: one posting call per request, a list posted at once, inline
#: (inject) sends, one-sided RDMA writes.
MODES: tuple[str, ...] = ("single", "list", "inject", "rma")
#: The statistics of a round's time that a record carries.
STATS: tuple[str, ...] = ("min", "median")
#: Keys an ``onen`` record must have.
REQUIRED_ONEN_KEYS: tuple[str, ...] = ("direction", "mode", "p", "count")
#: Optional time keys of an ``onen`` record (null allowed: not measured).
OPTIONAL_TIME_KEYS: tuple[str, ...] = (
    "rtt_min_us",
    "rtt_median_us",
    "os_us",
    "os_min_us",
    "or_us",
    "or_min_us",
)
#: Columns a CSV file may have; ``p`` and ``rtt_us`` are required.
CSV_COLUMNS: tuple[str, ...] = ("p", "rtt_us", "os_us", "or_us", "direction", "mode", "s")
_Z95 = 1.959963984540054

#: (direction, mode, s) of one series; s is None where the input does not say.
SeriesKey = tuple[str, str, int | None]


class OnenError(ValueError):
    """An onen input cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class OnenPoint:
    """One onen measurement: the round time for p peers and the posting overheads.

    ``rtt_min_us`` / ``rtt_median_us`` are the minimum and median over ``count`` rounds of
    the time of one whole round in us (None where not given; at least one is present).
    ``os_us`` / ``or_us`` are the median over the rounds of the time rank 0 spends in the
    calls that post the p sends / the p receives of one round, divided by p (the per-request
    overheads o_s(p), o_r(p) of the paper); ``os_min_us`` / ``or_min_us`` the minimum.
    ``ci95_median_us`` is the 95% confidence interval of ``rtt_median_us``.
    """

    direction: str
    mode: str
    p: int
    s: int | None
    count: int
    rtt_min_us: float | None = None
    rtt_median_us: float | None = None
    ci95_median_us: tuple[float, float] | None = None
    os_us: float | None = None
    os_min_us: float | None = None
    or_us: float | None = None
    or_min_us: float | None = None
    stable: bool | None = None
    file: str = ""
    line: int = 0

    @property
    def series(self) -> SeriesKey:
        return (self.direction, self.mode, self.s)

    @property
    def key(self) -> tuple[str, str, int | None, int]:
        """The replacement key (direction, mode, s, p)."""
        return (self.direction, self.mode, self.s, self.p)

    def rtt(self, stat: str) -> float | None:
        """The round time of a statistic (``min`` or ``median``) in us, None if absent."""
        if stat == "min":
            return self.rtt_min_us
        if stat == "median":
            return self.rtt_median_us
        raise ValueError(f"stat must be 'min' or 'median', got {stat!r}")

    def per_peer(self, stat: str) -> float | None:
        """RTT(p)/p of a statistic in us: the quantity the LoP RTT function describes."""
        v = self.rtt(stat)
        return None if v is None else v / self.p

    def per_peer_sigma(self, stat: str) -> float | None:
        """Standard uncertainty of :meth:`per_peer` from the CI of the median (median
        only; None where unknown)."""
        if stat != "median" or self.ci95_median_us is None:
            return None
        lo, hi = self.ci95_median_us
        return max(hi - lo, 0.0) / (2.0 * _Z95) / self.p

    def overhead(self, side: str, stat: str) -> float | None:
        """o_s(p) (``side="send"``) or o_r(p) (``"recv"``) per request in us: the median
        (``stat="median"``) or the minimum over the rounds; None where not measured."""
        if side not in ("send", "recv"):
            raise ValueError(f"side must be 'send' or 'recv', got {side!r}")
        pre = "os" if side == "send" else "or"
        return getattr(self, f"{pre}_min_us" if stat == "min" else f"{pre}_us")  # type: ignore[no-any-return]

    def to_record(self) -> dict[str, Any]:
        """The JSON Lines record of this point."""
        rec: dict[str, Any] = {
            "type": "onen",
            "direction": self.direction,
            "mode": self.mode,
            "p": self.p,
            "s": self.s,
            "rtt_min_us": self.rtt_min_us,
            "rtt_median_us": self.rtt_median_us,
            "count": self.count,
            "ci95_median_us": (
                list(self.ci95_median_us) if self.ci95_median_us is not None else None
            ),
            "os_us": self.os_us,
            "os_min_us": self.os_min_us,
            "or_us": self.or_us,
            "or_min_us": self.or_min_us,
        }
        if self.stable is not None:
            rec["stable"] = self.stable
        return rec


@dataclass
class OnenData:
    """The onen measurements of one or more files.

    ``points`` holds the surviving records (a later record for the same (direction, mode,
    s, p) replaces an earlier one only if its ``count`` is larger), sorted by direction,
    mode, s and p. ``fmt`` is ``"jsonl"`` or ``"csv"``; a CSV file has one statistic only,
    stored as the median (``rtt_us`` is the point estimate). ``notes`` says how the input was
    taken where it matters, e.g. which CSV rows for one p were combined (their median).
    """

    points: list[OnenPoint]
    transport: str
    header: dict[str, Any] = field(default_factory=dict)
    headers: list[dict[str, Any]] = field(default_factory=list)
    footers: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fmt: str = "jsonl"
    notes: list[str] = field(default_factory=list)

    def series_keys(self) -> list[SeriesKey]:
        """The (direction, mode, s) series present, in the order of DIRECTIONS and MODES."""
        keys = {pt.series for pt in self.points}
        return sorted(keys, key=_series_order)

    def series(self, key: SeriesKey) -> list[OnenPoint]:
        """The points of one series, sorted by p."""
        return sorted((pt for pt in self.points if pt.series == key), key=lambda q: q.p)

    def stats(self, key: SeriesKey) -> list[str]:
        """The statistics (``min``, ``median``) that every point of a series has."""
        pts = self.series(key)
        return [st for st in STATS if pts and all(pt.rtt(st) is not None for pt in pts)]


def _series_order(key: SeriesKey) -> tuple[int, int, int]:
    d, m, s = key
    return (
        DIRECTIONS.index(d) if d in DIRECTIONS else len(DIRECTIONS),
        MODES.index(m) if m in MODES else len(MODES),
        -1 if s is None else s,
    )


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------


def _int_value(value: Any, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OnenError(f"{where}: '{key}' must be an integer, got {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise OnenError(f"{where}: '{key}' must be an integer, got {value!r}")
    return int(value)


def _check_enum(value: Any, key: str, allowed: Sequence[str], where: str) -> str:
    if value not in allowed:
        raise OnenError(
            f"{where}: '{key}' must be one of {', '.join(repr(a) for a in allowed)}, "
            f"got {value!r}"
        )
    return str(value)


def _check_p(p: int, where: str) -> int:
    if p < 1:
        raise OnenError(f"{where}: 'p' (the number of peers) must be >= 1, got {p}")
    return p


def _parse_onen(rec: dict[str, Any], path: str, line: int) -> OnenPoint:
    where = f"{path}:{line}"
    missing = [k for k in REQUIRED_ONEN_KEYS if k not in rec]
    if missing:
        raise OnenError(f"{where}: onen record is missing required key(s): {', '.join(missing)}")
    direction = _check_enum(rec["direction"], "direction", DIRECTIONS, where)
    mode = _check_enum(rec["mode"], "mode", MODES, where)
    p = _check_p(_int_value(rec["p"], "p", where), where)
    s_raw = rec.get("s")
    s = None if s_raw is None else _int_value(s_raw, "s", where)
    if s is not None and s < 0:
        raise OnenError(f"{where}: message size 's' must be >= 0, got {s}")
    count = _int_value(rec["count"], "count", where)
    if count < 1:
        raise OnenError(f"{where}: 'count' must be >= 1, got {count}")
    times = {k: time_value(rec.get(k), k, where, OnenError) for k in OPTIONAL_TIME_KEYS}
    if times["rtt_min_us"] is None and times["rtt_median_us"] is None:
        raise OnenError(
            f"{where}: onen record has no round time: 'rtt_min_us' and 'rtt_median_us' are "
            "both missing or null"
        )
    for key in ("rtt_min_us", "rtt_median_us"):
        v = times[key]
        if v is not None and v <= 0.0:
            raise OnenError(f"{where}: '{key}' must be > 0, got {v!r}")
    ci = record_ci95(rec, where, OnenError)
    stable = record_stable(rec, where, OnenError)
    return OnenPoint(
        direction=direction,
        mode=mode,
        p=p,
        s=s,
        count=count,
        ci95_median_us=ci,
        stable=stable,
        file=path,
        line=line,
        **times,
    )


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        return read_text(path)
    except TextInputError as exc:
        raise OnenError(f"{path}: {exc}") from None


def _looks_like_csv(path: Path, text: str) -> bool:
    if plain_suffix(path) == ".csv":
        return True
    for raw in text.splitlines():
        if raw.strip():
            return not raw.lstrip().startswith("{")
    return False


def is_onen_file(path: str | Path) -> bool:
    """True when a file is onen data: a CSV file, or JSON Lines whose first header says
    ``"pattern": "onen"`` or that holds an ``onen`` record. Unreadable files give False."""
    p = Path(path)
    try:
        text = read_text(p)
    except TextInputError:
        return False
    return _onen_text(p, text)


def _onen_text(p: Path, text: str) -> bool:
    """:func:`is_onen_file` on the text of file ``p``."""
    if _looks_like_csv(p, text):
        return True
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError:
            return False
        if not isinstance(rec, dict):
            return False
        if rec.get("type") == "header" and rec.get("pattern") is not None:
            return bool(rec.get("pattern") == "onen")
        if rec.get("type") == "onen":
            return True
    return False


def _csv_delimiter(text: str) -> str:
    """The CSV's field separator, from its first non-blank line: a comma, or where that line
    has none, a semicolon or a tab (spreadsheets with a decimal comma write ';')."""
    for raw in text.splitlines():
        if raw.strip():
            if "," in raw:
                return ","
            for sep in (";", "\t"):
                if sep in raw:
                    return sep
            return ","
    return ","


def is_lop_data(path: str | Path) -> bool:
    """Whether ``railgauge fit --model auto`` fits LoP to a file: onen JSON Lines (a header
    of the onen pattern, or an ``onen`` record first), a ``.csv`` file, or text whose first
    line is a CSV header naming both ``p`` and ``rtt_us`` (any case). A Netgauge table, PRTT
    JSON Lines and anything else are not (they go to the LogGP readers, which say what they
    are not)."""
    p = Path(path)
    try:
        text = read_text(p)
    except TextInputError:
        return False
    return is_lop_text(p, text)


def is_lop_text(p: Path, text: str) -> bool:
    """:func:`is_lop_data` on the text of file ``p``."""
    from railgauge.netgauge import is_netgauge_text

    if is_netgauge_text(text):
        return False
    if plain_suffix(p) == ".csv":
        return True
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if raw.lstrip().startswith("{"):
            return _onen_text(p, text)
        row = next(csv.reader([raw], delimiter=_csv_delimiter(raw)), [])
        head = {c.strip().lower() for c in row}
        return {"p", "rtt_us"} <= head
    return False


def _check_onen_header(rec: dict[str, Any], where: str) -> None:
    pattern = rec.get("pattern")
    if pattern is not None and pattern != "onen":
        raise OnenError(
            f"{where}: header pattern is {pattern!r}, not 'onen' (a PRTT file is fitted "
            "with --model loggp)"
        )


def _read_jsonl(path: Path, text: str, best: dict[Any, OnenPoint], blocks: Blocks) -> None:
    def on_point(rec: dict[str, Any], lineno: int) -> None:
        pt = _parse_onen(rec, str(path), lineno)
        old = best.get(pt.key)
        if old is None or pt.count > old.count:
            best[pt.key] = pt

    read_blocks(path, json_records(path, text, OnenError), blocks, point_types=("onen",),
                on_point=on_point, error=OnenError, check_header=_check_onen_header)


def _read_csv(path: Path, text: str, rows_by_key: dict[Any, list[OnenPoint]]) -> None:
    """The rows of one CSV file, appended per (direction, mode, s, p) to ``rows_by_key``."""
    sep = _csv_delimiter(text)
    reader = csv.reader(io.StringIO(text), delimiter=sep)
    rows = [(i, row) for i, row in enumerate(reader, start=1) if any(c.strip() for c in row)]
    if not rows:
        raise OnenError(f"{path}: empty CSV file (expected a header line 'p,rtt_us')")
    head_line, head = rows[0]
    # Column names as spreadsheets write them too: any case ("P,RTT_US").
    cols = [c.strip().lower() for c in head]
    unknown = [c for c in cols if c not in CSV_COLUMNS]
    if unknown:
        raise OnenError(
            f"{path}:{head_line}: unknown CSV column(s) {', '.join(unknown)}; the header is "
            f"'p,rtt_us' with optional columns {', '.join(CSV_COLUMNS[2:])}"
        )
    for need in ("p", "rtt_us"):
        if need not in cols:
            raise OnenError(f"{path}:{head_line}: CSV header has no '{need}' column "
                            "(expected 'p,rtt_us[,os_us,or_us]')")
    dup = {c for c in cols if cols.count(c) > 1}
    if dup:
        raise OnenError(f"{path}:{head_line}: CSV column(s) repeated: {', '.join(sorted(dup))}")
    if len(rows) == 1:
        raise OnenError(f"{path}: CSV file has a header but no data rows")
    for lineno, row in rows[1:]:
        where = f"{path}:{lineno}"
        if len(row) != len(cols):
            raise OnenError(f"{where}: {len(row)} fields, the header has {len(cols)}")
        cell = {c: v.strip() for c, v in zip(cols, row, strict=True)}

        def num(key: str, *, required: bool, cell: dict[str, str] = cell,
                where: str = where) -> float | None:
            txt = cell.get(key, "")
            if sep != "," and "," in txt and "." not in txt:
                txt = txt.replace(",", ".")  # a decimal comma (fields apart by ';' or tab)
            if txt == "" or txt.lower() in ("nan", "null", "none", "na"):
                if required:
                    raise OnenError(f"{where}: '{key}' is missing")
                return None
            try:
                v = float(txt)
            except ValueError:
                raise OnenError(f"{where}: '{key}' is not a number: {txt!r}") from None
            if not math.isfinite(v):
                raise OnenError(f"{where}: '{key}' must be finite, got {txt!r}")
            return v

        p_val = num("p", required=True)
        assert p_val is not None
        if p_val != int(p_val):
            raise OnenError(f"{where}: 'p' must be an integer, got {cell['p']!r}")
        p = _check_p(int(p_val), where)
        rtt = num("rtt_us", required=True)
        assert rtt is not None
        if rtt <= 0.0:
            raise OnenError(f"{where}: 'rtt_us' must be > 0, got {rtt!r}")
        os_v = num("os_us", required=False)
        or_v = num("or_us", required=False)
        for key, v in (("os_us", os_v), ("or_us", or_v)):
            if v is not None and v < 0.0:
                raise OnenError(f"{where}: '{key}' is negative ({v!r} us)")
        direction = _check_enum(cell.get("direction") or "1:n", "direction", DIRECTIONS, where)
        mode = _check_enum(cell.get("mode") or "single", "mode", MODES, where)
        s_val = num("s", required=False)
        if s_val is not None and (s_val != int(s_val) or s_val < 0):
            raise OnenError(f"{where}: 's' must be an integer >= 0, got {cell['s']!r}")
        s = None if s_val is None else int(s_val)
        pt = OnenPoint(
            direction=direction, mode=mode, p=p, s=s, count=1, rtt_median_us=rtt,
            os_us=os_v, or_us=or_v, file=str(path), line=lineno,
        )
        rows_by_key.setdefault(pt.key, []).append(pt)


def _median_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.median(known)) if known else None


def _combine_csv(rows_by_key: dict[Any, list[OnenPoint]], best: dict[Any, OnenPoint],
                 notes: list[str]) -> None:
    """One point per (direction, mode, s, p) from the CSV rows: a single row as it is;
    several rows (repeated measurements) combined, the median of each column over the rows
    (of ``os_us`` / ``or_us`` over the rows that give one), ``count`` = the number of rows."""
    combined: list[str] = []
    for key, pts in rows_by_key.items():
        if len(pts) == 1:
            best[key] = pts[0]
            continue
        first = pts[0]
        best[key] = OnenPoint(
            direction=first.direction, mode=first.mode, p=first.p, s=first.s, count=len(pts),
            rtt_median_us=_median_of([q.rtt_median_us for q in pts]),
            os_us=_median_of([q.os_us for q in pts]),
            or_us=_median_of([q.or_us for q in pts]),
            file=first.file, line=first.line,
        )
        where = ", ".join(f"{q.file}:{q.line}" for q in pts)
        combined.append(f"p={first.p} ({first.direction}, {first.mode}; {len(pts)} rows: {where})")
    if combined:
        notes.append(
            "CSV rows repeated for one p were combined as repeated measurements: rtt_us, "
            "os_us and or_us are the medians over the rows (os_us, or_us over the rows that "
            "give one), count = the number of rows: " + "; ".join(combined)
        )


def read_onen(paths: str | Path | Sequence[str | Path]) -> OnenData:
    """Reads onen JSON Lines and/or CSV files as one data set.

    CSV rows for one (direction, mode, s, p), in one file or in several, are repeated
    measurements and are combined: the median of ``rtt_us`` (and of ``os_us``, ``or_us``
    over the rows that give them), ``count`` = the number of rows; ``notes`` names them. A
    CSV point replaces a JSON Lines record of the same key.

    Raises
    ------
    OnenError
        Naming file and line: unreadable files, invalid JSON or CSV, records before a
        header, missing keys, unknown directions or modes, p < 1, missing, negative or
        non-finite times, headers of different transports, no onen points at all.
    """
    path_list = [paths] if isinstance(paths, str | Path) else list(paths)
    if not path_list:
        raise OnenError("no onen file given")
    best: dict[Any, OnenPoint] = {}
    blocks = Blocks()
    fmts: set[str] = set()
    csv_rows: dict[Any, list[OnenPoint]] = {}
    notes: list[str] = []
    for raw in path_list:
        path = Path(raw)
        text = _read_text(path)
        if _looks_like_csv(path, text):
            fmts.add("csv")
            _read_csv(path, text, csv_rows)
        else:
            fmts.add("jsonl")
            _read_jsonl(path, text, best, blocks)
    _combine_csv(csv_rows, best, notes)
    if not best:
        names = ", ".join(str(p) for p in path_list)
        raise OnenError(f"{names}: no onen records")
    points = sorted(best.values(), key=lambda q: (*_series_order(q.series), q.p))
    headers = blocks.headers
    return OnenData(
        points=points,
        transport=str(blocks.transport or "unknown"),
        header=headers[0] if headers else {},
        headers=headers,
        footers=blocks.footers,
        paths=[str(p) for p in path_list],
        warnings=blocks.warnings,
        fmt="+".join(sorted(fmts)),
        notes=notes,
    )


# --------------------------------------------------------------------------------------
# Writing and synthetic data
# --------------------------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def write_onen_jsonl(data: OnenData, path: str | Path) -> Path:
    """Writes onen data as one JSON Lines block (header, records, footer)."""
    out = Path(path)
    header = dict(data.header) if data.header else {
        "type": "header", "pattern": "onen", "transport": data.transport,
    }
    header["type"] = "header"
    header.setdefault("pattern", "onen")
    lines = [json.dumps(header)]
    for pt in data.points:
        lines.append(json.dumps({k: _json_safe(v) for k, v in pt.to_record().items()}))
    footer = data.footers[-1] if data.footers else {
        "type": "footer", "wall_s": 0.0, "points": len(data.points), "status": "ok",
    }
    lines.append(json.dumps(footer))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _summ(rng: np.random.Generator, true_us: float, noise: float, reps: int,
          floor: float) -> tuple[float, float, tuple[float, float]]:
    """(min, median, CI of the median) of ``reps`` samples true * (1 + noise N(0,1)),
    each at least ``floor`` times the true value (a round cannot beat its own minimum)."""
    x = true_us * np.maximum(1.0 + noise * rng.standard_normal(reps), floor)
    x.sort()
    med = float(np.median(x))
    if reps < 6:
        return float(x[0]), med, (float(x[0]), float(x[-1]))
    from scipy import stats

    j = max(int(stats.binom.ppf(0.025, reps, 0.5)), 1)
    return float(x[0]), med, (float(x[j - 1]), float(x[reps - j]))


def synth_onen(
    rtt_per_peer: Any,
    p_values: Iterable[int],
    *,
    overhead_send: Any = None,
    overhead_recv: Any = None,
    direction: str = "1:n",
    mode: str = "single",
    s: int = 8,
    noise: float = 0.01,
    reps: int = 100,
    seed: int = 0,
    transport: str = "synthetic",
) -> OnenData:
    """Synthetic onen data from known per-peer curves.

    ``rtt_per_peer(p)`` gives the true RTT(p)/p in us (a callable on numpy arrays, for
    example ``lambda p: railgauge.fit.lop.rtt_function(lam, p)``); the round's true time is
    p times it. ``overhead_send`` / ``overhead_recv`` likewise give o_s(p), o_r(p) per
    request (None: not measured). Every point summarises ``reps`` rounds, each the true time
    times ``1 + noise * N(0, 1)`` (at least 0.5 times the true time), as
    :mod:`railgauge.synth` does for PRTT: ``rtt_median_us`` is their median,
    ``rtt_min_us`` their minimum (so it lies below the true curve), with the order
    statistic CI of the median. Reproducible for a given ``seed``.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if reps < 1 or noise < 0.0:
        raise ValueError("reps must be >= 1 and noise >= 0")
    ps = sorted({int(p) for p in p_values})
    if not ps or ps[0] < 1:
        raise ValueError("p_values must be integers >= 1")
    rng = np.random.default_rng(seed)
    points: list[OnenPoint] = []
    for i, p in enumerate(ps):
        per = float(np.asarray(rtt_per_peer(np.array([float(p)])), dtype=np.float64)[0])
        if not (math.isfinite(per) and per > 0.0):
            raise ValueError(f"rtt_per_peer({p}) = {per!r} is not a positive time")
        mn, med, ci = _summ(rng, per * p, noise, reps, 0.5)
        extra: dict[str, float | None] = {}
        for name, fn in (("os", overhead_send), ("or", overhead_recv)):
            if fn is None:
                extra[f"{name}_us"] = extra[f"{name}_min_us"] = None
                continue
            o = float(np.asarray(fn(np.array([float(p)])), dtype=np.float64)[0])
            if not (math.isfinite(o) and o >= 0.0):
                raise ValueError(f"overhead at p={p} = {o!r} is not a time")
            omin, omed, _ = _summ(rng, o, noise, reps, 0.5)
            extra[f"{name}_us"], extra[f"{name}_min_us"] = omed, omin
        points.append(OnenPoint(
            direction=direction, mode=mode, p=p, s=s, count=reps, rtt_min_us=mn,
            rtt_median_us=med, ci95_median_us=ci, stable=True, file="<synthetic>",
            line=i + 2, **extra,
        ))
    header: dict[str, Any] = {
        "type": "header",
        "tool": "railgauge-synth",
        "version": __version__,
        "pattern": "onen",
        "transport": transport,
        "host": "synthetic",
        "ranks": ps[-1] + 1,
        "timer": {"source": "synthetic", "resolution_ns": 1.0, "overhead_ns": 0.0},
        "params": {"s": s, "reps": reps, "noise": noise, "seed": seed,
                   "directions": [direction], "modes": [mode]},
    }
    footer = {"type": "footer", "wall_s": 0.0, "points": len(points), "status": "ok"}
    return OnenData(points=points, transport=transport, header=header, headers=[header],
                    footers=[footer], paths=["<synthetic>"])
