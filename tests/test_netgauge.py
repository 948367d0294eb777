"""Netgauge's `loggp` tables in: the reader (python/railgauge/netgauge.py), the format
detection, `railgauge fit` / `railgauge report` on real Netgauge files (tests/data/netgauge,
made with Netgauge 2.4.6 over Open MPI and MPICH, see the README there), and bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from railgauge.fit.loggp import fit_loggp
from railgauge.measurements import MeasurementError, read_measurements
from railgauge.netgauge import (
    UNCERTAINTY_NOTE,
    detect_format,
    is_netgauge_file,
    read_any,
    read_netgauge,
)

DATA = Path(__file__).resolve().parent / "data" / "netgauge"
OMPI = DATA / "loggp-openmpi.out"
MPICH = DATA / "loggp-mpich.out"
LARGE = DATA / "loggp-mpich-from-1MiB.out"
NOISY = DATA / "loggp-openmpi-noisy.out"
REAL = [OMPI, MPICH, LARGE, NOISY]

HEADER = (
    "# size n PRTT(1,0,s) PRTT(n,0,s) PRTT(n,PRTT(1,0,s),s) L o_s o_r g G lsqu(g,G)\n"
    '# to get o: plot "./loggp.out" using 1:(($5-$3)/($2-1)-$3)\n'
    '# to get g,G: plot "./loggp.out" using 1:($4-$3)/($2-1)\n'
)
RG = [sys.executable, "-m", "railgauge.cli.main"]


def rg(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RG, *map(str, args)], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def one_line_error(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def row(s: int, *, n: int = 10, lat: float = 1.0, o: float = 0.5, g: float = 0.4,
        big_g: float = 0.001, scale: float = 1.0, cells: dict[int, str] | None = None) -> str:
    """One Netgauge row of the LogGP model (o_s = o_r = o, d = PRTT(1,0,s)), the PRTT
    columns times ``scale``; ``cells`` replaces columns by index with text (``-nan``)."""
    p1 = 2.0 * (lat + 2.0 * o + (s - 1) * big_g) * scale
    gall = g + (s - 1) * big_g
    pn = p1 + (n - 1) * gall * scale
    pd = p1 + (n - 1) * max(o + p1, gall) * scale
    vals = [str(s), str(n), f"{p1:f}", f"{pn:f}", f"{pd:f}", f"{lat:f}", f"{o:f}", f"{o:f}",
            "-nan", "-nan", "-nan"]
    for i, text in (cells or {}).items():
        vals[i] = text
    return " ".join(vals) + "\n"


def table(sizes: list[int], **kw: Any) -> str:
    return HEADER + "".join(row(s, **kw) for s in sizes)


def write(tmp_path: Path, text: str, name: str = "ng.out") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def negatives(obj: Any, path: str = "") -> list[tuple[str, float]]:
    """Every negative number under a key with a time unit (``*_us``, ``*_us_per_byte``):
    the LogGP parameters, their CIs and the ranges' own overheads. Not the ``pieces`` of the
    predictive model (free lines through the data between the breaks, not parameters)."""
    out: list[tuple[str, float]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k != "pieces":
                out += negatives(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += negatives(v, f"{path}[{i}]")
    elif (isinstance(obj, int | float) and not isinstance(obj, bool) and "_us" in path
          and float(obj) < 0.0):
        out.append((path, float(obj)))
    return out


def by_key(meas: Any) -> dict[tuple[str, int, int], Any]:
    return {(pt.kind, pt.n, pt.s): pt for pt in meas.records}


# ----------------------------------------------------------------------------------------
# The real files
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_files_are_detected_and_read(path: Path) -> None:
    assert is_netgauge_file(path)
    assert detect_format(path) == "netgauge"
    meas = read_any(path)
    assert meas.transport == "netgauge" and meas.paths == [str(path)]
    assert meas.header["tool"] == "netgauge" and meas.header["format"] == "netgauge-loggp"
    assert meas.header["params"]["uncertainty"] == UNCERTAINTY_NOTE
    assert any(UNCERTAINTY_NOTE in w for w in meas.warnings)
    kinds = [pt.kind for pt in meas.records]
    sizes = sorted({pt.s for pt in meas.records})
    # Every size has the three patterns and Netgauge's o_r (a receive-overhead record).
    for kind in ("p1", "pn", "pd", "orecv"):
        assert kinds.count(kind) == len(sizes)
    for pt in meas.records:
        assert pt.ci95_median_us is None and pt.stddev_us is None and pt.sigma_us == 0.0
        assert pt.count == 1 and pt.median_us > 0.0 and pt.file == str(path)
    # PRTT(n,d,s) and the o_r record use Netgauge's delay d = PRTT(1,0,s) of the size.
    keyed = by_key(meas)
    for s in sizes:
        d = keyed[("p1", 1, s)].median_us
        assert keyed[("pd", 10, s)].d_us == d
        assert keyed[("pn", 10, s)].d_us == 0.0


def test_openmpi_file_values_and_repeated_row() -> None:
    meas = read_netgauge(OMPI)
    keyed = by_key(meas)
    sizes = sorted({pt.s for pt in meas.records})
    # 1 B .. 64513 B in steps of 1 KiB; 65 rows, one printed twice.
    assert sizes == list(range(1, 65536, 1024)) and meas.header["params"]["rows"] == 65
    # The row "1025 10 1.953649 5.198963 23.030405 0.926532 0.388213 0.399347 ...".
    assert keyed[("p1", 1, 1025)].median_us == 1.953649
    assert keyed[("pn", 10, 1025)].median_us == 5.198963
    assert keyed[("pd", 10, 1025)].median_us == 23.030405
    assert keyed[("pd", 10, 1025)].d_us == 1.953649
    assert keyed[("orecv", 10, 1025)].median_us == 0.399347
    assert keyed[("p1", 1, 1025)].line == 5
    # Netgauge's protocol-change row (51201 B twice, same times): read once, said so.
    assert keyed[("p1", 1, 51201)].count == 1
    assert meas.header["netgauge"]["repeated_rows_bytes"] == [51201]
    assert any("51201 B): read once" in w and "protocol change" in w for w in meas.warnings)
    assert "extrapolated" not in meas.header and not meas.header["params"]["noise_dominated"]


def test_mpich_file_notes_its_two_noisy_sizes() -> None:
    meas = read_netgauge(MPICH)
    assert meas.header["netgauge"]["repeated_rows_bytes"] == [13313, 18433]
    assert meas.header["netgauge"]["pn_below_p1_bytes"] == [1025, 3073]
    assert any("PRTT(n,0,s) below PRTT(1,0,s) at 2 of 64 sizes" in w for w in meas.warnings)
    assert not meas.header["params"]["noise_dominated"]


def test_large_size_sweep_says_l_and_o_are_extrapolations() -> None:
    meas = read_netgauge(LARGE)
    sizes = sorted({pt.s for pt in meas.records})
    assert sizes[0] == 1048577 and len(sizes) == 64
    ext = meas.header["extrapolated"]
    assert ext["smallest_size_bytes"] == 1048577 and ext["parameters"][0] == "L"
    assert meas.header["params"]["extrapolated"] == ext
    assert any("extrapolations" in w and "1048577 B" in w for w in meas.warnings)


def test_noisy_file_is_said_to_be_noise_dominated() -> None:
    meas = read_netgauge(NOISY)
    assert meas.header["params"]["noise_dominated"]
    assert meas.header["netgauge"]["pn_below_p1_bytes"] == [1, 20481]
    assert any("dominated by noise" in w for w in meas.warnings)


# ----------------------------------------------------------------------------------------
# The fit and the report on real files
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [OMPI, MPICH, LARGE], ids=lambda p: p.name)
def test_fit_on_real_files_gives_ranges_and_no_negative_parameter(path: Path) -> None:
    doc = fit_loggp(read_any(path), seed=0).to_json()
    assert doc["success"] and doc["transport"] == "netgauge"
    assert len(doc["ranges"]) >= 1 and doc["ranges"][0]["from_bytes"] == min(
        pt.s for pt in read_any(path).records)
    for r in doc["ranges"]:
        for key in ("L_us", "o_us", "o_s_us", "o_r_us", "g_us", "G_us_per_byte"):
            assert math.isfinite(r[key]) and r[key] >= 0.0, (key, r[key])
            lo, hi = r["ci95"][key]
            assert lo <= r[key] <= hi
    assert negatives({"ranges": doc["ranges"], "network": doc["network"]}) == []
    assert doc["source"]["params"]["uncertainty"] == UNCERTAINTY_NOTE
    assert any(UNCERTAINTY_NOTE in w for w in doc["source"]["reader_warnings"])


def test_fit_of_the_large_sweep_carries_the_extrapolation_note() -> None:
    doc = fit_loggp(read_any(LARGE), seed=0).to_json()
    assert doc["source"]["params"]["extrapolated"]["smallest_size_bytes"] == 1048577
    assert any("extrapolations" in w for w in doc["source"]["reader_warnings"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_noise_dominated_file_has_no_reliable_range_and_says_why(seed: int) -> None:
    doc = fit_loggp(read_any(NOISY), seed=seed).to_json()
    assert doc["ranges"], doc["message"]
    assert not any(r["reliable"] for r in doc["ranges"])
    for r in doc["ranges"]:
        assert r["warnings"], r  # the reason a range is not reliable
    assert negatives({"ranges": doc["ranges"], "network": doc["network"]}) == []
    assert any("dominated by noise" in w for w in doc["source"]["reader_warnings"])


def test_cli_fit_and_report_on_a_netgauge_file(tmp_path: Path) -> None:
    src = tmp_path / "ng.out"
    src.write_text(OMPI.read_text())
    proc = rg("fit", src, "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    assert "transport netgauge" in proc.stdout
    assert UNCERTAINTY_NOTE in proc.stderr  # the reader's notes
    doc = json.loads((tmp_path / "model-loggp.json").read_text())
    assert doc["ranges"] and doc["source"]["tool"] == "netgauge"
    proc = rg("check", tmp_path / "model-loggp.json", src)
    assert proc.returncode in (0, 3), proc.stderr  # a verdict, not a bad input
    assert "PRTT points" in proc.stdout
    proc = rg("report", src, "--model", tmp_path / "model-loggp.json", "--out", tmp_path / "rep")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "netgauge" in html and "no per-point spread" in html
    for png in ("prtt.png", "gap.png", "residuals.png"):
        assert (tmp_path / "rep" / png).stat().st_size > 10_000


def test_a_byte_order_mark_and_crlf_are_read_through(tmp_path: Path) -> None:
    path = tmp_path / "bom.out"
    path.write_bytes(b"\xef\xbb\xbf" + table([1, 1025, 2049, 3073]).replace("\n", "\r\n")
                     .encode())
    assert is_netgauge_file(path) and detect_format(path) == "netgauge"
    assert sorted({pt.s for pt in read_any(path).records}) == [1, 1025, 2049, 3073]


def test_cli_fit_chooses_the_model_by_the_file(tmp_path: Path) -> None:
    """--model auto (the default): LoP for a CSV of p and rtt_us, LogGP for a Netgauge
    table; each model file is named after its model."""
    csv = write(tmp_path, "p,rtt_us\n" + "".join(f"{p},{10 + 2.5 * p + 0.1 * p * p:.2f}\n"
                                                  for p in range(1, 11)), "lop.csv")
    proc = rg("fit", csv)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "model-lop.json").read_text())["model"] == "lop"
    src = write(tmp_path, table([1, 1025, 2049, 3073, 4097, 5121, 6145, 7169]), "ng.dat")
    proc = rg("fit", src)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "model-loggp.json").read_text())["model"] == "loggp"


def test_cli_format_option_forces_the_reader(tmp_path: Path) -> None:
    src = write(tmp_path, table([1, 1025, 2049, 3073, 4097, 5121, 6145, 7169]), "m.dat")
    out = tmp_path / "model.json"
    proc = rg("fit", src, "--format", "netgauge", "--out", out)
    assert proc.returncode == 0, proc.stderr
    one_line_error(rg("fit", src, "--format", "railgauge"), f"{src}:1: invalid JSON")
    one_line_error(rg("fit", "--model", "lop", src, "--format", "netgauge"), "--format")


# ----------------------------------------------------------------------------------------
# Quirks, on small made-up tables
# ----------------------------------------------------------------------------------------


def test_nan_cells_outside_the_times_keep_the_row(tmp_path: Path) -> None:
    meas = read_netgauge(write(tmp_path, table([1, 1025, 2049])))  # g, G, lsqu all -nan
    assert sorted({pt.s for pt in meas.records}) == [1, 1025, 2049]
    assert meas.header["params"]["rows_dropped"] == 0


def test_rows_with_nan_or_non_positive_times_are_dropped_and_counted(tmp_path: Path) -> None:
    text = (HEADER + row(1) + row(1025, cells={3: "-nan"}) + row(2049)
            + row(3073, cells={2: "0.000000"}) + row(4097, cells={4: "inf"})
            + row(5121, cells={7: "-nan"}))
    meas = read_netgauge(write(tmp_path, text))
    assert sorted({pt.s for pt in meas.records}) == [1, 2049, 5121]
    assert meas.header["params"]["rows_dropped"] == 3 and meas.header["params"]["rows"] == 6
    notes = "\n".join(meas.warnings)
    assert "2 of 6 rows dropped: non-finite (-nan, inf)" in notes and "line(s) 5, 8" in notes
    assert "1 of 6 rows dropped: zero or negative" in notes and "line(s) 7" in notes
    # -nan in o_r only: the row stays, without a receive-overhead record.
    assert not any(pt.kind == "orecv" and pt.s == 5121 for pt in meas.records)
    assert "without a usable o_r" in notes


def test_repeated_rows_are_combined_by_their_median(tmp_path: Path) -> None:
    text = (HEADER + row(1) + row(1025) + row(2049, scale=1.0) + row(2049, scale=1.2)
            + row(2049, scale=0.9) + row(3073) + row(3073, cells={8: "0.5"}))
    meas = read_netgauge(write(tmp_path, text))
    keyed = by_key(meas)
    # 2049 B measured three times: the median of each column, count 3.
    mid = float(row(2049).split()[2])
    assert keyed[("p1", 1, 2049)].median_us == pytest.approx(mid, abs=1e-6)
    assert keyed[("p1", 1, 2049)].count == 3
    assert keyed[("pd", 10, 2049)].d_us == keyed[("p1", 1, 2049)].median_us
    assert keyed[("p1", 1, 2049)].line == 6  # the first of the rows
    # 3073 B printed again with the same times (and another g): one measurement.
    assert keyed[("p1", 1, 3073)].count == 1
    assert meas.header["netgauge"]["repeated_rows_bytes"] == [3073]
    assert meas.header["netgauge"]["combined_sizes_bytes"] == [2049]
    notes = "\n".join(meas.warnings)
    assert "combined as the median of each column over the rows, count = the number" in notes
    assert "read once (Netgauge prints a size's row again" in notes


def test_sizes_not_from_1_and_the_extrapolation_threshold(tmp_path: Path) -> None:
    small = read_netgauge(write(tmp_path, table([1025, 2049, 3073, 4097]), "a.out"))
    assert "extrapolated" in small.header  # 1025 B > 1 KiB: L, o extrapolated
    start = read_netgauge(write(tmp_path, table([513, 1537, 2561]), "b.out"))
    assert "extrapolated" not in start.header
    assert sorted({pt.s for pt in start.records}) == [513, 1537, 2561]


def test_headerless_table_and_a_cut_last_line(tmp_path: Path) -> None:
    body = "".join(row(s) for s in (1, 1025, 2049, 3073))
    path = write(tmp_path, body + "4097 10 12.3", "plain.txt")  # cut short, no newline
    assert is_netgauge_file(path)
    meas = read_any(path)
    assert sorted({pt.s for pt in meas.records}) == [1, 1025, 2049, 3073]
    notes = "\n".join(meas.warnings)
    assert "no '# size n PRTT(1,0,s) ...' header line" in notes
    assert f"{path}:5: the last line is cut short" in notes


def test_detection_tells_the_formats_apart(tmp_path: Path) -> None:
    from railgauge.synth import PAPER_TABLE, synth_prtt, write_jsonl

    jsonl = write_jsonl(synth_prtt(PAPER_TABLE["TCP"], [1, 64, 1024]), tmp_path / "m.jsonl")
    assert not is_netgauge_file(jsonl) and detect_format(jsonl) == "railgauge"
    own = read_any(jsonl)
    assert own.records == read_measurements(jsonl).records
    csv = write(tmp_path, "p,rtt_us\n1,10\n", "x.csv")
    assert not is_netgauge_file(csv)
    assert not is_netgauge_file(tmp_path / "missing.out")
    # Other comment lines before the header are allowed.
    ng = write(tmp_path, "# produced on host x\n" + table([1, 1025]), "c.out")
    assert is_netgauge_file(ng)
    with pytest.raises(ValueError, match="format must be one of"):
        read_any(ng, "csv")


# ----------------------------------------------------------------------------------------
# Bad input: exit 2, one line naming the file and the line
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("hello world\n", ":1: neither railgauge measurements"),
        ("\n\nsize,rtt\n1,2\n", ":3: neither railgauge measurements"),
        (HEADER, ":3: Netgauge loggp table without data rows"),
        (HEADER + row(1, cells={2: "-nan"}) + row(1025, cells={4: "-1.0"}),
         ":4: no usable row in this Netgauge loggp table: all 2 rows"),
        (HEADER + row(1) + row(1025, cells={3: "fast"}),
         ":5: column 'PRTT(n,0,s)' is not a number: 'fast'"),
        (HEADER + row(1) + "1025 10 1.0 2.0\n", ":5: 4 columns, the Netgauge header has 11"),
        (HEADER + row(1) + row(1025, cells={1: "1"}), ":5: 'n' (messages of a train)"),
        (HEADER + row(1) + row(1025, cells={0: "10.5"}), ":5: 'size' must be an integer"),
        ("# size n PRTT(1,0,s) L o g G\n1 10 1.0 0.5 0.1 0.1 0.001\n",
         ":1: Netgauge header without the column(s) PRTT(n,0,s), PRTT(n,PRTT(1,0,s),s)"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_line(tmp_path: Path, text: str,
                                                    needle: str) -> None:
    path = write(tmp_path, text, "bad.out")
    with pytest.raises(MeasurementError) as err:
        read_any(path)
    assert str(err.value).startswith(str(path)) and needle in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    neither = write(tmp_path, "hello world\n", "neither.out")
    one_line_error(rg("fit", neither), f"{neither}:1: neither railgauge")
    lop = write(tmp_path, "p,rtt_us\n1,10\n2,12\n", "lop.csv")
    one_line_error(rg("fit", "--model", "loggp", lop), f"{lop}:1: LoP data")
    one_line_error(rg("report", lop, "--out", tmp_path / "r"), f"{lop}:1: LoP data")
    one_line_error(rg("fit", tmp_path), "is a directory")
    one_line_error(rg("fit", "/dev/null"), "/dev/null is not a regular file")
    empty = write(tmp_path, HEADER + row(1, cells={3: "-nan"}), "unusable.out")
    one_line_error(rg("fit", empty), f"{empty}:4: no usable row")
    one_line_error(rg("report", empty, "--out", tmp_path / "rep"), f"{empty}:4: no usable row")
    jsonl = write(tmp_path, '{"type": "header", "transport": "shm"}\n', "m.jsonl")
    one_line_error(rg("fit", jsonl, "--format", "netgauge"),
                   f"{jsonl}:1: not a Netgauge loggp table row")
