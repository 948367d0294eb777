"""`railgauge tune barrier -P LIST --emit STACK` (issue 21, item 1): the -P forms, the
choice among a stack's own algorithms per P (railgauge.stacks.choose) and the CLI's bad
input. The stacks' files and their proof by running Open MPI and MPICH are in
tests/test_stacks_openmpi.py and tests/test_stacks_mpich.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import find_native_tool
from railgauge.stacks import StackAlgorithm
from railgauge.stacks.choose import choose_barrier, model_warnings, parse_ranks
from railgauge.tune import TuneError
from test_tune import LAT, OVH, cli, write_model


@pytest.mark.parametrize(("text", "want"), [
    ("64", [64]), ("2,4,8", [2, 4, 8]), ("8, 2,8", [2, 8]), ("2..4096",
     [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]),
    ("3..20", [3, 4, 8, 16, 20]), ("5..5", [5]), ("1..2", [1, 2])])
def test_parse_ranks(text: str, want: list[int]) -> None:
    assert parse_ranks(text) == want


@pytest.mark.parametrize(("text", "words"), [
    ("", "empty"), ("0", "out of range"), ("2,,4", "not a number"), ("8..2", "above its end"),
    ("2..1e9", "not a number"), ("2..134217728", "out of range"), ("x", "not a number")])
def test_parse_ranks_refuses(text: str, words: str) -> None:
    with pytest.raises(TuneError, match=words) as ei:
        parse_ranks(text)
    assert ei.value.user


def _algs() -> list[StackAlgorithm]:
    return [StackAlgorithm("s", "lin", 1, "linear"), StackAlgorithm("s", "diss", 2, "dissem"),
            StackAlgorithm("s", "pair", 3, "recdbl", min_P=2, max_P=2),
            StackAlgorithm("s", "magic", 4, None, note="no schedule")]


def test_choose_per_P_by_the_closed_forms(tmp_path: Path) -> None:
    """Linear costs 2L + 2Po, dissemination ceil(log2 P)(2o + L): linear wins at small P
    under a large L, dissemination above; the algorithm without a schedule is listed,
    never chosen; at P = 2 three algorithms tie and the stack's default wins the tie."""
    model = write_model(tmp_path / "model-loggp.json")
    algs = _algs()
    res = choose_barrier([2, 4, 64], model, tool=find_native_tool("railgauge-sim"), stack="s",
                         version="1", algorithms=algs,
                         default=lambda P: algs[2] if P == 2 else algs[0])
    got = {c.P: c.algorithm.name for c in res.choices}
    lin = {P: 2 * LAT + 2 * P * OVH for P in (2, 4, 64)}
    dis = {P: (P - 1).bit_length() * (2 * OVH + LAT) for P in (2, 4, 64)}
    for P in (4, 64):
        want = "lin" if lin[P] < dis[P] else "diss"
        assert got[P] == want
        c = next(c for c in res.choices if c.P == P)
        assert c.predicted_us == pytest.approx(min(lin[P], dis[P]), abs=1e-9)
    assert got[2] == "pair"
    assert [r.algorithm.name for r in res.tables[4]] == ["lin", "diss", "magic"]
    assert res.tables[4][2].predicted_us is None and res.tables[4][2].note == "no schedule"
    doc = res.choices_json()
    assert [d["P"] for d in doc] == [2, 4, 64]
    assert doc[0] == {"P": 2, "algorithm": "pair", "id": 3,
                      "predicted_us": pytest.approx(dis[2]), "schedule": "recdbl",
                      "default": "pair", "default_predicted_us": pytest.approx(dis[2])}


def test_choose_refuses_when_nothing_simulates(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    only = [StackAlgorithm("s", "magic", 4, None)]
    with pytest.raises(TuneError, match="no barrier algorithm could be simulated"):
        choose_barrier([4], model, tool=find_native_tool("railgauge-sim"), stack="s",
                       version="1", algorithms=only, default=lambda P: only[0])


def test_model_warnings(tmp_path: Path) -> None:
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"model": "loggp", "transport": "shm"}))
    (w,) = model_warnings(m, "openmpi")
    assert "measured over shm, not over openmpi" in w
    m.write_text(json.dumps({"model": "loggp", "transport": "mpi", "source": {
        "transport_info": {"flavour": "mpich", "library": "MPICH 4.0.2"}}}))
    (w,) = model_warnings(m, "openmpi")
    assert "MPICH 4.0.2, not openmpi" in w
    assert model_warnings(m, "mpich") == []


@pytest.mark.parametrize(("args", "words"), [
    (["-P", ""], "-P: empty"), (["-P", "0"], "out of range"),
    (["-P", "4", "--out", "x"], "go with --emit"),
    (["-P", "4", "--emit", "openmpi", "--plot", "x.png"], "--plot"),
    (["-P", "4", "--emit", "openmpi", "--stack-version", "0.9"], "--stack-version"),
    (["-P", "4", "--emit", "mpich", "--stack-version", "9.1"], "--stack-version"),
    (["-P", "4", "--emit", "lam"], "Invalid value for '--emit'")])
def test_cli_bad_input_one_line_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    proc = cli("tune", "barrier", "--model", str(model), *args)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr
    if "Invalid value" not in words:
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_cli_list_json(tmp_path: Path) -> None:
    """Several P without --emit: one result object per P; one P: today's object."""
    model = write_model(tmp_path / "model-loggp.json")
    proc = cli("tune", "barrier", "--model", str(model), "-P", "2,16", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [r["P"] for r in doc["results"]] == [2, 16]
    one = json.loads(cli("tune", "barrier", "--model", str(model), "-P", "16",
                         "--json").stdout)
    assert one == doc["results"][1]


def test_cli_emit_openmpi_json_choices(tmp_path: Path) -> None:
    """The contract's object: settings, file, reasons and one choice per P with Open MPI's
    name and number; the rules file names its own path; the model's missing transport is
    warned about, exit 0."""
    model = write_model(tmp_path / "model-loggp.json")
    out = tmp_path / "barrier.rules"
    proc = cli("tune", "barrier", "--model", str(model), "-P", "2..8", "--emit", "openmpi",
               "--stack-version", "4.1.6", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["stack"] == "openmpi" and doc["version"] == "4.1.6"
    assert doc["file"] == str(out) and doc["content"] is None and doc["reasons"]
    assert doc["settings"]["coll_tuned_use_dynamic_rules"] == "1"
    assert doc["settings"]["coll_tuned_dynamic_rules_filename"] == str(out.resolve())
    assert [c["P"] for c in doc["choices"]] == [2, 4, 8]
    names = {1: "linear", 2: "double_ring", 3: "recursive_doubling", 4: "bruck",
             5: "two_proc", 6: "tree"}
    for c in doc["choices"]:
        assert names[c["id"]] == c["algorithm"]
        assert c["predicted_us"] == min(r["predicted_us"] for r in doc["table"][str(c["P"])]
                                        if r["predicted_us"] is not None)
    assert "does not say which transport" in proc.stderr
    assert out.read_text().startswith("# Open MPI 4.1.6")


def test_cli_emit_mpich_writes_selection_files_beside_out(tmp_path: Path) -> None:
    """Under a large L linear wins at small P and dissemination above (the closed forms of
    test_choose_per_P_by_the_closed_forms); MPICH 4.0 has no linear, so the choice is the
    same at every P and needs no selection file; with a model where the winner changes
    with P the files are written beside --out and named there by absolute path."""
    model = write_model(tmp_path / "model-loggp.json")
    out = tmp_path / "sub" / "barrier.env"
    out.parent.mkdir()
    proc = cli("tune", "barrier", "--model", str(model), "-P", "2,16", "--emit", "mpich",
               "--stack-version", "4.1", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert out.is_file() and out.read_text() == (doc["content"] or out.read_text())
    for name in doc.get("files", {}):
        assert (out.parent / name).is_file()
        assert str(out.parent.resolve() / name) in doc["settings"].values()


def test_cli_emit_unwritable_out(tmp_path: Path) -> None:
    model = write_model(tmp_path / "model-loggp.json")
    (tmp_path / "plain").write_text("a file, not a folder")
    proc = cli("tune", "barrier", "--model", str(model), "-P", "4", "--emit", "openmpi",
               "--stack-version", "4.1.6", "--out", str(tmp_path / "plain" / "f"))
    assert proc.returncode == 2
    assert "cannot write" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_cli_emit_refuses_a_flag_model(tmp_path: Path) -> None:
    """The stacks' barriers run on messages: a flag model (model-flags.json) is bad input."""
    m = tmp_path / "model-flags.json"
    m.write_text(json.dumps({"model": "flags", "engine": "flags", "ranges": []}))
    proc = cli("tune", "barrier", "--model", str(m), "-P", "4", "--emit", "openmpi",
               "--stack-version", "4.1.6")
    assert proc.returncode == 2, proc.stderr
    assert "is a flag model" in proc.stderr and "run on messages" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
