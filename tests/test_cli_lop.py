"""The command-line contract of the LoP part: `fit --model lop`, `predict`, `compare-models`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from railgauge.fit.lop import overhead_function, rtt_function, t_1n
from railgauge.onen import synth_onen, write_onen_jsonl
from railgauge.synth import PAPER_TABLE, sweep_sizes, synth_prtt, write_jsonl

RG = [sys.executable, "-m", "railgauge.cli.main"]
RDMA_MIN = (16.7937, 0.0058, 4.4642, 4.4751, -0.0642, 12.9209)
RDMA_OS = (0.5557, 0.2103, -0.7728)


def rg(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RG, *map(str, args)], capture_output=True, text=True, timeout=120,
                          cwd=cwd, stdin=subprocess.DEVNULL)


def one_line_error(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("lop")
    data = synth_onen(lambda p: rtt_function(RDMA_MIN, p), range(1, 33),
                      overhead_send=lambda p: overhead_function(RDMA_OS, p),
                      overhead_recv=lambda p: 0.3 + 0.0 * p, seed=0)
    onen = write_onen_jsonl(data, d / "onen.jsonl")
    csv = d / "elsewhere.csv"
    csv.write_text("p,rtt_us,os_us,or_us\n" + "".join(
        f"{p},{p * float(rtt_function(RDMA_MIN, p)):.5f},"
        f"{float(overhead_function(RDMA_OS, p)):.5f},0.3\n" for p in range(1, 17)))
    prtt = write_jsonl(synth_prtt(PAPER_TABLE["OFED"], sweep_sizes(1 << 16), seed=0),
                       d / "measurements.jsonl")
    few = d / "few.csv"
    few.write_text("p,rtt_us\n1,10\n2,11\n3,12\n")
    # The model files the error cases read (the tests above also write them by the CLI).
    from railgauge.fit.loggp import fit_loggp
    from railgauge.fit.lop import fit_lop
    from railgauge.measurements import read_measurements
    from railgauge.onen import read_onen

    (d / "model-csv.json").write_text(json.dumps(fit_lop(read_onen(csv)).to_json()))
    (d / "model-loggp.json").write_text(
        json.dumps(fit_loggp(read_measurements(prtt), n_boot=0).to_json()))
    return {"dir": d, "onen": onen, "csv": csv, "prtt": prtt, "few": few}


def test_fit_lop_writes_the_contract(files: dict[str, Path]) -> None:
    out = files["dir"] / "model-lop.json"
    png = files["dir"] / "lop.png"
    proc = rg("fit", "--model", "lop", files["onen"], "--out", out, "--plot", png)
    assert proc.returncode == 0, proc.stderr
    assert "RTT(p)/p" in proc.stdout and str(out) in proc.stdout
    assert "L(p) = " in proc.stdout and "LogP" in proc.stdout
    assert png.stat().st_size > 10_000
    doc = json.loads(out.read_text())
    assert doc["model"] == "lop"
    assert len(doc["rtt"]["lambda"]) == 6 and len(doc["rtt"]["ci95"]) == 6
    assert len(doc["overhead_send"]["lambda"]) == 3
    assert doc["rtt"]["fallback"] is False


def test_fit_lop_csv_and_predict(files: dict[str, Path]) -> None:
    out = files["dir"] / "model-csv.json"
    proc = rg("fit", "--model", "lop", files["csv"], "--out", out)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    lam, ov = doc["rtt"]["lambda"], doc["overhead_send"]["lambda"]
    # The CSV holds the paper's function itself (rounded): the fit reproduces it.
    assert float(rtt_function(lam, 17.0)) == pytest.approx(
        float(rtt_function(RDMA_MIN, 17.0)), rel=0.01)

    proc = rg("predict", "--model", out, "rtt", "-p", "17")
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == pytest.approx(float(rtt_function(lam, 17.0)), rel=1e-5)
    proc = rg("predict", "--model", out, "rtt", "-p", "17", "--json")
    assert json.loads(proc.stdout)["rtt_us"] == pytest.approx(float(rtt_function(lam, 17.0)))
    proc = rg("predict", "--model", out, "1:n", "-p", "16", "--json")
    assert json.loads(proc.stdout)["t_1n_us"] == pytest.approx(float(t_1n(lam, ov, 16.0)))
    proc = rg("predict", "--model", out, "L", "-p", "4")
    assert proc.returncode == 0 and float(proc.stdout) == pytest.approx(doc["table"]["L_us"][3],
                                                                         rel=1e-5)
    # Outside the fitted p: a warning, still a number.
    proc = rg("predict", "--model", out, "rtt", "-p", "40")
    assert proc.returncode == 0 and "extrapolated" in proc.stderr and float(proc.stdout) > 0


def test_predict_loggp_model(files: dict[str, Path]) -> None:
    from railgauge.fit.loggp import load_loggp_model, prtt

    out = files["dir"] / "model-loggp.json"
    proc = rg("fit", files["prtt"], "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["model"] == "loggp"  # the default is unchanged
    model = load_loggp_model(out)
    proc = rg("predict", "--model", out, "rtt", "-s", "8", "--json")
    assert json.loads(proc.stdout)["rtt_us"] == pytest.approx(float(prtt(model, 1, 0.0, 8.0)))
    proc = rg("predict", "--model", out, "prtt", "-n", "16", "-s", "1KiB")
    assert float(proc.stdout) == pytest.approx(float(prtt(model, 16, 0.0, 1024.0)), rel=1e-5)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["fit", "--model", "lop", "{few}"], "at least 6 distinct p"),
        (["fit", "--model", "lop", "{prtt}"], "not 'onen'"),
        (["fit", "--model", "lop", "/nonexistent.csv"], "no such file"),
        (["predict", "--model", "{dir}/model-csv.json", "rtt"], "needs -p"),
        (["predict", "--model", "{dir}/model-csv.json", "rtt", "-p", "0"], "-p"),
        (["predict", "--model", "{dir}/model-csv.json", "prtt"], "not a quantity of a lop"),
        (["predict", "--model", "{dir}/model-csv.json", "1:n", "-p", "8", "--list"],
         "no list-mode fit"),
        (["predict", "--model", "{dir}/model-loggp.json", "1:n", "-p", "8"],
         "not a quantity of a loggp"),
        (["predict", "--model", "{dir}/none.json", "rtt", "-p", "3"], "no such file"),
        (["predict", "--model", "{prtt}", "rtt", "-p", "3"], "not a JSON model"),
        (["compare-models", "{onen}", "--models", "pram,oracle"], "oracle"),
        (["compare-models", "/nonexistent.jsonl"], "no such file"),
    ],
)
def test_user_errors_exit_2_with_one_line(files: dict[str, Path], args: list[str],
                                          needle: str) -> None:
    one_line_error(rg(*[a.format(**files) for a in args]), needle)


def test_bad_csv_names_the_line(files: dict[str, Path]) -> None:
    bad = files["dir"] / "bad.csv"
    bad.write_text("p,rtt_us\n1,10\n2,-4\n")
    one_line_error(rg("fit", "--model", "lop", bad), f"{bad}:3")
    cell = files["dir"] / "cell.csv"
    cell.write_text("p,rtt_us,os_us\n1,10,0.5\n2,11,0.5\n3,12,fast\n")
    one_line_error(rg("fit", "--model", "lop", cell), f"{cell}:4: 'os_us' is not a number")


def test_csv_with_repeated_p_is_fitted(files: dict[str, Path]) -> None:
    """Repeated rows for one p are combined (their median), and the fit says so."""
    rep = files["dir"] / "repeated.csv"
    text = files["csv"].read_text()
    rep.write_text(text + text.splitlines()[3] + "\n")  # the row of p=3 once more
    out = files["dir"] / "model-repeated.json"
    proc = rg("fit", "--model", "lop", rep, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "combined" in proc.stderr and "p=3" in proc.stderr
    doc = json.loads(out.read_text())
    assert any("combined" in n for n in doc["notes"])


def test_compare_models(files: dict[str, Path]) -> None:
    out = files["dir"] / "cmp"
    proc = rg("compare-models", files["prtt"], files["onen"], "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "ranking:" in proc.stdout and "LoP" in proc.stdout
    assert (out / "compare-models.png").stat().st_size > 10_000
    doc = json.loads((out / "compare-models.json").read_text())
    assert doc["ranking_by_kind"]["prtt"][0] == "loggp"
    assert doc["ranking_by_kind"]["onen"][0] == "lop"
    proc = rg("compare-models", files["onen"], "--out", out, "--json", "--models", "logp,lop")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [m["name"] for m in doc["models"]] == ["lop", "logp"]
