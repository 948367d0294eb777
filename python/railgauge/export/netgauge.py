"""Measurements as Netgauge's ``loggp`` table, for CODES' LogGP model-net and every script
written for Netgauge's output.

The table is the one ``python/railgauge/netgauge.py`` reads (Netgauge 2.4.6's
``ptrn_loggp.c``): a header ``# size n PRTT(1,0,s) PRTT(n,0,s) PRTT(n,PRTT(1,0,s),s) L o_s
o_r g G lsqu(g,G)`` and one row per size. CODES (``src/networks/model-net/loggp.c``,
``loggp_set_params``) reads it with ``fgets`` into a 512-byte buffer, skips a line whose
first character is ``#``, and reads every other line with ``sscanf("%lu %d %lf ... %lf")``,
asserting 11 fields: so every row holds 11 numbers, no line is blank, and a comment starts
in the first column. It keeps the rows in ``table[100]`` without a bound check, so a table
for CODES holds at most 100 rows (:data:`CODES_MAX_ROWS`, ``--max-rows``). For a message of
s bytes it takes L, g and G (microseconds, us per byte) of the first row whose size is
above s (the last row beyond the table, the first below it).

What a row holds:

* ``size``, ``n`` and the three PRTT columns: the measured point estimates (the records'
  interquartile mean where recorded, as the fit uses), round trips in us. Netgauge's third
  column is PRTT(n,d,s) with d = PRTT(1,0,s); railgauge measures it with d = the median of
  PRTT(1,0,s) (the column holds its interquartile mean), or PRTT(2,0,s) where the gap is
  high, so a row is carried to d = PRTT(1,0,s) as written
  along the model's line PRTT(n,d,s) = PRTT(1,0,s) + (n-1)(o_s(s) + d): the send overhead
  (PRTT(n,d,s) - PRTT(1,0,s))/(n-1) - d, all that is read from it, is kept exactly.
* ``o_r``: the measured receive overhead (``orecv``; where a size has none, o_s(s): the
  paper's assumption, said in a comment line).
* ``L``, ``g``, ``G``: the fitted model's (what CODES uses), of the range of the sizes
  CODES gives the row: it takes a message's parameters from the first row whose size is
  above the message's, so a row serves the sizes from the previous row's size up to its
  own, and holds the parameters of the previous row's range (the first row its own; the
  last row also serves every size beyond the table);
  ``o_s``: the measured send overhead of the size as above; ``lsqu(g,G)``: the sum of the
  squared residuals (us^2) of the range's measured G_all(s) about its line g + (s-1) G.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from railgauge.export.common import ExportSource, loggp_fit, read_source_measurements
from railgauge.export.files import ExportError, write_file_atomic
from railgauge.fit.model import LoggpFit, range_index
from railgauge.measurements import MeasurementError, Measurements, triples
from railgauge.netgauge import NETGAUGE_COLUMNS

__all__ = ["CODES_MAX_ROWS", "choose_rows", "export_netgauge", "netgauge_table"]

#: The rows CODES' LogGP model-net holds (``param_table_entry table[100]``).
CODES_MAX_ROWS = 100


def choose_rows(sizes: Sequence[int], keep: set[int], max_rows: int) -> list[int]:
    """At most ``max_rows`` of ``sizes`` (sorted): the first, the last and ``keep`` (the
    sizes on both sides of each protocol change), the others spread evenly over the rest."""
    sizes = sorted(sizes)
    if len(sizes) <= max_rows:
        return sizes
    must = sorted({sizes[0], sizes[-1]} | (keep & set(sizes)))
    if len(must) > max_rows:
        raise ExportError(
            f"--max-rows {max_rows}: the table needs at least {len(must)} rows (the first and "
            "last size and both sides of each protocol change)"
        )
    rest = [s for s in sizes if s not in must]
    free = max_rows - len(must)
    picked = {rest[round(i * (len(rest) - 1) / (free - 1))] for i in range(free)} \
        if free > 1 else ({rest[len(rest) // 2]} if free == 1 else set())
    return sorted(set(must) | picked)


def _fmt(v: float) -> str:
    return f"{v:.9g}"


def netgauge_table(meas: Measurements, fit: LoggpFit, *, max_rows: int = CODES_MAX_ROWS,
                   source: str = "") -> tuple[str, dict[str, Any]]:
    """The table's text and what was chosen (``rows``, ``sizes``, ``shifted``: the sizes
    whose PRTT(n,d,s) was carried to d = PRTT(1,0,s), ``o_r_from_o_s``: the sizes without
    a measured o_r)."""
    if max_rows < 2:
        raise ExportError(f"--max-rows: at least 2 rows, got {max_rows}")
    try:
        tr = triples(meas)
    except (MeasurementError, ValueError) as exc:
        raise ExportError(str(exc)) from None
    if len(tr) == 0:
        raise ExportError(f"{source or 'measurements'}: no size has all three PRTT patterns "
                          "(PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s)) to write")
    sizes = [int(s) for s in tr.sizes]
    keep: set[int] = set()
    for new in fit.ranges[1:]:
        below = [s for s in sizes if s < new.from_bytes]
        keep |= {new.from_bytes} | ({below[-1]} if below else set())
    rows = choose_rows(sizes, keep, max_rows)
    at = {int(s): i for i, s in enumerate(tr.sizes)}
    idx = np.asarray(range_index(fit, np.asarray(rows, dtype=np.float64)))
    # CODES gives a message of s bytes the row of the first size above s, so row i serves
    # the sizes from row i-1's up to its own: its L, g, G are those of row i-1's range.
    serves = np.asarray(range_index(fit, np.asarray(rows[:1] + rows[:-1], dtype=np.float64)))
    shifted: list[int] = []
    o_r_missing: list[int] = []
    o_r_all = np.asarray(tr.o_r, dtype=np.float64)
    vals: list[dict[str, float]] = []
    for s in rows:
        i = at[s]
        p1, pn, pd = float(tr.p1[i]), float(tr.pn[i]), float(tr.pd[i])
        n, d = int(tr.n_pd[i]), float(tr.d_eff[i])
        if abs(d - p1) > 1e-9 * max(p1, 1.0):
            pd = pd + (n - 1) * (p1 - d)
            shifted.append(s)
        o_s = max((pd - p1) / (n - 1) - p1, 0.0)
        o_r = float(o_r_all[i])
        if not math.isfinite(o_r):
            o_r = o_s
            o_r_missing.append(s)
        gall = (float(tr.pn[i]) - p1) / (int(tr.n_pn[i]) - 1)
        vals.append({"size": s, "n": int(tr.n_pn[i]), "p1": p1, "pn": pn, "pd": pd,
                     "o_s": o_s, "o_r": o_r, "gall": gall})
    lsqu: dict[int, float] = {}
    for v, r in zip(vals, idx, strict=True):
        rng = fit.ranges[int(r)]
        res = v["gall"] - (rng.g_us + (v["size"] - 1) * rng.G_us_per_byte)
        lsqu[int(r)] = lsqu.get(int(r), 0.0) + res * res
    lines = ["# " + " ".join(NETGAUGE_COLUMNS)]
    lines.append("# to get o: plot \"./loggp.out\" using 1:(($5-$3)/($2-1)-$3)")
    lines.append("# to get g,G: plot \"./loggp.out\" using 1:($4-$3)/($2-1)")
    lines.append(f"# railgauge export --to netgauge of {source or 'measurements'}: times in us; "
                 "o_s, o_r measured; L, g, G of the fitted model for the sizes from the "
                 "previous row's up to this row's (CODES' lookup)")
    if shifted:
        lines.append(f"# PRTT(n,d,s) at {len(shifted)} size(s) carried from the measured d to "
                     "d = PRTT(1,0,s) as written here, with the send overhead kept")
    if o_r_missing:
        lines.append(f"# no measured o_r at {len(o_r_missing)} size(s): o_r = o_s there")
    if len(rows) < len(sizes):
        lines.append(f"# {len(rows)} of {len(sizes)} sizes (--max-rows {max_rows})")
    for v, r in zip(vals, serves, strict=True):
        rng = fit.ranges[int(r)]
        cells = [str(v["size"]), str(v["n"])] + [_fmt(x) for x in (
            v["p1"], v["pn"], v["pd"], rng.L_us, v["o_s"], v["o_r"], rng.g_us,
            rng.G_us_per_byte, lsqu[int(r)])]
        if not all(math.isfinite(float(c)) for c in cells):
            raise ExportError(f"{source or 'measurements'}: size {v['size']} B has a value "
                              "that is not a finite number")
        lines.append(" ".join(cells))
    info = {"rows": len(rows), "sizes": len(sizes), "shifted_bytes": shifted,
            "o_r_from_o_s_bytes": o_r_missing}
    return "\n".join(lines) + "\n", info


def export_netgauge(src: ExportSource, out: Path, *, max_rows: int) -> dict[str, Any]:
    """Writes the source's measurements as a Netgauge ``loggp`` table to ``out`` (a file;
    written whole or not at all). Returns the ``--json`` object: ``file``, ``rows``,
    ``sizes`` and the sizes changed as the module docstring says."""
    meas = read_source_measurements(src)
    text, info = netgauge_table(meas, loggp_fit(src), max_rows=max_rows,
                                source=str(src.measurements_path))
    out = Path(out)
    if out.is_dir():
        raise ExportError(f"{out}: is a folder; --out for netgauge names a file")
    write_file_atomic(out, text)
    return {"file": str(out), **info}
