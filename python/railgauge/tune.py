"""Tuning from the model: which barrier, and which n, for P ranks (issue 7).

Plain functions that never print. `tune_barrier` simulates every algorithm of the barrier
family (linear, binomial, recdbl, dissem, and the n-way dissemination for n = 2 .. 7) on P
ranks with the native simulator (`railgauge-sim barrier`, whose schedules are those the
runtime runs: `native/src/coll/`), under the parameters of a fitted model
(`model-loggp.json` from `railgauge fit`, per protocol range, or `model-lop.json` for LoP),
and ranks them by predicted time. `barrier_curves` gives the predicted time against P for
each candidate, for `plot_barrier_curves`."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from railgauge.sim import SimError, params_from_model, run_sim

#: The n of the n-way dissemination tried by default: 1 is dissem itself; beyond 7 a
#: round's sends outlast any latency the fitted networks have shown.
DEFAULT_NS: tuple[int, ...] = (2, 3, 4, 5, 6, 7)
FIXED_ALGORITHMS: tuple[str, ...] = ("linear", "binomial", "recdbl", "dissem")


class TuneError(Exception):
    """Tuning could not run: bad input (``user`` true) or a failure."""

    def __init__(self, message: str, *, user: bool) -> None:
        super().__init__(message)
        self.user = user


@dataclass(frozen=True)
class Candidate:
    """One barrier: the algorithm's canonical name and n (1 for dissem, 0 where the
    algorithm has none, as `railgauge-bench barrier --json` reports it)."""

    algorithm: str
    n: int

    @property
    def label(self) -> str:
        return f"nway:{self.n}" if self.algorithm == "nway" else self.algorithm


@dataclass
class TuneRow:
    algorithm: str
    n: int
    predicted_us: float | None
    note: str | None = None


@dataclass
class TuneResult:
    """The choice (the fastest candidate) and every candidate's prediction, fastest
    first; candidates the simulator could not run (too large) last, with a note."""

    P: int
    model: str
    algorithm: str
    n: int
    predicted_us: float
    table: list[TuneRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "n": self.n, "predicted_us": self.predicted_us,
                "P": self.P, "model": self.model, "table": [asdict(r) for r in self.table]}


def candidates(ns: tuple[int, ...] = DEFAULT_NS) -> list[Candidate]:
    """The fixed algorithms, then nway with each n of `ns` (n >= 2; n = 1 is dissem)."""
    out = [Candidate(a, 1 if a == "dissem" else 0) for a in FIXED_ALGORITHMS]
    for n in ns:
        if n < 1:
            raise TuneError(f"n = {n}: the n-way dissemination needs n >= 1", user=True)
        if n >= 2:
            out.append(Candidate("nway", n))
    return out


def predict_barrier(tool: str, params: dict[str, Any], cand: Candidate, P: int) -> float:
    """The simulated makespan (us) of one barrier on P ranks. Raises SimError."""
    mode = ["barrier", "--algorithm", cand.label, "-P", str(P)]
    doc = run_sim(tool, mode, params)
    return float(doc["makespan_us"])


def _simulate_all(tool: str, params: dict[str, Any],
                  jobs: list[tuple[Candidate, int]]) -> list[tuple[float | None, str | None]]:
    """Each (candidate, P) simulated, one simulator process per CPU at a time: the
    makespan, or None and the reason where the schedule is too large to simulate."""

    def one(job: tuple[Candidate, int]) -> tuple[float | None, str | None]:
        cand, P = job
        try:
            return predict_barrier(tool, params, cand, P), None
        except SimError as exc:
            if not exc.user or "operations to simulate" not in str(exc):
                raise TuneError(f"simulating {cand.label} on {P} ranks: {exc}",
                                user=exc.user) from None
            return None, str(exc)

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, jobs))


def _model_params(model: Path) -> dict[str, Any]:
    if not Path(model).is_file():
        raise TuneError(f"no such file: {model}", user=True)
    try:
        return params_from_model(Path(model))
    except SimError as exc:
        raise TuneError(str(exc), user=True) from None


def tune_barrier(P: int, model: Path, *, tool: str,
                 ns: tuple[int, ...] = DEFAULT_NS) -> TuneResult:
    """Simulates every candidate on P ranks under `model` and returns them ranked.

    Parameters
    ----------
    P:
        Number of ranks, >= 1.
    model:
        A `model-loggp.json` or `model-lop.json` (`railgauge fit`).
    tool:
        Path of `railgauge-sim`.
    ns:
        The n of the n-way dissemination to try.
    """
    if P < 1:
        raise TuneError(f"-P {P}: the number of ranks must be >= 1", user=True)
    params = _model_params(model)
    cands = candidates(ns)
    results = _simulate_all(tool, params, [(c, P) for c in cands])
    rows = [TuneRow(c.algorithm, c.n, t, note) for c, (t, note) in zip(cands, results,
                                                                       strict=True)]
    done = [r for r in rows if r.predicted_us is not None]
    if not done:
        raise TuneError(f"no barrier could be simulated on {P} ranks: {rows[0].note}",
                        user=True)
    # Ties (P = 1, or equal schedules) keep the simpler algorithm: the list's order.
    order = {id(r): i for i, r in enumerate(rows)}
    done.sort(key=lambda r: (r.predicted_us, order[id(r)]))
    best = done[0]
    assert best.predicted_us is not None
    return TuneResult(P=P, model=str(model), algorithm=best.algorithm, n=best.n,
                      predicted_us=best.predicted_us,
                      table=done + [r for r in rows if r.predicted_us is None])


def barrier_curves(Ps: list[int], model: Path, *, tool: str,
                   ns: tuple[int, ...] = DEFAULT_NS) -> dict[str, list[tuple[int, float]]]:
    """Predicted time against P for each candidate (label -> [(P, us), ...]); points the
    simulator refuses (too large) are left out."""
    params = _model_params(model)
    jobs = [(c, P) for c in candidates(ns) for P in Ps]
    curves: dict[str, list[tuple[int, float]]] = {c.label: [] for c in candidates(ns)}
    for (cand, P), (t, _) in zip(jobs, _simulate_all(tool, params, jobs), strict=True):
        if t is not None:
            curves[cand.label].append((P, t))
    return curves


def plot_points(P: int) -> list[int]:
    """Powers of two from 2 up to P, and P itself."""
    pts = []
    p = 2
    while p < P:
        pts.append(p)
        p *= 2
    pts.append(max(P, 2))
    return pts


def plot_barrier_curves(curves: dict[str, list[tuple[int, float]]], out: Path, *,
                        title: str, choice: str | None = None) -> None:
    """Draws the curves (log-log) into `out` (PNG, or any format matplotlib knows by the
    suffix)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for label, pts in curves.items():
        if not pts:
            continue
        xs, ys = zip(*pts, strict=True)
        style = "--" if label.startswith("nway") else "-"
        width = 2.5 if label == choice else 1.2
        ax.plot(xs, ys, style, marker="o", markersize=3, linewidth=width,
                label=label + (" (choice)" if label == choice else ""))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("P (ranks)")
    ax.set_ylabel("predicted barrier time (us)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    try:
        fig.savefig(str(out))
    except (OSError, ValueError) as exc:
        raise TuneError(f"--plot {out}: {exc}", user=True) from None
