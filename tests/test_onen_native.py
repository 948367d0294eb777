"""`railgauge-bench onen`, the 1:n / n:1 benchmark of the LoP model (docs/lop.md), run for
real: over shm and tcp at 2 and 4 ranks, ofi:tcp, and the mpi transport under Open MPI;
the records read back with the Python reader (railgauge.onen), a file of 7 ranks fitted
with `railgauge fit --model lop`, unsupported modes reported (header, footer, stderr),
bad options (exit 2, one line) and a rank that dies while another polls its memory window.

Every run is short (--point-min / --point-budget of a few ms): these tests check the
pattern and its records, not the numbers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, procs_with_marker
from mpi_util import MPI_FLAVOURS, run_native_mpi
from railgauge.launcher import LaunchResult, launch
from railgauge.onen import MODES, read_onen

pytestmark = pytest.mark.native

TOOL = "railgauge-bench"
#: Short points: the tests check the pattern, not the numbers.
FAST = ["--point-min", "0.005", "--point-budget", "0.03", "--min-reps", "10",
        "--warmup", "0"]
DIRECTIONS = ("1:n", "n:1")


def _libfabric_installed() -> bool:
    if shutil.which("pkg-config") is None:
        return False
    return subprocess.run(["pkg-config", "--exists", "libfabric"], check=False).returncode == 0


needs_ofi = pytest.mark.skipif(
    not _libfabric_installed(), reason="libfabric not installed (apt-get install libfabric-dev)"
)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _run(tool: str, args: list[str], nranks: int, **kwargs: Any) -> LaunchResult:
    return launch([tool, "onen", *args], nranks, timeout_s=120, **kwargs)


def _check_file(path: Path, transport: str, nranks: int, modes: set[str],
                unsupported: set[str]) -> None:
    """The file holds one header, a record per (direction, mode, p) of the measured modes
    and p = 1 .. nranks-1, and a footer, as docs/lop.md says, and the reader takes it."""
    recs = _records(path)
    header, footer = recs[0], recs[-1]
    assert header["type"] == "header" and header["pattern"] == "onen"
    assert header["transport"] == transport and header["ranks"] == nranks
    assert set(header["params"]["modes"]) == modes
    assert header["params"]["directions"] == list(DIRECTIONS)
    assert header["params"]["max_p"] == nranks - 1
    assert set(header["modes_unsupported"]) == unsupported
    assert all(isinstance(v, str) and v for v in header["modes_unsupported"].values())
    assert footer["type"] == "footer" and footer["status"] == "ok"
    assert footer["modes_unsupported"] == header["modes_unsupported"]
    onen = [r for r in recs if r["type"] == "onen"]
    assert footer["points"] == len(onen) == header["planned_points"]
    want = {(d, m, p) for d in DIRECTIONS for m in modes for p in range(1, nranks)}
    assert {(r["direction"], r["mode"], r["p"]) for r in onen} == want
    for r in onen:
        assert r["s"] == 8 and r["count"] >= 10
        assert 0 < r["rtt_min_us"] <= r["rtt_median_us"]
        lo, hi = r["ci95_median_us"]
        assert lo <= r["rtt_median_us"] <= hi
        assert 0 <= r["os_min_us"] <= r["os_us"]
        if r["mode"] == "rma":
            assert r["or_us"] is None and r["or_min_us"] is None
        else:
            assert 0 <= r["or_min_us"] <= r["or_us"]
        assert isinstance(r["stable"], bool)
        # o_s is per request: the list post of 1:n is one call for all p.
        if r["direction"] == "1:n":
            assert r["posts_per_round"] == (1 if r["mode"] == "list" else r["p"])
        else:
            assert 1 <= r["posts_per_round"] <= r["p"]
    data = read_onen(path)
    assert data.transport == transport and not data.warnings
    assert len(data.points) == len(onen)
    assert {pt.mode for pt in data.points} == modes


@pytest.mark.parametrize(
    ("transport", "nranks", "modes"),
    [
        ("shm", 2, {"single", "list", "inject", "rma"}),
        ("shm", 4, {"single", "list", "inject", "rma"}),
        ("tcp", 2, {"single", "list"}),
        ("tcp", 4, {"single", "list"}),
        pytest.param("ofi:tcp", 3, {"single", "list", "rma"}, marks=needs_ofi),
        pytest.param("ofi:shm", 2, {"single", "list", "inject", "rma"}, marks=needs_ofi),
    ],
)
def test_onen_records(native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str],
                      tmp_path: Path, transport: str, nranks: int, modes: set[str]) -> None:
    out = tmp_path / "onen.jsonl"
    res = _run(native_tool(TOOL), ["--out", str(out), *FAST], nranks, transport=transport)
    err = capfd.readouterr().err
    assert res.returncode == 0, f"{res.failure}\n{err}"
    unsupported = set(MODES) - modes
    _check_file(out, transport, nranks, modes, unsupported)
    # Each missing mode is said once on stderr, with its reason.
    for mode in unsupported:
        assert err.count(f"onen: mode {mode} is not measured over {transport}: ") == 1


def test_onen_fit_lop(native_tool: Callable[[str], str], tmp_path: Path) -> None:
    """Seven ranks give p = 1 .. 6, enough for the six-lambda fit: `railgauge fit --model
    lop` accepts the file and writes the model."""
    out = tmp_path / "onen.jsonl"
    res = _run(native_tool(TOOL), ["--out", str(out), "--modes", "single,list",
                                   "--directions", "1:n", *FAST], 7, transport="shm")
    assert res.returncode == 0, res.failure
    model = tmp_path / "model-lop.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    proc = subprocess.run([sys.executable, "-m", "railgauge.cli.main", "fit", "--model", "lop",
                           str(out), "--out", str(model)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    fit = json.loads(model.read_text())
    assert fit["model"] == "lop" and fit["transport"] == "shm"
    assert len(fit["rtt"]["lambda"]) == 6
    assert len(fit["overhead_send"]["lambda"]) == 3
    assert fit["primary"]["direction"] == "1:n" and fit["primary"]["mode"] == "single"
    assert fit["list"] is not None


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_onen_mpi(tmp_path: Path, flavour: str) -> None:
    """The mpi transport under both MPIs: single, list (MPI_Startall of persistent sends)
    and rma (MPI_Put); no inject."""
    out = tmp_path / "onen.jsonl"
    # A point may take longer than FAST's budget: MPICH under the sanitizers is slow.
    res = run_native_mpi(TOOL, ["onen", "--transport", "mpi", "--out", str(out), *FAST,
                                "--point-budget", "0.5"], 3, flavour, timeout_s=120)
    assert res.returncode == 0, f"{res.failure}\n{res.stderr[-3000:]}"
    _check_file(out, "mpi", 3, {"single", "list", "rma"}, {"inject"})
    header = _records(out)[0]
    assert "MPI has no" in header["modes_unsupported"]["inject"]
    assert "MPI_Startall" in header["transport_info"]["list_post"]


def test_onen_tcp_list_without_uring(native_tool: Callable[[str], str],
                                     monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """RG_TCP_URING=0: list posts are one sendmsg per peer, and the header says so."""
    monkeypatch.setenv("RG_TCP_URING", "0")
    out = tmp_path / "onen.jsonl"
    res = _run(native_tool(TOOL), ["--out", str(out), "--modes", "list", *FAST], 3,
               transport="tcp")
    assert res.returncode == 0, res.failure
    _check_file(out, "tcp", 3, {"list"}, set())
    assert "RG_TCP_URING=0" in _records(out)[0]["transport_info"]["list_post"]


def test_onen_unsupported_mode_asked(native_tool: Callable[[str], str],
                                     capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Asked for a mode tcp lacks beside one it has: no records for it, the reason in the
    header and footer and once on stderr; asked only for modes it lacks: exit 2, one line."""
    out = tmp_path / "onen.jsonl"
    res = _run(native_tool(TOOL), ["--out", str(out), "--modes", "single,rma", *FAST], 2,
               transport="tcp")
    err = capfd.readouterr().err
    assert res.returncode == 0, f"{res.failure}\n{err}"
    _check_file(out, "tcp", 2, {"single"}, {"rma"})
    assert "one-sided" in _records(out)[0]["modes_unsupported"]["rma"]
    assert err.count("onen: mode rma is not measured over tcp") == 1
    assert "mode inject" not in err  # not asked for, not reported

    res = _run(native_tool(TOOL), ["--out", str(out), "--modes", "rma,inject"], 3,
               transport="tcp", kill_on_failure=False)
    err = capfd.readouterr().err
    assert res.returncodes == [2, 2, 2], f"{res}\n{err}"
    lines = [ln for ln in err.splitlines() if ln.startswith("railgauge-bench")]
    assert len(lines) == 1 and "none of the modes asked for (inject, rma)" in lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--modes", "single,bogus"], "unknown mode 'bogus'"),
        (["--modes", ""], "--modes"),
        (["--directions", "2:n"], "unknown direction '2:n'"),
        (["--max-p", "0"], "--max-p"),
        (["--max-p", "x"], "--max-p"),
        (["--point-min", "1", "--point-budget", "0.5"], "--point-min is above --point-budget"),
        (["--sizes", "8,zz"], "--sizes"),
        (["--target-rel", "2"], "--target-rel"),
        (["--no-such-option"], "unknown option"),
    ],
)
def test_onen_bad_options(native_tool: Callable[[str], str], args: list[str],
                          says: str) -> None:
    proc = subprocess.run([native_tool(TOOL), "onen", *args], capture_output=True, text=True,
                          timeout=30, check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr


def test_onen_options_of_other_patterns(native_tool: Callable[[str], str]) -> None:
    proc = subprocess.run([native_tool(TOOL), "prtt", "--modes", "single"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "options of the onen pattern" in proc.stderr


def test_onen_max_p_above_ranks(native_tool: Callable[[str], str],
                                capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Known only once the ranks run: every rank exits 2, one line says why."""
    res = _run(native_tool(TOOL), ["--out", str(tmp_path / "o.jsonl"), "--max-p", "3"], 3,
               kill_on_failure=False)
    err = capfd.readouterr().err
    assert res.returncodes == [2, 2, 2], f"{res}\n{err}"
    lines = [ln for ln in err.splitlines() if ln.startswith("railgauge-bench")]
    assert len(lines) == 1 and "--max-p 3 is above the 2 peers" in lines[0]


def test_onen_max_p_and_one_direction(native_tool: Callable[[str], str],
                                      tmp_path: Path) -> None:
    out = tmp_path / "onen.jsonl"
    res = _run(native_tool(TOOL), ["--out", str(out), "--max-p", "2", "--directions", "n:1",
                                   "--modes", "inject", "--sizes", "0,64", *FAST], 4)
    assert res.returncode == 0, res.failure
    onen = [r for r in _records(out) if r["type"] == "onen"]
    assert {(r["direction"], r["mode"], r["p"], r["s"]) for r in onen} == {
        ("n:1", "inject", p, s) for p in (1, 2) for s in (0, 64)}


@pytest.mark.parametrize("transport", ["shm", pytest.param("ofi:tcp", marks=needs_ofi)])
@pytest.mark.parametrize("victim", [0, 1])
def test_onen_rank_dies_while_polled(native_tool: Callable[[str], str],
                                     capfd: pytest.CaptureFixture[str], tmp_path: Path,
                                     transport: str, victim: int) -> None:
    """In rma mode a rank waits by polling its own memory, not in the transport: a writer
    that dies there is still named within a second (the launcher is told not to end the
    job, so that the survivors' own errors are seen)."""
    marker = f"rgtest-{uuid.uuid4().hex}"
    out = tmp_path / f"{marker}.jsonl"
    box: dict[str, LaunchResult] = {}

    def target() -> None:
        box["r"] = _run(native_tool(TOOL),
                        ["--out", str(out), "--modes", "rma", "--point-min", "20",
                         "--point-budget", "30", "--max-reps", "100000000"], 3,
                        transport=transport, kill_on_failure=False)

    thread = threading.Thread(target=target)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while out.stat().st_size == 0 if out.exists() else True:
            assert time.monotonic() < deadline, "onen did not start measuring"
            time.sleep(0.05)
        time.sleep(0.3)
        pids = sorted(procs_with_marker(marker))
        assert len(pids) == 3
        # The launcher starts rank 0 first and passes the marker to every rank.
        ranks = {pid: _rank_of(pid) for pid in pids}
        killed = next(pid for pid, rank in ranks.items() if rank == victim)
        start = time.monotonic()
        os.kill(killed, signal.SIGKILL)
    finally:
        thread.join(timeout=60)
    res = box["r"]
    assert time.monotonic() - start < 5
    err = capfd.readouterr().err
    assert res.returncodes[victim] == -signal.SIGKILL
    survivors = [r for r in range(3) if r != victim]
    assert all(res.returncodes[r] == 1 for r in survivors), f"{res}\n{err}"
    # Named by whoever noticed first: the poll, a write, or a wait in the transport.
    assert (f"rank {victim} (pid {killed}) died" in err
            or f"rank {victim} (pid {killed}) is gone" in err), err


def _rank_of(pid: int) -> int:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    for item in environ:
        if item.startswith(b"RG_RANK="):
            return int(item.split(b"=", 1)[1])
    raise AssertionError(f"pid {pid} has no RG_RANK")
