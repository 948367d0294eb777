"""The barrier section of `railgauge gauge` with more than two ranks (issue 7): every
barrier of coll/ measured over the gauge's transport beside the simulator's prediction from
the gauge's own LogGP fit, the tuned choice, in the JSON, the terminal table, barrier.json and
the report; none with two ranks or --no-barrier; a missing barrier pattern degrades."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from railgauge.gauge_barrier import ALGORITHMS, BarrierPart, BarrierRow
from railgauge.report.barrier import barrier_text

RG = [sys.executable, "-m", "railgauge.cli.main"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python")}


def _gauge(tmp_path: Path, *args: str) -> tuple[dict, Path]:
    out = tmp_path / "rep"
    proc = subprocess.run([*RG, "gauge", "--quick", "--max-size", "1KiB", "--budget", "3",
                           "--no-onen", "--json", "--out", str(out), *args],
                          capture_output=True, text=True, timeout=300, env=ENV,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), out


@pytest.mark.native
def test_gauge_three_ranks_measures_and_predicts_every_barrier(tmp_path: Path) -> None:
    doc, out = _gauge(tmp_path, "-n", "3")
    bar = doc["barrier"]
    assert bar["status"] == "measured" and bar["ranks"] == 3
    assert [r["algorithm"] for r in bar["rows"]] == list(ALGORITHMS)
    for r in bar["rows"]:
        assert r["measured_us"] > 0 and r["p99_us"] >= r["measured_us"], r
        assert r["predicted_us"] > 0, r
        assert r["predicted_over_measured"] == pytest.approx(
            r["predicted_us"] / r["measured_us"])
    assert bar["tuned"] in ALGORITHMS
    assert json.loads((out / "barrier.json").read_text()) == bar
    html = (out / "report.html").read_text()
    assert "<h2>Barriers</h2>" in html and "simulated / measured" in html


@pytest.mark.native
@pytest.mark.parametrize("args", [("-n", "2"), ("-n", "3", "--no-barrier")])
def test_gauge_without_barriers(tmp_path: Path, args: tuple[str, ...]) -> None:
    doc, out = _gauge(tmp_path, *args)
    assert "barrier" not in doc
    assert not (out / "barrier.json").exists()
    html = (out / "report.html").read_text()
    assert "<h2>Barriers</h2>" not in html
    # The cache line's time between the ranks' CPUs before and after the PRTT measurement
    # (railgauge-bench c2c), appended to the measurements and shown in the report's run block.
    recs = [json.loads(line) for line in (out / "measurements.jsonl").read_text().splitlines()]
    c2c = [r for r in recs if r.get("type") == "c2c"]
    if len(os.sched_getaffinity(0)) >= 2:
        assert len(c2c) == 1 and c2c[0]["before_ns"] > 0 and c2c[0]["after_ns"] > 0, c2c
        assert "cache line between the ranks" in html and " ns before, " in html
    else:
        assert not c2c


@pytest.mark.native
def test_gauge_over_shm_writes_the_flag_model(tmp_path: Path) -> None:
    doc, out = _gauge(tmp_path, "-n", "2")
    flags = json.loads((out / "model-flags.json").read_text())
    assert flags["engine"] == "flags" and flags["model"] == "loggp"
    assert flags["ranges"][0]["L_us"] > 0 and flags["call_us"] > 0
    assert doc["flags"] == flags
    assert (out / "flagprtt.jsonl").exists() and (out / "model-loggp.json").exists()


def test_barrier_text_and_headline() -> None:
    part = BarrierPart("measured", 4, "shm", rows=[BarrierRow("dissem", 2.0, 3.0, 1.0),
                                                   BarrierRow("linear", None, None, 0.5,
                                                              "the run failed")],
                       tuned="dissem", notes=["a note"])
    assert part.best() is part.rows[0]
    assert part.rows[0].ratio == pytest.approx(0.5) and part.rows[1].ratio is None
    text = barrier_text(part)
    assert "fastest measured dissem 2.000 us" in text and "the model's choice dissem" in text
    assert "(the run failed)" in text and "note: a note" in text
    missing = BarrierPart("not measured", 4, "shm", reason="no barrier pattern")
    assert barrier_text(missing).strip() == "barriers: not measured (no barrier pattern)"
