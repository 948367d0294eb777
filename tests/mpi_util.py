"""Running a native tool under an MPI launcher in tests: one helper for every tool
(railgauge-xport-test, railgauge-proto-test, railgauge-bench) and both MPI flavours.

    from mpi_util import MPI_FLAVOURS, run_native_mpi

    @pytest.mark.native
    @pytest.mark.parametrize("flavour", MPI_FLAVOURS)
    def test_something(flavour: str) -> None:
        res = run_native_mpi("railgauge-proto-test", ["--transport", "mpi"], 3, flavour)
        assert res.returncode == 0, res.failure

The tool is found like every native test finds it (``$RG_NATIVE_DIR``, PATH,
``build/native``); its MPI plugins must lie beside it or in ``../lib/railgauge`` (where
the build and ``pip install .`` put them). A flavour whose compiler wrapper is not
installed is skipped, naming the package; one whose wrapper is installed but whose plugin
is missing fails, with the tool's message saying how to build it.

Under AddressSanitizer (``RG_NATIVE_DIR=build/sanitize``) the MPI libraries' own
allocations, still held at exit, would fail every run: ``sanitizer_env`` suppresses leaks
whose allocation stack is inside an MPI library (``lsan-mpi.supp``; railgauge's own leaks
are still reported) and switches to the slow unwinder, without which those stacks end in
"<unknown module>" frames that no suppression can match.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from conftest import find_native_tool
from railgauge.mpilaunch import FLAVOURS, MpiResult, run_mpi

LSAN_SUPPRESSIONS = Path(__file__).resolve().parent / "lsan-mpi.supp"

#: The compiler wrapper whose presence at build time makes the flavour's plugin.
WRAPPERS = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}


def flavour_installed(flavour: str) -> bool:
    """Both the launcher and the compiler wrapper of the flavour are on PATH."""
    return (shutil.which(FLAVOURS[flavour].launcher) is not None
            and shutil.which(WRAPPERS[flavour]) is not None)


def needs_flavour(flavour: str) -> pytest.MarkDecorator:
    fl = FLAVOURS[flavour]
    return pytest.mark.skipif(
        not flavour_installed(flavour),
        reason=f"{fl.launcher} or {WRAPPERS[flavour]} not installed "
               f"(apt-get install {fl.packages})")


#: Both flavours, each skipped where it is not installed: parametrize with this.
MPI_FLAVOURS = [pytest.param(f, marks=needs_flavour(f), id=f) for f in FLAVOURS]


def _merge_options(current: str | None, extra: dict[str, str]) -> str:
    """"a=1:b=2" with extra's keys set (existing values of other keys kept)."""
    items = dict(kv.split("=", 1) for kv in (current or "").split(":") if "=" in kv)
    items.update(extra)
    return ":".join(f"{k}={v}" for k, v in items.items())


def sanitizer_env() -> dict[str, str]:
    """ASAN_OPTIONS and LSAN_OPTIONS for MPI runs of sanitizer builds (harmless for the
    others): the MPI libraries' leaks suppressed, the slow unwinder on."""
    return {
        "ASAN_OPTIONS": _merge_options(os.environ.get("ASAN_OPTIONS"),
                                       {"fast_unwind_on_malloc": "0"}),
        "LSAN_OPTIONS": _merge_options(os.environ.get("LSAN_OPTIONS"),
                                       {"suppressions": str(LSAN_SUPPRESSIONS),
                                        "print_suppressions": "0"}),
    }


def run_native_mpi(tool: str, args: Sequence[str], nranks: int, flavour: str, *,
                   env: Mapping[str, str] | None = None, timeout_s: float = 60.0,
                   bind: str = "auto") -> MpiResult:
    """Runs native tool ``tool`` (a name such as "railgauge-xport-test") with ``args`` as
    ``nranks`` ranks under the flavour's launcher ("openmpi": mpirun.openmpi, "mpich":
    mpiexec.mpich) and returns the result (returncode, failed_rank, failure, stdout,
    stderr, wall_s, pids). ``env`` goes to every rank."""
    path = find_native_tool(tool)
    return run_mpi(flavour, [path, *args], nranks, env={**sanitizer_env(), **(env or {})},
                   timeout_s=timeout_s, bind=bind)
