"""The protocol thresholds a user can move, per stack: the variable that moves one, the
values it is moved to in the blind-threshold test and benchmark, and the sweep around it.

One table for tests/test_blind_thresholds.py (CI moves one threshold per stack, drawn from
a printed seed) and bench/gauge_bench.py --blind (10 runs per stack): a failure of the test
is a run of the benchmark. Candidate values: each found in every calibration run on a busy
2-core machine, and not found in its window at the default settings (so that the test fails
when the variable does not reach the stack). Left out by the calibration: Open MPI 8192 and
32768 (5 of 6: a refinement pass measured at another level than the sweep) and 2048 (next
to the defaults' changes); MPICH 16384 (1 of 3: bimodal times), 24576 (3 of 3, one change
0.2 B inside the step) and 2048 (its default sweep already shows a change at 2139 B);
railgauge's RG_OFI_HEAD_SIZE 4096, 6144 (4 of 6 each) and 8192 (2 of 3): one small message
more over tcp is a weak change.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Sizes per doubling of a blind run's sweep.
PER_OCTAVE = 4
STEP = 2.0 ** (1.0 / PER_OCTAVE)
#: A blind run's window around its threshold T: T / WINDOW_BELOW .. T * WINDOW_ABOVE.
WINDOW_BELOW = 4
WINDOW_ABOVE = 4
#: Over ofi:tcp the window ends at 16 KiB: above RG_OFI_HEAD_SIZE (16 KiB by default) the
#: ofi transport sends a head and a tail, and the tail crosses a moved rxm threshold T
#: again at 16 KiB + T (and rxm's 16 KiB eager size at T + 16 KiB when the head size is T).
OFI_WINDOW_MAX = 16384


@dataclass(frozen=True)
class Stack:
    label: str
    #: The environment variable that moves the threshold.
    var: str
    candidates: tuple[int, ...]
    gauge_args: tuple[str, ...]
    window_max: int | None
    #: What must be installed: a launcher on PATH, or "libfabric" (pkg-config).
    needs: str


STACKS: dict[str, Stack] = {
    "openmpi": Stack("Open MPI (vader)", "OMPI_MCA_btl_vader_eager_limit",
                     (12288, 16384, 24576),
                     ("--transport", "mpi", "--launcher", "mpirun"), None, "mpirun.openmpi"),
    "mpich": Stack("MPICH (ch4:ucx)", "UCX_RNDV_THRESH",
                   (4096, 32768, 65536),
                   ("--transport", "mpi", "--launcher", "mpiexec"), None, "mpiexec.mpich"),
    "libfabric": Stack("libfabric (ofi_rxm over tcp)", "FI_OFI_RXM_BUFFER_SIZE",
                       (1024, 2048, 3072, 4096, 6144, 8192),
                       ("--transport", "ofi:tcp"), OFI_WINDOW_MAX, "libfabric"),
    "railgauge": Stack("railgauge (ofi transport)", "RG_OFI_HEAD_SIZE",
                       (1024, 2048, 3072), ("--transport", "ofi:tcp"), OFI_WINDOW_MAX,
                       "libfabric"),
}


def window(stack: Stack, t: int) -> tuple[int, int]:
    """The sweep's smallest and largest size for threshold t."""
    hi = t * WINDOW_ABOVE
    if stack.window_max is not None:
        hi = min(hi, stack.window_max)
    return max(1, t // WINDOW_BELOW), hi


def within_one_step(c: int, t: int) -> bool:
    """Change c lies within one step of the sweep of threshold t (t the last size of the
    lower protocol or the first of the upper one)."""
    return t / STEP < c <= t * STEP + 1


def same_change(a: int, b: int) -> bool:
    """Two changes within one step of the sweep of each other."""
    lo, hi = min(a, b), max(a, b)
    return hi <= lo * STEP + 1


def draws(seed: int, key: str, n: int) -> list[int]:
    """The stack's first n thresholds for the seed; the first is the test's draw (one
    stream per stack, independent of the order the stacks run in)."""
    rng = random.Random(f"{seed}:{key}")
    return [rng.choice(STACKS[key].candidates) for _ in range(n)]


def missing(key: str) -> str | None:
    """Why the stack cannot run here, or None."""
    needs = STACKS[key].needs
    if needs == "libfabric":
        ok = shutil.which("pkg-config") is not None and subprocess.run(
            ["pkg-config", "--exists", "libfabric"], check=False,
            capture_output=True).returncode == 0
        return None if ok else "libfabric not found by pkg-config (apt-get install libfabric-dev)"
    return None if shutil.which(needs) else f"{needs} not found"


def gauge_argv(railgauge: list[str], key: str, t: int, out_dir: Path) -> list[str]:
    """The gauge of a blind run of threshold t (railgauge: how to start the CLI)."""
    lo, hi = window(STACKS[key], t)
    return [*railgauge, "gauge", *STACKS[key].gauge_args, "--min-size", str(lo),
            "--max-size", str(hi), "--per-octave", str(PER_OCTAVE), "--no-onen",
            "--no-barrier", "--out", str(out_dir)]
