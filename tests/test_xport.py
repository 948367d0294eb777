"""The transports (shm, tcp, and ofi over libfabric's tcp, shm and udp
providers) under the launcher: the conformance suite of railgauge-xport-test at
2, 3 and 4 ranks (ofi: 2 and 3), dead peers, and cleanup after kill -9.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import proc_environ, procs_with_marker
from railgauge.launcher import LaunchResult, launch

pytestmark = pytest.mark.native

TOOL = "railgauge-xport-test"
TRANSPORTS = ["shm", "tcp"]


def _libfabric_installed() -> bool:
    """The ofi transport is built wherever pkg-config finds libfabric; where it
    does not, its tests are skipped (with this reason), not failed."""
    if shutil.which("pkg-config") is None:
        return False
    return subprocess.run(["pkg-config", "--exists", "libfabric"], check=False).returncode == 0


needs_ofi = pytest.mark.skipif(
    not _libfabric_installed(), reason="libfabric not installed (apt-get install libfabric-dev)"
)
#: The ofi transport over libfabric's tcp (tcp;ofi_rxm), shm and udp (udp;ofi_rxd). ofi:udp
#: carries the `rxd` mark: under the sanitizer build, with three ranks, a send over libfabric
#: 1.17's rxd once stayed pending past 30 s (its retransmission timing does not survive a
#: slowed process), so CI's sanitizer pass leaves it out and it runs at two ranks only.
OFI_TRANSPORTS = [
    pytest.param("ofi:tcp", marks=needs_ofi),
    pytest.param("ofi:shm", marks=needs_ofi),
    pytest.param("ofi:udp", marks=[needs_ofi, pytest.mark.rxd]),
]
SUITE = ("api", "ordering", "boundaries", "sizes", "any", "truncate", "bidir")


def _segments(job_id: str) -> list[str]:
    return [p.name for p in Path("/dev/shm").glob(f"railgauge-{job_id}*")]


def _run(tool: str, args: list[str], nranks: int, **kwargs: object) -> LaunchResult:
    result = launch([tool, *args], nranks, timeout_s=60, **kwargs)  # type: ignore[arg-type]
    assert _segments(result.job_id) == []
    return result


@pytest.mark.parametrize(
    ("transport", "nranks"),
    [
        *((t, n) for t in TRANSPORTS for n in (2, 3, 4)),
        *(pytest.param(t, n, marks=needs_ofi) for t in ("ofi:tcp", "ofi:shm") for n in (2, 3)),
        pytest.param("ofi:udp", 2, marks=[needs_ofi, pytest.mark.rxd]),
    ],
)
def test_conformance(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    transport: str,
    nranks: int,
) -> None:
    result = _run(native_tool(TOOL), ["--transport", transport], nranks)
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    assert "FAIL" not in out
    for test in SUITE:
        assert f"ok test={test} transport={transport} ranks={nranks}" in out


@pytest.mark.parametrize("transport", OFI_TRANSPORTS[:2])
def test_ofi_trains(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], transport: str
) -> None:
    """A 64-byte head and 64 KiB fragments: every message from 64 bytes on is a
    train of many fragments, and most receives take their head in a bounce
    buffer, truncated ones included."""
    env = {"RG_OFI_HEAD_SIZE": "64", "RG_OFI_FRAG_SIZE": "64KiB", "RG_OFI_INJECT": "0"}
    result = _run(native_tool(TOOL), ["--transport", transport], 3, env=env)
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    for test in SUITE:
        assert f"ok test={test} transport={transport} ranks=3" in out


@needs_ofi
def test_ofi_unknown_provider(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    result = _run(native_tool(TOOL), ["--transport", "ofi:no-such-provider"], 2)
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "no-such-provider" in out and "providers found" in out
    # The usable ones are named, so that the user can pick one.
    assert "shm" in out and "tcp;ofi_rxm" in out


@needs_ofi
def test_ofi_bad_setting(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    result = _run(native_tool(TOOL), ["--transport", "ofi:shm"], 2, env={"RG_OFI_HEAD_SIZE": "8"})
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "RG_OFI_HEAD_SIZE" in out


def test_transport_from_environment(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    result = _run(native_tool(TOOL), ["--test", "sizes"], 2, transport="tcp")
    out = capfd.readouterr().out
    assert result.returncode == 0, out
    assert "ok test=sizes transport=tcp" in out


def test_shm_small_ring(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    """A 4 KiB ring makes every large message wrap and stream in many chunks."""
    result = _run(native_tool(TOOL), ["--transport", "shm"], 3, env={"RG_SHM_RING_SIZE": "4KiB"})
    out = capfd.readouterr().out
    assert result.returncode == 0, out


@pytest.mark.parametrize("ring, chunk", [("4KiB", "64"), ("64KiB", "1000"), ("4KiB", "1GiB")])
def test_shm_chunks(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], ring: str, chunk: str
) -> None:
    """Copies in chunks of every grain (a cache line, one not dividing the ring, more than
    the ring) move every message intact: each publish of a part of a message is a point
    where the other side may read or refill the ring."""
    result = _run(native_tool(TOOL), ["--transport", "shm"], 3,
                  env={"RG_SHM_RING_SIZE": ring, "RG_SHM_CHUNK": chunk})
    out = capfd.readouterr().out
    assert result.returncode == 0, out


def test_shm_bad_chunk(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    result = _run(native_tool(TOOL), ["--transport", "shm"], 2, env={"RG_SHM_CHUNK": "32"})
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "RG_SHM_CHUNK=32" in out


def test_shm_bad_ring_size(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    result = _run(native_tool(TOOL), ["--transport", "shm"], 2, env={"RG_SHM_RING_SIZE": "3000"})
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "RG_SHM_RING_SIZE" in out


def test_tcp_unusable_address(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    # 198.18.0.0/15 is reserved for benchmarking and not configured here.
    result = _run(native_tool(TOOL), ["--transport", "tcp"], 2, env={"RG_TCP_ADDR": "198.18.7.7"})
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "cannot bind" in out and "198.18.7.7" in out


def test_unknown_transport(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    result = _run(native_tool(TOOL), ["--transport", "carrier-pigeon"], 2)
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "carrier-pigeon" in out and "shm" in out and "tcp" in out


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("how", ["peer-dies", "peer-exits"])
# Not ofi:shm: its receiver copies a large message out of the sender's memory
# itself (CMA), so the whole 64 MiB arrives before the sender dies. Not ofi:udp:
# with three ranks under the sanitizer build, rxd's retransmissions to the dead
# rank kept the survivor busy past the 5 s bound (30 s seen once); the launcher
# still ends such a job, and tests/test_launcher.py covers that path.
@pytest.mark.parametrize("transport", [*TRANSPORTS, OFI_TRANSPORTS[0]])
def test_peer_death(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    transport: str,
    how: str,
    nranks: int,
) -> None:
    """Rank 1 dies in the middle of a transfer; rank 0's wait returns PEER_DEAD."""
    start = time.monotonic()
    result = _run(
        native_tool(TOOL), ["--transport", transport, "--test", how], nranks, kill_on_failure=False
    )
    out = capfd.readouterr().out
    assert time.monotonic() - start < 5
    assert result.returncodes[0] == 42, f"{result}\n{out}"
    assert result.failed_rank == 1
    if how == "peer-dies":
        assert result.returncodes[1] == -signal.SIGKILL
    else:
        assert result.returncodes[1] == 3
    assert "RG_ERR_PEER_DEAD" in out
    assert "rank 1 (pid " in out


def _kill_during_soak(tool: str, transport: str, nranks: int, victim: int) -> None:
    marker = f"rgtest-{uuid.uuid4().hex}"
    box: dict[str, LaunchResult] = {}

    def target() -> None:
        box["result"] = launch(
            [tool, "--transport", transport, "--test", "soak", "--seconds", "30", "--tag", marker],
            nranks,
            timeout_s=60,
        )

    thread = threading.Thread(target=target)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        pids: dict[int, int] = {}
        while len(pids) < nranks:
            assert time.monotonic() < deadline, "ranks did not start"
            for pid in procs_with_marker(marker):
                rank = proc_environ(pid).get("RG_RANK")
                if rank is not None:
                    pids[int(rank)] = pid
            time.sleep(0.05)
        job_id = proc_environ(pids[victim]).get("RG_JOB_ID", "")
        assert job_id
        # Let every rank get through the bootstrap and the transport's open and into the
        # soak (a kill during the bootstrap is another test's case; on a busy two-core host
        # the open took more than 0.5 s once, and rank 0 failed first in the allgather).
        time.sleep(2.0)
        # The segment is already unlinked while the job runs.
        assert _segments(job_id) == []
        start = time.monotonic()
        os.kill(pids[victim], signal.SIGKILL)
    finally:
        thread.join(timeout=30)
    result = box["result"]
    assert time.monotonic() - start < 5
    assert result.failed_rank == victim, result
    assert result.failure is not None and "SIGKILL" in result.failure
    assert procs_with_marker(marker) == []
    assert _segments(job_id) == []


@pytest.mark.parametrize("victim", [0, 1, 2])
def test_shm_kill9_leaves_nothing(native_tool: Callable[[str], str], victim: int) -> None:
    _kill_during_soak(native_tool(TOOL), "shm", 3, victim)


def test_tcp_kill9_leaves_nothing(native_tool: Callable[[str], str]) -> None:
    _kill_during_soak(native_tool(TOOL), "tcp", 3, 1)


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"RG_RANK": "5", "RG_SIZE": "2", "RG_BOOT_FD": "0", "RG_JOB_ID": "x"}, "RG_RANK"),
        ({"RG_RANK": "0"}, "RG_SIZE"),
        ({"RG_RANK": "0", "RG_SIZE": "2", "RG_BOOT_FD": "1", "RG_JOB_ID": "a/b"}, "RG_JOB_ID"),
        ({"RG_RANK": "0", "RG_SIZE": "2", "RG_BOOT_FD": "1", "RG_JOB_ID": "ab"}, "RG_BOOT_FD"),
        ({"RG_RANK": "0", "RG_SIZE": "2", "RG_BOOT_FD": "987", "RG_JOB_ID": "ab"}, "RG_BOOT_FD"),
    ],
)
def test_bad_bootstrap_environment(
    native_tool: Callable[[str], str], variables: dict[str, str], named: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RG_") or k == "RG_NATIVE_DIR"}
    env.update(variables)
    proc = subprocess.run(
        [native_tool(TOOL)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1
    assert "bootstrap" in proc.stderr and named in proc.stderr, proc.stderr


def test_single_rank_without_launcher(native_tool: Callable[[str], str]) -> None:
    """No launcher in the environment: rank 0 of 1, which the suite refuses."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RG_")}
    proc = subprocess.run(
        [native_tool(TOOL), "--transport", "shm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1
    assert "2 to 8 ranks" in proc.stdout


def test_shm_removes_stale_segments(native_tool: Callable[[str], str]) -> None:
    """Segments of jobs whose launcher pid is gone are removed at the next open;
    those of live launchers are left alone."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = Path(f"/dev/shm/railgauge-{dead.pid}-0badc0de")
    live = Path(f"/dev/shm/railgauge-{os.getpid()}-0badc0de")
    stale.write_bytes(b"x" * 64)
    live.write_bytes(b"x" * 64)
    try:
        result = _run(native_tool(TOOL), ["--transport", "shm", "--test", "api"], 2)
        assert result.returncode == 0
        assert not stale.exists()
        assert live.exists()
    finally:
        for path in (stale, live):
            path.unlink(missing_ok=True)
