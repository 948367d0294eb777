"""Tuning from the model: which barrier, and which n, for P ranks (issue 7).

Plain functions that never print. `tune_barrier` simulates every algorithm of the barrier
family (linear, binomial, recdbl, dissem, and the n-way dissemination for n = 2 .. 7) on P
ranks with the native simulator (`railgauge-sim barrier`, whose schedules are those the
runtime runs: `native/src/coll/`), under the parameters of a fitted model
(`model-loggp.json` from `railgauge fit`, per protocol range, or `model-lop.json` for LoP,
or the flag model `model-flags.json` of the shared-memory barrier that `railgauge gauge`
writes over shm; `resolve_model` says which engine a file describes), and ranks them by
predicted time. `barrier_curves` gives the predicted time against P for
each candidate, for `plot_barrier_curves`. `tune_rxwin` suggests the receive window's W_init,
W_max and RNR timer for a workload from the simulator (`railgauge-sim rxwin`, issue 9)."""

from __future__ import annotations

import math
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
    #: "messages" (a LogGP/LoP fit of the runtime's messages) or "flags" (the flag model of
    #: the shared-memory barrier: predictions include its per-barrier call_us).
    engine: str = "messages"
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "n": self.n, "predicted_us": self.predicted_us,
                "P": self.P, "model": self.model, "engine": self.engine, "note": self.note,
                "table": [asdict(r) for r in self.table]}


def candidates(ns: tuple[int, ...] = DEFAULT_NS) -> list[Candidate]:
    """The fixed algorithms, then nway with each n of `ns` (n >= 2; n = 1 is dissem)."""
    out = [Candidate(a, 1 if a == "dissem" else 0) for a in FIXED_ALGORITHMS]
    for n in ns:
        if n < 1:
            raise TuneError(f"n = {n}: the n-way dissemination needs n >= 1", user=True)
        if n >= 2:
            out.append(Candidate("nway", n))
    return out


def predict_barrier(tool: str, params: dict[str, Any], spec: str, P: int) -> float:
    """The simulated makespan (us) of one barrier (a schedule spec: "dissem", "nway:3",
    "ring", ...) on P ranks. Raises SimError."""
    doc = run_sim(tool, ["barrier", "--algorithm", spec, "-P", str(P)], params)
    return float(doc["makespan_us"])


def simulate_specs(tool: str, params: dict[str, Any],
                   jobs: list[tuple[str, int]]) -> list[tuple[float | None, str | None]]:
    """Each (schedule spec, P) simulated, one simulator process per CPU at a time: the
    makespan, or None and the reason where the schedule is too large to simulate."""

    def one(job: tuple[str, int]) -> tuple[float | None, str | None]:
        spec, P = job
        try:
            return predict_barrier(tool, params, spec, P), None
        except SimError as exc:
            if not exc.user or "operations to simulate" not in str(exc):
                raise TuneError(f"simulating {spec} on {P} ranks: {exc}",
                                user=exc.user) from None
            return None, str(exc)

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, jobs))


def model_params(model: Path) -> dict[str, Any]:
    if not Path(model).is_file():
        raise TuneError(f"no such file: {model}", user=True)
    try:
        return params_from_model(Path(model))
    except SimError as exc:
        raise TuneError(str(exc), user=True) from None


#: The engines of the runtime's barrier a model can describe (``--engine``).
ENGINES = ("auto", "flags", "messages")
FLAG_MODEL_NAME = "model-flags.json"


def resolve_model(model: Path, engine: str = "auto") -> tuple[Path, str, str | None]:
    """The model file to simulate, its engine and a note, by the rule of docs/coll.md:
    ``auto`` takes the engine of the file given (a ``model-flags.json``: flags; any other
    model: messages), and where a messaging model has a ``model-flags.json`` beside it (a
    gauge report folder) the note says that the barrier over shm runs on flags and that
    ``--engine flags`` uses it; ``flags`` takes the file given if it is a flag model, else
    the ``model-flags.json`` beside it (an error where there is none); ``messages`` refuses
    a flag model. Raises TuneError (user)."""
    from railgauge.fit.flags import FlagFitError, load_flag_model, model_engine

    if engine not in ENGINES:
        raise TuneError(f"--engine {engine!r}: one of {', '.join(ENGINES)}", user=True)
    model = Path(model)
    if not model.is_file():
        raise TuneError(f"no such file: {model}", user=True)
    given = model_engine(model)
    beside = model.parent / FLAG_MODEL_NAME
    note = None
    if engine == "messages" and given == "flags":
        raise TuneError(f"{model} is a flag model; --engine messages needs a model of the "
                        "runtime's messages (model-loggp.json or model-lop.json)", user=True)
    if engine == "flags" and given != "flags":
        if not beside.is_file():
            raise TuneError(f"--engine flags: {model} is a model of messages and there is no "
                            f"{FLAG_MODEL_NAME} beside it (railgauge gauge over shm writes "
                            "one)", user=True)
        note = f"engine flags: {beside} (beside {model.name})"
        model, given = beside, "flags"
    elif engine == "auto" and given == "messages" and beside.is_file():
        note = (f"engine messages: {model.name} (the runtime's messages); the barrier over shm "
                f"runs on flags, whose model {FLAG_MODEL_NAME} lies beside it: --engine flags "
                "uses it")
    if given == "flags":
        try:
            load_flag_model(model)
        except FlagFitError as exc:
            raise TuneError(str(exc), user=True) from None
    return model, given, note


def _call_us(model: Path, engine: str) -> float:
    """The per-barrier constant of a flag model (0 for messages)."""
    if engine != "flags":
        return 0.0
    from railgauge.fit.flags import load_flag_model

    return float(load_flag_model(model).get("call_us") or 0.0)


def tune_barrier(P: int, model: Path, *, tool: str,
                 ns: tuple[int, ...] = DEFAULT_NS, engine: str = "auto") -> TuneResult:
    """Simulates every candidate on P ranks under `model` and returns them ranked.

    Parameters
    ----------
    P:
        Number of ranks, >= 1.
    model:
        A `model-loggp.json` or `model-lop.json` (`railgauge fit`), or a `model-flags.json`
        (`railgauge gauge` over shm: the flag model).
    tool:
        Path of `railgauge-sim`.
    ns:
        The n of the n-way dissemination to try.
    engine:
        ``auto``, ``flags`` or ``messages``: which model of the barrier (`resolve_model`).
        With flags every prediction is the makespan plus the model's ``call_us``.
    """
    if P < 1:
        raise TuneError(f"-P {P}: the number of ranks must be >= 1", user=True)
    model, eng, note = resolve_model(model, engine)
    params = model_params(model)
    extra = _call_us(model, eng)
    cands = candidates(ns)
    results = simulate_specs(tool, params, [(c.label, P) for c in cands])
    rows = [TuneRow(c.algorithm, c.n, None if t is None else t + extra, note_)
            for c, (t, note_) in zip(cands, results, strict=True)]
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
                      table=done + [r for r in rows if r.predicted_us is None],
                      engine=eng, note=note)


def barrier_curves(Ps: list[int], model: Path, *, tool: str,
                   ns: tuple[int, ...] = DEFAULT_NS,
                   engine: str = "auto") -> dict[str, list[tuple[int, float]]]:
    """Predicted time against P for each candidate (label -> [(P, us), ...]); points the
    simulator refuses (too large) are left out."""
    model, eng, _ = resolve_model(model, engine)
    params = model_params(model)
    extra = _call_us(model, eng)
    jobs = [(c.label, P) for c in candidates(ns) for P in Ps]
    curves: dict[str, list[tuple[int, float]]] = {c.label: [] for c in candidates(ns)}
    for (label, P), (t, _) in zip(jobs, simulate_specs(tool, params, jobs), strict=True):
        if t is not None:
            curves[label].append((P, t + extra))
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


# ---- the receive window (issue 9) ---------------------------------------------------------

#: The sweep of `tune rxwin`: the paper's W_init = 8 and two others, W_max from 16 to 4096
#: (its figure 2), and RNR timers across InfiniBand's range (its figure 3).
RXWIN_W_INITS: tuple[int, ...] = (1, 8, 32)
RXWIN_W_MAXES: tuple[int, ...] = (16, 64, 256, 1024, 4096)
RXWIN_TIMERS_MS: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)


@dataclass
class RxwinRow:
    """One setting of the sweep and what the simulator predicts for it."""

    w_init: int
    w_max: int
    rnr_timer_ms: float
    time_s: float
    mem_mean: float
    mem_max: int
    limit_events: int
    rnr: int

    @property
    def window(self) -> str:
        return f"adaptive:{self.w_init}:{self.w_max}"


@dataclass
class RxwinTuneResult:
    """The suggestion: the least memory (mean over ranks of each rank's high-water mark)
    among the settings whose time is within ``tolerance`` of the best; and every setting,
    by memory."""

    pattern: str
    nranks: int
    iters: int
    model: str
    tolerance: float
    best_time_s: float
    choice: RxwinRow
    table: list[RxwinRow] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        c = self.choice
        return {"w_init": c.w_init, "w_max": c.w_max, "rnr_timer_ms": c.rnr_timer_ms,
                "window": c.window, "time_s": c.time_s, "mem_bytes_mean": c.mem_mean,
                "best_time_s": self.best_time_s, "tolerance": self.tolerance,
                "pattern": self.pattern, "ranks": self.nranks, "iters": self.iters,
                "model": self.model,
                "table": [dict(asdict(r), window=r.window) for r in self.table]}


def tune_rxwin(pattern: str, model: Path, *, tool: str, nranks: int = 64, iters: int = 10,
               w_inits: tuple[int, ...] = RXWIN_W_INITS,
               w_maxes: tuple[int, ...] = RXWIN_W_MAXES,
               timers_ms: tuple[float, ...] = RXWIN_TIMERS_MS, tolerance: float = 0.02,
               eager_limit: int = 16384) -> RxwinTuneResult:
    """Simulates ``pattern`` on ``nranks`` ranks for every adaptive window
    ``adaptive:W_init:W_max`` (W_init <= W_max) and RNR timer of the sweep under ``model``
    (a `model-loggp.json`) and suggests W_init, W_max and the timer: the least memory
    whose simulated time is within ``tolerance`` (a fraction) of the best time.

    Raises TuneError (``user`` for bad input)."""
    from railgauge.rxwin import (
        PATTERNS,
        RNR_TIMER_MAX_MS,
        RNR_TIMER_MIN_MS,
        WINDOW_MAX,
        RxwinError,
        sim_params,
        sim_rxwin,
    )

    if pattern not in PATTERNS:
        raise TuneError(f"--pattern {pattern!r}: unknown (known: {', '.join(PATTERNS)})",
                        user=True)
    if not 2 <= nranks <= 4096:
        raise TuneError(f"-n {nranks}: the simulated workloads need 2 to 4096 ranks",
                        user=True)
    if not 0 <= tolerance <= 10:
        raise TuneError(f"--tolerance {tolerance:g}: must be 0 to 10 (a fraction of the best "
                        "time)", user=True)
    for w in (*w_inits, *w_maxes):
        if not 1 <= w <= WINDOW_MAX:
            raise TuneError(f"window size {w}: must be 1 to {WINDOW_MAX} buffers", user=True)
    for tm in timers_ms:
        if not RNR_TIMER_MIN_MS <= tm <= RNR_TIMER_MAX_MS:
            raise TuneError(f"RNR timer {tm:g} ms: must be {RNR_TIMER_MIN_MS} to "
                            f"{RNR_TIMER_MAX_MS} ms", user=True)
    pairs = [(wi, wm) for wi in sorted(set(w_inits)) for wm in sorted(set(w_maxes))
             if wi <= wm]
    if not pairs:
        raise TuneError(f"W_init {min(w_inits)} is above every W_max (largest "
                        f"{max(w_maxes)}): no window to try", user=True)
    if not timers_ms:
        raise TuneError("no RNR timer to try", user=True)
    try:
        params = sim_params(model)
    except RxwinError as exc:
        raise TuneError(str(exc), user=True) from None
    jobs = [(wi, wm, tm) for wi, wm in pairs for tm in sorted(set(timers_ms))]

    def one(job: tuple[int, int, float]) -> RxwinRow:
        wi, wm, tm = job
        try:
            doc = sim_rxwin(pattern, nranks, f"adaptive:{wi}:{wm}", params=params,
                            rnr_timer_ms=tm, iters=iters, eager_limit=eager_limit, tool=tool)
        except RxwinError as exc:
            raise TuneError(f"simulating adaptive:{wi}:{wm} with a {tm:g} ms timer: {exc}",
                            user=exc.user) from None
        if doc["verified"] is not True:
            raise TuneError(f"adaptive:{wi}:{wm}, timer {tm:g} ms: the simulator did not "
                            "verify the messages", user=False)
        return RxwinRow(wi, wm, tm, float(doc["time_s"]), float(doc["mem_bytes"]["mean"]),
                        int(doc["mem_bytes"]["max"]), int(doc["limit_events"]),
                        int(doc["rnr"]))

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        rows = list(pool.map(one, jobs))
    best = min(r.time_s for r in rows)
    ok = [r for r in rows if r.time_s <= best * (1 + tolerance)]
    # Least memory; ties: the smaller W_max, then fewer refusals, then the timer nearest
    # the runtime's default of 1 ms (where no message was refused the timer made no
    # difference here, and the default is the safe guess for the run).
    choice = min(ok, key=lambda r: (r.mem_mean, r.w_max, r.rnr,
                                    abs(math.log10(r.rnr_timer_ms)), r.w_init))
    rows.sort(key=lambda r: (r.mem_mean, r.time_s, r.w_max, -r.rnr_timer_ms, r.w_init))
    return RxwinTuneResult(pattern=pattern, nranks=nranks, iters=iters, model=str(model),
                           tolerance=tolerance, best_time_s=best, choice=choice, table=rows)
