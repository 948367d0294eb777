"""Figures, the self-contained HTML report and the plain-text table."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from railgauge.fit import LoggpFit, fit_loggp, fit_loggp_arrays, load_loggp_model
from railgauge.measurements import Measurements, read_measurements
from railgauge.report import (
    format_bytes,
    format_table,
    plot_gap,
    plot_prtt,
    plot_residuals,
    write_report,
)
from railgauge.synth import PAPER_TABLE, sweep_sizes, synth_prtt, write_jsonl

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ofed() -> tuple[Measurements, LoggpFit]:
    meas = synth_prtt(PAPER_TABLE["OFED"], sweep_sizes(refine_at=(12289,)), noise=0.02, seed=1)
    return meas, fit_loggp(meas, n_boot=50)


def test_report_is_one_self_contained_file(
    tmp_path: Path, ofed: tuple[Measurements, LoggpFit]
) -> None:
    meas, fit = ofed
    path = write_report(tmp_path / "rep", meas, fit, {"wall_s": 12.5, "quick": False})
    assert path == tmp_path / "rep" / "report.html"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", text)
    assert len(images) == 3
    for data in images:
        assert base64.b64decode(data).startswith(PNG_MAGIC)
    # No external resources: no links, scripts or remote sources.
    assert "<link" not in text and "<script" not in text
    assert not re.search(r"(src|href)\s*=\s*['\"](https?:|//|/)", text)
    assert "<style>" in text
    # Header facts, the range rows and the extra facts.
    assert "synthetic" in text and "2007-03-30T00:00:00Z" in text
    assert "range 1" in text and "range 2" in text
    assert "12289 B" in text
    assert "wall_s" in text and "12.5" in text
    # The measurement table has one row per record.
    assert text.count("<td class='l'>PRTT(") == sum(p.type == "prtt" for p in meas.records)
    assert text.count("<td class='l'>o_r(s)") == sum(p.type == "orecv" for p in meas.records) > 0
    # The PNG files are written beside the report as well.
    for name in ("prtt.png", "gap.png", "residuals.png"):
        png = tmp_path / "rep" / name
        assert png.read_bytes().startswith(PNG_MAGIC)
        assert png.stat().st_size > 10_000


def test_report_escapes_and_flags_unreliable(tmp_path: Path) -> None:
    # Without o_r records, L below 0 is a warning (with o_r it is the overlap's bound).
    meas = synth_prtt([(1, -1.0, 4.72, 5.14, 0.00073)], sweep_sizes(), noise=0.01, seed=0,
                      orecv=False)
    meas.header["host"] = "<b>evil</b>"
    fit = fit_loggp(meas, n_boot=20)
    text = write_report(tmp_path, meas, fit, None).read_text()
    assert "<b>evil</b>" not in text and "&lt;b&gt;evil&lt;/b&gt;" in text
    assert "class='bad'" in text
    assert "L constrained to 0" in text


def test_report_names_each_ranges_worst_held_out_point(tmp_path: Path) -> None:
    """The accuracy table gives each range its largest held-out error (pattern, size, sign)."""
    from railgauge.fit.accuracy import attach_accuracy

    meas = synth_prtt(PAPER_TABLE["TCP"], sweep_sizes(), noise=0.01, seed=2)
    fit = attach_accuracy(fit_loggp(meas, n_boot=0), meas)
    top = fit.ranges[0].accuracy["worst"][0]  # type: ignore[index]
    text = write_report(tmp_path, meas, fit, None).read_text()
    assert "its worst held-out point" in text
    assert f"{top['pattern']} at {top['s']} B: {100.0 * top['signed_rel']:+.0f}%" in text


def test_report_shows_the_visit_spread(tmp_path: Path) -> None:
    """A run in passes: the accuracy section gives the visit spread overall and per range."""
    import dataclasses

    from railgauge.fit.accuracy import attach_accuracy

    meas = synth_prtt(PAPER_TABLE["TCP"], sweep_sizes(), noise=0.01, seed=2)
    meas = dataclasses.replace(meas, records=[
        dataclasses.replace(p, pass_iqm_us=(p.median_us, 1.25 * p.median_us))
        if p.type == "prtt" else p for p in meas.records])
    fit = attach_accuracy(fit_loggp(meas, n_boot=0), meas)
    text = write_report(tmp_path, meas, fit, None).read_text()
    assert "(visit to visit): median 25.0%, p90 25.0%" in text
    assert "<th>visit spread p90</th>" in text
    assert text.count("<td>25.0%</td>") >= len(fit.ranges)


def test_report_from_files_and_loaded_model(
    tmp_path: Path, ofed: tuple[Measurements, LoggpFit]
) -> None:
    meas, fit = ofed
    mpath = write_jsonl(meas, tmp_path / "measurements.jsonl")
    model = tmp_path / "model-loggp.json"
    model.write_text(json.dumps(fit.to_json()))
    path = write_report(tmp_path / "r", read_measurements(mpath), load_loggp_model(model))
    assert "data:image/png;base64," in path.read_text()


def test_report_of_a_failed_fit(tmp_path: Path) -> None:
    meas = synth_prtt(PAPER_TABLE["TCP"], [64], noise=0.01)
    fit = fit_loggp(meas, n_boot=20)
    assert not fit.success
    text = write_report(tmp_path, meas, fit).read_text()
    assert "No model" in text


@pytest.mark.parametrize("plot", [plot_prtt, plot_gap, plot_residuals])
def test_plots_write_non_empty_pngs(
    tmp_path: Path, ofed: tuple[Measurements, LoggpFit], plot: Any
) -> None:
    meas, fit = ofed
    out = tmp_path / "fig.png"
    assert plot(meas, fit, out) == out
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    buf = io.BytesIO()
    assert plot(meas, fit, buf) is None
    assert buf.getvalue().startswith(PNG_MAGIC)


def test_format_table(ofed: tuple[Measurements, LoggpFit]) -> None:
    _, fit = ofed
    text = format_table(fit)
    lines = text.splitlines()
    assert "transport synthetic" in lines[0] and "n = 16" in lines[0]
    header = next(ln for ln in lines if ln.startswith("range"))
    for col in ("L (us)", "o_s (us)", "o_r (us)", "g (us)", "G (us/B)", "reliable"):
        assert col in header
    assert "o_r measured" in lines[0]
    assert any(ln.startswith("1 B .. 12 KiB") for ln in lines)
    assert any(ln.startswith("12289 B ..") for ln in lines)
    assert sum("95% CI" in ln for ln in lines) == 2
    assert "[" in text
    # L and o are one value per network, as in the paper's table.
    assert "network-wide, fitted over the smallest sizes (1 B .. 12 KiB" in text
    rows = [ln.split() for ln in lines if ln.startswith(("1 B ..", "12289 B .."))]
    assert rows[0][-6:-3] == rows[1][-6:-3]  # L, o_s, o_r


def test_format_table_warnings_and_failure() -> None:
    meas = synth_prtt([(1, -1.0, 4.72, 5.14, 0.00073)], sweep_sizes(), noise=0.01, seed=0,
                      orecv=False)
    text = format_table(fit_loggp(meas, n_boot=20))
    row = next(ln for ln in text.splitlines() if ln.startswith("1 B .."))
    assert row.split()[-1] == "NO"
    assert "range 1: warning: L constrained to 0" in text
    failed = fit_loggp_arrays([1], [10.0], [40.0], [300.0], 10.0, 16)
    assert "at least 2 sizes" in format_table(failed)


def test_format_table_names_the_host_state() -> None:
    meas = synth_prtt(PAPER_TABLE["TCP"], sweep_sizes(), noise=0.01, seed=0)
    fit = fit_loggp(meas, n_boot=0)
    assert "host state" not in format_table(fit)  # no probes in the records
    fit.source["host_state"] = {"probe_us": 0.206, "probes": 300, "cut_us": None}
    # An older model, without the probe's name and band: its probe was PRTT(1,0,1).
    assert "host state: probe PRTT(1,0,1) 0.206 us; compare runs" in format_table(fit)
    fit.source["host_state"] = {"probe_us": 2.3, "band_us": [2.06, 2.57], "points": 304,
                                "in_band": 280, "probe": "PRTT(16,0,1)"}
    assert ("host state: probe PRTT(16,0,1) 2.3 us (280 of 304 points measured in its band "
            "2.06-2.57 us)") in format_table(fit)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1, "1 B"),
        (1000, "1000 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (12288, "12 KiB"),
        (12289, "12289 B"),
        (1 << 20, "1 MiB"),
        (3 << 29, "1.5 GiB"),
    ],
)
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text


def test_report_shows_send_and_receive_overheads(tmp_path: Path) -> None:
    shm = [(1, 0.05, 0.19, 0.08, 0.0002, 0.0, 0.03, 0.0)]
    meas = synth_prtt(shm, sweep_sizes(1 << 16), noise=0.01, seed=0, overshoot_us=0.1)
    fit = fit_loggp(meas, n_boot=20)
    text = write_report(tmp_path, meas, fit).read_text()
    for needle in ("<th>o_s (us)</th>", "<th>o_r (us)</th>", "<th>O_r (us/B)</th>", "o_r measured"):
        assert needle in text, needle
    assert "(o_s + o_r)/2" in text
    for needle in ("d actual (us)", "delay excess (us)", "IQM (us)", "range's own o_s (us)"):
        assert needle in text, needle
    assert "network-wide, fitted over the first range" in text
    # The overshoot of the delays (corrected by the tool) is shown per PRTT(n,d,s) row.
    assert text.count("<td>0.1</td>") >= sum(p.kind == "pd" for p in meas.records)
    table = format_table(fit)
    row = next(ln for ln in table.splitlines() if ln.startswith("1 B .."))
    assert row.split()[-5:-3] == [f"{fit.ranges[0].o_s_us:.4g}", f"{fit.ranges[0].o_r_us:.4g}"]


def test_paper_mode_report_and_old_models(tmp_path: Path) -> None:
    """Without orecv records (o_r assumed equal to o_s) and with a model file that has only
    the contract keys, the table and the plots still work."""
    meas = synth_prtt(PAPER_TABLE["OFED"], sweep_sizes(refine_at=(12289,)), orecv=False, seed=2)
    fit = fit_loggp(meas, n_boot=20)
    assert "o_r assumed equal to o_s" in format_table(fit).splitlines()[0]
    for plot in (plot_prtt, plot_gap, plot_residuals):
        buf = io.BytesIO()
        plot(meas, fit, buf)
        assert buf.getvalue().startswith(PNG_MAGIC)
    doc = fit.to_json()
    for r in doc["ranges"]:
        for key in ("o_s_us", "o_r_us", "O_s_us_per_byte", "O_r_us_per_byte", "o_r_source"):
            del r[key]
            r["ci95"].pop(key, None)
        del r["range_overhead"]
    del doc["o_r_source"], doc["network"]
    old = tmp_path / "old-model.json"
    old.write_text(json.dumps(doc))
    loaded = load_loggp_model(old)
    assert loaded.network == {}
    table = format_table(loaded)
    row = next(ln for ln in table.splitlines() if ln.startswith("1 B .."))
    o = f"{fit.ranges[0].o_us:.4g}"
    assert row.split()[-5:-3] == [o, o]
    assert write_report(tmp_path / "r", meas, loaded).exists()
    assert "L, o_s, o_r are the same in every range" in table
    # An older model with L per range says so.
    doc["ranges"][1]["L_us"] = 2 * doc["ranges"][0]["L_us"]
    old.write_text(json.dumps(doc))
    assert "L and o differ between the ranges" in format_table(load_loggp_model(old))


def test_report_shows_break_support_and_bends(
    tmp_path: Path, ofed: tuple[Measurements, LoggpFit]
) -> None:
    """The kept change with its support and a bend merged away (a smooth 30% rise of the
    per-byte gap around 4 KiB, which the criterion alone splits) in the table, the HTML and
    the plots."""
    _, fit = ofed
    assert "Protocol changes kept: 12 KiB | 12289 B (100%)." in format_table(fit)
    assert "Bends (" in format_table(fit) and fit.bends == []
    meas = synth_prtt(
        PAPER_TABLE["TCP"], sweep_sizes(per_octave=3), jitter=0.01, bend=(4096, 1.3, 1.0), seed=1
    )
    bent = fit_loggp(meas, n_boot=20, n_support=30)
    assert len(bent.ranges) == 1 and len(bent.bends) == 1
    a, b = bent.bends[0]["between_bytes"]
    pct = f"{100 * bent.bends[0]['support']:.0f}%"
    table = format_table(bent)
    assert f"{format_bytes(a)} | {format_bytes(b)} ({pct})" in table
    assert "Protocol changes kept: none (one range)." in table
    text = write_report(tmp_path, meas, bent).read_text()
    assert "<th>break support</th>" in text
    assert "bend, merged" in text and "optimal partition (before break support)" in text
    # The plots mark the bend (a dotted line labelled with its support) and still draw.
    for plot in (plot_prtt, plot_gap, plot_residuals):
        buf = io.BytesIO()
        plot(meas, bent, buf)
        assert buf.getvalue().startswith(PNG_MAGIC)
    # A model file keeps them.
    model = tmp_path / "model.json"
    model.write_text(json.dumps(bent.to_json()))
    assert load_loggp_model(model).bends == bent.bends
