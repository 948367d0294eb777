"""The simulator (`railgauge-sim`, `railgauge sim`): GOAL examples with end times worked
out by hand under LogGOPS (docs/sim.md), bad input, and the LogP closed form
of the dissemination barrier."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, find_native_tool
from fuzz_util import run_fuzzer

PINGPONG = """\
// A ping-pong: each side answers what it receives.
num_ranks 2
rank 0 {
  l1: send 8b to 1 tag 0
  l2: recv 8b from 1 tag 0
  l2 requires l1
}
rank 1 {
  l1: recv 8b from 0 tag 0   /* posted at time 0 */
  l2: send 8b to 0 tag 0
  l2 requires l1
}
"""

RNDV = """\
num_ranks 2
rank 0 { l1: send 100b to 1
         l2: calc 1000
         l2 requires l1 }
rank 1 { l1: calc 50000
         l2: recv 100b from 0
         l2 requires l1 }
"""


def sim_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([find_native_tool("railgauge-sim"), *args], capture_output=True,
                          text=True, timeout=120, check=False)


def sim_json(*args: str) -> dict:
    proc = sim_tool(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) >= {"makespan_us", "events", "wall_s"}
    return doc


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    env.setdefault("RG_NATIVE_DIR", str(Path(find_native_tool("railgauge-sim")).parent))
    return subprocess.run([sys.executable, "-m", "railgauge.cli.main", *args],
                          capture_output=True, text=True, timeout=120, check=False, env=env)


def write(tmp_path: Path, text: str, name: str = "s.goal") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_pingpong(tmp_path: Path) -> None:
    # L=10 o=2 g=3: sent at 0, arrives 12, handled 12..14; the answer waits for the CPU,
    # is sent at 14 (to 16), arrives 26 and is handled 26..28.
    doc = sim_json("goal", write(tmp_path, PINGPONG), "--L", "10", "--o", "2", "--g", "3")
    assert doc["finish_us"] == [28.0, 16.0]
    assert doc["makespan_us"] == 28.0
    assert list(doc)[:4] == ["makespan_us", "finish_us", "events", "wall_s"]
    # Per rank (one CPU each: overhead + wait + calc = finish): rank 0 sends 0..2 and
    # handles the answer 26..28; rank 1 handles 12..14 and answers 14..16.
    assert doc["overhead_us"] == [4.0, 4.0]
    assert doc["wait_us"] == [24.0, 12.0]
    assert doc["calc_us"] == [0.0, 0.0]
    assert doc["stats"] == {"overhead_us": {"min": 4.0, "mean": 4.0, "max": 4.0},
                            "wait_us": {"min": 12.0, "mean": 18.0, "max": 24.0},
                            "calc_us": {"min": 0.0, "mean": 0.0, "max": 0.0}}


def test_goal_spellings(tmp_path: Path) -> None:
    # LogGOPSim's forms ("8b", "8 b", tabs, CRLF, comments) and railgauge's
    # extensions (a bare byte count, kb/mb suffixes) all read the same sizes.
    text = ("num_ranks 2\r\n// c\r\nrank 0 {\r\n\tl1: send 1 b to 1 tag 3 cpu 0 nic 0\r\n"
            "\tl2: send 1024 to 1 tag 4 // x\r\n/* y */\tl2 requires l1\r\n}\r\n"
            "rank 1 {\n r1: recv 1b from -1 tag -1\n r2: recv 1kb from 0 tag 4\n}\n")
    doc = sim_json("goal", write(tmp_path, text), "--L", "10", "--o", "2", "--G", "0.01")
    # Rank 0: 1 B at 0 (CPU to 2), 1024 B at 2 (CPU to 4, no O); rank 1 handles them at
    # 12..14 and 14..16 + 1023 * 0.01.
    assert doc["finish_us"] == [4.0, pytest.approx(16 + 10.23, rel=1e-12)]


def test_rendezvous_and_calc_unit(tmp_path: Path) -> None:
    # calc is in ns by default: rank 1 computes 50 us, rank 0 1 us after its send.
    path = write(tmp_path, RNDV)
    eager = sim_json("goal", path, "--L", "10", "--o", "2")
    assert eager["finish_us"] == [3.0, 52.0]
    # Above S the send completes only at the match: the receive is posted at 50 and finds
    # the message (handled 50..52) in the unexpected queue, so rank 0's calc runs 50..51.
    rndv = sim_json("goal", path, "--L", "10", "--o", "2", "--S", "64")
    assert rndv["finish_us"] == [51.0, 52.0]
    # --calc-unit us: 1000 us and 50000 us.
    us = sim_json("goal", path, "--L", "10", "--o", "2", "--calc-unit", "us")
    assert us["finish_us"] == [1002.0, 50002.0]


def test_cli_goal_and_model(tmp_path: Path) -> None:
    path = write(tmp_path, PINGPONG)
    proc = cli("sim", "goal", path, "--L", "10", "--o", "2", "--g", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finish_us"] == [28.0, 16.0]
    model = tmp_path / "model-loggp.json"
    model.write_text(json.dumps({"model": "loggp", "ranges": [
        {"from_bytes": 1, "to_bytes": 64, "L_us": 10.0, "o_us": 2.0, "g_us": 3.0,
         "G_us_per_byte": 0.0, "O_us_per_byte": 0.0},
        {"from_bytes": 65, "to_bytes": None, "L_us": 10.0, "o_us": 2.0, "g_us": 9.0,
         "G_us_per_byte": 0.1, "O_us_per_byte": 0.0}]}))
    proc = cli("sim", "goal", path, "--model", str(model), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finish_us"] == [28.0, 16.0]
    # Piecewise (the default): a 101-byte message takes the second range (g=9, G=0.1):
    # rank 1 handles the 8-byte one at 12..14 (receive gap to 15) and the 101-byte one,
    # sent at 3 and arriving at 15, for o + 100 G = 12: done at 27.
    two = write(tmp_path, "num_ranks 2\nrank 0 { send 8b to 1\n send 101b to 1 }\n"
                          "rank 1 { recv 8b from 0\n recv 101b from 0 }\n", "two.goal")
    proc = cli("sim", "goal", two, "--model", str(model), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finish_us"] == [5.0, 27.0]
    proc = cli("sim", "goal", two, "--model", str(model), "--first-range", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finish_us"] == [5.0, 17.0]
    proc = cli("sim", "goal", path, "--model", str(model), "--L", "1")
    assert proc.returncode == 2
    assert "--model replaces --L" in proc.stderr
    proc = cli("sim", "barrier", "-P", "1000", "--model", str(model), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["makespan_us"] == 10 * (2 * 2.0 + 10.0)


BAD = [
    ("num_ranks 2\nrank 0 { send 8b to 2 }\n", "s.goal:2:21: peer 2 out of range"),
    ("num_ranks 2\nrank 0 { send -8b to 1 }\n", "s.goal:2:15: negative size '-8b'"),
    ("num_ranks 2\nrank 0 { send 8q to 1 }\n", "s.goal:2:15: unknown suffix 'q'"),
    ("num_ranks 2\nrank 0 {\n  l1: calc 5\n  l1 requires l7\n}\n",
     "s.goal:4:3: rank 0: unknown label 'l7'"),
    ("num_ranks 2\nrank 0 {\n  sned 8b to 1\n}\n", "s.goal:3:3: unknown operation 'sned'"),
    ("num_ranks 2\nrank 0 {\n  send 8b to 1\n", "s.goal:4:1: end of file inside a rank block"),
    ("num_ranks 2\nrank 0 { /* open\n", "s.goal:2:10: unterminated /* comment"),
    ("num_ranks 2\nrank 0 {\n a: calc 1\n b: calc 1\n c: calc 1\n"
     " a requires c\n b requires a\n c requires b\n}\n",
     "dependency cycle (each operation waits for the one before it): rank 0 calc (line 4) "
     "-> rank 0 calc (line 5) -> rank 0 calc (line 3) -> rank 0 calc (line 4)"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_input(tmp_path: Path, text: str, message: str) -> None:
    proc = sim_tool("goal", write(tmp_path, text), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert message in proc.stderr


def test_deadlock_is_reported(tmp_path: Path) -> None:
    # Both ranks receive first: nothing is ever sent.
    text = ("num_ranks 2\n"
            "rank 0 { l1: recv 8b from 1\n l2: send 8b to 1\n l2 requires l1 }\n"
            "rank 1 { l1: recv 8b from 0\n l2: send 8b to 0\n l2 requires l1 }\n")
    proc = sim_tool("goal", write(tmp_path, text), "--json")
    assert proc.returncode == 2
    assert "deadlock: 4 operation(s) never done" in proc.stderr
    assert "rank 0 recv 8b from 1 tag 0 (unmatched) line 2" in proc.stderr
    assert "rank 1 send 8b to 0 tag 0 (dependencies not met) line 6" in proc.stderr
    proc = cli("sim", "goal", str(tmp_path / "s.goal"))
    assert proc.returncode == 2
    assert "deadlock" in proc.stderr


def test_bad_parameters(tmp_path: Path) -> None:
    path = write(tmp_path, PINGPONG)
    proc = sim_tool("goal", path, "--L", "-1")
    assert proc.returncode == 2
    assert "parameter L = -1" in proc.stderr
    proc = sim_tool("goal", path, "--o", "nan")
    assert proc.returncode == 2


def test_empty_schedule(tmp_path: Path) -> None:
    doc = sim_json("goal", write(tmp_path, "num_ranks 3\nrank 1 { }\n"))
    assert doc == {**doc, "makespan_us": 0.0, "finish_us": [0.0, 0.0, 0.0], "events": 0}


def closed_form(P: int, L: float, o: float) -> float:
    return math.ceil(math.log2(P)) * (2 * o + L) if P > 1 else 0.0


@pytest.mark.parametrize("P", [2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 100, 127, 128, 129, 255,
                               1000, 1023, 1024, 1025, 2047, 4095, 4096])
def test_dissemination_logp_closed_form(P: int) -> None:
    L, o, g = 5.96, 4.72, 5.14
    doc = sim_json("barrier", "--algorithm", "dissemination", "-P", str(P),
                   "--L", str(L), "--o", str(o), "--g", str(g))
    assert doc["makespan_us"] == pytest.approx(closed_form(P, L, o), rel=1e-12)
    assert len(doc["finish_us"]) == P
    assert all(t == pytest.approx(doc["makespan_us"], rel=1e-12) for t in doc["finish_us"])


@pytest.mark.parametrize("P", [2, 3, 8, 13, 64, 1000])
def test_duplex(P: int) -> None:
    """--duplex d (docs/sim.md "Duplex"): a message whose receiver sent while it was on its
    way costs L + d. Every round of dissemination and recursive doubling is such an exchange
    (rounds (L + d)); the binomial tree's rounds go one way at a time and the linear
    barrier's gather and release too (unchanged by d); d = 0 is the engine without it."""
    L, d = 1.0, 0.375
    rounds = math.ceil(math.log2(P))

    def run(alg: str, *extra: str) -> float:
        return float(sim_json("barrier", "--algorithm", alg, "-P", str(P), "--L", str(L),
                              *extra)["makespan_us"])

    assert run("dissemination", "--duplex", str(d)) == pytest.approx(rounds * (L + d))
    assert run("nway:3", "--duplex", str(d)) == \
        pytest.approx(math.ceil(math.log(P, 4) - 1e-9) * (L + d))
    for alg in ("binomial", "linear"):
        assert run(alg, "--duplex", str(d)) == run(alg), alg
    if P & (P - 1) == 0:
        assert run("recdbl", "--duplex", str(d)) == pytest.approx(rounds * (L + d))
    assert run("dissemination", "--duplex", "0") == run("dissemination")


def test_stack_barriers_logp_by_hand() -> None:
    """The stacks' own schedules (docs/coll.md) under LogP, L = 5.5, o = 1.25, g = 0.5 (g <=
    o: the gap never binds; every value exact in binary), worked out by hand from the
    engine's rules (docs/sim.md: a send takes CPU o and its message lands o + L after the
    send started; a landed message takes the receiver's CPU for o when it is free, whether
    or not its receive is posted yet)."""
    L, o = 5.5, 1.25

    def run(alg: str, P: int) -> dict:
        return sim_json("barrier", "--algorithm", alg, "-P", str(P), "--L", str(L), "--o",
                        str(o), "--g", "0.5")

    # Open MPI's double ring on 4: 2P = 8 hops one after another, each o + L + o; rank 0
    # finishes with the last, rank k (k > 0) with its second-pass send, hop P + k.
    doc = run("ring", 4)
    hop = 2 * o + L
    assert doc["makespan_us"] == 8 * hop == 64.0
    assert doc["finish_us"] == [8 * hop, 5 * hop + o, 6 * hop + o, 7 * hop + o]
    # MPICH's k-dissemination, K = 3 on 4: two phases of K - 1 = 2 sends and receives each
    # (phase 1 wraps: distances 3 and 6 = 2 mod 4). A phase: the second message lands
    # 2o + L after the phase began, the first o earlier is handled from max(2o, o + L):
    # 2o + max(2o, o + L) = 9.25, twice.
    assert run("kdissem:3", 4)["makespan_us"] == 2 * (2 * o + max(2 * o, o + L)) == 18.5
    # railgauge's nway:2 on 4 skips the wrapped distance: one message in round 1.
    assert run("nway:2", 4)["makespan_us"] == (2 * o + max(2 * o, o + L)) + hop == 17.25
    # MPICH's recursive exchange, K = 2 on 6: p_of_k 4, rem 2: 0 -> 1 and 2 -> 3 fold in
    # (done at 2o + L = 8); ranks 4 and 5 exchange at once (done at 8). Phase 1: 1 <-> 4,
    # 3 <-> 5: 4 sends at 8 (lands at 14.75); 1, done with 3 at 16, is kept busy by 4's
    # message until 17.25 and only then sends (lands at 4 at 24, handled until 25.25).
    # Step 3: 1 -> 0 at 18.5, handled at 0 until 26.5; likewise 3, 2 and 5.
    doc = run("recexch:2", 6)
    assert doc["makespan_us"] == 26.5
    assert doc["finish_us"] == [26.5, 19.75, 26.5, 19.75, 25.25, 25.25]


# ---- The stacks' barriers transcribed line by line from their C (docs/coll.md) --------
# Each gives, per rank, its steps in order: a step is what the code has in flight between
# two waits, as (sorted sends, sorted receives). Self-messages are left out, as in the plan.

Steps = list[list[tuple[list[int], list[int]]]]


def _step(sends: list[int], recvs: list[int], rank: int) -> tuple[list[int], list[int]]:
    return sorted(q for q in sends if q != rank), sorted(q for q in recvs if q != rank)


def ompi_doublering(size: int) -> Steps:
    """Open MPI v4.1.6 ompi_coll_base_barrier_intra_doublering."""
    out: Steps = []
    for rank in range(size):
        left, right = (size + rank - 1) % size, (rank + 1) % size
        steps = []
        for _ in range(2):  # the first pass, then "Allow nodes to exit"
            if rank > 0:
                steps.append(_step([], [left], rank))
            steps.append(_step([right], [], rank))
            if rank == 0:
                steps.append(_step([], [left], rank))
        out.append(steps if size > 1 else [])
    return out


def mpich_k_dissemination(nranks: int, k: int) -> Steps:
    """MPICH v4.1 MPIR_Barrier_intra_k_dissemination (k == 2: its dissemination)."""
    out: Steps = []
    if nranks < k:
        k = nranks
    for rank in range(nranks):
        steps = []
        p_of_k, nphases, shift = 1, 0, 1
        while p_of_k < nranks:
            p_of_k *= k
            nphases += 1
        for _ in range(nphases if nranks > 1 else 0):
            sends = [(rank + j * shift) % nranks for j in range(1, k)]
            recvs = [(nranks + (rank - j * shift)) % nranks for j in range(1, k)]
            steps.append(_step(sends, recvs, rank))
            shift *= k
        out.append([st for st in steps if st != ([], [])])
    return out


def mpich_recexch(nranks: int, k: int) -> Steps:
    """MPICH v4.1 MPIR_Allreduce_intra_recexch (count 0) on MPII_Recexchalgo_get_neighbors."""
    out: Steps = []
    if nranks == 1:
        return [[]]
    if nranks < k:
        k = nranks if nranks > 2 else 2
    p_of_k, log_p_of_k = 1, 0
    while p_of_k <= nranks:
        p_of_k *= k
        log_p_of_k += 1
    p_of_k //= k
    log_p_of_k -= 1
    rem = nranks - p_of_k
    T = (rem * k) // (k - 1)
    for rank in range(nranks):
        step1_sendto, step1_recvfrom, newrank = -1, [], -1
        if rank < T:
            if rank % k != k - 1:
                step1_sendto = rank + (k - 1 - rank % k)
                if step1_sendto > T - 1:
                    step1_sendto = T
            else:
                step1_recvfrom = [rank - i - 1 for i in range(k - 1)]
                newrank = rank // k
        else:
            newrank = rank - rem
            if rank == T and (T - 1) % k != k - 1 and T >= 1:
                nsenders = (T - 1) % k + 1
                step1_recvfrom = [T - nsenders + j for j in range(nsenders - 1, -1, -1)]
        steps = []
        if step1_sendto != -1:
            steps.append(_step([step1_sendto], [], rank))
            steps.append(_step([], [step1_sendto], rank))
            out.append(steps)
            continue
        if step1_recvfrom:
            steps.append(_step([], step1_recvfrom, rank))
        digit, temprank = [0] * log_p_of_k, newrank
        for i in range(log_p_of_k):
            digit[i], temprank = temprank % k, temprank // k
        for phase in range(log_p_of_k):
            nbrs = []
            for i in range(k):
                if i != digit[phase]:
                    d = list(digit)
                    d[phase] = i
                    nbr = sum(d[j] * k**j for j in range(log_p_of_k))
                    nbrs.append(nbr * k + (k - 1) if nbr < rem // (k - 1) else nbr + rem)
            steps.append(_step(nbrs, nbrs, rank))
        if step1_recvfrom:
            steps.append(_step(step1_recvfrom, [], rank))
        out.append(steps)
    return out


def plan_steps(alg: str, P: int) -> Steps:
    """Each rank's non-empty rounds of railgauge's plan, read off the simulator's trace
    (its operations are tagged by round)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "t.json"
        proc = sim_tool("barrier", "--algorithm", alg, "-P", str(P), "--L", "1", "--trace",
                        str(trace))
        assert proc.returncode == 0, proc.stderr
        events = json.loads(trace.read_text())["traceEvents"]
    rounds: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
    for ev in events:
        words = ev["name"].split()
        if ev.get("tid") != 0 or words[0] not in ("send", "recv"):
            continue  # the NIC's copy of each, and the joins
        rd = rounds.setdefault((ev["pid"], int(words[-1])), ([], []))
        rd[words[0] == "recv"].append(int(words[3]))
    return [[(sorted(rounds[k][0]), sorted(rounds[k][1]))
             for k in sorted(k for k in rounds if k[0] == p)] for p in range(P)]


@pytest.mark.parametrize("K", [0, 2, 3, 4, 5, 7])
def test_stack_schedules_are_the_stacks_code(K: int) -> None:
    """The plans of ring, kdissem:K and recexch:K against the stacks' code transcribed
    above, rank by rank and step by step, for P in 1..40 (K = 0: the ring)."""
    for P in range(1, 41):
        if K == 0:
            assert plan_steps("ring", P) == ompi_doublering(P), P
        else:
            assert plan_steps(f"kdissem:{K}", P) == mpich_k_dissemination(P, K), (K, P)
            assert plan_steps(f"recexch:{K}", P) == mpich_recexch(P, K), (K, P)


def test_stack_barriers_bad_spec() -> None:
    proc = sim_tool("barrier", "-P", "4", "--algorithm", "kdissem:1")
    assert proc.returncode == 2 and "K must be an integer in 2..1025" in proc.stderr
    proc = sim_tool("barrier", "-P", "4", "--algorithm", "ring", "--n", "2")
    assert proc.returncode == 2 and "takes no n" in proc.stderr
    proc = sim_tool("barrier", "-P", "4", "--algorithm", "recexch")
    assert proc.returncode == 2 and "needs K >= 2" in proc.stderr
    # K as --n, as for nway.
    assert sim_json("barrier", "-P", "4", "--algorithm", "kdissem", "--n", "3", "--L", "5.5",
                    "--o", "1.25")["makespan_us"] == 18.5


def test_duplex_bad_input(tmp_path: Path) -> None:
    proc = sim_tool("barrier", "-P", "4", "--L", "1", "--duplex", "-1")
    assert proc.returncode == 2 and "duplex = -1" in proc.stderr, proc.stderr
    proc = sim_tool("barrier", "-P", "4", "--lop-rtt", "1,0,0,0,0,0", "--lop-os", "0,0,1",
                    "--duplex", "1")
    assert proc.returncode == 2 and "duplex is a LogGOPS parameter" in proc.stderr, proc.stderr


@pytest.mark.parametrize("P", [4097, 65536, 100_000])
def test_dissemination_large(P: int) -> None:
    doc = sim_json("barrier", "--algorithm", "dissemination", "-P", str(P),
                   "--L", "1.5", "--o", "0.25", "--g", "0.5")
    assert doc["makespan_us"] == pytest.approx(closed_form(P, 1.5, 0.25), rel=1e-12)
    assert "finish_us" not in doc
    # Without --per-rank only the summaries: every rank spends 2o per round in overhead.
    assert "overhead_us" not in doc
    rounds = math.ceil(math.log2(P))
    assert doc["stats"]["overhead_us"]["max"] == pytest.approx(rounds * 0.5, rel=1e-12)
    assert doc["stats"]["wait_us"]["min"] == pytest.approx(rounds * 1.5, rel=1e-12)


def dissemination_goal(P: int) -> str:
    """The dissemination barrier as GOAL text, the way the generator builds it."""
    rounds = math.ceil(math.log2(P)) if P > 1 else 0
    lines = [f"num_ranks {P}"]
    for r in range(P):
        lines.append(f"rank {r} {{")
        for k in range(rounds):
            d = (1 << k) % P
            lines.append(f"  s{k}: send 0b to {(r + d) % P} tag {k}")
            lines.append(f"  r{k}: recv 0b from {(r - d) % P} tag {k}")
            if k:
                lines += [f"  s{k} requires s{k - 1}", f"  s{k} requires r{k - 1}",
                          f"  r{k} requires s{k - 1}", f"  r{k} requires r{k - 1}"]
        lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("P", [2, 3, 6, 13, 64, 100, 257])
@pytest.mark.parametrize("params", [("5", "1", "1"), ("0.5", "0.25", "7"), ("0", "2", "3.5")])
def test_generated_barrier_equals_goal(tmp_path: Path, P: int,
                                       params: tuple[str, str, str]) -> None:
    # The generated schedule and its GOAL text give the same end times, also where the gap
    # dominates (g > 2o + L), so that sends queue behind the NIC and events are re-queued.
    L, o, g = params
    args = ["--L", L, "--o", o, "--g", g, "--per-rank"]
    text = sim_json("goal", write(tmp_path, dissemination_goal(P)), *args)
    gen = sim_json("barrier", "--algorithm", "dissemination", "-P", str(P), *args)
    assert gen["finish_us"] == text["finish_us"]
    assert gen["events"] == text["events"]


def test_dissemination_million_ranks() -> None:
    # LogP closed form at 2^20 ranks (about 3 s; the schedule is generated, not stored).
    P = 1 << 20
    doc = sim_json("barrier", "--algorithm", "dissemination", "-P", str(P),
                   "--L", "1.5", "--o", "0.25", "--g", "0.5")
    assert doc["makespan_us"] == pytest.approx(20 * (2 * 0.25 + 1.5), rel=1e-12)
    assert doc["events"] == 3 * 20 * P  # per rank and round: send, receive, arrival


def test_trace_of_an_8_rank_barrier(tmp_path: Path) -> None:
    # L=5 o=1 g=1: in round k each rank sends at 7k (CPU 1 us, send gap 1 us) and handles
    # the message it receives at 7k + 6 (CPU 1 us, receive gap 1 us).
    trace = tmp_path / "barrier8.json"
    proc = cli("sim", "barrier", "-P", "8", "--L", "5", "--o", "1", "--g", "1",
               "--trace", str(trace), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(trace.read_text())
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == 8 * 3 * 4
    cpu0 = sorted((e["ts"], e["dur"], e["name"]) for e in spans
                  if e["pid"] == 0 and e["tid"] == 0)
    assert cpu0 == [(0, 1, "send 0b to 1 tag 0"), (6, 1, "recv 0b from 7 tag 0"),
                    (7, 1, "send 0b to 2 tag 1"), (13, 1, "recv 0b from 6 tag 1"),
                    (14, 1, "send 0b to 4 tag 2"), (20, 1, "recv 0b from 4 tag 2")]
    names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in doc["traceEvents"]
             if e["ph"] == "M"}
    assert (0, None, "rank 0") in names and (7, 2000, "nic 0 recv") in names
    proc = cli("sim", "barrier", "-P", "8", "--trace", str(trace), "--trace-max-ranks", "4")
    assert proc.returncode == 2
    assert "more than --trace-max-ranks 4" in proc.stderr


ONE_TO_N = """\
num_ranks 5
rank 0 { send 1b to 1
 send 1b to 2
 send 1b to 3
 send 1b to 4 }
rank 1 { recv 1b from 0 }
rank 2 { recv 1b from 0 }
rank 3 { recv 1b from 0 }
rank 4 { recv 1b from 0 }
"""

N_TO_ONE = """\
num_ranks 5
rank 0 { recv 1b from -1
 recv 1b from -1
 recv 1b from -1
 recv 1b from -1 }
rank 1 { send 1b to 0 }
rank 2 { send 1b to 0 }
rank 3 { send 1b to 0 }
rank 4 { send 1b to 0 }
"""


def lop_model(tmp_path: Path, *, with_list: bool = True) -> Path:
    """A model-lop.json as `railgauge fit --model lop` writes it (the keys the simulator
    reads): RTT(p) = 12/p + 10 per peer, o_s(p) = 0.5 + 1/p, so L(p) = 5/p + 3; the list
    series RTT(p) = 12/p + 10, o_s(p) = 0.25 (L_list(p) = 6/p + 4.75 - p/4)."""
    lst = {"mode": "list", "rtt": {"lambda": [12.0, 0.0, 10.0, 0.0, 0.0, 1.0]},
           "overhead_send": {"lambda": [0.25, 0.0, 0.0]}}
    doc = {"model": "lop", "primary": {"direction": "1:n", "mode": "single", "s": 8},
           "rtt": {"lambda": [12.0, 0.0, 10.0, 0.0, 0.0, 1.0]},
           "overhead_send": {"lambda": [0.5, 1.0, 0.0]}, "overhead_recv": None,
           "list": lst if with_list else None}
    path = tmp_path / "model-lop.json"
    path.write_text(json.dumps(doc))
    return path


def test_lop_one_to_n_and_n_to_one(tmp_path: Path) -> None:
    # docs/sim.md, LoP: 1:n with n = 4 delivers at o_s(4) + k L(4) = 0.75 + 4.25 k (the
    # last at t_1:n = 17.75), each receiver handling its message for o_s(1) = 1.5.
    model = lop_model(tmp_path)
    proc = cli("sim", "goal", write(tmp_path, ONE_TO_N), "--model", str(model), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["finish_us"] == [3.0, 6.5, 10.75, 15.0, 19.25]
    # List posting (the list series: o_s = 0.25): the NIC starts after 4 o_s(4) = 1 and
    # delivers every L_list(4) = 5.25, the last at t_1:n^list = 4 o_s(4) + 4 L_list(4) = 22;
    # each receiver handles its message for that series' o_s(1) = 0.25.
    proc = cli("sim", "goal", write(tmp_path, ONE_TO_N), "--model", str(model), "--lop-list",
               "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["finish_us"] == [1.0, 6.5, 11.75, 17.0, 22.25]
    # n:1: four senders, rank 0's receiving batch of 4: L(4) each on its NIC.
    proc = cli("sim", "goal", write(tmp_path, N_TO_ONE, "n1.goal"), "--model", str(model),
               "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["finish_us"] == [20.0, 1.5, 1.5, 1.5, 1.5]
    assert doc["overhead_us"][0] == 6.0 and doc["wait_us"][0] == 14.0
    # Barrier (batches of 1): ceil(log2 P) (2 o_s(1) + L(1)) = 10 * 11.
    proc = cli("sim", "barrier", "-P", "1000", "--model", str(model), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["makespan_us"] == pytest.approx(110.0, rel=1e-12)
    # The 3-way dissemination barrier on 64 ranks: 3 rounds, each a send batch of 3 and a
    # receive batch of 3: the sends leave at o_s(3) + k L(3) (each receiver's three messages
    # come from different senders' slots k = 1, 2, 3, so no NIC waits), the last is handled
    # for o_s(1): a round is o_s(3) + 3 L(3) + o_s(1) = 5/6 + 14 + 1.5.
    proc = cli("sim", "barrier", "--algorithm", "nway", "--n", "3", "-P", "64", "--model",
               str(model), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["makespan_us"] == pytest.approx(3 * (5 / 6 + 14 + 1.5),
                                                                   rel=1e-12)


def test_lop_bad_input(tmp_path: Path) -> None:
    path = write(tmp_path, ONE_TO_N)
    model = lop_model(tmp_path, with_list=False)
    proc = cli("sim", "goal", path, "--model", str(model), "--lop-list")
    assert proc.returncode == 2
    assert "the model has no list-mode fits" in proc.stderr
    proc = cli("sim", "goal", path, "--model", str(model), "--S", "64")
    assert proc.returncode == 2
    assert "no rendezvous" in proc.stderr
    proc = cli("sim", "goal", path, "--lop-list")
    assert proc.returncode == 2
    doc = json.loads(model.read_text())
    doc["overhead_send"] = {"lambda": [4.0, 0.0, 0.0]}  # L(1) = 11 - 8, L(3) = 7 - 8
    model.write_text(json.dumps(doc))
    proc = cli("sim", "goal", path, "--model", str(model))
    assert proc.returncode == 2
    assert "L(3) = -1 us is negative" in proc.stderr
    proc = sim_tool("goal", path, "--lop-rtt", "1,2,3", "--lop-os", "1,1,1")
    assert proc.returncode == 2
    assert "expected 6 comma-separated numbers" in proc.stderr


def test_text_summary_and_progress(tmp_path: Path) -> None:
    proc = sim_tool("goal", write(tmp_path, PINGPONG), "--L", "10", "--o", "2", "--g", "3")
    assert proc.returncode == 0, proc.stderr
    assert "wait       min 12  mean 18  max 24 us" in proc.stdout
    assert "rank 0 finish 28.000000 overhead 4.000000 wait 24.000000 calc 0.000000 us" \
        in proc.stdout
    # --progress writes to stderr only (here the run is too short for an update); --json
    # stdout stays one JSON object. A long run shows updates ending in an erase sequence.
    proc = sim_tool("barrier", "-P", "65536", "--algorithm", "dissemination", "--L", "1",
                    "--progress", "--json")
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    assert "\r" not in proc.stdout
    proc = cli("sim", "barrier", "-P", "1048576", "--L", "1", "--progress", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["makespan_us"] == 20.0
    assert "railgauge-sim: " in proc.stderr and "% of 41943040 operations" in proc.stderr
    proc = cli("sim", "barrier", "-P", "1048576", "--L", "1", "--json")
    assert proc.returncode == 0 and proc.stderr == ""


FUZZ_DIR = ROOT / "native" / "tests" / "fuzz"


@pytest.mark.slow
def test_goal_fuzzer(tmp_path: Path) -> None:
    # libFuzzer on the GOAL parser and the simulator behind it, from the corpus kept in
    # git, for RG_FUZZ_SECONDS (default 60) (tests/fuzz_util.py): a crash, a sanitizer
    # report or an input that fails without a message ends the run with a non-zero status.
    run_fuzzer("railgauge-goal-fuzz", FUZZ_DIR / "corpus", "*.goal", 8, tmp_path)


def test_lop_from_a_fitted_model(tmp_path: Path) -> None:
    # End to end: `railgauge fit --model lop` on synthetic 1:n data, then the simulator on a
    # 1:8 schedule with that model file: the k-th peer is reached at o_s(8) + k L(8) and
    # the last at the paper's t_1:n = o_s(8) + 8 L(8) (here o_s(8) <= L(8)), each handled
    # for o_s(1); every value is computed by railgauge.fit.lop from the fitted lambdas.
    from railgauge.fit.lop import latency, overhead_function, t_1n
    from railgauge.onen import synth_onen, write_onen_jsonl

    data = synth_onen(lambda p: 12.0 / p + 10.0, range(1, 9),
                      overhead_send=lambda p: 0.5 + 1.0 / p, seed=0)
    onen = write_onen_jsonl(data, tmp_path / "onen.jsonl")
    model = tmp_path / "model-lop.json"
    proc = cli("fit", "--model", "lop", str(onen), "--out", str(model))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(model.read_text())
    rtt, os_ = doc["rtt"]["lambda"], doc["overhead_send"]["lambda"]
    n = 8
    o1, on, ln = (float(overhead_function(os_, 1)), float(overhead_function(os_, n)),
                  float(latency(rtt, os_, n)))
    assert 0 < on <= ln
    text = f"num_ranks {n + 1}\nrank 0 {{\n" + "".join(
        f"send 1b to {k}\n" for k in range(1, n + 1)) + "}\n" + "".join(
        f"rank {k} {{ recv 1b from 0 }}\n" for k in range(1, n + 1))
    proc = cli("sim", "goal", write(tmp_path, text, "onen8.goal"), "--model", str(model),
               "--json")
    assert proc.returncode == 0, proc.stderr
    fin = json.loads(proc.stdout)["finish_us"]
    assert fin[0] == pytest.approx(n * on, rel=1e-12)
    for k in range(1, n + 1):
        assert fin[k] == pytest.approx(on + k * ln + o1, rel=1e-9)
    assert fin[n] == pytest.approx(float(t_1n(rtt, os_, n)) + o1, rel=1e-9)


def test_pairwise_alltoall_goal_is_what_loggopsim_reads() -> None:
    """The GOAL of the pairwise alltoall (bench/export_bench.py feeds it to LogGOPSim's
    txt2bin, which refuses a line that starts with a blank): no indentation, one send and
    one receive per step with rank XOR i, each step after both of the one before."""
    from railgauge.sim import pairwise_alltoall_goal

    text = pairwise_alltoall_goal(4, 1024)
    lines = text.splitlines()
    assert lines[0] == "num_ranks 4"
    assert not [ln for ln in lines if ln[:1].isspace()]
    assert "rank 2 {" in lines
    block = lines[lines.index("rank 2 {") + 1:lines.index("rank 3 {") - 1]
    assert "s1: send 1024b to 3 tag 1" in block and "r3: recv 1024b from 1 tag 3" in block
    assert "s3 requires r2" in block and not any("requires" in ln and "1 requires" in ln
                                                 for ln in block)
