"""The barrier family at run time (issue 7): railgauge-bench barrier under the launcher.

Correctness is checked at run time (--check): ranks enter each barrier after a random
delay, record entry and exit on CLOCK_MONOTONIC, and rank 0 verifies that in no iteration
did a rank leave before the last one entered. The schedules themselves are checked
symbolically for every P in 1..64 by the C unit tests (native/tests/test-coll.c); here a
sample of P (the 2 cores of CI are oversubscribed), every algorithm and a few n, over shm
and tcp, plus the JSON contract and bad settings.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable

import pytest

from mpi_util import MPI_FLAVOURS, run_native_mpi
from railgauge.launcher import launch
from test_xport import needs_ofi

pytestmark = pytest.mark.native

TOOL = "railgauge-bench"
ALGORITHMS = ("linear", "binomial", "recdbl", "dissem", "nway:1", "nway:2", "nway:3", "nway:7")
CASES = [
    *(("shm", p, a) for p in (2, 3, 5, 8) for a in ALGORITHMS),
    *(("tcp", p, a) for p in (3, 8) for a in ALGORITHMS),
]
#: The shared-memory flag engine (--impl shm), forced where auto would take messages.
SHM_CASES = [(p, a) for p in (2, 3, 5, 8) for a in ALGORITHMS]
#: The stacks' own schedules (docs/coll.md): Open MPI's double ring, MPICH's k-dissemination
#: as written (kdissem:3 on 4 sends to one peer in both phases, kdissem:5 on 10 twice in one
#: phase) and recursive exchange (recexch:3 on 4 folds rank 0 into rank 1).
STACK_CASES = [
    *((p, a) for p in (2, 3, 4) for a in ("ring", "kdissem:3", "recexch:2", "recexch:3")),
    (10, "kdissem:5"),
]


def _bench(tool: str, args: list[str], nranks: int, transport: str = "shm") -> tuple[int, str]:
    proc_args = [tool, "barrier", "--transport", transport, *args]
    result = launch(proc_args, nranks, timeout_s=120)
    return result.returncode, result.failure or ""


@pytest.mark.parametrize(("transport", "nranks", "algorithm"), CASES)
def test_barrier_correct(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    transport: str,
    nranks: int,
    algorithm: str,
) -> None:
    rc, failure = _bench(
        native_tool(TOOL),
        [
            "--algorithm",
            algorithm,
            "--check",
            "--iterations",
            "40",
            "--warmup",
            "5",
            "--skew-us",
            "50",
            "--json",
        ],
        nranks,
        transport,
    )
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{out}\n{err}"
    rec = json.loads(out.strip().splitlines()[-1])
    assert rec["check"] == "passed"
    assert rec["violations"] == 0
    assert rec["P"] == nranks
    assert rec["transport"] == transport
    name, _, n = algorithm.partition(":")
    assert rec["algorithm"] == name
    if n:
        assert rec["n"] == int(n)


@pytest.mark.parametrize(("nranks", "algorithm"), SHM_CASES)
def test_shm_flag_barrier_correct(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    nranks: int,
    algorithm: str,
) -> None:
    """Flags in a shared segment: no rank leaves before the last enters, over 40 skewed
    barriers, for every algorithm (whatever the schedule's rounds and fan-in)."""
    rc, failure = _bench(native_tool(TOOL),
                         ["--algorithm", algorithm, "--impl", "shm", "--check", "--iterations",
                          "40", "--warmup", "5", "--skew-us", "50", "--json"], nranks)
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{out}\n{err}"
    rec = json.loads(out.strip().splitlines()[-1])
    assert rec["impl"] == "shm" and rec["check"] == "passed" and rec["violations"] == 0


@pytest.mark.parametrize("impl", ["messages", "shm"])
@pytest.mark.parametrize(("nranks", "algorithm"), STACK_CASES)
def test_stack_barrier_correct(
    native_tool: Callable[[str], str],
    capfd: pytest.CaptureFixture[str],
    nranks: int,
    algorithm: str,
    impl: str,
) -> None:
    """The stacks' schedules for real, on messages over shm and on the flags: 200 skewed
    barriers, none left before the last rank entered, none hung (an ordered pair that
    carries two messages in one barrier meets each in its round)."""
    rc, failure = _bench(native_tool(TOOL),
                         ["--algorithm", algorithm, "--impl", impl, "--check", "--iterations",
                          "200", "--warmup", "10", "--skew-us", "20", "--timeout", "20",
                          "--json"], nranks)
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{out}\n{err}"
    rec = json.loads(out.strip().splitlines()[-1])
    assert rec["impl"] == impl and rec["check"] == "passed" and rec["violations"] == 0
    assert rec["iterations"] == 200 and rec["P"] == nranks
    name, _, k = algorithm.partition(":")
    assert rec["algorithm"] == name and rec["n"] == (int(k) if k else 0)
    want_rounds = {"ring": 2 * nranks}.get(algorithm)
    if want_rounds is not None:
        assert rec["rounds"] == want_rounds


def test_ring_without_its_second_pass_is_caught(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    """The double ring's first pass alone tells only rank 0 that all have entered: rank 1
    leaves after hearing from rank 0 alone, which --check must catch with skewed entries.
    The pass still chains the barriers (rank 0 enters the next one only after rank 3 came
    round), so violations are rarer than for a cut dissemination: 200 barriers (5 to 80
    violations in trials)."""
    rc, _ = _bench(native_tool(TOOL),
                   ["--algorithm", "ring", "--check", "--drop-rounds", "4", "--iterations",
                    "200", "--warmup", "2", "--skew-us", "2000", "--json"], 4)
    out, _ = capfd.readouterr()
    assert rc != 0, out
    rec = json.loads(out.strip().splitlines()[-1])
    assert rec["check"] == "failed" and rec["violations"] > 0


def test_shm_flag_barrier_catches_a_broken_one(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    rc, _ = _bench(native_tool(TOOL),
                   ["--algorithm", "dissem", "--impl", "shm", "--check", "--drop-rounds", "1",
                    "--iterations", "40", "--warmup", "2", "--skew-us", "2000", "--json"], 5)
    out, _ = capfd.readouterr()
    assert rc != 0
    assert json.loads(out.strip().splitlines()[-1])["check"] == "failed"


def test_auto_takes_flags_over_shm_at_any_size(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    """--impl auto over shm runs on flags also where the ranks outnumber the CPUs (their
    waits yield; docs/coll.md), and stays a barrier under skewed entry."""
    nranks = max(5, (os.cpu_count() or 2) + 1)
    rc, failure = _bench(native_tool(TOOL), ["--algorithm", "nway:2", "--check",
                                             "--iterations", "40", "--warmup", "5",
                                             "--skew-us", "1500", "--json"], nranks)
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{err}"
    rec = json.loads(out.strip().splitlines()[-1])
    assert rec["impl"] == "shm" and rec["check"] == "passed" and rec["P"] == nranks


def test_shm_flag_barrier_needs_one_host_or_says_so(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    """Over tcp on one host --impl shm works (the ranks share the host); auto takes
    messages over tcp."""
    rc, failure = _bench(native_tool(TOOL), ["--algorithm", "dissem", "--impl", "shm",
                                             "--iterations", "50", "--json"], 3, "tcp")
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{err}"
    assert json.loads(out.strip().splitlines()[-1])["impl"] == "shm"
    rc, failure = _bench(native_tool(TOOL), ["--algorithm", "dissem", "--iterations", "50",
                                             "--json"], 3, "tcp")
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{err}"
    assert json.loads(out.strip().splitlines()[-1])["impl"] == "messages"


def test_barrier_json_contract(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    rc, failure = _bench(
        native_tool(TOOL), ["--algorithm", "nway", "--n", "3", "--iterations", "200", "--json"], 4
    )
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{err}"
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    rec = json.loads(lines[0])
    assert rec["algorithm"] == "nway"
    assert rec["n"] == 3
    assert rec["P"] == 4
    assert rec["rounds"] == 1
    assert 0 < rec["min_us"] <= rec["median_us"] <= rec["p99_us"] <= rec["max_us"]
    assert rec["check"] is None


def test_check_catches_a_broken_barrier(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    # Dissemination on 5 ranks without its last round: each rank has heard from only
    # two ranks before it leaves, so with entries skewed by up to 2 ms some rank leaves
    # before the last one enters, and --check must say so and fail.
    rc, _ = _bench(
        native_tool(TOOL),
        [
            "--algorithm",
            "dissem",
            "--check",
            "--drop-rounds",
            "1",
            "--iterations",
            "40",
            "--warmup",
            "2",
            "--skew-us",
            "2000",
            "--json",
        ],
        5,
    )
    out, err = capfd.readouterr()
    assert rc != 0, out
    assert "check failed" in err, err
    rec = json.loads(out.strip().splitlines()[-1])
    assert rec["check"] == "failed"
    assert rec["violations"] > 0


@pytest.mark.parametrize("impl", ["auto", "messages", "shm"])
def test_one_rank(native_tool: Callable[[str], str], impl: str) -> None:
    proc = subprocess.run(
        [native_tool(TOOL), "barrier", "--algorithm", "nway:3", "--iterations", "10", "--json",
         "--impl", impl],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["P"] == 1
    assert rec["rounds"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--algorithm", "nway:0"], "n must be an integer in 1..1024"),
        (["--algorithm", "nway"], "needs n >= 1"),
        (["--algorithm", "nway", "--n", "0"], "--n must be an integer"),
        (["--algorithm", "bogus"], "unknown barrier algorithm 'bogus'"),
        (["--algorithm", "linear", "--n", "3"], "takes no n"),
        (["--algorithm", "nway:2", "--n", "3"], "disagree"),
        (["--algorithm", "kdissem:1"], "K must be an integer in 2..1025"),
        (["--algorithm", "kdissem"], "needs K >= 2"),
        (["--algorithm", "recexch", "--n", "1"], "K = 1 must be an integer in 2..1025"),
        (["--algorithm", "ring:2"], "takes no n"),
        ([], "--algorithm is required"),
        (["--algorithm", "dissem", "--skew-us", "-1"], "--skew-us must be"),
        (["--algorithm", "dissem", "--transport", "carrier-pigeon"], "unknown transport"),
        (["--algorithm", "dissem", "--frobnicate"], "unknown option"),
    ],
)
def test_bad_settings(native_tool: Callable[[str], str], args: list[str], message: str) -> None:
    proc = subprocess.run(
        [native_tool(TOOL), "barrier", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_drop_rounds_above_the_schedule(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    rc, _ = _bench(native_tool(TOOL), ["--algorithm", "dissem", "--drop-rounds", "5"], 2)
    err = capfd.readouterr().err
    assert rc == 2
    assert "--drop-rounds 5: the schedule has only 1 rounds" in err


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
@pytest.mark.parametrize("algorithm", ["linear", "recdbl", "nway:2"])
def test_barrier_over_mpi(flavour: str, algorithm: str) -> None:
    # The same barrier over the mpi transport, ranks started by mpirun.openmpi or
    # mpiexec.mpich (bootstrap through MPI).
    res = run_native_mpi(
        TOOL,
        [
            "barrier",
            "--transport",
            "mpi",
            "--algorithm",
            algorithm,
            "--check",
            "--iterations",
            "30",
            "--warmup",
            "5",
            "--json",
        ],
        3,
        flavour,
    )
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    # mpiexec.mpich adds its own lines (every rank's exit code) to standard output.
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith('{"pattern":"barrier"')]
    assert len(lines) == 1, res.stdout
    rec = json.loads(lines[0])
    assert (rec["check"], rec["transport"], rec["P"]) == ("passed", "mpi", 3)


@needs_ofi
def test_barrier_over_ofi(
    native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str]
) -> None:
    rc, failure = _bench(
        native_tool(TOOL),
        ["--algorithm", "nway:2", "--check", "--iterations", "30", "--warmup", "5", "--json"],
        4,
        "ofi:tcp",
    )
    out, err = capfd.readouterr()
    assert rc == 0, f"{failure}\n{out}\n{err}"
    assert json.loads(out.strip().splitlines()[-1])["check"] == "passed"
