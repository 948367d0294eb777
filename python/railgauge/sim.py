"""The simulator, from Python: runs the native `railgauge-sim` and reads its JSON.

Plain functions that never print: `params_from_model` maps a `model-loggp.json`
(written by `railgauge fit`) onto the simulator's LogGOPS parameters (piecewise by message
size: one set per protocol range), and
`run_sim` runs one simulation and returns the tool's JSON object
(``makespan_us``, ``finish_us`` up to 4096 ranks or with ``per_rank``,
``events``, ``wall_s``), optionally writing a Chrome trace (``trace``)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

#: The simulator's parameters: L, o, g in microseconds, G and O in microseconds
#: per byte, S in bytes (rendezvous above S; inf: never).
PARAMS = ("L", "o", "g", "G", "O", "S")


class SimError(Exception):
    """The simulation could not run: bad input (``user`` true) or a failure."""

    def __init__(self, message: str, *, user: bool) -> None:
        super().__init__(message)
        self.user = user


def params_from_model(path: Path, *, piecewise: bool = True) -> dict[str, Any]:
    """The simulator's parameters from a `model-loggp.json` (`railgauge fit`).

    piecewise: one parameter set per protocol range, ``{"ranges": [(to_bytes, L, o, g, G,
    O), ...]}``: a message of s bytes takes the first range with s <= to_bytes (the last
    range beyond its end, and sizes between two ranges the upper one). Otherwise L, o, g, G,
    O of the first range (the one of small, eager messages). The fit reports one L and o per
    network, repeated in each range, and g, G, O per range. S is not a fitted quantity and
    is left to the caller."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SimError(f"{path}: cannot read the model: {exc}", user=True) from None
    if not isinstance(doc, dict) or doc.get("model") != "loggp":
        raise SimError(f"{path}: not a LogGP model (\"model\": \"loggp\" expected)", user=True)
    ranges = doc.get("ranges")
    if not isinstance(ranges, list) or not ranges or \
            not all(isinstance(r, dict) for r in ranges):
        raise SimError(f"{path}: the model has no protocol ranges", user=True)
    keys = {"L": "L_us", "o": "o_us", "g": "g_us", "G": "G_us_per_byte",
            "O": "O_us_per_byte"}
    sets = []
    prev_to = -1.0
    for i, rng in enumerate(ranges if piecewise else ranges[:1]):
        one: dict[str, float] = {}
        for name, key in keys.items():
            value = rng.get(key, 0.0 if name == "O" else None)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or value < 0:
                raise SimError(f"{path}: ranges[{i}].{key} = {value!r} is not a number >= 0",
                               user=True)
            one[name] = float(value)
        to = rng.get("to_bytes")
        if to is None and i == len(ranges) - 1:
            to = math.inf  # the last range is open-ended
        if isinstance(to, bool) or not isinstance(to, (int, float)) or not to > prev_to:
            raise SimError(f"{path}: ranges[{i}].to_bytes = {to!r} does not increase",
                           user=True)
        prev_to = float(to)
        one["to_bytes"] = prev_to
        sets.append(one)
    if not piecewise:
        return {k: sets[0][k] for k in keys}
    return {"ranges": [tuple(r[k] for k in ("to_bytes", *keys)) for r in sets]}


def run_sim(tool: str, mode_args: list[str], params: dict[str, Any], *,
            calc_unit: str | None = None, per_rank: bool = False,
            trace: Path | None = None, trace_max_ranks: int | None = None,
            timeout: float | None = None) -> dict[str, Any]:
    """Runs `tool` (the path of railgauge-sim) with `mode_args` (``["goal",
    FILE]`` or ``["barrier", "--algorithm", A, "-P", P]``) and returns its JSON.
    Raises SimError with the tool's message where it fails."""
    cmd = [tool, *mode_args]
    for name in PARAMS:
        if name in params and params[name] is not None:
            cmd += [f"--{name}", repr(float(params[name]))]
    for rng in params.get("ranges", ()):
        cmd += ["--range", ",".join(repr(float(v)) for v in rng)]
    if calc_unit is not None:
        cmd += ["--calc-unit", calc_unit]
    if per_rank:
        cmd.append("--per-rank")
    if trace is not None:
        cmd += ["--trace", str(trace)]
    if trace_max_ranks is not None:
        cmd += ["--trace-max-ranks", str(trace_max_ranks)]
    cmd.append("--json")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SimError(f"the simulation ran longer than {timeout} s", user=False) from None
    except OSError as exc:
        raise SimError(f"cannot run {tool}: {exc}", user=False) from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        msg = next((ln for ln in reversed(lines) if "error:" in ln), lines[-1] if lines else "")
        msg = msg.split("error: ", 1)[-1] if "error: " in msg else msg
        raise SimError(msg or f"{tool} exited {proc.returncode}",
                       user=proc.returncode == 2)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        raise SimError(f"{tool} printed no JSON: {proc.stdout[:200]!r}", user=False) from None
    if not isinstance(doc, dict):
        raise SimError(f"{tool} printed {type(doc).__name__}, not an object", user=False)
    return doc
