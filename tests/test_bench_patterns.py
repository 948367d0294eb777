"""`railgauge-bench msgrate`, `bcast` and `alltoall` (issue 8): message rate and two
collectives over a bare transport, OSU-style. Each pattern over shm on 2 and 4 ranks with
every byte checked (the JSON lines and their keys), the options of each pattern, the
transports beyond shm (tcp and rails on loopback), and the user errors. The byte pattern's
checker itself (that a wrong, stale or zeroed byte fails) is tested in C
(native/tests/test-bench.c, ctest -R bench.pattern)."""

from __future__ import annotations

import itertools
import json
import math
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import netns_testbed, run_cli
from railgauge.hoststate import reference_state_us
from railgauge.launcher import launch

QUICK = ("--time", "0.05", "--warmup", "0.01", "--min-iters", "3")


def _run(native_tool: Callable[[str], str], tmp_path: Path, pattern: str, nranks: int,
         *args: str, transport: str = "shm",
         env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    out = tmp_path / f"{pattern}.jsonl"
    res = launch([native_tool("railgauge-bench"), pattern, *QUICK, "--verify", "--json",
                  "--out", str(out), *args], nranks, transport=transport, env=env,
                 timeout_s=120)
    assert res.returncode == 0, res.failure
    return [json.loads(line) for line in out.read_text().splitlines()]


def _common(rec: dict[str, Any], pattern: str, nranks: int) -> None:
    assert rec["type"] == pattern and rec["transport"] == "shm"
    assert rec["ranks"] == nranks
    assert rec["verified"] is True and rec["bad_bytes"] == 0
    assert rec["seconds"] > 0 and rec["warmup_iterations"] >= 1
    assert isinstance(rec["transport_info"], dict)


@pytest.mark.native
@pytest.mark.parametrize("nranks", [2, 4])
def test_msgrate(native_tool: Callable[[str], str], tmp_path: Path, nranks: int) -> None:
    """One line per size; one pair per two ranks, each with its messages, its sender's
    time and its rate; the total is the pairs' rates summed."""
    recs = _run(native_tool, tmp_path, "msgrate", nranks, "--sizes", "8,64KiB",
                "--window", "16")
    assert [r["size_bytes"] for r in recs] == [8, 65536]
    for rec in recs:
        _common(rec, "msgrate", nranks)
        assert rec["window"] == 16 and rec["windows"] >= 3
        pairs = rec["pairs"]
        assert [(p["sender"], p["receiver"]) for p in pairs] == \
            [(2 * i, 2 * i + 1) for i in range(nranks // 2)]
        for p in pairs:
            assert p["messages"] == rec["windows"] * 16
            assert p["msgs_per_s"] == pytest.approx(p["messages"] / p["seconds"])
        assert rec["msgs_per_s"] == pytest.approx(sum(p["msgs_per_s"] for p in pairs))
        assert rec["bandwidth_MBps"] == pytest.approx(
            rec["msgs_per_s"] * rec["size_bytes"] / 1e6)


@pytest.mark.native
def test_msgrate_defaults_and_odd_ranks(native_tool: Callable[[str], str],
                                        tmp_path: Path) -> None:
    """8 B and a window of 64 unless told; with 3 ranks the last one idles; 0-byte
    messages are messages too."""
    (rec,) = _run(native_tool, tmp_path, "msgrate", 3)
    assert rec["size_bytes"] == 8 and rec["window"] == 64
    assert len(rec["pairs"]) == 1
    (rec,) = _run(native_tool, tmp_path, "msgrate", 2, "--size", "0")
    assert rec["size_bytes"] == 0 and rec["msgs_per_s"] > 0


@pytest.mark.native
@pytest.mark.parametrize("nranks", [2, 4])
def test_bcast(native_tool: Callable[[str], str], tmp_path: Path, nranks: int) -> None:
    """Sizes of the sweep (--min-size .. --max-size, doubling) with partial words; per
    size the median over iterations of the average, smallest and largest time over the
    ranks."""
    recs = _run(native_tool, tmp_path, "bcast", nranks, "--min-size", "1",
                "--max-size", "4KiB")
    assert [r["size_bytes"] for r in recs] == [1 << k for k in range(13)]
    for rec in recs:
        _common(rec, "bcast", nranks)
        assert rec["root"] == 0 and rec["algorithm"] == "binomial"
        assert rec["iterations"] >= 3
        assert 0 <= rec["min_us"] <= rec["avg_us"] <= rec["max_us"]


@pytest.mark.native
@pytest.mark.parametrize("algorithm", ["binomial", "flat"])
def test_bcast_root_and_algorithm(native_tool: Callable[[str], str], tmp_path: Path,
                                  algorithm: str) -> None:
    """Another root than 0 and both trees, on 4 and 5 ranks (a tree that is not full),
    every byte checked at every rank."""
    for nranks, root in ((4, 3), (5, 2)):
        recs = _run(native_tool, tmp_path, "bcast", nranks, "--sizes", "3,100KiB",
                    "--root", str(root), "--algorithm", algorithm)
        for rec in recs:
            assert rec["root"] == root and rec["algorithm"] == algorithm
            assert rec["verified"] is True and rec["ranks"] == nranks


@pytest.mark.native
@pytest.mark.parametrize("nranks", [2, 4])
def test_alltoall(native_tool: Callable[[str], str], tmp_path: Path, nranks: int) -> None:
    """Every block of every pair checked; the bandwidth is the bytes that crossed the
    transport, P (P - 1) s, over the median of the largest time."""
    recs = _run(native_tool, tmp_path, "alltoall", nranks, "--sizes", "5,64KiB,1MiB")
    assert [r["size_bytes"] for r in recs] == [5, 65536, 1 << 20]
    for rec in recs:
        _common(rec, "alltoall", nranks)
        moved = nranks * (nranks - 1) * rec["size_bytes"]
        assert rec["bytes_per_alltoall"] == moved
        assert rec["bandwidth_MBps"] == pytest.approx(moved / rec["max_us"])
        assert 0 <= rec["min_us"] <= rec["avg_us"] <= rec["max_us"]


@pytest.mark.native
@pytest.mark.parametrize("transport", ["tcp", "rails"])
def test_other_transports(native_tool: Callable[[str], str], tmp_path: Path,
                          transport: str) -> None:
    """The patterns run over the xport layer, so over any transport: tcp, and rails (two
    rails on loopback, messages striped from 64 KiB) on 4 ranks."""
    env = {"RG_RAILS_LIST": "127.0.0.1,127.0.0.2", "RG_RAILS_POLICY": "even",
           "RG_RAILS_STRIPE_MIN": "64KiB"} if transport == "rails" else None
    for pattern, size in (("msgrate", "8"), ("bcast", "256KiB"), ("alltoall", "256KiB")):
        (rec,) = _run(native_tool, tmp_path, pattern, 4, "--size", size,
                      transport=transport, env=env)
        assert rec["transport"] == transport and rec["verified"] is True
        if transport == "rails" and pattern != "msgrate":
            assert all(r["bytes_sent"] > 0 for r in rec["transport_info"]["rails"])


@pytest.mark.native
@pytest.mark.parametrize(("pattern", "nranks", "args", "says"), [
    ("bcast", 1, (), "bcast needs at least 2 ranks, not 1"),
    ("msgrate", 1, (), "msgrate needs at least 2 ranks"),
    ("bcast", 3, ("--root", "3"), "--root 3 is not a rank of 3"),
    ("alltoall", 4, ("--size", "600MiB"), "needs 4 x 629145600 B per buffer, above 2 GiB"),
    ("alltoall", 2, ("--sizes", "8,2GiB"), "2GiB is above the limit of 1 GiB"),
    ("msgrate", 2, ("--sizes", "8,eight"), "invalid size 'eight'"),
    ("bcast", 2, ("--window", "4"), "--window is an option of msgrate"),
    ("alltoall", 2, ("--root", "1"), "--root and --algorithm are options of bcast"),
    ("bcast", 2, ("--algorithm", "ring"), "--algorithm is binomial or flat, not 'ring'"),
    ("msgrate", 2, ("--window", "0"), "--window is not an integer 1 .. 1024"),
    ("bcast", 2, ("--size", "8", "--max-size", "1KiB"), "not both"),
    ("bcast", 2, ("--min-iters", "9", "--max-iters", "5"), "--min-iters is above"),
    ("alltoall", 2, ("--time", "0"), "--time is not seconds"),
])
def test_user_errors(native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str],
                     pattern: str, nranks: int, args: tuple[str, ...], says: str) -> None:
    """Fewer ranks than the pattern needs, a root out of range, sizes too large or not
    sizes, another pattern's options: exit status 2 and one line that says so."""
    res = launch([native_tool("railgauge-bench"), pattern, *QUICK, *args], nranks,
                 transport="shm", timeout_s=60)
    assert res.returncode == 2, res.failure
    err = capfd.readouterr().err
    assert says in err, err


@pytest.mark.native
def test_rails_bench_patterns_on_four_hosts(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`railgauge rails bench --pattern P --hosts 4` on a testbed of 4 hosts and 2 rails:
    one rank per host over both rails, every byte checked; bw keeps its contract; asking
    for more hosts than the testbed has, or another pattern's option, is a user error."""
    from railgauge.netns import save_state

    monkeypatch.setenv("RAILGAUGE_TESTBED_STATE", str(tmp_path / "testbed.json"))
    with netns_testbed(4, 2, "400mbit,800mbit") as tb:
        save_state(tb)   # as `railgauge testbed up` records it, for the CLI
        quick = ("--time", "0.3", "--warmup", "0.1", "--json")
        for pattern, size in (("msgrate", "8"), ("bcast", "1MiB"), ("alltoall", "256KiB")):
            proc = run_cli("rails", "bench", "--policy", "even", "--pattern", pattern,
                        "--hosts", "4", "--size", size, *quick)
            assert proc.returncode == 0, proc.stderr
            rec = json.loads(proc.stdout)
            assert rec["pattern"] == pattern and rec["hosts"] == 4
            assert rec["policy"] == "even" and rec["verified"] is True
            assert [r["name"] for r in rec["rails"]] == ["rail0", "rail1"]
            if pattern == "msgrate":
                assert rec["msgs_per_s"] > 0
            else:
                assert 0 < rec["min_us"] <= rec["avg_us"] <= rec["max_us"]
                assert all(r["bytes"] > 0 for r in rec["rails"])  # striped from 256 KiB
        proc = run_cli("rails", "bench", "--size", "1MiB", *quick)
        assert proc.returncode == 0, proc.stderr
        rec = json.loads(proc.stdout)
        assert {"policy", "size_bytes", "bandwidth_MBps", "rails"} <= set(rec)
        for args, says in ((("--pattern", "bcast", "--hosts", "5"), "the testbed has 4 hosts"),
                           (("--pattern", "alltoall", "--window", "4"), "--window is an "
                            "option of bw and msgrate"),
                           (("--hosts", "4"), "bw runs between 2 hosts"),
                           (("--pattern", "msgrate", "--bidir"), "--bidir is an option")):
            proc = run_cli("rails", "bench", *args)
            assert proc.returncode == 2 and says in proc.stderr, proc.stderr


def _prtt_small(native_tool: Callable[[str], str], tmp_path: Path,
                *args: str) -> list[dict[str, Any]]:
    """PRTT over shm at 1 B, 1 KiB and 8 KiB with short points and ARGS: its records."""
    out = tmp_path / "p.jsonl"
    res = launch([native_tool("railgauge-bench"), "prtt", "--sizes", "1,1024,8KiB", *args,
                  "--point-budget", "0.05", "--min-reps", "12", "--out", str(out)], 2,
                 transport="shm", timeout_s=120)
    assert res.returncode == 0, res.failure
    return [json.loads(line) for line in out.read_text().splitlines()]


def _kept_passes(rec: dict[str, Any], tol: float) -> list[float]:
    """The passes railgauge-bench keeps of a record (prtt.c, rg__bench_acc_finish): those
    whose probes before and after both lie in the run's reference state (``state_band_us``;
    every pass where the record has none, or none was made in it) within (1 + tol) of the
    fastest of them."""
    iqm = rec["pass_iqm_us"]
    before = rec.get("pass_state_us") or [0.0] * len(iqm)
    after = rec.get("pass_state_after_us") or [0.0] * len(iqm)
    lo, hi = rec.get("state_band_us") or (0.0, math.inf)

    def in_ref(st: float) -> bool:
        return st <= 0 or lo <= st <= hi

    pool = [v for v, b, a in zip(iqm, before, after, strict=True)
            if in_ref(b) and in_ref(a)] or iqm
    return [v for v in pool if v <= min(pool) * (1.0 + tol)]


@pytest.mark.native
def test_prtt_in_passes(native_tool: Callable[[str], str], tmp_path: Path) -> None:
    """--passes 3: every point carries its three passes' interquartile means, the kept ones
    within pass_tol of the fastest, the pooled samples of the kept passes; a progress record
    per size visited; d chosen once per size; the same orders for the same seed."""
    recs = _prtt_small(native_tool, tmp_path, "--passes", "3", "--pass-tol", "0.5",
                       "--order-seed", "7")
    head = recs[0]
    assert head["params"]["passes"] == 3 and head["params"]["order_seed"] == 7
    progress = [r for r in recs if r["type"] == "progress"]
    assert [p["visits"] for p in progress] == list(range(1, 10))
    assert all(p["of"] == 9 and p["passes"] == 3 for p in progress)
    # Each pass visits every size once, in its own order.
    for k in range(3):
        assert sorted(p["s"] for p in progress[3 * k : 3 * k + 3]) == [1, 1024, 8192]
    points = [r for r in recs if r["type"] in ("prtt", "orecv")]
    assert len(points) == 12 and recs[-1]["type"] == "footer" and recs[-1]["points"] == 12
    for r in points:
        assert r["passes"] == 3 and 1 <= r["passes_kept"] <= 3
        iqm = r["pass_iqm_us"]
        assert len(iqm) == 3 and all(v > 0 for v in iqm)
        kept = _kept_passes(r, 0.5)
        assert r["passes_kept"] == len(kept)
        assert min(kept) * 0.5 <= r["iqm_us"] <= max(kept) * 2.0
        assert r["count"] >= 12 * r["passes_kept"] // 3
    by = {(r["type"], r["n"], r["d_us"] > 0, r["s"]): r for r in points}
    for s in (1, 1024, 8192):
        assert by[("prtt", 16, True, s)]["d_us"] == by[("orecv", 16, True, s)]["d_us"] > 0


@pytest.mark.native
def test_prtt_confirmation_passes(native_tool: Callable[[str], str], tmp_path: Path) -> None:
    """--confirm 2: a point whose fastest pass no other pass confirms within pass_tol gets
    up to two more passes, a confirmed one none. With a pass_tol of 0.1% almost no point
    is confirmed by the two planned passes, so most get both extra passes; every record
    ends confirmed or with all four, and the progress records count the planned passes
    only."""
    recs = _prtt_small(native_tool, tmp_path, "--passes", "2", "--confirm", "2",
                       "--pass-tol", "0.001")
    assert recs[0]["params"]["passes"] == 2 and recs[0]["params"]["confirm"] == 2
    progress = [r for r in recs if r["type"] == "progress"]
    assert [p["visits"] for p in progress] == list(range(1, 7))
    points = [r for r in recs if r["type"] in ("prtt", "orecv")]
    assert len(points) == 12 and recs[-1]["status"] == "ok"
    # The probes of the host's state: before a visit of a size and after each pass of its
    # kinds, the probe after one kind's pass being the one before the next kind's.
    planned = {v for r in points for v in r["pass_state_us"][:2] + r["pass_state_after_us"][:2]}
    probes = {v for r in points for v in r["pass_state_us"] + r["pass_state_after_us"]}
    by = {(r["type"], r["n"], r["d_us"] > 0, r["s"]): r for r in points}
    for s in (1, 1024, 8192):
        chain = [by[("prtt", 1, False, s)], by[("prtt", 16, False, s)],
                 by[("prtt", 16, True, s)], by[("orecv", 16, True, s)]]
        for j in range(2):  # the planned passes measure every kind, in this order
            for first, then in itertools.pairwise(chain):
                assert first["pass_state_after_us"][j] == then["pass_state_us"][j] > 0
    # Every probe in the reference band (one state of the host): every pass counts. Over
    # shm the probe is the cache line between the two ranks, and its band 1.6x wide.
    assert recs[0]["params"]["state_probe"] == "c2c"
    gap = recs[0]["params"]["state_gap"]
    assert gap == 1.6
    lo, hi = points[0]["state_band_us"]
    assert all(r["state_band_us"] == [lo, hi] for r in points)
    assert hi == pytest.approx(lo * gap) and lo <= points[0]["state_mid_us"] <= hi
    one_state = all(lo <= v <= hi for v in planned | probes)
    # railgauge.hoststate finds the same reference state from the records alone (the
    # header among them gives the band's width).
    assert reference_state_us(recs) == points[0]["state_mid_us"]
    assert reference_state_us(points, gap) == points[0]["state_mid_us"]
    for r in points:
        iqm = r["pass_iqm_us"]
        assert 2 <= r["passes"] <= 4 and len(iqm) == r["passes"]
        assert len(r["pass_state_us"]) == r["passes"] and min(r["pass_state_us"]) > 0
        assert len(r["pass_state_after_us"]) == r["passes"]
        assert min(r["pass_state_after_us"]) > 0
        near = _kept_passes(r, 0.001)
        # Confirmed after the planned passes: no more; else more until confirmed or four
        # (with two states of the host, a point has more while not measured twice alike
        # in the state holding most of the run's probes).
        first = [v for v in iqm[:2] if v <= min(iqm[:2]) * 1.001]
        if len(first) >= 2 and one_state:
            assert r["passes"] == 2
        elif len(first) < 2 and one_state:
            assert len(near) >= 2 or r["passes"] == 4, r
        assert r["passes_kept"] == len(near)
    # Most points get more passes, not all: once in CI (the sanitizer build) only 5 of 12
    # had more, not reproduced since (8-12 of 12 in 25 runs of that build, quiet and beside
    # two busy loops). The likely cause: on a loaded host a round trip can be a scheduler
    # tick, and two passes of such ticks agree within 0.1%.
    assert sum(r["passes"] > 2 for r in points) >= 3


@pytest.mark.native
def test_prtt_given_reference_state(native_tool: Callable[[str], str], tmp_path: Path) -> None:
    """--state-ref: the run keeps the reference state it is given (a refinement keeps its
    sweep's), not the one its probes choose. Given a state far above every probe, no pass
    is in it: the confirmation passes measure every point again, and every record says
    in_state false; given the state the run chooses by itself, every record is in it."""
    recs = _prtt_small(native_tool, tmp_path, "--passes", "2", "--confirm", "1",
                       "--state-ref", "1e6")
    assert recs[0]["params"]["state_ref_us"] == 1e6
    w = recs[0]["params"]["state_gap"] ** 0.5
    points = [r for r in recs if r["type"] in ("prtt", "orecv")]
    assert len(points) == 12
    for r in points:
        assert r["state_mid_us"] == 1e6
        assert r["state_band_us"] == pytest.approx([1e6 / w, 1e6 * w])
        assert r["in_state"] is False and r["passes"] == 3
        # No pass in the state: the fastest passes of all are kept, as without a state.
        assert r["passes_kept"] == len(_kept_passes({**r, "state_band_us": None}, 0.1))
    own = _prtt_small(native_tool, tmp_path, "--passes", "2")
    own_points = [r for r in own if r["type"] in ("prtt", "orecv")]
    assert "state_ref_us" not in own[0]["params"]
    # How many points are in the state the run chose depends on how often the host changed
    # state during it (under the sanitizer build on a loaded host 7 of 12 once were): what
    # must hold is that a record is in state exactly when one of its passes has both its
    # probes in the chosen band, and that the band holds some.
    for r in own_points:
        lo, hi = r["state_band_us"]
        made_in = any(all(st <= 0 or lo <= st <= hi for st in (b, a))  # <= 0: no probe
                      for b, a in zip(r["pass_state_us"], r["pass_state_after_us"], strict=True))
        assert r["in_state"] is made_in, r
    assert any(r["in_state"] for r in own_points)
    mid = own_points[0]["state_mid_us"]
    given = _prtt_small(native_tool, tmp_path, "--passes", "2", "--state-ref", f"{mid!r}")
    assert all(r["state_mid_us"] == mid for r in given if r["type"] in ("prtt", "orecv"))


def _probes_of(recs: list[dict[str, Any]]) -> list[float]:
    return [v for r in recs if r["type"] in ("prtt", "orecv")
            for v in r["pass_state_us"] + r["pass_state_after_us"] if v > 0]


@pytest.mark.native
def test_prtt_state_probes(native_tool: Callable[[str], str], tmp_path: Path) -> None:
    """The probe of the host's state: by default (auto) the cache line bounced between the
    two ranks when they share a host, its one-way time in us, a band 1.6x wide; asked for
    prtt, PRTT(16,0,1), a band 1.25x wide. The line's one-way time is tens to hundreds of
    ns on any CPU; PRTT(16,0,1) is 16 messages and the answer over shm, slower still."""
    from railgauge.hoststate import C2C_GAP, STATE_GAP, header_gap, probe_name

    line = _prtt_small(native_tool, tmp_path, "--passes", "2")
    assert line[0]["params"]["state_probe"] == "c2c"
    assert "state_probe_note" not in line[0]["params"]
    assert header_gap(line[0]) == C2C_GAP and probe_name(line[0]) == "c2c"
    c2c = _probes_of(line)
    assert c2c and all(0.001 < v < 2.0 for v in c2c)
    prtt = _prtt_small(native_tool, tmp_path, "--passes", "2", "--state-probe", "prtt")
    assert prtt[0]["params"]["state_probe"] == "prtt"
    assert header_gap(prtt[0]) == STATE_GAP and probe_name(prtt[0]) == "PRTT(16,0,1)"
    assert sorted(_probes_of(prtt))[len(_probes_of(prtt)) // 2] > sorted(c2c)[len(c2c) // 2]


@pytest.mark.native
def test_prtt_state_probe_between_hosts(native_tool: Callable[[str], str],
                                        tmp_path: Path) -> None:
    """Ranks on two hosts (here: two UTS namespaces with their own host names, which
    railgauge's host identity reads) share no memory: under auto the run probes with
    PRTT(n,0,1) and its header says why; asked for c2c, it fails with that reason."""
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-u", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("needs unshare -u (root)")
    bench = native_tool("railgauge-bench")

    def run(*args: str) -> tuple[int, Path]:
        out = tmp_path / f"h{len(args)}.jsonl"
        inner = " ".join([shlex.quote(bench), "prtt", "--sizes", "1", "--passes", "2",
                          "--point-budget", "0.05", "--out", shlex.quote(str(out)), *args])
        res = launch(["unshare", "-u", "sh", "-c", f'hostname "h$RG_RANK" && exec {inner}'],
                     2, transport="tcp", timeout_s=120)
        return res.returncode, out

    rc, out = run()
    assert rc == 0
    head = json.loads(out.read_text().splitlines()[0])
    assert head["params"]["state_probe"] == "prtt" and head["params"]["state_gap"] == 1.25
    assert "another host" in head["params"]["state_probe_note"]
    rc, _ = run("--state-probe", "c2c")
    assert rc == 1


@pytest.mark.native
@pytest.mark.parametrize(("args", "says"), [
    (("pingpong", "--passes", "2"), "options of the prtt pattern"),
    (("pingpong", "--state-ref", "2"), "options of the prtt pattern"),
    (("prtt", "--state-ref", "2"), "--state-ref needs --passes 2 or more"),
    (("prtt", "--state-probe", "c2c"), "--state-probe needs --passes 2 or more"),
    (("prtt", "--passes", "2", "--state-probe", "cache"),
     "--state-probe must be auto, c2c or prtt"),
    (("pingpong", "--state-probe", "prtt"), "options of the prtt pattern"),
    (("prtt", "--passes", "2", "--state-ref", "0"), "--state-ref must be microseconds"),
    (("prtt", "--confirm", "1"), "--confirm needs --passes 2 or more"),
    (("prtt", "--passes", "8", "--confirm", "2"), "at most 9 passes in all"),
    (("prtt", "--passes", "2", "--confirm", "9"), "--confirm must be an integer 0..8"),
    (("prtt", "--passes", "10"), "--passes must be an integer 1..9"),
    (("prtt", "--pass-tol", "0"), "--pass-tol must be in"),
    (("prtt", "--order-seed", "-1"), "--order-seed must be"),
])
def test_prtt_passes_usage(native_tool: Callable[[str], str], capfd: pytest.CaptureFixture[str],
                           args: tuple[str, ...], says: str) -> None:
    res = launch([native_tool("railgauge-bench"), *args, "--sizes", "8"], 2, transport="shm",
                 timeout_s=60)
    assert res.returncode == 2, res.failure
    assert says in capfd.readouterr().err


def test_count_points_in_passes(tmp_path: Path) -> None:
    """The gauge's progress counts a run in passes by its progress records until the
    records are written at the end."""
    from railgauge.measure import _count_points

    f = tmp_path / "m.jsonl"
    f.write_text('{"type":"header"}\n'
                 '{"type":"progress","pass":1,"passes":3,"visits":4,"of":30,"s":512}\n'
                 '{"type":"progress","pass":1,"passes":3,"visits":6,"of":30,"s":64}\n')
    assert _count_points(f) == (6, 64)
    f.write_text(f.read_text() + '{"type":"prtt","n":1,"s":8}\n{"type":"prtt","n":16,"s":9}\n')
    assert _count_points(f) == (2, 9)


@pytest.mark.native
def test_c2c_measures_the_cache_line_between_two_cpus(native_tool: Callable[[str], str],
                                                      tmp_path: Path) -> None:
    """railgauge-bench c2c: one JSON line with the one-way time of a cache line between the
    first two CPUs of the process (or --cpus), its chunks' spread; --out writes it there."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    out = tmp_path / "c.json"
    res = subprocess.run([native_tool("railgauge-bench"), "c2c", "--chunks", "5",
                          "--round-trips", "200", "--out", str(out)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    rec = json.loads(out.read_text())
    cpus = sorted(os.sched_getaffinity(0))[:2]
    assert rec["type"] == "c2c" and rec["cpus"] == cpus
    assert rec["chunks"] == 5 and rec["round_trips"] == 200
    # A cache line between two CPUs takes nanoseconds to microseconds, never nothing.
    assert 0 < rec["min_ns"] <= rec["one_way_ns"] <= rec["max_ns"] < 1e6, rec


@pytest.mark.native
@pytest.mark.parametrize(("args", "says", "rc"), [
    (("--cpus", "0,0"), "two different CPU numbers", 2),
    (("--cpus", "0"), "two CPU numbers A,B", 2),
    (("--cpus", "0,99999"), "two different CPU numbers", 2),
    (("--chunks", "0"), "--chunks must be an integer 1..1000", 2),
    (("--round-trips", "x"), "--round-trips must be an integer", 2),
    (("--bogus", "1"), "unknown option", 2),
    (("--chunks",), "without its value", 2),
    (("--out", "/nonexistent-dir/c.json"), "cannot open", 1),
])
def test_c2c_usage(native_tool: Callable[[str], str], args: tuple[str, ...], says: str,
                   rc: int) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    res = subprocess.run([native_tool("railgauge-bench"), "c2c", *args], capture_output=True,
                         text=True, timeout=60, check=False)
    assert res.returncode == rc and says in res.stderr, (res.returncode, res.stderr)


@pytest.mark.native
def test_c2c_on_one_cpu_says_so(native_tool: Callable[[str], str]) -> None:
    """A process that may run on one CPU only has no pair to measure: exit 2, and the
    gauge's measure_c2c gives None for it rather than failing."""
    from railgauge import hoststate

    cpu = min(os.sched_getaffinity(0))
    res = subprocess.run([native_tool("railgauge-bench"), "c2c"], capture_output=True,
                         text=True, timeout=60, check=False,
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    assert res.returncode == 2 and "needs two CPUs" in res.stderr, res.stderr
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        assert hoststate.measure_c2c() is None
    finally:
        os.sched_setaffinity(0, saved)


def test_c2c_text(tmp_path: Path) -> None:
    """The gauge's c2c record in words; a placement that moved during the run is named;
    files without the record (or with a broken line) give None or skip the line."""
    from railgauge.gauge import append_c2c
    from railgauge.hoststate import c2c_text

    path = tmp_path / "m.jsonl"
    path.write_text('{"type": "header"}\n{"type": "c2c", broken\n')
    assert c2c_text(path) is None
    assert c2c_text(tmp_path / "missing.jsonl") is None
    append_c2c(path, None, None)
    assert c2c_text(path) is None
    append_c2c(path, {"type": "c2c", "cpus": [0, 1], "one_way_ns": 31.2},
               {"type": "c2c", "cpus": [0, 1], "one_way_ns": 33.0})
    assert c2c_text(path) == "31 ns before, 33 ns after (CPUs 0 and 1)"
    append_c2c(path, {"type": "c2c", "cpus": [2, 3], "one_way_ns": 31.0},
               {"type": "c2c", "cpus": [2, 3], "one_way_ns": 155.0})
    text = c2c_text(path)  # the last record counts
    assert text is not None and text.startswith("31 ns before, 155 ns after (CPUs 2 and 3)")
    assert "placement changed during the run" in text
    append_c2c(path, None, {"type": "c2c", "cpus": [0, 1], "one_way_ns": 13.0})
    assert c2c_text(path) == "13 ns after (CPUs 0 and 1)"
