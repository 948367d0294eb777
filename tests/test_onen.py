"""Reading onen measurements: the JSON Lines of `railgauge-bench onen` and the plain CSV."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from railgauge.onen import OnenError, is_onen_file, read_onen, synth_onen

HEADER = {"type": "header", "tool": "railgauge-bench", "version": "0.1.0", "pattern": "onen",
          "transport": "shm", "host": "h", "ranks": 8,
          "timer": {"source": "tsc", "resolution_ns": 10.0}, "params": {"s": 8}}
FOOTER = {"type": "footer", "wall_s": 3.2, "points": 2, "status": "ok"}


def rec(**kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "onen", "direction": "1:n", "mode": "single", "p": 1, "s": 8,
                           "rtt_min_us": 1.0, "rtt_median_us": 1.2, "count": 100,
                           "ci95_median_us": [1.1, 1.3], "os_us": 0.2, "os_min_us": 0.18,
                           "or_us": 0.1, "or_min_us": 0.09}
    out.update(kw)
    return out


def write(tmp_path: Path, records: list[dict[str, Any]], name: str = "onen.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_reads_records_and_ignores_other_types(tmp_path: Path) -> None:
    path = write(tmp_path, [HEADER, rec(p=1), {"type": "future", "x": 1},
                            rec(p=2, rtt_min_us=1.5, rtt_median_us=1.8), FOOTER])
    data = read_onen(path)
    assert data.transport == "shm" and data.fmt == "jsonl"
    assert [pt.p for pt in data.points] == [1, 2]
    pt = data.points[1]
    assert pt.per_peer("min") == pytest.approx(0.75)
    assert pt.per_peer("median") == pytest.approx(0.9)
    assert pt.overhead("send", "median") == 0.2 and pt.overhead("recv", "min") == 0.09
    assert data.series_keys() == [("1:n", "single", 8)]
    assert data.stats(("1:n", "single", 8)) == ["min", "median"]
    assert is_onen_file(path)


def test_later_record_with_more_rounds_replaces(tmp_path: Path) -> None:
    path = write(tmp_path, [HEADER, rec(p=3, count=100, rtt_min_us=5.0),
                            rec(p=3, count=50, rtt_min_us=9.0),
                            rec(p=3, count=200, rtt_min_us=4.0), FOOTER])
    (pt,) = read_onen(path).points
    assert pt.rtt_min_us == 4.0 and pt.count == 200


def test_series_are_kept_apart(tmp_path: Path) -> None:
    path = write(tmp_path, [HEADER, rec(mode="list"), rec(direction="n:1"), rec(), FOOTER])
    keys = read_onen(path).series_keys()
    assert keys == [("1:n", "single", 8), ("1:n", "list", 8), ("n:1", "single", 8)]


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        (rec(p=0), "'p' (the number of peers) must be >= 1"),
        (rec(p=2.5), "'p' must be an integer"),
        (rec(rtt_min_us=-1.0), "'rtt_min_us' is negative"),
        (rec(rtt_min_us=None, rtt_median_us=None), "no round time"),
        (rec(os_us="fast"), "'os_us' must be a finite number"),
        (rec(direction="2:n"), "'direction' must be one of"),
        (rec(mode="teleport"), "'mode' must be one of"),
        ({"type": "onen", "p": 1}, "missing required key(s): direction, mode, count"),
        (rec(ci95_median_us=[2.0, 1.0]), "ci95_median_us"),
    ],
)
def test_bad_records_name_file_and_line(tmp_path: Path, bad: dict[str, Any],
                                        needle: str) -> None:
    path = write(tmp_path, [HEADER, rec(p=1), bad, FOOTER])
    with pytest.raises(OnenError) as err:
        read_onen(path)
    assert f"{path}:3:" in str(err.value)
    assert needle in str(err.value)


def test_structural_errors(tmp_path: Path) -> None:
    with pytest.raises(OnenError, match="before any header"):
        read_onen(write(tmp_path, [rec(), FOOTER]))
    with pytest.raises(OnenError, match="not 'onen'"):
        read_onen(write(tmp_path, [{**HEADER, "pattern": "prtt"}, rec(), FOOTER]))
    with pytest.raises(OnenError, match="no onen records"):
        read_onen(write(tmp_path, [HEADER, FOOTER]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(HEADER) + "\n{not json\n")
    with pytest.raises(OnenError, match=rf"{bad}:2: invalid JSON"):
        read_onen(bad)
    with pytest.raises(OnenError, match="cannot read"):
        read_onen(tmp_path / "missing.jsonl")


def test_unterminated_block_is_a_warning(tmp_path: Path) -> None:
    data = read_onen(write(tmp_path, [HEADER, rec()]))
    assert any("no footer" in w for w in data.warnings)


def test_csv(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.csv"
    path.write_text("p,rtt_us,os_us,or_us\n1,10.0,0.5,0.3\n2,12.0,0.4,\n3,13.5,0.35,0.2\n")
    data = read_onen(path)
    assert data.fmt == "csv" and [pt.p for pt in data.points] == [1, 2, 3]
    assert data.points[1].rtt_median_us == 12.0 and data.points[1].rtt_min_us is None
    assert data.points[1].or_us is None and data.points[2].os_us == 0.35
    assert data.stats(("1:n", "single", None)) == ["median"]
    assert is_onen_file(path)
    minimal = tmp_path / "min.csv"
    minimal.write_text("p,rtt_us\n1,10\n2,12\n")
    assert [pt.per_peer("median") for pt in read_onen(minimal).points] == [10.0, 6.0]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("bom.csv", b"\xef\xbb\xbfp,rtt_us\r\n1,10\r\n2,12\r\n"),  # Excel's "CSV UTF-8"
        ("upper.csv", b"P,RTT_US,OS_US\n1,10,0.5\n2,12,0.4\n"),
        ("semicolon.csv", b"p;rtt_us;os_us\n1;10,0;0,5\n2;12,0;0,4\n"),  # decimal comma
        ("tabs.txt", b"p\trtt_us\n1\t10\n2\t12\n"),
    ],
)
def test_csv_as_spreadsheets_write_it(tmp_path: Path, name: str, data: bytes) -> None:
    """A byte-order mark, capitals in the header, ';' or a tab between the fields (and
    with ';' a decimal comma) read as the plain CSV; the fit's auto model takes them as LoP
    data."""
    from railgauge.onen import is_lop_data

    path = tmp_path / name
    path.write_bytes(data)
    pts = read_onen(path).points
    assert [(pt.p, pt.rtt_median_us) for pt in pts] == [(1, 10.0), (2, 12.0)]
    if b"os_us" in data.lower():
        assert [pt.os_us for pt in pts] == [0.5, 0.4]
    assert is_lop_data(path)


def test_lop_data_is_told_from_the_loggp_inputs(tmp_path: Path) -> None:
    from railgauge.onen import is_lop_data

    table = tmp_path / "loggp.csv"  # a Netgauge table, whatever its name
    table.write_text("# size n PRTT(1,0,s) PRTT(n,0,s) PRTT(n,PRTT(1,0,s),s)\n1 10 1 2 3\n")
    other = tmp_path / "other.txt"
    other.write_text("size,rtt\n1,2\n")
    onen = write(tmp_path, [HEADER, rec()])
    prtt = tmp_path / "prtt.jsonl"
    prtt.write_text(json.dumps({**HEADER, "pattern": "prtt"}) + "\n")
    assert is_lop_data(onen)
    assert not any(is_lop_data(p) for p in (table, other, prtt, tmp_path / "missing.csv"))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("p,rtt_us\n1,10\n0,12\n", ":3: 'p' (the number of peers) must be >= 1"),
        ("p,rtt_us\n1,10\n2,\n", ":3: 'rtt_us' is missing"),
        ("p,rtt_us\n1,10\n2,-3\n", ":3: 'rtt_us' must be > 0"),
        ("p,rtt_us,os_us\n1,10,-0.1\n", ":2: 'os_us' is negative"),
        ("p,rtt_us\n1,10\n2,12x\n", ":3: 'rtt_us' is not a number: '12x'"),
        ("p,rtt_us,os_us\n1,10,0.5\ntwo,12,0.4\n", ":3: 'p' is not a number: 'two'"),
        ("p,latency\n1,10\n", "unknown CSV column(s) latency"),
        ("p,os_us\n1,10\n", "no 'rtt_us' column"),
        ("p,rtt_us\n1,10,3\n", ":2: 3 fields"),
        ("p,rtt_us\n1,abc\n", "'rtt_us' is not a number"),
        ("p,rtt_us\n", "no data rows"),
    ],
)
def test_bad_csv_is_a_clear_error(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(OnenError) as err:
        read_onen(path)
    assert needle in str(err.value) and str(path) in str(err.value)


def test_csv_rows_repeated_for_one_p_are_combined(tmp_path: Path) -> None:
    """Repeated rows for one p are repeated measurements: one point, the median of each
    column over the rows (the overheads over the rows that give one), count = the rows."""
    path = tmp_path / "repeated.csv"
    path.write_text("p,rtt_us,os_us,or_us\n1,10,0.5,0.3\n2,12,0.4,\n2,30,0.6,0.2\n"
                    "2,13,,\n3,14,0.5,0.3\n")
    data = read_onen(path)
    assert [pt.p for pt in data.points] == [1, 2, 3]
    two = data.points[1]
    assert (two.rtt_median_us, two.os_us, two.or_us, two.count) == (13.0, 0.5, 0.2, 3)
    assert two.line == 3 and data.points[0].count == 1
    assert len(data.notes) == 1
    note = data.notes[0]
    assert "median" in note and "p=2" in note and f"{path}:3" in note and f"{path}:5" in note
    # Across two CSV files read together too (p=1 twice: 10 and 11 -> median 10.5).
    other = tmp_path / "other.csv"
    other.write_text("p,rtt_us\n1,11\n")
    both = read_onen([path, other])
    assert both.points[0].rtt_median_us == 10.5 and both.points[0].count == 2
    # A series of its own (another direction) is not combined with the 1:n rows.
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("p,rtt_us,direction\n1,10,1:n\n1,20,n:1\n")
    assert [pt.count for pt in read_onen(mixed).points] == [1, 1]
    assert read_onen(mixed).notes == []


def test_lop_fit_says_how_rows_were_combined(tmp_path: Path) -> None:
    from railgauge.fit.lop import fit_lop

    path = tmp_path / "repeated.csv"
    rows = "".join(f"{p},{10.0 + 2.0 * p:.1f}\n" for p in range(1, 9))
    path.write_text("p,rtt_us\n" + rows + "4,18.4\n4,17.6\n")
    doc = fit_lop(read_onen(path)).to_json()
    assert any("combined" in n and "p=4" in n for n in doc["notes"]), doc["notes"]


def test_prtt_files_are_not_onen(tmp_path: Path) -> None:
    from railgauge.synth import PAPER_TABLE, synth_prtt, write_jsonl

    path = write_jsonl(synth_prtt(PAPER_TABLE["TCP"], [1, 64]), tmp_path / "m.jsonl")
    assert not is_onen_file(path)
    assert not is_onen_file(tmp_path / "missing.jsonl")


def test_synth_onen_is_reproducible_and_validates() -> None:
    a = synth_onen(lambda p: 10.0 / p + 1.0, range(1, 5), seed=4)
    b = synth_onen(lambda p: 10.0 / p + 1.0, range(1, 5), seed=4)
    assert [pt.to_record() for pt in a.points] == [pt.to_record() for pt in b.points]
    assert all(pt.rtt_min_us is not None and pt.rtt_median_us is not None
               and pt.rtt_min_us <= pt.rtt_median_us for pt in a.points)
    with pytest.raises(ValueError, match="p_values"):
        synth_onen(lambda p: p, [0, 1])
