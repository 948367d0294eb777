"""Reading Netgauge's ``loggp`` pattern output as railgauge measurements.

Netgauge (https://github.com/spcl/netgauge, ``netgauge -o FILE -x loggp -m mpi``) writes one
table row per message size, after the header line::

    # size n PRTT(1,0,s) PRTT(n,0,s) PRTT(n,PRTT(1,0,s),s) L o_s o_r g G lsqu(g,G)
    1025 10 1.953649 5.198963 23.030405 0.926532 0.388213 0.399347 0.182416 0.000174 -nan

What the columns are (``ptrn_loggp.c`` of Netgauge 2.4.6):

* ``size``: the message size s in bytes. The pattern sweeps s = 1, 1025, 2049, ... (steps of
  1024 B, always from 1 B; ``-s`` sets only the largest size).
* ``n``: the messages of a train (10, fixed in the source).
* ``PRTT(1,0,s)``, ``PRTT(n,0,s)``, ``PRTT(n,PRTT(1,0,s),s)``: the median over the ``-c``
  repetitions of the client's time from the start of its first send until the server's one
  reply of s bytes is received: a whole round trip, in microseconds (``HRT_GET_USEC``). The
  third is PRTT(n,d,s) with the delay d = PRTT(1,0,s) of the same size (busy-waited by the
  client between its sends).
* ``o_r``: the receive overhead measured at the server, in microseconds: the server waits
  d before each of the n-1 receives after the first (the message is there by then) and
  reports (elapsed - (n-1) d) / (n-1), the mean time of one receive call; the median over
  the repetitions. The same quantity as railgauge's ``orecv`` records.
* ``L``, ``o_s``, ``g``, ``G``, ``lsqu(g,G)``: Netgauge's own derived values (L = half of
  the first row's PRTT(1,0,s); g and G a straight line fitted to (PRTT(n,0,s) -
  PRTT(1,0,s))/(n-1) since its last detected protocol change; ``-nan``/``inf`` where that
  fit has fewer than three points). They are not read: the railgauge fit derives its own.

Quirks handled here: ``-nan`` and ``inf`` cells; a size's row printed twice (Netgauge does
so, with the same times and a new g, G, when it detects a protocol change); several rows
for one size with different times (runs appended to one file: combined, the median of each
column, ``count`` = the number of rows); sizes not starting at 1 B; a single large-size
sweep (its L and o are extrapolations, said so); a last line cut short by an interrupted
run. Rows with a non-finite or non-positive time in a PRTT column are dropped and counted.

The table has no per-point spread (no CI, no standard deviation), so the records carry
none: the fit's uncertainty floor (``rel_tol`` and the local scatter of the series, see
``docs/fit.md`` section 2), that is the scatter of the rows about the fitted lines, stands
in for it. The header record says so (``params.uncertainty``), and every finding of the
reader is a note in :attr:`~railgauge.measurements.Measurements.warnings` (the fit's
``source.reader_warnings``, the report's list under the facts).

:func:`read_any` tells the formats apart by content (``format="auto"``) or as told.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from railgauge.measurements import (
    MeasurementError,
    Measurements,
    PrttPoint,
    read_measurements,
)
from railgauge.textin import TextInputError, read_text

__all__ = [
    "EXTRAPOLATION_ABOVE_BYTES",
    "FORMATS",
    "NETGAUGE_COLUMNS",
    "TRANSPORT",
    "UNCERTAINTY_NOTE",
    "detect_format",
    "is_netgauge_file",
    "read_any",
    "read_netgauge",
]

#: The columns of Netgauge 2.4.6's ``loggp`` table, in order.
NETGAUGE_COLUMNS: tuple[str, ...] = (
    "size",
    "n",
    "PRTT(1,0,s)",
    "PRTT(n,0,s)",
    "PRTT(n,PRTT(1,0,s),s)",
    "L",
    "o_s",
    "o_r",
    "g",
    "G",
    "lsqu(g,G)",
)
#: The columns a table must have (by header name).
REQUIRED_COLUMNS: tuple[str, ...] = NETGAUGE_COLUMNS[:5]
#: The PRTT columns: a row with a non-finite or non-positive value in one is dropped.
TIME_COLUMNS: tuple[str, ...] = NETGAUGE_COLUMNS[2:5]
#: The values of ``format`` that :func:`read_any` and ``--format`` take.
FORMATS: tuple[str, ...] = ("auto", "railgauge", "netgauge")
#: The transport name of a Netgauge table (the file does not say which module measured it).
TRANSPORT = "netgauge"
#: What the uncertainty of a Netgauge point is (header ``params.uncertainty`` and a note).
UNCERTAINTY_NOTE = (
    "uncertainty from the scatter of the rows about the fitted lines (the Netgauge table "
    "has no per-point spread)"
)
#: A table whose smallest usable size is above this (bytes) has L and o extrapolated.
EXTRAPOLATION_ABOVE_BYTES = 1024
#: Above this robust local scatter of the rows (relative) a table is dominated by noise.
NOISE_SCATTER_LIMIT = 0.3
#: At most this many sizes or lines are named in one note.
_NAMED = 8


@dataclass(frozen=True)
class _Row:
    line: int
    size: int
    n: int
    p1: float
    pn: float
    pd: float
    o_r: float | None
    g: float | None


def _read_text(path: Path) -> str:
    try:
        return read_text(path)
    except TextInputError as exc:
        raise MeasurementError(f"{path}: {exc}") from None


def _header_columns(raw: str) -> list[str] | None:
    """The column names of a Netgauge header line (``# size n PRTT(1,0,s) ...``), else None."""
    text = raw.strip()
    if not text.startswith("#"):
        return None
    cols = text[1:].split()
    if len(cols) >= 3 and cols[0] == "size" and cols[1] == "n" and cols[2] == "PRTT(1,0,s)":
        return cols
    return None


def _number(tok: str) -> float | None:
    """A cell as Netgauge prints it (``%lf``: ``-nan``, ``inf`` included); None if not one."""
    if "_" in tok:  # float() takes "1_000"; printf never writes it
        return None
    try:
        return float(tok)
    except ValueError:
        return None


def _looks_like_row(raw: str) -> bool:
    """A headerless line of Netgauge 2.4.6's 11 columns, integer size and n first."""
    toks = raw.split()
    if len(toks) != len(NETGAUGE_COLUMNS):
        return False
    vals = [_number(t) for t in toks]
    if any(v is None for v in vals):
        return False
    size, n = vals[0], vals[1]
    assert size is not None and n is not None
    return (
        math.isfinite(size) and size >= 0 and size == int(size)
        and math.isfinite(n) and n >= 1 and n == int(n)
    )


def _first_lines(text: str) -> tuple[int, str] | None:
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            return lineno, raw
    return None


def is_netgauge_file(path: str | Path) -> bool:
    """True when a file is a Netgauge ``loggp`` table: its first comment lines hold the
    header ``# size n PRTT(1,0,s) ...``, or (no header) its first line that is not a comment
    has the 11 numeric columns of Netgauge 2.4.6 with integer size and n. Unreadable files
    give False."""
    try:
        text = read_text(path)
    except TextInputError:
        return False
    return is_netgauge_text(text)


def is_netgauge_text(text: str) -> bool:
    """:func:`is_netgauge_file` on a file's text."""
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if raw.lstrip().startswith("#"):
            if _header_columns(raw) is not None:
                return True
            continue
        return _looks_like_row(raw)
    return False


def detect_format(path: str | Path) -> str:
    """``"netgauge"`` or ``"railgauge"`` by the file's content.

    Raises
    ------
    MeasurementError
        Naming the file and its first line when it is neither format (or empty).
    """
    p = Path(path)
    text = _read_text(p)
    if is_netgauge_text(text):
        return "netgauge"
    first = _first_lines(text)
    if first is None:
        raise MeasurementError(
            f"{p}: empty file (neither railgauge measurements nor a Netgauge loggp table)"
        )
    lineno, raw = first
    if raw.lstrip().startswith("{"):
        return "railgauge"
    from railgauge.onen import is_lop_text

    if is_lop_text(p, text):
        raise MeasurementError(
            f"{p}:{lineno}: LoP data (a CSV of p and rtt_us), not PRTT measurements: "
            "`railgauge fit` fits LoP to it, `railgauge compare-models` ranks the models on "
            "it; LogGP needs PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) over sizes"
        )
    shown = raw.strip()
    if len(shown) > 60:
        shown = shown[:57] + "..."
    raise MeasurementError(
        f"{p}:{lineno}: neither railgauge measurements (JSON Lines) nor a Netgauge loggp "
        f"table (header '# size n PRTT(1,0,s) ...'): {shown!r}"
    )


def read_any(path: str | Path, format: str = "auto") -> Measurements:
    """Reads a measurements file of either format.

    Parameters
    ----------
    path
        A railgauge JSON Lines file (``railgauge measure``, ``railgauge-bench prtt``) or a
        Netgauge ``loggp`` table.
    format
        ``"auto"`` (by content, :func:`detect_format`), ``"railgauge"`` or ``"netgauge"``.

    Raises
    ------
    MeasurementError
        Naming the file and the line, for a file that is neither format and for every
        problem :func:`read_measurements` or :func:`read_netgauge` finds.
    ValueError
        For an unknown ``format``.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    fmt = detect_format(path) if format == "auto" else format
    if fmt == "netgauge":
        return read_netgauge(path)
    return read_measurements(path)


def _sizes_txt(sizes: Sequence[int]) -> str:
    shown = ", ".join(str(s) for s in sizes[:_NAMED])
    more = len(sizes) - _NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _lines_txt(lines: Sequence[int]) -> str:
    shown = ", ".join(str(x) for x in lines[:_NAMED])
    more = len(lines) - _NAMED
    return shown + (f" and {more} more" if more > 0 else "")


def _parse_rows(path: Path, text: str) -> tuple[list[_Row], dict[str, Any]]:
    """The table's rows with usable times, and what was found on the way."""
    cols: list[str] | None = None
    header_line = 0
    rows: list[_Row] = []
    dropped: dict[str, list[int]] = {}
    o_r_bad: list[int] = []
    info: dict[str, Any] = {"rows": 0, "header": True, "truncated": None, "last_line": 0}
    lines = text.splitlines()
    ends_cut = bool(text) and not text.endswith(("\n", "\r"))
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        info["last_line"] = lineno
        where = f"{path}:{lineno}"
        if raw.lstrip().startswith("#"):
            found = _header_columns(raw)
            if found is None:
                continue  # Netgauge's two "# to get o: plot ..." lines, other comments
            if cols is not None and found != cols:
                raise MeasurementError(
                    f"{where}: a second Netgauge header with other columns than the one at "
                    f"line {header_line}"
                )
            missing = [c for c in REQUIRED_COLUMNS if c not in found]
            if missing:
                raise MeasurementError(
                    f"{where}: Netgauge header without the column(s) {', '.join(missing)}"
                )
            dup = sorted({c for c in found if found.count(c) > 1})
            if dup:
                raise MeasurementError(f"{where}: Netgauge header repeats {', '.join(dup)}")
            if cols is None:
                cols, header_line = found, lineno
            continue
        toks = raw.split()
        if cols is None:
            if not _looks_like_row(raw):
                raise MeasurementError(
                    f"{where}: not a Netgauge loggp table row (no '# size n PRTT(1,0,s) ...' "
                    f"header before it, and not the {len(NETGAUGE_COLUMNS)} numeric columns "
                    "of Netgauge 2.4.6)"
                )
            cols = list(NETGAUGE_COLUMNS)
            info["header"] = False
        if len(toks) != len(cols):
            if lineno == len(lines) and ends_cut and len(toks) < len(cols):
                info["truncated"] = lineno
                continue
            raise MeasurementError(
                f"{where}: {len(toks)} columns, the Netgauge header has {len(cols)}"
            )
        cell: dict[str, float] = {}
        for name, tok in zip(cols, toks, strict=True):
            v = _number(tok)
            if v is None:
                raise MeasurementError(f"{where}: column '{name}' is not a number: {tok!r}")
            cell[name] = v
        info["rows"] += 1
        size, n = cell["size"], cell["n"]
        if not math.isfinite(size) or size < 0 or size != int(size):
            raise MeasurementError(f"{where}: 'size' must be an integer >= 0, got {size!r}")
        if not math.isfinite(n) or n < 2 or n != int(n):
            raise MeasurementError(
                f"{where}: 'n' (messages of a train) must be an integer >= 2, got {n!r}"
            )
        times = [cell[c] for c in TIME_COLUMNS]
        if not all(math.isfinite(t) for t in times):
            dropped.setdefault("non-finite (-nan, inf)", []).append(lineno)
            continue
        if not all(t > 0.0 for t in times):
            dropped.setdefault("zero or negative", []).append(lineno)
            continue
        o_r = cell.get("o_r")
        if o_r is not None and (not math.isfinite(o_r) or o_r < 0.0):
            o_r_bad.append(lineno)
            o_r = None
        g = cell.get("g")
        rows.append(_Row(
            line=lineno, size=int(size), n=int(n), p1=times[0], pn=times[1], pd=times[2],
            o_r=o_r, g=g if g is not None and math.isfinite(g) else None,
        ))
    info["dropped"] = dropped
    info["o_r_bad"] = o_r_bad
    info["has_o_r"] = cols is not None and "o_r" in cols
    info["columns"] = cols
    return rows, info


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _row_scatter(rows: Sequence[tuple[int, dict[str, float]]]) -> dict[str, float]:
    """The robust relative scatter of each PRTT column about the log-log interpolation of
    its two neighbours (as ``docs/fit.md`` section 2, over the whole table):
    ``exp(1.4826 * median |r_i|) - 1``; empty with fewer than three sizes above 0 B."""
    pts = [(s, v) for s, v in rows if s > 0]
    if len(pts) < 3:
        return {}
    out: dict[str, float] = {}
    for kind, label in (("p1", "PRTT(1,0,s)"), ("pn", "PRTT(n,0,s)"), ("pd", "PRTT(n,d,s)")):
        xs = [math.log(s) for s, _ in pts]
        ys = [math.log(v[kind]) for _, v in pts]
        res = []
        for i in range(1, len(pts) - 1):
            t = (xs[i] - xs[i - 1]) / (xs[i + 1] - xs[i - 1])
            r = (ys[i] - ((1.0 - t) * ys[i - 1] + t * ys[i + 1])) / math.sqrt(
                1.0 + t * t + (1.0 - t) ** 2
            )
            res.append(abs(r))
        out[label] = math.exp(1.4826 * statistics.median(res)) - 1.0
    return out


def _combine_rows(
    p: Path, rows: list[_Row]
) -> tuple[list[PrttPoint], list[int], list[int], dict[int, int]]:
    """The records of the table's rows: per (size, n) the rows with the same times read
    once, the others combined by the median of each column. Returns the records (sorted
    like railgauge's own), the sizes of the reprinted rows, those of them that are
    Netgauge's protocol-change rows (a new g), and the sizes combined from several rows
    with their row counts."""
    # Group by (size, n); identical times are one measurement printed again.
    groups: dict[tuple[int, int], list[_Row]] = {}
    for r in rows:
        groups.setdefault((r.size, r.n), []).append(r)
    reprinted: list[int] = []
    change_rows: list[int] = []
    combined: dict[int, int] = {}
    records: list[PrttPoint] = []
    for (size, n), grp in sorted(groups.items()):
        distinct: list[_Row] = []
        seen: set[tuple[float, float, float, float | None]] = set()
        for r in grp:
            key = (r.p1, r.pn, r.pd, r.o_r)
            if key in seen:
                reprinted.append(size)
                if any(q.g != r.g for q in grp if (q.p1, q.pn, q.pd, q.o_r) == key):
                    change_rows.append(size)
                continue
            seen.add(key)
            distinct.append(r)
        count = len(distinct)
        if count > 1:
            combined[size] = count
        p1 = _median([r.p1 for r in distinct])
        pn = _median([r.pn for r in distinct])
        pd = _median([r.pd for r in distinct])
        o_rs = [r.o_r for r in distinct if r.o_r is not None]
        line = distinct[0].line
        for n_i, d_i, value in ((1, 0.0, p1), (n, 0.0, pn), (n, p1, pd)):
            records.append(PrttPoint(
                n=n_i, d_us=d_i, s=size, median_us=value, count=count, file=str(p), line=line,
            ))
        if o_rs:
            records.append(PrttPoint(
                n=n, d_us=p1, s=size, median_us=_median(o_rs), count=len(o_rs), file=str(p),
                line=line, type="orecv",
            ))
    records.sort(key=lambda q: (q.s, q.type != "prtt", q.n, q.d_us))
    return records, reprinted, change_rows, combined


def _table_notes(p: Path, info: dict[str, Any], reprinted: list[int], change_rows: list[int],
                 combined: dict[int, int]) -> list[str]:
    """What the reader did with the table's quirks, one note each: no header, a cut last
    line, rows dropped, o_r cells unusable or no o_r column, rows reprinted or combined."""
    notes: list[str] = []
    dropped: dict[str, list[int]] = info["dropped"]
    if not info["header"]:
        notes.append(
            f"{p}: no '# size n PRTT(1,0,s) ...' header line: the 11 columns of Netgauge "
            "2.4.6 assumed"
        )
    if info["truncated"] is not None:
        notes.append(
            f"{p}:{info['truncated']}: the last line is cut short (interrupted run?): left out"
        )
    for why, lines in dropped.items():
        notes.append(
            f"{p}: {len(lines)} of {info['rows']} rows dropped: {why} time in a PRTT column "
            f"(line(s) {_lines_txt(lines)})"
        )
    if info["o_r_bad"]:
        notes.append(
            f"{p}: {len(info['o_r_bad'])} row(s) without a usable o_r (non-finite or "
            f"negative; line(s) {_lines_txt(info['o_r_bad'])}): no receive-overhead record "
            "there"
        )
    if not info["has_o_r"]:
        notes.append(f"{p}: no o_r column: o_r taken as o_s (the paper's assumption)")
    if reprinted:
        extra = (
            " (Netgauge prints a size's row again, with a new g and G, where it detects a "
            "protocol change)"
            if change_rows else ""
        )
        notes.append(
            f"{p}: {len(reprinted)} row(s) repeated with the same times (size(s) "
            f"{_sizes_txt(sorted(set(reprinted)))} B): read once{extra}"
        )
    if combined:
        notes.append(
            f"{p}: {len(combined)} size(s) have several rows with different times (repeated "
            f"measurements: {_sizes_txt(sorted(combined))} B): combined as the median of each "
            "column over the rows, count = the number of rows"
        )
    return notes


def _noise_checks(
    p: Path, records: list[PrttPoint], sizes: list[int], ns: list[int]
) -> tuple[list[str], list[int], list[int], dict[str, float], bool]:
    """The table's physics checks: the sizes where PRTT(n,0,s) < PRTT(1,0,s) and where
    PRTT(n,d,s) < (n-1) d (impossible, so noise), the rows' robust scatter about their
    neighbours per column, and whether it marks the table as noise-dominated; with a note
    for each finding."""
    notes: list[str] = []
    by_size: dict[int, dict[str, float]] = {}
    for rec in records:
        if rec.type == "prtt":
            by_size.setdefault(rec.s, {})[rec.kind] = rec.median_us
    impossible = sorted(s for s, v in by_size.items() if v["pn"] < v["p1"])
    if impossible:
        notes.append(
            f"{p}: PRTT(n,0,s) below PRTT(1,0,s) at {len(impossible)} of {len(sizes)} sizes "
            f"({_sizes_txt(impossible)} B): impossible for a train of n messages, so noise "
            "(a preempted or overloaded run) at these sizes"
        )
    too_short = sorted(
        s for s, v in by_size.items() if v["pd"] < (max(ns) - 1) * v["p1"]
    )
    if too_short:
        notes.append(
            f"{p}: PRTT(n,d,s) below (n-1) d at {len(too_short)} of {len(sizes)} sizes "
            f"({_sizes_txt(too_short)} B): impossible with d = PRTT(1,0,s) busy-waited "
            "between the sends, so noise at these sizes"
        )
    scatter = _row_scatter(sorted(by_size.items()))
    noisy = bool(scatter) and max(scatter.values()) > NOISE_SCATTER_LIMIT
    if noisy:
        notes.append(
            f"{p}: the rows scatter about their neighbours by "
            + ", ".join(f"{100.0 * v:.0f}% ({k})" for k, v in scatter.items())
            + f" (robust local scatter; above {100.0 * NOISE_SCATTER_LIMIT:.0f}%): the table "
            "is dominated by noise, and no range fitted to it can be relied on"
        )
    return notes, impossible, too_short, scatter, noisy


def read_netgauge(path: str | Path) -> Measurements:
    """Reads a Netgauge ``loggp`` table into :class:`~railgauge.measurements.Measurements`.

    Per usable size s (and train length n) four records: ``prtt`` PRTT(1,0,s) (n = 1, d =
    0), PRTT(n,0,s) (d = 0), PRTT(n,d,s) with d_us = PRTT(1,0,s) of that size (Netgauge's
    delay), and an ``orecv`` record (d_us likewise) from the ``o_r`` column where it is a
    finite number >= 0. Times are microseconds, round trips for the PRTT columns, as in
    railgauge's own files. ``median_us`` is the table's value (Netgauge's median over its
    repetitions); ``count`` is the number of rows combined for the size (1 normally); no
    CI and no standard deviation (the table has none).

    Rows repeated with the same times (Netgauge's protocol-change rows) are read once; rows
    for one size with different times are combined: the median of each column over the
    rows, ``count`` = the number of rows. Rows with a non-finite or non-positive value in a
    PRTT column are dropped. Each of these, sizes not starting at 1 B (L and o then
    extrapolated), a cut last line and physically impossible values (PRTT(n,0,s) below
    PRTT(1,0,s): noise) are said in ``warnings`` and in the header record.

    Raises
    ------
    MeasurementError
        Naming the file and the line: unreadable file, a line that is not a table row, a
        wrong number of columns, a cell that is not a number, a bad size or n, a header
        without a PRTT column, and a table with no usable row.
    """
    p = Path(path)
    text = _read_text(p)
    rows, info = _parse_rows(p, text)
    notes: list[str] = []
    dropped: dict[str, list[int]] = info["dropped"]
    n_dropped = sum(len(v) for v in dropped.values())
    if not rows:
        if info["rows"] == 0:
            last = info["last_line"] or 1
            raise MeasurementError(f"{p}:{last}: Netgauge loggp table without data rows")
        first = min(min(v) for v in dropped.values())
        why = "; ".join(f"{k} at line(s) {_lines_txt(v)}" for k, v in dropped.items())
        raise MeasurementError(
            f"{p}:{first}: no usable row in this Netgauge loggp table: all {info['rows']} "
            f"rows have a non-finite or non-positive PRTT time ({why})"
        )

    records, reprinted, change_rows, combined = _combine_rows(p, rows)
    sizes = sorted({r.size for r in rows})
    ns = sorted({r.n for r in rows})

    notes.extend(_table_notes(p, info, reprinted, change_rows, combined))
    noise, impossible, too_short, scatter, noisy = _noise_checks(p, records, sizes, ns)
    notes.extend(noise)
    extrapolated: dict[str, Any] | None = None
    s_min = sizes[0]
    if s_min > EXTRAPOLATION_ABOVE_BYTES:
        extrapolated = {
            "smallest_size_bytes": s_min,
            "parameters": ["L", "o", "o_s", "o_r"],
            "note": (
                f"the sweep starts at {s_min} B, far above 1 B: L and o (o_s, o_r) are "
                f"extrapolations from its smallest sizes to s = 1 B, not measured there"
            ),
        }
        notes.append(f"{p}: {extrapolated['note']}")
    notes.append(f"{p}: {UNCERTAINTY_NOTE}")

    last = max(rows, key=lambda r: r.line)
    params: dict[str, Any] = {
        "n": ns[0] if len(ns) == 1 else ns,
        "d": "PRTT(1,0,s) of each size (Netgauge's delay)",
        "sizes": len(sizes),
        "rows": info["rows"],
        "rows_dropped": n_dropped,
        "uncertainty": UNCERTAINTY_NOTE,
        "row_scatter_rel": {k: round(v, 4) for k, v in scatter.items()},
        "noise_dominated": noisy,
    }
    if extrapolated is not None:
        params["extrapolated"] = extrapolated
    header: dict[str, Any] = {
        "type": "header",
        "transport": TRANSPORT,
        "tool": "netgauge",
        "format": "netgauge-loggp",
        "pattern": "loggp",
        "timer": {"source": "Netgauge's HRT timer, times in microseconds"},
        "params": params,
        "uncertainty": UNCERTAINTY_NOTE,
        "netgauge": {
            "columns": info["columns"],
            "repeated_rows_bytes": sorted(set(reprinted)),
            "combined_sizes_bytes": sorted(combined),
            "pn_below_p1_bytes": impossible,
            "pd_below_n_minus_1_d_bytes": too_short,
            "last_row": {"line": last.line, "size": last.size},
        },
        "notes": list(notes),
    }
    if extrapolated is not None:
        header["extrapolated"] = extrapolated
    return Measurements(
        header=header,
        records=records,
        transport=TRANSPORT,
        headers=[header],
        footers=[],
        paths=[str(p)],
        warnings=notes,
    )
