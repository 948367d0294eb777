"""The command line contract: exit codes, one-line errors, and the main job end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RG = [sys.executable, "-m", "railgauge.cli.main"]


def rg(*args: str, timeout: float = 120.0,
       cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RG, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, stdin=subprocess.DEVNULL)


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    assert proc.returncode == code, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["gauge", "--frobnicate"], "--frobnicate"),
        (["gauge", "--transport", "carrier-pigeon"], "carrier-pigeon"),
        (["gauge", "--min-size", "1MiB", "--max-size", "1KiB"], "size range"),
        (["gauge", "--max-size", "12 parsecs"], "parsecs"),
        (["gauge", "--max-size", "2GiB"], "1 GiB"),
        (["measure", "--transport", "nope"], "nope"),
        (["fit", "/nonexistent/measurements.jsonl"], "no such file"),
        (["run", "-n", "0", "--", "true"], "0"),
        (["nosuchverb"], "nosuchverb"),
    ],
)
def test_user_errors_exit_2_with_one_line(args: list[str], needle: str) -> None:
    one_line_error(rg(*args), 2, needle)


def test_fit_rejects_garbage_file(tmp_path: Path) -> None:
    bad = tmp_path / "m.jsonl"
    bad.write_text('{"type": "header"\nnot json\n')
    one_line_error(rg("fit", str(bad)), 2, "m.jsonl")


def test_version() -> None:
    proc = rg("--version")
    assert proc.returncode == 0
    assert "railgauge" in proc.stdout


def test_run_reports_dead_rank() -> None:
    script = 'if [ "$RG_RANK" = 1 ]; then exit 7; fi; sleep 30'
    proc = rg("run", "-n", "2", "--", "sh", "-c", script, timeout=20)
    assert proc.returncode == 1
    assert "rank 1" in proc.stderr and "7" in proc.stderr


@pytest.mark.native
@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_gauge_quick_end_to_end(tmp_path: Path, transport: str) -> None:
    out = tmp_path / "rep"
    proc = rg("gauge", "--quick", "--transport", transport, "--out", str(out),
              "--max-size", "64KiB", "--budget", "8", timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout
    for name in ("measurements.jsonl", "model-loggp.json", "report.html"):
        assert (out / name).is_file(), name
    model = json.loads((out / "model-loggp.json").read_text())
    assert model["model"] == "loggp"
    assert model["transport"] == transport
    assert model["ranges"], model
    first = model["ranges"][0]
    # The first range starts at the smallest size the fit kept: 1 B, unless the run measured
    # it only in another state of the host (under the sanitizer build on a busy host it once
    # did), when the fit leaves it out and says so in source.off_state_sizes.
    off = set(model["source"].get("off_state_sizes") or [])
    recs = [json.loads(line) for line in (out / "measurements.jsonl").read_text().splitlines()]
    sizes = {r["s"] for r in recs if r.get("type") == "prtt"}
    assert min(sizes) == 1
    assert first["from_bytes"] == min(sizes - off), off
    assert model["ranges"][-1]["to_bytes"] is None
    for key in ("L_us", "o_us", "g_us", "G_us_per_byte"):
        assert isinstance(first[key], float | int) and first[key] >= 0
        lo, hi = first["ci95"][key]
        assert lo <= hi
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html
    # The LoP part with 2 ranks: p = 1 measured, no curve fitted; the model comparison
    # (tests/test_gauge_lop.py tests them in depth).
    assert "LoP: latency against the number of peers" in html
    assert "the LoP curve needs more ranks" in html
    assert (out / "onen.jsonl").is_file() and not (out / "model-lop.json").exists()
    assert "Which model predicts this machine" in html
    assert json.loads((out / "compare-models.json").read_text())["ranking"]
    pngs = list(out.glob("*.png"))
    assert pngs and all(p.stat().st_size > 1000 for p in pngs)
    # `railgauge fit` on the same file writes the same contract.
    refit = tmp_path / "again.json"
    proc = rg("fit", str(out / "measurements.jsonl"), "--out", str(refit))
    assert proc.returncode == 0, proc.stderr
    again = json.loads(refit.read_text())
    assert [r["from_bytes"] for r in again["ranges"]] == [r["from_bytes"] for r in model["ranges"]]


@pytest.mark.native
def test_failed_measurement_exits_1_with_cause(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    env = {**os.environ, "RG_SHM_RING_SIZE": "3k"}
    proc = subprocess.run([*RG, "gauge", "--quick", "--out", str(out)], capture_output=True,
                          text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert "RG_SHM_RING_SIZE" in proc.stderr
    assert "railgauge: failed:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.mark.native
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["prtt", "--sizes", "12 parsecs"], "parsecs"),
        (["prtt", "--sizes", "2GiB"], "1 GiB"),
        (["prtt", "--min-size", "1MiB", "--max-size", "1KiB"], "--min-size"),
        (["prtt", "--n", "1"], "--n"),
        (["prtt", "--transport", "pigeon"], "pigeon"),
        (["prtt", "--bogus"], "--bogus"),
        (["teleport"], "teleport"),
        (["prtt"], "2 ranks"),
    ],
)
def test_bench_bad_input_exits_2(args: list[str], needle: str) -> None:
    from railgauge.native import find_tool

    env = {k: v for k, v in os.environ.items() if not k.startswith("RG_BOOT")}
    proc = subprocess.run([find_tool("railgauge-bench"), *args], capture_output=True, text=True,
                          timeout=30, env=env, stdin=subprocess.DEVNULL)
    one_line_error(proc, 2, needle)
