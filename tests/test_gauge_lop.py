"""`railgauge gauge` with the LoP part: the onen measurement, the LoP fit, the model
comparison, the report sections and the --json keys.

Most tests run the gauge against a stand-in ``railgauge-bench`` (a Python script in
RG_NATIVE_DIR that writes synthetic PRTT and onen files as rank 0, under the real local
launcher), so that they are quick and do not depend on the native onen pattern; the
``native`` ones run the real tool.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from railgauge.fit.loggp import fit_loggp
from railgauge.fit.lop import fit_lop, overhead_function, rtt_function
from railgauge.gauge_lop import MIN_P, analyse_lop, derived_table
from railgauge.measure import (
    MeasureError,
    MeasurePlan,
    OnenUnavailable,
    _onen_progress,
    measure_onen,
    onen_missing,
)
from railgauge.onen import OnenData, read_onen, synth_onen, write_onen_jsonl
from railgauge.report.html import write_report
from railgauge.synth import PAPER_TABLE, sweep_sizes, synth_prtt

ROOT = Path(__file__).resolve().parent.parent
RG = [sys.executable, "-m", "railgauge.cli.main"]
RDMA_MIN = (16.7937, 0.0058, 4.4642, 4.4751, -0.0642, 12.9209)
RDMA_OS = (0.5557, 0.2103, -0.7728)
IMG = re.compile(r"src='data:image/png;base64,")

FAKE_BENCH = '''#!{python}
"""A stand-in railgauge-bench: rank 0 writes synthetic PRTT / onen records."""
import os
import sys

sys.path.insert(0, {pypath!r})
args = sys.argv[1:]
pattern = args[0] if args else ""
how = os.environ.get("FAKE_ONEN", "ok")
if pattern not in ("prtt", "onen") or (pattern == "onen" and how == "missing"):
    print(f"railgauge-bench: unknown pattern '{{pattern}}' (known: prtt, pingpong)",
          file=sys.stderr)
    sys.exit(2)
if "--help" in args:
    print("usage: railgauge-bench PATTERN [options]")
    sys.exit(0)
opts = {{}}
i = 1
while i < len(args):
    opts[args[i]] = args[i + 1] if i + 1 < len(args) else ""
    i += 2
if os.environ.get("RG_RANK", "0") != "0":
    sys.exit(0)
size = int(os.environ.get("RG_SIZE", "2"))
if pattern == "prtt":
    from railgauge.synth import PAPER_TABLE, synth_prtt, write_jsonl

    sizes = [int(s) for s in opts["--sizes"].split(",")]
    meas = synth_prtt(PAPER_TABLE["OFED"], sizes, seed=len(sizes), reps=60,
                      transport=opts["--transport"])
    write_jsonl(meas, opts["--out"])
    sys.exit(0)
if how == "crash":
    sys.exit(3)
from railgauge.fit.lop import overhead_function, rtt_function
from railgauge.onen import OnenData, synth_onen, write_onen_jsonl

lam = {lam!r}
os_lam = {os_lam!r}
ps = range(1, size)
one = synth_onen(lambda p: rtt_function(lam, p), ps,
                 overhead_send=lambda p: overhead_function(os_lam, p),
                 overhead_recv=lambda p: 0.3 + 0.0 * p, s=int(opts["--sizes"]), seed=1,
                 transport=opts["--transport"])
back = synth_onen(lambda p: 1.1 * rtt_function(lam, p), ps, direction="n:1",
                  overhead_send=lambda p: overhead_function(os_lam, p),
                  s=int(opts["--sizes"]), seed=2, transport=opts["--transport"])
header = dict(one.header, ranks=size, tool="fake-bench")
header["params"] = dict(header["params"], directions=["1:n", "n:1"], modes=["single"])
data = OnenData(points=one.points + back.points, transport=one.transport, header=header,
                footers=one.footers)
write_onen_jsonl(data, opts["--out"])
'''


@pytest.fixture(scope="module")
def fake_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fakebench")
    tool = d / "railgauge-bench"
    tool.write_text(FAKE_BENCH.format(python=sys.executable, pypath=str(ROOT / "python"),
                                      lam=RDMA_MIN, os_lam=RDMA_OS))
    tool.chmod(0o755)
    return d


def gauge(fake_dir: Path, *args: str, how: str = "ok",
          timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RG_NATIVE_DIR": str(fake_dir), "FAKE_ONEN": how,
           "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run([*RG, "gauge", "--quick", "--max-size", "64KiB", "--budget", "5",
                           *args], capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


# ---- gauge end to end against the stand-in tool ----------------------------------------


def test_gauge_with_ranks_fits_lop_and_ranks_the_models(fake_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    proc = gauge(fake_dir, "-n", "9", "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # The LogGP keys are all still there.
    assert doc["model"] == "loggp" and doc["ranges"] and "network" in doc
    assert doc["onen"]["measured"] is True and doc["onen"]["ranks"] == 9
    assert {s["direction"] for s in doc["onen"]["series"]} == {"1:n", "n:1"}
    lop = doc["lop"]
    assert lop["status"] == "fitted", lop
    assert lop["p"] == list(range(1, 9))
    assert len(lop["rtt"]["lambda"]) == 6 and len(lop["overhead_send"]["lambda"]) == 3
    assert lop["latency_formula"] and lop["logp"]["table"][0]["P"] == 1
    assert "LogGP model" in lop["logp"]["source"]
    cmp = doc["compare"]
    assert set(cmp["ranking"]) == {"pram", "bsp", "logp", "loggp", "lop"}
    assert cmp["ranking_by_kind"]["onen"][0] == "lop"
    assert cmp["ranking_by_kind"]["prtt"][0] == "loggp"
    assert cmp["points"]["onen"] == 16
    # The files: the records, the LoP model (the contract of `fit --model lop`), the table.
    for name in ("measurements.jsonl", "onen.jsonl", "model-loggp.json", "model-lop.json",
                 "compare-models.json", "compare-models.png", "lop.png", "report.html"):
        assert (out / name).is_file(), name
    model = json.loads((out / "model-lop.json").read_text())
    assert model["model"] == "lop" and model["success"] is True
    assert model["rtt"]["lambda"] == lop["rtt"]["lambda"]
    again = fit_lop(read_onen(out / "onen.jsonl"), loggp=out / "model-loggp.json").to_json()
    assert again["rtt"]["lambda"] == pytest.approx(model["rtt"]["lambda"], rel=1e-9)
    assert set(again) == set(model)
    comp = json.loads((out / "compare-models.json").read_text())
    assert comp["ranking"] == cmp["ranking"]
    html = (out / "report.html").read_text()
    assert "LoP: latency against the number of peers" in html
    assert "Which model predicts this machine" in html
    assert "L(p) = <code>" in html and "LogP (4o+2L+(P-1)max{g,o})/P" in html
    assert "t_1:n measured" in html
    assert len(IMG.findall(html)) == 5  # prtt, gap, residuals, lop, compare-models
    assert "needs more ranks" not in html


def test_gauge_with_two_ranks_measures_p1_and_fits_no_curve(fake_dir: Path,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "rep"
    proc = gauge(fake_dir, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "LoP not fitted: the LoP curve RTT(p) needs more ranks" in proc.stdout
    assert "ranking:" in proc.stdout
    assert (out / "onen.jsonl").is_file() and (out / "lop.png").is_file()
    assert not (out / "model-lop.json").exists()
    html = (out / "report.html").read_text()
    assert "needs more ranks" in html and "gauge -n 7</code>" in html
    assert "Which model predicts this machine" in html
    comp = json.loads((out / "compare-models.json").read_text())
    by = {m["name"]: m for m in comp["models"]}
    assert by["lop"]["status"] == "not fitted"
    # The p = 1 points are predicted from the PRTT fits of the other models.
    assert comp["ranking_by_kind"]["onen"] and "lop" not in comp["ranking_by_kind"]["onen"]


def test_gauge_without_the_onen_pattern_degrades(fake_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    proc = gauge(fake_dir, "-n", "4", "--json", "--out", str(out), how="missing")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "onen not measured: railgauge-bench: unknown pattern 'onen'" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["onen"]["measured"] is False
    assert "unknown pattern 'onen'" in doc["onen"]["reason"]
    assert doc["lop"]["status"] == "not measured"
    assert doc["compare"]["ranking"][0] == "loggp"
    assert not (out / "onen.jsonl").exists() and not (out / "onen.jsonl.part").exists()
    html = (out / "report.html").read_text()
    assert "onen not measured: railgauge-bench: unknown pattern" in html
    assert len(IMG.findall(html)) == 4  # no lop.png


def test_gauge_no_onen_skips_it(fake_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    proc = gauge(fake_dir, "--no-onen", "--json", "--out", str(out), how="crash")
    assert proc.returncode == 0, proc.stderr
    assert "onen not measured" not in proc.stderr.replace("skipped", "")
    doc = json.loads(proc.stdout)
    assert doc["lop"]["status"] == "skipped" and doc["onen"]["ranks"] is None
    assert not (out / "onen.jsonl").exists()
    assert "skipped (--no-onen)" in (out / "report.html").read_text()


# ---- the measurement step against the stand-in tool ------------------------------------


def _plan() -> MeasurePlan:
    plan = MeasurePlan.quick()
    plan.validate()
    return plan


def test_measure_onen_writes_the_records(fake_dir: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RG_NATIVE_DIR", str(fake_dir))
    monkeypatch.setenv("FAKE_ONEN", "ok")
    seen: list[tuple[int, int, str]] = []
    res = measure_onen(_plan(), tmp_path / "o.jsonl", ranks=4, budget_s=5.0,
                       progress=lambda d, t, w: seen.append((d, t, w)))
    assert res.points == 6 and res.ranks == 4
    assert seen[-1] == (6, 6, "done")
    data = read_onen(res.path)
    assert sorted({pt.p for pt in data.points}) == [1, 2, 3]
    assert _onen_progress(res.path) == (6, 6, "n:1 single p=3")


def test_measure_onen_failures(fake_dir: Path, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RG_NATIVE_DIR", str(fake_dir))
    monkeypatch.setenv("FAKE_ONEN", "missing")
    assert "unknown pattern 'onen'" in (onen_missing(str(fake_dir / "railgauge-bench")) or "")
    with pytest.raises(OnenUnavailable, match="unknown pattern 'onen'"):
        measure_onen(_plan(), tmp_path / "o.jsonl", ranks=2, budget_s=5.0)
    monkeypatch.setenv("FAKE_ONEN", "crash")
    assert onen_missing(str(fake_dir / "railgauge-bench")) is None
    with pytest.raises(MeasureError, match="rank 0 exited with code 3"):
        measure_onen(_plan(), tmp_path / "o.jsonl", ranks=2, budget_s=5.0)
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o.jsonl.part").exists()


def test_onen_progress_of_a_partial_file(tmp_path: Path) -> None:
    f = tmp_path / "o.part"
    assert _onen_progress(f) == (0, 0, "starting")
    f.write_text(json.dumps({"type": "header", "pattern": "onen", "transport": "shm",
                             "ranks": 5, "params": {"modes": ["single", "list"],
                                                    "directions": ["1:n", "n:1"]}}) + "\n"
                 + json.dumps({"type": "onen", "direction": "1:n", "mode": "list", "p": 2})
                 + "\n" + '{"type": "onen", "direction"')
    assert _onen_progress(f) == (1, 16, "1:n list p=2")
    f.write_text(json.dumps({"type": "header", "pattern": "onen", "transport": "shm",
                             "ranks": 5, "planned_points": 12}) + "\n")
    assert _onen_progress(f) == (0, 12, "starting")


# ---- analyse_lop and the report, without any tool -------------------------------------


@pytest.fixture(scope="module")
def prtt_fit() -> tuple[Any, Any]:
    meas = synth_prtt(PAPER_TABLE["OFED"], sweep_sizes(1 << 16, per_octave=1), seed=0,
                      reps=60)
    return meas, fit_loggp(meas, n_boot=0)


def _onen(p_max: int, seed: int = 0) -> OnenData:
    return synth_onen(lambda p: rtt_function(RDMA_MIN, p), range(1, p_max + 1),
                      overhead_send=lambda p: overhead_function(RDMA_OS, p), seed=seed)


def test_analyse_lop_too_few_p_derives_pointwise(prtt_fit: tuple[Any, Any],
                                                 tmp_path: Path) -> None:
    meas, fit = prtt_fit
    path = write_onen_jsonl(_onen(MIN_P - 1), tmp_path / "onen.jsonl")
    part = analyse_lop(meas, fit, tmp_path, onen_path=path, ranks=MIN_P)
    assert part.status == "too few p" and part.fit is None
    assert "needs more ranks" in (part.reason or "") and f"-n {MIN_P + 1}" in (part.reason or "")
    assert not (tmp_path / "model-lop.json").exists()
    der = part.derived
    assert der is not None and der["p"] == list(range(1, MIN_P))
    pt = read_onen(path).points[2]
    os1 = read_onen(path).points[0].os_min_us
    assert pt.rtt_min_us is not None and pt.os_min_us is not None and os1 is not None
    assert der["L_us"][2] == pytest.approx(pt.rtt_min_us / 3 / 2 - (pt.os_min_us + os1))
    assert der["t_1n_us"][2] == pytest.approx(pt.os_min_us + 3 * der["L_us"][2])
    assert part.logp is not None and len(part.logp["table"]) == MIN_P - 1
    assert all(r["lop_us"] is None for r in part.logp["table"])
    summ = part.summary()
    assert summ["lop"]["status"] == "too few p" and summ["lop"]["rtt"] is None
    json.dumps(summ, allow_nan=False)
    text = write_report(tmp_path, meas, fit, lop=part).read_text()
    assert "LoP not fitted" in text and "needs more ranks" in text
    assert len(IMG.findall(text)) == 5


def test_analyse_lop_fit_and_report(prtt_fit: tuple[Any, Any], tmp_path: Path) -> None:
    meas, fit = prtt_fit
    path = write_onen_jsonl(_onen(16), tmp_path / "onen.jsonl")
    part = analyse_lop(meas, fit, tmp_path, onen_path=path)
    assert part.status == "fitted" and part.ranks == 17
    assert part.fit is not None and part.fit.primary.rtt is not None
    assert part.comparison is not None and part.comparison.ranking("onen")[0] == "lop"
    model = json.loads((tmp_path / "model-lop.json").read_text())
    assert model["model"] == "lop" and len(model["rtt"]["ci95"]) == 6
    # LoP's curve lies within a few percent of the measured minima.
    tab = part.logp["table"] if part.logp else []
    assert all(abs(r["lop_us"] / r["measured_us"] - 1) < 0.05 for r in tab)
    text = write_report(tmp_path, meas, fit, lop=part).read_text()
    assert "LoP fitted to 1:n single (min) over p = 1..16" in text
    assert text.count("<tr><td>") >= 16
    assert "onen records (16)" in text


def test_analyse_lop_not_measured_and_bad_file(prtt_fit: tuple[Any, Any],
                                               tmp_path: Path) -> None:
    meas, fit = prtt_fit
    part = analyse_lop(meas, fit, tmp_path, not_measured="the onen benchmark failed: boom")
    assert part.status == "not measured" and part.headline().startswith("onen not measured:")
    assert part.comparison is not None and part.comparison.ranking()[0] == "loggp"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "onen"}\n')
    part = analyse_lop(meas, fit, tmp_path, onen_path=bad)
    assert part.status == "not measured" and "unusable" in (part.reason or "")
    text = write_report(tmp_path, meas, fit, lop=part).read_text()
    assert "onen not measured: the onen file is unusable" in text


def test_report_command_keeps_the_lop_part(prtt_fit: tuple[Any, Any], tmp_path: Path) -> None:
    from railgauge.synth import write_jsonl

    meas, fit = prtt_fit
    mpath = write_jsonl(meas, tmp_path / "measurements.jsonl")
    (tmp_path / "model-loggp.json").write_text(json.dumps(fit.to_json()))
    write_onen_jsonl(_onen(MIN_P), tmp_path / "onen.jsonl")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.run([*RG, "report", str(mpath), "--model",
                           str(tmp_path / "model-loggp.json")], capture_output=True, text=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "report.html").read_text()
    assert "LoP fitted to 1:n single (min) over p = 1..6" in text
    assert len(IMG.findall(text)) == 5
    assert (tmp_path / "model-lop.json").is_file()


def test_derived_table_list_mode() -> None:
    data = synth_onen(lambda p: rtt_function(RDMA_MIN, p), range(1, 4), mode="list",
                      overhead_send=lambda p: overhead_function(RDMA_OS, p), noise=0.0,
                      reps=3)
    der = derived_table(data.points, "median")
    assert der["list"] is True
    p3 = data.points[2]
    os1 = data.points[0].os_us
    assert p3.os_us is not None and os1 is not None and p3.rtt_median_us is not None
    lst = p3.rtt_median_us / 3 / 2 - (3 * p3.os_us + os1)
    assert der["L_us"][2] == pytest.approx(lst)
    assert der["t_1n_us"][2] == pytest.approx(3 * p3.os_us + 3 * lst)


# ---- the real tool --------------------------------------------------------------------


@pytest.mark.native
def test_gauge_onen_native_fits_lop(tmp_path: Path) -> None:
    # 7 ranks: p = 1..6, the fewest the LoP curve is fitted to (2 ranks, p = 1 only: the
    # quick gauge tests of test_cli.py).
    out = tmp_path / "rep"
    proc = subprocess.run([*RG, "gauge", "--quick", "--max-size", "4KiB", "--budget", "4",
                           "--onen-budget", "10", "-n", str(MIN_P + 1), "--json", "--out",
                           str(out)], capture_output=True, text=True, timeout=240,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["onen"]["measured"] is True, doc["onen"]
    assert doc["onen"]["ranks"] == MIN_P + 1
    assert doc["lop"]["p"] == list(range(1, MIN_P + 1))
    assert doc["lop"]["status"] == "fitted", doc["lop"]
    model = json.loads((out / "model-lop.json").read_text())
    assert model["model"] == "lop" and model["transport"] == "shm"
    assert len(model["rtt"]["lambda"]) == 6
    assert doc["compare"]["ranking"] and "lop" in doc["compare"]["ranking"]
    html = (out / "report.html").read_text()
    assert "LoP fitted to 1:n" in html
    assert "Which model predicts this machine" in html
    assert len(IMG.findall(html)) == 5
