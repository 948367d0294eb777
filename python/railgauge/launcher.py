"""The local launcher: start N ranks of a program on this host and serve their bootstrap.

``launch(argv, nranks)`` is what ``railgauge run -n N -- PROG ARGS`` calls. Every rank
gets one end of a socketpair (``RG_BOOT_FD``) and its place in the job (``RG_RANK``,
``RG_SIZE``, ``RG_JOB_ID``); the launcher answers the allgather protocol that
``native/src/boot/boot.h`` documents:

* rank -> launcher: ``'A'``, u32 len, len bytes (one contribution to collective k);
* launcher -> rank: ``'R'``, u32 total, the contributions of ranks 0, 1, ... in order.

All integers are little-endian. The launcher also watches the ranks: the first rank
that fails (a non-zero exit code or a signal) ends the job, the others get SIGTERM
and, after ``kill_grace_s``, SIGKILL. Ranks die with the launcher too
(``PR_SET_PDEATHSIG``), so nothing outlives it.

Ranks may run in network namespaces (``netns``): rank i is started as
``ip netns exec <netns[i % len(netns)]> PROG ARGS``; ``ip`` execs the program, so the
rank keeps its pid, its bootstrap socket, its CPU binding and its parent-death signal.

The library never prints: progress and decisions go to the ``on_event`` callback.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import secrets
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType

__all__ = ["LaunchError", "LaunchResult", "launch"]

_OP_ALLGATHER = 0x41  # 'A'
_OP_RESULT = 0x52  # 'R'
_HEADER = struct.Struct("<BI")
# One contribution is a few transport addresses; anything this large is a bug.
_MAX_CONTRIBUTION = 64 << 20
_PR_SET_PDEATHSIG = 1
# How often children are polled where pidfds are unavailable, and how often the
# loop looks at the signal flag.
_TICK_S = 0.05
#: How long a rank whose bootstrap socket closed gets to be reaped before its waiting
#: peers are told (Job.on_eof).
_EOF_EXIT_WAIT_S = 0.25
_TIMEOUT_RC = 124

_libc: ctypes.CDLL | None = None

_Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


class LaunchError(ValueError):
    """The launch could not start: bad arguments or a program that cannot run."""


@dataclass
class LaunchResult:
    """How a launched job ended.

    Attributes
    ----------
    returncode:
        0 if every rank exited 0; else the failed rank's exit code, or 128 + signal
        number for a rank killed by a signal; 124 on timeout; 128 + signal number when
        the launcher itself was interrupted (130 for SIGINT).
    failed_rank:
        The rank whose failure ended the job, or None.
    failure:
        One sentence naming the cause, e.g. "rank 1 (pid 1234) was killed by signal
        SIGKILL" or "rank 0 exited with code 3"; None on success.
    returncodes:
        Each rank's return code as subprocess reports it (negative: killed by that
        signal), None for a rank that never started.
    wall_s:
        Seconds from the first start to the last exit.
    job_id:
        The RG_JOB_ID the ranks saw ("<launcher pid>-<8 hex digits>").
    pids:
        Each rank's process id.
    """

    returncode: int
    failed_rank: int | None
    failure: str | None
    returncodes: list[int | None]
    wall_s: float
    job_id: str = ""
    pids: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass
class _Rank:
    rank: int
    proc: subprocess.Popen[bytes]
    sock: socket.socket | None
    pidfd: int | None = None
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    pending: bytes | None = None
    exit_seen: bool = False


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _describe_exit(rank: int, pid: int, returncode: int) -> str:
    if returncode < 0:
        return f"rank {rank} (pid {pid}) was killed by signal {_signal_name(-returncode)}"
    return f"rank {rank} exited with code {returncode}"


def _job_returncode(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _child_setup(parent_pid: int, cpu: int | None = None) -> None:
    """Runs in the child between fork and exec: die with the launcher, and
    run on one CPU where the launcher binds ranks."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The launcher may have died before prctl took effect; then nobody would kill us.
    if os.getppid() != parent_pid:
        os._exit(1)


def _resolve_program(prog: str, path: str | None) -> str:
    if not prog:
        raise LaunchError("argv[0] (the program) is empty")
    if os.sep in prog:
        if not os.path.isfile(prog):
            raise LaunchError(f"program not found: {prog!r}")
        if not os.access(prog, os.X_OK):
            raise LaunchError(f"program is not executable: {prog!r}")
        return prog
    found = shutil.which(prog, path=path)
    if found is None:
        raise LaunchError(f"program {prog!r} not found on PATH")
    return found


def _validate(
    argv: Sequence[str],
    nranks: int,
    env: Mapping[str, str] | None,
    timeout_s: float | None,
    kill_grace_s: float,
) -> None:
    if isinstance(argv, str) or not isinstance(argv, Sequence):
        raise LaunchError("argv must be a list of strings (the program and its arguments)")
    if len(argv) == 0:
        raise LaunchError("argv is empty: give the program to run")
    if not all(isinstance(a, str) for a in argv):
        raise LaunchError("argv must contain only strings")
    if isinstance(nranks, bool) or not isinstance(nranks, int) or nranks < 1:
        raise LaunchError(f"nranks must be an integer >= 1, got {nranks!r}")
    if env is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise LaunchError("env must map strings to strings")
    if timeout_s is not None and not timeout_s > 0:
        raise LaunchError(f"timeout_s must be > 0 or None, got {timeout_s!r}")
    if not kill_grace_s >= 0:
        raise LaunchError(f"kill_grace_s must be >= 0, got {kill_grace_s!r}")


class _Job:
    """The running ranks and the bootstrap service; one per launch() call."""

    def __init__(self, on_event: Callable[[str], None] | None):
        self.on_event = on_event
        self.ranks: list[_Rank] = []
        self.sel = selectors.DefaultSelector()
        self.collective = 0
        self.broken = False  # a rank left: no collective can complete any more
        self.failure: str | None = None
        self.failed_rank: int | None = None
        self.returncode = 0
        # Set by failures the job cannot go on from (a broken bootstrap protocol),
        # as opposed to a rank's exit, which kill_on_failure=False tolerates.
        self.must_stop = False

    def event(self, text: str) -> None:
        if self.on_event is not None:
            self.on_event(text)

    def fail(
        self, rank: int | None, text: str, returncode: int, *, must_stop: bool = False
    ) -> None:
        self.must_stop = self.must_stop or must_stop
        if self.failure is None:
            self.failure = text
            self.failed_rank = rank
            self.returncode = returncode
            self.event(text)

    # ---- ranks -----------------------------------------------------------------

    def start(self, r: int, args: list[str], env: dict[str, str],
              cpu: int | None = None, netns: str | None = None) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(env)
        env["RG_BOOT_FD"] = str(child.fileno())
        env["RG_RANK"] = str(r)
        if cpu is not None:
            env["RG_BIND_CPU"] = str(cpu)
        try:
            proc = subprocess.Popen(
                args,
                env=env,
                pass_fds=(child.fileno(),),
                stdin=None if r == 0 else subprocess.DEVNULL,
                preexec_fn=functools.partial(_child_setup, os.getpid(), cpu),
                process_group=0,
            )
        except OSError as exc:
            parent.close()
            raise LaunchError(f"cannot start {args[0]!r}: {exc.strerror or exc}") from exc
        finally:
            child.close()
        parent.setblocking(False)
        rank = _Rank(rank=r, proc=proc, sock=parent)
        self.ranks.append(rank)
        self.sel.register(parent, selectors.EVENT_READ, ("sock", r))
        try:
            rank.pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            rank.pidfd = None
        if rank.pidfd is not None:
            self.sel.register(rank.pidfd, selectors.EVENT_READ, ("pid", r))
        where = f" in network namespace {netns}" if netns is not None else ""
        self.event(f"rank {r} started (pid {proc.pid}){where}")

    def alive(self) -> list[_Rank]:
        return [rk for rk in self.ranks if not rk.exit_seen]

    def reap(self, only: _Rank | None = None) -> list[_Rank]:
        """Marks ranks (or just `only`) that have exited since the last call and
        returns them."""
        done = []
        for rk in self.ranks if only is None else [only]:
            if not rk.exit_seen and rk.proc.poll() is not None:
                rk.exit_seen = True
                if rk.pidfd is not None:
                    self.sel.unregister(rk.pidfd)
                    os.close(rk.pidfd)
                    rk.pidfd = None
                done.append(rk)
        return done

    def note_exits(self, exited: list[_Rank]) -> None:
        """Records the first failure among ranks that exited together. A rank
        killed by a signal is preferred: its peers' errors are consequences."""
        failed = [rk for rk in exited if rk.proc.returncode != 0]
        if not failed or self.failure is not None:
            for rk in exited:
                if rk.proc.returncode == 0:
                    self.event(f"rank {rk.rank} exited with code 0")
            return
        failed.sort(key=lambda rk: (rk.proc.returncode >= 0, rk.rank))
        first = failed[0]
        rc = first.proc.returncode
        assert rc is not None
        self.fail(first.rank, _describe_exit(first.rank, first.proc.pid, rc), _job_returncode(rc))

    def terminate(self, grace_s: float) -> None:
        """SIGTERM to every live rank (and its process group), SIGKILL after grace_s."""
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(rk.proc.poll() is None for rk in self.ranks):
            time.sleep(0.01)
        if any(rk.proc.poll() is None for rk in self.ranks):
            self.event("sending SIGKILL to ranks still running")
            self._signal_all(signal.SIGKILL)
        for rk in self.ranks:
            with contextlib.suppress(subprocess.TimeoutExpired):
                rk.proc.wait(timeout=5.0)
        self.reap()

    def _signal_all(self, signum: int) -> None:
        for rk in self.ranks:
            if rk.proc.poll() is not None:
                continue
            # Each rank leads its own process group, so whatever it started dies too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(rk.proc.pid, signum)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(rk.proc.pid, signum)

    # ---- bootstrap service ---------------------------------------------------

    def close_sock(self, rk: _Rank) -> None:
        if rk.sock is not None:
            self.sel.unregister(rk.sock)
            rk.sock.close()
            rk.sock = None
            rk.pending = None
            rk.outbuf.clear()

    def on_eof(self, rk: _Rank) -> None:
        self.close_sock(rk)
        # A rank that is dying closes its socket a moment before it can be reaped
        # (before its pidfd, where it has one, reports the exit). The waiters broken
        # below exit at once, and on a busy host they were reaped first: waiting
        # briefly for this rank lets the failure name the rank that died, not the
        # ranks that then saw EOF.
        with contextlib.suppress(subprocess.TimeoutExpired):
            rk.proc.wait(timeout=_EOF_EXIT_WAIT_S)
        self.note_exits(self.reap(rk))
        if not self.broken:
            self.broken = True
            self.event(f"rank {rk.rank} closed its bootstrap socket")
        self.break_waiters()

    def break_waiters(self) -> None:
        """Ranks waiting in a collective that can never complete see EOF."""
        for other in self.ranks:
            if other.pending is not None:
                self.close_sock(other)

    def on_readable(self, rk: _Rank) -> None:
        assert rk.sock is not None
        try:
            data = rk.sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.on_eof(rk)
            return
        rk.inbuf += data
        while rk.sock is not None and len(rk.inbuf) >= _HEADER.size:
            op, length = _HEADER.unpack_from(rk.inbuf)
            if op != _OP_ALLGATHER:
                self.fail(
                    rk.rank,
                    f"rank {rk.rank} sent a malformed bootstrap message (op 0x{op:02x})",
                    1,
                    must_stop=True,
                )
                return
            if length > _MAX_CONTRIBUTION:
                self.fail(
                    rk.rank,
                    f"rank {rk.rank} contributed {length} bytes to "
                    f"collective {self.collective}; the limit is {_MAX_CONTRIBUTION}",
                    1,
                    must_stop=True,
                )
                return
            if len(rk.inbuf) < _HEADER.size + length:
                return
            if rk.pending is not None:
                self.fail(
                    rk.rank,
                    f"rank {rk.rank} started a second collective before "
                    f"collective {self.collective} finished",
                    1,
                    must_stop=True,
                )
                return
            rk.pending = bytes(rk.inbuf[_HEADER.size : _HEADER.size + length])
            del rk.inbuf[: _HEADER.size + length]
            if self.broken:
                self.close_sock(rk)
                return
            self.maybe_complete()

    def maybe_complete(self) -> None:
        if any(rk.pending is None for rk in self.ranks):
            return
        lengths = [len(rk.pending or b"") for rk in self.ranks]
        if len(set(lengths)) != 1:
            odd = next(r for r, n in enumerate(lengths) if n != lengths[0])
            self.fail(
                odd,
                f"collective {self.collective}: rank {odd} contributed "
                f"{lengths[odd]} bytes but rank 0 contributed {lengths[0]}; every rank "
                "must contribute the same length",
                1,
                must_stop=True,
            )
            return
        body = b"".join(rk.pending or b"" for rk in self.ranks)
        reply = _HEADER.pack(_OP_RESULT, len(body)) + body
        for rk in self.ranks:
            rk.pending = None
            rk.outbuf += reply
            self.flush(rk)
        self.collective += 1

    def flush(self, rk: _Rank) -> None:
        if rk.sock is None:
            return
        try:
            while rk.outbuf:
                n = rk.sock.send(rk.outbuf)
                del rk.outbuf[:n]
        except BlockingIOError:
            pass
        except OSError:
            self.on_eof(rk)
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if rk.outbuf else 0)
        self.sel.modify(rk.sock, events, ("sock", rk.rank))

    def close(self) -> None:
        for rk in self.ranks:
            self.close_sock(rk)
            if rk.pidfd is not None:
                self.sel.unregister(rk.pidfd)
                os.close(rk.pidfd)
                rk.pidfd = None
        self.sel.close()


def _netns_prefixes(netns: Sequence[str] | None, nranks: int) -> list[list[str]]:
    """Per rank, what goes before the program: [] or ``ip netns exec NS``."""
    if netns is None:
        return [[] for _ in range(nranks)]
    if isinstance(netns, str) or not isinstance(netns, Sequence) or len(netns) == 0:
        raise LaunchError("netns must be a non-empty list of network namespace names")
    for name in netns:
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise LaunchError(f"bad network namespace name {name!r}")
    from railgauge.netns import ip_command, list_namespaces

    ip = ip_command()
    if ip is None:
        raise LaunchError("running ranks in network namespaces needs the `ip` command "
                          "(iproute2), which is not installed")
    if os.geteuid() != 0:
        raise LaunchError("running ranks in network namespaces (ip netns exec) needs root")
    have = set(list_namespaces())
    missing = [name for name in dict.fromkeys(netns) if name not in have]
    if missing:
        raise LaunchError(f"no network namespace named {', '.join(missing)} "
                          f"(`ip netns list` has: {', '.join(sorted(have)) or 'none'})")
    return [[ip, "netns", "exec", netns[r % len(netns)]] for r in range(nranks)]


def launch(
    argv: list[str],
    nranks: int,
    *,
    transport: str | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    kill_grace_s: float = 1.0,
    on_event: Callable[[str], None] | None = None,
    kill_on_failure: bool = True,
    bind: str = "auto",
    netns: Sequence[str] | None = None,
) -> LaunchResult:
    """Runs ``argv`` as ``nranks`` ranks on this host and waits for them.

    Parameters
    ----------
    argv:
        The program and its arguments; the program is looked up on PATH (of ``env``
        if it sets one) unless it contains a slash.
    nranks:
        Number of ranks, >= 1.
    transport:
        Sets ``RG_TRANSPORT`` for the ranks.
    env:
        Variables added to (or replacing) the launcher's environment.
    timeout_s:
        Kill the job after this many seconds (failure "timed out after X s").
    kill_grace_s:
        Seconds between SIGTERM and SIGKILL when the job ends early.
    on_event:
        Receives one line per decision (rank started, exited, failure, kills).
    kill_on_failure:
        True (default): the first failing rank ends the job. False: the other ranks
        may go on until they exit (or the timeout), which lets tests watch how ranks
        cope with a dead peer; the first failure is still the one reported.
    bind:
        "core": rank r runs on the r-th CPU this process may use (modulo their
        number); "none": the scheduler places ranks; "auto" (default): "core" when
        there are at least as many CPUs as ranks, else "none". Binding keeps two
        communicating ranks from starting on one CPU until the scheduler moves
        one, which shows as microseconds instead of nanoseconds per message.
    netns:
        Network namespaces (``ip netns list`` names) to run the ranks in: rank r runs
        in ``netns[r % len(netns)]``, started through ``ip netns exec`` (needs root).
        None (default): the launcher's own namespace. Transports then need an
        address per namespace (``RG_TCP_IFACE``, ``RG_OFI_IFACE`` or the ``SUBNET``
        variants), set in ``env`` for every rank alike.

    Returns
    -------
    LaunchResult

    Raises
    ------
    LaunchError
        For bad arguments, or a program that cannot be started.

    Examples
    --------
    >>> launch(["true"], 2).returncode
    0
    """
    global _libc
    _validate(argv, nranks, env, timeout_s, kill_grace_s)
    child_env = dict(os.environ)
    if env:
        child_env.update(env)
    prog = _resolve_program(argv[0], child_env.get("PATH"))
    args = [prog, *argv[1:]]
    prefixes = _netns_prefixes(netns, nranks)
    if bind not in ("auto", "core", "none"):
        raise LaunchError(f"bind must be auto, core or none, not {bind!r}")
    cpus = sorted(os.sched_getaffinity(0))
    pin = bind == "core" or (bind == "auto" and nranks <= len(cpus))
    job_id = f"{os.getpid()}-{secrets.token_hex(4)}"
    child_env["RG_SIZE"] = str(nranks)
    child_env["RG_JOB_ID"] = job_id
    if transport is not None:
        child_env["RG_TRANSPORT"] = transport
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)

    job = _Job(on_event)
    interrupted: list[int] = []
    old_handlers: dict[int, _Handler] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        interrupted.append(signum)

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            old_handlers[signum] = signal.signal(signum, on_signal)

    start = time.monotonic()
    deadline = start + timeout_s if timeout_s is not None else None
    try:
        for r in range(nranks):
            job.start(r, [*prefixes[r], *args], child_env, cpus[r % len(cpus)] if pin else None,
                      netns[r % len(netns)] if netns else None)
        while job.alive():
            if interrupted:
                name = _signal_name(interrupted[0])
                job.fail(
                    None, f"launcher interrupted by {name}; ranks killed", 128 + interrupted[0]
                )
                job.terminate(kill_grace_s)
                break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                job.fail(None, f"timed out after {timeout_s:g} s", _TIMEOUT_RC)
                job.terminate(kill_grace_s)
                break
            wait = _TICK_S if deadline is None else max(0.0, min(_TICK_S, deadline - now))
            for key, mask in job.sel.select(wait):
                kind, r = key.data
                rk = job.ranks[r]
                # epoll reports events in the order they happened, so handling
                # each exit on its own names the rank that failed first.
                if kind == "pid":
                    job.note_exits(job.reap(rk))
                elif kind == "sock" and rk.sock is not None:
                    if mask & selectors.EVENT_WRITE:
                        job.flush(rk)
                    if mask & selectors.EVENT_READ and rk.sock is not None:
                        job.on_readable(rk)
            job.note_exits(job.reap())
            if job.failure is not None and (kill_on_failure or job.must_stop):
                if job.alive():
                    job.event(f"terminating {len(job.alive())} remaining rank(s)")
                job.terminate(kill_grace_s)
                break
    finally:
        # Whatever happened (an exception, KeyboardInterrupt in a thread), no rank
        # may outlive this call.
        if job.alive():
            job.terminate(0.0)
        job.close()
        for restore, handler in old_handlers.items():
            signal.signal(restore, handler)
        # The transport unlinks its segment once every rank has mapped it; this only
        # covers a job killed inside that short window.
        with contextlib.suppress(OSError):
            os.unlink(f"/dev/shm/railgauge-{job_id}")

    returncodes: list[int | None] = [rk.proc.returncode for rk in job.ranks]
    returncodes += [None] * (nranks - len(returncodes))
    return LaunchResult(
        returncode=job.returncode,
        failed_rank=job.failed_rank,
        failure=job.failure,
        returncodes=returncodes,
        wall_s=time.monotonic() - start,
        job_id=job_id,
        pids=[rk.proc.pid for rk in job.ranks],
    )
