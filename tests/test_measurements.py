"""Reading PRTT measurement files: the format, replacement rules and clear errors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from railgauge.measurements import (
    MeasurementError,
    PrttPoint,
    read_measurements,
    sizes_triples,
    triples,
)
from railgauge.synth import PAPER_TABLE, synth_prtt, write_jsonl

HEADER: dict[str, Any] = {
    "type": "header",
    "tool": "railgauge-bench",
    "version": "0.1.0",
    "pattern": "prtt",
    "transport": "shm",
    "transport_info": {"segment": "/rg-1"},
    "host": "node1",
    "ranks": 2,
    "timer": {"source": "tsc", "resolution_ns": 0.3, "overhead_ns": 12.0},
    "params": {"n": 16},
    "started_utc": "2025-01-01T00:00:00Z",
}
FOOTER: dict[str, Any] = {"type": "footer", "wall_s": 1.0, "points": 3, "status": "ok"}


def point(n: int, d: float, s: int, median: float, count: int = 100, **kw: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "type": "prtt",
        "n": n,
        "d_us": d,
        "s": s,
        "min_us": median * 0.95,
        "median_us": median,
        "mean_us": median * 1.01,
        "p99_us": median * 1.2,
        "max_us": median * 1.5,
        "stddev_us": median * 0.02,
        "count": count,
        "ci95_median_us": [median * 0.99, median * 1.01],
        "stable": True,
    }
    rec.update(kw)
    return rec


def triple(s: int, base: float = 10.0, count: int = 100) -> list[dict[str, Any]]:
    return [
        point(1, 0.0, s, base, count),
        point(16, 0.0, s, base + 15 * 2.0, count),
        point(16, base, s, base + 15 * (base + 1.0), count),
    ]


def write(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_round_trip_through_synth(tmp_path: Path) -> None:
    meas = synth_prtt(PAPER_TABLE["OFED"], [1, 64, 4096, 65536], noise=0.01, reps=50, seed=3)
    path = write_jsonl(meas, tmp_path / "m.jsonl")
    back = read_measurements(path)
    assert back.transport == "synthetic"
    assert back.header["pattern"] == "prtt"
    assert len(back.records) == 16  # three PRTT patterns and one orecv per size
    for a, b in zip(meas.records, back.records, strict=True):
        assert (a.type, a.n, a.d_us, a.s, a.count) == (b.type, b.n, b.d_us, b.s, b.count)
        assert a.median_us == b.median_us
        assert a.iqm_us == b.iqm_us is not None
        assert a.ci95_median_us == b.ci95_median_us
        assert a.d_actual_us == b.d_actual_us
        assert a.delay_excess_us == b.delay_excess_us
    assert sizes_triples(back) == [1, 64, 4096, 65536]
    assert back.warnings == []


def test_triples_arrays_and_sigma(tmp_path: Path) -> None:
    recs = [HEADER, *triple(1), *triple(1024, base=20.0), point(1, 0.0, 2048, 30.0), FOOTER]
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    tr = triples(meas)
    # 2048 has only PRTT(1,0,s): not a triple.
    assert tr.sizes.tolist() == [1, 1024]
    assert tr.p1.tolist() == [10.0, 20.0]
    assert tr.d.tolist() == [10.0, 20.0]
    assert tr.n_pn.tolist() == [16, 16]
    # sigma = CI half-width / 1.96
    assert tr.p1_sigma[0] == pytest.approx(0.2 / (2 * 1.959963984540054))


def test_sigma_without_ci_uses_stddev() -> None:
    pt = PrttPoint(n=1, d_us=0.0, s=1, median_us=10.0, count=100, stddev_us=1.0)
    assert pt.sigma_us == pytest.approx(math.sqrt(math.pi / 2) * 1.0 / 10.0)
    assert PrttPoint(n=1, d_us=0.0, s=1, median_us=10.0, count=1).sigma_us == 0.0


def test_null_ci_means_unknown(tmp_path: Path) -> None:
    recs = [HEADER, point(1, 0.0, 8, 10.0, ci95_median_us=[None, None], stddev_us=None), FOOTER]
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    assert meas.records[0].ci95_median_us is None
    assert meas.records[0].sigma_us == 0.0


def test_later_blocks_replace_only_with_larger_count(tmp_path: Path) -> None:
    recs = [
        HEADER,
        *triple(64, base=10.0, count=100),
        FOOTER,
        HEADER,
        # Refinement: larger count replaces, smaller count does not.
        point(1, 0.0, 64, 11.0, count=500),
        point(16, 0.0, 64, 99.0, count=50),
        point(16, 0.0, 128, 50.0, count=10),
        FOOTER,
    ]
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    by = {(p.n, p.d_us > 0, p.s): p for p in meas.records}
    assert by[(1, False, 64)].median_us == 11.0
    assert by[(1, False, 64)].count == 500
    assert by[(16, False, 64)].median_us == 10.0 + 30.0
    assert (16, False, 128) in by
    assert len(meas.headers) == 2 and len(meas.footers) == 2


def test_several_files_are_one_stream(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [HEADER, *triple(8, count=10), FOOTER])
    b = write(tmp_path / "b.jsonl", [HEADER, point(1, 0.0, 8, 9.0, count=20), FOOTER])
    meas = read_measurements([a, b])
    assert meas.paths == [str(a), str(b)]
    assert next(p for p in meas.records if p.kind == "p1").median_us == 9.0


def test_unknown_record_types_are_ignored(tmp_path: Path) -> None:
    recs = [
        HEADER,
        {"type": "pingpong", "n": 1, "d_us": 0, "s": 8, "median_us": 3.0, "count": 5},
        {"type": "future-thing", "whatever": [1, 2, 3]},
        *triple(8),
        FOOTER,
    ]
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    assert len(meas.records) == 3


def test_largest_n_is_used_for_triples(tmp_path: Path) -> None:
    recs = [HEADER, *triple(8), point(32, 0.0, 8, 80.0), point(32, 10.0, 8, 400.0), FOOTER]
    tr = triples(read_measurements(write(tmp_path / "m.jsonl", recs)))
    assert tr.n_pn.tolist() == [32] and tr.n_pd.tolist() == [32]
    assert tr.pn.tolist() == [80.0]


def test_missing_footer_is_a_warning(tmp_path: Path) -> None:
    meas = read_measurements(write(tmp_path / "m.jsonl", [HEADER, *triple(8)]))
    assert any("footer" in w for w in meas.warnings)
    bad = dict(FOOTER, status="budget")
    meas = read_measurements(write(tmp_path / "n.jsonl", [HEADER, *triple(8), bad]))
    assert any("budget" in w for w in meas.warnings)


@pytest.mark.parametrize(
    ("records", "line", "needle"),
    [
        ([HEADER, '{"type": "prtt", "n": 1,', FOOTER], 2, "invalid JSON"),
        ([point(1, 0.0, 8, 10.0), HEADER], 1, "missing header"),
        ([{k: v for k, v in HEADER.items() if k != "transport"}], 1, "transport"),
        (
            [HEADER, {k: v for k, v in point(1, 0.0, 8, 1.0).items() if k != "median_us"}],
            2,
            "median_us",
        ),
        ([HEADER, {k: v for k, v in point(1, 0.0, 8, 1.0).items() if k != "count"}], 2, "count"),
        ([HEADER, point(1, 0.0, 8, -1.0)], 2, "negative"),
        ([HEADER, point(1, 0.0, 8, 10.0, min_us=-0.5)], 2, "min_us"),
        ([HEADER, point(1, 0.0, 8, 10.0, median_us=None)], 2, "median_us"),
        ([HEADER, point(1, -2.0, 8, 10.0)], 2, "d_us"),
        ([HEADER, point(1, 0.0, -8, 10.0)], 2, "'s'"),
        ([HEADER, point(0, 0.0, 8, 10.0)], 2, "'n'"),
        ([HEADER, point(1, 0.0, 8, 10.0, ci95_median_us=[11.0, 9.0])], 2, "lo > hi"),
        ([HEADER, point(1, 0.0, 8, 10.0, ci95_median_us=[1.0])], 2, "ci95"),
        ([HEADER, point(1, 0.0, 8.5, 10.0)], 2, "integer"),
        ([HEADER, FOOTER, dict(HEADER, transport="tcp")], 3, "transport 'tcp'"),
        ([HEADER, "[1, 2]"], 2, "object"),
    ],
)
def test_errors_name_file_and_line(
    tmp_path: Path, records: list[Any], line: int, needle: str
) -> None:
    path = write(tmp_path / "bad.jsonl", records)
    with pytest.raises(MeasurementError) as exc:
        read_measurements(path)
    msg = str(exc.value)
    assert f"bad.jsonl:{line}:" in msg, msg
    assert needle in msg, msg
    assert isinstance(exc.value, ValueError)


def test_non_finite_time_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    rec = json.dumps(point(1, 0.0, 8, 10.0)).replace('"median_us": 10.0', '"median_us": NaN')
    path.write_text(json.dumps(HEADER) + "\n" + rec + "\n")
    with pytest.raises(MeasurementError, match=r"nan\.jsonl:2: 'median_us' must be a finite"):
        read_measurements(path)
    inf = rec.replace("NaN", "Infinity")
    path.write_text(json.dumps(HEADER) + "\n" + inf + "\n")
    with pytest.raises(MeasurementError, match="finite"):
        read_measurements(path)


def test_transport_mismatch_across_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [HEADER, FOOTER])
    b = write(tmp_path / "b.jsonl", [dict(HEADER, transport="tcp"), FOOTER])
    with pytest.raises(MeasurementError, match=r"b\.jsonl:1: transport 'tcp' differs"):
        read_measurements([a, b])


def test_empty_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(MeasurementError, match=r"empty\.jsonl: no header"):
        read_measurements(empty)
    with pytest.raises(MeasurementError, match="cannot read"):
        read_measurements(tmp_path / "nope.jsonl")
    with pytest.raises(MeasurementError, match="no measurement file"):
        read_measurements([])


def test_records_are_sorted_and_kinds(tmp_path: Path) -> None:
    recs = [HEADER, *triple(1024), *triple(2), point(1, 5.0, 2, 3.0), FOOTER]
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    assert [p.s for p in meas.records] == sorted(p.s for p in meas.records)
    kinds = {p.kind for p in meas.records}
    assert kinds == {"p1", "pn", "pd", "other"}
    assert isinstance(triples(meas).sizes, np.ndarray)


def orecv(s: int, median: float, count: int = 100, d: float = 10.0, **kw: Any) -> dict[str, Any]:
    rec = point(16, d, s, median, count, **kw)
    rec["type"] = "orecv"
    return rec


def test_orecv_and_d_actual(tmp_path: Path) -> None:
    recs = [
        HEADER,
        *triple(8),
        orecv(8, 0.05, d_actual_us=10.08),
        *triple(64, base=20.0),
        FOOTER,
    ]
    recs[3] = dict(recs[3], d_actual_us=10.1)  # the PRTT(16,d,8) record
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    kinds = [(p.s, p.kind) for p in meas.records]
    assert kinds == [(8, "p1"), (8, "pn"), (8, "pd"), (8, "orecv"), (64, "p1"), (64, "pn"),
                     (64, "pd")]  # fmt: skip
    rec = next(p for p in meas.records if p.kind == "orecv")
    assert rec.type == "orecv" and rec.median_us == 0.05 and rec.d_actual_us == 10.08
    pd = next(p for p in meas.records if p.kind == "pd" and p.s == 8)
    assert pd.d_actual_us == 10.1 and pd.delay_us == 10.1
    tr = triples(meas)
    assert tr.sizes.tolist() == [8, 64]
    assert tr.o_r[0] == 0.05 and math.isnan(tr.o_r[1])
    assert tr.o_r_sigma[0] == pytest.approx(0.001 / (2 * 1.959963984540054))
    assert math.isnan(tr.o_r_sigma[1])
    assert tr.o_r_measured.tolist() == [True, False]
    assert tr.d_actual[0] == 10.1 and math.isnan(tr.d_actual[1])
    assert tr.d_eff.tolist() == [10.1, 20.0]
    # Records written back keep their type and d_actual.
    back = rec.to_record()
    assert back["type"] == "orecv" and back["d_actual_us"] == 10.08


def test_orecv_replaced_only_with_larger_count(tmp_path: Path) -> None:
    recs = [
        HEADER,
        *triple(8),
        orecv(8, 0.05, count=100),
        FOOTER,
        HEADER,
        orecv(8, 0.07, count=50, d=11.0),
        orecv(16, 0.06, count=10),
        FOOTER,
        HEADER,
        orecv(8, 0.04, count=500, d=12.0),
        FOOTER,
    ]
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    by_s = {p.s: p for p in meas.records if p.kind == "orecv"}
    assert by_s[8].median_us == 0.04 and by_s[8].count == 500
    assert by_s[16].median_us == 0.06
    # Keyed by size alone: one receive-overhead record per size.
    assert sum(p.kind == "orecv" for p in meas.records) == 2
    assert triples(meas).o_r.tolist() == [0.04]


def test_triples_without_orecv_are_nan() -> None:
    meas = synth_prtt(PAPER_TABLE["OFED"], [1, 64, 4096], orecv=False)
    tr = triples(meas)
    assert np.isnan(tr.o_r).all() and np.isnan(tr.o_r_sigma).all()
    assert np.isnan(tr.d_actual).all()
    assert tr.d_eff.tolist() == tr.d.tolist()
    assert not tr.o_r_measured.any()


@pytest.mark.parametrize(
    ("record", "needle"),
    [
        ({k: v for k, v in orecv(8, 0.05).items() if k != "median_us"}, "orecv record is missing"),
        (orecv(8, -0.05), "negative"),
        (orecv(8, 0.05, count=0), "'count'"),
        (orecv(8, 0.05, ci95_median_us=[0.06, 0.04]), "lo > hi"),
        (point(16, 10.0, 8, 100.0, d_actual_us=-1.0), "'d_actual_us' is negative"),
        (point(16, 10.0, 8, 100.0, d_actual_us="x"), "'d_actual_us' must be a finite"),
        (orecv(8, 0.05, d_actual_us=-1.0), "'d_actual_us' is negative"),
        (point(1, 0.0, 8, 10.0, in_state="yes"), "'in_state' must be true or false"),
    ],
)
def test_orecv_and_d_actual_errors(tmp_path: Path, record: dict[str, Any], needle: str) -> None:
    path = write(tmp_path / "bad.jsonl", [HEADER, record])
    with pytest.raises(MeasurementError) as exc:
        read_measurements(path)
    assert "bad.jsonl:2:" in str(exc.value)
    assert needle in str(exc.value)


def test_orecv_before_header_and_null_d_actual(tmp_path: Path) -> None:
    with pytest.raises(MeasurementError, match="orecv record before any header"):
        read_measurements(write(tmp_path / "a.jsonl", [orecv(8, 0.05), HEADER]))
    recs = [HEADER, point(16, 10.0, 8, 100.0, d_actual_us=None), FOOTER]
    meas = read_measurements(write(tmp_path / "b.jsonl", recs))
    assert meas.records[0].d_actual_us is None
    assert meas.records[0].delay_us == 10.0


def test_interquartile_mean_is_the_point_estimate(tmp_path: Path) -> None:
    """iqm_us (where recorded) is the value of a record; the sigma stays that of the median."""
    recs = [HEADER, *triple(8), *triple(64, base=20.0), orecv(8, 0.05, iqm_us=0.047), FOOTER]
    recs[1] = dict(recs[1], iqm_us=9.5)  # PRTT(1,0,8)
    recs[3] = dict(recs[3], iqm_us=180.0)  # PRTT(16,d,8)
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    p1 = next(p for p in meas.records if p.kind == "p1" and p.s == 8)
    assert p1.iqm_us == 9.5 and p1.median_us == 10.0 and p1.value_us == 9.5
    assert p1.sigma_us == pytest.approx(0.2 / (2 * 1.959963984540054))
    tr = triples(meas)
    assert tr.p1.tolist() == [9.5, 20.0]  # the median where iqm_us is missing
    assert tr.pd[0] == 180.0
    assert np.asarray(tr.o_r)[0] == 0.047
    assert tr.p1_sigma[0] == pytest.approx(0.2 / (2 * 1.959963984540054))
    assert p1.to_record()["iqm_us"] == 9.5
    assert "iqm_us" not in next(p for p in meas.records if p.s == 64).to_record()


def test_delay_excess_is_kept_as_information(tmp_path: Path) -> None:
    """Current files: no d_actual_us; delay_excess_us (the overshoot already subtracted
    from the samples) is read and written back, and the delay is d_us."""
    recs = [HEADER, *triple(8), FOOTER]
    recs[3] = dict(recs[3], delay_excess_us=0.06, d_rule="prtt1")
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    pd = next(p for p in meas.records if p.kind == "pd")
    assert pd.delay_excess_us == 0.06 and pd.d_actual_us is None
    assert pd.delay_us == pd.d_us == 10.0
    assert triples(meas).d_eff.tolist() == [10.0]
    assert pd.to_record()["delay_excess_us"] == 0.06
    assert "d_actual_us" not in pd.to_record()


@pytest.mark.parametrize(
    ("record", "needle"),
    [
        (point(1, 0.0, 8, 10.0, iqm_us=-1.0), "'iqm_us' is negative"),
        (point(1, 0.0, 8, 10.0, iqm_us="x"), "'iqm_us' must be a finite"),
        (point(1, 0.0, 8, 10.0, iqm_us=float("inf")), "'iqm_us' must be a finite"),
        (point(16, 10.0, 8, 100.0, delay_excess_us="x"), "'delay_excess_us' must be a finite"),
        (point(16, 10.0, 8, 100.0, delay_excess_us=True), "'delay_excess_us' must be a finite"),
    ],
)
def test_iqm_and_delay_excess_errors(tmp_path: Path, record: dict[str, Any], needle: str) -> None:
    path = write(tmp_path / "bad.jsonl", [HEADER, record])
    with pytest.raises(MeasurementError) as exc:
        read_measurements(path)
    assert "bad.jsonl:2:" in str(exc.value)
    assert needle in str(exc.value)


def test_null_iqm_falls_back_to_the_median(tmp_path: Path) -> None:
    recs = [HEADER, point(1, 0.0, 8, 10.0, iqm_us=None), FOOTER]
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    assert meas.records[0].iqm_us is None and meas.records[0].value_us == 10.0


def test_pass_means_read_kept_and_judged(tmp_path: Path) -> None:
    """`pass_iqm_us` is read, written back, and a list of anything but positive numbers is
    an error naming the line; host_states counts the points whose passes are more than 2x
    apart (two states of the host), and the note appears from 5% of the points."""
    from railgauge.fit.accuracy import host_state_note, host_states

    recs: list[Any] = [HEADER]
    for k, s in enumerate((1, 8, 64, 512, 4096, 32768)):
        for r in triple(s):
            # One size in six measured partly in a state 3.5x slower.
            slow = 3.5 if k == 2 else 1.1
            recs.append({**r, "pass_iqm_us": [r["median_us"], r["median_us"] * slow]})
    meas = read_measurements(write(tmp_path / "m.jsonl", recs))
    assert meas.records[0].pass_iqm_us == (10.0, 11.0)
    assert meas.records[0].to_record()["pass_iqm_us"] == [10.0, 11.0]
    hs = host_states(meas)
    assert hs is not None and hs["points"] == 18 and hs["split"] == 3
    assert hs["median_split_ratio"] == pytest.approx(3.5)
    note = host_state_note(hs)
    assert note is not None and "3 of 18 points" in note
    assert host_state_note({**hs, "share": 0.01}) is None
    kept = host_state_note(hs, {"probe_us": 2.3, "band_us": [2.06, 2.57], "points": 40,
                                "in_band": 31, "probe": "PRTT(16,0,1)"})
    assert kept is not None and "the state most points were measured in" in kept
    assert "31 of 40: probe PRTT(16,0,1) 2.06-2.57 us" in kept
    assert "fastest passes" in (host_state_note(hs, {"probe_us": 0.2}) or "")
    plain = read_measurements(write(tmp_path / "p.jsonl", [HEADER, *triple(8)]))
    assert host_states(plain) is None
    for bad in ([], [1.0, -2.0], "x", [1.0, float("nan")]):
        rec = {**triple(8)[0], "pass_iqm_us": bad}
        with pytest.raises(MeasurementError, match="pass_iqm_us"):
            read_measurements(write(tmp_path / "b.jsonl", [HEADER, json.dumps(rec)
                                                           .replace("NaN", "null")]))
    # The probes of the host's state: read, written back (0: a pass without a probe).
    rec = {**triple(8)[0], "pass_state_us": [0.2, 0.0]}
    m2 = read_measurements(write(tmp_path / "s.jsonl", [HEADER, rec]))
    assert m2.records[0].pass_state_us == (0.2, 0.0)
    assert m2.records[0].to_record()["pass_state_us"] == [0.2, 0.0]
    for bad in ([1.0, -2.0], "x", [True], [None]):
        rec = {**triple(8)[0], "pass_state_us": bad}
        with pytest.raises(MeasurementError, match="pass_state_us"):
            read_measurements(write(tmp_path / "b.jsonl", [HEADER, rec]))


def test_in_state_is_read_and_written(tmp_path: Path) -> None:
    """railgauge-bench's in_state (a pass of the point made in the run's reference state of
    the host) is kept, and written back; records without it have None."""
    path = write(tmp_path / "s.jsonl", [HEADER, point(1, 0.0, 8, 10.0, in_state=False),
                                        point(16, 0.0, 8, 100.0)])
    recs = read_measurements(path).records
    assert [r.in_state for r in recs] == [False, None]
    assert recs[0].to_record()["in_state"] is False and "in_state" not in recs[1].to_record()
