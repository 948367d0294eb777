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
    assert list(doc) == ["makespan_us", "finish_us", "events", "wall_s"]


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


@pytest.mark.parametrize("P", [4097, 65536, 100_000])
def test_dissemination_large(P: int) -> None:
    doc = sim_json("barrier", "--algorithm", "dissemination", "-P", str(P),
                   "--L", "1.5", "--o", "0.25", "--g", "0.5")
    assert doc["makespan_us"] == pytest.approx(closed_form(P, 1.5, 0.25), rel=1e-12)
    assert "finish_us" not in doc


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
