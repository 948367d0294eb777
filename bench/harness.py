#!/usr/bin/env python3
"""The harness every benchmark script of bench/ shares: child processes that never outlive
the script (run_proc, its own session and process group killed on every exit path), the
tools it finds (railgauge, railgauge-bench, MPI launchers), the machine's facts, Markdown
helpers, and the writing of a section of docs/BENCHMARKS.md between its
``<!-- bench:NAME:begin -->`` and ``<!-- bench:NAME:end -->`` markers. The benchmark
sections themselves live in their scripts (run_bench.py: foundation, ofi-tcp, mpi)."""

import contextlib
import datetime as dt
import json
import math
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent


BUILD = REPO / "build" / "bench"


CFLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-std=c11"]


class UsageError(Exception):
    """Bad options or a missing tool: exit status 2."""


class BenchError(Exception):
    """A benchmark run failed: the message names the command and the cause."""


@dataclass
class ProcResult:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool

    def describe(self) -> str:
        what = f"timed out after {self.wall_s:.0f} s" if self.timed_out else f"exit {self.rc}"
        tail = (self.stderr.strip() or self.stdout.strip())[-600:]
        return f"`{shlex.join(self.argv)}`: {what}" + (f": {tail}" if tail else "")


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """Kills the process group that `proc` leads (it was started in a new session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_proc(
    argv: Sequence[str],
    *,
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> ProcResult:
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise BenchError(f"cannot start `{shlex.join(argv)}`: {exc}") from None
    timed_out = False
    try:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            out, err = proc.communicate()
    finally:
        # Also ends what the child left behind in its group (mpirun daemons, ranks).
        _kill_group(proc)
        if proc.poll() is None:
            proc.wait()
    return ProcResult(list(argv), proc.returncode, out, err, time.monotonic() - start, timed_out)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                rec = json.loads(line)
                if isinstance(rec, dict):
                    yield rec


@dataclass
class Tools:
    cc: str
    floor: Path
    mpirun_openmpi: str | None = None
    mpi_openmpi: Path | None = None
    mpiexec_mpich: str | None = None
    mpi_mpich: Path | None = None
    fi_pingpong: str | None = None
    taskset: str | None = None
    railgauge: list[str] = field(default_factory=list)
    railgauge_env: dict[str, str] = field(default_factory=dict)
    railgauge_bench: str | None = None


def _which(name: str) -> str | None:
    return shutil.which(name)


def find_railgauge(explicit: str | None) -> tuple[list[str], dict[str, str]] | None:
    """The railgauge command line, and the environment it needs, or None."""
    if explicit:
        return shlex.split(explicit), {}
    for cand in (Path(sys.executable).parent / "railgauge", _which("railgauge")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return [str(cand)], {}
    # A source checkout without `pip install .`: run the CLI module from python/.
    if (REPO / "python" / "railgauge" / "cli" / "main.py").is_file():
        pypath = str(REPO / "python")
        old = os.environ.get("PYTHONPATH")
        env = {"PYTHONPATH": pypath + (os.pathsep + old if old else "")}
        probe = subprocess.run(
            [sys.executable, "-c", "import railgauge.cli.main"],
            env={**os.environ, **env},
            capture_output=True,
            timeout=60,
            check=False,
        )
        if probe.returncode == 0:
            return [sys.executable, "-m", "railgauge.cli.main"], env
    return None


def find_railgauge_bench(explicit: str | None) -> str | None:
    """railgauge-bench, looked up like railgauge's own native.find_tool does."""
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    cands: list[Path] = []
    if os.environ.get("RG_NATIVE_DIR"):
        cands.append(Path(os.environ["RG_NATIVE_DIR"]) / "railgauge-bench")
    cands.append(Path(sys.executable).parent / "railgauge-bench")
    found = _which("railgauge-bench")
    if found:
        cands.append(Path(found))
    cands += [
        REPO / "build" / "native" / "railgauge-bench",
        REPO / "build" / "native" / "tools" / "railgauge-bench",
    ]
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c.resolve())
    return None


def _ompi_env() -> dict[str, str]:
    env = dict(os.environ)
    # Open MPI refuses to start as root unless both are set (and --allow-run-as-root).
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def _first_line(argv: list[str], nlines: int = 2) -> str:
    if not _which(argv[0]):
        return "not installed"
    try:
        res = run_proc(argv, timeout=30)
    except BenchError as exc:
        return str(exc)
    lines = [" ".join(ln.split()) for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
    return "; ".join(lines[:nlines]) if lines else f"exit {res.rc}"


def _git_commit() -> str | None:
    """The checkout's commit (``-dirty`` with uncommitted changes), None outside git."""
    if not _which("git"):
        return None
    try:
        res = run_proc(["git", "-C", str(REPO), "describe", "--always", "--dirty",
                        "--abbrev=12"], timeout=30)
    except BenchError:
        return None
    out = res.stdout.strip()
    return out if res.rc == 0 and out else None


def _mpich_version() -> str:
    if not _which("mpichversion"):
        return "not installed"
    res = run_proc(["mpichversion"], timeout=30)
    keep = [" ".join(ln.split()) for ln in res.stdout.splitlines()
            if ln.startswith(("MPICH Version", "MPICH Device"))]
    return "; ".join(keep) or f"exit {res.rc}"


def machine_facts(tools: Tools | None) -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    facts: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "host": platform.node(),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_start": os.getloadavg(),
        "libfabric": _first_line(["fi_info", "--version"]),
        "openmpi": _first_line(["mpirun.openmpi", "--version"], 1),
        "mpich": _mpich_version(),
        "cc": _first_line([tools.cc, "--version"], 1) if tools and tools.cc else "n/a",
    }
    with contextlib.suppress(OSError):
        src = "/sys/devices/system/clocksource/clocksource0/current_clocksource"
        facts["clocksource"] = Path(src).read_text().strip()
    commit = _git_commit()
    if commit is not None:
        facts["commit"] = commit
    if tools and tools.railgauge:
        res = run_proc([*tools.railgauge, "--version"], timeout=60,
                       env={**os.environ, **tools.railgauge_env})
        facts["railgauge"] = (res.stdout.strip() or res.stderr.strip()).splitlines()[0] \
            if res.rc == 0 and (res.stdout.strip() or res.stderr.strip()) else "unknown"
    return facts


def fmt_us(v: float | None) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:.3f}"


def fmt_bw(v: float | None) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:,.0f}"


def fmt_cv(v: float) -> str:
    return "undefined (mean 0)" if math.isinf(v) else ("n/a" if math.isnan(v) else f"{v:.1%}")


def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**PASS**" if ok else "**FAIL**")


def facts_md(facts: dict[str, Any], command: str, raw: Path) -> list[str]:
    la0 = facts.get("loadavg_start") or (math.nan,) * 3
    la1 = facts.get("loadavg_end") or (math.nan,) * 3
    lines = [
        "Machine and run:",
        "",
        f"- date: {facts['date']}; host `{facts['host']}`; nproc {facts['nproc']}; "
        f"CPU {facts['cpu']}; kernel {facts['kernel']}"
        + (f"; clocksource {facts['clocksource']}" if "clocksource" in facts else ""),
        f"- load average (1/5/15 min) at start {la0[0]:.2f}/{la0[1]:.2f}/{la0[2]:.2f}, "
        f"at end {la1[0]:.2f}/{la1[1]:.2f}/{la1[2]:.2f}",
        f"- libfabric: {facts['libfabric']}",
        f"- Open MPI: {facts['openmpi']}",
        f"- MPICH: {facts['mpich']}",
        f"- compiler: {facts['cc']}; Python {facts['python']}",
    ]
    if "railgauge" in facts:
        lines.append(f"- railgauge: {facts['railgauge']}"
                     + (f", commit {facts['commit']}" if "commit" in facts else ""))
    lines += [
        "",
        "Produced by (from the repository root):",
        "",
        "```",
        command,
        "```",
        "",
        f"Raw results: `{raw.relative_to(REPO) if raw.is_relative_to(REPO) else raw}`.",
    ]
    return lines


DOC_HEAD = (
    "# Benchmarks\n\n"
    "Written by `bench/run_bench.py`; the text between each pair of `bench:` markers is "
    "regenerated by that script, so edit the script, not the figures. Benchmarks measure "
    "speed on one machine; the tests assert behaviour only.\n"
)


def write_sections(path: Path, sections: dict[str, str]) -> None:
    text = path.read_text() if path.is_file() else DOC_HEAD
    for name, body in sections.items():
        begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
        block = f"{begin}\n{body.rstrip()}\n{end}"
        m = re.search(re.escape(begin) + r".*?" + re.escape(end), text, re.DOTALL)
        if m:
            text = text[:m.start()] + block + text[m.end():]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text if text.endswith("\n") else text + "\n")
    tmp.replace(path)


def testbed_raw(from_file: Path | None, measure: Callable[[], dict[str, Any]], name: str,
                say: Callable[[str], None]) -> tuple[int, dict[str, Any] | None]:
    """The raw rows of a testbed benchmark: read from from_file, or measured and saved as
    build/bench/<name>-<stamp>.json. Returns (exit status, rows): 2 and None when no testbed
    can be built here, 1 and None when a run failed (RailsError), 0 and the rows."""
    from railgauge.netns import TestbedUnavailable
    from railgauge.rails import RailsError

    if from_file is not None:
        return 0, json.loads(from_file.read_text())
    try:
        raw = measure()
    except TestbedUnavailable as exc:
        say(f"no testbed here: {exc}")
        return 2, None
    except RailsError as exc:
        say(str(exc))
        return 1, None
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    path = BUILD / f"{name}-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(raw, indent=1))
    say(f"raw rows in {path}")
    return 0, raw


def emit_section(path: Path, name: str, md: str, no_write: bool,
                 say: Callable[[str], None]) -> None:
    """Prints the section (no_write) or writes it into its markers in path."""
    if no_write:
        print(md)
    else:
        write_sections(path, {name: md})
        say(f"wrote section {name} of {path}")
