"""The shared receive window in the simulator (issue 9): `railgauge-sim rxwin`,
`railgauge rxwin eval --sim` and `railgauge tune rxwin`.

The small cases are worked by hand from L, o, g and the RNR timer with the event rules
of docs/sim.md ("The receive window"): a message lands in a posted buffer once the
receiver's NIC is free (taking it for g), waits for the CPU, which handles it for o; a
pass handles the messages landed when it starts, and at its end the window is checked
(a limit event when fewer buffers than the limit are posted) and the pass's buffers go
back; an arrival that finds none posted is refused, and its sender sends it again
L + T later (o on its CPU, arriving o + L after); an eager send is done when the
receiver's ACK comes, L after the handling ended.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, find_native_tool
from railgauge.rxwin import CONTRACT_KEYS, RxwinError, sim_params, sim_rxwin
from railgauge.tune import TuneError, tune_rxwin

#: What the runtime counts over shm (tests/test_rxwin.py): a window buffer, a medium
#: staging copy (a 512-byte message with its 16-byte header).
BUF = 88 + 24 + 56 + 16384
STAGE = 160 + 56 + 4096


def sim(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([find_native_tool("railgauge-sim"), "rxwin", *args, "--no-progress"],
                         capture_output=True, text=True, timeout=120, check=False)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def sim_json(*args: str) -> dict[str, Any]:
    doc = json.loads(sim(*args, "--json", "--per-rank").stdout)
    assert isinstance(doc, dict)
    return doc


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.setdefault("RG_NATIVE_DIR", str(Path(find_native_tool("railgauge-sim")).parent))
    return subprocess.run([sys.executable, "-m", "railgauge.cli.main", *args],
                          capture_output=True, text=True, timeout=240, check=False, env=env)


def write_model(path: Path, L: float = 5.0, o: float = 1.0, g: float = 0.5) -> Path:
    path.write_text(json.dumps({"model": "loggp", "ranges": [
        {"from_bytes": 1, "to_bytes": None, "L_us": L, "o_us": o, "g_us": g,
         "G_us_per_byte": 0.0, "O_us_per_byte": 0.0}]}))
    return path


def test_window_of_one_two_senders_by_hand() -> None:
    """incast on 3 ranks, one message each, fixed:1, L = 5, o = 1, g = 0.5, T = 10 us.
    Both send at 0 and arrive at o + L = 6. Rank 1's lands (the NIC busy to 6.5), is
    handled 6..7 (its pass; its buffer back at 7). Rank 2's lands at 6.5: nothing posted,
    refused; retried at 6.5 + L + T = 21.5, arrives 27.5, handled 27.5..28.5, ACKed at
    33.5, when rank 2's send is done: the makespan. Rank 1's ACK at 7 + 5 = 12. Each pass
    ends with no buffer posted (0 < limit 1): two limit events."""
    d = sim_json("--pattern", "incast", "-n", "3", "--burst", "1", "--iters", "1",
                 "--window", "fixed:1", "--rnr-timer-ms", "0.01", "--L", "5", "--o", "1",
                 "--g", "0.5")
    assert list(d)[:len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert d["makespan_us"] == pytest.approx(33.5, abs=1e-9)
    assert d["time_s"] == pytest.approx(33.5e-6, rel=1e-12)
    assert (d["rnr"], d["retries"], d["limit_events"], d["messages"]) == (1, 1, 2, 2)
    assert d["verified"] is True and d["delivered"] == 2
    per = d["per_rank"]
    assert [r["finish_us"] for r in per] == pytest.approx([28.5, 12.0, 33.5], abs=1e-9)
    assert (per[0]["rnr_sent"], per[2]["rnr_recv"], per[2]["retries"]) == (1, 1, 1)
    # Memory: the window's buffer and the refusal buffer everywhere; the senders also
    # one staging copy (kept until the ACK, then cached, as the runtime does).
    assert [r["mem_high_water"] for r in per] == [2 * BUF, 2 * BUF + STAGE, 2 * BUF + STAGE]
    assert d["mem_bytes"] == {"min": 2 * BUF, "mean": pytest.approx((6 * BUF + 2 * STAGE) / 3),
                              "max": 2 * BUF + STAGE}


def test_limit_events_grow_the_window_by_hand() -> None:
    """incast on 5 ranks, adaptive:1:8 (first limit 1), L = 5, o = 1, g = 0.25, T = 10 us.
    Arrivals at 6, 6.25, 6.5, 6.75: the first takes the one buffer, the other three are
    refused and come back at 27.25, 27.5, 27.75. At 27.25 the first pass's end is
    checked: 0 posted < 1, event 1, W = 2 (limit 1); two buffers posted, one taken; the
    message at 27.5 takes the other and the one at 27.75 is refused again (due 42.75,
    arriving 48.75). The pass of 27.25..28.25 ends with 0 posted: event 2, W = 4 (limit
    2). The last message is handled 48.75..49.75 and ACKed at 54.75."""
    d = sim_json("--pattern", "incast", "-n", "5", "--burst", "1", "--iters", "1",
                 "--window", "adaptive:1:8", "--rnr-timer-ms", "0.01", "--L", "5", "--o",
                 "1", "--g", "0.25")
    r0 = d["per_rank"][0]
    assert (d["limit_events"], d["rnr"], d["retries"]) == (2, 4, 4)
    assert (r0["window"], r0["window_peak"], r0["limit_events"]) == (4, 4, 2)
    assert d["makespan_us"] == pytest.approx(54.75, abs=1e-9)
    assert [r["finish_us"] for r in d["per_rank"]] == pytest.approx(
        [49.75, 12.0, 33.25, 34.25, 54.75], abs=1e-9)
    assert r0["mem_high_water"] == r0["mem_pool"] == (4 + 1) * BUF
    assert d["verified"] is True


def test_growth_reaches_w_max_and_stops() -> None:
    """A burst far above the window: the window doubles per limit event up to W_max and
    never beyond; the pool holds exactly the window and the refusal buffer."""
    d = sim_json("--pattern", "incast", "-n", "9", "--burst", "64", "--iters", "3",
                 "--window", "adaptive:2:32", "--rnr-timer-ms", "0.01", "--L", "5", "--o",
                 "1", "--g", "0.1")
    r0 = d["per_rank"][0]
    assert r0["window"] == r0["window_peak"] == 32
    assert r0["limit_events"] >= 4  # 2 -> 4 -> 8 -> 16 -> 32
    assert r0["mem_pool"] == 33 * BUF
    assert d["rnr"] > 0 and d["retries"] == d["rnr"]
    assert d["verified"] is True and d["messages"] == 8 * 64 * 3
    # Every refusal is one retry of that sender; the senders' and receiver's counts agree.
    assert sum(r["rnr_recv"] for r in d["per_rank"]) == r0["rnr_sent"] == d["rnr"]


def test_unexpected_and_parked_messages_cost_memory() -> None:
    """Refusals reorder a sender's messages: those ahead of their turn are parked (their
    bytes counted as unexpected, 96 + 512 each) and still delivered in order."""
    d = sim_json("--pattern", "incast", "-n", "4", "--burst", "16", "--iters", "2",
                 "--window", "fixed:2", "--rnr-timer-ms", "0.01", "--L", "5", "--o", "1",
                 "--g", "0.2")
    r0 = d["per_rank"][0]
    assert r0["parked"] > 0
    assert r0["mem_high_water"] >= 3 * BUF + 96 + 512
    assert r0["mem_unexpected"] == 0  # everything taken in the end
    assert d["verified"] is True and d["out_of_order"] == 0 and d["duplicates"] == 0


def test_reclaim_shrinks_after_quiet_periods() -> None:
    """mix with a quiet period (50 us) shorter than its computation (200 to 800 us): the
    windows grow in the bursts and shrink in between; without :reclaim they never do."""
    base = ["--pattern", "mix", "-n", "8", "--iters", "12", "--burst", "32",
            "--compute-us", "400", "--rnr-timer-ms", "0.01", "--quiet-us", "50", "--L", "5",
            "--o", "1", "--g", "0.2"]
    rec = sim_json(*base, "--window", "adaptive:2:256:reclaim")
    keep = sim_json(*base, "--window", "adaptive:2:256")
    assert rec["shrinks"] > 0 and keep["shrinks"] == 0
    assert any(r["window"] < r["window_peak"] for r in rec["per_rank"])
    assert all(r["window"] == r["window_peak"] for r in keep["per_rank"])
    for r in rec["per_rank"]:
        assert 2 <= r["window"] <= r["window_peak"] <= 256
        assert r["mem_pool"] % BUF == 0
    assert rec["verified"] is True and keep["verified"] is True


def test_rnr_timer_trades_time_for_memory() -> None:
    """A small window under incast: a long timer costs time (the paper's figure 3)."""
    args = ["--pattern", "incast", "-n", "16", "--burst", "32", "--iters", "2", "--window",
            "adaptive:8:16", "--L", "5", "--o", "1", "--g", "0.2"]
    short = sim_json(*args, "--rnr-timer-ms", "0.01")
    long_ = sim_json(*args, "--rnr-timer-ms", "10")
    assert long_["time_s"] > short["time_s"]
    assert short["rnr"] > 0 and long_["rnr"] > 0


def test_alltoall_1024_ranks() -> None:
    """One phase of alltoall on 1024 ranks: 1,047,552 messages, all checked."""
    d = sim_json("--pattern", "alltoall", "-n", "1024", "--iters", "1", "--window",
                 "fixed:512", "--L", "5", "--o", "1", "--g", "0.5")
    assert d["messages"] == d["delivered"] == 1024 * 1023
    assert d["verified"] is True
    assert d["wall_s"] < 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "adaptive:64:8"], "W_init 64 is above W_max 8"),
        (["--window", "fixed:0"], "must be 1 to 65536 buffers"),
        (["--limit", "0"], "--limit 0: must be 1 to"),
        (["--window", "adaptive:8:64", "--limit", "9"], "a limit of 9 is out of range"),
        (["--rnr-timer-ms", "0.001"], "must be 0.01 to 655.36"),
        (["--rnr-timer-ms", "700"], "must be 0.01 to 655.36"),
        (["--pattern", "ring"], "--pattern 'ring': unknown"),
        (["-n", "1"], "-n 1: must be 2 to 4096"),
        (["--window", "adaptive:8:64:shrink"], "unknown option 'shrink'"),
    ],
)
def test_native_bad_input(args: list[str], message: str) -> None:
    base = {"--pattern": "alltoall", "-n": "4"}
    for k in list(base):
        if k in args:
            del base[k]
    res = sim(*[x for kv in base.items() for x in kv], *args, "--L", "1", check=False)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr


def test_python_sim_rxwin_and_params(tmp_path: Path) -> None:
    params = sim_params(write_model(tmp_path / "m.json"))
    doc = sim_rxwin("halo3d", 27, "adaptive:8:4096", params=params, iters=3,
                    tool=find_native_tool("railgauge-sim"))
    assert list(doc)[:len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert doc["messages"] == 27 * 6 * 3 and doc["verified"] is True
    assert doc["simulated"] is True
    with pytest.raises(RxwinError, match="needs a model"):
        sim_params(None)
    with pytest.raises(RxwinError, match="no such file"):
        sim_params(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RxwinError, match="cannot read the model"):
        sim_params(tmp_path / "bad.json")
    with pytest.raises(RxwinError, match="--model replaces --L"):
        sim_params(tmp_path / "m.json", L=1.0)
    with pytest.raises(RxwinError, match="W_init 9 is above W_max 8"):
        sim_rxwin("incast", 4, "adaptive:9:8", params=params)
    with pytest.raises(RxwinError, match="2 to 4096"):
        sim_rxwin("incast", 1, "fixed:4", params=params)


def test_cli_eval_sim_contract(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    res = cli("rxwin", "eval", "--sim", "--pattern", "mix", "-n", "16", "--model", str(model),
              "--window", "adaptive:8:4096", "--rnr-timer-ms", "0.1", "--iters", "6", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert list(doc)[:len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert set(doc["mem_bytes"]) == {"min", "mean", "max"}
    assert doc["mem_bytes"]["min"] <= doc["mem_bytes"]["mean"] <= doc["mem_bytes"]["max"]
    assert doc["verified"] is True and doc["time_s"] > 0
    # mix on 16 ranks (4 x 4 grid): alltoall, halo2d (4 neighbours), incast (burst 32).
    assert doc["messages"] == 2 * (16 * 15 + 16 * 4 + 15 * 32)
    assert doc["window"] == "adaptive:8:4096" and doc["rnr_timer_ms"] == 0.1
    assert len(doc["per_rank"]) == 16


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "adaptive:64:8"], "W_init 64 is above W_max 8"),
        (["--rnr-timer-ms", "0.001"], "must be 0.01 to 655.36 ms"),
        (["--limit", "0"], "Invalid value for '--limit'"),
        (["-n", "1"], "Invalid value for '-n'"),
        (["--pattern", "ring"], "Invalid value for '--pattern'"),
        (["--model", "/nonexistent/model.json"], "no such file"),
        ([], "--sim needs a model"),
        (["--no-rnr", "--L", "1"], "the simulator models the window with RNR"),
    ],
)
def test_cli_eval_sim_bad_input(args: list[str], message: str) -> None:
    base = ["rxwin", "eval", "--sim", "-n", "4", "--json"]
    if "--pattern" not in args:
        base += ["--pattern", "alltoall"]
    if args and args[0] in ("--window", "--rnr-timer-ms", "--limit", "-n", "--pattern"):
        base += ["--L", "1"]
    res = cli(*base, *args)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr
    assert res.stderr.count("\n") <= 3


def test_cli_model_only_with_sim(tmp_path: Path) -> None:
    res = cli("rxwin", "eval", "--pattern", "alltoall", "-n", "2", "--L", "1")
    assert res.returncode == 2 and "only with --sim" in res.stderr


def test_tune_rxwin_suggests_least_memory_within_tolerance(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    res = tune_rxwin("incast", model, tool=find_native_tool("railgauge-sim"), nranks=16,
                     iters=3, w_inits=(4, 8), w_maxes=(16, 64, 256), timers_ms=(0.01, 1.0))
    assert len(res.table) == 2 * 3 * 2
    best = min(r.time_s for r in res.table)
    assert res.best_time_s == best
    ok = [r for r in res.table if r.time_s <= best * 1.02]
    assert res.choice in ok
    assert res.choice.mem_mean == min(r.mem_mean for r in ok)
    # The table is sorted by memory.
    mems = [r.mem_mean for r in res.table]
    assert mems == sorted(mems)
    # A zero tolerance keeps only the fastest.
    strict = tune_rxwin("incast", model, tool=find_native_tool("railgauge-sim"), nranks=16,
                        iters=3, w_inits=(8,), w_maxes=(16, 256), timers_ms=(0.01, 1.0),
                        tolerance=0.0)
    assert strict.choice.time_s == strict.best_time_s


def test_tune_rxwin_bad_input(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    tool = find_native_tool("railgauge-sim")
    with pytest.raises(TuneError, match="W_init 64 is above every W_max"):
        tune_rxwin("incast", model, tool=tool, w_inits=(64,), w_maxes=(16, 32))
    with pytest.raises(TuneError, match=r"must be 0\.01 to 655\.36"):
        tune_rxwin("incast", model, tool=tool, timers_ms=(1000.0,))
    with pytest.raises(TuneError, match="no such file"):
        tune_rxwin("incast", tmp_path / "none.json", tool=tool)
    with pytest.raises(TuneError, match="unknown"):
        tune_rxwin("ring", model, tool=tool)
    with pytest.raises(TuneError, match="2 to 4096"):
        tune_rxwin("incast", model, tool=tool, nranks=1)


def test_cli_tune_rxwin_json_and_table(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    args = ["tune", "rxwin", "--model", str(model), "--pattern", "halo2d", "-n", "16",
            "--iters", "3", "--w-init", "8", "--w-max", "16,64", "--rnr-timer-ms", "0.1,1"]
    res = cli(*args, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    for key in ("w_init", "w_max", "rnr_timer_ms", "window", "time_s", "mem_bytes_mean",
                "best_time_s", "tolerance", "table"):
        assert key in doc
    assert doc["window"] == f"adaptive:{doc['w_init']}:{doc['w_max']}"
    assert len(doc["table"]) == 4
    text = cli(*args)
    assert text.returncode == 0, text.stderr
    assert "<- choice" in text.stdout and "RG_PROTO_RXWIN=adaptive:8:" in text.stdout
    bad = cli("tune", "rxwin", "--model", str(model), "--pattern", "incast", "--w-init", "64",
              "--w-max", "16")
    assert bad.returncode == 2 and "W_init 64 is above every W_max" in bad.stderr
    missing = cli("tune", "rxwin", "--model", str(tmp_path / "no.json"), "--pattern", "mix")
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_incast_events_grow_with_the_messages_not_their_square() -> None:
    """A thousand messages at one receiving NIC at once wait in one queue, served as the
    NIC frees (one event per service), not by every waiter trying again each time the
    NIC frees: the events per message stay flat from 64 to 512 senders (with every
    waiter trying again they grew with the senders: about 950 a message at 64 here)."""
    per_msg = []
    for n in (64, 512):
        d = sim_json("--pattern", "incast", "-n", str(n), "--window", "fixed:512",
                     "--iters", "2", "--L", "5", "--o", "1", "--g", "0.5")
        assert d["verified"] is True
        per_msg.append(d["events"] / d["messages"])
    assert per_msg[1] < 1.5 * per_msg[0], per_msg
    assert per_msg[1] < 20, per_msg
