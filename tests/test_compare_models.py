"""compare-models: every model fitted to the same points, judged on points it did not see.

Synthetic data with a known generator: PRTT points from the paper's LogGP parameters
(railgauge.synth) and onen points from the LoP paper's RDMA-write function. The model that
generated a kind of data must rank first on it; the cross-validation must never show a
model a point it is asked to predict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from railgauge.compare import _folds, build_dataset, compare_models, read_inputs
from railgauge.fit.lop import overhead_function, rtt_function
from railgauge.models import MODELS, Dataset, Point
from railgauge.models.base import FloatArray
from railgauge.onen import OnenData, synth_onen, write_onen_jsonl
from railgauge.synth import PAPER_TABLE, sweep_sizes, synth_prtt, write_jsonl

RDMA_MIN = (16.7937, 0.0058, 4.4642, 4.4751, -0.0642, 12.9209)
RDMA_OS = (0.5557, 0.2103, -0.7728)


def onen(p_max: int = 24, seed: int = 0) -> OnenData:
    return synth_onen(lambda p: rtt_function(RDMA_MIN, p), range(1, p_max + 1),
                      overhead_send=lambda p: overhead_function(RDMA_OS, p), seed=seed)


def prtt(seed: int = 0) -> Any:
    return synth_prtt(PAPER_TABLE["OFED"], sweep_sizes(1 << 18, per_octave=2,
                                                       refine_at=(12289,)), seed=seed)


@pytest.fixture(scope="module")
def both() -> Any:
    data, _ = build_dataset(prtt(), onen())
    return compare_models(data)


def test_generators_rank_first_on_their_own_data(both: Any) -> None:
    assert both.ranking("prtt")[0] == "loggp"
    assert both.ranking("onen")[0] == "lop"
    by = {r.name: r for r in both.results}
    assert all(r.status == "ok" for r in both.results)
    # LoP does not describe PRTT trains: partial coverage, ranked after full coverage.
    assert by["lop"].summary["coverage"] < 1.0
    assert both.ranking()[-1] == "lop"
    assert by["lop"].summary["by_kind"]["onen"]["coverage"] == 1.0
    assert by["lop"].summary["by_kind"]["onen"]["mdare"] < 0.01
    assert by["loggp"].summary["by_kind"]["prtt"]["mdare"] < 0.03
    # Models without a size parameter say so.
    assert any("no size parameter" in n for n in by["logp"].notes)
    assert any("trains" in n for n in by["lop"].notes)


def test_every_point_predicted_once_by_full_coverage_models(both: Any) -> None:
    for r in both.results:
        if r.name != "lop":
            assert np.all(np.isfinite(r.predicted)), r.name
            assert r.summary["coverage"] == 1.0


def test_json_is_strict_and_complete(both: Any, tmp_path: Path) -> None:
    from railgauge.report.compare import plot_comparison

    png = tmp_path / "c.png"
    plot_comparison(both, png)
    assert png.stat().st_size > 10_000
    doc = both.to_json(plot=str(png))
    text = json.dumps(doc, allow_nan=False)
    assert json.loads(text)["ranking"] == both.ranking()
    assert [m["rank"] for m in doc["models"]] == [1, 2, 3, 4, 5]
    assert {m["name"] for m in doc["models"]} == set(MODELS)
    assert len(doc["predictions"]) == len(both.dataset.points)
    assert doc["points"] == {"prtt": sum(pt.kind == "prtt" for pt in both.dataset.points),
                             "onen": 24}


def test_models_without_their_data_say_so() -> None:
    only_prtt = compare_models(build_dataset(prtt(), None)[0])
    lop = next(r for r in only_prtt.results if r.name == "lop")
    assert lop.status == "not fitted" and "onen" in lop.reason and lop.rank is None
    only_onen = compare_models(build_dataset(None, onen())[0])
    loggp = next(r for r in only_onen.results if r.name == "loggp")
    assert loggp.status == "not fitted" and "PRTT" in loggp.reason
    assert only_onen.ranking()[0] == "lop"


def test_too_few_peers_for_lop() -> None:
    comp = compare_models(build_dataset(None, onen(p_max=5))[0])
    lop = next(r for r in comp.results if r.name == "lop")
    assert lop.status == "not fitted" and "6 parameters" in lop.reason


def test_folds_interleave_and_fall_back_to_leave_one_out() -> None:
    data, _ = build_dataset(prtt(), onen(p_max=7))
    fold, ks, kp = _folds(data.points, 5)
    sizes = sorted({pt.s for pt in data.points if pt.kind == "prtt"})
    s_fold = {pt.s: f for pt, f in zip(data.points, fold, strict=True) if pt.kind == "prtt"}
    assert ks == 5 and [s_fold[s] for s in sizes[:6]] == [0, 1, 2, 3, 4, 0]
    # 7 p in 5 folds would leave 5 training p, fewer than LoP's 6: leave-one-out.
    assert kp == 7
    p_folds = {pt.p: f for pt, f in zip(data.points, fold, strict=True) if pt.kind == "onen"}
    assert len(set(p_folds.values())) == 7


@dataclass
class _SpyFit:
    seen: set[int]
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def predict(self, points: Sequence[Point]) -> FloatArray:
        for pt in points:
            assert id(pt) not in self.seen, "a held-out point was in the training set"
        return np.ones(len(points))

    def scope(self, point: Point) -> str | None:
        return None


class _Spy:
    name = "spy"
    title = "Spy"
    params: tuple[str, ...] = ("x",)
    uses: tuple[str, ...] = ("prtt", "onen")
    description = "remembers its training points"

    def __init__(self) -> None:
        self.fits = 0

    def fit(self, train: Sequence[Point], data: Dataset) -> _SpyFit:
        self.fits += 1
        return _SpyFit({id(pt) for pt in train})


def test_held_out_points_are_never_trained_on() -> None:
    data, _ = build_dataset(prtt(), onen())
    spy = _Spy()
    comp = compare_models(data, models=[spy], folds=4)
    # 4 folds over s, 4 over p (24 p keep >= 6 training p), and the fit on everything.
    assert spy.fits == 4 + 4 + 1
    assert comp.results[0].summary["coverage"] == 1.0


def test_read_inputs_tells_the_files_apart(tmp_path: Path) -> None:
    a = write_jsonl(prtt(), tmp_path / "m.jsonl")
    b = write_onen_jsonl(onen(), tmp_path / "o.jsonl")
    c = tmp_path / "o.csv"
    c.write_text("p,rtt_us\n" + "".join(f"{p},{p * 2.0 + 10.0}\n" for p in range(1, 9)))
    meas, on = read_inputs([a, b, c])
    assert meas is not None and on is not None
    assert len(on.series_keys()) == 2  # s = 8 from the JSON Lines, s unknown from the CSV
    data, notes = build_dataset(meas, on, stat="min")
    assert any("s = 1 B assumed" in n for n in notes)
    assert any("no min round time" in n for n in notes)
    assert not math.isnan(sum(pt.y_us for pt in data.points))
