"""librailgauge-pmpi-<flavour>.so (issue 7): MPI_Barrier replaced through PMPI by the
barriers of coll/, under Open MPI's mpirun.openmpi and MPICH's mpiexec.mpich.

A small MPI program of ours (native/pmpi/barrier_check.c, built here with the flavour's
mpicc) enters each barrier after a random delay, on MPI_COMM_WORLD and on a split of it,
and checks on one clock that no rank left before the last one of its communicator entered;
it also reads how many barriers the preloaded library ran, so a run that silently fell back
to MPI's own barrier would fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, find_native_tool
from mpi_util import MPI_FLAVOURS, WRAPPERS, sanitizer_env
from railgauge.mpilaunch import MpiResult, run_mpi

pytestmark = pytest.mark.native

CHECK_SRC = ROOT / "native" / "pmpi" / "barrier_check.c"
ITERS = 30


def library(flavour: str) -> Path:
    """Where `railgauge pmpi --print-path` finds it: beside the tools of a build tree
    (RG_NATIVE_DIR), or in lib/railgauge/ of an installation."""
    from railgauge.cli.common import UserError
    from railgauge.cli.pmpi import pmpi_library_path

    try:
        return pmpi_library_path(flavour)
    except UserError as exc:
        pytest.fail(f"{exc} (mpicc.{flavour} is installed, so it should have been built)")


@pytest.fixture(scope="module")
def check_program(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """barrier_check built with each installed flavour's mpicc."""
    out = tmp_path_factory.mktemp("pmpi")
    progs = {}
    for flavour, cc in WRAPPERS.items():
        exe = out / f"barrier_check-{flavour}"
        proc = subprocess.run([cc, "-O2", "-o", str(exe), str(CHECK_SRC), "-ldl"],
                              capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            progs[flavour] = str(exe)
    return progs


def _run(progs: dict[str, str], flavour: str, nranks: int, env: dict[str, str],
         *args: str) -> MpiResult:
    if flavour not in progs:
        pytest.fail(f"barrier_check did not build with {WRAPPERS[flavour]}")
    return run_mpi(flavour, [progs[flavour], str(ITERS), "200", *args], nranks,
                   env={**sanitizer_env(), **env}, timeout_s=90)


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
@pytest.mark.parametrize("nranks", [3, 5])
@pytest.mark.parametrize("algorithm",
                         ["linear", "binomial", "recdbl", "dissem", "nway:2", "nway:3"])
@pytest.mark.parametrize("shm", ["auto", "0"])
def test_barrier_under_mpi(check_program: dict[str, str], flavour: str, nranks: int,
                           algorithm: str, shm: str) -> None:
    """Both engines: flags in an MPI shared window (every rank is on this host, so auto
    takes it) and zero-byte messages (RG_PMPI_BARRIER_SHM=0)."""
    res = _run(check_program, flavour, nranks,
               {"LD_PRELOAD": str(library(flavour)), "RG_PMPI_BARRIER": algorithm,
                "RG_PMPI_BARRIER_SHM": shm})
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    # Rank 0 ran every one of its barriers through the library: ITERS of them, half on
    # MPI_COMM_WORLD and half on its part of the split, on the engine asked for.
    assert f"violations=0 barriers={ITERS}" in res.stdout, res.stdout
    assert f"shm={1 if shm == 'auto' else 0}" in res.stdout, res.stdout


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
@pytest.mark.parametrize(("nranks", "algorithm"),
                         [(3, "ring"), (4, "ring"), (3, "kdissem:3"), (4, "kdissem:3"),
                          (4, "recexch:2"), (3, "recexch:3"), (4, "recexch:3")])
@pytest.mark.parametrize("shm", ["auto", "0"])
def test_stack_barriers_under_mpi(check_program: dict[str, str], flavour: str, nranks: int,
                                  algorithm: str, shm: str) -> None:
    """The stacks' own schedules (Open MPI's double ring, MPICH's k-dissemination and
    recursive exchange; docs/coll.md) through the library, on both engines: the ring and
    kdissem:3 on 4 carry one ordered pair twice in a barrier, recexch folds ranks in."""
    res = _run(check_program, flavour, nranks,
               {"LD_PRELOAD": str(library(flavour)), "RG_PMPI_BARRIER": algorithm,
                "RG_PMPI_BARRIER_SHM": shm, "RG_PMPI_VERBOSE": "1"})
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert f"violations=0 barriers={ITERS}" in res.stdout, res.stdout
    assert f"shm={1 if shm == 'auto' else 0}" in res.stdout, res.stdout
    assert f": {algorithm} on " in res.stderr, res.stderr


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_the_check_can_fail(check_program: dict[str, str], flavour: str) -> None:
    res = _run(check_program, flavour, 3, {}, "--no-barrier")
    assert res.returncode != 0
    assert "barriers=-1" in res.stdout
    assert "violations=0" not in res.stdout, res.stdout


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RG_PMPI_BARRIER": "nway:0"},
         "RG_PMPI_BARRIER: barrier algorithm 'nway:0': n must be an integer in 1..1024"),
        ({"RG_PMPI_BARRIER": "bogus"}, "unknown barrier algorithm 'bogus'"),
        ({"RG_PMPI_BARRIER": "nway"}, "needs n >= 1"),
        ({"RG_PMPI_BARRIER": "kdissem:1"},
         "RG_PMPI_BARRIER: barrier algorithm 'kdissem:1': K must be an integer in 2..1025"),
        ({"RG_PMPI_BARRIER": "ring:2"}, "barrier algorithm 'ring:2' takes no n"),
        ({"RG_PMPI_MODEL": "/nonexistent/model.json"},
         "RG_PMPI_MODEL=/nonexistent/model.json: cannot open it"),
        ({"RG_PMPI_BARRIER_SHM": "yes"}, "RG_PMPI_BARRIER_SHM=yes: expected auto, 1 or 0"),
        # A former name is named as what was set.
        ({"RAILGAUGE_BARRIER_SHM": "yes"}, "RAILGAUGE_BARRIER_SHM=yes: expected auto, 1 or 0"),
        ({"RG_PMPI_MODEL": str(ROOT / "docs" / "data" / "onen-16" / "facts.json")},
         "not a model-loggp.json"),
        ({"RG_PMPI_MODEL": str(ROOT / "native" / "tests" / "fuzz" / "json-corpus" /
                               "errors.json")},
         "errors.json: it is not a model-loggp.json or model-flags.json: not JSON (line 1, "
         "column 33: a value expected)"),
        ({"RG_PMPI_BARRIER": "x" * 300}, "environment variable RG_PMPI_BARRIER='xxx"),
    ],
)
def test_bad_settings_fail_at_init(check_program: dict[str, str], flavour: str,
                                   env: dict[str, str], message: str) -> None:
    res = _run(check_program, flavour, 2, {"LD_PRELOAD": str(library(flavour)), **env})
    assert res.returncode != 0
    assert "railgauge-pmpi: " in res.stderr and message in res.stderr, res.stderr
    assert "MPI_Init returned an error" in res.stderr, res.stderr
    assert res.returncode != 124, "timed out instead of failing"


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_cli_print_path(flavour: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"),
               RG_NATIVE_DIR=str(Path(find_native_tool("railgauge-bench")).parent))
    proc = subprocess.run([sys.executable, "-m", "railgauge.cli.main", "pmpi", "--print-path",
                           "--mpi", flavour], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    if not (Path(env["RG_NATIVE_DIR"]) / f"librailgauge-pmpi-{flavour}.so").is_file():
        assert proc.returncode == 2
        assert "not found" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == library(flavour).resolve()
    proc = subprocess.run([sys.executable, "-m", "railgauge.cli.main", "pmpi", "--print-path",
                           "--mpi", "lam"], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert proc.returncode == 2


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_model_chooses_the_barrier(check_program: dict[str, str], flavour: str,
                                   tmp_path: Path) -> None:
    """RG_PMPI_MODEL: with L = 10 us, o = 2 us (g below o), LogP makes one round of 4
    sends and receives (nway:4: 4o + max(4o, o + L) = 20 us) the fastest on 5 ranks,
    ahead of nway:2 (30), linear (34) and dissemination (3 (2o + L) = 42); the barrier
    then runs it, correctly, on every communicator; RG_PMPI_BARRIER wins over it."""
    model = tmp_path / "model-loggp.json"
    model.write_text(json.dumps({"model": "loggp", "ranges": [
        {"from_bytes": 1, "L_us": 10.0, "o_us": 2.0, "g_us": 0.5}]}))
    env = {"LD_PRELOAD": str(library(flavour)), "RG_PMPI_MODEL": str(model)}
    res = _run(check_program, flavour, 5, env)
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert f"violations=0 barriers={ITERS} choice=" in res.stdout, res.stdout
    # Rank 0's last new communicator is its half of the split (3 ranks: nway:2 there).
    assert "choice=nway:2" in res.stdout, res.stdout
    res = _run(check_program, flavour, 5, {**env, "RG_PMPI_BARRIER": "linear"})
    assert res.returncode == 0 and "choice=linear" in res.stdout, res.stdout


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_default_is_the_tuned_choice(check_program: dict[str, str], flavour: str) -> None:
    """No setting: on one node the built-in flag model (L 0.18 us, duplex 0.07, g 0.0086) chooses
    per size: one round of n-way for 3 ranks (nway:2, rank 0's half of the split) and 5
    (nway:4); on messages, without a model of the network, dissemination."""
    env = {"LD_PRELOAD": str(library(flavour)), "RG_PMPI_VERBOSE": "1"}
    res = _run(check_program, flavour, 5, env)
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert "choice=nway:2 shm=1" in res.stdout, res.stdout
    assert ("railgauge-pmpi: a communicator of 5 ranks on one node: nway:4 on shared-memory "
            "flags (the built-in flag model)") in res.stderr, res.stderr
    res = _run(check_program, flavour, 5, {**env, "RG_PMPI_BARRIER_SHM": "0"})
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert "choice=dissem shm=0" in res.stdout, res.stdout
    assert "5 ranks: dissem on MPI point-to-point (no model of the messages" in res.stderr


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_model_directory_per_engine(check_program: dict[str, str], flavour: str,
                                    tmp_path: Path) -> None:
    """RG_PMPI_MODEL=<the gauge's report>: model-flags.json for communicators on flags,
    model-loggp.json for those on messages. Under the flag model here (L 1, o 0, g 5: a
    further signal of a round costs more than a round; duplex 2: a signal while the receiver
    signals too costs 3) the binomial tree on 5 ranks (6 rounds one way, 6 us) beats
    dissemination (3 exchanges, 9 us) and every wider schedule; without the duplex term
    dissemination (3 us) would win. The messaging model (L 10, o 2) chooses nway:4 (one
    round) there. A directory with neither file fails MPI_Init."""
    (tmp_path / "model-loggp.json").write_text(json.dumps({"model": "loggp", "ranges": [
        {"from_bytes": 1, "L_us": 10.0, "o_us": 2.0, "g_us": 0.5}]}))
    (tmp_path / "model-flags.json").write_text(json.dumps({
        "model": "loggp", "engine": "flags",
        "ranges": [{"from_bytes": 0, "L_us": 1.0, "o_us": 0.0, "g_us": 5.0,
                    "duplex_us": 2.0}]}))
    env = {"LD_PRELOAD": str(library(flavour)), "RG_PMPI_MODEL": str(tmp_path),
           "RG_PMPI_VERBOSE": "1"}
    res = _run(check_program, flavour, 5, env)
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert f"5 ranks on one node: binomial on shared-memory flags ({tmp_path}/model-flags.json)" \
        in res.stderr, res.stderr
    res = _run(check_program, flavour, 5, {**env, "RG_PMPI_BARRIER_SHM": "0"})
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert f"5 ranks: nway:4 on MPI point-to-point ({tmp_path}/model-loggp.json)" \
        in res.stderr, res.stderr
    (tmp_path / "model-loggp.json").unlink()
    (tmp_path / "model-flags.json").unlink()
    res = _run(check_program, flavour, 2, env)
    assert res.returncode != 0 and "neither model-loggp.json nor model-flags.json" in res.stderr


MODEL = {"model": "loggp", "ranges": [{"from_bytes": 1, "L_us": 10.0, "o_us": 2.0,
                                       "g_us": 0.5}]}
FLAGS = {"model": "loggp", "engine": "flags",
         "ranges": [{"from_bytes": 0, "L_us": 1.0, "o_us": 0.0, "g_us": 5.0, "duplex_us": 2.0}]}


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_model_files_any_spacing(check_program: dict[str, str], flavour: str,
                                 tmp_path: Path) -> None:
    """The model files are read as JSON (base's reader), not as Python's spacing of them:
    written compact (separators=(",", ":"), where no '"model": "loggp"' with its space is
    left to find) or indented, with the keys in another order, they choose what
    test_model_directory_per_engine's files choose."""
    env = {"LD_PRELOAD": str(library(flavour)), "RG_PMPI_MODEL": str(tmp_path),
           "RG_PMPI_VERBOSE": "1"}
    (tmp_path / "model-loggp.json").write_text(json.dumps(MODEL, separators=(",", ":")))
    (tmp_path / "model-flags.json").write_text(
        json.dumps(dict(reversed(list(FLAGS.items()))), indent="\t") + "\r\n")
    res = _run(check_program, flavour, 5, env)
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert "5 ranks on one node: binomial on shared-memory flags" in res.stderr, res.stderr
    res = _run(check_program, flavour, 5, {**env, "RG_PMPI_BARRIER_SHM": "0"})
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert "5 ranks: nway:4 on MPI point-to-point" in res.stderr, res.stderr


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_former_names_still_read(check_program: dict[str, str], flavour: str,
                                 tmp_path: Path) -> None:
    """RAILGAUGE_BARRIER, RAILGAUGE_MODEL, RAILGAUGE_BARRIER_SHM and RAILGAUGE_PMPI_VERBOSE,
    the names before RG_PMPI_, are still read; where both names are set the RG_PMPI_ one
    wins, and the verbose line names the variable that was read."""
    model = tmp_path / "model-loggp.json"
    model.write_text(json.dumps(MODEL))
    lib = {"LD_PRELOAD": str(library(flavour))}
    res = _run(check_program, flavour, 5, {**lib, "RAILGAUGE_BARRIER": "linear",
                                           "RAILGAUGE_BARRIER_SHM": "0",
                                           "RAILGAUGE_PMPI_VERBOSE": "1"})
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert "choice=linear shm=0" in res.stdout, res.stdout
    assert "5 ranks: linear on MPI point-to-point (RAILGAUGE_BARRIER)" in res.stderr
    res = _run(check_program, flavour, 5, {**lib, "RAILGAUGE_MODEL": str(model),
                                           "RAILGAUGE_BARRIER_SHM": "0"})
    assert res.returncode == 0 and "choice=nway:2 shm=0" in res.stdout, res.stdout
    res = _run(check_program, flavour, 5, {**lib, "RAILGAUGE_BARRIER": "linear",
                                           "RG_PMPI_BARRIER": "binomial",
                                           "RAILGAUGE_BARRIER_SHM": "bogus",
                                           "RG_PMPI_BARRIER_SHM": "auto",
                                           "RG_PMPI_VERBOSE": "1"})
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert "choice=binomial shm=1" in res.stdout, res.stdout
    assert "binomial on shared-memory flags (RG_PMPI_BARRIER)" in res.stderr, res.stderr


def test_settings_listed() -> None:
    """railgauge-bench --print-config lists the PMPI library's settings with their
    former names, and the value of either name."""
    tool = find_native_tool("railgauge-bench")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RG_PMPI_", "RAILGAUGE_"))}
    proc = subprocess.run([tool, "--print-config"], capture_output=True, text=True,
                          env={**env, "RAILGAUGE_BARRIER": "nway:3"}, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    section = lines[lines.index("[PMPI]") + 1:]
    names = {ln.split()[0]: ln for ln in section if ln.startswith("RG_PMPI_")}
    assert set(names) == {"RG_PMPI_BARRIER", "RG_PMPI_MODEL", "RG_PMPI_BARRIER_SHM",
                          "RG_PMPI_VERBOSE"}
    assert names["RG_PMPI_BARRIER"].split()[1] == "nway:3"
    assert names["RG_PMPI_BARRIER"].endswith("(formerly RAILGAUGE_BARRIER, still read)")
    assert names["RG_PMPI_VERBOSE"].endswith("(formerly RAILGAUGE_PMPI_VERBOSE, still read)")
    proc = subprocess.run([tool, "--print-config"], capture_output=True, text=True,
                          env={**env, "RAILGAUGE_BARRIER": "nway:3",
                               "RG_PMPI_BARRIER": "dissem"}, timeout=60, check=False)
    assert "\nRG_PMPI_BARRIER      dissem " in proc.stdout, proc.stdout


def _per_rank(flavour: str, prog: str, rank1_env: str) -> list[str]:
    """A command that runs prog with the PMPI library, and on rank 1 only with rank1_env
    (NAME=VALUE) too: a setting that differs between ranks."""
    var = "OMPI_COMM_WORLD_RANK" if flavour == "openmpi" else "PMI_RANK"
    script = (f'if [ "${var}" = 1 ]; then export {rank1_env}; fi; '
              f'exec env LD_PRELOAD="$RG_TEST_PMPI" "$@"')
    return ["/bin/sh", "-c", script, "sh", prog, str(ITERS), "200"]


@pytest.mark.parametrize("flavour", MPI_FLAVOURS)
def test_ranks_that_disagree(check_program: dict[str, str], flavour: str) -> None:
    """Rank 0's choice is the communicator's, so a setting that differs on another rank
    cannot split a barrier into two schedules; RG_PMPI_BARRIER_SHM=0 on one rank puts
    every rank on messages; a bad setting on rank 1 alone fails
    MPI_Init on every rank (no rank left waiting), and rank 1 says why."""
    if flavour not in check_program:
        pytest.fail(f"barrier_check did not build with {WRAPPERS[flavour]}")
    env = {**sanitizer_env(), "RG_TEST_PMPI": str(library(flavour)),
           "RG_PMPI_BARRIER": "dissem"}
    res = run_mpi(flavour, _per_rank(flavour, check_program[flavour],
                                     "RG_PMPI_BARRIER=linear"), 4, env=env, timeout_s=90)
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert f"violations=0 barriers={ITERS} choice=dissem" in res.stdout, res.stdout
    # RG_PMPI_BARRIER_SHM=0 on rank 1 alone: every rank takes messages.
    res = run_mpi(flavour, _per_rank(flavour, check_program[flavour],
                                     "RG_PMPI_BARRIER_SHM=0"), 4, env=env, timeout_s=90)
    assert res.returncode == 0, f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert f"violations=0 barriers={ITERS} choice=dissem shm=0" in res.stdout, res.stdout
    res = run_mpi(flavour, _per_rank(flavour, check_program[flavour],
                                     "RG_PMPI_BARRIER=nway:0"), 4, env=env, timeout_s=90)
    assert res.returncode not in (0, 124), f"{res.failure}\n{res.stdout}\n{res.stderr}"
    assert "railgauge-pmpi: rank 1: RG_PMPI_BARRIER: " in res.stderr, res.stderr
    assert res.stderr.count("railgauge-pmpi:") == 1, res.stderr


def test_built_in_flag_model_is_the_measured_one() -> None:
    """The PMPI library's built-in flag model (rg__pmpi_flags_default) is the one it cites,
    docs/data/barrier-8/model-flags.json (rounded to its digits): a re-run of the benchmark
    that changes the file must change the library too."""
    import re

    src = (ROOT / "native" / "pmpi" / "pmpi.c").read_text()
    m = re.search(r"rg__pmpi_flags_default = \{\s*1, ([0-9.]+), ([0-9.]+), ([0-9.]+), "
                  r"([0-9.]+),", src)
    assert m, "rg__pmpi_flags_default not found in pmpi.c"
    lat, o, g, duplex = (float(x) for x in m.groups())
    rng = json.loads((ROOT / "docs/data/barrier-8/model-flags.json").read_text())["ranges"][0]
    assert lat == pytest.approx(rng["L_us"], abs=5e-4)
    assert o == rng["o_us"] == 0.0
    assert g == pytest.approx(rng["g_us"], abs=5e-5)
    assert duplex == pytest.approx(rng["duplex_us"], abs=5e-4)
