"""The shared receive window (issue 9): run a workload over the messaging runtime.

``eval_rxwin()`` starts ``railgauge-bench rxwin`` as N local ranks with the window
settings in the ranks' environment (``RG_PROTO_RXWIN``, ``RG_PROTO_RNR``,
``RG_PROTO_RNR_TIMER_MS``; docs/rxwin.md) and returns rank 0's JSON: run time,
communication memory (min, mean, max over the ranks' high-water marks), limit
events, receiver-not-ready replies, retries, messages, whether every payload
passed its check, and each rank's figures.
"""

from __future__ import annotations

import json
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
