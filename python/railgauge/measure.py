"""Running the PRTT benchmark under the launcher: the coarse sweep, then a
refinement around each protocol change the fit finds (plain functions; the CLI
only wires them to the terminal)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railgauge.hoststate import off_state_sizes, reference_state_us
from railgauge.launcher import LaunchResult, launch
from railgauge.measurements import json_records
from railgauge.mpilaunch import MpiResult
from railgauge.native import find_tool

#: Transports a run can use: ofi:* is libfabric over its tcp (tcp;ofi_rxm), shm and udp
#: (udp;ofi_rxd) providers; mpi is MPI point-to-point, for ranks an MPI launcher starts.
TRANSPORTS = ("shm", "tcp", "ofi:tcp", "ofi:shm", "ofi:udp", "mpi", "rails")

#: Names with a variant part: tcp:<interface|address|subnet> (one tcp instance bound
#: there), ofi:<provider> (any libfabric provider, verbs, efa, cxi, ...) and
#: ofi:<provider>@<interface|address|subnet> (one instance bound there).
_VARIANT = re.compile(r"(tcp:[A-Za-z0-9_.:/%-]+|ofi:[a-z0-9_]+(;[a-z0-9_]+)?"
                      r"(@[A-Za-z0-9_.:/%-]+)?)")


def transport_error(name: str) -> str | None:
    """None where ``name`` is a transport name the native tools take, else why not."""
    if name in TRANSPORTS or _VARIANT.fullmatch(name):
        return None
    return (f"unknown transport '{name}' (known: {', '.join(TRANSPORTS)}, "
            "tcp:<interface|address|subnet>, ofi:<provider>[@<interface|address|subnet>])")

#: Who starts the ranks: railgauge's own launcher, or an MPI one (railgauge.mpilaunch).
LAUNCHERS = ("local", "openmpi", "mpich")

#: The largest message the benchmark takes (its buffers are this big).
SIZE_LIMIT = 1 << 30

#: Message size of the 1:n / n:1 (onen) measurement: LoP is a model of small messages.
ONEN_SIZE = 8

ProgressCb = Callable[[int, int, str], None]


class MeasureError(RuntimeError):
    """The measurement failed; the message names the cause."""


class OnenUnavailable(MeasureError):
    """The benchmark cannot measure the onen pattern (a railgauge-bench without it); the
    message is the tool's own words."""


@dataclass
class MeasurePlan:
    """What to measure and how precisely."""

    transport: str = "shm"
    nranks: int = 2
    min_size: int = 1
    max_size: int = 1 << 20
    per_octave: int = 4
    n: int = 16
    target_rel: float = 0.01
    min_reps: int = 20
    point_budget_s: float = 0.25
    budget_s: float = 45.0
    refine: bool = True
    refine_points: int = 3
    #: Also refine around the bends of the quick fit (breaks merged away for too little
    #: support) whose break support is at least this; None: around its changes only.
    refine_support: float | None = None
    #: Sweeps over the sizes, each in its own shuffled order with 1/passes of the
    #: repetitions; a point pools its passes but those slower than its fastest by more
    #: than pass_tol (a burst of load). 1: one sweep in order (docs/fit.md, section 1).
    passes: int = 3
    pass_tol: float = 0.1
    order_seed: int = 1
    #: With passes > 1: up to this many more passes over the points whose fastest pass no
    #: other pass confirms within pass_tol, in the last 15% of the budget (a slow phase
    #: of the host that covered all passes of a point but one; docs/fit.md, section 1).
    confirm: int = 2
    extra_env: dict[str, str] = field(default_factory=dict)
    #: Network namespaces to run the ranks in (rank r in netns[r % len]); None: here.
    netns: list[str] | None = None
    #: Who starts the ranks: "local" (railgauge's launcher), "openmpi" (mpirun.openmpi)
    #: or "mpich" (mpiexec.mpich); None: local, or for the mpi transport the MPI that is
    #: installed (Open MPI first). Hosts or a hostfile place MPI ranks on other nodes.
    launcher: str | None = None
    hosts: list[str] | None = None
    hostfile: str | None = None

    @classmethod
    def quick(cls, **kw: object) -> MeasurePlan:
        """Less precision for less time: one size per octave, looser targets."""
        plan = cls(per_octave=1, target_rel=0.03, min_reps=10, point_budget_s=0.08,
                   budget_s=15.0, refine_points=2, passes=2, confirm=1)
        for k, v in kw.items():
            setattr(plan, k, v)
        return plan

    def validate(self) -> None:
        """Raises ValueError naming the bad setting."""
        bad = transport_error(self.transport)
        if bad is not None:
            raise ValueError(bad)
        if self.nranks < 2:
            raise ValueError(f"PRTT needs at least 2 ranks, not {self.nranks}")
        if not 0 <= self.min_size <= SIZE_LIMIT or not 1 <= self.max_size <= SIZE_LIMIT:
            raise ValueError(
                f"size range {self.min_size}..{self.max_size} B is outside 0 B .. 1 GiB")
        if self.min_size >= self.max_size:
            raise ValueError(
                f"empty size range: min size {self.min_size} B is not below "
                f"max size {self.max_size} B")
        if self.n < 2:
            raise ValueError(f"n must be at least 2, not {self.n}")
        if not 1 <= self.passes <= 9:
            raise ValueError(f"passes must be 1 .. 9, not {self.passes}")
        if not 0 <= self.confirm <= 8:
            raise ValueError(f"confirm must be 0 .. 8, not {self.confirm}")
        if not 0.001 <= self.pass_tol <= 10:
            raise ValueError(f"pass_tol must be in [0.001, 10], not {self.pass_tol}")
        self._validate_launcher()

    def _validate_launcher(self) -> None:
        """Resolves launcher None to a concrete one; raises ValueError naming the clash."""
        from railgauge.mpilaunch import MpiError, default_flavour

        if self.launcher is None:
            try:
                self.launcher = default_flavour() if self.transport == "mpi" else "local"
            except MpiError as exc:
                raise ValueError(f"--transport mpi: {exc}") from None
        if self.launcher not in LAUNCHERS:
            raise ValueError(f"unknown launcher '{self.launcher}' (known: local, "
                             "mpirun = Open MPI, mpiexec = MPICH)")
        if self.launcher == "local":
            if self.transport == "mpi":
                raise ValueError("the mpi transport needs ranks started by an MPI launcher: "
                                 "use --launcher mpirun (Open MPI) or mpiexec (MPICH)")
            if self.hosts is not None or self.hostfile is not None:
                raise ValueError("--hosts and --hostfile need an MPI launcher "
                                 "(--launcher mpirun or mpiexec)")
        else:
            if self.netns is not None:
                raise ValueError("--netns works with the local launcher only")
            if self.hosts is not None and self.hostfile is not None:
                raise ValueError("give --hosts or --hostfile, not both")


@dataclass
class MeasureResult:
    path: Path
    points: int
    wall_s: float
    refined_sizes: list[int]
    #: Refinement sizes measured only in another state of the host than the sweep, and
    #: left out (see :func:`off_state_sizes`).
    refine_dropped: list[int] = field(default_factory=list)


def _records(path: Path, text: str) -> dict[int, dict[str, Any]]:
    """The records of a JSON Lines text of the tool by line number (json_records)."""
    return dict(json_records(path, text, MeasureError))


def _is_point_of(rec: dict[str, Any], sizes: set[int]) -> bool:
    """Whether a record is a point record (prtt, orecv) of one of the sizes."""
    return rec.get("type") in ("prtt", "orecv") and rec.get("s") in sizes


def sweep_sizes(lo: int, hi: int, per_octave: int) -> list[int]:
    """Log-spaced sizes from lo to hi (both included), per_octave per doubling."""
    out: set[int] = {lo, hi}
    x = float(max(lo, 1))
    step = 2.0 ** (1.0 / per_octave)
    while x <= hi * (1 + 1e-9):
        out.add(round(x))
        x *= step
    return sorted(s for s in out if lo <= s <= hi)


def refine_sizes(boundaries: list[tuple[int, int]], known: set[int], k: int) -> list[int]:
    """k geometric points strictly inside each (a, b) gap, where the fit put a
    protocol change, so that the change is located more precisely."""
    new: set[int] = set()
    for a, b in boundaries:
        if b - a < 2:
            continue
        lo, hi = math.log(max(a, 1)), math.log(b)
        for i in range(1, k + 1):
            s = round(math.exp(lo + (hi - lo) * i / (k + 1)))
            if a < s < b and s not in known:
                new.add(s)
    return sorted(new)


def _int_after(line: bytes, key: bytes) -> int:
    """The whole number after ``key`` (for example ``b'"s":'``) in a record, else -1."""
    i = line.find(key)
    if i < 0:
        return -1
    j = i + len(key)
    k = j
    while k < len(line) and line[k : k + 1].isdigit():
        k += 1
    return int(line[j:k] or b"-1")


def _count_points(path: Path) -> tuple[int, int]:
    """(records, last size) in a JSON Lines file being written. A run in several passes
    writes its records at the end and a ``progress`` record per size visited before:
    there the count is the PRTT records that the visits so far stand for (three per
    size and pass, spread over the passes)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0, -1
    n, last, visited = 0, -1, -1
    passes = 1
    for line in data.splitlines():
        if line.startswith(b'{"type":"prtt"'):
            n += 1
            last = _int_after(line, b'"s":')
        elif line.startswith(b'{"type":"progress"'):
            visited = _int_after(line, b'"visits":')
            passes = max(1, _int_after(line, b'"passes":'))
            last = _int_after(line, b'"s":')
    if n == 0 and visited > 0:
        n = 3 * visited // passes
    return n, last


def run_prtt(plan: MeasurePlan, sizes: list[int], out: Path, *, budget_s: float,
             progress: ProgressCb | None = None, done_before: int = 0,
             total: int = 0, state_ref_us: float | None = None) -> LaunchResult | MpiResult:
    """One run of ``railgauge-bench prtt`` over the given sizes into out; with
    ``state_ref_us`` (a sweep's reference state, runs in passes) the run keeps its passes
    made in that state of the host instead of choosing its own (``--state-ref``)."""
    bench = find_tool("railgauge-bench")
    argv = [bench, "prtt", "--transport", plan.transport, "--out", str(out),
            "--sizes", ",".join(str(s) for s in sizes), "--n", str(plan.n),
            "--target-rel", str(plan.target_rel), "--min-reps", str(plan.min_reps),
            "--point-budget", str(plan.point_budget_s), "--budget", f"{budget_s:.3f}"]
    if plan.passes > 1:
        argv += ["--passes", str(plan.passes), "--pass-tol", str(plan.pass_tol),
                 "--order-seed", str(plan.order_seed)]
        confirm = min(plan.confirm, 9 - plan.passes)  # the tool's limit: 9 passes in all
        if confirm > 0:
            argv += ["--confirm", str(confirm)]
        if state_ref_us is not None and state_ref_us > 0:
            argv += ["--state-ref", f"{state_ref_us:.6g}"]

    def poll() -> None:
        if progress is not None:
            n, last = _count_points(out)
            progress(done_before + n, total, f"s={last} B" if last >= 0 else "starting")

    return _run_bench(plan, argv, plan.nranks, budget_s, poll)


def _run_bench(plan: MeasurePlan, argv: list[str], nranks: int, budget_s: float,
               poll: Callable[[], None] | None = None) -> LaunchResult | MpiResult:
    """Runs the benchmark command ``argv`` as ``nranks`` ranks under the plan's launcher,
    calling ``poll`` every 0.2 s while it runs."""
    holder: dict[str, LaunchResult | MpiResult | BaseException] = {}

    def target() -> None:
        if plan.launcher not in (None, "local"):
            try:
                holder["r"] = _run_prtt_mpi(plan, argv, budget_s, nranks)
            except BaseException as exc:  # re-raised in the caller's thread
                holder["r"] = exc
            return
        try:
            holder["r"] = launch(argv, nranks, transport=plan.transport,
                                 env=plan.extra_env or None, timeout_s=budget_s + 120.0,
                                 netns=plan.netns)
        except BaseException as exc:  # re-raised in the caller's thread
            holder["r"] = exc

    th = threading.Thread(target=target, name="railgauge-launch", daemon=True)
    th.start()
    while th.is_alive():
        th.join(0.2)
        if poll is not None:
            poll()
    res = holder["r"]
    if isinstance(res, BaseException):
        raise res
    return res


def _run_prtt_mpi(plan: MeasurePlan, argv: list[str], budget_s: float,
                  nranks: int | None = None) -> MpiResult:
    """The benchmark under mpirun.openmpi or mpiexec.mpich: the ranks bootstrap through
    MPI; rank 0 (the first host's) writes the measurements."""
    from railgauge.mpilaunch import MpiError, run_mpi

    assert plan.launcher is not None
    # Ranks on other nodes see only what the launcher passes on: every RG_* setting.
    # (railgauge run's contract with its ranks stays out: it would override MPI's.)
    contract = ("RG_BOOT_FD", "RG_RANK", "RG_SIZE", "RG_JOB_ID")
    env = {k: v for k, v in os.environ.items() if k.startswith("RG_") and k not in contract}
    env.update(plan.extra_env)
    env["RG_TRANSPORT"] = plan.transport
    try:
        res = run_mpi(plan.launcher, argv, plan.nranks if nranks is None else nranks,
                      hosts=plan.hosts,
                      hostfile=plan.hostfile, env=env, timeout_s=budget_s + 120.0,
                      stdout=None)
    except MpiError as exc:
        raise MeasureError(str(exc)) from None
    if res.returncode != 0 and res.failed_rank is None:
        # No rank to name: the launcher's or the tool's own words say more.
        tail = [ln for ln in res.stderr.strip().splitlines() if ln.strip()][-3:]
        if tail:
            res.failure = f"{res.failure}: " + " | ".join(ln.strip() for ln in tail)
    elif res.returncode != 0:
        # The rank's own words, where it said something (the tool, or a sanitizer).
        tool = [ln.strip() for ln in res.stderr.splitlines()
                if ln.startswith("railgauge-bench:") or "Sanitizer" in ln]
        if tool:
            res.failure = f"{res.failure}; {tool[0]}"
    return res


def measure_prtt(plan: MeasurePlan, out: Path, *, progress: ProgressCb | None = None,
                 fit_boundaries: Callable[[Path], list[tuple[int, int]]] | None = None
                 ) -> MeasureResult:
    """Measures PRTT over the plan's sweep into out (JSON Lines), then, where
    fit_boundaries finds protocol changes, measures refinement sizes between
    the two measured sizes around each change and appends them."""
    plan.validate()
    t0 = time.monotonic()
    sizes = sweep_sizes(plan.min_size, plan.max_size, plan.per_octave)
    total = 3 * len(sizes)
    part = out.with_name(out.name + ".part")
    out.parent.mkdir(parents=True, exist_ok=True)
    # The sweep leaves a share of the budget to the refinement around the changes it
    # finds (a run in passes spreads whatever budget it has over all its passes).
    sweep_budget = plan.budget_s * (0.85 if plan.refine else 1.0)
    res = run_prtt(plan, sizes, part, budget_s=sweep_budget, progress=progress, total=total)
    if res.returncode != 0:
        part.unlink(missing_ok=True)
        raise MeasureError(f"the PRTT benchmark failed: {res.failure}")
    os.replace(part, out)
    points, _ = _count_points(out)
    refined: list[int] = []
    left = plan.budget_s - (time.monotonic() - t0)
    dropped: list[int] = []
    if plan.refine and fit_boundaries is not None and left > 1.0:
        refined = refine_sizes(fit_boundaries(out), set(sizes), plan.refine_points)
        ref_us = reference_state_us(
            list(_records(out, out.read_text(encoding="utf-8")).values()))
        todo = list(refined)
        # The refinement keeps its passes made in the sweep's state (--state-ref); a
        # size none of whose passes was (the host in another state throughout) is
        # measured again once, in half the time left; what is still off is left out.
        for attempt in range(2):
            if not todo:
                break
            total = points + 3 * len(todo)
            res = run_prtt(plan, todo, part, budget_s=left if attempt == 0 else left / 2,
                           progress=progress, done_before=points, total=total,
                           state_ref_us=ref_us)
            if res.returncode != 0:
                part.unlink(missing_ok=True)
                raise MeasureError(f"the PRTT refinement run failed: {res.failure}")
            text = part.read_text(encoding="utf-8")
            recs = _records(part, text)
            off = off_state_sizes(list(recs.values()), ref_us) if ref_us is not None else []
            keep = [line for n, line in enumerate(text.splitlines(True), start=1)
                    if n not in recs or not _is_point_of(recs[n], set(off))]
            with out.open("a", encoding="utf-8") as f:
                f.writelines(keep)
            part.unlink()
            points, _ = _count_points(out)
            todo = off
            left = plan.budget_s - (time.monotonic() - t0)
            if left <= 1.0:
                break
        dropped = todo
        refined = [s for s in refined if s not in dropped]
    if progress is not None:
        progress(points, points, "done")
    return MeasureResult(path=out, points=points, wall_s=time.monotonic() - t0,
                         refined_sizes=refined, refine_dropped=dropped)



# ---- the 1:n / n:1 measurement of the LoP model (railgauge-bench onen) ----------------


@dataclass
class OnenResult:
    """How an onen measurement went: the file, its records and the ranks it ran on."""

    path: Path
    points: int
    wall_s: float
    ranks: int


def onen_missing(bench: str) -> str | None:
    """The tool's own words where ``bench`` has no ``onen`` pattern ("unknown pattern
    'onen' ..."), else None (also where the probe cannot tell: the run will)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RG_BOOT_FD", "RG_RANK", "RG_SIZE", "RG_JOB_ID")}
    try:
        proc = subprocess.run([bench, "onen", "--help"], capture_output=True, text=True,
                              timeout=20.0, stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode == 0:
        return None
    for line in (proc.stderr + "\n" + proc.stdout).splitlines():
        if "unknown pattern" in line:
            return line.strip()
    return None


def _onen_progress(path: Path) -> tuple[int, int, str]:
    """(records, expected records or 0, the last record's direction, mode and p) of an
    onen file being written; the expected count comes from its header (``planned_points``,
    else directions x modes x the p range), where it says."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0, 0, "starting"
    n, total, last = 0, 0, "starting"
    for raw in data.splitlines():
        if not raw.endswith(b"}"):
            continue  # a line being written
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if rec.get("type") == "header":
            planned = rec.get("planned_points")
            if isinstance(planned, int) and not isinstance(planned, bool) and planned > 0:
                total += planned
                continue
            params = rec.get("params")
            if not isinstance(params, dict):
                params = {}
            ranks = rec.get("ranks")
            max_p = params.get("max_p")
            if not isinstance(max_p, int):
                max_p = ranks - 1 if isinstance(ranks, int) else 0
            modes = params.get("modes")
            dirs = params.get("directions")
            sizes = params.get("sizes")
            n_sizes = len(sizes) if isinstance(sizes, list) and sizes else 1
            if isinstance(modes, list) and isinstance(dirs, list) and max_p > 0:
                total += len(modes) * len(dirs) * max_p * n_sizes
        elif rec.get("type") == "onen":
            n += 1
            last = f"{rec.get('direction')} {rec.get('mode')} p={rec.get('p')}"
    return n, total, last


def measure_onen(plan: MeasurePlan, out: Path, *, ranks: int, budget_s: float,
                 size: int = ONEN_SIZE, progress: ProgressCb | None = None) -> OnenResult:
    """Measures the 1:n / n:1 pattern (``railgauge-bench onen``) with ``ranks`` ranks, the
    plan's transport and launcher, into out (JSON Lines, ``docs/lop.md``): p = 1 ..
    ranks - 1 peers, messages of ``size`` bytes.

    Raises OnenUnavailable where the tool has no onen pattern, MeasureError where the run
    fails (out is then not written)."""
    plan.validate()
    if ranks < 2:
        raise MeasureError(f"the onen measurement needs at least 2 ranks, not {ranks}")
    bench = find_tool("railgauge-bench")
    missing = onen_missing(bench)
    if missing is not None:
        raise OnenUnavailable(missing)
    t0 = time.monotonic()
    part = out.with_name(out.name + ".part")
    out.parent.mkdir(parents=True, exist_ok=True)
    part.unlink(missing_ok=True)
    # The tool's own onen target (2%) unless the plan is looser (--quick).
    argv = [bench, "onen", "--transport", plan.transport, "--sizes", str(size),
            "--out", str(part), "--budget", f"{budget_s:.3f}"]
    if plan.target_rel > 0.02:
        argv += ["--target-rel", str(plan.target_rel)]

    def poll() -> None:
        if progress is not None:
            n, total, what = _onen_progress(part)
            progress(n, total, what)

    res = _run_bench(plan, argv, ranks, budget_s, poll)
    if res.returncode != 0:
        part.unlink(missing_ok=True)
        words = getattr(res, "stderr", "") or ""
        for line in words.splitlines():
            if "unknown pattern" in line:
                raise OnenUnavailable(line.strip())
        raise MeasureError(f"the onen benchmark failed: {res.failure}")
    if not part.exists():
        raise MeasureError("the onen benchmark wrote no file")
    os.replace(part, out)
    n, _, _ = _onen_progress(out)
    if progress is not None:
        progress(n, n, "done")
    return OnenResult(path=out, points=n, wall_s=time.monotonic() - t0, ranks=ranks)
