"""The native JSON reader (native/src/base/json_read.h) under libFuzzer, run as the GOAL
parser's fuzzer is (tests/fuzz_util.py): built in build/fuzz with clang, from the corpus
kept in git (native/tests/fuzz/json-corpus), for RG_FUZZ_SECONDS (default 60)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT
from fuzz_util import run_fuzzer


@pytest.mark.slow
def test_json_fuzzer(tmp_path: Path) -> None:
    # Every input must parse into a tree that the writer writes back as the same tree, or
    # fail with a message and a line and column (native/tests/fuzz/json_check.h).
    run_fuzzer("railgauge-json-fuzz", ROOT / "native" / "tests" / "fuzz" / "json-corpus",
               "*.json", 8, tmp_path)
