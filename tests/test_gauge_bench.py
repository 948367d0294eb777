"""bench/gauge_bench.py's grouping of runs by the host's state: which runs are judged as
the fast state's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "gauge_bench.py"


@pytest.fixture(scope="module")
def gb() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gauge_bench_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _runs(gb: ModuleType, states: list[float | None], probe: str = "PRTT(16,0,1)") -> list:
    return [gb.Run(entry="e", round=i + 1, dir=Path("."), wall_s=None, state_us=v,
                   state_probe=None if v is None else probe) for i, v in enumerate(states)]


# The states of the draw of 2026-11-29 (PRTT(16,0,1), us) and the rounds in the fast state.
DRAWS = {
    "shm": ([0.9567, 0.9474, 1.088, 1.027, 0.9771, 4.081, 1.065, 4.061, 1.046, 1.076],
            [1, 2, 3, 4, 5, 7, 9, 10]),
    "tcp": ([103.0, 82.28, 80.98, 79.25, 99.67, 82.65, 82.41, 103.2, 99.07, 101.5],
            [2, 3, 4, 6, 7]),
    # Within 1.25x of the fastest, yet two states: large messages up to 4x apart.
    "ofi:tcp": ([145.3, 158.9, 128.2, 157.8, 156.5, 157.5, 158.5, 157.2, 127.7, 127.3],
                [3, 9, 10]),
    "mpich": ([6.945, 7.106, 6.864, 6.756, 2.49, 2.377, 7.003, 2.468, 3.231, 2.498],
              [5, 6, 8, 10]),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_fast_state_runs_of_real_draws(gb: ModuleType, name: str) -> None:
    states, fast = DRAWS[name]
    assert [r.round for r in gb.fast_state_runs(_runs(gb, states))] == fast


def test_fast_state_runs_edges(gb: ModuleType) -> None:
    # A chain of small steps stops at 1.25x of the fastest: no drift into the next state.
    chain = [1.0, 1.08, 1.16, 1.24, 1.3]
    assert [r.round for r in gb.fast_state_runs(_runs(gb, chain))] == [1, 2, 3, 4]
    # Runs without probes, and runs whose probes measured another kind, are left out.
    runs = _runs(gb, [None, 1.0, 1.02]) + _runs(gb, [0.4], probe="PRTT(1,0,1)")
    for i, r in enumerate(runs):
        r.round = i + 1
    assert [r.round for r in gb.fast_state_runs(runs)] == [2, 3]
    assert gb.fast_state_runs(_runs(gb, [None, None])) == []


def test_fast_state_runs_by_the_cache_line(gb: ModuleType) -> None:
    """Probed by the cache line (states 1.6x wide): 29-37 ns is one state, 145-167 ns
    another; a single run at 14 ns (one core's two hardware threads) is faster but alone,
    so the fast state is the fastest with two runs."""
    states = [0.031, 0.030, 0.155, 0.034, 0.014, 0.160, 0.036, 0.029, 0.167, 0.037]
    runs = _runs(gb, states, probe="c2c")
    for r in runs:
        r.state_gap = 1.6
    assert [r.round for r in gb.fast_state_runs(runs)] == [1, 2, 4, 7, 8, 10]
    # In bands of PRTT's 1.25x the same values would split 29-36 from 37 ns.
    assert [r.round for r in gb.fast_state_runs(_runs(gb, states, probe="c2c"))] == [
        1, 2, 4, 7, 8]


def _blind(gb: ModuleType, kind: str, number: int, t: int, changes: list[int],
           bends: list[tuple[int, int, float]] | None = None) -> object:
    return gb.BlindRun(stack="openmpi", kind=kind, number=number, t=t,
                       window=(t // 4, t * 4), dir=Path("."), wall_s=1.0, error=None,
                       changes=changes, bends=list(bends or []))


def test_blind_judgement_found_invented_revealed(gb: ModuleType) -> None:
    # Open MPI with the eager limit at 24576 B (the draw of 2026-11-29): a change near
    # 17 KiB shows in three runs; the fourth saw the break as a bend (88%).
    runs = [
        _blind(gb, "default", 1, 24576, []),
        _blind(gb, "moved", 1, 24576, [17378, 24576]),
        _blind(gb, "moved", 2, 24576, [17378, 24576]),
        _blind(gb, "moved", 3, 24576, [24576], [(12288, 14613, 0.88)]),
        _blind(gb, "moved", 4, 24576, [17378, 24576]),
    ]
    s = gb.summarize_blind("openmpi", runs)
    assert s.found == 4 and s.invented_runs == 3 and s.unexplained_runs == 0
    assert all(r.revealed == [17378] for r in s.moved if r.invented)
    assert s.ok is True
    # Without the bend (the break nowhere in run 3), the change is not corroborated.
    runs[3].bends = []
    s = gb.summarize_blind("openmpi", runs)
    assert s.unexplained_runs == 3 and s.ok is False
    # A bend far from the change corroborates nothing; a change of the default runs
    # of the window is no invention; a run without T's change is not found.
    runs[3].bends = [(6144, 7306, 0.6)]
    runs[0].changes = [17378]
    runs[4].changes = [17378]
    s = gb.summarize_blind("openmpi", runs)
    assert s.invented_runs == 0 and s.found == 3 and s.ok is False
