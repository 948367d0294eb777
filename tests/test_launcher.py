"""The local launcher: bootstrap protocol, failure handling, cleanup.

The ranks here are small Python programs that speak the bootstrap protocol of
native/src/boot/boot.h, so these tests need no native build.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from conftest import procs_with_marker
from railgauge.launcher import LaunchError, LaunchResult, launch

RANK_SCRIPT = textwrap.dedent(
    """
    import os, signal, socket, struct, sys, time

    def recvn(s, n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError("bootstrap socket closed")
            buf += chunk
        return buf

    def allgather(s, data):
        s.sendall(struct.pack("<BI", 0x41, len(data)) + data)
        op, total = struct.unpack("<BI", recvn(s, 5))
        assert op == 0x52, op
        return recvn(s, total)

    mode = sys.argv[1]
    arg = int(sys.argv[2]) if len(sys.argv) > 3 else 0
    rank, size = int(os.environ["RG_RANK"]), int(os.environ["RG_SIZE"])
    s = socket.socket(fileno=int(os.environ["RG_BOOT_FD"]))

    if mode == "allgather":
        for k, n in enumerate([0, 1, 8, 1000, 70000, 0]):
            mine = bytes((rank * 7 + k + i) % 256 for i in range(n))
            want = b"".join(bytes((r * 7 + k + i) % 256 for i in range(n)) for r in range(size))
            if allgather(s, mine) != want:
                sys.exit(5)
        job = os.environ["RG_JOB_ID"].encode().ljust(64, b" ")
        if allgather(s, job) != job * size:
            sys.exit(6)
        if os.environ.get("RG_TRANSPORT") != "xyz" or os.environ.get("EXTRA") != "1":
            sys.exit(7)
        sys.exit(0)
    if mode == "exit":
        allgather(s, b"")
        if rank == arg:
            sys.exit(3)
        time.sleep(60)
    if mode == "kill":
        allgather(s, b"")
        if rank == arg:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
    if mode == "sleep":
        time.sleep(60)
    if mode == "mismatch":
        allgather(s, b"x" * (rank + 1))
        time.sleep(60)
    if mode == "early-close":
        if rank == arg:
            s.close()
            time.sleep(0.3)
            sys.exit(0)
        try:
            allgather(s, b"abcd")
        except EOFError:
            sys.exit(0)
        sys.exit(9)
    sys.exit(99)
    """
)


@pytest.fixture
def rank_script(tmp_path: Path) -> Path:
    path = tmp_path / "rank.py"
    path.write_text(RANK_SCRIPT)
    return path


def run(
    script: Path, mode: str, nranks: int, arg: int = 0, **kwargs: object
) -> tuple[LaunchResult, str]:
    """Launches the rank script with a unique marker and checks nothing is left."""
    marker = f"rgtest-{uuid.uuid4().hex}"
    result = launch([sys.executable, str(script), mode, str(arg), marker], nranks, **kwargs)  # type: ignore[arg-type]
    assert procs_with_marker(marker) == [], "ranks outlived launch()"
    assert not Path(f"/dev/shm/railgauge-{result.job_id}").exists()
    return result, marker


def test_bad_arguments(rank_script: Path) -> None:
    with pytest.raises(LaunchError, match="nranks"):
        launch([sys.executable, str(rank_script)], 0)
    with pytest.raises(LaunchError, match="empty"):
        launch([], 2)
    with pytest.raises(LaunchError, match="not found"):
        launch(["railgauge-no-such-program-xyz"], 2)
    with pytest.raises(LaunchError, match="not found"):
        launch(["/nonexistent/dir/prog"], 1)
    with pytest.raises(LaunchError, match="timeout_s"):
        launch([sys.executable, "-c", "pass"], 1, timeout_s=0)
    assert issubclass(LaunchError, ValueError)


def test_allgather_protocol(rank_script: Path) -> None:
    result, _ = run(rank_script, "allgather", 4, transport="xyz", env={"EXTRA": "1"})
    assert result.returncode == 0, result
    assert result.failure is None and result.failed_rank is None
    assert result.returncodes == [0, 0, 0, 0]
    pid, _, hexpart = result.job_id.partition("-")
    assert pid == str(os.getpid()) and len(hexpart) == 8
    int(hexpart, 16)


def test_single_rank(rank_script: Path) -> None:
    result, _ = run(rank_script, "allgather", 1, transport="xyz", env={"EXTRA": "1"})
    assert result.returncode == 0, result


def test_exit_code_propagates(rank_script: Path) -> None:
    start = time.monotonic()
    result, _ = run(rank_script, "exit", 3, arg=2)
    assert time.monotonic() - start < 5
    assert result.returncode == 3
    assert result.failed_rank == 2
    assert result.failure == "rank 2 exited with code 3"
    assert result.returncodes[2] == 3
    # The others were ended by the launcher.
    assert result.returncodes[0] == -signal.SIGTERM and result.returncodes[1] == -signal.SIGTERM


def test_rank_killed_by_sigkill(rank_script: Path) -> None:
    events: list[str] = []
    start = time.monotonic()
    result, _ = run(rank_script, "kill", 4, arg=1, on_event=events.append)
    assert time.monotonic() - start < 5
    assert result.failed_rank == 1
    assert result.failure is not None
    assert "rank 1" in result.failure and "SIGKILL" in result.failure
    assert f"pid {result.pids[1]}" in result.failure
    assert result.returncode == 128 + signal.SIGKILL
    assert result.returncodes[1] == -signal.SIGKILL
    assert any("SIGKILL" in e for e in events)


def test_sigterm_ignored_then_sigkill(tmp_path: Path) -> None:
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "if os.environ['RG_RANK'] == '0':\n"
        "    time.sleep(0.3)\n"
        "    sys.exit(4)\n"
        "time.sleep(60)\n"
    )
    marker = f"rgtest-{uuid.uuid4().hex}"
    start = time.monotonic()
    result = launch([sys.executable, str(script), marker], 3, kill_grace_s=0.5)
    assert time.monotonic() - start < 5
    assert result.failure == "rank 0 exited with code 4"
    assert result.returncodes[1:] == [-signal.SIGKILL, -signal.SIGKILL]
    assert procs_with_marker(marker) == []


def test_mismatched_lengths_fail(rank_script: Path) -> None:
    start = time.monotonic()
    result, _ = run(rank_script, "mismatch", 3)
    assert time.monotonic() - start < 5
    assert result.returncode != 0
    assert result.failure is not None and "same length" in result.failure
    assert result.failed_rank == 1


def test_early_close_gives_eof(rank_script: Path) -> None:
    result, _ = run(rank_script, "early-close", 3, arg=0)
    assert result.returncode == 0, result


def test_timeout_kills_all(rank_script: Path) -> None:
    start = time.monotonic()
    result, _ = run(rank_script, "sleep", 3, timeout_s=0.5)
    assert time.monotonic() - start < 5
    assert result.failure == "timed out after 0.5 s"
    assert result.failed_rank is None
    assert result.returncode == 124


DRIVER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {python!r})
    from railgauge.launcher import launch
    r = launch([sys.executable, {script!r}, "sleep", "0", {marker!r}], 3)
    print(r.failure, flush=True)
    sys.exit(r.returncode)
    """
)


def _start_driver(tmp_path: Path, script: Path, marker: str) -> subprocess.Popen[str]:
    python_dir = str(Path(__file__).resolve().parent.parent / "python")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(python=python_dir, script=str(script), marker=marker))
    proc = subprocess.Popen([sys.executable, str(driver)], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while len(procs_with_marker(marker)) < 3:
        assert time.monotonic() < deadline, "ranks did not start"
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_launcher_interrupted(tmp_path: Path, rank_script: Path, signum: int) -> None:
    marker = f"rgtest-{uuid.uuid4().hex}"
    proc = _start_driver(tmp_path, rank_script, marker)
    start = time.monotonic()
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=10)
    assert time.monotonic() - start < 5
    assert proc.returncode == 128 + signum
    assert "interrupted" in out
    assert procs_with_marker(marker) == []


def test_ranks_die_with_launcher(tmp_path: Path, rank_script: Path) -> None:
    marker = f"rgtest-{uuid.uuid4().hex}"
    proc = _start_driver(tmp_path, rank_script, marker)
    proc.kill()
    proc.wait(timeout=5)
    deadline = time.monotonic() + 5
    while procs_with_marker(marker):
        assert time.monotonic() < deadline, "ranks outlived a SIGKILLed launcher"
        time.sleep(0.05)
