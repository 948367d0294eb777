"""Rails in the simulator (`railgauge-sim ... --rails`, docs/sim.md "Rails"): end times
worked out by hand for each policy, the closed forms of even and weighted striping,
adaptive learning the weighted shares, one rail to the bit as no rails, bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from test_sim import cli, sim_json, sim_tool, write

MIB4 = 4 * 1024 * 1024
G0, G1 = 0.001, 0.002  # us/byte: a fast rail (1 us/KB style) and one half as fast
L, OV, GAP = 5.0, 1.0, 1.0  # L, o, g (us)


def one_message(tmp_path: Path, size: int) -> str:
    return write(tmp_path, f"num_ranks 2\nrank 0 {{ send {size}b to 1 }}\n"
                           f"rank 1 {{ recv {size}b from 0 }}\n", f"one{size}.goal")


def run(goal: str, *args: str) -> dict:
    return sim_json("goal", goal, "--L", str(L), "--o", str(OV), "--g", str(GAP), *args)


def per_rail(doc: dict, key: str) -> list[float]:
    return [r[key] for r in doc["rails"]["per_rail"]]


def test_even_and_weighted_closed_forms(tmp_path: Path) -> None:
    goal = one_message(tmp_path, MIB4)
    s = MIB4
    # even: 2 MiB on each rail; sent at 0 (CPU o), all pieces in at o + L, handled for
    # o + the slowest piece's (s/2 - 1) G1.
    even = run(goal, "--rails", f"{G0},{G1}", "--policy", "even")
    assert per_rail(even, "bytes") == [s / 2, s / 2]
    assert even["makespan_us"] == pytest.approx(2 * OV + L + (s / 2 - 1) * G1, rel=1e-12)
    assert even["makespan_us"] - (2 * OV + L) == pytest.approx(max(s / 2 * G0, s / 2 * G1),
                                                               abs=2 * G1)
    # weighted by 1/G (the default weights of a G list): shares 2/3 and 1/3 in whole
    # 4 KiB pages, the rest on the last rail; close to s / (1/G0 + 1/G1).
    w = run(goal, "--rails", f"{G0},{G1}", "--policy", "weighted")
    cut0 = (s * 2 // 3) & ~4095
    assert per_rail(w, "bytes") == [cut0, s - cut0]
    assert w["makespan_us"] == pytest.approx(
        2 * OV + L + max((cut0 - 1) * G0, (s - cut0 - 1) * G1), rel=1e-12)
    assert w["makespan_us"] - (2 * OV + L) == pytest.approx(s / (1 / G0 + 1 / G1),
                                                            abs=4096 * G1)
    assert [r["weight"] for r in w["rails"]["per_rail"]] == [1 / G0, 1 / G1]
    # Each rail's send gap: g + (s_r - 1) G_r, and the same on the receive side.
    assert per_rail(w, "send_busy_us") == pytest.approx(
        [GAP + (cut0 - 1) * G0, GAP + (s - cut0 - 1) * G1], rel=1e-12)
    assert per_rail(w, "recv_busy_us") == per_rail(w, "send_busy_us")
    # Explicit weights override 1/G: equal weights stripe as even does.
    eq = run(goal, "--rails", f"{G0},{G1}", "--policy", "weighted", "--weights", "1,1")
    assert eq["makespan_us"] == even["makespan_us"]


def test_below_stripe_min_one_rail(tmp_path: Path) -> None:
    size = 100 * 1024
    goal = one_message(tmp_path, size)
    # even: the first of equal weights (rail 0), as the runtime; here the slow one first.
    doc = run(goal, "--rails", f"{G1},{G0}", "--policy", "even")
    assert per_rail(doc, "bytes") == [size, 0]
    assert doc["makespan_us"] == pytest.approx(2 * OV + L + (size - 1) * G1, rel=1e-12)
    # weighted: the best-weighted rail (1/G: the fast one).
    doc = run(goal, "--rails", f"{G1},{G0}", "--policy", "weighted")
    assert per_rail(doc, "bytes") == [0, size]
    assert doc["makespan_us"] == pytest.approx(2 * OV + L + (size - 1) * G0, rel=1e-12)
    # A lower stripe size cuts it, in whole 4 KiB pages but the last: 12 pages on rail 0
    # (50 KiB rounded down), the rest on rail 1.
    doc = run(goal, "--rails", f"{G1},{G0}", "--policy", "even", "--stripe-min", "65536")
    assert per_rail(doc, "bytes") == [12 * 4096, size - 12 * 4096]
    assert per_rail(doc, "pieces") == [1, 1]


def test_round_robin_alternates(tmp_path: Path) -> None:
    # Four 1 MiB messages from rank 0 to rank 1, whole, on rails 0, 1, 0, 1. Each send
    # waits only for its own rail: sends at 0, 1 (the CPU), then rail 0 is busy until
    # 1 + (s-1) G0 and rail 1 until 1 + 1 + (s-1) G1.
    s = 1 << 20
    goal = write(tmp_path, "num_ranks 2\nrank 0 {\n" + f" send {s}b to 1\n" * 4 + "}\n"
                 "rank 1 {\n" + f" recv {s}b from 0\n" * 4 + "}\n")
    doc = run(goal, "--rails", f"{G0},{G1}", "--policy", "round-robin")
    assert per_rail(doc, "pieces") == [2, 2]
    assert per_rail(doc, "bytes") == [2 * s, 2 * s]
    # Sends start at 0 (rail 0), 1 (rail 1), GAP + (s-1) G0 (rail 0 again), and
    # 1 + GAP + (s-1) G1 (rail 1 again); rank 0 finishes o after the last.
    last = 1 + GAP + (s - 1) * G1
    assert doc["finish_us"][0] == pytest.approx(last + OV, rel=1e-12)
    # Rails one by one: rail 0 alone takes all four.
    one = run(goal, "--rails", f"{G0}", "--policy", "round-robin")
    assert per_rail(one, "pieces") == [4]


def test_binding_by_peer(tmp_path: Path) -> None:
    # Rank 0 sends to 1, 2, 3 and rank 1 to 2: binding puts a pair on rail
    # (rank + peer) mod 2, whatever the size.
    s = MIB4
    goal = write(tmp_path, f"num_ranks 4\nrank 0 {{ send {s}b to 1\n send {s}b to 2\n"
                           f" send {s}b to 3 }}\nrank 1 {{ recv {s}b from 0\n"
                           f" send 8b to 2 }}\nrank 2 {{ recv {s}b from 0\n"
                           f" recv 8b from 1 }}\nrank 3 {{ recv {s}b from 0 }}\n")
    doc = run(goal, "--rails", f"{G0},{G1}", "--policy", "binding")
    # rail 1: 0->1, 0->3, 1->2; rail 0: 0->2.
    assert per_rail(doc, "pieces") == [1, 3]
    assert per_rail(doc, "bytes") == [s, 2 * s + 8]
    # 0->1 and 0->2 start together at 0 on rails 1 and 0 (the CPU after o); 0->3 waits
    # for rail 1: it starts at GAP + (s-1) G1.
    assert doc["finish_us"][3] == pytest.approx(
        GAP + (s - 1) * G1 + OV + L + OV + (s - 1) * G1, rel=1e-12)
    assert doc["finish_us"][2] >= OV + OV + L + OV + (s - 1) * G0


def stream_goal(tmp_path: Path, n: int, s: int) -> str:
    """n messages of s bytes from 0 to 1, each sent once the one before was answered (an
    8-byte reply): the sender's policy sees what every message before taught it."""
    r0 = ["num_ranks 2", "rank 0 {"]
    r1 = ["rank 1 {"]
    for i in range(n):
        r0.append(f" s{i}: send {s}b to 1 tag {i}")
        r0.append(f" a{i}: recv 8b from 1 tag {i}")
        r0.append(f" a{i} requires s{i}")
        if i:
            r0.append(f" s{i} requires a{i - 1}")
        r1.append(f" r{i}: recv {s}b from 0 tag {i}")
        r1.append(f" b{i}: send 8b to 0 tag {i}")
        r1.append(f" b{i} requires r{i}")
    return write(tmp_path, "\n".join([*r0, "}", *r1, "}"]) + "\n", f"stream{n}.goal")


def test_adaptive_converges_to_weighted(tmp_path: Path) -> None:
    s = MIB4
    rails = ["--rails", f"{G0},{G1}"]

    def rounds(policy: str, n: int, *extra: str) -> float:
        return run(stream_goal(tmp_path, n, s), *rails, "--policy", policy,
                   *extra)["makespan_us"]

    weighted = rounds("weighted", 1)
    even = rounds("even", 1)
    # Adaptive starts from equal shares: its first message is even's.
    assert rounds("adaptive", 1) == even
    # After 40 messages each new one takes weighted's time (within 0.5 %), and the bytes
    # it put on each rail over the run approach 2:1.
    last = rounds("adaptive", 40) - rounds("adaptive", 39)
    assert last == pytest.approx(weighted, rel=5e-3)
    assert last < even * 0.8
    doc = run(stream_goal(tmp_path, 40, s), *rails, "--policy", "adaptive")
    b = per_rail(doc, "bytes")
    assert 1.8 < b[0] / b[1] < 2.05
    assert doc["rails"]["adapt_alpha"] == 0.3
    # A smaller alpha learns more slowly: after 5 messages it is further from weighted.
    fast = rounds("adaptive", 5, "--adapt-alpha", "0.9") - rounds("adaptive", 4,
                                                                   "--adapt-alpha", "0.9")
    slow = rounds("adaptive", 5, "--adapt-alpha", "0.1") - rounds("adaptive", 4,
                                                                   "--adapt-alpha", "0.1")
    assert weighted * (1 - 1e-12) <= fast < slow < even
    # The floor keeps a share on the slow rail: with rails 1:100 in speed the slow one
    # still carries at least the floor's share of each striped message.
    doc = run(stream_goal(tmp_path, 30, s), "--rails", f"{G0},{G0 * 100}", "--policy",
              "adaptive", "--adapt-floor", "0.2")
    b = per_rail(doc, "bytes")
    assert b[1] >= 0.2 * 30 * s - 30 * 4096


def random_goal(rng: random.Random) -> str:
    """A random schedule: matched sends and receives of several sizes (rendezvous among
    them), calcs, requires and irequires, two CPUs and two NICs."""
    P = rng.randint(2, 6)
    ops: list[list[str]] = [[] for _ in range(P)]
    for k in range(rng.randint(4, 24)):
        src = rng.randrange(P)
        dst = rng.choice([r for r in range(P) if r != src])
        size = rng.choice([0, 1, 64, 5000, 100_000, 300_000, 2_000_000])
        cpu, nic = rng.randint(0, 1), rng.randint(0, 1)
        ops[src].append(f"send {size}b to {dst} tag {k} cpu {cpu} nic {nic}")
        ops[dst].append(f"recv {size}b from {src} tag {k} cpu {rng.randint(0, 1)}")
        if rng.random() < 0.3:
            ops[src].append(f"calc {rng.randint(1, 500)} cpu {rng.randint(0, 1)}")
    lines = [f"num_ranks {P}"]
    for r in range(P):
        lines.append(f"rank {r} {{")
        for i, op in enumerate(ops[r]):
            lines.append(f" o{i}: {op}")
            if i and rng.random() < 0.5:
                dep = "irequires" if rng.random() < 0.3 else "requires"
                lines.append(f" o{i} {dep} o{rng.randrange(i)}")
        lines.append("}")
    return "\n".join(lines) + "\n"


def test_one_rail_is_no_rails_to_the_bit(tmp_path: Path) -> None:
    """One rail (any policy) gives the engine's results without rails, every figure and
    every trace span, on random schedules with rendezvous, several CPUs and NICs."""
    rng = random.Random(8)
    compared = 0
    for i in range(60):
        goal = write(tmp_path, random_goal(rng), f"r{i}.goal")
        G, S = rng.choice([0.0005, 0.003, 0.01]), rng.choice(["inf", "1000", "200000"])
        base = ["goal", goal, "--L", "3.5", "--o", "1.25", "--g", "0.75", "--O", "0.0002",
                "--S", S, "--calc-unit", "us", "--json"]
        plain = sim_tool(*base, "--G", str(G), "--trace", str(tmp_path / "a.json"))
        policy = rng.choice(["binding", "round-robin", "even", "weighted", "adaptive"])
        rails = sim_tool(*base, "--rails", str(G), "--policy", policy,
                         "--trace", str(tmp_path / "b.json"))
        assert plain.returncode == rails.returncode, (plain.stderr, rails.stderr)
        if plain.returncode != 0:
            assert plain.stderr == rails.stderr  # the same deadlock
            continue
        a, b = json.loads(plain.stdout), json.loads(rails.stdout)
        for doc in (a, b):
            del doc["wall_s"], doc["read_s"]
        b.pop("rails")
        assert a == b
        assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
        compared += 1
    assert compared >= 30
    # The generated barrier, too (its own code path for operations).
    a = sim_json("barrier", "--algorithm", "dissem", "-P", "1000", "--L", "2", "--o", "1")
    b = sim_json("barrier", "--algorithm", "dissem", "-P", "1000", "--L", "2", "--o", "1",
                 "--rails", "0.001")
    assert {k: v for k, v in a.items() if k not in ("wall_s", "read_s")} == \
        {k: v for k, v in b.items() if k not in ("wall_s", "read_s", "rails")}


def rails_json(tmp_path: Path, doc: object, name: str = "rails.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(path)


def gauge_doc() -> dict:
    """A rails.json as `railgauge gauge --rails` writes it (gauge_rails.RailsPart)."""
    return {"rails": [
        {"name": "rail0", "transport": "tcp:rail0", "model": "rail0-model-loggp.json",
         "L_us": 40.0, "o_us": 3.0, "G_us_per_byte": 1 / 119.7, "bandwidth_MBps": 119.7,
         "fitted_from_bytes": 65536},
        {"name": "rail1", "transport": "tcp:rail1", "model": "rail1-model-loggp.json",
         "L_us": 30.0, "o_us": 2.0, "G_us_per_byte": 1 / 239.1, "bandwidth_MBps": 239.1,
         "fitted_from_bytes": 65536}],
        "weights": [0.5006, 1.0], "policy": "weighted",
        "env": {"RG_RAILS_LIST": "rail0,rail1", "RG_RAILS_POLICY": "weighted"}}


def test_rails_json_from_the_gauge(tmp_path: Path) -> None:
    goal = one_message(tmp_path, MIB4)
    path = rails_json(tmp_path, gauge_doc())
    doc = sim_json("goal", goal, "--g", "1", "--rails", path)
    # The file's policy (weighted) and weights; each rail's L and o from its fit, a
    # striped message's o and L the largest of its rails'.
    assert doc["rails"]["policy"] == "weighted"
    w = [r["weight"] for r in doc["rails"]["per_rail"]]
    assert w == [0.5006, 1.0]
    cut0 = int(MIB4 * 0.5006 / 1.5006) & ~4095
    assert per_rail(doc, "bytes") == [cut0, MIB4 - cut0]
    stream = max((cut0 - 1) / 119.7, (MIB4 - cut0 - 1) / 239.1)
    assert doc["makespan_us"] == pytest.approx(3 + 40 + 3 + stream, rel=1e-12)
    # --policy and --weights override the file's.
    doc = sim_json("goal", goal, "--rails", path, "--policy", "even")
    assert per_rail(doc, "bytes") == [MIB4 / 2, MIB4 / 2]
    # A message below the stripe size goes on the best-weighted rail with that rail's L, o.
    small = one_message(tmp_path, 1000)
    doc = sim_json("goal", small, "--rails", path)
    assert per_rail(doc, "bytes") == [0, 1000]
    assert doc["makespan_us"] == pytest.approx(2 + 30 + 2 + 999 / 239.1, rel=1e-12)


def test_rails_json_any_spacing(tmp_path: Path) -> None:
    """The file is read as JSON, not as Python's spacing of it: compact separators, an
    indented file, escaped names and keys give the same run as json.dumps' default."""
    def model(doc: dict) -> dict:  # the run, without the tool's own times (wall_s, read_s)
        return {k: v for k, v in doc.items() if not k.endswith("_s")}

    goal = one_message(tmp_path, MIB4)
    ref = model(sim_json("goal", goal, "--rails", rails_json(tmp_path, gauge_doc())))
    assert ref["rails"]["policy"] == "weighted"
    texts = [json.dumps(gauge_doc(), separators=(",", ":")),
             json.dumps(gauge_doc(), indent=4),
             json.dumps(gauge_doc(), ensure_ascii=True).replace('"policy"', '"\\u0070olicy"')
             .replace('"rail0"', '"r\\u00e4il0"'),
             "\r\n\t" + json.dumps(gauge_doc(), indent="\t") + "\r\n"]
    for i, text in enumerate(texts):
        doc = sim_json("goal", goal, "--rails", rails_json(tmp_path, text, f"r{i}.json"))
        assert model(doc) == ref, text


def test_cli_sim_rails(tmp_path: Path) -> None:
    goal = one_message(tmp_path, MIB4)
    proc = cli("sim", "goal", goal, "--L", "5", "--o", "1", "--rails", f"{G0},{G1}",
               "--policy", "weighted", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == run(goal, "--g", "0", "--rails", f"{G0},{G1}", "--policy",
                      "weighted") | {"wall_s": doc["wall_s"], "read_s": doc["read_s"]}
    proc = cli("sim", "barrier", "-P", "64", "--L", "5", "--o", "1", "--rails",
               rails_json(tmp_path, gauge_doc()), "--policy", "adaptive",
               "--adapt-alpha", "0.5", "--adapt-floor", "0.1", "--stripe-min", "0")
    assert proc.returncode == 0, proc.stderr
    assert "rails     2, adaptive, stripes from 0 bytes" in proc.stdout
    assert "rail 0    0 bytes in 0 pieces" in proc.stdout  # 0-byte messages: rail 1
    proc = cli("sim", "goal", goal, "--policy", "even")
    assert proc.returncode == 2
    assert "--policy needs --rails" in proc.stderr
    proc = cli("sim", "goal", goal, "--rails", "1,2", "--policy", "striped")
    assert proc.returncode == 2
    proc = cli("sim", "goal", goal, "--rails", "1,-2")
    assert proc.returncode == 2
    assert "rail 1 has G = -2" in proc.stderr


BAD_RAILS = [
    (["--rails", "0.001,0.002", "--policy", "fastest"], "--policy 'fastest': not a policy"),
    (["--rails", "0.001,0"], "rail 1 has G = 0: a rail's G (us/byte) must be above 0"),
    (["--rails", "0.001,-1"], "rail 1 has G = -1"),
    (["--rails", "0.001,0.002", "--weights", "1,2,3"], "--weights '1,2,3': 3 weights for 2"),
    (["--rails", "0.001,0.002", "--weights", "1,0"], "expected one weight above 0"),
    (["--rails", "0.001,0.002", "--adapt-alpha", "0"], "adapt alpha 0 is outside (0, 1]"),
    (["--rails", "0.001,0.002", "--adapt-floor", "0.5"], "the floor times the 2 rails"),
    (["--rails", "0.001,0.002", "--stripe-min", "-5"], "stripe size -5"),
    (["--rails", ",".join(["0.001"] * 17)], "more than 16 rails"),
    (["--rails", "no-such-rails.json"], "--rails no-such-rails.json: No such file"),
    (["--policy", "even"], "need --rails"),
    (["--rails", "0.001", "--lop-rtt", "1,0,1,0,0,0", "--lop-os", "1,0,1"],
     "--rails runs under LogGOPS, not LoP"),
]


@pytest.mark.parametrize(("args", "message"), BAD_RAILS)
def test_bad_rails_input(tmp_path: Path, args: list[str], message: str) -> None:
    proc = sim_tool("goal", one_message(tmp_path, 100), *args, "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert message in proc.stderr


BAD_FILES = [
    ('{"rails": [{"G_us_per_byte": 0.01}', "not a rails.json (line 1, column 35): "
                                           "',' or ']' expected"),
    ('{"rails": [{"G_us_per_byte": 0.01]}', "not a rails.json (line 1, column 34): "
                                            "',' or '}' expected"),
    ("[1, 2]", "not a rails.json (line 1, column 1): an object expected"),
    ('{"rails": [{"G_us_per_byte": 0.01}]} x', "text after the object"),
    ('{"rails": []}', "no rails"),
    ('{"rails": [{"L_us": 1}]}', "rails[0] has no G_us_per_byte"),
    ('{"rails": [{"G_us_per_byte": 0}]}', "rails[0].G_us_per_byte = 0: a rail's G must be "
                                          "above 0"),
    ('{"rails": [{"G_us_per_byte": "fast"}]}', "not a rails.json (line 1, column 30)"),
    ('{"rails": [{"G_us_per_byte": 1, "o_us": -1}]}', "rails[0].o_us = -1: must be >= 0"),
    ('{"rails": [{"G_us_per_byte": 1}, {"G_us_per_byte": 2}], "weights": [1]}',
     "1 weights for 2 rails"),
    ('{"rails": [{"G_us_per_byte": 1}], "policy": "fast"}', "policy 'fast' is not"),
    ('{"rails": [{"G_us_per_byte": 1}], "x": [1, {"y": tru}]}', "a value expected"),
    ("", "an object expected"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_bad_rails_json(tmp_path: Path, text: str, message: str) -> None:
    path = rails_json(tmp_path, text, "bad.json")
    proc = sim_tool("goal", one_message(tmp_path, 100), "--rails", path)
    assert proc.returncode == 2
    assert message in proc.stderr, proc.stderr
    assert "bad.json" in proc.stderr
