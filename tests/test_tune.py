"""`railgauge tune barrier` (issue 7): every barrier simulated on the fitted model, ranked.

Under a one-range LogGP model with g <= o the simulator's prediction of each schedule has
a closed form (docs/coll.md), so the ranking and the choice are known exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, find_native_tool
from railgauge.tune import TuneError, candidates, plot_points, tune_barrier

LAT, OVH, GAP = 10.0, 2.0, 1.0


def nway_closed(n: int, P: int, L: float = LAT, o: float = OVH) -> float:
    """LogP, g <= o: a round of k sends and k receives per rank takes k o + max(k o, o + L);
    round r of the n-way dissemination has k = min(n, (P - 1) // (n + 1)^r)."""
    t, base = 0.0, 1
    while base < P:
        k = min(n, (P - 1) // base)
        t += k * o + max(k * o, o + L)
        base *= n + 1
    return t


def write_model(path: Path, *, L: float = LAT, o: float = OVH, g: float = GAP) -> Path:
    path.write_text(json.dumps({"model": "loggp", "ranges": [
        {"from_bytes": 1, "to_bytes": None, "L_us": L, "o_us": o, "g_us": g,
         "G_us_per_byte": 0.0, "O_us_per_byte": 0.0}]}))
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.setdefault("RG_NATIVE_DIR", str(Path(find_native_tool("railgauge-sim")).parent))
    return subprocess.run([sys.executable, "-m", "railgauge.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False, env=env)


@pytest.mark.parametrize("P", [2, 5, 16, 27, 100])
def test_ranked_by_the_closed_forms(tmp_path: Path, P: int) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    res = tune_barrier(P, model, tool=find_native_tool("railgauge-sim"))
    times = [r.predicted_us for r in res.table]
    assert all(t is not None for t in times)
    assert times == sorted(times)  # type: ignore[type-var]
    by = {(r.algorithm, r.n): r.predicted_us for r in res.table}
    m = (P - 1).bit_length()
    assert by[("dissem", 1)] == pytest.approx(m * (2 * OVH + LAT), abs=1e-9)
    assert by[("linear", 0)] == pytest.approx(2 * LAT + 2 * P * OVH, abs=1e-9)
    for n in range(2, 8):
        assert by[("nway", n)] == pytest.approx(nway_closed(n, P), abs=1e-9)
    assert res.predicted_us == min(times)  # type: ignore[type-var]
    assert by[(res.algorithm, res.n)] == res.predicted_us


def test_a_wide_n_wins_where_latency_dominates(tmp_path: Path) -> None:
    # L = 10 >> o = 2 on 16 ranks: nway:3 takes two rounds of 3 o + (o + L) = 18 us,
    # dissemination four rounds of 2o + L = 14 us; every other n is slower (docs/coll.md).
    model = write_model(tmp_path / "model-loggp.json")
    res = tune_barrier(16, model, tool=find_native_tool("railgauge-sim"))
    assert (res.algorithm, res.n) == ("nway", 3)
    assert res.predicted_us == pytest.approx(36.0, abs=1e-9)
    # And with o much larger than L the single-peer rounds win (ties keep dissem's
    # order: recursive doubling and dissemination cost the same on 2^k ranks).
    cheap_latency = write_model(tmp_path / "m2.json", L=0.1, o=2.0, g=1.0)
    res = tune_barrier(16, cheap_latency, tool=find_native_tool("railgauge-sim"))
    assert res.algorithm in ("recdbl", "dissem")


def test_cli_json_and_plot(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    png = tmp_path / "tune.png"
    proc = cli("tune", "barrier", "-P", "16", "--model", str(model), "--json", "--plot",
               str(png))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {"algorithm", "n", "predicted_us", "table"} <= set(doc)
    assert (doc["algorithm"], doc["n"]) == ("nway", 3)
    assert len(doc["table"]) == len(candidates())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    proc = cli("tune", "barrier", "-P", "16", "--model", str(model))
    assert proc.returncode == 0, proc.stderr
    assert "choice: nway --n 3 (36.000 us)" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-P", "0"], "-P"),
        (["-P", "8", "--model", "MISSING"], "no such file"),
        (["-P", "8", "--model", "BAD"], "cannot read the model"),
        (["-P", "8", "--model", "WRONG"], "not a LogGP or LoP model"),
        (["-P", "8"], "--model"),
    ],
)
def test_cli_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "BAD").write_text("{not json")
    (tmp_path / "WRONG").write_text(json.dumps({"model": "bsp"}))
    args = [str(tmp_path / a) if a in ("MISSING", "BAD", "WRONG") else a for a in args]
    if "--model" not in args:
        args += [] if args[-1] == "8" else ["--model", str(write_model(tmp_path / "m.json"))]
    proc = cli("tune", "barrier", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_bad_n() -> None:
    with pytest.raises(TuneError, match="n >= 1"):
        candidates((0,))


def test_plot_points() -> None:
    assert plot_points(16) == [2, 4, 8, 16]
    assert plot_points(100) == [2, 4, 8, 16, 32, 64, 100]
    assert plot_points(1) == [2]
