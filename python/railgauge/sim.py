"""The simulator, from Python: runs the native `railgauge-sim` and reads its JSON.

Plain functions that never print: `params_from_model` maps a `model-loggp.json`
(written by `railgauge fit`) onto the simulator's LogGOPS parameters (piecewise by message
size: one set per protocol range), or a `model-lop.json` onto LoP's lambdas, and
`run_sim` runs one simulation and returns the tool's JSON object
(``makespan_us``, ``finish_us`` up to 4096 ranks or with ``per_rank``,
``events``, ``wall_s``, ``read_s``, ``stats`` and with ``finish_us`` the per-rank ``overhead_us``,
``wait_us``, ``calc_us``; with rails a ``rails`` object of per-rail bytes and busy times),
optionally writing a Chrome trace (``trace``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

#: The simulator's parameters: L, o, g in microseconds, G and O in microseconds
#: per byte, S in bytes (rendezvous above S; inf: never).
PARAMS = ("L", "o", "g", "G", "O", "S", "duplex")


#: The rails options of `run_sim` and the tool's flags for them.
RAILS_FLAGS = {"policy": "--policy", "stripe_min": "--stripe-min", "weights": "--weights",
               "adapt_alpha": "--adapt-alpha", "adapt_floor": "--adapt-floor"}


class SimError(Exception):
    """The simulation could not run: bad input (``user`` true) or a failure."""

    def __init__(self, message: str, *, user: bool) -> None:
        super().__init__(message)
        self.user = user


def pairwise_alltoall_goal(ranks: int, size: int) -> str:
    """The pairwise-exchange alltoall (SMPI's and MPICH's ``pair``) as GOAL: step i
    (1 .. P-1) exchanges size bytes with rank XOR i, a send and a receive that start when
    both of step i-1 are done (MPI_Sendrecv); step 0, the copy to itself, has no message.
    No indentation: LogGOPSim's txt2bin refuses a line that starts with a blank."""
    out = [f"num_ranks {ranks}"]
    for r in range(ranks):
        out.append(f"rank {r} {{")
        for i in range(1, ranks):
            out.append(f"s{i}: send {size}b to {r ^ i} tag {i}")
            out.append(f"r{i}: recv {size}b from {r ^ i} tag {i}")
            if i > 1:
                out += [f"{a}{i} requires {b}{i - 1}" for a in "sr" for b in "sr"]
        out.append("}")
    return "\n".join(out) + "\n"


def _nonneg(value: Any) -> bool:
    """A finite number >= 0 (not a bool): what every LogGOPS parameter of a model must be."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and \
        math.isfinite(value) and value >= 0


def _lambdas(path: Path, fit: Any, what: str, n: int) -> list[float]:
    lam = fit.get("lambda") if isinstance(fit, dict) else None
    if not isinstance(lam, list) or len(lam) != n or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in lam):
        raise SimError(f"{path}: {what}.lambda is not a list of {n} finite numbers", user=True)
    return [float(v) for v in lam]


def lop_params_from_model(path: Path, doc: dict[str, Any], *,
                          list_mode: bool = False) -> dict[str, Any]:
    """LoP parameters from a parsed `model-lop.json` (`railgauge fit --model lop`):
    ``{"lop_rtt": [l1..l6], "lop_os": [a1, a2, a3], "lop_list": bool}`` from the primary
    series' RTT and o_s fits, or with ``list_mode`` from the list-mode fits (``list``); a
    model whose primary series is list-mode is list-mode either way."""
    raw = doc.get("primary")
    primary: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if list_mode and primary.get("mode") != "list":
        lst = doc.get("list")
        if not isinstance(lst, dict):
            raise SimError(f"{path}: --lop-list: the model has no list-mode fits", user=True)
        return {"lop_rtt": _lambdas(path, lst.get("rtt"), "list.rtt", 6),
                "lop_os": _lambdas(path, lst.get("overhead_send"), "list.overhead_send", 3),
                "lop_list": True}
    if doc.get("overhead_send") is None:
        raise SimError(f"{path}: the model has no send overhead fit (overhead_send is null): "
                       "LoP needs o_s(p)", user=True)
    return {"lop_rtt": _lambdas(path, doc.get("rtt"), "rtt", 6),
            "lop_os": _lambdas(path, doc.get("overhead_send"), "overhead_send", 3),
            "lop_list": primary.get("mode") == "list"}


def params_from_model(path: Path, *, piecewise: bool = True,
                      lop_list: bool = False) -> dict[str, Any]:
    """The simulator's parameters from a `model-loggp.json` or `model-lop.json`
    (`railgauge fit`); a LoP model gives `lop_params_from_model` (``lop_list``).

    piecewise: one parameter set per protocol range, ``{"ranges": [(to_bytes, L, o, g, G,
    O), ...]}``: a message of s bytes takes the first range with s <= to_bytes (the last
    range beyond its end, and sizes between two ranges the upper one). Otherwise L, o, g, G,
    O of the first range (the one of small, eager messages). The fit reports one L and o per
    network, repeated in each range, and g, G, O per range. A model with pieces (the
    current fit's, docs/fit.md section 4) gives one set per piece instead, chosen so that
    the simulator's one-way time and gap are the model's predictions
    (:func:`railgauge.fit.simview.sim_sets`; sizes between two pieces the lower one, as
    the model predicts them). S is not a fitted quantity and is left to the caller."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise SimError(f"{path}: cannot read the model: {exc}", user=True) from None
    if isinstance(doc, dict) and doc.get("model") == "lop":
        return lop_params_from_model(path, doc, list_mode=lop_list)
    if lop_list:
        raise SimError(f"{path}: --lop-list needs a LoP model (model-lop.json)", user=True)
    if not isinstance(doc, dict) or doc.get("model") != "loggp":
        raise SimError(f"{path}: not a LogGP or LoP model (\"model\": \"loggp\" or \"lop\" "
                       "expected)", user=True)
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
            if not _nonneg(value):
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
    if all(isinstance(r.get("pieces"), list) and r["pieces"] for r in ranges):
        # The model predicts from its pieces: one parameter set a piece, chosen so that
        # the simulator's one-way time and gap are the model's (railgauge.fit.simview).
        from railgauge.fit.model import ModelError, loggp_from_json
        from railgauge.fit.simview import sim_sets

        try:
            fit = loggp_from_json(doc, str(path))
        except ModelError as exc:
            raise SimError(f"{path}: {exc}", user=True) from None
        sets = [{**ss.as_dict(), "to_bytes": ss.to_bytes} for ss in sim_sets(fit)]
        if not piecewise:
            sets = sets[:1]
    # The flag model's duplex term (docs/sim.md "Duplex"), in its first range.
    duplex = ranges[0].get("duplex_us", 0.0)
    if not _nonneg(duplex):
        raise SimError(f"{path}: ranges[0].duplex_us = {duplex!r} is not a number >= 0",
                       user=True)
    extra = {"duplex": float(duplex)} if duplex > 0 else {}
    if not piecewise:
        return {**{k: sets[0][k] for k in keys}, **extra}
    return {"ranges": [tuple(r[k] for k in ("to_bytes", *keys)) for r in sets], **extra}


#: The tool's progress updates: a carriage return, the text, erase to the end of the line.
_PROGRESS_END = b"\x1b[K"


def _pump(src: IO[bytes], keep: list[bytes], echo: IO[str] | None) -> None:
    """Reads the tool's stderr: its progress updates (``\\r`` text ``ESC [K``) go on to
    ``echo`` (dropped where it is None), everything else into ``keep``."""
    buf = b""
    while True:
        chunk = src.read(4096) if not hasattr(src, "read1") else src.read1(4096)  # type: ignore[attr-defined]
        buf += chunk
        while True:
            cr = buf.find(b"\r")
            if cr < 0:
                keep.append(buf)
                buf = b""
                break
            keep.append(buf[:cr])
            buf = buf[cr:]
            stop = buf.find(_PROGRESS_END)
            if stop < 0:
                break
            if echo is not None:
                echo.write(buf[:stop + len(_PROGRESS_END)].decode(errors="replace"))
                echo.flush()
            buf = buf[stop + len(_PROGRESS_END):]
        if not chunk:
            keep.append(buf)
            return


def run_sim(tool: str, mode_args: list[str], params: dict[str, Any], *,
            calc_unit: str | None = None, per_rank: bool = False,
            trace: Path | None = None, trace_max_ranks: int | None = None,
            timeout: float | None = None, progress: bool = False,
            rails: dict[str, Any] | None = None) -> dict[str, Any]:
    """Runs `tool` (the path of railgauge-sim) with `mode_args` (``["goal",
    FILE]`` or ``["barrier", "--algorithm", A, "-P", P]``) and returns its JSON.
    progress: the tool's progress display goes on to this process's stderr.
    rails: multirail striping (docs/sim.md "Rails"), ``{"rails": FILE or "G0,G1,..."}``
    with optional ``policy``, ``stripe_min``, ``weights`` (a list or "W0,W1,..."),
    ``adapt_alpha``, ``adapt_floor``.
    Raises SimError with the tool's message where it fails."""
    cmd = [tool, *mode_args]
    for name in PARAMS:
        if name in params and params[name] is not None:
            cmd += [f"--{name}", repr(float(params[name]))]
    for rng in params.get("ranges", ()):
        cmd += ["--range", ",".join(repr(float(v)) for v in rng)]
    if "lop_rtt" in params:
        cmd += ["--lop-rtt", ",".join(repr(float(v)) for v in params["lop_rtt"]),
                "--lop-os", ",".join(repr(float(v)) for v in params["lop_os"])]
        if params.get("lop_list"):
            cmd.append("--lop-list")
    if rails:
        cmd += ["--rails", str(rails["rails"])]
        for key, flag in RAILS_FLAGS.items():
            value = rails.get(key)
            if value is None:
                continue
            if isinstance(value, (list, tuple)):
                value = ",".join(repr(float(v)) for v in value)
            cmd += [flag, str(value)]
    cmd.append("--progress" if progress else "--no-progress")
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
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise SimError(f"cannot run {tool}: {exc}", user=False) from None
    keep: list[bytes] = []
    assert proc.stderr is not None and proc.stdout is not None
    pump = threading.Thread(target=_pump, args=(proc.stderr, keep,
                                                sys.stderr if progress else None), daemon=True)
    pump.start()
    timed_out = threading.Event()

    def _kill() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(timeout, _kill) if timeout is not None else None
    if timer is not None:
        timer.start()
    out = proc.stdout.read()
    proc.wait()
    if timer is not None:
        timer.cancel()
    pump.join()
    if timed_out.is_set():
        raise SimError(f"the simulation ran longer than {timeout} s", user=False)
    stdout = out.decode(errors="replace")
    stderr = b"".join(keep).decode(errors="replace")
    if proc.returncode != 0:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        msg = next((ln for ln in reversed(lines) if "error:" in ln), lines[-1] if lines else "")
        msg = msg.split("error: ", 1)[-1] if "error: " in msg else msg
        raise SimError(msg or f"{tool} exited {proc.returncode}",
                       user=proc.returncode == 2)
    try:
        doc = json.loads(stdout)
    except ValueError:
        raise SimError(f"{tool} printed no JSON: {stdout[:200]!r}", user=False) from None
    if not isinstance(doc, dict):
        raise SimError(f"{tool} printed {type(doc).__name__}, not an object", user=False)
    return doc
