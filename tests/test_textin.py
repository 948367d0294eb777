"""Compressed and plain input files (python/railgauge/textin.py): every reader of
railgauge's inputs takes gzip, bzip2 and xz by their content, and a broken archive is one
clear error naming the file."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from railgauge import textin
from railgauge.measurements import MeasurementError, read_measurements
from railgauge.netgauge import detect_format, is_netgauge_file, read_any
from railgauge.onen import is_lop_data, read_onen
from railgauge.synth import PAPER_TABLE, synth_prtt, write_jsonl
from railgauge.textin import TextInputError, plain_suffix, read_text

DATA = Path(__file__).resolve().parent / "data" / "netgauge"
OMPI = DATA / "loggp-openmpi.out"
RG = [sys.executable, "-m", "railgauge.cli.main"]

PACKERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "xz": lzma.compress,
}


@pytest.mark.parametrize("kind", sorted(PACKERS))
@settings(max_examples=25, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300),
       bom=st.booleans())
def test_every_packer_round_trips(tmp_path_factory: pytest.TempPathFactory, kind: str,
                                  text: str, bom: bool) -> None:
    path = tmp_path_factory.mktemp("t") / "x.bin"
    raw = (b"\xef\xbb\xbf" if bom else b"") + text.encode()
    path.write_bytes(PACKERS[kind](raw))
    assert textin.compression(path.read_bytes()) == kind
    assert read_text(path) == text


def test_plain_text_and_its_bom(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xef\xbb\xbfhello\n")
    assert read_text(path) == "hello\n"


@pytest.mark.parametrize("kind", sorted(PACKERS))
def test_concatenated_streams_are_one_file(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "two"
    path.write_bytes(PACKERS[kind](b"first\n") + PACKERS[kind](b"second\n"))
    assert read_text(path) == "first\nsecond\n"


@pytest.mark.parametrize(("data", "message"), [
    (gzip.compress(b"x" * 5000)[:20], "gzip file is cut short"),
    (gzip.compress(b"abc") + b"junk", "trailing data that is not gzip"),
    (b"\x1f\x8b" + b"\x00" * 30, "not a valid gzip file"),
    (bz2.compress(b"hello world " * 100)[:10] + b"\x01" * 40, "not a valid bzip2 file"),
    (lzma.compress(b"y" * 5000)[:-30], "xz file is cut short"),
    (gzip.compress(bytes(range(128, 256))), "gzip-compressed data is binary"),
    (bytes(range(128, 256)), "the file is binary"),
])
def test_broken_input_says_why(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "bad"
    path.write_bytes(data)
    with pytest.raises(TextInputError, match=message):
        read_text(path)


def test_trailing_zero_bytes_are_ignored_as_gzip_does(tmp_path: Path) -> None:
    path = tmp_path / "z.gz"
    path.write_bytes(gzip.compress(b"data\n") + b"\x00" * 512)
    assert read_text(path) == "data\n"


def test_an_archive_that_unpacks_too_far_is_refused(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textin, "MAX_UNPACKED", 1000)
    path = tmp_path / "big.gz"
    path.write_bytes(gzip.compress(b"0" * 5000))
    with pytest.raises(TextInputError, match="unpacks to more than"):
        read_text(path)
    path.write_bytes(gzip.compress(b"0" * 1000))
    assert len(read_text(path)) == 1000


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TextInputError, match="cannot read file"):
        read_text(tmp_path / "nope")


def test_plain_suffix_looks_past_compression() -> None:
    assert plain_suffix("a/b.CSV.gz") == ".csv"
    assert plain_suffix("m.jsonl.xz") == ".jsonl"
    assert plain_suffix("t.out") == ".out"
    assert plain_suffix("t.bz2") == ""


@pytest.mark.parametrize("kind", sorted(PACKERS))
def test_a_compressed_netgauge_table_reads_like_the_plain_one(tmp_path: Path,
                                                              kind: str) -> None:
    path = tmp_path / f"loggp.out.{kind}"
    path.write_bytes(PACKERS[kind](OMPI.read_bytes()))
    assert is_netgauge_file(path) and detect_format(path) == "netgauge"
    got, want = read_any(path).records, read_any(OMPI).records
    assert [(r.s, r.n, r.median_us) for r in got] == [(r.s, r.n, r.median_us) for r in want]


def test_a_compressed_lop_csv_is_lop_data(tmp_path: Path) -> None:
    text = "p,rtt_us\n" + "".join(f"{p},{10 + 2.5 * p:.2f}\n" for p in range(1, 9))
    path = tmp_path / "lop.csv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert is_lop_data(path)
    assert sorted(pt.p for pt in read_onen(path).points) == list(range(1, 9))


def test_cli_fit_and_check_of_compressed_files(tmp_path: Path) -> None:
    path = tmp_path / "loggp.out.xz"
    path.write_bytes(lzma.compress(OMPI.read_bytes()))
    proc = subprocess.run([*RG, "fit", str(path), "--seed", "1", "--out",
                           str(tmp_path / "m.json")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "m.json").read_text())["source"]["tool"] == "netgauge"
    cut = tmp_path / "cut.gz"
    cut.write_bytes(gzip.compress(OMPI.read_bytes())[:500])
    proc = subprocess.run([*RG, "fit", str(cut)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"railgauge: error: {cut}: gzip file is cut short (an interrupted copy?)"]


def test_a_compressed_measurement_file_reads_like_the_plain_one(tmp_path: Path) -> None:
    meas = synth_prtt(PAPER_TABLE["OFED"], [1, 64, 4096, 65536], noise=0.01, reps=50, seed=3)
    plain = write_jsonl(meas, tmp_path / "m.jsonl")
    packed = tmp_path / "m.jsonl.bz2"
    packed.write_bytes(bz2.compress(plain.read_bytes()))
    assert detect_format(packed) == "railgauge"
    got, want = read_measurements(packed).records, read_measurements(plain).records
    assert [(r.s, r.n, r.median_us) for r in got] == [(r.s, r.n, r.median_us) for r in want]
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(plain.read_bytes())[:100])
    with pytest.raises(MeasurementError, match=f"{cut}: gzip file is cut short"):
        read_measurements(cut)


def test_text_that_starts_like_a_magic_number_stays_text(tmp_path: Path) -> None:
    path = tmp_path / "b.txt"
    path.write_bytes(b"BZh is not an archive\n")
    assert textin.compression(path.read_bytes()) is None
    assert read_text(path) == "BZh is not an archive\n"
    assert textin.compression(bz2.compress(b"")) == "bzip2"
    assert read_text_of(tmp_path, bz2.compress(b"")) == ""


def read_text_of(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "blob"
    path.write_bytes(data)
    return read_text(path)
