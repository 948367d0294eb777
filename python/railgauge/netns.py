"""Several hosts on one machine: network namespaces joined by rails (the testbed).

A *testbed* is H network namespaces, the hosts, joined by R rails, each rail one
network path of its own:

* with two hosts a rail is one veth pair between them; with more, every host has a
  veth into a Linux bridge for that rail, and the bridges live in one more namespace
  of their own (the switch), so nothing is added to the machine's own namespace;
* every host calls its end of rail r ``rail<r>`` (the same name on every host, so one
  setting serves every rank: ``RG_TCP_IFACE=rail0``, ``RG_OFI_IFACE=rail0``);
* rail r is the subnet 198.18.<r>.0/24 (with 256 and more rails the count goes on
  into 198.19.0.0/16: 198.18.0.0/15 is reserved for network benchmarking), host h has
  address .h+1 on it; ``lo`` is up on every host;
* a rail may be shaped to a rate with ``tc`` (tbf, or htb): on every host's end of
  it, and with a bridge also on the switch's port towards each host, so that each
  host sends and receives at most that rate, like a NIC of that speed on a switch.
  netem is not used (not every kernel has it).

Namespaces are named ``railgauge-<owner>-<random>-h<i>`` (and ``...-sw``), the owner
being the creating process (``<pid>.<start time>``) or ``tb`` for a testbed that
``railgauge testbed up`` leaves up; parallel runs therefore never collide.

Everything is removed on every exit path: ``testbed()`` is a context manager,
testbeds still up at interpreter exit are removed by an ``atexit`` hook, SIGTERM and
SIGHUP remove them before the process ends, and ``cleanup_stale()`` (which
``create()`` calls first) removes the leftovers of owners that died (SIGKILL).
Removing a testbed kills whatever still runs in its namespaces.

Building one needs root and the ``ip`` command (iproute2), plus ``tc`` for rates;
where they are missing, ``TestbedUnavailable`` says so (tests turn it into a skip).

    with testbed(hosts=2, rails=2, rates=["1gbit", "2gbit"]) as tb:
        launch(argv, 2, netns=tb.hosts, env=tb.rank_env())
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "PREFIX",
    "Rail",
    "Testbed",
    "TestbedError",
    "TestbedUnavailable",
    "check_available",
    "cleanup_stale",
    "create",
    "destroy",
    "format_rate",
    "host_address",
    "ip_command",
    "list_namespaces",
    "load_state",
    "parse_rate",
    "parse_rates",
    "rail_subnet",
    "state_path",
    "testbed",
]

PREFIX = "railgauge-"
SUPERNET = ipaddress.IPv4Network("198.18.0.0/15")
MAX_HOSTS = 254
MAX_RAILS = SUPERNET.num_addresses // 256
#: Owner of a testbed that outlives its creator (``railgauge testbed up``).
PERSISTENT_OWNER = "tb"
_EPHEMERAL = re.compile(rf"^{re.escape(PREFIX)}(\d+)\.(\d+)-[0-9a-f]+-(?:h\d+|sw)$")
_PERSISTENT = re.compile(rf"^{re.escape(PREFIX)}{PERSISTENT_OWNER}-[0-9a-f]+-(?:h\d+|sw)$")
_CMD_TIMEOUT_S = 30.0
_STATE_ENV = "RAILGAUGE_TESTBED_STATE"
_DEFAULT_STATE = Path("/run/railgauge/testbed.json")

# tc's rate units (tc(8)): bits with SI or IEC prefixes, bytes ("bps") likewise.
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_RATE_UNITS: dict[str, int] = {
    "": 1, "bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12,
    "kibit": 2**10, "mibit": 2**20, "gibit": 2**30, "tibit": 2**40,
    "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9, "tbps": 8 * 10**12,
    "kibps": 8 * 2**10, "mibps": 8 * 2**20, "gibps": 8 * 2**30, "tibps": 8 * 2**40,
}
_MIN_RATE_BPS = 8_000


class TestbedError(RuntimeError):
    """Building, using or removing a testbed failed; the message names the step."""

    __test__ = False  # not a pytest test class


class TestbedUnavailable(TestbedError):
    """This machine cannot build a testbed (no root, no ``ip``, no namespaces)."""

    __test__ = False


# ---- names and addresses ---------------------------------------------------------------


def rail_subnet(rail: int) -> ipaddress.IPv4Network:
    """The subnet of rail ``rail``: 198.18.<rail>.0/24, continuing into 198.19."""
    if not 0 <= rail < MAX_RAILS:
        raise ValueError(f"rail {rail} is outside 0..{MAX_RAILS - 1}")
    base = int(SUPERNET.network_address) + 256 * rail
    return ipaddress.IPv4Network((base, 24))


def host_address(rail: int, host: int) -> ipaddress.IPv4Address:
    """Host ``host``'s address on rail ``rail`` (.host+1 of the rail's subnet)."""
    if not 0 <= host < MAX_HOSTS:
        raise ValueError(f"host {host} is outside 0..{MAX_HOSTS - 1}")
    return rail_subnet(rail)[host + 1]


def parse_rate(text: str) -> int:
    """A tc rate ("1gbit", "500mbit", "100mbps" = bytes, "2.5gbit") in bits per second.

    Raises ValueError naming the text when it is malformed or below 8 kbit."""
    m = _RATE.match(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _RATE_UNITS:
        raise ValueError(
            f"rate {text!r} is not a tc rate such as 1gbit, 500mbit or 100mbps (bytes)")
    bps = int(float(m.group(1)) * _RATE_UNITS[unit])
    if bps < _MIN_RATE_BPS:
        raise ValueError(f"rate {text!r} is below the smallest rate, 8kbit")
    return bps


def parse_rates(text: str | Sequence[str | None] | None, rails: int) -> list[int | None]:
    """Per-rail rates in bits/s (None: unshaped) from "1gbit,2gbit" or a list.

    One rate applies to every rail; otherwise there must be one per rail. "none" (or
    "-", or an empty item) leaves a rail unshaped."""
    if text is None:
        return [None] * rails
    items = text.split(",") if isinstance(text, str) else list(text)
    if len(items) == 1:
        items = items * rails
    if len(items) != rails:
        raise ValueError(f"{len(items)} rates for {rails} rails: give one rate, or one per rail")
    out: list[int | None] = []
    for item in items:
        if item is None or item.strip().lower() in ("", "none", "-"):
            out.append(None)
        else:
            out.append(parse_rate(item))
    return out


def format_rate(bps: int | None) -> str:
    """1000000000 -> "1 Gbit/s"; None -> "unshaped"."""
    if bps is None:
        return "unshaped"
    for unit, scale in (("Tbit/s", 10**12), ("Gbit/s", 10**9), ("Mbit/s", 10**6),
                        ("kbit/s", 10**3)):
        if bps >= scale:
            return f"{bps / scale:g} {unit}"
    return f"{bps} bit/s"


# ---- commands ----------------------------------------------------------------------------


def ip_command() -> str | None:
    """The path of iproute2's ``ip``, also where sbin is not on PATH; None if missing."""
    return _find_tool("ip")


def _find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/sbin", "/sbin", "/usr/bin", "/bin"):
        cand = Path(d) / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        res = subprocess.run(list(argv), capture_output=True, text=True,
                             timeout=_CMD_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TestbedError(f"`{' '.join(argv)}` failed: {exc}") from None
    if check and res.returncode != 0:
        msg = (res.stderr.strip() or res.stdout.strip() or f"exit {res.returncode}")
        raise TestbedError(f"`{' '.join(argv)}` failed: {msg.splitlines()[-1]}")
    return res


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    ip = ip_command()
    if ip is None:
        raise TestbedUnavailable("the `ip` command (iproute2) is not installed "
                                 "(apt-get install iproute2)")
    return _run([ip, *args], check=check)


_probe_lock = threading.Lock()
_probe_result: list[str | None] = []


def check_available(*, need_tc: bool = False) -> None:
    """Raises TestbedUnavailable with the reason when this machine cannot build a
    testbed: not Linux, not root, no ``ip`` (or no ``tc`` where rates are asked
    for), or network namespaces cannot be made (a probe namespace is made and
    removed once per process)."""
    if not sys.platform.startswith("linux"):
        raise TestbedUnavailable("network namespaces need Linux")
    if ip_command() is None:
        raise TestbedUnavailable("the `ip` command (iproute2) is not installed "
                                 "(apt-get install iproute2)")
    if need_tc and _find_tool("tc") is None:
        raise TestbedUnavailable("rates need the `tc` command (iproute2), which is not "
                                 "installed")
    if os.geteuid() != 0:
        raise TestbedUnavailable("network namespaces need root (CAP_SYS_ADMIN and "
                                 "CAP_NET_ADMIN); run as root")
    with _probe_lock:
        if not _probe_result:
            name = f"{PREFIX}{_owner_tag()}-{secrets.token_hex(3)}-h0"
            reason: str | None = None
            try:
                _ip("netns", "add", name)
            except TestbedError as exc:
                reason = f"cannot create a network namespace here: {exc}"
            finally:
                _ip("netns", "del", name, check=False)
            _probe_result.append(reason)
        if _probe_result[0] is not None:
            raise TestbedUnavailable(_probe_result[0])


def list_namespaces() -> list[str]:
    """Every named network namespace (``ip netns list``)."""
    res = _ip("netns", "list", check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def _proc_start_time(pid: int) -> int | None:
    """The start time of a live process (clock ticks since boot), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    # After the command: state is field 3, starttime field 22 of stat(5).
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _owner_tag() -> str:
    pid = os.getpid()
    return f"{pid}.{_proc_start_time(pid) or 0}"


def _owner_alive(pid: int, start: int) -> bool:
    now = _proc_start_time(pid)
    return now is not None and (start == 0 or now == start)


# ---- the testbed -------------------------------------------------------------------------


@dataclass(frozen=True)
class Rail:
    """One network path among all hosts."""

    index: int
    ifname: str                 # the interface name on every host ("rail0")
    subnet: str                 # "198.18.0.0/24"
    addresses: tuple[str, ...]  # host h's address at [h]
    rate_bps: int | None        # None: unshaped

    @property
    def prefixlen(self) -> int:
        return ipaddress.IPv4Network(self.subnet).prefixlen


@dataclass
class Testbed:
    """A built testbed: namespace names, rails, and how it was shaped."""

    __test__ = False

    tag: str
    hosts: list[str]
    rails: list[Rail]
    switch: str | None = None
    shaper: str = "tbf"
    persistent: bool = False
    created: float = field(default_factory=time.time)

    @property
    def namespaces(self) -> list[str]:
        """Every namespace of the testbed (hosts, then the switch)."""
        return [*self.hosts, *([self.switch] if self.switch else [])]

    def address(self, host: int, rail: int = 0) -> str:
        """Host ``host``'s address on rail ``rail``."""
        return self.rails[rail].addresses[host]

    def rank_env(self, rail: int = 0) -> dict[str, str]:
        """Settings with which the tcp and ofi transports use rail ``rail``: the same
        for every rank, each finds its own address."""
        name = self.rails[rail].ifname
        return {"RG_TCP_IFACE": name, "RG_OFI_IFACE": name}

    def exec_argv(self, host: int, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside host ``host`` (``ip netns exec``)."""
        ip = ip_command()
        if ip is None:
            raise TestbedUnavailable("the `ip` command (iproute2) is not installed")
        return [ip, "netns", "exec", self.hosts[host], *argv]

    def openmpi_launch_args(self, folder: Path) -> list[str]:
        """mpirun.openmpi's arguments that place one rank on each host of the testbed, for
        an mpirun started in the first host's namespace (``exec_argv(0, ...)``): a hostfile
        and an rsh agent, written into ``folder``. Rank 0 runs beside mpirun (this
        machine's name); host h >= 1 is "nshost<h>", whose daemon the agent starts in that
        host's namespace (the namespace names may hold dots, which Open MPI reads as the
        start of a domain, so the hostfile does not use them)."""
        agent, hostfile = Path(folder) / "nsagent", Path(folder) / "ns-hosts"
        cases = "".join(f'  nshost{h}) ns="{ns}" ;;\n' for h, ns in enumerate(self.hosts)
                        if h > 0)
        agent.write_text('#!/bin/sh\nhost="$1"; shift\ncase "$host" in\n' + cases
                         + '  *) echo "nsagent: unknown host $host" >&2; exit 1 ;;\nesac\n'
                         'exec ip netns exec "$ns" sh -c "$*"\n')
        agent.chmod(0o755)
        hostfile.write_text(f"{socket.gethostname()} slots=1\n" + "".join(
            f"nshost{h} slots=1\n" for h in range(1, len(self.hosts))))
        return ["--hostfile", str(hostfile), "--mca", "plm_rsh_agent", str(agent),
                "--mca", "routed", "direct"]

    def run(self, host: int, argv: Sequence[str], **kwargs: Any
            ) -> subprocess.CompletedProcess[str]:
        """subprocess.run of ``argv`` inside host ``host`` (text mode)."""
        kwargs.setdefault("text", True)
        return subprocess.run(self.exec_argv(host, argv), check=False, **kwargs)

    def popen(self, host: int, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """subprocess.Popen of ``argv`` inside host ``host``."""
        return subprocess.Popen(self.exec_argv(host, argv), **kwargs)

    def set_link(self, rail: int, up: bool, host: int | None = None) -> None:
        """Takes rail ``rail`` down or up on one host (or every host): a failed link."""
        for h in range(len(self.hosts)) if host is None else [host]:
            _ip("-n", self.hosts[h], "link", "set", self.rails[rail].ifname,
                "up" if up else "down")

    def set_rate(self, rail: int, rate: str | int | None) -> None:
        """Shapes rail ``rail`` to a new rate (tc text or bits/s; None: unshaped)."""
        bps = parse_rate(rate) if isinstance(rate, str) else rate
        _shape_rail(self, rail, bps)
        rails = list(self.rails)
        old = rails[rail]
        rails[rail] = Rail(old.index, old.ifname, old.subnet, old.addresses, bps)
        self.rails = rails

    def missing(self) -> list[str]:
        """The namespaces of this testbed that do not exist (any more)."""
        have = set(list_namespaces())
        return [ns for ns in self.namespaces if ns not in have]

    def to_json(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "hosts": self.hosts,
            "switch": self.switch,
            "shaper": self.shaper,
            "persistent": self.persistent,
            "created": self.created,
            "rails": [{**asdict(r), "addresses": list(r.addresses),
                       "rate": format_rate(r.rate_bps)} for r in self.rails],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Testbed:
        rails = [Rail(index=int(r["index"]), ifname=str(r["ifname"]), subnet=str(r["subnet"]),
                      addresses=tuple(str(a) for a in r["addresses"]),
                      rate_bps=None if r.get("rate_bps") is None else int(r["rate_bps"]))
                 for r in data["rails"]]
        return cls(tag=str(data["tag"]), hosts=[str(h) for h in data["hosts"]], rails=rails,
                   switch=data.get("switch"), shaper=str(data.get("shaper", "tbf")),
                   persistent=bool(data.get("persistent", False)),
                   created=float(data.get("created", 0.0)))


# ---- shaping -----------------------------------------------------------------------------


def _shape_dev(ns: str, dev: str, bps: int | None, shaper: str) -> None:
    tc = _find_tool("tc")
    if tc is None:
        raise TestbedUnavailable("rates need the `tc` command (iproute2)")
    # Whatever was there goes first; "no qdisc" errors of an unshaped device are fine.
    _run([tc, "-n", ns, "qdisc", "del", "dev", dev, "root"], check=False)
    if bps is None:
        return
    # A bucket of 2 ms at the rate (at least 32 KiB, more than one GSO packet's
    # share): large enough that the token bucket does not throttle below the rate.
    burst = max(bps // 8 // 500, 32 * 1024)
    if shaper == "tbf":
        _run([tc, "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{bps}bit",
              "burst", str(burst), "latency", "50ms"])
    else:
        _run([tc, "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb",
              "default", "1"])
        _run([tc, "-n", ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1",
              "htb", "rate", f"{bps}bit", "ceil", f"{bps}bit", "burst", str(burst),
              "cburst", str(burst)])


def _shape_rail(tb: Testbed, rail: int, bps: int | None) -> None:
    ifname = tb.rails[rail].ifname
    for ns in tb.hosts:
        _shape_dev(ns, ifname, bps, tb.shaper)
    if tb.switch is not None:
        for h in range(len(tb.hosts)):
            _shape_dev(tb.switch, _switch_port(h, rail), bps, tb.shaper)


def _switch_port(host: int, rail: int) -> str:
    return f"h{host}r{rail}"


# ---- building and removing ---------------------------------------------------------------

_live_lock = threading.RLock()
_live: dict[str, Testbed] = {}
_old_handlers: dict[int, Any] = {}
_atexit_done = False
_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGTERM/SIGHUP: remove every testbed of this process, then do what the
    signal would have done."""
    old = _old_handlers.get(signum, signal.SIG_DFL)
    _remove_all_live()
    _restore_handlers()
    if callable(old):
        old(signum, frame)
    elif old != signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    global _atexit_done
    if not _atexit_done:
        atexit.register(_remove_all_live)
        _atexit_done = True
    if _old_handlers or threading.current_thread() is not threading.main_thread():
        return
    for signum in _SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            _old_handlers[signum] = signal.signal(signum, _on_signal)


def _restore_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, old in list(_old_handlers.items()):
        # Only where nobody replaced ours in the meantime.
        if signal.getsignal(signum) is _on_signal:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signum, old)
        del _old_handlers[signum]


def _track(tb: Testbed) -> None:
    with _live_lock:
        _live[tb.tag] = tb
        _install_handlers()


def _untrack(tb: Testbed) -> None:
    with _live_lock:
        _live.pop(tb.tag, None)
        if not _live:
            _restore_handlers()


def _remove_all_live() -> None:
    with _live_lock:
        for tb in list(_live.values()):
            with contextlib.suppress(Exception):
                destroy(tb)


def _delete_namespace(name: str) -> None:
    """Kills what runs in namespace ``name`` and deletes it (gone already: fine)."""
    res = _ip("netns", "pids", name, check=False)
    for tok in res.stdout.split():
        if tok.isdigit() and int(tok) != os.getpid():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(tok), signal.SIGKILL)
    _ip("netns", "del", name, check=False)


def destroy(tb: Testbed) -> None:
    """Removes every namespace of ``tb`` (their veths, bridges and qdiscs go with
    them) and kills what still runs in them. Removing a removed testbed is fine.

    Raises TestbedError if a namespace is still there afterwards."""
    try:
        for ns in tb.namespaces:
            _delete_namespace(ns)
        left = [ns for ns in tb.namespaces if ns in set(list_namespaces())]
        if left:
            raise TestbedError(f"could not remove network namespace(s) {', '.join(left)}")
    finally:
        _untrack(tb)


def create(hosts: int = 2, rails: int = 1,
           rates: str | Sequence[str | None] | None = None, *,
           shaper: str = "tbf", persistent: bool = False) -> Testbed:
    """Builds a testbed of ``hosts`` namespaces and ``rails`` rails (see the module's
    text); ``rates`` as parse_rates() takes them. ``persistent`` names it for
    ``railgauge testbed`` (owner ``tb``): cleanup_stale() leaves it alone, and it is
    not removed at exit.

    Raises ValueError for bad arguments, TestbedUnavailable where no testbed can be
    built, TestbedError when a step fails (what was built is removed again)."""
    if isinstance(hosts, bool) or not isinstance(hosts, int) or not 2 <= hosts <= MAX_HOSTS:
        raise ValueError(f"hosts must be 2..{MAX_HOSTS}, not {hosts!r}")
    if isinstance(rails, bool) or not isinstance(rails, int) or not 1 <= rails <= MAX_RAILS:
        raise ValueError(f"rails must be 1..{MAX_RAILS}, not {rails!r}")
    if shaper not in ("tbf", "htb"):
        raise ValueError(f"shaper must be tbf or htb, not {shaper!r}")
    bps = parse_rates(rates, rails)
    check_available(need_tc=any(b is not None for b in bps))
    cleanup_stale()

    owner = PERSISTENT_OWNER if persistent else _owner_tag()
    tag = f"{owner}-{secrets.token_hex(3)}"
    names = [f"{PREFIX}{tag}-h{h}" for h in range(hosts)]
    switch = f"{PREFIX}{tag}-sw" if hosts > 2 else None
    rail_list = [
        Rail(index=r, ifname=f"rail{r}", subnet=str(rail_subnet(r)),
             addresses=tuple(str(host_address(r, h)) for h in range(hosts)), rate_bps=bps[r])
        for r in range(rails)
    ]
    tb = Testbed(tag=tag, hosts=names, rails=rail_list, switch=switch, shaper=shaper,
                 persistent=persistent)
    # Tracked before the first namespace exists, so that a signal in the middle of
    # building removes what is there.
    _track(tb)
    try:
        for ns in tb.namespaces:
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        for rail in rail_list:
            _build_rail(tb, rail)
            if rail.rate_bps is not None:
                _shape_rail(tb, rail.index, rail.rate_bps)
    except BaseException:
        with contextlib.suppress(Exception):
            destroy(tb)
        raise
    if persistent:
        # Left up on purpose: not removed at this process's exit.
        _untrack(tb)
    return tb


def _build_rail(tb: Testbed, rail: Rail) -> None:
    r, ifname = rail.index, rail.ifname
    if tb.switch is None:
        # Created straight inside the two namespaces: nothing touches this one.
        _ip("link", "add", ifname, "netns", tb.hosts[0], "type", "veth",
            "peer", "name", ifname, "netns", tb.hosts[1])
    else:
        bridge = f"br{r}"
        _ip("-n", tb.switch, "link", "add", bridge, "type", "bridge")
        _ip("-n", tb.switch, "link", "set", bridge, "up")
        for h, ns in enumerate(tb.hosts):
            port = _switch_port(h, r)
            _ip("link", "add", ifname, "netns", ns, "type", "veth",
                "peer", "name", port, "netns", tb.switch)
            _ip("-n", tb.switch, "link", "set", port, "master", bridge)
            _ip("-n", tb.switch, "link", "set", port, "up")
    for h, ns in enumerate(tb.hosts):
        _ip("-n", ns, "addr", "add", f"{rail.addresses[h]}/{rail.prefixlen}", "dev", ifname)
        _ip("-n", ns, "link", "set", ifname, "up")


@contextlib.contextmanager
def testbed(hosts: int = 2, rails: int = 1,
            rates: str | Sequence[str | None] | None = None, *,
            shaper: str = "tbf") -> Iterator[Testbed]:
    """create() on entry, destroy() on every way out (an exception, Ctrl-C; SIGTERM,
    SIGHUP and interpreter exit through the hooks)."""
    tb = create(hosts, rails, rates, shaper=shaper)
    try:
        yield tb
    finally:
        destroy(tb)


testbed.__test__ = False  # type: ignore[attr-defined]


def cleanup_stale(*, include_persistent: bool = False,
                  on_remove: Callable[[str], None] | None = None) -> list[str]:
    """Removes the namespaces of testbeds whose owner process is gone (by pid and
    its start time, so a reused pid does not keep them), and with
    ``include_persistent`` also those of ``railgauge testbed up``. Returns their names."""
    removed = []
    for name in list_namespaces():
        m = _EPHEMERAL.match(name)
        stale = (m is not None and not _owner_alive(int(m.group(1)), int(m.group(2)))) or (
            include_persistent and _PERSISTENT.match(name) is not None)
        if stale:
            _delete_namespace(name)
            removed.append(name)
            if on_remove is not None:
                on_remove(name)
    return removed


# ---- the state of `railgauge testbed up` ----------------------------------------------


def state_path() -> Path:
    """Where ``railgauge testbed up`` records its testbed ($RAILGAUGE_TESTBED_STATE,
    else /run/railgauge/testbed.json: on tmpfs, gone at reboot like the namespaces)."""
    env = os.environ.get(_STATE_ENV)
    return Path(env) if env else _DEFAULT_STATE


def save_state(tb: Testbed) -> Path:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(tb.to_json(), indent=2) + "\n")
    tmp.replace(path)
    return path


def load_state() -> Testbed | None:
    """The testbed ``railgauge testbed up`` built, or None.

    Raises TestbedError when the state file is unreadable."""
    path = state_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TestbedError(f"unreadable testbed state {path}: {exc}") from None
    try:
        return Testbed.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise TestbedError(f"unreadable testbed state {path}: {exc!r}") from None


def clear_state() -> None:
    state_path().unlink(missing_ok=True)
