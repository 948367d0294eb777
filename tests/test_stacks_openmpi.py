"""railgauge.stacks.openmpi: Open MPI's coll_tuned barrier per release, the dynamic rules
file in both formats, and the proof that Open MPI 4.1 (installed here as mpirun.openmpi)
really runs what the file says, by its pml monitoring."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from railgauge.emit import installed_version
from railgauge.export.files import ExportError
from railgauge.sim import SimError
from railgauge.stacks import BarrierChoice, StackAlgorithm
from railgauge.stacks.openmpi import (
    Signature,
    barrier_algorithms,
    build_barrier_program,
    classic_barrier_id,
    default_barrier,
    emit_barrier,
    fixed_barrier_id,
    json_barrier_id,
    run_barrier,
    schedule_signature,
)

SCHEMA = Path(__file__).resolve().parent / "data" / "openmpi" / "tuned_dynamic_file_schema.json"
NAMES = ["linear", "double_ring", "recursive_doubling", "bruck", "two_proc", "tree"]


def _alg(name: str, version: str = "4.1.6") -> StackAlgorithm:
    return next(a for a in barrier_algorithms(version) if a.name == name)


def _choices(version: str, **by_p: str) -> list[BarrierChoice]:
    return [BarrierChoice(int(p[1:]), _alg(n, version), 1.0) for p, n in by_p.items()]


# ---- releases, algorithms, the fixed decision ------------------------------------------------

@pytest.mark.parametrize("version", ["1.8", "1.10.7", "2.0.4", "4.0.7", "4.1.6", "5.0.10",
                                     "6.0"])
def test_the_algorithms_of_every_release(version: str) -> None:
    algs = barrier_algorithms(version)
    assert [(a.id, a.name, a.schedule) for a in algs] == [
        (1, "linear", "linear"), (2, "double_ring", "ring"), (3, "recursive_doubling", "recdbl"),
        (4, "bruck", "dissem"), (5, "two_proc", "recdbl"), (6, "tree", "binomial")]
    two = algs[4]
    assert (two.min_P, two.max_P) == (2, 2) and not two.accepts(3) and two.accepts(2)
    assert all(a.stack == "openmpi" and a.note for a in algs)
    ring = algs[1].note
    assert ("MPI_ANY_SOURCE" in ring) == (version in ("1.8", "1.10.7", "2.0.4"))


@pytest.mark.parametrize("version", ["1.6", "7.0", "x", "4"])
def test_an_unknown_release_is_refused(version: str) -> None:
    with pytest.raises(ExportError):
        barrier_algorithms(version)
    with pytest.raises(ExportError):
        emit_barrier(_choices("4.1.6", P4="tree"), version, "openmpi")


def test_the_fixed_decision_of_4_1_and_later() -> None:
    table = {1: 3, 2: 3, 3: 3, 4: 1, 7: 1, 8: 3, 63: 3, 64: 4, 255: 4, 256: 6, 511: 6,
             512: 4, 1023: 4, 1024: 6, 4095: 6, 4096: 4, 100000: 4}
    for version in ("4.1.0", "4.1.6", "5.0.10", "6.0"):
        assert {P: fixed_barrier_id(version, P) for P in table} == table
    assert default_barrier("4.1.6", 4).name == "linear"
    assert default_barrier("4.1.6", 300).name == "tree"


def test_the_fixed_decision_up_to_4_0() -> None:
    # Two ranks: two_proc; a power of two: recursive doubling; otherwise bruck.
    for version in ("1.8", "2.1.6", "4.0.7"):
        got = {P: fixed_barrier_id(version, P) for P in (1, 2, 3, 4, 6, 8, 12, 64)}
        assert got == {1: 3, 2: 5, 3: 4, 4: 3, 6: 4, 8: 3, 12: 4, 64: 3}


def test_han_takes_the_barrier_across_nodes_from_5_0() -> None:
    han = default_barrier("5.0.10", 16, nodes=2)
    assert (han.name, han.id, han.schedule) == ("han", None, None)
    assert default_barrier("5.0.10", 16, nodes=1).name == "recursive_doubling"
    assert default_barrier("4.1.6", 16, nodes=2).name == "recursive_doubling"
    with pytest.raises(ExportError):
        default_barrier("4.1.6", 0)
    with pytest.raises(ExportError):
        default_barrier("4.1.6", 4, nodes=0)


# ---- the rules file -------------------------------------------------------------------------

BODY_4_1 = """1  # number of collectives
6  # collective id: barrier
4  # number of communicator sizes
# P = 2: two_proc (algorithm 5), for communicator sizes 1..2
2  # communicator size
1  # number of message sizes
0 5 0 0  # message size, algorithm, fan in/out, segment size
# sizes 3..3: Open MPI's fixed decision (algorithm 0)
3  # communicator size
1  # number of message sizes
0 0 0 0  # message size, algorithm, fan in/out, segment size
# P = 4: tree (algorithm 6), for communicator sizes 4..7
4  # communicator size
1  # number of message sizes
0 6 0 0  # message size, algorithm, fan in/out, segment size
# P = 8: bruck (algorithm 4), for communicator sizes 8 and up
8  # communicator size
1  # number of message sizes
0 4 0 0  # message size, algorithm, fan in/out, segment size
"""


def test_the_classic_file_exactly() -> None:
    em = emit_barrier(_choices("4.1.6", P8="bruck", P2="two_proc", P4="tree"), "4.1.6",
                      "openmpi")
    head = [ln for ln in em.text.splitlines(keepends=True) if ln.startswith("#")][:4]
    assert "".join(head) == (
        "# Open MPI 4.1.6 coll_tuned dynamic rules: the barrier railgauge chose, written by "
        "railgauge\n# tune barrier.\n# Load with: mpirun --mca coll_tuned_use_dynamic_rules 1 "
        "--mca\n# coll_tuned_dynamic_rules_filename THIS_FILE ...\n")
    assert em.text == "".join(head) + BODY_4_1
    assert em.settings == {"coll_tuned_use_dynamic_rules": "1",
                           "coll_tuned_dynamic_rules_filename": "THIS_FILE"}
    assert any("mpirun --mca coll_tuned_use_dynamic_rules 1 --mca "
               "coll_tuned_dynamic_rules_filename THIS_FILE" in r for r in em.reasons)
    assert any("below 2 the rule of P = 2" in r for r in em.reasons)
    assert em.warnings == []


@pytest.mark.parametrize("version", ["1.8", "4.1.6", "5.0.10", "6.0"])
def test_each_size_gets_the_same_rule_in_every_release(version: str) -> None:
    """Open MPI up to 5.0 reads a classic rule's size as where it starts, 6.0 as where the
    next one starts: each release gets its own sizes, and every communicator size the
    same algorithm (0: the fixed decision)."""
    em = emit_barrier(_choices(version, P2="two_proc", P4="tree", P8="bruck"), version,
                      "openmpi")
    got = {P: classic_barrier_id(em.text, version, P) for P in range(1, 12)}
    assert got == {1: 5, 2: 5, 3: 0, 4: 6, 5: 6, 6: 6, 7: 6, 8: 4, 9: 4, 10: 4, 11: 4}
    sizes = [int(ln.split()[0]) for ln in em.text.splitlines() if "# communicator size" in ln]
    assert sizes == ([3, 4, 8, 8] if version == "6.0" else [2, 3, 4, 8])
    # From 5.0 a forced coll_tuned_barrier_algorithm comes before the file.
    forced_first = any("a forced algorithm comes before" in r for r in em.reasons)
    assert forced_first == (version in ("5.0.10", "6.0"))


def _repaired(schema: Any) -> Any:
    """The published schema with its two defects mended: ``"anyOf"`` given one object where
    JSON Schema wants a list, and ``$defs/int_or_inf`` a list where it wants a schema."""
    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            if isinstance(node.get("anyOf"), dict):
                node = {**{k: v for k, v in node.items() if k != "anyOf"}, **node["anyOf"]}
            return {k: fix(v) for k, v in node.items()}
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node
    out = fix(schema)
    out["$defs"]["int_or_inf"] = {"anyOf": out["$defs"]["int_or_inf"]}
    return out


def test_the_json_file_is_valid_for_open_mpi_s_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft201909Validator.check_schema(schema)
    schema = _repaired(schema)
    jsonschema.Draft201909Validator.check_schema(schema)
    validator = jsonschema.Draft201909Validator(schema)
    choices = _choices("6.0", P2="two_proc", P4="tree", P8="bruck")
    em = emit_barrier(choices, "6.0", "openmpi-json")
    doc = json.loads(em.text)
    assert list(validator.iter_errors(doc)) == []
    assert doc == {"rule_file_version": 3, "module": "tuned", "collectives": {"barrier": [
        {"comm_size_min": 0, "comm_size_max": 2,
         "rules": [{"msg_size_min": 0, "alg": "two_proc"}]},
        {"comm_size_min": 4, "comm_size_max": 7, "rules": [{"msg_size_min": 0, "alg": "tree"}]},
        {"comm_size_min": 8, "rules": [{"msg_size_min": 0, "alg": "bruck"}]}]}}
    classic = emit_barrier(choices, "6.0", "openmpi").text
    for P in range(1, 12):
        assert json_barrier_id(doc, "6.0", P) == classic_barrier_id(classic, "6.0", P)
    # The validator can fail: a field Open MPI's reader takes but the schema does not.
    doc["collectives"]["barrier"][0]["rules"][0]["seg_size"] = 0
    assert list(validator.iter_errors(doc))


@pytest.mark.parametrize("version", ["1.10.7", "4.1.6", "5.0.10"])
def test_json_is_refused_before_6_0(version: str) -> None:
    with pytest.raises(ExportError, match=r"JSON from 6\.0"):
        emit_barrier(_choices(version, P4="tree"), version, "openmpi-json")


def test_choices_open_mpi_cannot_take() -> None:
    with pytest.raises(ExportError, match="two_proc on 3"):
        emit_barrier(_choices("4.1.6", P3="two_proc"), "4.1.6", "openmpi")
    with pytest.raises(ExportError, match="chosen twice"):
        emit_barrier([*_choices("4.1.6", P4="tree"), *_choices("4.1.6", P4="bruck")], "4.1.6",
                     "openmpi")
    mpich = StackAlgorithm("mpich", "dissemination", None, "dissem")
    with pytest.raises(ExportError, match="not a coll_tuned"):
        emit_barrier([BarrierChoice(4, mpich, 1.0)], "4.1.6", "openmpi")
    with pytest.raises(ExportError, match="no barrier choices"):
        emit_barrier([], "4.1.6", "openmpi")
    with pytest.raises(ExportError, match="not an Open MPI format"):
        emit_barrier(_choices("4.1.6", P4="tree"), "4.1.6", "mpich")


# ---- the proof --------------------------------------------------------------------------------

def _expected(schedule: str, P: int) -> Signature:
    """railgauge's schedule of the algorithm, from the C generator (railgauge-sim --trace).
    Open MPI's double ring ("ring") is being added to native/src/coll/sched.c; until the
    simulator has it, its messages as coll_base_barrier.c sends them: two to the right."""
    try:
        return schedule_signature(schedule, P)
    except SimError as exc:
        if schedule != "ring" or "unknown barrier algorithm" not in str(exc):
            raise
        return {r: {(r + 1) % P: 2} for r in range(P)}


def test_the_signatures_tell_the_algorithms_apart_at_4() -> None:
    sigs = {a.name: json.dumps(_expected(a.schedule or "", 4), sort_keys=True)
            for a in barrier_algorithms("4.1.6") if a.accepts(4)}
    assert len(set(sigs.values())) == len(sigs), sigs
    # At 3 ranks linear, recursive doubling and tree send alike (0 to 1 and 2, 1 and 2 to
    # 0): there the proof tells them only from bruck and double ring.
    three = {n: _expected(_alg(n).schedule or "", 3) for n in ("linear", "recursive_doubling",
                                                                 "tree")}
    assert len({json.dumps(s, sort_keys=True) for s in three.values()}) == 1


needs_ompi = pytest.mark.skipif(shutil.which("mpirun.openmpi") is None
                                or shutil.which("mpicc.openmpi") is None,
                                reason="mpirun.openmpi or mpicc.openmpi not installed "
                                       "(apt-get install openmpi-bin libopenmpi-dev)")


@pytest.fixture(scope="module")
def ompi(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """The installed Open MPI's version, the barrier program and a folder to work in."""
    version = installed_version("openmpi")
    if version is None:
        pytest.skip("ompi_info found no Open MPI version")
    work = tmp_path_factory.mktemp("ompi")
    return version, build_barrier_program(work), work


def _run(ompi: tuple[str, Path, Path], text: str, name: str, P: int) -> Signature:
    _, prog, work = ompi
    rules = work / f"{name}.rules"
    rules.write_text(text, encoding="utf-8")
    run = run_barrier(prog, P, rules, iters=6, workdir=work)
    for word in ("rule", "warning", "error", "tuned"):
        assert word not in run.stderr.lower(), run.stderr
    return run.signature


def _what_runs(version: str, text: str, P: int) -> StackAlgorithm:
    """What the file gives P ranks, as Open MPI reads it; 0: the fixed decision."""
    aid = classic_barrier_id(text, version, P) or fixed_barrier_id(version, P)
    return next(a for a in barrier_algorithms(version) if a.id == aid)


@needs_ompi
@pytest.mark.parametrize("name", NAMES)
def test_open_mpi_runs_the_algorithm_the_file_names(ompi: tuple[str, Path, Path],
                                                     name: str) -> None:
    """One file with the algorithm at every P of 2, 3, 4 that Open MPI accepts it at; each
    P run with the file shows, in pml monitoring, the messages of railgauge's schedule."""
    version = ompi[0]
    alg = _alg(name, version)
    sizes = [P for P in (2, 3, 4) if alg.accepts(P)]
    text = emit_barrier([BarrierChoice(P, alg, 1.0) for P in sizes], version, "openmpi").text
    for P in sizes:
        assert _what_runs(version, text, P) == alg
        assert _run(ompi, text, f"{name}-{P}", P) == _expected(alg.schedule or "", P), (name, P)


@needs_ompi
def test_sizes_the_file_does_not_name(ompi: tuple[str, Path, Path]) -> None:
    """Between two asked sizes the smaller one's rule, below the smallest its rule, above
    the largest its rule; after two_proc, the fixed decision (not a failing two_proc)."""
    version = ompi[0]
    a = emit_barrier(_choices(version, P3="bruck", P5="linear"), version, "openmpi").text
    b = emit_barrier(_choices(version, P2="two_proc", P4="bruck"), version, "openmpi").text
    for text, name, P, want in ((a, "a", 4, "bruck"), (a, "a", 2, "bruck"),
                                (b, "b", 3, None), (b, "b", 5, "bruck")):
        alg = _what_runs(version, text, P)
        if want is not None:
            assert alg.name == want
        else:
            assert alg.id == fixed_barrier_id(version, P)
        assert _run(ompi, text, f"{name}-{P}", P) == _expected(alg.schedule or "", P), (name, P)
    # The fixed decision differs at 4 (linear in 4.1), so a above is a real choice.
    assert default_barrier(version, 4).name != "bruck"


@needs_ompi
def test_a_broken_file_falls_back_so_the_proof_can_fail(ompi: tuple[str, Path, Path]) -> None:
    """A rules file Open MPI rejects (its first message size is not 0) leaves the fixed
    decision; Open MPI 4.1 says nothing about it (its messages exist in debug builds only),
    so the monitored messages are the proof that a good file was read."""
    version = ompi[0]
    good = emit_barrier(_choices(version, P4="recursive_doubling"), version, "openmpi").text
    broken = good.replace("\n0 3 0 0", "\n1 3 0 0")
    assert broken != good
    with pytest.raises(ExportError):
        classic_barrier_id(broken, version, 4)
    fixed = default_barrier(version, 4)
    assert fixed.name != "recursive_doubling"
    assert _run(ompi, broken, "broken", 4) == _expected(fixed.schedule or "", 4)
    assert _run(ompi, good, "good", 4) == _expected("recdbl", 4)
