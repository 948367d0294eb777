"""The refinement around a protocol change is measured in the sweep's state of the host
(railgauge.measure.measure_prtt, docs/fit.md section 1): a refinement made only in another
state is measured again once, and what is still off is left out."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from railgauge import measure
from railgauge.hoststate import (
    format_band,
    format_probe,
    header_gap,
    host_state,
    off_state_sizes,
    probe_name,
    reference_state_us,
    same_state,
    state_band,
)
from railgauge.measure import MeasurePlan, measure_prtt


def _lines(sizes: list[int], probe: float, in_state: bool | str | None = None) -> list[str]:
    out = [json.dumps({"type": "header", "pattern": "prtt", "params": {"sizes": sizes}})]
    for s in sizes:
        for rtype, n in (("prtt", 1), ("prtt", 16), ("orecv", 16)):
            rec = {"type": rtype, "n": n, "s": s, "d_us": 0.0, "median_us": probe * 10,
                   "passes": 2, "pass_state_us": [probe, probe * 1.05]}
            if in_state is not None:  # the tool's verdict of a run given --state-ref
                # "first": only the orecv record of the first size is off
                rec["in_state"] = (in_state is True or (
                    in_state == "first" and not (rtype == "orecv" and s == sizes[0])))
            out.append(json.dumps(rec))
    out.append(json.dumps({"type": "footer", "points": 3 * len(sizes), "status": "ok"}))
    return out


def _fake(monkeypatch: pytest.MonkeyPatch, states: list[float],
          verdicts: list[bool | str | None] | None = None) -> list[list[int]]:
    """run_prtt writing every size in the next state of ``states`` (probe in us): the
    sweep first, then each refinement attempt, with the next of ``verdicts`` as the
    records' in_state (None: no such key, an older tool). Returns the sizes of each
    call."""
    calls: list[list[int]] = []

    def run_prtt(plan: Any, sizes: list[int], out: Path, **kw: Any) -> Any:
        # The refinement is given the sweep's state (--state-ref); the sweep chooses.
        assert kw.get("state_ref_us") == (pytest.approx(states[0]) if calls else None)
        calls.append(list(sizes))
        verdict = verdicts[len(calls) - 1] if verdicts else None
        out.write_text("\n".join(_lines(sizes, states[len(calls) - 1], verdict)) + "\n",
                       encoding="utf-8")
        return SimpleNamespace(returncode=0, failure=None)

    monkeypatch.setattr(measure, "run_prtt", run_prtt)
    monkeypatch.setattr(MeasurePlan, "validate", lambda self: None)
    return calls


def _sizes_in(path: Path) -> set[int]:
    return {json.loads(ln)["s"] for ln in path.read_text().splitlines()
            if json.loads(ln)["type"] in ("prtt", "orecv")}


PLAN = MeasurePlan(min_size=256, max_size=4096, per_octave=1, budget_s=60.0,
                   refine_points=2)


def test_state_band_and_reference_state() -> None:
    """The reference state of railgauge-bench (prtt.c, rg__bench_state_band): of the bands
    1.25x wide about each probe, the one in which the most points have a pass with both its
    probes (the fastest of equals); its middle is the run's state."""
    fast, slow = [0.19, 0.2, 0.2, 0.21, 0.22], [0.68, 0.7, 0.72, 0.75]
    recs = [{"type": "prtt", "s": s, "pass_state_us": [f, sl]}
            for s, f, sl in zip((1, 2, 3, 4), fast, slow, strict=False)]
    band = state_band(recs)
    assert band is not None and band["mid_us"] == pytest.approx(0.19)  # a tie: the fastest
    assert band["band_us"] == pytest.approx([0.19 / 1.25**0.5, 0.19 * 1.25**0.5])
    assert band["in_band"] == 4 and band["points"] == 4
    assert reference_state_us(recs) == pytest.approx(0.19)
    # Every size once slow, two of four ever fast: the slow state.
    mostly_slow = [{"type": "prtt", "s": 1, "pass_state_us": [0.2, 0.21, 0.7]},
                   {"type": "prtt", "s": 2, "pass_state_us": [0.22, 0.72]},
                   *({"type": "prtt", "s": s, "pass_state_us": [0.7 + 0.01 * s, 0.8]}
                     for s in (3, 4))]
    # The band about 0.72 holds both passes of sizes 3 and 4 (up to 0.805), about 0.7 one.
    assert reference_state_us(mostly_slow) == pytest.approx(0.72)
    # One whole pass slow, two mostly fast: the fast state, where points are confirmed.
    one_slow_pass = [{"type": "prtt", "s": s, "pass_state_us": [0.7, 0.2, 0.21]}
                     for s in range(1, 7)]
    one_slow_pass += [{"type": "prtt", "s": s, "pass_state_us": [0.7, 0.2, 0.7]}
                      for s in (7, 8)]
    assert reference_state_us(one_slow_pass) == pytest.approx(0.2)
    # Three states (MPICH, 2026-11-29: PRTT(16,0,1) 2.3, 3.2 and 7 us): the one most
    # points saw.
    three = [{"type": "prtt", "s": s, "pass_state_us": [3.2 + 0.01 * s, 3.3]}
             for s in range(1, 9)]
    three += [{"type": "prtt", "s": s, "pass_state_us": [2.3, 7.0]} for s in (20, 21, 22)]
    three += [{"type": "prtt", "s": s, "pass_state_us": [7.1]} for s in (30, 31, 32, 33)]
    assert reference_state_us(three) == pytest.approx(3.21)
    assert state_band(three)["in_band"] == 8
    # A pass whose probe after it shows another state does not count in that band.
    straddled = [{"type": "prtt", "s": s, "pass_state_us": [0.2, 0.7],
                  "pass_state_after_us": [0.7, 0.71]} for s in (1, 2, 3)]
    straddled.append({"type": "prtt", "s": 4, "pass_state_us": [0.2],
                      "pass_state_after_us": [0.21]})
    assert reference_state_us(straddled) == pytest.approx(0.7)
    assert reference_state_us([{"type": "prtt", "s": 1}]) is None
    # Since 2026-11-30: the fastest state in which every point has a pass wins over a
    # slower one that holds more passes (two vCPUs moved apart for most of a run that
    # still measured every point once with them close) ...
    head16 = {"type": "header", "params": {"state_probe": "c2c", "state_gap": 1.6}}
    mixed = [{"type": "prtt", "s": s, "pass_state_us": [0.150, 0.031 + 0.001 * (s % 3), 0.155],
              "pass_state_after_us": [0.152, 0.032, 0.15]} for s in range(1, 9)]
    mband = state_band([head16, *mixed])
    assert mband is not None and mband["mid_us"] == pytest.approx(0.031)
    assert mband["in_band"] == mband["points"] == 8
    # ... but one point without a fast pass keeps the state of the most passes.
    mixed.append({"type": "prtt", "s": 9, "pass_state_us": [0.15, 0.151],
                  "pass_state_after_us": [0.152, 0.15]})
    assert reference_state_us([head16, *mixed]) == pytest.approx(0.15)
    # A straddled pass (fast before, slow after) does not cover its point.
    mixed[-1] = {"type": "prtt", "s": 9, "pass_state_us": [0.031, 0.151],
                 "pass_state_after_us": [0.152, 0.15]}
    assert reference_state_us([head16, *mixed]) == pytest.approx(0.15)
    mixed[-1]["pass_state_after_us"] = [0.033, 0.15]
    assert reference_state_us([head16, *mixed]) == pytest.approx(0.031)
    # All but 2% of the points suffice (one of 50 whose only fast pass straddled 15 and
    # 31 ns); one of 40 is too many.
    many = [{"type": "prtt", "s": s, "pass_state_us": [0.150, 0.031, 0.155],
             "pass_state_after_us": [0.152, 0.032, 0.15]} for s in range(1, 50)]
    many.append({"type": "prtt", "s": 50, "pass_state_us": [0.015, 0.151, 0.156],
                 "pass_state_after_us": [0.031, 0.15, 0.157]})
    assert reference_state_us([head16, *many]) == pytest.approx(0.031)
    assert reference_state_us([head16, *many[10:]]) == pytest.approx(0.15)
    assert off_state_sizes(recs, 0.2) == []
    assert off_state_sizes(recs, 0.06) == [1, 2, 3, 4]  # every probe 1.25x above or more
    assert off_state_sizes([{"type": "prtt", "s": 5, "pass_state_us": [0.7, 0.21]}],
                           0.2) == []
    assert off_state_sizes(straddled[:1], 0.21) == [] and off_state_sizes(
        [{"type": "prtt", "s": 1, "pass_state_us": [0.7], "pass_state_after_us": [0.71]}],
        0.21) == [1]
    # Records of a run given the sweep's state (--state-ref) say whether they are in it.
    flagged = [{"type": "prtt", "s": 7, "pass_state_us": [0.2], "in_state": True},
               {"type": "prtt", "s": 7, "pass_state_us": [0.2], "in_state": False},
               {"type": "orecv", "s": 8, "pass_state_us": [0.7], "in_state": True},
               {"type": "prtt", "s": 9, "pass_state_us": [0.7]}]
    assert off_state_sizes(flagged, 0.2) == [7, 9]
    # The run's state as the model keeps it, and two runs compared.
    assert host_state(recs) == {"probe_us": pytest.approx(0.19), "points": 4, "in_band": 4,
                                "band_us": pytest.approx(band["band_us"]),
                                "probe": "PRTT(1,0,1)", "gap": 1.25}
    assert probe_name({"params": {"state_probe_n": 16}}) == "PRTT(16,0,1)"
    assert probe_name({"params": {}}) == probe_name(None) == "PRTT(1,0,1)"
    assert host_state(straddled, "PRTT(16,0,1)")["probe"] == "PRTT(16,0,1)"
    assert host_state([{"type": "prtt", "s": 1}]) is None
    assert same_state(0.2, 0.24) and same_state(0.24, 0.2)
    assert not same_state(0.2, 0.75) and not same_state(0.0, 0.0)
    # Probed by the cache line between the ranks (one way, 13-15, 29-37 or 145-167 ns on
    # the development host): the header says so and gives the band's width, 1.6x, which
    # keeps 29 and 37 ns in one state and 14 and 155 ns out of it.
    head = {"type": "header", "params": {"state_probe": "c2c", "state_probe_n": 16,
                                         "state_gap": 1.6}}
    line = [{"type": "prtt", "s": s, "pass_state_us": [0.029 + 0.001 * s],
             "pass_state_after_us": [0.031]} for s in range(1, 9)]
    line += [{"type": "prtt", "s": 9, "pass_state_us": [0.014]},
             {"type": "prtt", "s": 10, "pass_state_us": [0.155]}]
    assert probe_name(head) == "c2c" and header_gap(head) == 1.6
    assert header_gap({"params": {"state_gap": True}}) == header_gap(None) == 1.25
    band = state_band([head, *line])
    assert band["in_band"] == 8 and band["band_us"][0] > 0.014 and band["band_us"][1] < 0.155
    assert state_band(line)["in_band"] < 8  # 1.25x: 29 and 37 ns fall apart
    assert off_state_sizes([head, *line], 0.031) == [9, 10]
    assert host_state([head, *line], "c2c", 1.6)["gap"] == 1.6
    assert same_state(0.029, 0.037, 1.6) and not same_state(0.029, 0.037)
    assert format_probe("c2c", 0.0312) == "cache line 31.2 ns one way"
    assert format_probe("PRTT(16,0,1)", 1.04) == "PRTT(16,0,1) 1.04 us"
    assert format_band("c2c", 0.0245, 0.0392) == "24.5-39.2 ns"


def test_refinement_in_the_sweeps_state_is_kept(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    calls = _fake(monkeypatch, [0.2, 0.22])
    res = measure_prtt(PLAN, tmp_path / "m.jsonl", fit_boundaries=lambda _: [(512, 1024)])
    assert len(calls) == 2 and res.refined_sizes == calls[1] and res.refine_dropped == []
    assert set(calls[1]) <= _sizes_in(tmp_path / "m.jsonl")


def test_refinement_in_another_state_is_measured_again(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    calls = _fake(monkeypatch, [0.2, 0.7, 0.21])
    res = measure_prtt(PLAN, tmp_path / "m.jsonl", fit_boundaries=lambda _: [(512, 1024)])
    assert len(calls) == 3 and calls[2] == calls[1]
    assert res.refined_sizes == calls[1] and res.refine_dropped == []
    path = tmp_path / "m.jsonl"
    # The slow attempt's records are gone, the second attempt's are there.
    probes = [json.loads(ln).get("pass_state_us", [0])[0] for ln in path.read_text().splitlines()
              if json.loads(ln).get("s") in set(calls[1])]
    assert probes and all(p == 0.21 for p in probes)


@pytest.mark.parametrize("state", [0.7, 0.05])
def test_refinement_still_off_is_left_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          state: float) -> None:
    """Slower or faster than the sweep twice: left out, and said."""
    calls = _fake(monkeypatch, [0.2, state, state])
    res = measure_prtt(PLAN, tmp_path / "m.jsonl", fit_boundaries=lambda _: [(512, 1024)])
    assert len(calls) == 3
    assert res.refined_sizes == [] and res.refine_dropped == calls[1]
    assert not set(calls[1]) & _sizes_in(tmp_path / "m.jsonl")
    assert _sizes_in(tmp_path / "m.jsonl") == {256, 512, 1024, 2048, 4096}


def test_refinement_judged_by_the_tools_verdict(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """Given the sweep's state, the tool says of each record whether a pass of it was made
    in that state (in_state). A size one of whose records says false is measured again,
    whatever its probes: over loopback TCP the states were only 1.27x apart, the probes of
    a refinement in the slow one less than 1.25x from the sweep's state, its PRTT(16,0,s)
    1.3x the sweep's."""
    calls = _fake(monkeypatch, [0.2, 0.22, 0.2, 0.2], [None, False, True])
    res = measure_prtt(PLAN, tmp_path / "m.jsonl", fit_boundaries=lambda _: [(512, 1024)])
    assert len(calls) == 3 and calls[2] == calls[1] and res.refine_dropped == []
    calls = _fake(monkeypatch, [0.2, 0.2, 0.2], [None, "first", False])
    res = measure_prtt(PLAN, tmp_path / "n.jsonl", fit_boundaries=lambda _: [(512, 1024)])
    # Only the size with an off record (the first's orecv) is measured again, and left out.
    assert len(calls[1]) >= 2 and calls[2] == calls[1][:1]
    assert res.refine_dropped == calls[1][:1] and res.refined_sizes == calls[1][1:]


def _fake_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """fit_loggp returning two ranges (a change between 8192 and 9742 B) and four breaks:
    the kept change, a bend of support 0.7, one of 0.3 and one merged within a step."""
    import railgauge.fit.loggp as loggp
    import railgauge.measurements as measurements

    breaks = [
        {"between_bytes": [8192, 9742], "support": 1.0, "kept": True},
        {"between_bytes": [861, 1024], "support": 0.7, "kept": False},
        {"between_bytes": [91, 108], "support": 0.3, "kept": False},
        {"between_bytes": [9742, 11585], "support": 0.95, "kept": False,
         "merged": "within one step"},
    ]
    fit = SimpleNamespace(
        ranges=[SimpleNamespace(to_bytes=8192, from_bytes=1),
                SimpleNamespace(to_bytes=None, from_bytes=9742)],
        criterion={"break_support": {"breaks": breaks}})
    monkeypatch.setattr(loggp, "fit_loggp", lambda *a, **k: fit)
    monkeypatch.setattr(measurements, "read_measurements", lambda p: None)


def test_refinement_around_bends_of_enough_support(monkeypatch: pytest.MonkeyPatch) -> None:
    from railgauge.gauge import fit_boundaries

    _fake_fit(monkeypatch)
    assert fit_boundaries("m.jsonl") == [(8192, 9742)]
    assert fit_boundaries("m.jsonl", bend_support=0.5) == [(861, 1024), (8192, 9742)]
    assert fit_boundaries("m.jsonl", bend_support=0.2) == [(91, 108), (861, 1024),
                                                          (8192, 9742)]
    assert fit_boundaries("m.jsonl", bend_support=0.71) == [(8192, 9742)]


def test_refine_support_option_reaches_the_plan() -> None:
    from dataclasses import fields

    from railgauge.cli.common import MeasureArgs, make_plan

    base = {f.name: None for f in fields(MeasureArgs)}
    base.update(transport="shm", quick=False, min_size=1, max_size=1 << 20, n_msgs=16,
                no_refine=False)
    assert make_plan(MeasureArgs(**base)).refine_support is None
    base["refine_support"] = 0.5
    assert make_plan(MeasureArgs(**base)).refine_support == 0.5
