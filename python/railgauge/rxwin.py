"""The shared receive window (issue 9): run a workload over the messaging runtime.

``eval_rxwin()`` starts ``railgauge-bench rxwin`` as N local ranks with the window
settings in the ranks' environment (``RG_PROTO_RXWIN``, ``RG_PROTO_RNR``,
``RG_PROTO_RNR_TIMER_MS``; docs/rxwin.md) and returns rank 0's JSON: run time,
communication memory (min, mean, max over the ranks' high-water marks), limit
events, receiver-not-ready replies, retries, messages, whether every payload
passed its check, and each rank's figures. ``sim_rxwin()`` runs the same workload in
the simulator (``railgauge-sim rxwin``: the window, its limit events and RNR with the
retry timer modelled under LogGOPS; docs/sim.md) and returns the same keys.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PATTERNS = ("alltoall", "halo2d", "halo3d", "incast", "mix")
TRANSPORTS = ("shm", "tcp", "ofi:tcp", "ofi:shm", "ofi:udp")

#: InfiniBand's RNR NAK timer range, in milliseconds.
RNR_TIMER_MIN_MS = 0.01
RNR_TIMER_MAX_MS = 655.36
WINDOW_MAX = 65536

#: The keys of `railgauge rxwin eval --json`, in order (the issue's contract).
CONTRACT_KEYS = ("time_s", "mem_bytes", "limit_events", "rnr", "retries", "messages",
                 "verified")

_WINDOW_RE = re.compile(r"^(?:fixed:(\d+)|adaptive:(\d+):(\d+)(:reclaim)?)$")


class RxwinError(ValueError):
    """A bad setting (``user`` True) or a failed run (``user`` False)."""

    def __init__(self, message: str, user: bool = True) -> None:
        super().__init__(message)
        self.user = user


@dataclass(frozen=True)
class Window:
    """A window setting: ``fixed:N`` or ``adaptive:W_init:W_max[:reclaim]``."""

    w_init: int
    w_max: int
    adaptive: bool
    reclaim: bool = False

    def __str__(self) -> str:
        if not self.adaptive:
            return f"fixed:{self.w_init}"
        return f"adaptive:{self.w_init}:{self.w_max}" + (":reclaim" if self.reclaim else "")


def parse_window(text: str) -> Window:
    """Parses a window setting, with the runtime's rules (1 <= W_init <= W_max <= 65536).

    >>> parse_window("adaptive:8:4096")
    Window(w_init=8, w_max=4096, adaptive=True, reclaim=False)
    """
    m = _WINDOW_RE.match(text.strip())
    if m is None:
        raise RxwinError(f"--window {text!r}: must be fixed:N or "
                         "adaptive:W_init:W_max[:reclaim]")
    if m.group(1) is not None:
        n = int(m.group(1))
        w = Window(n, n, adaptive=False)
    else:
        w = Window(int(m.group(2)), int(m.group(3)), adaptive=True,
                   reclaim=m.group(4) is not None)
    if not 1 <= w.w_init <= WINDOW_MAX or not 1 <= w.w_max <= WINDOW_MAX:
        raise RxwinError(f"--window {text!r}: window sizes must be 1 to {WINDOW_MAX} buffers")
    if w.w_init > w.w_max:
        raise RxwinError(f"--window {text!r}: W_init {w.w_init} is above W_max {w.w_max}")
    return w


def window_env(window: Window, rnr_timer_ms: float | None, *, rnr: bool = True,
               limit: int | None = None, rnr_retry: int | None = None) -> dict[str, str]:
    """The runtime's settings for a window: RNR on with the timer (1 ms unless given)
    or off (back-pressure in the transport)."""
    env = {"RG_PROTO_RXWIN": str(window), "RG_PROTO_RNR": "1" if rnr else "0"}
    if rnr_timer_ms is not None:
        if not rnr:
            raise RxwinError("--rnr-timer-ms needs RNR (drop --no-rnr)")
        if not RNR_TIMER_MIN_MS <= rnr_timer_ms <= RNR_TIMER_MAX_MS:
            raise RxwinError(f"--rnr-timer-ms {rnr_timer_ms:g}: must be {RNR_TIMER_MIN_MS} to "
                             f"{RNR_TIMER_MAX_MS} ms (InfiniBand's RNR NAK timer range)")
        env["RG_PROTO_RNR_TIMER_MS"] = repr(float(rnr_timer_ms))
    if limit is not None:
        if not 1 <= limit <= window.w_init:
            raise RxwinError(f"--limit {limit}: must be 1 to W_init ({window.w_init})")
        env["RG_PROTO_RXWIN_LIMIT"] = str(limit)
    if rnr_retry is not None:
        env["RG_PROTO_RNR_RETRY"] = str(rnr_retry)
    return env


def eval_rxwin(pattern: str, nranks: int, window: str | Window, *, transport: str = "shm",
               rnr_timer_ms: float | None = None, rnr: bool = True, iters: int = 50,
               size: int = 512, burst: int = 32, compute_us: float | None = None,
               limit: int | None = None, timeout_s: float = 600.0,
               tool: str | None = None) -> dict[str, Any]:
    """Runs ``pattern`` on ``nranks`` local ranks with the window and returns rank 0's
    JSON object (the contract keys first, then the run's details).

    Raises RxwinError: ``user`` for bad arguments, else for a failed run (a rank's
    error, with its message on the ranks' stderr)."""
    from railgauge.launcher import LaunchError, launch
    from railgauge.native import NativeToolError, find_tool

    if pattern not in PATTERNS:
        raise RxwinError(f"--pattern {pattern!r}: unknown (known: {', '.join(PATTERNS)})")
    if nranks < 2:
        raise RxwinError(f"-n {nranks}: the workloads need at least 2 ranks")
    if transport not in TRANSPORTS:
        raise RxwinError(f"--transport {transport!r}: unknown (known: {', '.join(TRANSPORTS)})")
    win = parse_window(window) if isinstance(window, str) else window
    env = window_env(win, rnr_timer_ms, rnr=rnr, limit=limit)
    try:
        bench = tool or find_tool("railgauge-bench")
    except NativeToolError as exc:
        raise RxwinError(str(exc), user=False) from None
    with tempfile.TemporaryDirectory(prefix="railgauge-rxwin-") as tmp:
        out = Path(tmp) / "rxwin.json"
        argv = [bench, "rxwin", "--pattern", pattern, "--transport", transport,
                "--iters", str(iters), "--size", str(size), "--burst", str(burst),
                "--out", str(out)]
        if compute_us is not None:
            argv += ["--compute-us", repr(float(compute_us))]
        try:
            res = launch(argv, nranks, transport=transport, env=env, timeout_s=timeout_s)
        except LaunchError as exc:
            raise RxwinError(str(exc), user=False) from None
        if not res.ok:
            raise RxwinError(f"the {pattern} workload failed: {res.failure}",
                             user=res.returncode == 2)
        try:
            doc = json.loads(out.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise RxwinError(f"rank 0 wrote no result: {exc}", user=False) from None
    result: dict[str, Any] = {k: doc[k] for k in CONTRACT_KEYS}
    result.update({"pattern": pattern, "ranks": nranks, "transport": transport,
                   "window": str(win), "rnr_timer_ms": env.get("RG_PROTO_RNR_TIMER_MS"),
                   "per_rank": doc["per_rank"], "runtime": doc.get("runtime", {})})
    if result["rnr_timer_ms"] is not None:
        result["rnr_timer_ms"] = float(result["rnr_timer_ms"])
    elif rnr:
        result["rnr_timer_ms"] = float(result["runtime"].get("rnr_timer_ms", 1.0))
    return result


# ---- the simulator (railgauge-sim rxwin) ------------------------------------------------

#: The runtime's eager limit per transport (RG_PROTO_EAGER_*): messages up to it use the
#: window; the simulator counts each window buffer as header + this, as the runtime does.
EAGER_LIMIT = {"shm": 16384, "tcp": 32768, "ofi:tcp": 16384, "ofi:shm": 16384,
               "ofi:udp": 16384}
SIM_MAX_RANKS = 4096
LOGGOPS = ("L", "o", "g", "G", "O")


def sim_params(model: Path | None = None, **flags: float | None) -> dict[str, Any]:
    """The simulator's LogGOPS parameters: from a fitted `model-loggp.json` (piecewise by
    message size), or from the flags ``L``, ``o``, ``g``, ``G``, ``O`` (us; us per byte),
    the ones not given 0. One or the other; neither is an error (RxwinError, user)."""
    from railgauge.sim import SimError, params_from_model

    given = {k: v for k, v in flags.items() if v is not None}
    unknown = set(given) - set(LOGGOPS)
    if unknown:
        raise RxwinError(f"unknown simulator parameter(s): {', '.join(sorted(unknown))}")
    if model is not None:
        if given:
            raise RxwinError(f"--model replaces {', '.join('--' + k for k in given)}: give "
                             "one or the other")
        if not Path(model).is_file():
            raise RxwinError(f"--model {model}: no such file")
        try:
            params = params_from_model(Path(model))
        except SimError as exc:
            raise RxwinError(f"--model {model}: {exc}") from None
        if "ranges" not in params or "duplex" in params:
            raise RxwinError(f"--model {model}: the receive-window simulation needs a LogGP "
                             "model of messages (model-loggp.json), not LoP or flags")
        return params
    if not given:
        raise RxwinError("--sim needs a model (--model model-loggp.json from `railgauge fit`) "
                         "or LogGOPS parameters (--L, --o, --g, --G, --O)")
    for k, v in given.items():
        if not math.isfinite(v) or v < 0:
            raise RxwinError(f"--{k} {v:g}: must be a number >= 0")
    return {k: float(given.get(k, 0.0)) for k in LOGGOPS}


def sim_rxwin(pattern: str, nranks: int, window: str | Window, *, params: dict[str, Any],
              rnr_timer_ms: float | None = None, iters: int = 50, size: int = 512,
              burst: int = 32, compute_us: float | None = None, limit: int | None = None,
              eager_limit: int = EAGER_LIMIT["shm"], quiet_us: float | None = None,
              per_rank: bool = False, tool: str | None = None,
              timeout_s: float | None = None) -> dict[str, Any]:
    """Simulates ``pattern`` on ``nranks`` ranks under the window (`railgauge-sim rxwin`,
    docs/sim.md) and returns the same contract keys as ``eval_rxwin`` first (time_s is the
    simulated makespan), then the run's details (``simulated``: True, ``makespan_us``,
    ``events``, ``wall_s``, with ``per_rank`` each rank's figures).

    Raises RxwinError: ``user`` for bad arguments, else for a failed simulation."""
    from railgauge.native import NativeToolError, find_tool
    from railgauge.sim import SimError, run_sim

    if pattern not in PATTERNS:
        raise RxwinError(f"--pattern {pattern!r}: unknown (known: {', '.join(PATTERNS)})")
    if not 2 <= nranks <= SIM_MAX_RANKS:
        raise RxwinError(f"-n {nranks}: the simulated workloads need 2 to {SIM_MAX_RANKS} "
                         "ranks")
    win = parse_window(window) if isinstance(window, str) else window
    timer = 1.0 if rnr_timer_ms is None else float(rnr_timer_ms)
    if not RNR_TIMER_MIN_MS <= timer <= RNR_TIMER_MAX_MS:
        raise RxwinError(f"--rnr-timer-ms {timer:g}: must be {RNR_TIMER_MIN_MS} to "
                         f"{RNR_TIMER_MAX_MS} ms (InfiniBand's RNR NAK timer range)")
    if limit is not None and not 1 <= limit <= win.w_init:
        raise RxwinError(f"--limit {limit}: must be 1 to W_init ({win.w_init}): a limit event "
                         "fires when fewer buffers than the limit are posted")
    if iters < 1 or burst < 1 or size < 24 or eager_limit < 0:
        raise RxwinError("--iters and --burst must be >= 1, --size >= 24 bytes, "
                         "--eager-limit >= 0")
    try:
        sim = tool or find_tool("railgauge-sim")
    except NativeToolError as exc:
        raise RxwinError(str(exc), user=False) from None
    args = ["rxwin", "--pattern", pattern, "-n", str(nranks), "--window", str(win),
            "--rnr-timer-ms", repr(timer), "--iters", str(iters), "--size", str(size),
            "--burst", str(burst), "--eager-limit", str(eager_limit)]
    if compute_us is not None:
        args += ["--compute-us", repr(float(compute_us))]
    if limit is not None:
        args += ["--limit", str(limit)]
    if quiet_us is not None:
        args += ["--quiet-us", repr(float(quiet_us))]
    try:
        doc = run_sim(sim, args, params, per_rank=per_rank, timeout=timeout_s)
    except SimError as exc:
        raise RxwinError(str(exc), user=exc.user) from None
    result: dict[str, Any] = {k: doc[k] for k in CONTRACT_KEYS}
    result.update({"pattern": pattern, "ranks": nranks, "simulated": True,
                   "window": str(win), "rnr_timer_ms": timer})
    result.update({k: v for k, v in doc.items() if k not in result})
    return result
