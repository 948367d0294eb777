"""`railgauge export --to simgrid`'s module (python/railgauge/export/simgrid.py) and its
proof: native/tools/smpi/prtt_smpi.c, built with smpicc, runs the three PRTT patterns under
smpirun on the exported platform and configuration, and its simulated times are compared
with the model the export came from and with the gauge's measurement of the same run.

Data: docs/data/barrier-8 (a full `railgauge gauge` over shm, 1 B .. 1 KiB: its
model-loggp.json and the prtt-shm.jsonl it was fitted from), tests/data/simgrid (a
`railgauge gauge --quick` model over shm, 1 B .. 1 MiB, whose predictions come from
pieces), and a two-range network model with a rendezvous switch made here from the first.
native/tools/smpi/coll_smpi.c runs the dissemination barrier and the pairwise alltoall at
P = 64 under SMPI against `railgauge sim` on the same model (the last tests).

Tolerances (what SimGrid 3.32 meets, measured): against the model, SMPI's PRTT(1,0,s) and,
in eager sizes, PRTT(n,d,s) within 1e-4 relative (SimGrid rounds times to 1e-9 s). Against
the shm measurement, SMPI's error is the model's own, within 1e-3: PRTT(1,0,s) median 2.1%
(asserted <= 5%; p90 23%: the host's slow state at a few sizes, docs/fit.md), PRTT(n,d,s)
median 0.2% (asserted <= 2%, every point <= 5%). PRTT(n,0,s) has no tolerance: SMPI
has no per-message gap g: a train costs max(o_s(s), o_r(s)) a message, the busier end's
overhead; the test checks that SMPI's PRTT(n,0,s) is that, below the model's.
"""

from __future__ import annotations

import copy
import json
import shutil
import statistics
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from railgauge.export.common import ExportSource, synchronous_at
from railgauge.export.files import ExportError
from railgauge.export.simgrid import _sections, export_simgrid, smpi_cfg
from railgauge.fit.model import loggp_from_json, overhead, prtt
from railgauge.sim import pairwise_alltoall_goal

ROOT = Path(__file__).resolve().parent.parent
SHM_DIR = ROOT / "docs" / "data" / "barrier-8"
SHM_MODEL = SHM_DIR / "model-loggp.json"
SHM_MEAS = SHM_DIR / "prtt-shm.jsonl"
QUICK_MODEL = ROOT / "tests" / "data" / "simgrid" / "model-loggp-quick-shm.json"
SMPI_TOOLS = ROOT / "native" / "tools" / "smpi"

HAVE_SIMGRID = shutil.which("smpicc") is not None and shutil.which("smpirun") is not None
needs_simgrid = pytest.mark.skipif(
    not HAVE_SIMGRID,
    reason="SimGrid's smpicc/smpirun not installed (Debian: apt-get install libsimgrid-dev; "
    "scripts/install.sh --dev installs it)",
)

#: Options of the proof only, not of the export: the program's own computation (its loops,
#: the timer reads) is left out of the simulated time, so that the times are the network's.
PROOF_CFG = ["--cfg=smpi/simulate-computation:no", "--cfg=smpi/wtime:0"]


def _source(model: dict[str, Any], *, path: Path | None = None, transport: str = "shm",
            intra_host: bool = True) -> ExportSource:
    return ExportSource(model=model, model_path=path, report_dir=None, measurements_path=None,
                        transport=transport, intra_host=intra_host)


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _network_model(synchronous: bool = True) -> dict[str, Any]:
    """Two ranges over a network, the second from 16 KiB and rendezvous there: its sends
    wait for their data (the send overhead grows with the transfer, G_lat small), or, not
    ``synchronous``, return before the data are through (G_lat the larger)."""
    m = _load(SHM_MODEL)
    r0 = m["ranges"][0]
    r0.update(from_bytes=1, to_bytes=8192, L_us=5.0, o_s_us=1.0, o_r_us=0.5, g_us=2.0,
              G_us_per_byte=4e-4, Glat_us_per_byte=4e-4, O_s_us_per_byte=1e-4,
              O_r_us_per_byte=5e-5)
    r1 = copy.deepcopy(r0)
    glat, os_b = (1e-5, 2e-4) if synchronous else (2e-4, 2e-5)
    r1.update(from_bytes=16384, to_bytes=None, g_us=6.0, G_us_per_byte=2e-4,
              Glat_us_per_byte=glat, O_s_us_per_byte=os_b, O_r_us_per_byte=1e-5)
    m["ranges"] = [r0, r1]
    m["transport"] = "tcp"
    return m


def _measured(path: Path) -> dict[tuple[int, bool, int], tuple[float, float]]:
    """(n, delayed, s) -> (time in us, d in us) of a prtt file."""
    out: dict[tuple[int, bool, int], tuple[float, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("type") == "prtt":
            t = rec.get("iqm_us") or rec["median_us"]
            out[(int(rec["n"]), float(rec["d_us"]) > 0.0, int(rec["s"]))] = (t, rec["d_us"])
    return out


# ----------------------------------------------------------------------------------------
# The export's files, without SimGrid
# ----------------------------------------------------------------------------------------


def test_intra_host_export_writes_the_contract(tmp_path: Path) -> None:
    out = tmp_path / "sg"
    res = export_simgrid(_source(_load(SHM_MODEL), path=SHM_MODEL), out, hosts=4,
                         topology="flat", rendezvous=None, rendezvous_reason="none found")
    assert set(res) == {"files", "platform", "hostfile", "smpirun_args"}
    assert all(Path(f).is_file() for f in res["files"])
    assert Path(res["platform"]).parent == out and Path(res["hostfile"]).parent == out
    args = res["smpirun_args"]
    assert "-np" not in args and args[:4] == ["-platform", res["platform"], "-hostfile",
                                              res["hostfile"]]
    assert all(a.startswith("--cfg=") for a in args[4:])
    # One host, its loopback the measured path, every rank on it.
    root = ET.parse(res["platform"]).getroot()
    assert [h.get("id") for h in root.iter("host")] == ["host0"]
    assert root.find(".//host").get("core") == "4"  # type: ignore[union-attr]
    assert [ln.get("id") for ln in root.iter("link")] == ["loopback"]
    assert Path(res["hostfile"]).read_text().split() == ["host0"] * 4
    note = (out / "README.txt").read_text()
    assert "smpirun -np 4 -platform" in note and "per-message gap g" in note


def test_network_export_is_a_star_one_rank_a_host(tmp_path: Path) -> None:
    res = export_simgrid(_source(_network_model(), transport="tcp", intra_host=False),
                         tmp_path / "sg", hosts=3, topology="flat", rendezvous=16384,
                         rendezvous_reason="the step in o_s")
    root = ET.parse(res["platform"]).getroot()
    cluster = root.find("cluster")
    assert cluster is not None and cluster.get("radical") == "0-2"
    # Two links on a route, each half of L = 5 us.
    assert float(cluster.get("lat", "").rstrip("s")) == pytest.approx(2.5e-6)
    assert Path(res["hostfile"]).read_text().split() == ["host0", "host1", "host2"]
    cfg = dict(a[len("--cfg="):].split(":", 1) for a in res["smpirun_args"][4:])
    assert cfg["smpi/async-small-thresh"] == "16384"
    assert cfg["smpi/send-is-detached-thresh"] == "16384"
    # The overheads: a section from 0 and one above 16383 (rendezvous: 0, in the links).
    assert [sec.split(":")[0] for sec in cfg["smpi/os"].split(";")] == ["0", "16383"]
    assert cfg["smpi/os"].split(";")[1] == "16383:0:0"
    # The factors: from a network size (s + 16) above 16383 + 16.
    assert [sec.split(":")[0] for sec in cfg["smpi/bw-factor"].split(";")] == ["0", "16399"]
    assert "waits for its data from 16384 bytes" in (tmp_path / "sg" / "README.txt").read_text()


def test_sends_that_return_before_their_data_stay_detached(tmp_path: Path) -> None:
    """Above the switch the model's sends return long before their data arrive (a copy
    into a socket buffer): the data still wait for the receive (async-small-thresh), but
    each send stays detached and keeps its measured overhead, where a synchronous send
    would be charged the whole transfer."""
    model = _network_model(synchronous=False)
    assert synchronous_at(loggp_from_json(model), 16384) is None
    assert synchronous_at(loggp_from_json(_network_model()), 16384) == 16384
    res = export_simgrid(_source(model, transport="tcp", intra_host=False),
                         tmp_path / "sg", hosts=2, topology="flat", rendezvous=16384,
                         rendezvous_reason="the step in o_s")
    cfg = dict(a[len("--cfg="):].split(":", 1) for a in res["smpirun_args"][4:])
    assert cfg["smpi/async-small-thresh"] == "16384"
    assert cfg["smpi/send-is-detached-thresh"] == "2147483647"
    sections = cfg["smpi/os"].split(";")
    assert [sec.split(":")[0] for sec in sections] == ["0", "16383"]
    assert float(sections[1].split(":")[2]) == pytest.approx(2e-11)  # O_s, in s/byte
    assert "Every send is detached" in (tmp_path / "sg" / "README.txt").read_text()


def test_rendezvous_inside_a_range_cuts_it(tmp_path: Path) -> None:
    fit = loggp_from_json(_load(SHM_MODEL))
    # A synchronous send from 512 B cuts the range holding it: no overheads from there.
    _, _, secs = _sections(fit, 512)
    assert [sec.above for sec in secs][:2] == [0, 511]
    assert secs[1].os_offset == secs[1].os_per_byte == secs[1].or_offset == 0.0
    # A switch at 512 B: there the model's sends return before their data are through
    # (shared memory's small copies), so they stay detached, with their overheads.
    cfg = smpi_cfg(fit, 512)
    assert "--cfg=smpi/async-small-thresh:512" in cfg
    assert "--cfg=smpi/send-is-detached-thresh:2147483647" in cfg
    os_ = next(a for a in cfg if a.startswith("--cfg=smpi/os:"))
    assert not os_.endswith(";511:0:0")
    no_switch = smpi_cfg(fit, None)
    assert "--cfg=smpi/send-is-detached-thresh:2147483647" in no_switch


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hosts": 0}, "--hosts"),
        ({"topology": "torus"}, "--topology"),
        ({"rendezvous": 0}, "--rendezvous-at"),
    ],
)
def test_bad_options_leave_nothing(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    out = tmp_path / "sg"
    args: dict[str, Any] = {"hosts": 2, "topology": "flat", "rendezvous": None,
                            "rendezvous_reason": "none"}
    args.update(kwargs)
    with pytest.raises(ExportError, match=message):
        export_simgrid(_source(_load(SHM_MODEL)), out, **args)
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("model", [{}, {"model": "loggp", "ranges": []},
                                   {"model": "loggp", "ranges": [{"from_bytes": 1}]}])
def test_a_model_without_ranges_is_refused(tmp_path: Path, model: dict[str, Any]) -> None:
    out = tmp_path / "sg"
    with pytest.raises(ExportError) as exc:
        export_simgrid(_source(model, path=tmp_path / "m.json"), out, hosts=2, topology="flat",
                       rendezvous=None, rendezvous_reason="none")
    assert "\n" not in str(exc.value)
    assert not out.exists()


def test_an_existing_folder_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "sg"
    out.mkdir()
    (out / "keep").write_text("x")
    with pytest.raises(ExportError, match="exists"):
        export_simgrid(_source(_load(SHM_MODEL)), out, hosts=2, topology="flat",
                       rendezvous=None, rendezvous_reason="none")
    assert [p.name for p in out.iterdir()] == ["keep"]


# ----------------------------------------------------------------------------------------
# The proof: the PRTT patterns under smpirun
# ----------------------------------------------------------------------------------------


def _smpicc(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    if not HAVE_SIMGRID:
        pytest.skip("SimGrid's smpicc/smpirun not installed (Debian: libsimgrid-dev)")
    exe = tmp_path_factory.mktemp("smpi") / name
    subprocess.run(
        ["smpicc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror",
         "-O2", "-o", str(exe), str(SMPI_TOOLS / f"{name}.c")],
        check=True, capture_output=True, text=True, timeout=120,
    )
    return exe


@pytest.fixture(scope="module")
def prtt_smpi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _smpicc(tmp_path_factory, "prtt_smpi")


@pytest.fixture(scope="module")
def coll_smpi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _smpicc(tmp_path_factory, "coll_smpi")


def _run(exe: Path, res: dict[str, Any], sizes: list[str], n: int = 16) -> list[dict[str, Any]]:
    proc = subprocess.run(
        ["smpirun", "-np", "2", *res["smpirun_args"], *PROOF_CFG, str(exe), "-n", str(n),
         "-r", "1", *sizes],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / b


def _export(tmp_path: Path, model: dict[str, Any], *, intra_host: bool = True,
            rendezvous: int | None = None) -> dict[str, Any]:
    return export_simgrid(_source(model, intra_host=intra_host), tmp_path / "sg", hosts=2,
                          topology="flat", rendezvous=rendezvous, rendezvous_reason="test")


@needs_simgrid
def test_every_option_is_one_of_simgrids(tmp_path: Path, prtt_smpi: Path) -> None:
    """SimGrid refuses an unknown key and then lists the keys it has (--help-cfg of the
    installed version): every option the export writes is among them."""
    res = _export(tmp_path, _network_model(), intra_host=False, rendezvous=16384)
    proc = subprocess.run(
        ["smpirun", "-np", "2", *res["smpirun_args"][:4], "--cfg=railgauge/no-such-key:1",
         str(prtt_smpi), "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode != 0
    known = {line.split(":")[0].strip() for line in proc.stderr.splitlines()
             if line.startswith("  ") and ": (" in line}
    assert "smpi/os" in known
    ours = {a[len("--cfg="):].split(":", 1)[0] for a in res["smpirun_args"][4:]}
    assert ours <= known, ours - known


@needs_simgrid
def test_smpi_reproduces_the_shm_model_and_measurement(tmp_path: Path, prtt_smpi: Path) -> None:
    model = _load(SHM_MODEL)
    meas = _measured(SHM_MEAS)
    sizes = sorted({s for (_, _, s) in meas})
    # Each size with the delay its measurement used, so that like is compared with like.
    args = [f"{s}@{meas[(16, True, s)][1]!r}" for s in sizes]
    sim = _run(prtt_smpi, _export(tmp_path, model), args)
    assert len(sim) == 3 * len(sizes)
    errs: dict[str, list[float]] = {"p1": [], "pd": []}
    for rec in sim:
        n, d, s, t = rec["n"], rec["d_us"], rec["s"], rec["us"]
        pred = float(prtt(model, n, d, s))
        measured = meas[(n, d > 0, s)][0]
        if n == 1 or d > 0:
            assert _rel(t, pred) < 1e-4, rec
            # SMPI adds nothing to the model's own error against the measurement.
            assert abs(_rel(t, measured) - _rel(pred, measured)) < 1e-3, rec
            errs["p1" if n == 1 else "pd"].append(_rel(t, measured))
        else:
            # No gap g under SMPI: a train costs the busier end's overhead a message,
            # max(o_s(s), o_r(s)), where the model has G_all(s) (here the larger).
            per = max(float(overhead(model, s, "send")), float(overhead(model, s, "recv")))
            p1 = float(prtt(model, 1, 0, s))
            assert t <= pred * (1 + 1e-4)
            assert t == pytest.approx(p1 + (n - 1) * per, rel=0.02, abs=0.01), rec
    # The model's error, measured (median, p90): PRTT(1,0,s) 2.1%, 23% (the host's slow
    # state at a few sizes, docs/fit.md); PRTT(n,d,s) 0.2%, 0.9%.
    assert statistics.median(errs["p1"]) <= 0.05
    assert statistics.median(errs["pd"]) <= 0.02
    assert max(errs["pd"]) <= 0.05


@needs_simgrid
def test_smpi_reproduces_a_two_range_rendezvous_model(tmp_path: Path, prtt_smpi: Path) -> None:
    model = _network_model()
    sizes = [1, 1024, 8192, 16368, 16369, 16383, 16384, 65536, 1 << 20]
    sim = _run(prtt_smpi, _export(tmp_path, model, intra_host=False, rendezvous=16384),
               [str(s) for s in sizes])
    by = {(r["n"], r["d_us"] > 0, r["s"]): r for r in sim}
    for s in sizes:
        p1 = by[(1, False, s)]
        assert _rel(p1["us"], float(prtt(model, 1, 0, s))) < 1e-4, p1
        if s < 16384:
            pd = by[(16, True, s)]
            assert _rel(pd["us"], float(prtt(model, 16, pd["d_us"], s))) < 1e-4, pd


@needs_simgrid
def test_smpi_follows_a_model_with_pieces(tmp_path: Path, prtt_smpi: Path) -> None:
    """A model that predicts with pieces: SMPI's PRTT(1,0,s) is the pieces' (the overheads
    are cut where they outgrow the round trip: PRTT(n,d,s) is then below the model's)."""
    model = _load(QUICK_MODEL)
    sizes = [1, 64, 1024, 65536, 1 << 20]
    sim = _run(prtt_smpi, _export(tmp_path, model), [str(s) for s in sizes])
    for rec in sim:
        pred = float(prtt(model, rec["n"], rec["d_us"], rec["s"]))
        if rec["n"] == 1:
            assert _rel(rec["us"], pred) < 1e-4, rec
        elif rec["d_us"] > 0:
            # Below the model's, but for the sizes below the piece's first, where the
            # overhead line cut to the round trip's slope lies a little higher.
            assert rec["us"] <= pred * (1 + 1e-3), rec


# ----------------------------------------------------------------------------------------
# Collectives at P = 64: SMPI against railgauge sim on the same model and schedule
# ----------------------------------------------------------------------------------------


@needs_simgrid
@pytest.mark.parametrize(("op", "size"), [("barrier", 0), ("alltoall", 8), ("alltoall", 1024)])
def test_collectives_at_64_ranks_agree_with_railgauge_sim(
    tmp_path: Path, coll_smpi: Path, op: str, size: int
) -> None:
    """The dissemination barrier (SMPI's ompi_bruck) and the pairwise alltoall (pair) at
    P = 64, one rank a host on the star, against railgauge sim's LogGOPS on the same model.
    Measured: the barrier 1.614 us (SMPI) against 1.615 us, the alltoall of 8 B 17.06
    against 17.07 us, of 1 KiB 32.35 against 33.21 us (SMPI 2.6% below: it shares the
    links' bandwidth among the messages in flight where LogGOPS serialises them at the
    NIC, g + (s-1) G each). Tolerance 10%, the issue's target."""
    ranks = 64
    res = export_simgrid(_source(_load(SHM_MODEL), intra_host=False), tmp_path / "sg",
                         hosts=ranks, topology="flat", rendezvous=None,
                         rendezvous_reason="test")
    proc = subprocess.run(
        ["smpirun", "-np", str(ranks), *res["smpirun_args"], *PROOF_CFG,
         "--cfg=smpi/barrier:ompi_bruck", "--cfg=smpi/alltoall:pair", str(coll_smpi), op,
         *([str(size)] if op == "alltoall" else [])],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    smpi = json.loads(proc.stdout.strip().splitlines()[-1])["makespan_us"]
    if op == "barrier":
        sim_args = ["barrier", "--algorithm", "dissemination", "-P", str(ranks)]
    else:
        goal = tmp_path / "alltoall.goal"
        goal.write_text(pairwise_alltoall_goal(ranks, size), encoding="utf-8")
        sim_args = ["goal", str(goal)]
    sim = run_cli("sim", *sim_args, "--model", str(SHM_MODEL), "--json")
    assert sim.returncode == 0, sim.stderr
    makespan = json.loads(sim.stdout)["makespan_us"]
    assert _rel(smpi, makespan) <= 0.10, (smpi, makespan)


def test_a_section_whose_network_line_is_negative_at_zero_keeps_the_model() -> None:
    """A steep network line of a later section (a piece whose time is in its slope) is
    negative at s = 0; SMPI has no negative latency, so the export moves the deficit into
    the overheads' offsets, and SMPI's o_s(s) + network(s) + o_r(s) is still the model's
    one-way time over the section (the benchmark found 3x at 20 KiB before)."""
    from railgauge.export.simgrid import _Lines, _section

    ln = _Lines(20643, (9.08, -2.67e-4), (0.4, 1e-6), (-6.0, 4.6e-4))
    lat0, g0 = 0.2, 1e-5
    sec = _section(ln, lat0, g0, True, 32767)

    def smpi_us(s: int) -> float:
        net = lat0 * sec.lat_factor + (s + 16) * g0 / sec.bw_factor
        return (sec.os_offset + sec.os_per_byte * s + sec.or_offset
                + sec.or_per_byte * s) * 1e6 + net

    for s in (20643, 26000, 32767):
        model = sum(a + b * s for a, b in (ln.os, ln.orecv, ln.net))
        assert smpi_us(s) == pytest.approx(model, rel=1e-9), s
        assert sec.os_offset * 1e6 + sec.os_per_byte * 1e6 * s >= -1e-9, s
        assert sec.or_offset * 1e6 + sec.or_per_byte * 1e6 * s >= -1e-9, s
    # A milder case: the overheads' offsets absorb it and the split stays the model's.
    mild = _Lines(20643, (3.0, 1e-5), (0.4, 1e-6), (-0.5, 2e-4))
    sec = _section(mild, lat0, g0, True, 32767)
    for s in (20643, 32767):
        model = sum(a + b * s for a, b in (mild.os, mild.orecv, mild.net))
        assert smpi_us(s) == pytest.approx(model, rel=1e-9), s
    assert sec.os_per_byte * 1e6 == pytest.approx(1e-5)
