"""The model as a LogGOPS simulator's parameters (railgauge.fit.simview): `railgauge sim`
charges the model's own predictions, one parameter set per piece."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import find_native_tool
from railgauge.fit.loggp import fit_loggp
from railgauge.fit.model import g_all, loggp_from_json, prtt
from railgauge.fit.simview import sim_sets
from railgauge.sim import params_from_model, run_sim
from railgauge.synth import sweep_sizes, synth_prtt

#: Two ranges: a rendezvous-like step at 16385 B (L and o up, G down), and loopback TCP's
#: overlap in the first (o_s + o_r above PRTT(1,0,1)/2: an L of -1.2 us).
STEP = [(1, 5.0, 1.0, 2.0, 0.001), (16385, 15.0, 3.0, 2.0, 0.0008)]
OVERLAP = [(1, -1.2, 4.1, 4.4, 0.00018, 0.0, 1.8, 0.0002)]


def _model(params: list[tuple[float, ...]], tmp: Path) -> tuple[dict, Path]:
    meas = synth_prtt(params, sweep_sizes(1 << 20, per_octave=4), noise=0.005, seed=1,
                      reps=200)
    doc = fit_loggp(meas, seed=0, n_boot=0).to_json()
    path = tmp / "model-loggp.json"
    path.write_text(json.dumps(doc) + "\n")
    return doc, path


@pytest.mark.parametrize("params", [STEP, OVERLAP], ids=["step", "overlap"])
def test_sets_carry_the_models_predictions(params: list[tuple[float, ...]],
                                           tmp_path: Path) -> None:
    doc, _ = _model(params, tmp_path)
    fit = loggp_from_json(doc)
    sets = sim_sets(fit)
    pieces = [p for r in fit.ranges for p in r.pieces]
    assert [s.from_bytes for s in sets] == [p.from_bytes for p in pieces]
    for i, ss in enumerate(sets):
        assert min(ss.L, ss.o, ss.g, ss.G, ss.O) >= 0.0
        assert fit.ranges[0].L_us + 1e-12 >= ss.L
        end = sets[i + 1].from_bytes - 1 if i + 1 < len(sets) else math.inf
        assert ss.to_bytes == end
        for s in {ss.from_bytes, pieces[i].to_bytes}:
            one_way = ss.L + 2 * ss.o + (s - 1) * max(ss.O, ss.G)
            assert one_way == pytest.approx(prtt(doc, 1, 0.0, s) / 2, rel=0.01), (i, s)
            # The gap is the model's where it grows at least as fast as the one-way time;
            # else LogGP's one G takes the one-way slope and the gap is not less.
            gap = ss.g + (s - 1) * ss.G
            if pieces[i].lines["gall"][1] >= pieces[i].lines["h"][1]:
                assert gap == pytest.approx(g_all(doc, s), rel=0.01), (i, s)
            else:
                assert gap >= g_all(doc, s) * 0.99, (i, s)


@pytest.mark.native
@pytest.mark.parametrize("params", [STEP, OVERLAP], ids=["step", "overlap"])
def test_railgauge_sim_one_message_is_the_models_one_way_time(
        params: list[tuple[float, ...]], tmp_path: Path) -> None:
    """One message of s bytes under `railgauge-sim goal --model`: its makespan is the
    model's PRTT(1,0,s)/2, within 1%, at sizes of every piece and between them."""
    doc, path = _model(params, tmp_path)
    tool = find_native_tool("railgauge-sim")
    p = params_from_model(path)
    for s in (1, 100, 4096, 16384, 16385, 100_000, 1 << 20):
        goal = tmp_path / f"one-{s}.goal"
        goal.write_text(f"num_ranks 2\nrank 0 {{\nl1: send {s}b to 1 tag 0\n}}\n"
                        f"rank 1 {{\nl1: recv {s}b from 0 tag 0\n}}\n")
        got = run_sim(tool, ["goal", str(goal)], p)["makespan_us"]
        assert got == pytest.approx(prtt(doc, 1, 0.0, s) / 2, rel=0.01), s
