"""Running a program under an MPI launcher: Open MPI's ``mpirun.openmpi`` or MPICH's
``mpiexec.mpich`` (Debian's names, always explicit, so that the two never mix).

``run_mpi(flavour, argv, nranks)`` builds the command line (``mpi_command``), runs it with
a timeout, and, when the job fails, names the rank that died first. The native tools
started this way bootstrap through MPI (``native/src/boot/boot.h``), so every transport,
``mpi`` included, works under it; that is how railgauge runs across nodes.

Naming the dead rank: Open MPI's mpirun says which rank failed ("process rank 1 with PID
... exited on signal 9"). MPICH's hydra gives a PID and, with ``-print-all-exitcodes``,
every rank's status, but once one rank dies it kills the others within a fraction of a
millisecond, and for ranks that die early its PID and statuses are not reliable (a rank
killed by a signal reported as 0, a rank that exited with 3 as 1, the PID of a rank it
killed itself). So this host watches too: the ranks here are found by a marker in their
environment (``RG_MPILAUNCH_ID``) and watched by pidfd; railgauge's tools also connect to
a Unix socket (``RG_MPI_WATCH``) and hold the connection until they die, so the order in
which those close is the order in which ranks began to die; and railgauge's transports
name a dead peer in their errors ("rank 1 (pid 1234) died ..."), which tells the dead
rank from the ranks that failed because of it. ``_first_failed`` weighs these.

Plain functions, no printing: progress goes to the ``on_event`` callback.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "FLAVOURS",
    "MpiError",
    "MpiResult",
    "default_flavour",
    "flavour_from_name",
    "installed_flavours",
    "mpi_command",
    "run_mpi",
]

#: The environment variable that marks the ranks of one run (value: a fresh id).
MARKER = "RG_MPILAUNCH_ID"
#: The Unix socket railgauge's tools connect to and hold until they die (their contract
#: with this module, read by native/src/boot/mpi_load.c).
WATCH = "RG_MPI_WATCH"
_TIMEOUT_RC = 124
_TICK_S = 0.05


@dataclass(frozen=True)
class Flavour:
    """One MPI implementation as Debian installs it."""

    name: str            # "openmpi" or "mpich"
    launcher: str        # the launcher program
    packages: str        # what apt-get installs it with
    rank_var: str        # the variable that holds a rank's number


FLAVOURS: dict[str, Flavour] = {
    "openmpi": Flavour("openmpi", "mpirun.openmpi", "openmpi-bin libopenmpi-dev",
                       "OMPI_COMM_WORLD_RANK"),
    "mpich": Flavour("mpich", "mpiexec.mpich", "mpich libmpich-dev", "PMI_RANK"),
}

#: Names accepted for a flavour (the CLI's --launcher values).
_ALIASES = {
    "openmpi": "openmpi", "mpirun": "openmpi", "mpirun.openmpi": "openmpi",
    "mpich": "mpich", "mpiexec": "mpich", "mpiexec.mpich": "mpich",
}


class MpiError(ValueError):
    """The run could not start: an unknown flavour, a missing launcher, bad arguments."""


@dataclass
class MpiResult:
    """How an MPI job ended.

    Attributes
    ----------
    returncode:
        0 if the job succeeded; else the failed rank's exit code, or 128 + signal number
        for a rank killed by a signal; 124 on timeout; the launcher's own exit status
        where no rank could be named.
    failed_rank:
        The rank whose failure ended the job, or None.
    failure:
        One sentence naming the cause, e.g. "rank 1 (pid 1234) was killed by signal
        SIGKILL (mpiexec.mpich)"; None on success.
    stdout, stderr:
        What the launcher and the ranks printed.
    wall_s:
        Seconds from the start to the launcher's exit.
    command:
        The command line that ran.
    pids:
        Rank -> pid of the ranks found on this host.
    """

    returncode: int
    failed_rank: int | None
    failure: str | None
    stdout: str
    stderr: str
    wall_s: float
    command: list[str]
    launcher_rc: int = 0
    timed_out: bool = False
    pids: dict[int, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def flavour_from_name(name: str) -> str:
    """"mpirun", "mpirun.openmpi", "openmpi" -> "openmpi"; "mpiexec", "mpiexec.mpich",
    "mpich" -> "mpich". Raises MpiError for anything else."""
    try:
        return _ALIASES[name]
    except KeyError:
        known = ", ".join(sorted(_ALIASES))
        raise MpiError(f"unknown MPI launcher {name!r} (known: {known})") from None


def installed_flavours() -> list[str]:
    """The flavours whose launcher is on PATH, Open MPI first."""
    return [f for f, fl in FLAVOURS.items() if shutil.which(fl.launcher) is not None]


def default_flavour() -> str:
    """The flavour ``--transport mpi`` uses when no launcher is named: Open MPI if it is
    installed, else MPICH. Raises MpiError when neither is."""
    found = installed_flavours()
    if not found:
        raise MpiError("no MPI launcher found (mpirun.openmpi or mpiexec.mpich); install "
                       "one: apt-get install openmpi-bin libopenmpi-dev (or mpich "
                       "libmpich-dev)")
    return found[0]


def _launcher_path(flavour: str) -> str:
    fl = FLAVOURS[flavour]
    path = shutil.which(fl.launcher)
    if path is None:
        raise MpiError(f"{fl.launcher} not found on PATH (apt-get install {fl.packages})")
    return path


def mpi_command(
    flavour: str,
    argv: Sequence[str],
    nranks: int,
    *,
    hosts: Sequence[str] | None = None,
    hostfile: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    bind: str = "auto",
    launcher: str | None = None,
) -> list[str]:
    """The launcher's command line that runs ``argv`` as ``nranks`` ranks.

    Parameters
    ----------
    flavour:
        "openmpi" (mpirun.openmpi) or "mpich" (mpiexec.mpich).
    hosts, hostfile:
        Where the ranks run (``--host h1,h2`` / ``-hosts h1,h2``, ``--hostfile F`` /
        ``-f F``; the file's format is the launcher's own); neither: this host.
    env:
        Variables every rank gets (``-x NAME=VALUE`` / ``-genv NAME VALUE``): the local
        ranks inherit the launcher's environment anyway, remote ones only these.
    bind:
        "core" binds each rank to a core, "none" leaves placement to the system, "auto"
        binds on this host when there are at least as many CPUs as ranks.
    launcher:
        The launcher program (default: found on PATH).

    Open MPI also gets ``--oversubscribe`` (more ranks than cores is allowed) and, as
    root, ``--allow-run-as-root``.

    Examples
    --------
    >>> mpi_command("mpich", ["prog", "-v"], 2, hosts=["a", "b"], env={"X": "1"},
    ...             launcher="mpiexec.mpich")
    ['mpiexec.mpich', '-print-all-exitcodes', '-n', '2', '-hosts', 'a,b', '-genv', 'X', '1', \
'prog', '-v']
    """
    if flavour not in FLAVOURS:
        raise MpiError(f"unknown MPI flavour {flavour!r} (known: {', '.join(FLAVOURS)})")
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise MpiError("argv must be a non-empty list of strings (the program and its "
                       "arguments)")
    if isinstance(nranks, bool) or not isinstance(nranks, int) or nranks < 1:
        raise MpiError(f"nranks must be an integer >= 1, got {nranks!r}")
    if hosts is not None and hostfile is not None:
        raise MpiError("give hosts or a hostfile, not both")
    if hosts is not None and (not hosts or not all(h and "," not in h for h in hosts)):
        raise MpiError(f"hosts must be non-empty host names, got {list(hosts)!r}")
    if bind not in ("auto", "core", "none"):
        raise MpiError(f"bind must be auto, core or none, not {bind!r}")
    prog = launcher if launcher is not None else _launcher_path(flavour)
    local = hosts is None and hostfile is None
    if bind == "auto":
        bind = "core" if local and nranks <= len(os.sched_getaffinity(0)) else ""
    cmd = [prog]
    if flavour == "openmpi":
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += ["--oversubscribe", "-n", str(nranks)]
        if hosts is not None:
            cmd += ["--host", ",".join(hosts)]
        if hostfile is not None:
            cmd += ["--hostfile", os.fspath(hostfile)]
        if bind:
            cmd += ["--bind-to", bind]
        for k, v in (env or {}).items():
            cmd += ["-x", f"{k}={v}"]
    else:
        # Every rank's wait status, which names the rank that failed.
        cmd += ["-print-all-exitcodes", "-n", str(nranks)]
        if hosts is not None:
            cmd += ["-hosts", ",".join(hosts)]
        if hostfile is not None:
            cmd += ["-f", os.fspath(hostfile)]
        if bind:
            cmd += ["-bind-to", bind]
        for k, v in (env or {}).items():
            cmd += ["-genv", k, v]
    return [*cmd, *argv]


# ---- watching the ranks on this host ------------------------------------------------


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def _find_ranks(marker: str, rank_var: str, known: dict[int, int]) -> dict[int, int]:
    """Rank -> pid of the live processes whose environment carries the marker (the
    launcher and its helpers carry it too, but have no rank variable)."""
    needle = f"{MARKER}={marker}".encode()
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid in known.values():
            continue
        try:
            raw = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle not in raw:
            continue
        rank = _environ(pid).get(rank_var)
        if rank is not None and rank.isdigit():
            found[int(rank)] = pid
    return found


class _Watch:
    """The ranks of one run on this host, in the caller's selector: found by their marker
    and watched by pidfd (for their pids and the order in which they exit), and, for
    railgauge's tools, by the connection each makes to ``listener`` (``RG_MPI_WATCH``)
    and keeps until it dies: the order in which those close is the order in which the
    ranks began to die, which mpiexec's cleanup cannot blur."""

    def __init__(self, marker: str, rank_var: str, nranks: int, started: float,
                 sel: selectors.BaseSelector, local: bool,
                 listener: socket.socket | None = None):
        self.local = local                      # every rank runs on this host
        self.marker = marker
        self.rank_var = rank_var
        self.nranks = nranks
        self.started = started
        self.sel = sel
        self.listener = listener
        self.pids: dict[int, int] = {}
        self.fds: dict[int, int] = {}           # rank -> pidfd
        self.exits: list[tuple[float, int]] = []  # (monotonic time, rank), first first
        self.deaths: list[tuple[float, int]] = []  # connections closed, first first
        self.conns: list[socket.socket] = []
        self.next_scan = 0.0
        if listener is not None:
            sel.register(listener, selectors.EVENT_READ, ("listen", -1))

    def scan(self, now: float) -> None:
        if len(self.pids) >= self.nranks or now < self.next_scan:
            return
        # Fast while ranks start, then slowly (ranks on other hosts are never found).
        self.next_scan = now + (_TICK_S if now - self.started < 5.0 else 1.0)
        for rank, pid in _find_ranks(self.marker, self.rank_var, self.pids).items():
            self._add(rank, pid)

    def _add(self, rank: int, pid: int) -> None:
        if rank in self.pids:
            return
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return
        self.pids[rank] = pid
        self.fds[rank] = fd
        self.sel.register(fd, selectors.EVENT_READ, ("rank", rank))

    def event(self, kind: str, rank: int, fileobj: object) -> None:
        """One readable object of ours: a rank's pidfd, the listener or a connection."""
        now = time.monotonic()
        if kind == "rank":
            fd = self.fds.pop(rank)
            self.sel.unregister(fd)
            os.close(fd)
            self.exits.append((now, rank))
        elif kind == "listen":
            assert self.listener is not None
            with contextlib.suppress(BlockingIOError, OSError):
                conn, _ = self.listener.accept()
                creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                        struct.calcsize("3i"))
                pid = struct.unpack("3i", creds)[0]
                value = _environ(pid).get(self.rank_var, "")
                if not value.isdigit():
                    conn.close()
                    return
                self._add(int(value), pid)
                self.conns.append(conn)
                self.sel.register(conn, selectors.EVENT_READ, ("conn", int(value)))
        else:
            assert isinstance(fileobj, socket.socket)
            try:
                data = fileobj.recv(64)
            except OSError:
                data = b""
            if not data:
                self.sel.unregister(fileobj)
                fileobj.close()
                self.deaths.append((now, rank))

    @property
    def exit_order(self) -> list[int]:
        return [r for _, r in self.exits]

    def close(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(fd)
            os.close(fd)
        self.fds.clear()
        for conn in self.conns:
            conn.close()
        if self.listener is not None:
            self.listener.close()

    def kill_leftovers(self) -> None:
        """SIGKILL to ranks of this run that outlived their launcher."""
        for rank, pid in self.pids.items():
            if rank not in self.fds:
                continue
            if _environ(pid).get(MARKER) == self.marker:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


# ---- reading the launcher's report ---------------------------------------------------

_OMPI_SIGNAL = re.compile(
    r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)")
_OMPI_EXIT = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(\d+)")
_OMPI_IMPROPER = re.compile(
    r"due to process rank (\d+) with PID (\d+) on\s+node (\S+) exiting improperly")
_HYDRA_PID = re.compile(r"PID (\d+) RUNNING AT (\S+)\s*\n=\s*EXIT CODE: (\d+)")
_HYDRA_CODES = re.compile(r"Exit codes: ((?:\[[^\]]+\][ \t]*[\d,]+\s*)+)")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _describe(rank: int, pid: int | None, *, code: int | None = None,
              signum: int | None = None, launcher: str) -> tuple[str, int]:
    """(sentence, job return code) for a rank that failed."""
    who = f"rank {rank}" + (f" (pid {pid})" if pid else "")
    if signum is not None:
        return f"{who} was killed by signal {_signal_name(signum)} ({launcher})", 128 + signum
    return f"{who} exited with code {code} ({launcher})", code if code else 1


def _hydra_statuses(text: str) -> dict[int, int] | None:
    """Rank -> wait status from hydra's "Exit codes: [host] s0,s1,..." (one host only:
    with several, the order of ranks across hosts is not in the line)."""
    m = _HYDRA_CODES.search(text)
    if m is None:
        return None
    parts = re.findall(r"\[([^\]]+)\]\s*([\d,]+)", m.group(1))
    if len(parts) != 1:
        return None
    return {r: int(s) for r, s in enumerate(parts[0][1].split(",")) if s}


#: Exits this close together are taken as simultaneous: a rank's death is seen by its
#: peers (a closed socket) and by hydra (its PMI socket closes) while the kernel is still
#: tearing the rank down, so they may exit a fraction of a millisecond before it does.
_SIMULTANEOUS_S = 0.002
#: How railgauge's transports name a dead peer: "rank 1 (pid 1234) died while ...",
#: "... closed its connection", "... dropped its connection", "... is gone".
_PEER_NAMED = re.compile(
    r"rank (\d+) \(pid (\d+)\) (?:died|is gone|closed its connection|dropped its connection)")


def _reported_dead(text: str, watch: _Watch) -> list[int]:
    """Ranks that another rank's output reports by rank and pid (the pid checked against
    the one found here), as railgauge's transports word a dead peer; first mention first."""
    named = []
    for m in _PEER_NAMED.finditer(text):
        rank, pid = int(m.group(1)), int(m.group(2))
        if watch.pids.get(rank) == pid and rank not in named:
            named.append(rank)
    return named


def _first_failed(statuses: dict[int, int], watch: _Watch, text: str = "") -> int | None:
    """The rank whose failure ended a hydra job (statuses: rank -> wait status as
    ``-print-all-exitcodes`` gives them).

    Hydra kills the other ranks with SIGKILL once it sees one fail, may do so a fraction
    of a millisecond before the failed rank's own exit is complete, and its statuses of
    ranks that die early are not reliable (0 for a rank killed by a signal, 1 for one that
    exited with 3, seen here). So what this host saw comes first: a rank that a peer's
    output reports dead (railgauge's transports say "rank N (pid P) died", "... closed
    its connection"), first mention first; the first rank whose watch connection closed
    (railgauge's tools hold one until they die; in an MPI job ranks end together, after
    MPI_Finalize, so the first to go is the one that failed); a rank killed by a signal
    hydra does not send (SIGSEGV, SIGABRT, ...); a failed rank never seen here (on this
    host it must have died before it was found); else the first failed ranks to exit,
    exits within 2 ms counted as simultaneous, where one that exited with a code wins
    over hydra's SIGKILLs. Ranks on other hosts are named from hydra's statuses alone."""
    failed = [r for r, st in statuses.items() if st != 0]
    named = _reported_dead(text, watch)
    if named:
        return named[0]
    if watch.deaths:
        return watch.deaths[0][1]
    other = [r for r in failed if statuses[r] & 0x7F not in (0, signal.SIGKILL)]
    if other:
        return other[0]
    unseen = [r for r in failed if r not in watch.pids]
    if unseen and watch.local:
        return min(unseen)
    if not failed:
        return None
    times = [(t, r) for t, r in watch.exits if r in failed]
    if not times:
        return min(failed)
    t0 = times[0][0]
    first = [r for t, r in times if t - t0 <= _SIMULTANEOUS_S]
    return sorted(first, key=lambda r: ((statuses[r] & 0x7F) == signal.SIGKILL, r))[0]


def _ompi_report(text: str, watch: _Watch, launcher: str, launcher_rc: int
                 ) -> tuple[int | None, str | None, int, bool]:
    """(rank, sentence, job return code, killed by a signal) from mpirun's own report."""
    m = _OMPI_SIGNAL.search(text)
    if m is not None:
        rank = int(m.group(1))
        sent, rc = _describe(rank, watch.pids.get(rank) or int(m.group(2)) or None,
                             signum=int(m.group(4)), launcher=launcher)
        return rank, sent, rc, True
    m = _OMPI_EXIT.search(text)
    if m is not None:
        rank = int(m.group(1))
        sent, rc = _describe(rank, watch.pids.get(rank), code=int(m.group(2)),
                             launcher=launcher)
        return rank, sent, rc, False
    m = _OMPI_IMPROPER.search(text)
    if m is not None:
        rank = int(m.group(1))
        pid = watch.pids.get(rank)
        return rank, (f"rank {rank}" + (f" (pid {pid})" if pid else "") +
                      f" exited without calling MPI_Finalize ({launcher})"), \
            launcher_rc or 1, False
    return None, None, launcher_rc, False


def _name_failure(flavour: str, text: str, watch: _Watch, launcher_rc: int
                  ) -> tuple[int | None, str | None, int]:
    """(rank, sentence, job return code) for a failed job."""
    launcher = FLAVOURS[flavour].launcher
    if flavour == "openmpi":
        rank, sent, rc, signalled = _ompi_report(text, watch, launcher, launcher_rc)
        if rank is not None:
            # mpirun names the first rank it reaped. A rank that saw a peer die and
            # exited with an error at once can be reaped before that peer: where the
            # peer's watch connection closed first, or the rank's output names it, the
            # peer is the cause.
            first = [r for _, r in watch.deaths[:1] if r != rank]
            named = first or [r for r in _reported_dead(text, watch) if r != rank]
            if named and not signalled:
                dead = named[0]
                return dead, (f"rank {dead} (pid {watch.pids[dead]}) died, as its peers "
                              f"reported; then {sent}"), rc
            return rank, sent, rc
    else:
        statuses = _hydra_statuses(text)
        if statuses is not None or watch.deaths:
            rank = _first_failed(statuses or {}, watch, text)
            if rank is not None:
                st = (statuses or {}).get(rank, 0)
                pid = watch.pids.get(rank)
                if st == 0:
                    who = f"rank {rank}" + (f" (pid {pid})" if pid else "")
                    return rank, f"{who} died first ({launcher} reports no status for it)", \
                        launcher_rc or 1
                if st & 0x7F:
                    sent, rc = _describe(rank, pid, signum=st & 0x7F, launcher=launcher)
                else:
                    sent, rc = _describe(rank, pid, code=(st >> 8) & 0xFF, launcher=launcher)
                return rank, sent, rc
        m = _HYDRA_PID.search(text)
        if m is not None:
            pid = int(m.group(1))
            ranks = [r for r, p in watch.pids.items() if p == pid]
            if ranks:
                sent, rc = _describe(ranks[0], pid, signum=int(m.group(3)), launcher=launcher)
                return ranks[0], sent, rc
    if watch.exit_order:
        rank = watch.exit_order[0]
        return rank, (f"rank {rank} (pid {watch.pids.get(rank)}) exited first; {launcher} "
                      f"exited with status {launcher_rc}"), launcher_rc or 1
    tail = " | ".join(ln.strip() for ln in text.strip().splitlines()[-3:] if ln.strip())
    return None, f"{launcher} exited with status {launcher_rc}" + (f": {tail}" if tail
                                                                     else ""), launcher_rc or 1


# ---- running --------------------------------------------------------------------------


def run_mpi(
    flavour: str,
    argv: Sequence[str],
    nranks: int,
    *,
    hosts: Sequence[str] | None = None,
    hostfile: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    kill_grace_s: float = 2.0,
    bind: str = "auto",
    stdout: int | None = subprocess.PIPE,
    on_event: Callable[[str], None] | None = None,
) -> MpiResult:
    """Runs ``argv`` as ``nranks`` ranks under the flavour's launcher and waits.

    ``env`` goes to every rank (see ``mpi_command``). ``timeout_s`` ends the job (SIGTERM
    to the launcher, which ends its ranks; SIGKILL to it and to the ranks on this host
    after ``kill_grace_s``). ``stdout`` is captured into the result by default; pass
    None to let it through (stderr is always captured, and echoed by no one).

    Raises MpiError when the command cannot start (unknown flavour, no launcher).

    Examples
    --------
    >>> run_mpi("openmpi", ["true"], 2).returncode  # doctest: +SKIP
    0
    """
    if timeout_s is not None and not timeout_s > 0:
        raise MpiError(f"timeout_s must be > 0 or None, got {timeout_s!r}")
    fl = FLAVOURS.get(flavour)
    if fl is None:
        raise MpiError(f"unknown MPI flavour {flavour!r} (known: {', '.join(FLAVOURS)})")
    marker = uuid.uuid4().hex
    # The socket the ranks connect to (boot/mpi_load.c): its path is short (the limit of
    # a Unix socket's path is 108 bytes) and its directory private.
    watch_dir = tempfile.mkdtemp(prefix="rgmpi-")
    listener: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    assert listener is not None
    try:
        listener.bind(os.path.join(watch_dir, "w"))
        listener.listen(max(16, nranks))
        listener.setblocking(False)
    except OSError:
        listener.close()
        listener = None
    rank_env = {**(env or {}), MARKER: marker}
    # libinfinipath, which libfabric's psm provider brings into every tool, writes a
    # "<prog>.80s-<pid>,<host>.btr" backtrace file into the working directory of a rank
    # that dies by a signal (MPICH over UCX aborts the survivors of a dead rank).
    rank_env.setdefault("IPATH_NO_BACKTRACE", os.environ.get("IPATH_NO_BACKTRACE", "1"))
    if listener is not None:
        rank_env[WATCH] = os.path.join(watch_dir, "w")
    cmd = mpi_command(flavour, argv, nranks, hosts=hosts, hostfile=hostfile, env=rank_env,
                      bind=bind)
    child_env = {**os.environ, **rank_env}
    if flavour == "openmpi" and os.geteuid() == 0:
        child_env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        child_env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if on_event is not None:
        on_event("starting: " + " ".join(cmd))
    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, env=child_env, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        if listener is not None:
            listener.close()
        shutil.rmtree(watch_dir, ignore_errors=True)
        raise MpiError(f"cannot start {cmd[0]!r}: {exc.strerror or exc}") from exc
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    sel = selectors.DefaultSelector()
    watch = _Watch(marker, fl.rank_var, nranks, start, sel,
                   local=hosts is None and hostfile is None, listener=listener)
    if proc.stdout is not None:
        sel.register(proc.stdout, selectors.EVENT_READ, out_chunks)
    assert proc.stderr is not None
    sel.register(proc.stderr, selectors.EVENT_READ, err_chunks)
    timed_out = False
    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            watch.scan(now)
            for key, _ in sel.select(timeout=_TICK_S):
                if isinstance(key.data, tuple):
                    watch.event(key.data[0], key.data[1], key.fileobj)
                    continue
                data = os.read(key.fd, 1 << 16)
                if data:
                    key.data.append(data)
                else:
                    sel.unregister(key.fileobj)
            # Done when the launcher has exited and its pipes are drained; a rank that
            # outlived it may hold them open, so that wait is bounded (such a rank is
            # killed below).
            if proc.poll() is not None:
                if exited_at is None:
                    exited_at = now
                pipes_open = any(not isinstance(k.data, tuple) for k in sel.get_map().values())
                if not pipes_open or timed_out or now - exited_at > kill_grace_s:
                    break
            if timeout_s is not None and now - start > timeout_s and not timed_out:
                timed_out = True
                if on_event is not None:
                    on_event(f"timed out after {timeout_s:g} s: ending the job")
                _end(proc, kill_grace_s)
        proc.wait()
    finally:
        if proc.poll() is None:
            _end(proc, kill_grace_s)
        watch.kill_leftovers()
        watch.close()
        sel.close()
        shutil.rmtree(watch_dir, ignore_errors=True)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    wall = time.monotonic() - start
    out = b"".join(out_chunks).decode(errors="replace")
    err = b"".join(err_chunks).decode(errors="replace")
    launcher_rc = proc.returncode
    if launcher_rc < 0:
        launcher_rc = 128 - launcher_rc
    if timed_out:
        return MpiResult(_TIMEOUT_RC, None, f"timed out after {timeout_s:g} s", out, err,
                         wall, cmd, launcher_rc, True, dict(watch.pids))
    if launcher_rc == 0:
        return MpiResult(0, None, None, out, err, wall, cmd, 0, False, dict(watch.pids))
    rank, failure, rc = _name_failure(flavour, out + "\n" + err, watch, launcher_rc)
    if on_event is not None and failure is not None:
        on_event(failure)
    return MpiResult(rc, rank, failure, out, err, wall, cmd, launcher_rc, False,
                     dict(watch.pids))


def _end(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to the launcher (it ends its ranks), SIGKILL to its group after grace_s."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
