"""`railgauge export` (python/railgauge/export, docs/export.md): the source reader, the
rendezvous inference (synthetic models and real ones), LogGOPSim's flags and units, the
Netgauge table (CODES' reader's rules, the round trip through `railgauge fit`), `--json`,
and bad input (exit 2, one line, nothing left in --out)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import find_native_tool
from railgauge.export.common import ExportSource, load_source, rendezvous_at
from railgauge.export.files import ExportError
from railgauge.export.loggopsim import NO_RENDEZVOUS_S, export_loggopsim, parse_size_span
from railgauge.export.netgauge import CODES_MAX_ROWS, choose_rows
from railgauge.fit.loggp import fit_loggp
from railgauge.fit.model import g_all, prtt
from railgauge.synth import sweep_sizes, synth_prtt, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SHM_MODEL = DATA / "export" / "model-shm.json"
NG_OMPI = DATA / "netgauge" / "loggp-openmpi.out"
NG_MPICH = DATA / "netgauge" / "loggp-mpich.out"
RG = [sys.executable, "-m", "railgauge.cli.main"]

#: A rendezvous at 16385 B: L and o step up, G falls (zero copy).
RNDV = [(1, 5.0, 1.0, 2.0, 0.001), (16385, 15.0, 3.0, 2.0, 0.0008)]
#: A change at 16385 B that is no rendezvous: only g and G change (the one-way time falls).
GAP_ONLY = [(1, 5.0, 1.0, 2.0, 0.001), (16385, 5.0, 1.0, 8.0, 0.0004)]
#: One range; o and G so that whole ns hold them exactly.
ONE = [(1, 2.0, 0.5, 1.0, 0.004)]


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "python"), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([*RG, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=env)


def _measure(tmp: Path, params: list[tuple[float, ...]], name: str = "m",
             seed: int = 1) -> tuple[Path, dict[str, Any]]:
    """A report-like folder: synthetic measurements.jsonl and the model fitted to them."""
    folder = tmp / name
    folder.mkdir()
    meas = synth_prtt(params, sweep_sizes(1 << 20, per_octave=4), noise=0.005, seed=seed,
                      reps=200)
    write_jsonl(meas, folder / "measurements.jsonl")
    meas = load_measurements(folder / "measurements.jsonl")
    doc = fit_loggp(meas, seed=0, accuracy=True).to_json()
    (folder / "model-loggp.json").write_text(json.dumps(doc) + "\n")
    return folder, doc


def load_measurements(path: Path) -> Any:
    from railgauge.measurements import read_measurements

    return read_measurements(path)


@pytest.fixture(scope="module")
def rndv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return _measure(tmp_path_factory.mktemp("rndv"), RNDV)


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return _measure(tmp_path_factory.mktemp("one"), ONE)


# ----------------------------------------------------------------------------------------
# The source and the rendezvous switch
# ----------------------------------------------------------------------------------------


def test_load_source_kinds(rndv: tuple[Path, dict[str, Any]]) -> None:
    folder, doc = rndv
    by_dir = load_source(folder)
    assert isinstance(by_dir, ExportSource)
    assert by_dir.report_dir == folder and by_dir.model_path == folder / "model-loggp.json"
    assert by_dir.measurements_path == folder / "measurements.jsonl"
    assert by_dir.model["ranges"] == doc["ranges"]
    by_model = load_source(folder / "model-loggp.json")
    assert by_model.measurements_path is None and by_model.model == by_dir.model
    by_meas = load_source(folder / "measurements.jsonl")
    assert by_meas.measurements_path == folder / "measurements.jsonl"
    assert len(by_meas.model["ranges"]) == len(doc["ranges"])
    shm = load_source(SHM_MODEL)
    assert shm.transport == "shm" and shm.intra_host
    ng = load_source(NG_OMPI)
    assert ng.transport == "netgauge" and not ng.intra_host and ng.model["ranges"]


def test_intra_host_from_the_placement_record(tmp_path: Path) -> None:
    """gauge / measure append a placement record (where the ranks ran); the reader skips
    it, the export reads it: MPI ranks started without hosts share one host."""
    from types import SimpleNamespace

    from railgauge.gauge import append_placement
    from railgauge.measurements import read_measurements

    meas = synth_prtt(ONE, sweep_sizes(4096, per_octave=1), noise=0.005, transport="mpi")
    for name, plan, expect in (
        ("local", SimpleNamespace(launcher="openmpi", hosts=None, hostfile=None, netns=None),
         True),
        ("apart", SimpleNamespace(launcher="mpich", hosts=["a", "b"], hostfile=None,
                                  netns=None), False),
    ):
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(meas, path)
        assert not load_source(path).intra_host  # no placement: MPI taken as a network
        append_placement(plan, path)
        assert json.loads(path.read_text().splitlines()[-1])["one_host"] is expect
        assert len(read_measurements(path).records) == len(meas.records)
        src = load_source(path)
        assert src.intra_host is expect, src.intra_host_reason


@pytest.mark.parametrize("params, expect", [(RNDV, True), (GAP_ONLY, False), (ONE, False)],
                         ids=["rendezvous", "gap-only", "one-range"])
def test_rendezvous_inferred_on_synthetic_models(tmp_path: Path, params: list[tuple[float, ...]],
                                                 expect: bool) -> None:
    _, doc = _measure(tmp_path, params)
    at, why = rendezvous_at(doc)
    if expect:
        # The change lies between 16384 B and the next size of the sweep.
        assert at is not None and 16384 < at <= 23170, (at, why)
        assert "inferred" in why
    else:
        assert at is None, why
        assert "--rendezvous-at" in why


def test_rendezvous_override_and_real_models() -> None:
    shm = json.loads(SHM_MODEL.read_text())
    assert rendezvous_at(shm, 4096) == (4096, "--rendezvous-at 4096 B (given)")
    with pytest.raises(ExportError):
        rendezvous_at(shm, 0)
    # railgauge's shm transport goes single-copy above its 64 KiB ring: the step at 64 KiB.
    assert rendezvous_at(shm)[0] == 65536
    # MPICH over UCX (Netgauge's own measurement): its rendezvous between 8193 and 9217 B.
    assert rendezvous_at(load_source(NG_MPICH).model)[0] == 9217
    # Open MPI (vader) with its eager limit moved (OMPI_MCA_btl_vader_eager_limit): found
    # where it was put, past the changes of small sizes that step only one of the two.
    for limit in (4096, 32768):
        doc = json.loads((DATA / "export" / f"model-openmpi-eager{limit}.json").read_text())
        assert rendezvous_at(doc)[0] == limit


# ----------------------------------------------------------------------------------------
# LogGOPSim
# ----------------------------------------------------------------------------------------


def test_loggopsim_flags_in_ns_and_ps(one: tuple[Path, dict[str, Any]]) -> None:
    folder, doc = one
    src = load_source(folder)
    out = export_loggopsim(src, span=None, rendezvous=None, rendezvous_reason="none")
    flags = out["flags"]
    assert flags[0::2] == ["-L", "-o", "-g", "-G", "-O", "-S"]
    assert all(v.lstrip("-").isdigit() for v in flags[1::2])
    unit = {"ns": 1e-3, "ps": 1e-6}[out["units"]]
    got = dict(zip(flags[0::2], (int(v) for v in flags[1::2]), strict=True))
    vals = out["values_us"]
    for flag, key in (("-L", "L"), ("-o", "o"), ("-g", "g"), ("-G", "G"), ("-O", "O")):
        assert got[flag] == round(vals[key] / unit), (flag, got, vals[key])
        # Rounded to the unit: within 1% unless the value is below a few units (a per-byte
        # O of 1e-7 us/B is 0 ps/B).
        assert abs(got[flag] * unit - vals[key]) <= max(0.01 * vals[key], unit / 2)
    assert got["-S"] == NO_RENDEZVOUS_S
    # LogGOPSim's one-way time L + 2o + (s-1) max(O, G) and gap g + (s-1) G are the
    # model's own PRTT(1,0,s)/2 and G_all(s) (railgauge.fit.simview).
    for s in (1, 64, 1024):
        one_way = vals["L"] + 2 * vals["o"] + (s - 1) * max(vals["O"], vals["G"])
        assert one_way == pytest.approx(prtt(doc, 1, 0.0, s) / 2, rel=0.02), s
        assert vals["g"] + (s - 1) * vals["G"] == pytest.approx(g_all(doc, s), rel=0.02), s
    rng = doc["ranges"][0]
    assert vals["L"] <= rng["L_us"] + 1e-12
    # A G of 0.48 ns would round to 0 ns: ps.
    shm = export_loggopsim(load_source(SHM_MODEL), span=(1, 1024), rendezvous=65536,
                           rendezvous_reason="x")
    assert shm["units"] == "ps" and shm["S_bytes"] == 65535
    g_ps = int(shm["flags"][shm["flags"].index("-G") + 1])
    assert g_ps == round(shm["values_us"]["G"] * 1e6) > 0
    assert any("picoseconds" in n for n in shm["notes"])


def test_loggopsim_ranges_and_sizes() -> None:
    src = load_source(SHM_MODEL)
    whole = export_loggopsim(src, span=None, rendezvous=None, rendezvous_reason="")
    assert len(whole["per_range"]) == 3 and any("one parameter set" in n for n in whole["notes"])
    big = export_loggopsim(src, span=(100000, 100000), rendezvous=None, rendezvous_reason="")
    assert big["range"]["from_bytes"] == 65536 and len(big["per_range"]) == 1
    assert not any("one parameter set" in n for n in big["notes"])
    assert parse_size_span("4k-64KiB") == (4096, 65536)
    assert parse_size_span("100") == (100, 100)
    for bad in ("0", "64k-4k", "x"):
        with pytest.raises(ExportError):
            parse_size_span(bad)


def test_cli_loggopsim_json_and_file(one: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, _ = one
    res = _run(["export", "--to", "loggopsim", str(folder), "--json", "--rendezvous-at",
                "8k", "--size", "1-1024", "--out", str(tmp_path / "flags.txt")])
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert {"flags", "units"} <= set(doc) and doc["units"] in ("ns", "ps")
    assert doc["S_bytes"] == 8191 and doc["rendezvous"] == 8192
    assert (tmp_path / "flags.txt").read_text().split() == doc["flags"]
    plain = _run(["export", "--to", "loggopsim", str(folder)])
    assert plain.returncode == 0 and plain.stdout.split()[0] == "-L"


# ----------------------------------------------------------------------------------------
# Netgauge's table
# ----------------------------------------------------------------------------------------


def _codes_rows(text: str) -> list[list[float]]:
    """The rows as CODES' loggp_set_params reads them (src/networks/model-net/loggp.c):
    fgets of at most 511 characters, a line whose first character is '#' skipped, every
    other line sscanf'd into 11 numbers (asserted), at most 100 rows (table[100])."""
    rows = []
    for line in text.splitlines(keepends=True):
        assert len(line) < 512 and line.endswith("\n")
        if line[0] == "#":
            continue
        toks = line.split()
        assert len(toks) == 11, line
        int(toks[0]), int(toks[1])
        vals = [float(t) for t in toks]
        assert all(math.isfinite(v) for v in vals), line
        rows.append(vals)
    assert 0 < len(rows) <= CODES_MAX_ROWS
    return rows


def test_netgauge_round_trip_through_fit(rndv: tuple[Path, dict[str, Any]],
                                        tmp_path: Path) -> None:
    folder, doc = rndv
    table = tmp_path / "loggp.out"
    res = _run(["export", "--to", "netgauge", str(folder), "--out", str(table), "--json"])
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["file"] == str(table)
    rows = _codes_rows(table.read_text())
    sizes = [int(r[0]) for r in rows]
    assert sizes == sorted(sizes)
    fitted = _run(["fit", str(table), "--json", "--out", str(tmp_path / "m.json")])
    assert fitted.returncode == 0, fitted.stderr
    back = json.loads(fitted.stdout)
    assert len(back["ranges"]) == len(doc["ranges"])
    sweep = sorted({int(s) for s in sizes})
    for a, b in zip(doc["ranges"], back["ranges"], strict=True):
        # The same protocol changes, within one step of the sweep.
        i = sweep.index(a["from_bytes"])
        assert abs(sweep.index(b["from_bytes"]) - i) <= 1
        for key in ("L_us", "o_s_us", "o_r_us", "g_us", "G_us_per_byte"):
            lo, hi = a["ci95"][key]
            slack = 1e-9 + 0.02 * abs(a[key])
            assert lo - slack <= b[key] <= hi + slack, (key, b[key], a["ci95"][key])
    # The model's L, g, G are in the rows (what CODES uses), each row those of the sizes
    # CODES gives it: from the previous row's size up to its own.
    for prev, r in zip([rows[0], *rows[:-1]], rows, strict=True):
        rng = [x for x in doc["ranges"] if x["from_bytes"] <= prev[0]][-1]
        assert r[5] == pytest.approx(rng["L_us"], rel=1e-6)
        assert r[8] == pytest.approx(rng["g_us"], rel=1e-6)
        assert r[9] == pytest.approx(rng["G_us_per_byte"], rel=1e-6)


def test_netgauge_max_rows_keeps_the_changes(rndv: tuple[Path, dict[str, Any]],
                                             tmp_path: Path) -> None:
    folder, doc = rndv
    table = tmp_path / "t.out"
    res = _run(["export", "--to", "netgauge", str(folder / "measurements.jsonl"), "--out",
                str(table), "--max-rows", "12"])
    assert res.returncode == 0, res.stderr
    sizes = [int(r[0]) for r in _codes_rows(table.read_text())]
    assert len(sizes) == 12 and sizes[0] == 1 and sizes[-1] == 1 << 20
    change = doc["ranges"][1]["from_bytes"]
    assert change in sizes and max(s for s in sizes if s < change) == 16384
    assert choose_rows([1, 2, 3], set(), 5) == [1, 2, 3]
    with pytest.raises(ExportError):
        choose_rows(list(range(1, 50)), {10, 11, 20, 21}, 4)


def test_codes_reader_on_a_real_netgauge_file() -> None:
    """The rules of _codes_rows hold for CODES' own test table (tests/conf/ng-mpi-tukey.dat
    has -nan cells, which glibc's sscanf reads; railgauge writes only finite numbers), here
    for Netgauge's output of tests/data: a sanity check of the checker's parsing."""
    text = NG_MPICH.read_text()
    assert all(len(line.split()) == 11 for line in text.splitlines() if line[:1] != "#")


# ----------------------------------------------------------------------------------------
# Bad input: exit 2, one line, nothing left in --out
# ----------------------------------------------------------------------------------------


def _bad_sources(tmp: Path) -> dict[str, Path]:
    (tmp / "empty").mkdir()
    nomodel = tmp / "nomodel.json"
    nomodel.write_text(json.dumps({"model": "loggp", "success": False, "ranges": [],
                                   "message": "too few sizes"}))
    lop = tmp / "model-lop.json"
    lop.write_text(json.dumps({"model": "lop"}))
    junk = tmp / "junk.txt"
    junk.write_text("hello world\n")
    return {"missing": tmp / "nope", "empty-dir": tmp / "empty", "no-ranges": nomodel,
            "lop": lop, "junk": junk}


@pytest.mark.parametrize("to", ["loggopsim", "netgauge"])
def test_bad_sources_exit_2_one_line(tmp_path: Path, to: str) -> None:
    for name, src in _bad_sources(tmp_path).items():
        out = tmp_path / f"out-{to}-{name}"
        res = _run(["export", "--to", to, str(src), "--out", str(out)])
        assert res.returncode == 2, (name, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, (name, res.stderr)
        assert res.stderr.startswith("railgauge: error:"), res.stderr
        assert not out.exists(), name
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_bad_options_exit_2(rndv: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, _ = rndv
    cases = [
        ["--to", "nosuch", str(folder)],
        ["--to", "simgrid", str(folder), "--hosts", "0", "--out", str(tmp_path / "sg")],
        ["--to", "netgauge", str(folder / "model-loggp.json"), "--out", str(tmp_path / "n")],
        ["--to", "netgauge", str(folder), "--max-rows", "1", "--out", str(tmp_path / "n")],
        ["--to", "netgauge", str(folder), "--max-rows", "3", "--out", str(tmp_path / "n")],
        ["--to", "loggopsim", str(folder), "--max-rows", "10"],
        ["--to", "loggopsim", str(folder), "--size", "64k-1k"],
        ["--to", "loggopsim", str(folder), "--rendezvous-at", "0"],
        ["--to", "loggopsim", str(folder), "--rendezvous-at", "big"],
    ]
    for args in cases:
        res = _run(["export", *args])
        assert res.returncode == 2, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1, (args, res.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_netgauge_out_not_overwritten_on_failure(rndv: tuple[Path, dict[str, Any]],
                                                 tmp_path: Path) -> None:
    """A failed export leaves an existing --out file as it was."""
    folder, _ = rndv
    out = tmp_path / "keep.out"
    out.write_text("old\n")
    res = _run(["export", "--to", "netgauge", str(folder), "--out", str(out), "--max-rows",
                "3"])
    assert res.returncode == 2
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.out"]


def test_measure_format_netgauge(tmp_path: Path) -> None:
    """`railgauge measure --format netgauge`: a short shm run straight into the table (the
    JSON Lines beside it), which CODES' rules accept and `railgauge fit` reads."""
    find_native_tool("railgauge-bench")
    table = tmp_path / "loggp.out"
    res = _run(["measure", "--quick", "--budget", "10", "--max-size", "1KiB", "--passes", "1",
                "--format", "netgauge", "--out", str(table)])
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "loggp.out.jsonl").is_file()
    rows = _codes_rows(table.read_text())
    sizes = [int(r[0]) for r in rows]
    # The budget may end before the last size has all three patterns.
    assert len(sizes) >= 3 and sizes[0] == 1 and sizes[-1] <= 1024
    fitted = _run(["fit", str(table), "--json", "--out", str(tmp_path / "m.json")])
    assert fitted.returncode == 0, fitted.stderr
    assert json.loads(fitted.stdout)["ranges"]


def test_default_out_names(rndv: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    folder, _ = rndv
    res = _run(["export", "--to", "netgauge", str(folder.resolve()), "--json"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    name = Path(json.loads(res.stdout)["file"]).name
    assert name.startswith("railgauge-netgauge-") and name.endswith(".txt")
    assert (tmp_path / name).is_file()
