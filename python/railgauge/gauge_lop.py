"""The LoP part of ``railgauge gauge``: the onen data, the LoP fit where the data allow it,
the LogP prediction beside the measured RTT(P)/P, and the model comparison.

Plain functions: :func:`analyse_lop` takes what the gauge measured (the PRTT measurements
and their LogGP fit, an onen file or the reason there is none) and returns a
:class:`LopPart`; it writes ``model-lop.json`` (as ``railgauge fit --model lop`` writes it)
where the LoP curve was fitted and ``compare-models.json`` (as ``railgauge
compare-models``). :mod:`railgauge.report.lop` draws and tabulates the part for the
report, :meth:`LopPart.summary` is what ``gauge --json`` adds.

The LoP curve RTT(p) has six lambdas (five free parameters): it is fitted only where the
primary series (1:n, the first posting mode present) has RTT(p) at :data:`MIN_P` or more
distinct p, i.e. with ``-n`` of at least ``MIN_P + 1`` ranks. With fewer (two ranks give
p = 1 only) nothing is fitted; the measured points, the quantities derived from them
pointwise (L(p), t_1:n where the send overheads were measured) and the LogP prediction of
the gauge's own LogGP fit are still shown, and the comparison still ranks the models that
predict the measured points.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from railgauge.compare import MIN_TRAIN_P, build_dataset, compare_models
from railgauge.fit.lop import LopInputError, fit_lop, logp_prediction
from railgauge.measurements import Measurements
from railgauge.onen import DIRECTIONS, OnenData, OnenError, OnenPoint, SeriesKey, read_onen
from railgauge.parts import MIN_P, STATUSES, LopPart

__all__ = [
    "MIN_P",
    "STATUSES",
    "LopPart",
    "analyse_lop",
    "derived_table",
    "primary_series",
]

def primary_series(data: OnenData, stat: str = "min") -> tuple[SeriesKey, str]:
    """The series the gauge shows (as :func:`railgauge.fit.lop.fit_lop` chooses its
    primary: 1:n, the first posting mode present, the smallest s) and the statistic
    (``stat`` where every point has it, else the other)."""
    keys = data.series_keys()
    first = [k for k in keys if k[0] == DIRECTIONS[0]]
    key = (first or keys)[0]
    have = data.stats(key)
    if stat in have or not have:
        return key, stat
    return key, have[0]


def derived_table(points: list[OnenPoint], stat: str) -> dict[str, Any]:
    """The LoP quantities computed pointwise from the measured values of one series (no
    fit): per p, RTT(p)/p, the round, o_s(p), o_r(p) and, where o_s(p) and o_s(1) were
    measured, L(p) = RTT(p)/2 - (o_s(p) + o_s(1)) and t_1:n = o_s(n) + n L(n) (list-mode
    series: L_list(p) = RTT(p)/2 - (p o_s(p) + o_s(1)), t_1:n^list = n o_s(n) + n L_list(n)).
    Lists aligned with ``p``; None where a value is missing."""
    pts = sorted((pt for pt in points if pt.rtt(stat) is not None), key=lambda q: q.p)
    is_list = bool(pts) and pts[0].mode == "list"
    os1 = next((pt.overhead("send", stat) for pt in pts if pt.p == 1), None)
    out: dict[str, Any] = {"stat": stat, "list": is_list, "p": [], "rtt_us": [],
                           "rtt_total_us": [], "o_s_us": [], "o_r_us": [], "L_us": [],
                           "t_1n_us": []}
    for pt in pts:
        per = pt.per_peer(stat)
        assert per is not None
        os_p = pt.overhead("send", stat)
        L: float | None = None
        t: float | None = None
        if os_p is not None and os1 is not None:
            if is_list:
                L = per / 2.0 - (pt.p * os_p + os1)
                t = pt.p * os_p + pt.p * L
            else:
                L = per / 2.0 - (os_p + os1)
                t = os_p + pt.p * L
        out["p"].append(pt.p)
        out["rtt_us"].append(per)
        out["rtt_total_us"].append(pt.rtt(stat))
        out["o_s_us"].append(os_p)
        out["o_r_us"].append(pt.overhead("recv", stat))
        out["L_us"].append(L)
        out["t_1n_us"].append(t)
    return out


def _usable_loggp(loggp: Any) -> Any:
    """The LogGP fit where it can predict (it has ranges), else None."""
    if loggp is None:
        return None
    return loggp if getattr(loggp, "ranges", None) else None


def analyse_lop(
    meas: Measurements | None,
    loggp: Any,
    out_dir: str | Path,
    *,
    onen_path: str | Path | None = None,
    not_measured: str | None = None,
    skipped: bool = False,
    ranks: int | None = None,
    stat: str = "min",
    compare_stat: str = "median",
    folds: int = 5,
    wall_s: float | None = None,
) -> LopPart:
    """The LoP part of a gauge run (see the module docstring).

    Parameters
    ----------
    meas, loggp
        The PRTT measurements and their LogGP fit (its LogP prediction is shown beside the
        measured RTT(P)/P); either may be None.
    out_dir
        Where ``model-lop.json`` and ``compare-models.json`` are written.
    onen_path
        The onen file; None: not measured, ``not_measured`` says why (or ``skipped``).
    ranks
        The ranks the onen run used (default: its header's).
    stat
        The statistic of the LoP fit (``min``, as the paper); ``compare_stat`` that of the
        comparison's onen points.

    Never raises for bad or missing data: every problem is a ``reason`` or a warning.
    """
    out = Path(out_dir)
    part = LopPart(status="skipped" if skipped else "not measured", ranks=ranks, stat=stat,
                   wall_s=wall_s)
    if not skipped and onen_path is None:
        part.reason = not_measured or "no onen measurement"
    data: OnenData | None = None
    if onen_path is not None:
        try:
            data = read_onen(onen_path)
        except OnenError as exc:
            part.status, part.reason = "not measured", f"the onen file is unusable: {exc}"
        else:
            part.onen, part.onen_path = data, Path(onen_path)
            part.warnings.extend(data.warnings)
            if part.ranks is None and isinstance(data.header.get("ranks"), int):
                part.ranks = int(data.header["ranks"])
    lg = _usable_loggp(loggp)
    if data is not None:
        _fit_part(part, data, lg, out, stat)
    _compare_part(part, meas, data, out, compare_stat, folds)
    return part


def _fit_part(part: LopPart, data: OnenData, loggp: Any, out: Path, stat: str) -> None:
    key, pstat = primary_series(data, stat)
    part.primary, part.stat = key, pstat
    if pstat != stat:
        part.notes.append(f"the onen data have no {stat} round times; the {pstat} values "
                          "are used")
    pts = data.series(key)
    ps = part.p_values()
    part.derived = derived_table(pts, pstat)
    if len(ps) < MIN_P:
        have = f"p = {ps[0]}" if len(ps) == 1 else f"p = {ps[0]}..{ps[-1]} ({len(ps)} values)"
        ranks = f" with {part.ranks} ranks" if part.ranks is not None else ""
        part.status = "too few p"
        part.reason = (f"the LoP curve RTT(p) needs more ranks: its six lambdas need RTT(p) "
                       f"at {MIN_P} or more distinct p (gauge -n {MIN_P + 1} or more); this "
                       f"run measured {have}{ranks}, so no LoP curve is fitted")
    else:
        try:
            fit = fit_lop(data, stat=pstat, loggp=loggp)
        except (LopInputError, ValueError) as exc:
            part.status, part.reason = "fit failed", str(exc)
        else:
            part.fit = fit
            part.status = "fitted"
            part.logp = fit.logp
            part.notes.extend(fit.notes)
            part.model_path = out / "model-lop.json"
            part.model_path.write_text(json.dumps(fit.to_json(), indent=2) + "\n")
            if len(ps) <= MIN_TRAIN_P:
                part.notes.append(
                    f"with {len(ps)} distinct p, the model comparison cannot hold out a p and "
                    f"still fit LoP's six lambdas to the rest: LoP's RTT(p)/p is "
                    f"cross-validated from gauge -n {MIN_TRAIN_P + 2} on")
    if part.logp is None:
        try:
            part.logp = logp_prediction(pts, pstat, loggp=loggp)
        except (LopInputError, ValueError) as exc:
            part.notes.append(f"no LogP prediction beside the measured RTT(P)/P: {exc}")


def _compare_part(part: LopPart, meas: Measurements | None, data: OnenData | None, out: Path,
                  stat: str, folds: int) -> None:

    try:
        dataset, notes = build_dataset(meas, data, stat=stat)
        comp = compare_models(dataset, folds=folds)
    except ValueError as exc:
        part.compare_error = str(exc)
        return
    comp.notes.extend(notes)
    part.comparison = comp
    part.compare_plot = out / "compare-models.png"
    part.compare_path = out / "compare-models.json"
    doc = comp.to_json(plot=str(part.compare_plot))
    part.compare_path.write_text(json.dumps(doc, indent=2) + "\n")
