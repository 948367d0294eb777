"""Ranks started by MPI launchers (mpirun.openmpi, mpiexec.mpich): the conformance suite
over every transport with the MPI bootstrap, the mpi transport itself, a rank that dies
mid-run, the errors of a wrong setup, and `railgauge gauge` under MPI end to end.

Each flavour is skipped (with the package to install) where its launcher or compiler
wrapper is missing; CI installs both. The helper that runs a tool under a launcher is
tests/mpi_util.py.
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

import pytest

from conftest import proc_environ, procs_with_marker
from mpi_util import MPI_FLAVOURS, flavour_installed, run_native_mpi, sanitizer_env
from railgauge.launcher import launch
from railgauge.mpilaunch import (
    FLAVOURS,
    MpiError,
    MpiResult,
    _first_failed,
    _hydra_statuses,
    _Watch,
    flavour_from_name,
    mpi_command,
    run_mpi,
)

TOOL = "railgauge-xport-test"
SUITE = ("api", "ordering", "boundaries", "sizes", "any", "truncate", "bidir")
RG = [sys.executable, "-m", "railgauge.cli.main"]


def _libfabric_installed() -> bool:
    if shutil.which("pkg-config") is None:
        return False
    return subprocess.run(["pkg-config", "--exists", "libfabric"], check=False).returncode == 0


needs_ofi = pytest.mark.skipif(
    not _libfabric_installed(), reason="libfabric not installed (apt-get install libfabric-dev)"
)


def _explain(res: MpiResult) -> str:
    return f"{res.failure}\n--- stdout\n{res.stdout[-3000:]}\n--- stderr\n{res.stderr[-3000:]}"


# ---- the conformance suite with the MPI bootstrap ----------------------------------------


@pytest.mark.native
@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("transport", ["mpi", "shm", "tcp", pytest.param("ofi:tcp",
                                                                         marks=needs_ofi)])
@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_conformance_under_mpi(flavour: str, transport: str, nranks: int) -> None:
    res = run_native_mpi(TOOL, ["--transport", transport], nranks, flavour)
    assert res.returncode == 0, _explain(res)
    assert "FAIL" not in res.stdout
    for test in SUITE:
        assert f"ok test={test} transport={transport} ranks={nranks}" in res.stdout, res.stdout
    # Every rank ran on this host under the launcher (rank numbers from its variables).
    assert sorted(res.pids) == list(range(nranks))


@pytest.mark.native
@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_mpi_large_messages(flavour: str) -> None:
    """64 MiB and more (a length message, then the payload), and one such message
    truncated into a 1 MiB buffer."""
    res = run_native_mpi(TOOL, ["--transport", "mpi", "--test", "large"], 2, flavour)
    assert res.returncode == 0, _explain(res)
    assert "ok test=large transport=mpi ranks=2" in res.stdout


@pytest.mark.native
@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_mpi_every_message_long(flavour: str) -> None:
    """RG_MPI_SHORT_MAX=8: every message above 8 bytes takes the long path (length, then
    payload on the second communicator, tags per pair), with any-source receives,
    truncation and bounce buffers: the suite must not notice."""
    res = run_native_mpi(TOOL, ["--transport", "mpi"], 3, flavour,
                         env={"RG_MPI_SHORT_MAX": "8"})
    assert res.returncode == 0, _explain(res)
    for test in SUITE:
        assert f"ok test={test} transport=mpi ranks=3" in res.stdout, res.stdout


@pytest.mark.native
@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_mpi_short_max_must_agree(native_tool: Callable[[str], str], flavour: str) -> None:
    """Ranks that would frame messages differently (RG_MPI_SHORT_MAX) refuse to open
    the transport, all of them, naming the setting."""
    rank_var = FLAVOURS[flavour].rank_var
    script = (f'if [ "${rank_var}" = 1 ]; then RG_MPI_SHORT_MAX=64; export RG_MPI_SHORT_MAX; '
              'fi; exec "$0" "$@"')
    res = run_mpi(flavour, ["sh", "-c", script, native_tool(TOOL), "--transport", "mpi",
                            "--test", "api"], 2, env=sanitizer_env(), timeout_s=60)
    assert res.returncode != 0
    assert res.stdout.count("RG_MPI_SHORT_MAX differs between ranks") >= 1, _explain(res)


# ---- a rank that dies -------------------------------------------------------------------


def _kill_during_soak(flavour: str, transport: str, nranks: int, victim: int) -> MpiResult:
    """Starts the soak test, kills rank `victim` with SIGKILL once every rank runs it,
    and returns the result; asserts that the job ended within 5 s and left no rank."""
    marker = f"rgmpi-{uuid.uuid4().hex}"
    box: dict[str, MpiResult] = {}
    rank_var = FLAVOURS[flavour].rank_var

    def target() -> None:
        box["r"] = run_native_mpi(
            TOOL, ["--transport", transport, "--test", "soak", "--seconds", "30",
                   "--tag", marker], nranks, flavour, timeout_s=60)

    thread = threading.Thread(target=target)
    thread.start()
    start = None
    try:
        deadline = time.monotonic() + 20
        pids: dict[int, int] = {}
        while len(pids) < nranks:
            assert time.monotonic() < deadline, f"ranks did not start: {pids}"
            for pid in procs_with_marker(marker):
                rank = proc_environ(pid).get(rank_var)
                if rank is not None and rank.isdigit():
                    pids[int(rank)] = pid
            time.sleep(0.05)
        # Past the transport's open, into the soak.
        time.sleep(1.0)
        start = time.monotonic()
        os.kill(pids[victim], signal.SIGKILL)
    finally:
        thread.join(timeout=60)
    assert start is not None
    elapsed = time.monotonic() - start
    res = box["r"]
    assert elapsed < 5, f"the job took {elapsed:.1f} s to end\n{_explain(res)}"
    assert procs_with_marker(marker) == []
    return res


@pytest.mark.native
@pytest.mark.parametrize("transport", ["mpi", "tcp"])
@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_rank_killed_mid_run(flavour: str, transport: str) -> None:
    """kill -9 of rank 1 in the middle of the soak: the launcher ends the job within 5 s
    and the result names rank 1 and its signal (over mpi Open MPI's ranks cannot see the
    death, MPICH's abort in UCX; over tcp they see it: either way they must not be
    blamed). Two ranks, one per core as on a cluster: with more busy ranks than cores,
    the dead rank's own teardown can be preempted long enough for a rank that mpiexec
    killed after it to finish dying first, and MPICH's report cannot tell them apart."""
    res = _kill_during_soak(flavour, transport, 2, 1)
    assert res.returncode != 0
    assert res.failed_rank == 1, _explain(res)
    assert res.failure is not None and res.failure.startswith("rank 1 ")
    # The signal, where the launcher reports it for rank 1 (mpirun may reap a rank that
    # exited on seeing rank 1 die first and report that one's code; hydra may report no
    # status for rank 1: rank 1 is then named from what its peers and this host saw).
    assert ("SIGKILL" in res.failure or "as its peers reported" in res.failure
            or "died first" in res.failure), res.failure


@pytest.mark.native
@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_rank_exits_mid_run(flavour: str) -> None:
    """Rank 1 calls _exit(3) in the middle of a transfer (tcp): rank 1 and its exit code
    are named, although the launcher then kills the others."""
    start = time.monotonic()
    res = run_native_mpi(TOOL, ["--transport", "tcp", "--test", "peer-exits"], 3, flavour)
    assert time.monotonic() - start < 5 + 2  # the 5 s bound plus start-up
    assert res.failed_rank == 1, _explain(res)
    assert res.failure is not None and res.failure.startswith("rank 1 ")
    if flavour == "openmpi":
        # mpirun reports the code; hydra's statuses of early deaths are not reliable.
        assert "code 3" in res.failure and res.returncode == 3


# ---- setups that cannot work --------------------------------------------------------------


@pytest.mark.native
def test_mpi_transport_under_railgauge_run(native_tool: Callable[[str], str],
                                           capfd: pytest.CaptureFixture[str]) -> None:
    result = launch([native_tool(TOOL), "--transport", "mpi"], 2, timeout_s=60)
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "the mpi transport needs ranks started by mpirun/mpiexec" in out
    assert "railgauge run" in out


@pytest.mark.native
def test_mpi_transport_single_process(native_tool: Callable[[str], str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RG_", "OMPI_", "PMI"))}
    proc = subprocess.run([native_tool(TOOL), "--transport", "mpi"], env=env,
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert "the mpi transport needs ranks started by mpirun/mpiexec" in proc.stdout
    assert "without a launcher" in proc.stdout


@pytest.mark.native
@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_missing_plugin(native_tool: Callable[[str], str], tmp_path: Path,
                        flavour: str) -> None:
    """A tool whose plugin is not where it looks says which paths it tried and how to
    build the plugin, on every rank, and the job ends."""
    tool = tmp_path / TOOL
    shutil.copy2(native_tool(TOOL), tool)
    res = run_mpi(flavour, [str(tool), "--transport", "shm"], 2, env=sanitizer_env(),
                  timeout_s=60)
    assert res.returncode != 0
    assert res.failed_rank in (0, 1), _explain(res)
    missing = tmp_path / f"librailgauge-mpi-{flavour}.so"
    assert f"the {flavour} plugin is missing" in res.stderr, res.stderr
    assert str(missing) in res.stderr
    assert "apt-get install" in res.stderr and "rebuild railgauge" in res.stderr


@pytest.mark.native
@pytest.mark.skipif(not (flavour_installed("openmpi") and flavour_installed("mpich")),
                    reason="needs both Open MPI and MPICH")
def test_plugin_of_the_other_flavour() -> None:
    """MPICH's plugin in ranks that mpirun.openmpi started sees each rank alone: the
    bootstrap says so instead of running N jobs of one rank."""
    res = run_native_mpi(TOOL, ["--transport", "shm"], 2, "openmpi",
                         env={"RG_MPI_FLAVOUR": "mpich"})
    assert res.returncode != 0
    assert "sees 1 rank(s), but mpirun.openmpi started 2" in res.stderr, _explain(res)


# ---- railgauge gauge under MPI ------------------------------------------------------------


def _rg(*args: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    # The sanitizer settings of MPI runs (mpi_util.py) reach the ranks gauge starts.
    return subprocess.run([*RG, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env={**os.environ, **sanitizer_env()})


@pytest.mark.native
@pytest.mark.parametrize(
    ("args", "flavour", "library"),
    [
        pytest.param(["--transport", "mpi"], "openmpi", "Open MPI v",
                     marks=MPI_FLAVOURS[0].marks, id="mpi-default"),
        pytest.param(["--transport", "mpi", "--launcher", "mpiexec"], "mpich", "MPICH ",
                     marks=MPI_FLAVOURS[1].marks, id="mpi-mpiexec"),
        pytest.param(["--transport", "ofi:tcp", "--launcher", "mpirun"], "openmpi", None,
                     marks=[*MPI_FLAVOURS[0].marks, needs_ofi], id="ofi-tcp-mpirun"),
    ],
)
def test_gauge_under_mpi(tmp_path: Path, args: list[str], flavour: str,
                         library: str | None) -> None:
    out = tmp_path / "rep"
    proc = _rg("gauge", "--quick", *args, "--out", str(out), "--max-size", "16KiB",
               "--budget", "5")
    assert proc.returncode == 0, proc.stderr
    for name in ("measurements.jsonl", "model-loggp.json", "report.html"):
        assert (out / name).is_file(), name
    header = json.loads((out / "measurements.jsonl").read_text().splitlines()[0])
    assert header["type"] == "header"
    assert header["bootstrap"] == "mpi"
    assert header["transport"] == args[1]
    model = json.loads((out / "model-loggp.json").read_text())
    assert model["transport"] == args[1] and model["ranges"]
    if library is not None:
        info = header["transport_info"]
        assert info["library"].startswith(library), info
        assert info["flavour"] == flavour
        assert info["mpi_version"] in ("3.1", "4.0", "4.1")
        # The report names the MPI library and its version.
        assert info["library"] in (out / "report.html").read_text()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--transport", "mpi", "--launcher", "local"], "needs ranks started by an MPI launcher"),
        (["--hosts", "a,b"], "need an MPI launcher"),
        (["--launcher", "mpirun", "--hosts", "a,,b"], "--hosts"),
        (["--launcher", "nope"], "nope"),
    ],
)
def test_gauge_launcher_user_errors(args: list[str], needle: str) -> None:
    proc = _rg("gauge", *args, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], proc.stderr


# ---- mpilaunch without running anything ----------------------------------------------------


def test_mpi_command_openmpi() -> None:
    cmd = mpi_command("openmpi", ["prog", "-x"], 4, hosts=["h1", "h2"], env={"A": "1"},
                      bind="none", launcher="mpirun.openmpi")
    assert cmd[0] == "mpirun.openmpi" and cmd[-2:] == ["prog", "-x"]
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    i = cmd.index("-n")
    assert cmd[i + 1] == "4"
    assert cmd[cmd.index("--host") + 1] == "h1,h2"
    assert cmd[cmd.index("-x") + 1] == "A=1"
    assert cmd[cmd.index("--bind-to") + 1] == "none"
    assert "--oversubscribe" in cmd


def test_mpi_command_mpich() -> None:
    cmd = mpi_command("mpich", ["prog"], 2, hostfile="hf", env={"A": "1", "B": "x y"},
                      launcher="mpiexec.mpich")
    assert cmd == ["mpiexec.mpich", "-print-all-exitcodes", "-n", "2", "-f", "hf",
                   "-genv", "A", "1", "-genv", "B", "x y", "prog"]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"hosts": ["a"], "hostfile": "f"}, "not both"),
        ({"hosts": []}, "hosts"),
        ({"bind": "socket"}, "bind"),
    ],
)
def test_mpi_command_errors(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(MpiError, match=needle):
        mpi_command("openmpi", ["prog"], 2, launcher="mpirun.openmpi", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(MpiError, match="nranks"):
        mpi_command("mpich", ["prog"], 0, launcher="mpiexec.mpich")


def test_flavour_names() -> None:
    assert flavour_from_name("mpirun") == flavour_from_name("mpirun.openmpi") == "openmpi"
    assert flavour_from_name("mpiexec") == flavour_from_name("mpiexec.mpich") == "mpich"
    with pytest.raises(MpiError, match="srun"):
        flavour_from_name("srun")


def test_hydra_first_failure() -> None:
    """Hydra reports the ranks it killed with SIGKILL (wait status 9), some as 0, and may
    kill them a fraction of a millisecond before the failed rank's own exit is seen."""
    text = "[mpiexec@vm] Exit codes: [vm] 9,768,0\n"
    statuses = _hydra_statuses(text)
    assert statuses == {0: 9, 1: 768, 2: 0}
    watch = _Watch("m", "PMI_RANK", 3, 0.0, None, local=True)  # type: ignore[arg-type]
    watch.pids = {0: 10, 1: 11, 2: 12}
    # The failed rank first: it.
    watch.exits = [(1.0, 1), (1.0005, 0), (1.0008, 2)]
    assert _first_failed(statuses, watch) == 1
    # Hydra's SIGKILL seen 0.2 ms before the exit it reacted to: the exit code wins.
    watch.exits = [(1.0, 0), (1.0002, 1), (1.001, 2)]
    assert _first_failed(statuses, watch) == 1
    # Killed from outside (SIGKILL), a peer exits with an error on seeing it: the peer's
    # output names the dead rank by rank and pid.
    statuses = {0: 0, 1: 9, 2: 256}
    watch.exits = [(1.0, 2), (1.0003, 1), (1.001, 0)]
    out = ("FAIL test=soak rank=2: RG_ERR_PEER_DEAD: rank 1 (pid 11) closed its connection\n"
           "FAIL test=soak rank=0: RG_ERR_PEER_DEAD: rank 2 (pid 12) closed its connection\n")
    assert _first_failed(statuses, watch, out) == 1
    # A pid that is not the rank's is no evidence, nor a rank named without a death.
    out_wrong = "rank 1 (pid 99) closed its connection\nMPI_Isend with rank 1 (pid 11)\n"
    assert _first_failed(statuses, watch, out_wrong) == 2
    # The watch connections: the first rank to begin dying, whatever hydra reports.
    watch.deaths = [(1.0, 1), (1.0001, 2), (1.0002, 0)]
    assert _first_failed({0: 0, 1: 9, 2: 256}, watch) == 1
    assert _first_failed({0: 0, 1: 0, 2: 256}, watch) == 1
    watch.deaths = []
    # A signal hydra never sends names its rank.
    assert _first_failed({0: 9, 1: 11, 2: 0}, watch) == 1
    # A failed rank that died before it was found came first.
    watch.pids = {0: 10, 2: 12}
    watch.exits = [(1.0, 0), (1.1, 2)]
    assert _first_failed({0: 9, 1: 9, 2: 0}, watch) == 1
    # Several hosts: the order of ranks across them is not in the line.
    assert _hydra_statuses("Exit codes: [a] 0,9\n             [b] 0\n") is None
