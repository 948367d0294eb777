"""railgauge.stacks.mpich: MPICH's barrier per release, its settings and selection file,
and the proof that MPICH runs what the settings say.

The proof: MPICH's collectives call UCX below PMPI, so an LD_PRELOAD spy
(native/tools/stackspy/ucx_spy.c; built here with mpicc.mpich when the build tree has no
librailgauge-stackspy-mpich.so) logs every UCX tag send and posted receive, with the
destination's world rank and the tag's context id, source rank and MPI tag. With
MPIR_CVAR_NOLOCAL=1 every communicator is flat; MPIR_CVAR_NUM_CLIQUES=2 makes two
"nodes" of one host, so that smp (and ch4's composition_alpha) show their node and
node-roots subcommunicators. ch4:ucx has no shared-memory module: every message, on one
node too, goes through UCX and is seen.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from railgauge.export.files import ExportError
from railgauge.mpilaunch import run_mpi
from railgauge.stacks import BarrierChoice, StackAlgorithm
from railgauge.stacks import mpich as m

ROOT = Path(__file__).resolve().parent.parent
SPY_SRC = ROOT / "native" / "tools" / "stackspy" / "ucx_spy.c"
NBARRIERS = 4


def _alg(version: str, name: str, schedule: str | None = None,
         device: str = "ch4:ucx") -> StackAlgorithm:
    for a in m.barrier_algorithms(version, device=device):
        if a.name == name and (schedule is None or a.schedule == schedule):
            return a
    raise AssertionError(f"{name} {schedule} not in {version}")


def _choice(P: int, alg: StackAlgorithm) -> BarrierChoice:
    return BarrierChoice(P=P, algorithm=alg, predicted_us=1.0)


# ---- the releases -------------------------------------------------------------------------

def test_algorithms_per_release() -> None:
    names = {r: {a.name for a in m.barrier_algorithms(r, device="ch4:ucx")}
             for r in m.RELEASES}
    assert names["3.3"] == {"recursive_doubling", "nb", "smp", "composition_alpha"}
    assert names["4.0"] == {"dissemination", "nb", "smp", "composition_alpha"}
    for r in ("4.1", "4.2", "4.3"):
        assert names[r] == {"k_dissemination", "recexch", "nb", "smp", "composition_alpha"}
    assert "release_gather" in {a.name for a in m.barrier_algorithms("4.0", device="ch4:ofi")}
    assert "release_gather" not in {a.name for a in m.barrier_algorithms("3.3",
                                                                         device="ch4:ofi")}
    assert _alg("4.0.2", "dissemination").schedule == "dissem"
    assert _alg("4.0.2", "nb").schedule == "dissem"
    assert _alg("4.1", "k_dissemination", "kdissem:4").note
    assert _alg("4.3", "recexch", "recexch:3").schedule == "recexch:3"
    assert _alg("4.0.2", "smp").schedule is None
    assert all(a.id is None for a in m.barrier_algorithms("4.2", device="ch4:ofi"))


def test_defaults() -> None:
    # One node: node-aware, the device's composition; ch4:ucx has no posix shm.
    assert m.default_barrier("4.0.2", 4, device="ch4:ucx").name == "composition_alpha"
    assert m.default_barrier("4.0.2", 4, device="ch4:ofi").name == "release_gather"
    assert m.default_barrier("3.3", 4, device="ch4:ofi").name == "composition_alpha"
    # One rank per node: flat, MPIR's default.
    assert m.default_barrier("4.0", 8, nodes=8, device="ch4:ucx").name == "dissemination"
    k = m.default_barrier("4.1", 8, nodes=8, device="ch4:ucx")
    assert (k.name, k.schedule) == ("k_dissemination", "dissem")
    assert m.default_barrier("3.3", 1, device="ch4:ucx").name == "recursive_doubling"
    assert m.default_barrier("4.3", 16, nodes=4, device="ch4:ucx").name == "composition_alpha"


@pytest.mark.parametrize("version", ["4.4", "2.1", "x", "5.0.1"])
def test_unknown_version(version: str) -> None:
    with pytest.raises(ExportError, match="not an MPICH release"):
        m.barrier_algorithms(version, device="ch4:ucx")
    with pytest.raises(ExportError):
        m.emit_barrier([_choice(4, _alg("4.0", "dissemination"))], version, device="ch4:ucx")


def test_bad_input() -> None:
    d = _alg("4.0", "dissemination")
    with pytest.raises(ExportError, match="format"):
        m.emit_barrier([_choice(4, d)], "4.0.2", "openmpi", device="ch4:ucx")
    with pytest.raises(ExportError, match="device"):
        m.emit_barrier([_choice(4, d)], "4.0.2", device="ch3:nemesis")
    with pytest.raises(ExportError, match="no posix shared-memory"):
        m.emit_barrier([_choice(4, _alg("4.0", "release_gather", device="ch4:ofi"))],
                       "4.0.2", device="ch4:ucx")
    with pytest.raises(ExportError, match="no such algorithm"):
        m.emit_barrier([_choice(4, _alg("4.1", "k_dissemination", "kdissem:3"))], "4.0.2",
                       device="ch4:ucx")
    with pytest.raises(ExportError, match=r"3\.3 has no collective selection"):
        m.emit_barrier([_choice(2, _alg("3.3", "nb")), _choice(4, _alg("3.3", "smp"))],
                       "3.3", device="ch4:ucx")


# ---- the settings -------------------------------------------------------------------------

def test_settings_40_and_41_names() -> None:
    d40 = _alg("4.0.2", "dissemination")
    em = m.emit_barrier([_choice(P, d40) for P in (2, 3, 4)], "4.0.2", device="ch4:ucx")
    assert em.settings == {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll",
                           "MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE": "0",
                           "MPIR_CVAR_BARRIER_INTRA_ALGORITHM": "dissemination"}
    assert em.files == {}
    assert "export MPIR_CVAR_BARRIER_INTRA_ALGORITHM=dissemination" in em.text
    # 4.0's dissemination is 4.1's k_dissemination with k = 2 ...
    em41 = m.emit_barrier([_choice(4, d40)], "4.1", device="ch4:ucx")
    assert em41.settings["MPIR_CVAR_BARRIER_INTRA_ALGORITHM"] == "k_dissemination"
    assert em41.settings["MPIR_CVAR_BARRIER_DISSEM_KVAL"] == "2"
    # ... and back.
    em40 = m.emit_barrier([_choice(4, _alg("4.2", "k_dissemination", "dissem"))], "4.0",
                          device="ch4:ucx")
    assert em40.settings["MPIR_CVAR_BARRIER_INTRA_ALGORITHM"] == "dissemination"
    assert "MPIR_CVAR_BARRIER_DISSEM_KVAL" not in em40.settings
    em33 = m.emit_barrier([_choice(4, d40)], "3.3", device="ch4:ucx")
    assert em33.settings["MPIR_CVAR_BARRIER_INTRA_ALGORITHM"] == "recursive_doubling"
    rx = m.emit_barrier([_choice(4, _alg("4.3", "recexch", "recexch:4"))], "4.3.1",
                        device="ch4:ucx")
    assert rx.settings["MPIR_CVAR_BARRIER_RECEXCH_KVAL"] == "4"
    rg = m.emit_barrier([_choice(4, _alg("4.0", "release_gather", device="ch4:ofi"))],
                        "4.0.2", device="ch4:ofi")
    assert rg.settings["MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE"] == "1"
    assert rg.settings["MPIR_CVAR_BARRIER_POSIX_INTRA_ALGORITHM"] == "release_gather"
    assert rg.to_json(None)["files"] == {}


def _without_barrier(tree: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in tree.items() if k != "collective=barrier"}


@pytest.mark.parametrize("version", ["3.4", "4.0.2", "4.1", "4.2", "4.3"])
def test_selection_file_is_default_tree_with_only_barrier_changed(version: str) -> None:
    first = "dissemination" if version in ("3.4", "4.0.2") else "k_dissemination"
    choices = [_choice(2, _alg(version, first)), _choice(3, _alg(version, "nb")),
               _choice(8, _alg(version, "smp")), _choice(64, _alg(version, first))]
    em = m.emit_barrier(choices, version, device="ch4:ucx", file_dir="/abs/dir")
    assert set(em.files) == {m.MPIR_JSON_NAME}
    assert em.settings["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] == \
        f"/abs/dir/{m.MPIR_JSON_NAME}"
    assert em.settings["MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE"] == "0"
    assert em.settings["MPIR_CVAR_BARRIER_INTRA_ALGORITHM"] == "auto"
    got = json.loads(em.files[m.MPIR_JSON_NAME])
    default = m.load_default_tree(version, "mpir")
    assert list(got) == list(default)
    assert _without_barrier(got) == _without_barrier(default)
    assert got["collective=barrier"]["comm_type=inter"] == \
        default["collective=barrier"]["comm_type=inter"]
    intra = got["collective=barrier"]["comm_type=intra"]
    assert list(intra) == ["comm_size<=2", "comm_size<=3", "comm_size<=8", "comm_size=any"]
    assert intra["comm_size<=3"] == {"algorithm=MPIR_Barrier_allcomm_nb": {}}
    flat = default["collective=barrier"]["comm_type=intra"]["comm_hierarchy=any"]
    assert intra["comm_size<=8"] == {
        "comm_hierarchy=parent": {"algorithm=MPIR_Barrier_intra_smp": {}},
        "comm_hierarchy=any": flat}
    assert intra["comm_size<=2"] == intra["comm_size=any"]
    if version in ("3.4", "4.0.2"):
        assert intra["comm_size<=2"] == {"algorithm=MPIR_Barrier_intra_dissemination": {}}
    else:
        assert intra["comm_size<=2"] == {
            "algorithm=MPIR_Barrier_intra_k_dissemination": {"k=2": {}}}


def test_device_kept_at_some_sizes_needs_ch4_file() -> None:
    rg = _alg("4.1", "release_gather", device="ch4:ofi")
    kd = _alg("4.1", "k_dissemination", "kdissem:4", device="ch4:ofi")
    em = m.emit_barrier([_choice(8, rg), _choice(32, kd)], "4.1", device="ch4:ofi")
    assert set(em.files) == {m.MPIR_JSON_NAME, m.CH4_JSON_NAME}
    assert em.settings["MPIR_CVAR_BARRIER_DEVICE_COLLECTIVE"] == "1"
    ch4 = json.loads(em.files[m.CH4_JSON_NAME])
    default = m.load_default_tree("4.1", "ch4")
    assert _without_barrier(ch4) == _without_barrier(default)
    intra = ch4["collective=barrier"]["comm_type=intra"]
    assert intra["comm_size<=8"] == default["collective=barrier"]["comm_type=intra"]
    assert intra["comm_size=any"] == {"composition=MPIDI_Barrier_intra_composition_beta": {}}
    mpir = json.loads(em.files[m.MPIR_JSON_NAME])["collective=barrier"]["comm_type=intra"]
    assert mpir["comm_size=any"] == {
        "algorithm=MPIR_Barrier_intra_k_dissemination": {"k=4": {}}}


def test_decode_ucx_tag() -> None:
    t = m.decode_ucx_tag(0x0003000200000001)
    assert (t.context_id, t.source, t.tag) == (3, 2, m.MPIR_BARRIER_TAG)


# ---- the proof ----------------------------------------------------------------------------

pytestmark_mpich = pytest.mark.skipif(shutil.which("mpiexec.mpich") is None
                                      or shutil.which("mpicc.mpich") is None,
                                      reason="mpiexec.mpich or mpicc.mpich not installed "
                                      "(apt-get install mpich libmpich-dev)")


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the barrier program, the spy library)."""
    if shutil.which("mpiexec.mpich") is None or shutil.which("mpicc.mpich") is None:
        pytest.skip("mpiexec.mpich or mpicc.mpich not installed (apt-get install mpich "
                    "libmpich-dev)")
    d = tmp_path_factory.mktemp("mpich-proof")
    src = d / "barriers.c"
    src.write_text("#include <mpi.h>\n#include <stdlib.h>\n"
                   "int main(int argc, char **argv) {\n"
                   "    int i, n = argc > 1 ? atoi(argv[1]) : 1;\n"
                   "    MPI_Init(&argc, &argv);\n"
                   "    for (i = 0; i < n; i++) MPI_Barrier(MPI_COMM_WORLD);\n"
                   "    MPI_Finalize();\n    return 0;\n}\n")
    prog = d / "barriers"
    subprocess.run(["mpicc.mpich", "-o", str(prog), str(src)], check=True, timeout=120)
    native = os.environ.get("RG_NATIVE_DIR")
    built = [Path(p) / "librailgauge-stackspy-mpich.so"
             for p in (native, ROOT / "build" / "native") if p]
    spy = next((p for p in built if p.is_file()), None)
    if spy is None:
        spy = d / "libspy.so"
        subprocess.run(["mpicc.mpich", "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared",
                        "-fPIC", "-o", str(spy), str(SPY_SRC), "-lucp", "-ldl"],
                       check=True, timeout=120)
    return prog, spy


Sig = dict[int, list[tuple[str, int, int, str]]]


def _run(tools: tuple[Path, Path], tmp: Path, P: int, env: dict[str, str]) -> tuple[Sig, str]:
    """Runs the barriers on P ranks; per rank the UCX operations of its barriers:
    ("S", destination world rank, context id, tag class) and ("R", source rank in the
    communicator, context id, tag class); the tag class is "barrier" for
    MPIR_BARRIER_TAG, "bcast" for MPIR_BCAST_TAG, "sched" for the others."""
    prog, spy = tools
    out = tmp / f"spy-{P}-{len(list(tmp.iterdir()))}"
    out.mkdir()
    res = run_mpi("mpich", [str(prog), str(NBARRIERS)], P, bind="none", timeout_s=60,
                  env={"LD_PRELOAD": str(spy), "RG_STACKSPY_DIR": str(out), **env})
    assert res.returncode == 0, res.stderr
    classes = {1: "barrier", 2: "bcast"}
    sig: Sig = {}
    for r in range(P):
        ops: list[tuple[str, int, int, str]] = []
        inside = False
        for line in (out / f"spy.{r}").read_text().splitlines():
            f = line.split()
            if f[0] in ("B", "E"):
                inside = f[0] == "B"
                continue
            assert inside, f"rank {r}: UCX message outside MPI_Barrier: {line}"
            t = m.decode_ucx_tag(int(f[2] if f[0] == "S" else f[1], 16))
            peer = int(f[1]) if f[0] == "S" else t.source
            ops.append((f[0], peer, t.context_id, classes.get(t.tag, "sched")))
        sig[r] = ops
    return sig, res.stderr


def _dissem_ops(P: int, r: int, cls: str) -> list[tuple[str, int, int, str]]:
    ops = []
    k = 1
    while k < P:
        ops += [("R", (r - k) % P, 1, cls), ("S", (r + k) % P, 1, cls)]
        k *= 2
    return sorted(ops)


def _per_barrier(sig: Sig, r: int) -> list[tuple[str, int, int, str]]:
    ops = sig[r]
    assert len(ops) % NBARRIERS == 0, ops
    return sorted(set(ops))


def _env(em: m.StackEmitted, tmp: Path) -> dict[str, str]:
    for name, content in em.files.items():
        (tmp / name).write_text(content)
    return dict(em.settings)


@pytestmark_mpich
@pytest.mark.parametrize("P", [2, 3, 4])
def test_proof_emitted_settings_run_the_chosen_algorithm(
        tools: tuple[Path, Path], tmp_path: Path, P: int) -> None:
    nolocal = {"MPIR_CVAR_NOLOCAL": "1"}
    dis = m.emit_barrier([_choice(P, _alg("4.0", "dissemination"))], "4.0.2",
                         device="ch4:ucx")
    sig, err = _run(tools, tmp_path, P, {**_env(dis, tmp_path), **nolocal})
    for r in range(P):
        assert _per_barrier(sig, r) == sorted(set(_dissem_ops(P, r, "barrier")))
        assert len(sig[r]) == NBARRIERS * len(_dissem_ops(P, r, "barrier"))
    assert "warning" not in err.lower()
    nb = m.emit_barrier([_choice(P, _alg("4.0", "nb"))], "4.0.2", device="ch4:ucx")
    sig_nb, _ = _run(tools, tmp_path, P, {**_env(nb, tmp_path), **nolocal})
    # nb's ibarrier is a dissemination too (the same peers), by schedule tags.
    for r in range(P):
        assert _per_barrier(sig_nb, r) == sorted(set(_dissem_ops(P, r, "sched")))
        assert sig_nb[r] != sig[r]
    # The selection file: dissemination at 2 and 4, nb at 3; MPICH follows it per size.
    mixed = m.emit_barrier([_choice(2, _alg("4.0", "dissemination")),
                            _choice(3, _alg("4.0", "nb")),
                            _choice(4, _alg("4.0", "dissemination"))], "4.0.2",
                           device="ch4:ucx", file_dir=str(tmp_path))
    sig_mixed, err_mixed = _run(tools, tmp_path, P, {**_env(mixed, tmp_path), **nolocal})
    want = sig_nb if P == 3 else sig
    assert {r: sorted(set(v)) for r, v in sig_mixed.items()} == \
        {r: sorted(set(v)) for r, v in want.items()}
    assert "warning" not in err_mixed.lower() and "assertion" not in err_mixed.lower()


@pytestmark_mpich
def test_proof_smp_and_device_default(tools: tuple[Path, Path], tmp_path: Path) -> None:
    P = 4
    two_nodes = {"MPIR_CVAR_NUM_CLIQUES": "2"}  # "nodes" {0, 2} and {1, 3}
    smp = m.emit_barrier([_choice(P, _alg("4.0", "smp"))], "4.0.2", device="ch4:ucx")
    sig_smp, _ = _run(tools, tmp_path, P, {**_env(smp, tmp_path), **two_nodes})
    # Rank 0: the node barrier with world rank 2 and the 1-byte bcast to it (the node
    # communicator's context), the roots barrier with rank 1 (another context); never the
    # world communicator's collective context 1.
    ops0 = _per_barrier(sig_smp, 0)
    assert {(op, peer, cls) for op, peer, _, cls in ops0} == {
        ("S", 2, "barrier"), ("S", 2, "bcast"), ("R", 1, "barrier"), ("S", 1, "barrier")}
    assert len({ctx for _, _, ctx, _ in ops0}) == 2 and all(c != 1 for _, _, c, _ in ops0)
    # ch4:ucx's default (composition_alpha) sends the same messages as smp ...
    sig_def, _ = _run(tools, tmp_path, P, two_nodes)
    assert sig_def == sig_smp
    assert m.default_barrier("4.0.2", P, nodes=2, device="ch4:ucx").name == \
        "composition_alpha"
    # ... and on one node: dissemination of the node's ranks and the 1-byte bcast.
    sig_one, _ = _run(tools, tmp_path, P, {})
    assert {(op, peer, cls) for op, peer, _, cls in _per_barrier(sig_one, 0)} == {
        ("S", 1, "barrier"), ("S", 2, "barrier"), ("R", 3, "barrier"), ("R", 2, "barrier"),
        ("S", 1, "bcast"), ("S", 2, "bcast")}
    # MPIR_CVAR_NOLOCAL=1 changes the default: flat, MPIR's dissemination.
    sig_flat, _ = _run(tools, tmp_path, P, {"MPIR_CVAR_NOLOCAL": "1"})
    for r in range(P):
        assert _per_barrier(sig_flat, r) == sorted(set(_dissem_ops(P, r, "barrier")))
    # smp where no communicator is node-aware falls back to MPIR's auto: dissemination.
    sig_fb, _ = _run(tools, tmp_path, P, {**_env(smp, tmp_path), "MPIR_CVAR_NOLOCAL": "1"})
    assert sig_fb == sig_flat


@pytestmark_mpich
def test_proof_broken_selection_file_fails(tools: tuple[Path, Path], tmp_path: Path) -> None:
    prog, _ = tools
    bad = tmp_path / "bad.json"
    bad.write_text('{"collective=barrier": {')
    res = run_mpi("mpich", [str(prog), "1"], 2, bind="none", timeout_s=60,
                  env={"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": str(bad)})
    assert res.returncode != 0
