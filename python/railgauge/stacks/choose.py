"""The stack's barrier for each communicator size, chosen by simulating the stack's own
algorithms on the measured model (`railgauge tune barrier --emit STACK`).

Plain functions that never print. ``parse_ranks`` reads ``-P`` (one value, a list
``2,4,8`` or a range ``2..4096``: the powers of two between and both ends);
``choose_barrier`` simulates, per P, every algorithm of the stack release that railgauge
has a schedule for (``StackAlgorithm.schedule``) on the model with the native simulator
and keeps the fastest, the stack's default winning ties (no change without a predicted
gain); ``model_warnings`` says where the model was measured over another transport or
MPI library than the stack's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railgauge.stacks import BarrierChoice, StackAlgorithm
from railgauge.tune import TuneError, resolve_model, simulate_specs

#: The largest communicator size -P takes (railgauge's plans stop at 2^26).
P_MAX = 1 << 26
#: The flavour a gauge over MPI records for each stack's library.
STACK_FLAVOUR = {"openmpi": "openmpi", "mpich": "mpich"}


def parse_ranks(text: str) -> list[int]:
    """``-P``: ``64`` -> [64]; ``2,4,8`` -> [2, 4, 8]; ``2..4096`` -> the powers of two
    strictly between the ends, and the ends. Sorted, without repeats. TuneError (user) for
    an empty list, a bad number or a value out of 1..2^26."""
    text = text.strip()
    if not text:
        raise TuneError("-P: empty (give 64, 2,4,8 or 2..4096)", user=True)
    m = re.fullmatch(r"(\d+)\s*\.\.\s*(\d+)", text)
    values: list[int]
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > hi:
            raise TuneError(f"-P {text}: the range's start is above its end", user=True)
        values = [lo, hi]
        p = 1
        while p < hi:
            if p > lo:
                values.append(p)
            p *= 2
    else:
        parts = [t.strip() for t in text.split(",")]
        if any(not re.fullmatch(r"\d+", t) for t in parts):
            raise TuneError(f"-P {text}: not a number, a comma-separated list or a range "
                            "A..B of numbers of ranks", user=True)
        values = [int(t) for t in parts]
    bad = [v for v in values if not 1 <= v <= P_MAX]
    if bad:
        raise TuneError(f"-P {text}: {bad[0]} is out of range 1..{P_MAX}", user=True)
    return sorted(set(values))


@dataclass
class StackBarrierRow:
    """One algorithm at one P: its simulated time, or why there is none."""

    algorithm: StackAlgorithm
    predicted_us: float | None
    note: str | None = None


@dataclass
class StackBarrierTune:
    """Per P, the choice, the stack's default and every algorithm's row."""

    stack: str
    version: str
    model: str
    choices: list[BarrierChoice] = field(default_factory=list)
    defaults: dict[int, StackAlgorithm] = field(default_factory=dict)
    tables: dict[int, list[StackBarrierRow]] = field(default_factory=dict)

    def choices_json(self) -> list[dict[str, Any]]:
        """The contract's ``choices``: one object per communicator size written."""
        return [{"P": c.P, "algorithm": c.algorithm.name, "id": c.algorithm.id,
                 "predicted_us": c.predicted_us, "schedule": c.algorithm.schedule,
                 "default": self.defaults[c.P].name,
                 "default_predicted_us": self._predicted(c.P, self.defaults[c.P])}
                for c in self.choices]

    def _predicted(self, P: int, alg: StackAlgorithm) -> float | None:
        for row in self.tables.get(P, []):
            if row.algorithm == alg:
                return row.predicted_us
        return None

    def table_json(self) -> dict[str, list[dict[str, Any]]]:
        return {str(P): [{"algorithm": r.algorithm.name, "id": r.algorithm.id,
                          "schedule": r.algorithm.schedule, "predicted_us": r.predicted_us,
                          "note": r.note} for r in rows]
                for P, rows in self.tables.items()}


def choose_barrier(Ps: Sequence[int], model: Path, *, tool: str, stack: str, version: str,
                   algorithms: Sequence[StackAlgorithm],
                   default: Callable[[int], StackAlgorithm]) -> StackBarrierTune:
    """Simulates, for every P, each algorithm the stack accepts at P and railgauge has a
    schedule for, on the model's messages; the fastest is the choice (the stack's default
    on a tie, then the stack's own order). TuneError where nothing can be simulated."""
    from railgauge.fit.flags import model_engine
    from railgauge.tune import model_params

    if Path(model).is_file() and model_engine(Path(model)) == "flags":
        raise TuneError(f"{model} is a flag model (railgauge's shared-memory barrier); the "
                        f"{stack} barriers run on messages: give the model-loggp.json of a "
                        f"gauge over {stack} (--transport mpi)", user=True)
    model, _, _ = resolve_model(model, "messages")
    params = model_params(model)
    res = StackBarrierTune(stack=stack, version=version, model=str(model))
    jobs: list[tuple[str, int]] = []
    for P in Ps:
        res.defaults[P] = default(P)
        for alg in algorithms:
            if alg.accepts(P) and alg.schedule is not None:
                jobs.append((alg.schedule, P))
    times = dict(zip(jobs, simulate_specs(tool, params, jobs), strict=True))
    for P in Ps:
        rows: list[StackBarrierRow] = []
        for alg in algorithms:
            if not alg.accepts(P):
                continue
            if alg.schedule is None:
                rows.append(StackBarrierRow(alg, None, alg.note or "no railgauge schedule: "
                                            "written and measured, never chosen"))
                continue
            t, why = times[(alg.schedule, P)]
            rows.append(StackBarrierRow(alg, t, why))
        res.tables[P] = rows
        done = [r for r in rows if r.predicted_us is not None]
        if not done:
            raise TuneError(f"{stack} {version}: no barrier algorithm could be simulated on "
                            f"{P} ranks", user=True)
        order = {id(r): i for i, r in enumerate(rows)}
        best = min(done, key=lambda r: (r.predicted_us, r.algorithm != res.defaults[P],
                                        order[id(r)]))
        assert best.predicted_us is not None
        res.choices.append(BarrierChoice(P=P, algorithm=best.algorithm,
                                         predicted_us=best.predicted_us))
    return res


def model_warnings(model: Path, stack: str) -> list[str]:
    """Where the model was not measured over the stack itself (a gauge with
    ``--transport mpi`` under this stack's mpirun): one line saying which."""
    try:
        doc = json.loads(Path(model).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict):
        return []
    if not doc.get("transport"):
        return [f"{model} does not say which transport it was measured over: the choice "
                f"holds where {stack}'s messages cost what the model says"]
    transport = str(doc["transport"])
    source = doc.get("source")
    info = source.get("transport_info") if isinstance(source, dict) else None
    if not isinstance(info, dict):
        info = {}
    flavour = str(info.get("flavour") or "")
    want = STACK_FLAVOUR.get(stack, stack)
    if transport != "mpi":
        return [f"{model} was measured over {transport}, not over {stack}: the choice is "
                f"what {stack} would gain if its messages cost what {transport}'s do (gauge "
                f"with --transport mpi under {stack}'s mpirun for its own model)"]
    if flavour and flavour != want:
        return [f"{model} was measured over MPI with {info.get('library') or flavour}, not "
                f"{stack}: the choice assumes {stack}'s messages cost the same"]
    return []
