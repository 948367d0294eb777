"""The libFuzzer targets of native/CMakeLists.txt (-DRG_FUZZ=ON), built and run one way:
tests/test_sim.py (the GOAL parser) and tests/test_json_read.py (the JSON reader)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT


def run_fuzzer(target: str, corpus: Path, pattern: str, min_inputs: int,
               tmp_path: Path) -> None:
    """Builds `target` with clang in build/fuzz and runs it from `corpus` (at least
    `min_inputs` files matching `pattern`, kept in git) for RG_FUZZ_SECONDS (default 60):
    a crash, a sanitizer report or a failed check ends the run with a non-zero status, and
    the test fails. New inputs go to tmp_path, never into the corpus. Skips where clang
    is missing (scripts/install.sh --dev installs it)."""
    clang = shutil.which("clang")
    if clang is None:
        pytest.skip("clang (libFuzzer) is not installed: scripts/install.sh --dev")
    build = ROOT / "build" / "fuzz"
    env = dict(os.environ, CC=clang)
    for cmd in (["cmake", "-S", str(ROOT / "native"), "-B", str(build), "-DRG_FUZZ=ON",
                 "-DRG_BUILD_TESTS=OFF", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                ["cmake", "--build", str(build), "--target", target, "-j2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600,
                              check=False)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    seconds = int(os.environ.get("RG_FUZZ_SECONDS", "60"))
    assert len(list(corpus.glob(pattern))) >= min_inputs
    proc = subprocess.run([str(build / target), str(tmp_path), str(corpus),
                           f"-max_total_time={seconds}", "-max_len=4096",
                           "-rss_limit_mb=2048", f"-artifact_prefix={tmp_path}/",
                           "-print_final_stats=1"],
                          capture_output=True, text=True, timeout=seconds + 120, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs = [ln for ln in proc.stderr.splitlines() if ln.startswith("stat::number_of_executed")]
    assert runs and int(runs[0].split(":")[-1]) > 1000, proc.stderr[-2000:]
