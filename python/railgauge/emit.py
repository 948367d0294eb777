"""Measured choices written as the settings of the MPI stacks people run (issue 21, items 2
and 3).

Plain functions that never print. ``emit_rails`` turns the rails' measured rates (a
``rails.json`` of `railgauge gauge --rails`, or `railgauge rails bench --weights measure`)
into Open MPI's ``btl_tcp_if_include`` and ``btl_tcp_bandwidth_<if>`` (an MCA parameter
file), or into UCX's ``UCX_NET_DEVICES`` and rail counts (an environment file, for UCX
itself and for MPICH's ch4:ucx). ``emit_rxwin`` turns the receive window that `railgauge
tune rxwin` chose on the simulated workload into MVAPICH2's ``MV2_SRQ_*`` settings or
UCX's receive-queue lengths (for UCX, MPICH over UCX and Open MPI's pml ucx). Every
setting comes with its reason; what a stack cannot express is said in the reasons.

Bad input (an unknown stack or version, a rails file that cannot be read) raises
:class:`~railgauge.export.files.ExportError`, which the CLI prints in one line with exit 2.
"""

from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railgauge.export.files import ExportError

RAILS_STACKS: tuple[str, ...] = ("openmpi", "ucx", "mpich")
RXWIN_STACKS: tuple[str, ...] = ("mvapich2", "ucx", "openmpi")

#: The releases whose settings are written here, per stack: (oldest, newest) major.minor,
#: both included. Open MPI: the TCP BTL's per-interface bandwidth since 1.x, unchanged
#: through 5.0 and main (opal/mca/btl/tcp/btl_tcp_component.c); its pml ucx since 3.0.
#: UCX: MAX_RNDV_RAILS and MAX_EAGER_RAILS (src/ucp/core/ucp_context.c) since 1.6. MPICH:
#: the ch4 device with UCX since 3.3. MVAPICH2: MV2_SRQ_* in the OFA-IB-CH3 interface of
#: its 2.x releases (its user guide).
KNOWN_VERSIONS: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "openmpi": ((1, 8), (6, 99)),
    "ucx": ((1, 6), (1, 99)),
    "mpich": ((3, 3), (4, 99)),
    "mvapich2": ((2, 0), (2, 99)),
}
_OMPI_UCX_SINCE = (3, 0)
#: The shortest receive queue UCX's InfiniBand transports work with.
UCX_RX_QUEUE_MIN = 4

#: InfiniBand's RNR NAK timer codes (IBTA table 45): code -> milliseconds.
IB_RNR_TIMER_MS: tuple[tuple[int, float], ...] = (
    (1, 0.01), (2, 0.02), (3, 0.03), (4, 0.04), (5, 0.06), (6, 0.08), (7, 0.12),
    (8, 0.16), (9, 0.24), (10, 0.32), (11, 0.48), (12, 0.64), (13, 0.96), (14, 1.28),
    (15, 1.92), (16, 2.56), (17, 3.84), (18, 5.12), (19, 7.68), (20, 10.24), (21, 15.36),
    (22, 20.48), (23, 30.72), (24, 40.96), (25, 61.44), (26, 81.92), (27, 122.88),
    (28, 163.84), (29, 245.76), (30, 327.68), (31, 491.52), (0, 655.36))


@dataclass
class Emitted:
    """The settings for one stack: ``settings`` (name -> value, in the order written),
    one reason per line of ``reasons``, ``warnings`` (printed on stderr, exit 0) and
    ``text``, the file's text."""

    stack: str
    version: str
    settings: dict[str, str] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    text: str = ""

    def to_json(self, file: str | None) -> dict[str, Any]:
        """The contract's object: the file's text under ``content`` when there is no file."""
        return {"stack": self.stack, "version": self.version, "settings": dict(self.settings),
                "file": file, "content": self.text if file is None else None,
                "reasons": list(self.reasons)}


# ---- the stack and its version ------------------------------------------------------------

def _parse_version(text: str) -> tuple[int, int] | None:
    m = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.\d+)?(?:[a-z]+\d*)?(?:[-+~][\w.+~-]*)?\s*$", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _run_quiet(argv: Sequence[str]) -> str:
    if shutil.which(argv[0]) is None:
        return ""
    try:
        res = subprocess.run(list(argv), capture_output=True, text=True, timeout=30,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout + res.stderr


def _ucx_library_version() -> str | None:
    """UCX's version from libucp itself (`ucx_info` is in a package of its own)."""
    for name in ("libucp.so.0", "libucp.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        fn = lib.ucp_get_version_string
        fn.restype = ctypes.c_char_p
        raw = fn()
        return raw.decode() if raw else None
    return None


def installed_version(stack: str) -> str | None:
    """The installed stack's version (``ompi_info``, ``mpichversion``, ``ucx_info -v`` or
    libucp, ``mpiname``), or None where it is not installed."""
    patterns = {
        "openmpi": (["ompi_info", "--version"], r"Open MPI v?(\d+\.\d+(?:\.\d+)?)"),
        "mpich": (["mpichversion"], r"MPICH Version:\s*(\d+\.\d+(?:\.\d+)?)"),
        "ucx": (["ucx_info", "-v"], r"Version (\d+\.\d+(?:\.\d+)?)"),
        "mvapich2": (["mpiname", "-a"], r"MVAPICH2\s+(\d+\.\d+(?:\.\d+)?)"),
    }
    argv, pat = patterns[stack]
    m = re.search(pat, _run_quiet(argv))
    if m:
        return m.group(1)
    if stack == "ucx":
        return _ucx_library_version()
    return None


def mpich_device() -> str | None:
    """The installed MPICH's device (``ch4:ucx``, ``ch4:ofi``, ``ch3:nemesis``) or None."""
    m = re.search(r"MPICH Device:\s*(\S+)", _run_quiet(["mpichversion"]))
    return m.group(1) if m else None


def resolve_version(stack: str, given: str | None, stacks: Sequence[str]) -> str:
    """The version to write for: ``given`` (--stack-version) or the installed one, checked
    against :data:`KNOWN_VERSIONS`. ExportError names an unknown stack or version."""
    if stack not in stacks:
        raise ExportError(f"--emit {stack!r}: unknown stack (known: {', '.join(stacks)})")
    version = given if given is not None else installed_version(stack)
    if version is None:
        raise ExportError(f"--emit {stack}: {stack} is not installed here (no version found); "
                          "give --stack-version")
    parsed = _parse_version(version)
    lo, hi = KNOWN_VERSIONS[stack]
    if parsed is None or not lo <= parsed <= hi:
        raise ExportError(f"--stack-version {version!r}: not a {stack} release these "
                          f"settings are known for ({lo[0]}.{lo[1]} to {hi[0]}.x)")
    if stack == "openmpi" and stacks is RXWIN_STACKS and parsed < _OMPI_UCX_SINCE:
        raise ExportError(f"--stack-version {version}: Open MPI has its pml ucx since 3.0")
    return version


# ---- the file's text ----------------------------------------------------------------------

def _comment(text: str) -> list[str]:
    """A reason as comment lines of at most about 92 characters."""
    out, line = [], "#"
    for word in text.split():
        if len(line) + 1 + len(word) > 92 and line != "#":
            out.append(line)
            line = "#"
        line += " " + word
    out.append(line)
    return out


def _render(em: Emitted, head: list[str], style: str, why: dict[str, str]) -> str:
    """The file: head comments, each setting after its reason, and the reasons that belong
    to no single setting at the end. style "mca": ``name = value`` (an MCA parameter
    file); "env": ``export NAME=value`` (a file to source)."""
    lines = [*(c for h in head for c in _comment(h)), ""]
    for name, value in em.settings.items():
        if name in why:
            lines += _comment(why[name])
        lines.append(f"{name} = {value}" if style == "mca" else f"export {name}={value}")
        lines.append("")
    rest = [r for r in em.reasons if r not in why.values()]
    for r in rest:
        lines += _comment(r)
    return "\n".join(lines).rstrip("\n") + "\n"


# ---- rails ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RailRate:
    """One rail as measured: its name (an interface, an address or a subnet, as
    RG_RAILS_LIST takes it), railgauge's transport over it, and its bandwidth (MB/s)."""

    name: str
    transport: str
    bandwidth_MBps: float


def read_rails_json(path: Path) -> list[RailRate]:
    """The rails of a rails.json (`railgauge gauge --rails`). ExportError names a file that
    cannot be read or is not a rails.json."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ExportError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise ExportError(f"{path}: not JSON ({exc})") from None
    rails = doc.get("rails") if isinstance(doc, dict) else None
    if not isinstance(rails, list) or not rails:
        raise ExportError(f"{path}: not a rails.json (no \"rails\" list; railgauge gauge "
                          "--rails writes one)")
    out = []
    for i, r in enumerate(rails):
        try:
            bw = float(r["bandwidth_MBps"])
            name = str(r["name"])
        except (KeyError, TypeError, ValueError):
            raise ExportError(f"{path}: rail {i} has no name or bandwidth_MBps") from None
        if not bw > 0:
            raise ExportError(f"{path}: rail {name} has bandwidth {bw:g} MB/s: no rate")
        out.append(RailRate(name, str(r.get("transport", f"tcp:{name}")), bw))
    return out


def _local_interfaces() -> list[tuple[str, ipaddress.IPv4Interface]]:
    """(interface, address/prefix) of this host's IPv4 addresses, from `ip -j addr`."""
    text = _run_quiet(["ip", "-j", "-4", "addr", "show"])
    try:
        doc = json.loads(text) if text.strip().startswith("[") else []
    except ValueError:
        return []
    out = []
    for link in doc:
        for a in link.get("addr_info", []):
            try:
                out.append((str(link["ifname"]),
                            ipaddress.IPv4Interface(f"{a['local']}/{a['prefixlen']}")))
            except (KeyError, ValueError):
                continue
    return out


def rail_interface(name: str) -> str | None:
    """The interface name of a rail given as an interface, an address or a subnet; None
    where an address or subnet is on no interface of this host."""
    try:
        net = ipaddress.ip_network(name, strict=False)
    except ValueError:
        return name
    for ifname, iface in _local_interfaces():
        if iface.ip in net or iface.network == net:
            return ifname
    return None


def _rails_transport_warnings(rails: Sequence[RailRate], stack_tl: str) -> list[str]:
    out = []
    for r in rails:
        if not r.transport.startswith("tcp"):
            out.append(f"rail {r.name} was measured over {r.transport}, but {stack_tl} uses "
                       "TCP sockets: its rate over TCP may differ")
    return out


def emit_rails(rails: Sequence[RailRate], stack: str, version: str | None = None,
               *, source: str = "rails.json") -> Emitted:
    """The rails' measured rates as ``stack``'s settings (openmpi, ucx or mpich)."""
    version = resolve_version(stack, version, RAILS_STACKS)
    if not rails:
        raise ExportError("no rails to emit settings for")
    em = Emitted(stack, version)
    ifnames = [rail_interface(r.name) for r in rails]
    rates = ", ".join(f"{r.name} {r.bandwidth_MBps:.1f} MB/s" for r in rails)
    if stack == "openmpi":
        return _rails_openmpi(em, rails, ifnames, rates, source)
    return _rails_ucx(em, rails, ifnames, rates, source)


def _rails_openmpi(em: Emitted, rails: Sequence[RailRate], ifnames: list[str | None],
                   rates: str, source: str) -> Emitted:
    why: dict[str, str] = {}
    em.settings["pml"] = "ob1"
    why["pml"] = ("pml: ob1, the messaging layer that sends over the BTLs and splits by their "
                  "bandwidths; the cm or ucx layers, which a site's defaults may pick, would "
                  "not use the TCP BTL's rails at all.")
    em.reasons.append(why["pml"])
    em.settings["btl_tcp_if_include"] = ",".join(r.name for r in rails)
    why["btl_tcp_if_include"] = (
        "btl_tcp_if_include: the rails measured (interfaces or CIDR subnets), so that the TCP "
        "BTL opens one module on each of them and on nothing else.")
    em.reasons.append(why["btl_tcp_if_include"])
    for r, ifname in zip(rails, ifnames, strict=True):
        mbps = max(1, round(r.bandwidth_MBps * 8))
        if ifname is None:
            em.warnings.append(f"rail {r.name}: on no interface of this host, so its "
                               "btl_tcp_bandwidth_<interface> is not written (run the emit "
                               "on a host of the rails, or give the rails by interface)")
            continue
        key = f"btl_tcp_bandwidth_{ifname}"
        em.settings[key] = str(mbps)
        why[key] = (f"{key}: {r.bandwidth_MBps:.1f} MB/s measured on {r.name} = {mbps} "
                    "Mbit/s (the unit of btl_bandwidth). Open MPI's ob1 splits a large "
                    "message among the TCP modules in proportion to their btl_bandwidth (bml "
                    "r2: weight = bandwidth / total); left unset, it takes the link speed "
                    "ethtool reports (or 100), not the rate the rail delivers.")
        em.reasons.append(why[key])
    em.reasons.append("btl_tcp_latency_<interface> is left at its default: ob1 sends eager "
                      "messages only on the modules of the lowest latency, so a different "
                      "latency per rail would take the others out of the eager path.")
    em.warnings += _rails_transport_warnings(rails, "Open MPI's btl tcp")
    head = [f"Open MPI {em.version} MCA parameters from the rails' measured rates "
            f"({source}: {rates}), written by railgauge rails emit.",
            "Load with: mpirun --mca mca_base_param_files THIS_FILE ... (which replaces the "
            "default list of parameter files: add theirs after a comma to keep them), or "
            "append the lines to $HOME/.openmpi/mca-params.conf; each is also --mca NAME "
            "VALUE. The BTLs themselves (btl) are left to you: tcp for the rails, with "
            "self and vader for ranks of one host.",
            "Every rank's host must name the rails by the same interfaces."]
    em.text = _render(em, head, "mca", why)
    return em


def _rails_ucx(em: Emitted, rails: Sequence[RailRate], ifnames: list[str | None],
               rates: str, source: str) -> Emitted:
    why: dict[str, str] = {}
    known = [n for n in ifnames if n is not None]
    for r, ifname in zip(rails, ifnames, strict=True):
        if ifname is None:
            em.warnings.append(f"rail {r.name}: on no interface of this host; UCX_NET_DEVICES "
                               "names interfaces, so it is left out")
    if known:
        em.settings["UCX_NET_DEVICES"] = ",".join(known)
        why["UCX_NET_DEVICES"] = (
            "UCX_NET_DEVICES: the rails' interfaces (UCX's tcp transport names a device by "
            "its interface), so that UCX uses these rails and no other network device.")
        em.reasons.append(why["UCX_NET_DEVICES"])
    n = max(1, len(known))
    em.settings["UCX_MAX_RNDV_RAILS"] = str(n)
    why["UCX_MAX_RNDV_RAILS"] = (
        f"UCX_MAX_RNDV_RAILS: {n}, one lane per rail, so that a rendezvous (large) message "
        "is split over every rail (UCX's default is 2).")
    em.reasons.append(why["UCX_MAX_RNDV_RAILS"])
    em.settings["UCX_MAX_EAGER_RAILS"] = str(n)
    why["UCX_MAX_EAGER_RAILS"] = (
        f"UCX_MAX_EAGER_RAILS: {n}, so that the eager messages below the rendezvous "
        "threshold use every rail too (UCX's default, 1, puts them all on one rail).")
    em.reasons.append(why["UCX_MAX_EAGER_RAILS"])
    bws = [r.bandwidth_MBps for r in rails]
    ratio = ":".join(f"{b / min(bws):.2g}" for b in bws)
    em.reasons.append(
        f"What UCX cannot express: the measured proportion ({ratio}). UCX has no setting of "
        "a device's bandwidth for its tcp transport (it reads each interface's link speed "
        "from ethtool, and veth or virtual NICs report the same speed whatever the rail "
        "delivers); it splits a message among the rails by that estimate, so rails of "
        "unequal rates get the split of their reported link speeds, not of the rates "
        "measured here.")
    if max(bws) > 1.1 * min(bws):
        em.warnings.append(f"the rails' measured rates differ ({ratio}); UCX splits by the "
                           "link speeds it reads, not by these rates (see the reasons)")
    em.warnings += _rails_transport_warnings(rails, "UCX's tcp transport")
    if em.stack == "mpich":
        _mpich_ucx_note(em)
        head = [f"MPICH {em.version} (ch4:ucx) environment from the rails' measured rates "
                f"({source}: {rates}), written by railgauge rails emit.",
                "MPICH's ch4:ucx device sends through UCX, so the rails are set by UCX's "
                "variables. Load with: . THIS_FILE; mpiexec -n N ./app (Hydra passes the "
                "environment to the ranks)."]
    else:
        head = [f"UCX {em.version} environment from the rails' measured rates ({source}: "
                f"{rates}), written by railgauge rails emit.",
                "Load with: . THIS_FILE before starting the UCX program (Open MPI: mpirun "
                "-x UCX_NET_DEVICES -x UCX_MAX_RNDV_RAILS -x UCX_MAX_EAGER_RAILS --mca pml "
                "ucx ...)."]
    em.text = _render(em, head, "env", why)
    return em


def _mpich_ucx_note(em: Emitted) -> None:
    dev = mpich_device() if installed_version("mpich") == em.version else None
    if dev is not None and "ucx" not in dev:
        em.warnings.append(f"the MPICH installed here is built with {dev}, not ch4:ucx: "
                           "these UCX variables act only in a ch4:ucx build")
    em.reasons.append("MPICH: these act in a ch4:ucx build (mpichversion shows the device"
                      + (f"; here {dev}" if dev else "") + "); ch4:ofi reads libfabric's "
                      "variables instead.")


# ---- receive queues ---------------------------------------------------------------------------

def ib_rnr_code(timer_ms: float) -> tuple[int, float]:
    """The InfiniBand RNR timer code whose time is the least at or above ``timer_ms``
    (the largest, 655.36 ms, above that), and its time."""
    for code, ms in IB_RNR_TIMER_MS:
        if ms >= timer_ms - 1e-9:
            return code, ms
    return IB_RNR_TIMER_MS[-1]


def _ucx_time(ms: float) -> str:
    """A time as UCX's parser takes it (``10us``, ``1ms``)."""
    us = ms * 1000.0
    return f"{us:g}us" if us < 1000 else f"{ms:g}ms"


@dataclass(frozen=True)
class QueueChoice:
    """What `tune rxwin` chose (the adaptive window, its timer) and, for stacks whose
    queue does not grow, the fixed length chosen by the same rule."""

    pattern: str
    nranks: int
    model: str
    model_transport: str | None
    w_init: int
    w_max: int
    limit: int
    rnr_timer_ms: float
    time_s: float
    best_time_s: float
    mem_mean: float
    fixed_len: int
    fixed_time_s: float
    fixed_mem_mean: float
    fixed_reaches_best: bool
    #: every fixed length simulated: (N, time_s, mem_mean)
    fixed_rows: tuple[tuple[int, float, float], ...] = ()


_IB_TRANSPORTS = ("ofi:verbs", "verbs", "ib", "rc", "ud", "ofi:verbs;ofi_rxm")


def _model_transport_warning(q: QueueChoice, stack_q: str) -> list[str]:
    t = q.model_transport
    if t is None or t.split("@")[0] in _IB_TRANSPORTS or "verbs" in t:
        return []
    return [f"the model {Path(q.model).name} was measured over {t}, but {stack_q} is an "
            f"InfiniBand (verbs) receive queue: the choice holds for a network with the "
            f"model's parameters, which {t} is not"]


def emit_rxwin(q: QueueChoice, stack: str, version: str | None = None) -> Emitted:
    """The chosen receive window as ``stack``'s receive-queue settings (mvapich2, ucx or
    openmpi through its pml ucx)."""
    version = resolve_version(stack, version, RXWIN_STACKS)
    em = Emitted(stack, version)
    scale = (f"{q.pattern} on {q.nranks} simulated ranks (model {Path(q.model).name}; best "
             f"time {q.best_time_s * 1e3:.4f} ms)")
    if stack == "mvapich2":
        return _rxwin_mvapich2(em, q, scale)
    return _rxwin_ucx(em, q, scale)


def _set_rows(em: Emitted, why: dict[str, str], rows: Sequence[tuple[str, str, str]]) -> None:
    """Each (name, value, reason) into the settings, in order, with its reason."""
    for name, value, reason in rows:
        em.settings[name] = value
        why[name] = reason
        em.reasons.append(reason)


def _rxwin_mvapich2(em: Emitted, q: QueueChoice, scale: str) -> Emitted:
    why: dict[str, str] = {}
    limit = max(1, min(q.limit, q.w_init))
    code, code_ms = ib_rnr_code(q.rnr_timer_ms)
    rows = [
        ("MV2_USE_SRQ", "1", "MV2_USE_SRQ: 1 (its default), since the settings below size "
         "the shared receive queue and act only with it."),
        ("MV2_SRQ_SIZE", str(q.w_init),
         f"MV2_SRQ_SIZE: {q.w_init}, the window's W_init: the SRQ starts with this many "
         f"posted buffers, the least memory among the settings within the tolerance of the "
         f"best simulated time for {scale}."),
        ("MV2_SRQ_MAX_SIZE", str(q.w_max),
         f"MV2_SRQ_MAX_SIZE: {q.w_max}, the window's W_max: on each SRQ limit event MVAPICH2 "
         "doubles the SRQ up to this, as the simulated window grows (W = min(2^k W_init, "
         f"W_max)); the simulated time with it was {q.time_s * 1e3:.4f} ms at "
         f"{q.mem_mean / 1024:.1f} KiB per rank."),
        ("MV2_SRQ_LIMIT", str(limit),
         f"MV2_SRQ_LIMIT: {limit}, the window's first limit (W_init/2, at least 1): the "
         "low-water mark whose crossing raises the limit event; MVAPICH2 keeps it fixed "
         "while the simulated window moves it to W/2 after each growth, so later growths "
         "come a little later than simulated. It must not be above MV2_SRQ_SIZE."),
        ("MV2_DEFAULT_MIN_RNR_TIMER", str(code),
         f"MV2_DEFAULT_MIN_RNR_TIMER: {code}, InfiniBand's RNR timer code for {code_ms:g} ms "
         f"(the least code at or above the chosen {q.rnr_timer_ms:g} ms): how long a "
         "refused sender waits before it retries."),
    ]
    _set_rows(em, why, rows)
    em.warnings += _model_transport_warning(q, "MVAPICH2's SRQ")
    head = [f"MVAPICH2 {em.version} (OFA-IB-CH3) receive-queue settings for {scale}, "
            "written by railgauge tune rxwin.",
            "Load with: . THIS_FILE; mpiexec -n N ./app (or pass each NAME=VALUE to "
            "mpirun_rsh)."]
    em.text = _render(em, head, "env", why)
    return em


def _rxwin_ucx(em: Emitted, q: QueueChoice, scale: str) -> Emitted:
    why: dict[str, str] = {}
    # UCX posts receives in batches of min(RX_MAX_BATCH, RX_QUEUE_LEN / 4)
    # (src/uct/ib/base/ib_iface.c): a queue under 4 would post none.
    n = max(UCX_RX_QUEUE_MIN, q.fixed_len)
    raised = (f" (the simulation's {q.fixed_len} raised to UCX's working least, "
              f"{UCX_RX_QUEUE_MIN}: it posts receives in batches of a quarter of the queue)"
              if n != q.fixed_len else "")
    reach = ("within the tolerance of the best time" if q.fixed_reaches_best else
             "the fastest fixed length of the sweep; none reached the tolerance of the best "
             "time, which needs a growing queue")
    rows = [
        ("UCX_RC_RX_QUEUE_LEN", str(n),
         f"UCX_RC_RX_QUEUE_LEN: {n}: UCX's RC (and DC) transports post one shared receive "
         f"queue per interface, of a fixed length (default 4095). {n} is the least memory "
         f"among fixed windows of the sweep ({reach}) for {scale}: "
         f"{q.fixed_time_s * 1e3:.4f} ms at {q.fixed_mem_mean / 1024:.1f} KiB per rank"
         f"{raised}. UCX's descriptor pool grows by at least 1024 buffers whatever the "
         "length, so a queue under 1024 saves posted buffers rather than the pool's memory."),
        ("UCX_UD_RX_QUEUE_LEN", str(n),
         f"UCX_UD_RX_QUEUE_LEN: {n}, the same length for the UD transport, whose receive "
         "queue is also shared by every peer of the interface (default 4096)."),
        ("UCX_RC_RNR_TIMEOUT", _ucx_time(q.rnr_timer_ms),
         f"UCX_RC_RNR_TIMEOUT: {_ucx_time(q.rnr_timer_ms)}, the RNR timer chosen on the "
         "simulation (UCX turns it into InfiniBand's code; default 1ms)."),
    ]
    if em.stack == "openmpi":
        rows.insert(0, ("OMPI_MCA_pml", "ucx",
                        "OMPI_MCA_pml: ucx, since Open MPI sets receive queues through its "
                        "UCX layer (the openib BTL, which had its own, is gone from 5.0). "
                        "Open MPI selects it only where UCX offers one of pml_ucx_tls "
                        "(rc_verbs, ud_verbs, rc_mlx5, dc_mlx5, ud_mlx5 by default in 4.1), "
                        "that is on InfiniBand or RoCE, where these queues are."))
    _set_rows(em, why, rows)
    em.reasons.append(
        f"What UCX cannot express: a queue that grows. The window chosen for railgauge's "
        f"runtime, adaptive:{q.w_init}:{q.w_max}, starts at W_init = {q.w_init} and doubles "
        "on a limit event; UCX posts its whole queue at start, so the fixed length above "
        "is chosen instead, and UCX's per-endpoint flow control (UCX_RC_FC_WND_SIZE) is "
        "left at its default.")
    em.warnings += _model_transport_warning(q, "UCX's RC/UD receive queue")
    if em.stack == "openmpi":
        names = " ".join(f"-x {k}" for k in em.settings if k.startswith("UCX_"))
        head = [f"Open MPI {em.version} (pml ucx) receive-queue settings for {scale}, "
                "written by railgauge tune rxwin.",
                f"Load with: . THIS_FILE; mpirun {names} ./app (OMPI_MCA_* are passed to "
                "the ranks by mpirun itself)."]
    else:
        head = [f"UCX {em.version} receive-queue settings for {scale}, written by railgauge "
                "tune rxwin.",
                "Load with: . THIS_FILE before starting the UCX program (MPICH ch4:ucx: "
                "mpiexec passes them to the ranks)."]
    em.text = _render(em, head, "env", why)
    return em


def rxwin_queue_choice(res: Any, *, tool: str, eager_limit: int = 16384,
                       fixed_lens: Sequence[int] | None = None) -> QueueChoice:
    """The choice of `tune_rxwin` (``res``, a RxwinTuneResult) and, for the stacks whose
    queue does not grow, the fixed window ``fixed:N`` chosen by the same rule: each N of
    ``fixed_lens`` (default: the powers of two from UCX's working least up to the largest
    W_max of the sweep, and those W_max values) simulated with the chosen timer, the least
    memory within the tolerance of the sweep's best time (where none is, the fastest).
    Raises TuneError."""
    from railgauge.rxwin import RxwinError, sim_params, sim_rxwin
    from railgauge.tune import TuneError

    if fixed_lens is None:
        top = max(r.w_max for r in res.table)
        fixed_lens = [r.w_max for r in res.table]
        n = UCX_RX_QUEUE_MIN
        while n < top:
            fixed_lens.append(n)
            n *= 2
    lens = sorted(set(fixed_lens))
    c = res.choice
    try:
        params = sim_params(Path(res.model))
    except RxwinError as exc:
        raise TuneError(str(exc), user=True) from None
    rows = []
    for n in lens:
        try:
            doc = sim_rxwin(res.pattern, res.nranks, f"fixed:{n}", params=params,
                            rnr_timer_ms=c.rnr_timer_ms, iters=res.iters,
                            eager_limit=eager_limit, tool=tool)
        except RxwinError as exc:
            raise TuneError(f"simulating fixed:{n}: {exc}", user=exc.user) from None
        rows.append((n, float(doc["time_s"]), float(doc["mem_bytes"]["mean"])))
    best = min([res.best_time_s] + [t for _, t, _ in rows])
    ok = [r for r in rows if r[1] <= best * (1 + res.tolerance)]
    fixed = min(ok, key=lambda r: (r[2], r[0])) if ok else min(rows, key=lambda r: r[1])
    return QueueChoice(
        pattern=res.pattern, nranks=res.nranks, model=res.model,
        model_transport=_model_transport(Path(res.model)), w_init=c.w_init, w_max=c.w_max,
        limit=max(1, c.w_init // 2), rnr_timer_ms=c.rnr_timer_ms, time_s=c.time_s,
        best_time_s=best, mem_mean=c.mem_mean, fixed_len=fixed[0], fixed_time_s=fixed[1],
        fixed_mem_mean=fixed[2], fixed_reaches_best=bool(ok), fixed_rows=tuple(rows))


def _model_transport(model: Path) -> str | None:
    try:
        doc = json.loads(model.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    t = doc.get("transport") if isinstance(doc, dict) else None
    return str(t) if t else None


def check_out(out: Path | None) -> None:
    """ExportError where ``out`` cannot be written: a folder, or a file whose folder cannot
    be made or written to (the CLI checks this before any work; write_emitted again)."""
    if out is None:
        return
    out = Path(out)
    if out.is_dir():
        raise ExportError(f"{out}: is a folder; give --out a file name")
    probe = out.parent if str(out.parent) else Path(".")
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ExportError(f"{out}: cannot write: {probe} is not a folder this user can write "
                          "to")


def write_emitted(em: Emitted, out: Path | None) -> None:
    """Writes the file to ``out`` (atomically); ExportError where it cannot be written."""
    if out is None:
        return
    from railgauge.export.files import write_file_atomic

    out = Path(out)
    check_out(out)
    try:
        write_file_atomic(out, em.text)
    except OSError as exc:
        raise ExportError(f"{out}: cannot write: {exc.strerror}") from None
