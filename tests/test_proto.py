"""The messaging runtime (native/src/proto) under the launcher: the conformance
suite of railgauge-proto-test (eager and rendezvous, ordering per tag and peer,
wildcards, truncation, sizes 0 B to 64 MiB, unexpected messages, all-to-all)
over shm, tcp, ofi:tcp and ofi:shm at 2 to 8 ranks, both rendezvous modes of shm,
bad settings, and a dead peer.

The same suite under both MPI launchers (mpirun.openmpi, mpiexec.mpich), over every
transport including mpi, and across two network namespaces over tcp and ofi:tcp, are at
the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from mpi_util import MPI_FLAVOURS, run_native_mpi
from railgauge.launcher import LaunchResult, launch
from railgauge.netns import Testbed
from test_xport import needs_ofi

pytestmark = pytest.mark.native

TOOL = "railgauge-proto-test"
SUITE = ("api", "ordering", "wildcards", "truncate", "sizes", "unexpected", "alltoall")


def _run(tool: str, args: list[str], nranks: int, **kwargs: object) -> LaunchResult:
    return launch([tool, *args], nranks, timeout_s=240, **kwargs)  # type: ignore[arg-type]


def _check_suite(out: str, transport: str, nranks: int) -> None:
    assert "FAIL" not in out, out
    for test in SUITE:
        assert f"ok test={test} transport={transport} ranks={nranks}" in out, out


@pytest.mark.parametrize(
    ("transport", "nranks"),
    [
        *((t, n) for t in ("shm", "tcp") for n in (2, 3, 8)),
        *(pytest.param(t, n, marks=needs_ofi) for t in ("ofi:tcp", "ofi:shm") for n in (2, 5)),
    ],
)
def test_conformance(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    transport: str,
    nranks: int,
) -> None:
    # 64 MiB at every rank of 8 would hold 1 GiB and take long under the
    # sanitizer build; 8 ranks go to 16 MiB, fewer to 64 MiB.
    max_size = "16MiB" if nranks > 4 else "64MiB"
    result = _run(native_tool(TOOL), ["--transport", transport, "--max-size", max_size], nranks)
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    _check_suite(out, transport, nranks)


def test_shm_modes(native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]) -> None:
    """shm moves rendezvous payloads in one copy (cross-memory attach) by
    default, and over its data channel with RG_PROTO_GET=0; both pass the suite,
    and the header says which one ran."""
    for env, mode in (({}, '"rendezvous":"get"'), ({"RG_PROTO_GET": "0"}, "data-channel")):
        result = _run(native_tool(TOOL), ["--transport", "shm"], 3, env=env)
        out = capfd.readouterr().out
        assert result.returncode == 0, f"{result.failure}\n{out}"
        assert mode in out
        _check_suite(out, "shm", 3)


def test_small_eager_limit_and_pool(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    """A 64-byte eager limit makes most messages rendezvous; two pool buffers
    make arrivals wait for the pool to be reposted."""
    env = {"RG_PROTO_EAGER_LIMIT": "64", "RG_PROTO_POOL_BUFS": "2"}
    result = _run(native_tool(TOOL), ["--transport", "tcp", "--max-size", "1MiB"], 4, env=env)
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    assert '"eager_limit":64' in out
    _check_suite(out, "tcp", 4)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"RG_PROTO_POOL_BUFS": "0"}, "RG_PROTO_POOL_BUFS=0"),
        ({"RG_PROTO_GET": "2"}, "RG_PROTO_GET=2"),
        ({"RG_PROTO_EAGER_LIMIT": "2GiB"}, "above the 1GiB maximum"),
        ({"RG_PROTO_EAGER_SHM": "lots"}, "RG_PROTO_EAGER_SHM"),
    ],
)
def test_bad_settings(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    env: dict[str, str],
    needle: str,
) -> None:
    result = _run(native_tool(TOOL), ["--transport", "shm"], 2, env=env)
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert needle in out, out


def test_ranks_disagree(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    """Ranks with different eager limits fail at open with a message naming the
    setting, rather than truncating messages later."""
    import os
    from pathlib import Path

    wrapper = Path(str(tmp_path)) / "wrap.sh"
    wrapper.write_text(
        '#!/bin/sh\n[ "$RG_RANK" = 1 ] && export RG_PROTO_EAGER_SHM=4KiB\nexec "$@"\n'
    )
    os.chmod(wrapper, 0o755)
    result = _run(str(wrapper), [native_tool(TOOL), "--transport", "shm"], 2)
    out = capfd.readouterr().out
    assert result.returncode == 1
    assert "eager limit" in out and "RG_PROTO_" in out, out


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize(
    "transport", ["shm", "tcp", pytest.param("ofi:tcp", marks=needs_ofi)]
)
def test_peer_dies(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    transport: str,
    nranks: int,
) -> None:
    """Rank 1 is killed while rank 0 waits for its message: rank 0's wait
    returns an error naming the peer, well within 5 s (with three ranks the
    pool still has a live peer to receive from, so the runtime itself must
    notice)."""
    start = time.monotonic()
    result = _run(
        native_tool(TOOL),
        ["--transport", transport, "--test", "peer-dies"],
        nranks,
        kill_on_failure=False,
    )
    out = capfd.readouterr().out
    assert time.monotonic() - start < 5
    assert result.returncodes[0] == 42, f"{result}\n{out}"
    assert result.failed_rank == 1
    assert "rank 1" in out, out


def test_rate_runs(native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]) -> None:
    """The message-rate pattern used by the benchmark prints a positive rate."""
    result = _run(native_tool(TOOL), ["--test", "rate", "--seconds", "0.2"], 2)
    out = capfd.readouterr().out
    assert result.returncode == 0, out
    line = next(x for x in out.splitlines() if x.startswith("rate "))
    rate = float(line.split("messages_per_s=")[1].split()[0])
    assert rate > 0


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
@pytest.mark.parametrize(
    ("transport", "nranks"),
    [
        ("mpi", 2),
        ("mpi", 4),
        ("mpi", 8),
        ("shm", 3),
        ("tcp", 3),
        pytest.param("ofi:tcp", 2, marks=needs_ofi),
        pytest.param("ofi:shm", 2, marks=needs_ofi),
    ],
)
def test_conformance_under_mpi(flavour: str, transport: str, nranks: int) -> None:
    """Ranks started by mpirun.openmpi / mpiexec.mpich bootstrap through MPI and run the
    suite over the mpi transport and over the others (64 MiB messages up to 4 ranks)."""
    max_size = "16MiB" if nranks > 4 else "64MiB"
    res = run_native_mpi(
        TOOL, ["--transport", transport, "--max-size", max_size], nranks, flavour, timeout_s=240
    )
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    _check_suite(res.stdout, transport, nranks)


@pytest.mark.parametrize("transport", ["tcp", pytest.param("ofi:tcp", marks=needs_ofi)])
def test_conformance_across_namespaces(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    two_hosts: Testbed,
    transport: str,
) -> None:
    """Rank 0 on one host (network namespace), rank 1 on the other, each on its own address
    of the rail: the runtime's suite as between two nodes."""
    result = launch(
        [native_tool(TOOL), "--transport", transport, "--max-size", "16MiB"],
        2,
        netns=two_hosts.hosts,
        env=two_hosts.rank_env(),
        timeout_s=240,
    )
    out = capfd.readouterr().out
    assert result.returncode == 0, f"{result.failure}\n{out}"
    _check_suite(out, transport, 2)
