"""Every model knows its accuracy: point errors, decades, k-fold cross-validation over sizes,
the run's own noise, and `railgauge check` (issue 18, item 4)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from railgauge.fit.accuracy import (
    CV_FAST_OPTIONS,
    RELIABLE_MEDIAN_REL,
    RELIABLE_P90_REL,
    PointError,
    by_decade,
    cross_validate,
    decade_groups,
    noise,
    point_errors,
    summarize,
)
from railgauge.fit.loggp import LoggpFit, ModelError, fit_loggp, prtt
from railgauge.measurements import Measurements, read_measurements
from railgauge.synth import PAPER_TABLE, sweep_sizes, synth_prtt, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "docs" / "data" / "onen-16" / "prtt-shm.jsonl"
RG = [sys.executable, "-m", "railgauge.cli.main"]
TCP = PAPER_TABLE["TCP"]
OFED = PAPER_TABLE["OFED"]
SIZES = sweep_sizes(1 << 20, per_octave=2)


def rg(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RG, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def exact(params: list[tuple[float, ...]], sizes: list[int], **kw: Any) -> Measurements:
    """Noise-free synthetic measurements: every sample is the model's value."""
    return synth_prtt(params, sizes, noise=0.0, reps=5, **kw)


def err(s: int, rel: float) -> PointError:
    return PointError(s=s, kind="p1", n=1, d_us=0.0, measured_us=1.0,
                      predicted_us=1.0 + rel, rel=rel)


# ---------------------------------------------------------------------------------------
# Point errors
# ---------------------------------------------------------------------------------------


def test_point_errors_judge_every_prtt_record_and_no_orecv() -> None:
    meas = exact(TCP, SIZES)
    fit = fit_loggp(meas, n_boot=0)
    errs = point_errors(fit, meas)
    assert len(errs) == 3 * len(SIZES)
    assert {e.kind for e in errs} == {"p1", "pn", "pd"}
    assert sum(r.type == "orecv" for r in meas.records) == len(SIZES)
    assert max(e.rel for e in errs) < 1e-9
    # The measured value is the record's median.
    medians = {(r.s, r.n, r.d_us > 0): r.median_us for r in meas.records if r.type == "prtt"}
    for e in errs:
        assert e.measured_us == medians[(e.s, e.n, e.d_us > 0)]


def test_point_errors_are_relative_to_the_median() -> None:
    meas = exact(TCP, SIZES)
    fit = fit_loggp(meas, n_boot=0)
    # Every PRTT median 10% above the model: each error is 0.1 / 1.1.
    scaled = dataclasses.replace(meas, records=[
        dataclasses.replace(r, median_us=1.1 * r.median_us) if r.type == "prtt" else r
        for r in meas.records
    ])
    errs = point_errors(fit, scaled)
    assert np.allclose([e.rel for e in errs], 0.1 / 1.1, rtol=1e-6)
    assert all(e.signed_rel < 0 for e in errs)


def test_point_errors_use_the_fits_delay_for_older_files() -> None:
    """Older files record d_actual_us with uncorrected samples: PRTT(n,d,s) must be predicted
    with the delay that elapsed (d_actual), not the requested d_us."""
    meas = exact(TCP, SIZES, delay="d_actual", overshoot_us=2.0)
    fit = fit_loggp(meas, n_boot=0)
    pd = [e for e in point_errors(fit, meas) if e.kind == "pd"]
    assert len(pd) == len(SIZES)
    assert max(e.rel for e in pd) < 1e-9
    # With the requested d instead, the same points would be off by far more.
    recs = [r for r in meas.records if r.kind == "pd"]
    naive = prtt(fit, n=np.array([r.n for r in recs]), d=np.array([r.d_us for r in recs]),
                 s=np.array([r.s for r in recs]))
    naive_rel = np.abs(naive - np.array([r.median_us for r in recs])) / np.array(
        [r.median_us for r in recs])
    assert naive_rel.max() > 1e-3


def test_point_errors_replace_an_implausible_d_actual_as_the_fit_does() -> None:
    """A preempted delay inflates the mean d_actual_us of a point but not its median PRTT:
    the fit then uses d + the typical overshoot (docs/fit.md, section 1), and so must the
    prediction of that point."""
    base = exact(TCP, SIZES, delay="d_actual", overshoot_us=0.5)
    recs = [
        dataclasses.replace(r, d_actual_us=r.d_us + 5.0) if r.kind == "pd" and r.s == 16 else r
        for r in base.records
    ]
    meas = dataclasses.replace(base, records=recs)
    fit = fit_loggp(meas, n_boot=0)
    (e16,) = [e for e in point_errors(fit, meas) if e.kind == "pd" and e.s == 16]
    (rec,) = [r for r in recs if r.kind == "pd" and r.s == 16]
    assert e16.d_us == pytest.approx(rec.d_us + 0.5)
    assert e16.rel < 1e-6
    assert rec.d_actual_us is not None
    wrong = prtt(fit, n=rec.n, d=rec.d_actual_us, s=16)
    assert abs(wrong - rec.median_us) / rec.median_us > 0.01


# ---------------------------------------------------------------------------------------
# Summaries and decades
# ---------------------------------------------------------------------------------------


def test_summarize() -> None:
    errs = [err(s, r) for s, r in zip(range(1, 11), np.linspace(0.0, 0.9, 10), strict=True)]
    st = summarize(errs)
    assert st["points"] == 10
    assert st["median_rel"] == pytest.approx(0.45)
    assert st["p90_rel"] == pytest.approx(np.quantile(np.linspace(0.0, 0.9, 10), 0.9))
    assert st["max_rel"] == pytest.approx(0.9)
    assert summarize([]) == {"points": 0, "median_rel": None, "p90_rel": None, "max_rel": None}


def test_decades_merge_short_ones_into_the_next() -> None:
    # 1-9: 3 points; 10-99: 2 (joins 100-999); 100-999: 4; 1000-9999: 1 (last, joins previous)
    sizes = [1, 5, 9, 10, 99, 100, 200, 300, 999, 5000]
    rels = [0.01, 0.02, 0.03, 0.5, 0.5, 0.1, 0.1, 0.1, 0.1, 0.9]
    out = by_decade([err(s, r) for s, r in zip(sizes, rels, strict=True)])
    assert [(d["from_bytes"], d["to_bytes"], d["points"]) for d in out] == [
        (1, 9, 3), (10, 9999, 7)]
    assert out[0]["median_rel"] == pytest.approx(0.02)
    assert out[1]["median_rel"] == pytest.approx(0.1)
    assert sum(d["points"] for d in out) == len(sizes)


def test_decades_skip_empty_ones_and_keep_full_ones() -> None:
    sizes = [2, 3, 4, 1000, 2000, 3000, 10**6, 2 * 10**6, 3 * 10**6]
    groups = decade_groups(sizes)
    assert [(lo, hi, len(i)) for lo, hi, i in groups] == [
        (1, 9, 3), (1000, 9999, 3), (10**6, 10**7 - 1, 3)]


def test_decades_few_points_and_size_zero() -> None:
    assert [(lo, hi, len(i)) for lo, hi, i in decade_groups([0, 7])] == [(0, 9, 2)]
    assert [(lo, hi, len(i)) for lo, hi, i in decade_groups([0, 1, 2, 50])] == [(0, 99, 4)]
    assert decade_groups([]) == []
    # The first short decade joins the next; the group starts at the first one.
    assert [(lo, len(i)) for lo, _, i in decade_groups([5, 50, 60, 70, 80, 90])] == [(1, 6)]


# ---------------------------------------------------------------------------------------
# Cross-validation
# ---------------------------------------------------------------------------------------


def test_cross_validate_exact_loggp_has_zero_held_out_error() -> None:
    meas = exact(TCP, SIZES)
    acc = cross_validate(meas, **CV_FAST_OPTIONS)
    held = acc["held_out"]
    assert held["points"] == 3 * len(SIZES)
    assert held["max_rel"] < 1e-9
    assert acc["k"] == 5
    assert acc["skipped_folds"] == 0
    assert sum(d["points"] for d in acc["by_decade"]) == held["points"]
    assert all(d["median_rel"] < 1e-9 for d in acc["by_decade"])
    assert [d["from_bytes"] for d in acc["by_decade"]] == [1, 10, 100, 1000, 10**4, 10**5, 10**6]
    (rng,) = acc["per_range"]
    assert rng["reliable"] is True
    assert rng["points"] == held["points"]
    json.dumps(acc, allow_nan=False)


def test_cross_validate_folds_are_interleaved_and_span_the_sweep() -> None:
    meas = exact(TCP, SIZES)
    seen: list[list[int]] = []

    def spy(m: Measurements, **kw: Any) -> LoggpFit:
        seen.append(sorted({r.s for r in m.records}))
        return fit_loggp(m, **kw)

    acc = cross_validate(meas, k=6, fit=spy, model=fit_loggp(meas, n_boot=0), n_boot=0)
    assert len(seen) == 6
    for f, train in enumerate(seen):
        held = [s for i, s in enumerate(SIZES) if i % 6 == f]
        assert sorted(set(SIZES) - set(train)) == held
        # Every record of a held-out size is gone, orecv included.
        assert not set(held) & set(train)
    assert [f["sizes"] for f in acc["folds"]] == [len(range(f, len(SIZES), 6)) for f in range(6)]
    worst_folds = {w["fold"] for w in acc["worst"]}
    assert worst_folds <= set(range(6))


def test_cross_validate_two_ranges_misses_only_at_the_change() -> None:
    sizes = sweep_sizes(1 << 20, per_octave=2, refine_at=(12289,))
    acc = cross_validate(exact(OFED, sizes), **CV_FAST_OPTIONS)
    assert acc["held_out"]["median_rel"] < 1e-9
    assert [r["from_bytes"] for r in acc["per_range"]] == [1, 12289]
    # The change's first size stays in every fold and is not judged: held out, it would
    # lie between two measured sizes across the change.
    assert acc["anchored_sizes"] == [12289]
    assert all(w["s"] != 12289 for w in acc["worst"])
    assert acc["held_out"]["points"] == 3 * (len(sizes) - 1)
    # A held-out size next to the protocol change may still fall on the wrong side of it.
    for w in acc["worst"]:
        if w["rel"] > 1e-6:
            assert 12288 - 12288 // 8 <= w["s"] <= 12289 + 12289 // 8, w


def test_cross_validate_detects_a_model_that_does_not_fit() -> None:
    """Data with a smooth bend in G (no protocol change) is not LogGP: the held-out errors
    are far from 0, and per_range says so."""
    meas = synth_prtt(TCP, SIZES, noise=0.0, reps=5, bend=(4096.0, 6.0, 0.7))
    acc = cross_validate(meas, n_boot=0, n_support=0, max_segments=1)
    assert acc["held_out"]["p90_rel"] > 0.05
    (rng,) = acc["per_range"]
    assert rng["reliable"] is False


def test_an_unreliable_range_names_its_worst_held_out_points() -> None:
    """A range that misses its held-out points says where: its accuracy lists the three
    largest errors (pattern, size, measured, predicted) and its warning names them."""
    from railgauge.fit.accuracy import attach_accuracy

    meas = synth_prtt(TCP, SIZES, noise=0.0, reps=5)
    # PRTT(n,0,s) 1.8x at every power of two from 256 B, as over loopback TCP above 64 KiB.
    spiked = {1 << k for k in range(8, 21)}

    def scaled(p: Any) -> Any:
        times = {f.name: getattr(p, f.name) * 1.8 for f in dataclasses.fields(p)
                 if f.name.endswith("_us") and f.name not in ("d_us", "d_actual_us")
                 and isinstance(getattr(p, f.name), float)}
        if p.ci95_median_us is not None:
            times["ci95_median_us"] = tuple(v * 1.8 for v in p.ci95_median_us)
        return dataclasses.replace(p, **times)

    meas = dataclasses.replace(meas, records=[
        scaled(p) if p.type == "prtt" and p.n > 1 and p.d_us == 0 and p.s in spiked else p
        for p in meas.records])
    model = attach_accuracy(fit_loggp(meas, n_boot=0, n_support=0, max_segments=1), meas)
    (rng,) = model.ranges
    assert rng.accuracy is not None and rng.accuracy["reliable"] is False
    top = rng.accuracy["worst"]
    assert len(top) == 3 and {w["s"] for w in top} <= spiked
    assert all(w["pattern"] == "PRTT(n,0,s)" and w["signed_rel"] < -0.3 for w in top)
    warning = next(w for w in rng.warnings if "held-out points" in w)
    assert f"the worst: PRTT(n,0,s) at {top[0]['s']} B" in warning


def _visits(p: Any, spread: float) -> Any:
    """The record with two passes whose interquartile means are spread apart (the slower
    at the record's median): what railgauge-bench writes for a point visited twice."""
    return dataclasses.replace(p, pass_iqm_us=(p.median_us / (1.0 + spread), p.median_us))


def test_visit_spread_counts_the_passes_made_in_the_reference_state() -> None:
    from railgauge.fit.accuracy import visit_spread
    from railgauge.measurements import PrttPoint

    p = PrttPoint(n=1, d_us=0.0, s=8, median_us=10.0, count=100,
                  pass_iqm_us=(10.0, 12.0, 30.0), pass_state_us=(0.03, 0.03, 0.15),
                  pass_state_after_us=(0.03, 0.031, 0.15))
    fast = (0.024, 0.039)
    assert visit_spread(p, fast) == pytest.approx(0.2)        # the slow-state pass aside
    assert visit_spread(p, None) == pytest.approx(2.0)        # no band: every pass
    assert visit_spread(p, (0.12, 0.19)) is None              # one pass in that state
    # A pass that straddled a change of state (its probe after is out) does not count.
    straddled = dataclasses.replace(p, pass_state_after_us=(0.03, 0.15, 0.15))
    assert visit_spread(straddled, fast) is None
    # A pass without probes (0) counts; one pass or none gives nothing.
    assert visit_spread(dataclasses.replace(p, pass_state_us=(0.0, 0.0, 0.15),
                                            pass_state_after_us=None), fast) == \
        pytest.approx(0.2)
    assert visit_spread(dataclasses.replace(p, pass_iqm_us=(10.0,)), None) is None
    assert visit_spread(dataclasses.replace(p, pass_iqm_us=None), None) is None


def test_noise_has_the_spread_from_visit_to_visit() -> None:
    meas = synth_prtt(TCP, SIZES, noise=0.0, reps=5)
    assert noise(meas)["visit_spread_rel"] == {"median": None, "p90": None}  # one pass
    big = {s for s in SIZES if s >= 10**4}
    visited = dataclasses.replace(meas, records=[
        _visits(p, 0.3 if p.s in big else 0.02) if p.type == "prtt" else p
        for p in meas.records])
    nz = noise(visited)
    assert nz["visit_spread_rel"]["median"] == pytest.approx(0.02)
    assert nz["visit_spread_rel"]["p90"] == pytest.approx(0.3)
    by = {d["from_bytes"]: d["visit_spread_rel"] for d in nz["by_decade"]}
    assert by[100] == pytest.approx(0.02) and by[10**5] == pytest.approx(0.3)
    # The headline limit stays max(CI, local scatter).
    assert nz["median_rel"] == noise(meas)["median_rel"]
    assert "visit_spread_rel" in nz["measures"]
    json.dumps(nz, allow_nan=False)


@pytest.mark.parametrize("spread", [0.0, 0.8])
def test_an_unreliable_range_says_when_its_points_do_not_repeat(spread: float) -> None:
    """Where a range's points differ from visit to visit by more than the reliable p90, its
    warning says so (and where: the largest); where they repeat, it does not."""
    from railgauge.fit.accuracy import attach_accuracy
    from railgauge.report.html import accuracy_lines

    meas = synth_prtt(TCP, SIZES, noise=0.0, reps=5)
    spiked = {1 << k for k in range(8, 21)}

    def slower(p: Any) -> Any:
        return dataclasses.replace(p, median_us=1.8 * p.median_us, iqm_us=None,
                                   ci95_median_us=None, min_us=None)

    meas = dataclasses.replace(meas, records=[
        _visits(slower(p), spread) if p.type == "prtt" and p.s in spiked and p.n > 1
        and p.d_us == 0 else _visits(p, 0.01) if p.type == "prtt" else p
        for p in meas.records])
    model = attach_accuracy(fit_loggp(meas, n_boot=0, n_support=0, max_segments=1), meas)
    (rng,) = model.ranges
    assert rng.accuracy is not None and rng.accuracy["reliable"] is False
    vs = rng.accuracy["visit_spread"]
    assert vs["points"] == 3 * len(SIZES)
    warning = next(w for w in rng.warnings if "held-out points" in w)
    if spread > 0.0:
        assert vs["max_rel"] == pytest.approx(spread)
        assert vs["at"]["pattern"] == "PRTT(n,0,s)" and vs["at"]["s"] in spiked
        assert "differ from visit to visit by a p90 of" in warning
        assert "up to 80%, PRTT(n,0,s) at" in warning
    else:
        assert vs["max_rel"] == pytest.approx(0.01)
        assert "visit to visit" not in warning
    assert "visit to visit): median 1.0%" in accuracy_lines(model)[0]


def test_cross_validate_skips_a_failing_fold() -> None:
    meas = exact(TCP, SIZES)
    calls = {"n": 0}

    def flaky(m: Measurements, **kw: Any) -> LoggpFit:
        calls["n"] += 1
        if calls["n"] == 3:
            raise ModelError("fold fit failed")
        return fit_loggp(m, **kw)

    acc = cross_validate(meas, fit=flaky, model=fit_loggp(meas, n_boot=0), n_boot=0)
    assert acc["skipped_folds"] == 1
    assert acc["folds"][2]["skipped"] == "fold fit failed"
    held_in_fold_2 = len(range(2, len(SIZES), 5))
    assert acc["held_out"]["points"] == 3 * (len(SIZES) - held_in_fold_2)


def test_cross_validate_rejects_too_few_folds_or_sizes() -> None:
    meas = exact(TCP, SIZES)
    with pytest.raises(ValueError, match="k >= 5"):
        cross_validate(meas, k=4)
    small = exact(TCP, [1, 2, 4, 8])
    with pytest.raises(ValueError, match="at least 5 sizes"):
        cross_validate(small)


def test_cross_validate_real_measurements() -> None:
    """docs/data/onen-16/prtt-shm.jsonl, a real shm run of this machine (40 sizes)."""
    meas = read_measurements(REAL)
    model = fit_loggp(meas)
    acc = cross_validate(meas, model=model)
    held = acc["held_out"]
    anchored = set(acc["anchored_sizes"])
    assert len(anchored) == len(model.ranges) - 1
    n_judged = sum(r.kind in ("p1", "pn", "pd") and r.s not in anchored for r in meas.records)
    assert held["points"] == n_judged == 120 - 3 * len(anchored)
    assert acc["skipped_folds"] == 0
    assert 0.0 < held["median_rel"] < 0.25
    assert held["median_rel"] <= held["p90_rel"] <= held["max_rel"] < 5.0
    assert sum(d["points"] for d in acc["by_decade"]) == n_judged
    assert all(d["points"] >= 3 for d in acc["by_decade"])
    assert [r["from_bytes"] for r in acc["per_range"]] == [r.from_bytes for r in model.ranges]
    assert sum(r["points"] for r in acc["per_range"]) == n_judged
    for r in acc["per_range"]:
        assert r["reliable"] == (r["median_rel"] <= RELIABLE_MEDIAN_REL
                                 and r["p90_rel"] <= RELIABLE_P90_REL)
    rels = [w["rel"] for w in acc["worst"]]
    assert rels == sorted(rels, reverse=True)
    assert rels[0] == pytest.approx(held["max_rel"])
    json.dumps(acc, allow_nan=False)


# ---------------------------------------------------------------------------------------
# The run's own noise
# ---------------------------------------------------------------------------------------


def test_noise_follows_the_sample_noise() -> None:
    quiet = noise(synth_prtt(TCP, SIZES, noise=0.002, reps=400, seed=1))
    loud = noise(synth_prtt(TCP, SIZES, noise=0.05, reps=400, seed=1))
    assert quiet["points"] == loud["points"] == 3 * len(SIZES)
    # CI half-width of the median ~ 1.96 sqrt(pi/2) noise / sqrt(reps).
    expect = 1.96 * np.sqrt(np.pi / 2) * 0.05 / np.sqrt(400)
    assert 0.5 * expect < loud["ci95_half_rel"]["median"] < 2.0 * expect
    # (the local scatter has a floor of a few 0.1% from the curvature of the PRTT curves
    # between neighbouring sizes in log-log)
    assert loud["median_rel"] > 2 * quiet["median_rel"]
    assert quiet["median_rel"] < 0.005
    assert loud["median_rel"] >= loud["ci95_half_rel"]["median"]
    assert [d["from_bytes"] for d in loud["by_decade"]] == [1, 10, 100, 1000, 10**4, 10**5,
                                                            10**6]
    json.dumps(loud, allow_nan=False)


# ---------------------------------------------------------------------------------------
# railgauge check
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tcp_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    meas = synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=3)
    write_jsonl(meas, folder / "measurements.jsonl")
    (folder / "model-loggp.json").write_text(json.dumps(fit_loggp(meas, n_boot=0).to_json()))
    return folder


def test_check_passes_on_another_run_of_the_same_network(tcp_model: Path,
                                                         tmp_path: Path) -> None:
    other = write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=4),
                        tmp_path / "b.jsonl")
    proc = rg("check", str(tcp_model / "model-loggp.json"), str(other))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pass" in proc.stdout
    # A report folder works for both arguments.
    proc = rg("check", str(tcp_model), str(tcp_model), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["pass"] is True
    assert doc["errors"]["points"] == 3 * len(SIZES)
    assert doc["errors"]["median_rel"] < 0.02


def test_check_prints_the_visit_spread_of_runs_in_passes(tcp_model: Path,
                                                        tmp_path: Path) -> None:
    meas = synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=4)
    visited = dataclasses.replace(meas, records=[
        _visits(p, 0.04) if p.type == "prtt" else p for p in meas.records])
    other = write_jsonl(visited, tmp_path / "b.jsonl")
    proc = rg("check", str(tcp_model / "model-loggp.json"), str(other))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(visit to visit): median 4.0%, p90 4.0%" in proc.stdout
    doc = json.loads(rg("check", str(tcp_model / "model-loggp.json"), str(other),
                        "--json").stdout)
    assert doc["noise"]["visit_spread_rel"]["median"] == pytest.approx(0.04)
    # A run in one pass has no such line.
    plain = write_jsonl(meas, tmp_path / "c.jsonl")
    assert "visit to visit" not in rg("check", str(tcp_model / "model-loggp.json"),
                                      str(plain)).stdout


def test_check_of_other_parameters_exits_3_with_the_worst_points(tcp_model: Path,
                                                                 tmp_path: Path) -> None:
    # The other network: the same small messages, a per-byte gap G three times larger.
    (frm, lat, o, g, big_g) = TCP[0]
    other = write_jsonl(synth_prtt([(frm, lat, o, g, 3.0 * big_g)], SIZES, noise=0.01,
                                   reps=200, seed=5), tmp_path / "other.jsonl")
    proc = rg("check", str(tcp_model / "model-loggp.json"), str(other), "--json")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["pass"] is False
    assert doc["decades_off"] and min(doc["decades_off"]) >= 100
    assert 1 not in doc["decades_off"]
    worst = doc["worst"]
    assert len(worst) >= 5
    assert [w["rel"] for w in worst] == sorted((w["rel"] for w in worst), reverse=True)
    assert worst[0]["s"] >= 100_000
    assert worst[0]["rel"] > 0.5 and worst[0]["signed_rel"] < 0  # predicted too little
    proc = rg("check", str(tcp_model / "model-loggp.json"), str(other))
    assert proc.returncode == 3
    assert "worst points" in proc.stdout
    assert str(worst[0]["s"]) in proc.stdout
    assert "off: median error above 10.0%" in proc.stdout


def _with_probes(path: Path, probe_us: float, probe_n: int | None = None,
                 c2c: bool = False) -> Path:
    """The measurements file with railgauge-bench's probes of the host's state added to
    every point record (two passes, both in one state), by PRTT(probe_n,0,1) where given
    (the header's params.state_probe_n), by the cache line between the ranks with c2c
    (params.state_probe "c2c", state_gap 1.6), else by an older tool's PRTT(1,0,1)."""
    lines = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "header" and probe_n is not None:
            rec.setdefault("params", {})["state_probe_n"] = probe_n
        if rec.get("type") == "header" and c2c:
            rec.setdefault("params", {}).update(state_probe="c2c", state_gap=1.6)
        if rec.get("type") in ("prtt", "orecv"):
            rec["pass_state_us"] = [probe_us, probe_us * 1.02]
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_check_says_when_the_runs_are_in_two_states_of_the_host(tmp_path: Path) -> None:
    meas_a = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=3),
                                      tmp_path / "a.jsonl"), 0.2)
    model = fit_loggp(read_measurements(meas_a), n_boot=0).to_json()
    state = model["source"]["host_state"]
    assert state["probe_us"] == pytest.approx(0.2) and state["in_band"] == state["points"]
    (tmp_path / "model-loggp.json").write_text(json.dumps(model))
    same = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=4),
                                    tmp_path / "b.jsonl"), 0.21)
    doc = json.loads(rg("check", str(tmp_path / "model-loggp.json"), str(same),
                        "--json").stdout)
    assert doc["host_state"]["same"] is True
    assert doc["host_state"]["ratio"] == pytest.approx(1.05)
    other = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=5),
                                     tmp_path / "c.jsonl"), 0.75)
    proc = rg("check", str(tmp_path / "model-loggp.json"), str(other))
    assert proc.returncode == 0, proc.stderr  # the check's verdict is the errors' alone
    assert "another state of the host" in proc.stdout and "3.75x" in proc.stdout
    # Without probes on either side there is nothing to compare.
    plain = write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=6),
                        tmp_path / "d.jsonl")
    doc = json.loads(rg("check", str(tmp_path / "model-loggp.json"), str(plain),
                        "--json").stdout)
    assert doc["host_state"] is None
    # Probes that measured different things (a newer tool's PRTT(16,0,1)) are not compared.
    newer = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=7),
                                     tmp_path / "e.jsonl"), 2.3, probe_n=16)
    doc = json.loads(rg("check", str(tmp_path / "model-loggp.json"), str(newer),
                        "--json").stdout)
    assert doc["host_state"]["same"] is None
    assert doc["host_state"]["measurements_probe"] == "PRTT(16,0,1)"
    proc = rg("check", str(tmp_path / "model-loggp.json"), str(newer))
    assert "not comparable" in proc.stdout and "another state" not in proc.stdout


def test_check_compares_states_probed_by_the_cache_line(tmp_path: Path) -> None:
    """Runs probed by the cache line between their ranks (29-37 ns one way is one placement
    of two vCPUs, about 155 ns another): one state within 1.6x, the values shown in ns;
    against a run probed by PRTT, not comparable."""
    meas_a = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=3),
                                      tmp_path / "a.jsonl"), 0.030, c2c=True)
    model = fit_loggp(read_measurements(meas_a), n_boot=0).to_json()
    state = model["source"]["host_state"]
    assert state["probe"] == "c2c" and state["gap"] == 1.6
    assert state["probe_us"] == pytest.approx(0.030)
    (tmp_path / "model-loggp.json").write_text(json.dumps(model))
    same = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=4),
                                    tmp_path / "b.jsonl"), 0.037, c2c=True)
    doc = json.loads(rg("check", str(tmp_path / "model-loggp.json"), str(same),
                        "--json").stdout)
    assert doc["host_state"]["same"] is True and doc["host_state"]["gap"] == 1.6
    apart = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=5),
                                     tmp_path / "c.jsonl"), 0.155, c2c=True)
    proc = rg("check", str(tmp_path / "model-loggp.json"), str(apart))
    assert "another state of the host (1.6x apart or more)" in proc.stdout
    assert "cache line 30 ns one way" in proc.stdout
    assert "cache line 155 ns one way" in proc.stdout
    other = _with_probes(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=6),
                                     tmp_path / "d.jsonl"), 2.3, probe_n=16)
    doc = json.loads(rg("check", str(tmp_path / "model-loggp.json"), str(other),
                        "--json").stdout)
    assert doc["host_state"]["same"] is None


def _with_c2c(path: Path, before: Any, after: Any) -> Path:
    """The measurements file with the gauge's c2c record appended."""
    with path.open("a") as f:
        f.write(json.dumps({"type": "c2c", "cpus": [0, 1], "before_ns": before,
                            "after_ns": after}) + "\n")
    return path


def test_check_says_when_the_runs_had_the_cpus_placed_apart(tmp_path: Path) -> None:
    """The gauge's c2c records (a cache line's time between the ranks' CPUs): read with the
    measurements, kept in the model's source, and compared by check: one placement, two, or
    not known where a run's CPUs moved during it. Invalid records are left out."""
    meas_a = _with_c2c(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=3),
                                   tmp_path / "a.jsonl"), 31.0, 33.0)
    read = read_measurements(meas_a)
    assert read.c2c == {"before_ns": 31.0, "after_ns": 33.0, "cpus": [0, 1]}
    model = fit_loggp(read, n_boot=0).to_json()
    assert model["source"]["c2c"] == read.c2c
    (tmp_path / "model-loggp.json").write_text(json.dumps(model))

    def check(before: Any, after: Any, seed: int) -> tuple[dict[str, Any], str]:
        meas = _with_c2c(write_jsonl(synth_prtt(TCP, SIZES, noise=0.01, reps=200, seed=seed),
                                     tmp_path / f"m{seed}.jsonl"), before, after)
        args = ("check", str(tmp_path / "model-loggp.json"), str(meas))
        return json.loads(rg(*args, "--json").stdout), rg(*args).stdout

    doc, text = check(30.0, 34.0, 4)
    assert doc["cpu_placement"]["same"] is True and "one placement" in text
    # One placement is up to 1.3x wide (29-37 ns here): the cache line's own band, 1.6x.
    doc, text = check(28.0, 37.0, 9)
    cp = doc["cpu_placement"]
    assert cp["same"] is True and not cp["measurements_moved"] and cp["gap"] == 1.6
    doc, text = check(14.0, 32.0, 10)  # one core's two threads, then two cores: 2.3x
    assert doc["cpu_placement"]["same"] is None and doc["cpu_placement"]["measurements_moved"]
    doc, text = check(155.0, 160.0, 5)
    cp = doc["cpu_placement"]
    assert cp["same"] is False and cp["ratio"] == pytest.approx(157.5 / 32.0)
    assert "two placements of the CPUs" in text
    doc, text = check(31.0, 158.0, 6)
    assert doc["cpu_placement"]["same"] is None and doc["cpu_placement"]["measurements_moved"]
    assert "the CPUs moved during these measurements" in text
    doc, text = check(None, 150.0, 7)  # only one of the two: that one counts
    assert doc["cpu_placement"]["same"] is False
    doc, text = check(-1, "x", 8)  # nothing valid: no record
    assert doc["cpu_placement"] is None and "cache line" not in text


def one_line_error(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0], lines[0]
    assert "Traceback" not in proc.stderr


def test_check_bad_input_exits_2_with_one_line(tcp_model: Path, tmp_path: Path) -> None:
    model = str(tcp_model / "model-loggp.json")
    meas = str(tcp_model / "measurements.jsonl")
    one_line_error(rg("check", str(tmp_path / "nope.json"), meas), "nope.json")
    one_line_error(rg("check", model, str(tmp_path / "nope.jsonl")), "nope.jsonl")
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"type": "header", "transport": "shm"}\nnot json\n')
    one_line_error(rg("check", model, str(garbage)), "garbage.jsonl:2")
    not_model = tmp_path / "m.json"
    not_model.write_text("{not json")
    one_line_error(rg("check", str(not_model), meas), "m.json")
    one_line_error(rg("check", meas, meas), "measurements.jsonl")
    (tmp_path / "empty").mkdir()
    one_line_error(rg("check", model, str(tmp_path / "empty")), "measurements.jsonl")
    one_line_error(rg("check", model), "MEASUREMENTS")
