"""The shared receive window of the runtime (native/src/proto/rxwin.c, issue 9):
RNR storms (a window of 1, many senders) lose, duplicate and reorder nothing over shm
and tcp; memory is exact on hand-counted cases; bad settings are refused with a clear
error; a sender refused too often fails naming the peer; `railgauge rxwin eval --json`
keeps its contract. The window's policy itself has C unit tests (native/tests/test-rxwin.c).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from railgauge.launcher import LaunchResult, launch
from railgauge.rxwin import CONTRACT_KEYS, RxwinError, parse_window, window_env
from test_xport import needs_ofi

pytestmark = pytest.mark.native

ROOT = Path(__file__).resolve().parent.parent

#: Bytes one buffer of the window counts (LP64): its descriptor (rg_xreq_t, 88 bytes;
#: a link, a post number and the data pointer, 24) + the 56-byte header + the eager
#: limit (shm 16 KiB, tcp 32 KiB).
POOL_BUF_BYTES = 88 + 24 + 56 + 16384
POOL_BUF_BYTES_OF = {"shm": POOL_BUF_BYTES, "tcp": 88 + 24 + 56 + 32768}
#: One staging buffer of the medium class (a 512-byte message and its 16-byte header
#: do not fit the small class of 56 + 256 bytes): descriptor 160 + 56 + 4096.
MEDIUM_XOP_BYTES = 160 + 56 + 4096

STORM = {"RG_PROTO_RXWIN": "fixed:1", "RG_PROTO_RNR": "1", "RG_PROTO_RNR_TIMER_MS": "0.01"}


def _bench(tool: str, tmp_path: Path, args: list[str], nranks: int, env: dict[str, str],
           transport: str = "shm") -> tuple[LaunchResult, dict[str, Any] | None]:
    out = tmp_path / "rxwin.json"
    res = launch([tool, "rxwin", "--transport", transport, "--out", str(out), *args], nranks,
                 transport=transport, env=env, timeout_s=240)
    doc = json.loads(out.read_text()) if res.ok else None
    return res, doc


def _check_complete(doc: dict[str, Any], expected_messages: int) -> None:
    """Every message arrived once, intact and in order (rxwin.c checks each payload's
    header, checksum and its place among its sender's messages of that tag)."""
    per = doc["per_rank"]
    assert doc["verified"] is True
    assert doc["messages"] == expected_messages
    assert sum(r["sent"] for r in per) == expected_messages
    assert sum(r["received"] for r in per) == expected_messages
    assert all(r["bad"] == 0 for r in per)
    # Each refusal a sender heard of led to exactly one retry.
    assert all(r["retries"] == r["rnr_recv"] for r in per), per
    for r in per:
        assert r["mem_high_water"] >= r["mem_pool"] + r["mem_unexpected"] + r["mem_control"]


@pytest.mark.parametrize("transport", ["shm", "tcp"])
@pytest.mark.parametrize("pattern", ["incast", "alltoall", "mix"])
def test_rnr_storm_no_loss_no_duplicate_in_order(native_tool: Callable[[str], str],
                                                 tmp_path: Path, transport: str,
                                                 pattern: str) -> None:
    iters, burst, n = 12, 24, 4
    res, doc = _bench(native_tool("railgauge-bench"), tmp_path,
                      ["--pattern", pattern, "--iters", str(iters), "--burst", str(burst),
                       "--compute-us", "50"], n, STORM, transport)
    assert res.ok, res.failure
    assert doc is not None
    if pattern == "incast":
        expected = (n - 1) * burst * iters
    elif pattern == "alltoall":
        expected = n * (n - 1) * iters
    else:  # mix: alltoall, halo2d (2x2 grid: 2 neighbours each), incast in turn
        per_kind = [n * (n - 1), n * 2, (n - 1) * burst]
        expected = sum(per_kind[i % 3] for i in range(iters))
    _check_complete(doc, expected)
    # A window of one buffer under many senders: a storm of refusals.
    assert doc["rnr"] > 0
    assert doc["retries"] > 0
    assert all(r["window"] == 1 and r["window_peak"] == 1 for r in doc["per_rank"])
    # The window and the refusal buffer, nothing more, in the pool.
    assert doc["runtime"]["pool_buf_bytes"] == POOL_BUF_BYTES_OF[transport]
    assert all(r["mem_pool"] == 2 * POOL_BUF_BYTES_OF[transport] for r in doc["per_rank"])


@needs_ofi
@pytest.mark.parametrize("transport", ["ofi:tcp", "ofi:shm"])
def test_rnr_storm_over_libfabric(native_tool: Callable[[str], str], tmp_path: Path,
                                  transport: str) -> None:
    """The same storm through libfabric's RDM endpoints: the window's buffers are the
    endpoint's receives from any source."""
    res, doc = _bench(native_tool("railgauge-bench"), tmp_path,
                      ["--pattern", "incast", "--iters", "8", "--burst", "24"], 4, STORM,
                      transport)
    assert res.ok, res.failure
    assert doc is not None
    _check_complete(doc, 3 * 24 * 8)
    assert doc["rnr"] > 0


def test_rnr_storm_conformance_suite(native_tool: Callable[[str], str],
                                     capfd: pytest.CaptureFixture[str]) -> None:
    """The runtime's whole conformance suite (ordering per tag and peer, wildcards,
    rendezvous, truncation, unexpected messages) with a window of 1 and RNR."""
    for transport in ("shm", "tcp"):
        res = launch([native_tool("railgauge-proto-test"), "--transport", transport,
                      "--max-size", "1MiB"], 4, env=STORM, timeout_s=240)
        out = capfd.readouterr().out
        assert res.ok, f"{res.failure}\n{out}"
        assert "FAIL" not in out
        for test in ("api", "ordering", "wildcards", "truncate", "sizes", "unexpected",
                     "alltoall"):
            assert f"ok test={test} transport={transport} ranks=4" in out, out
        assert '"rxwin":"fixed:1"' in out and '"rnr":1' in out


def test_memory_hand_counted(native_tool: Callable[[str], str], tmp_path: Path) -> None:
    """fixed:4 without RNR, 2 ranks, alltoall of 512-byte messages: 4 buffers in the
    pool, one medium staging buffer (one send at a time), nothing unexpected left, and a
    high-water mark that is the pool, the staging buffer and whole unexpected messages."""
    res, doc = _bench(native_tool("railgauge-bench"), tmp_path,
                      ["--pattern", "alltoall", "--iters", "5"], 2,
                      {"RG_PROTO_RXWIN": "fixed:4", "RG_PROTO_RNR": "0"})
    assert res.ok, res.failure
    assert doc is not None
    assert doc["runtime"]["pool_buf_bytes"] == POOL_BUF_BYTES
    assert doc["runtime"]["rxwin"] == "fixed:4" and doc["runtime"]["rnr"] == 0
    _check_complete(doc, 10)
    for r in doc["per_rank"]:
        assert r["mem_pool"] == 4 * POOL_BUF_BYTES
        assert r["mem_control"] == MEDIUM_XOP_BYTES
        assert r["mem_unexpected"] == 0
        assert r["window"] == 4 and r["limit_events"] == 0
        assert r["rnr_sent"] == r["rnr_recv"] == r["retries"] == 0
    # The high-water mark: pool and staging buffer, plus the 512-byte messages that came
    # before their receive was posted (a 96-byte record each, with its payload): how many
    # did depends on scheduling, but never more than a phase's burst.
    base = 4 * POOL_BUF_BYTES + MEDIUM_XOP_BYTES
    for hw in (doc["mem_bytes"]["min"], doc["mem_bytes"]["max"]):
        assert hw >= base
        assert (hw - base) % (96 + 512) == 0, hw - base
        assert (hw - base) // (96 + 512) <= 32


def test_adaptive_window_grows_by_the_formula(native_tool: Callable[[str], str],
                                              tmp_path: Path) -> None:
    """Bursts of 64 into rank 0 with adaptive:2:64: its window grows through
    2, 4, 8, ..., never past W_max, the pool holds exactly the window's buffers
    (the adaptive scheme never shrinks without :reclaim), and every limit event
    is counted."""
    res, doc = _bench(native_tool("railgauge-bench"), tmp_path,
                      ["--pattern", "incast", "--iters", "20", "--burst", "64"], 3,
                      {"RG_PROTO_RXWIN": "adaptive:2:64", "RG_PROTO_RNR": "1",
                       "RG_PROTO_RNR_TIMER_MS": "0.05"})
    assert res.ok, res.failure
    assert doc is not None
    _check_complete(doc, 2 * 64 * 20)
    sizes = {2 << k for k in range(6)}
    for r in doc["per_rank"]:
        assert r["window"] in sizes and r["window"] == r["window_peak"]
        assert r["mem_pool"] == (r["window"] + 1) * POOL_BUF_BYTES
        # Each growth was a limit event (events at W_max add none).
        assert r["limit_events"] >= (r["window"] // 2).bit_length() - 1
    assert doc["per_rank"][0]["window"] > 2


def test_reclaim_shrinks_and_loses_nothing(native_tool: Callable[[str], str],
                                           tmp_path: Path) -> None:
    """adaptive:2:256:reclaim with a 200 us quiet period over mix (computation of 200 to
    800 us between phases): windows grow in the bursts and shrink in the quiet phases,
    buffers above the window go back as they return, and every message still arrives
    once and in order."""
    env = {"RG_PROTO_RXWIN": "adaptive:2:256:reclaim", "RG_PROTO_RXWIN_QUIET_NS": "200us",
           "RG_PROTO_RNR": "1", "RG_PROTO_RNR_TIMER_MS": "0.05"}
    iters, burst, n = 30, 32, 4
    res, doc = _bench(native_tool("railgauge-bench"), tmp_path,
                      ["--pattern", "mix", "--iters", str(iters), "--burst", str(burst),
                       "--compute-us", "400"], n, env)
    assert res.ok, res.failure
    assert doc is not None
    per_kind = [n * (n - 1), n * 2, (n - 1) * burst]
    _check_complete(doc, sum(per_kind[i % 3] for i in range(iters)))
    assert sum(r["shrinks"] for r in doc["per_rank"]) > 0
    for r in doc["per_rank"]:
        assert 2 <= r["window"] <= r["window_peak"] <= 256
        assert r["mem_pool"] % POOL_BUF_BYTES == 0
        assert r["mem_pool"] <= (r["window_peak"] + 1) * POOL_BUF_BYTES


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RG_PROTO_RXWIN": "adaptive:64:8"}, "W_init 64 is above W_max 8"),
        ({"RG_PROTO_RXWIN": "fixed:0"}, "must be 1 to 65536"),
        ({"RG_PROTO_RXWIN": "elastic"}, "must be fixed:N or adaptive"),
        ({"RG_PROTO_RXWIN": "adaptive:8:64", "RG_PROTO_RXWIN_LIMIT": "0"},
         "RG_PROTO_RXWIN_LIMIT=0: must be 1 to the initial window (8)"),
        ({"RG_PROTO_RNR": "1", "RG_PROTO_RNR_TIMER_MS": "700"},
         "RG_PROTO_RNR_TIMER_MS=700: must be 0.01 to 655.36 ms"),
        ({"RG_PROTO_RNR": "1", "RG_PROTO_RNR_TIMER_MS": "0.001"}, "must be 0.01 to 655.36"),
        ({"RG_PROTO_RNR": "1", "RG_PROTO_RNR_RETRY": "0"}, "RG_PROTO_RNR_RETRY=0"),
        ({"RG_PROTO_RNR": "2"}, "RG_PROTO_RNR=2: must be 0 or 1"),
    ],
)
def test_bad_settings(native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str],
                      tmp_path: Path, env: dict[str, str], message: str) -> None:
    res, _ = _bench(native_tool("railgauge-bench"), tmp_path, ["--pattern", "alltoall"], 2, env)
    err = capfd.readouterr().err
    assert res.returncode == 2, err
    assert message in err


def test_retry_bound_names_peer_and_queues(native_tool: Callable[[str], str],
                                           capfd: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    """A sender refused more often than RG_PROTO_RNR_RETRY fails instead of spinning,
    with an error that names the peer, the refusals and both queues."""
    env = dict(STORM, RG_PROTO_RNR_RETRY="1")
    res, _ = _bench(native_tool("railgauge-bench"), tmp_path,
                    ["--pattern", "incast", "--iters", "20", "--burst", "64"], 4, env)
    err = capfd.readouterr().err
    assert res.returncode == 1, err
    assert "a message of rank " in err and " to rank 0 (tag " in err
    assert "was refused 2 times (receiver not ready: all 1 buffers of rank 0's window" in err
    assert "messages that rank 0 has not taken" in err
    assert "RG_PROTO_RNR_RETRY=1" in err


def test_window_settings_in_python() -> None:
    assert str(parse_window("adaptive:8:4096:reclaim")) == "adaptive:8:4096:reclaim"
    assert str(parse_window("fixed:512")) == "fixed:512"
    for bad, part in [("adaptive:9:8", "W_init 9 is above W_max 8"),
                      ("fixed:0", "1 to 65536"), ("fixed:70000", "1 to 65536"),
                      ("adaptive:8", "must be fixed:N")]:
        with pytest.raises(RxwinError, match=part):
            parse_window(bad)
    env = window_env(parse_window("adaptive:8:64"), 0.5)
    assert env == {"RG_PROTO_RXWIN": "adaptive:8:64", "RG_PROTO_RNR": "1",
                   "RG_PROTO_RNR_TIMER_MS": "0.5"}
    with pytest.raises(RxwinError, match=r"must be 0\.01 to 655\.36 ms"):
        window_env(parse_window("fixed:4"), 1000.0)
    with pytest.raises(RxwinError, match="needs RNR"):
        window_env(parse_window("fixed:4"), 1.0, rnr=False)


def _cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "railgauge.cli.main", *args],
                          capture_output=True, text=True, timeout=240)


def test_cli_eval_json_contract(native_tool: Callable[[str], str]) -> None:
    native_tool("railgauge-bench")  # the CLI finds it through RG_NATIVE_DIR the same way
    res = _cli(["rxwin", "eval", "--pattern", "halo3d", "-n", "4", "--transport", "shm",
                "--window", "adaptive:8:4096", "--rnr-timer-ms", "0.1", "--iters", "10",
                "--json"])
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert list(doc)[: len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert set(doc["mem_bytes"]) == {"min", "mean", "max"}
    assert doc["mem_bytes"]["min"] <= doc["mem_bytes"]["mean"] <= doc["mem_bytes"]["max"]
    assert doc["verified"] is True and doc["messages"] == 4 * 2 * 10
    assert doc["time_s"] > 0
    assert doc["window"] == "adaptive:8:4096" and doc["rnr_timer_ms"] == 0.1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "adaptive:64:8"], "W_init 64 is above W_max 8"),
        (["--rnr-timer-ms", "0.001"], "must be 0.01 to 655.36 ms"),
        (["--pattern", "ring"], "Invalid value for '--pattern'"),
    ],
)
def test_cli_eval_bad_input(args: list[str], message: str) -> None:
    base = ["rxwin", "eval", "-n", "2", "--json"]
    if "--pattern" not in args:
        base += ["--pattern", "alltoall"]
    res = _cli([*base, *args])
    assert res.returncode == 2, res.stderr
    assert message in res.stderr
    assert res.stderr.count("\n") == 1
