"""The measured LogGP model as a SimGrid SMPI platform and configuration (SimGrid 3.32).

SMPI times a message of s bytes as

    sender:   smpi/os(s)                      (detached sends: below the eager limit)
    network:  lat * lat-factor(s) + s / (bw * bw-factor(s))
    receiver: smpi/or(s)

with smpi/os, smpi/or and smpi/ois piecewise lists ``size:offset:per-byte`` (seconds; a
section applies to sizes above its ``size``), lat-factor and bw-factor piecewise lists
``size:factor``, and lat, bw the sum of the latencies and the smallest bandwidth of the
links on the route. railgauge's model (docs/fit.md) times it as o_s(s) = o_s + (s-1) O_s,
L + (s-1) G_lat and o_r(s) = o_r + (s-1) O_r per protocol range, or, where the model has
pieces (the lines it predicts with, which follow the bends within a range), as the pieces'
o_s(s), o_r(s) and PRTT(1,0,s)/2 lines. The export writes one section per range (piece):
the overheads as they are, the platform's links with the first range's L and per-byte
time, and every section's own network time as the factors against them, so that SMPI's
PRTT(1,0,s) is the model's (within 1e-4 relative, measured). The eager/rendezvous switch becomes
smpi/async-small-thresh (above it the data wait for the receive); smpi/send-is-detached-thresh
(above it a blocking send waits until its data are through, and SMPI charges it no overhead
but the whole transfer) is the switch only where the model's sends above it do so
(railgauge.export.common.synchronous_at), else every send is detached and charged its
measured o_s(s). What SMPI has no term for is the
gap g between two messages of a train: under SMPI a train costs max(o_s(s), o_r(s)) a
message (the busier end) and the messages in flight share the links' bandwidth, so
PRTT(n,0,s) comes out below the model's where g is the larger (docs/export.md, section
SimGrid SMPI).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from railgauge.export.common import SYNC_SHARE, synchronous_at
from railgauge.export.files import ExportError, staged_dir
from railgauge.fit.defs import ModelError
from railgauge.fit.model import LoggpFit, LoggpRange, Piece, loggp_from_json

if TYPE_CHECKING:
    from railgauge.export.common import ExportSource

#: The platform shapes --topology accepts: ``flat``, every host on one switch (a star).
TOPOLOGIES = ("flat",)

#: The SimGrid version whose options and platform format the export writes.
SIMGRID_VERSION = "3.32"

#: The file names written into the output folder.
PLATFORM_FILE = "platform.xml"
HOSTFILE = "hostfile"
NOTE_FILE = "README.txt"

#: The per-byte time below which a link is taken as this fast (us/byte: 1 PB/s), so that a
#: model whose network time does not grow with the size (G_lat = 0: the copies are in the
#: overheads) still has a finite bandwidth.
_G_FLOOR_US = 1e-9

#: The eager limit written where the model has no rendezvous switch: every size eager
#: (SMPI's thresholds are C ints).
_NO_SWITCH = 2**31 - 1

#: The bytes SMPI adds to every message on the network (measured with SimGrid 3.32: a
#: message of s bytes takes (s + 16) / bw on the link, and a lat-factor or bw-factor
#: section of size T holds for the messages with s + 16 > T).
_SMPI_HEADER = 16

#: The computing speed of the simulated hosts, and the speed SMPI assumes for the host
#: that runs the simulation when it times the program's own computation: equal, so that
#: a burst of computation takes in the simulation the time it took on that host.
_HOST_SPEED = "1Gf"


@dataclass(frozen=True)
class _Section:
    """One section in SMPI's terms (seconds, factors): a range, a piece, or the part of one
    from the rendezvous switch up. SMPI reads its two kinds of lists differently (measured
    with SimGrid 3.32): a section of smpi/os, smpi/ois and smpi/or holds for the sizes
    strictly above its size (``above``), one of lat-factor and bw-factor for the sizes whose
    network size, s + 16, is strictly above its size (``factor_above``)."""

    above: int
    factor_above: int
    os_offset: float
    os_per_byte: float
    or_offset: float
    or_per_byte: float
    lat_factor: float
    bw_factor: float


def _num(v: float) -> str:
    """A number as SimGrid reads it (C's %g, 9 digits: within 1e-9 of the value)."""
    return f"{v:.9g}"


def _fit_of(src: ExportSource) -> LoggpFit:
    where = str(src.model_path) if src.model_path is not None else "model"
    if not src.model or not src.model.get("ranges"):
        raise ExportError(f"{where}: the model has no protocol ranges; SimGrid's export needs them")
    try:
        return loggp_from_json(src.model, where)
    except ModelError as exc:
        raise ExportError(str(exc)) from exc


@dataclass(frozen=True)
class _Lines:
    """The model from ``start`` bytes up as three lines in us, each (value at s = 0, slope
    per byte): the send overhead o_s(s), the receive overhead o_r(s) and the network time
    PRTT(1,0,s)/2 - o_s(s) - o_r(s)."""

    start: int
    os: tuple[float, float]
    orecv: tuple[float, float]
    net: tuple[float, float]


def _range_lines(r: LoggpRange, start: int) -> _Lines:
    """A range's parameters as lines: o_s + (s-1) O_s, o_r + (s-1) O_r, L + (s-1) G_lat."""
    g = r.Glat_us_per_byte if r.Glat_us_per_byte is not None else r.G_us_per_byte
    o_s, big_os = r.value("o_s_us"), r.value("O_s_us_per_byte")
    o_r, big_or = r.value("o_r_us"), r.value("O_r_us_per_byte")
    return _Lines(start, (o_s - big_os, big_os), (o_r - big_or, big_or), (r.L_us - g, g))


def _piece_lines(p: Piece, start: int) -> _Lines:
    """A piece of the predictive model (docs/fit.md, section 4) as lines. Its network time
    is what its PRTT(1,0,s)/2 line h(s) leaves after its overhead lines. Where sending and
    receiving overlap (copies pipelined through a buffer), o_s(s) + o_r(s) exceeds h(s) or
    grows faster; SMPI adds them up, so the export keeps h(s), which is PRTT(1,0,s), and
    cuts the overheads to it, o_r first: at the piece's first and last size, o_s at most h
    (and >= 0), o_r at most what o_s leaves, the network time the rest; each line runs
    through its two ends, so their sum is h(s) across the piece, none is negative in it
    and the network time does not fall (cut value by value and slope by slope, a falling
    overhead line went below 0 within the piece: Open MPI from 2435 B, where SMPI's
    PRTT(n,d,s) fell 34-64% below the model's). SMPI's PRTT(n,d,s), which charges
    o_s(s) per message, is then below the model's where o_s(s) was cut."""
    lo, hi = float(p.from_bytes), float(max(p.to_bytes, p.from_bytes))
    ends: list[tuple[float, float, float]] = []
    for s in (lo, hi):
        h = max(float(p.at("h", np.asarray([s]))[0]), 0.0)
        os_ = min(max(float(p.at("os", np.asarray([s]))[0]), 0.0), h)
        or_ = min(max(float(p.at("or", np.asarray([s]))[0]), 0.0), h - os_)
        ends.append((os_, or_, h - os_ - or_))
    if ends[1][2] < ends[0][2]:
        # SMPI's network time cannot fall with the size: flat at the smaller end, what it
        # had more at the first size to the receive overhead (the sum kept; the send
        # overhead, which paces a train of sends, as the model has it).
        (os1, or1, net1), (_, _, net2) = ends
        ends[0] = (os1, or1 + net1 - net2, net2)

    def line(k: int) -> tuple[float, float]:
        v1, v2 = ends[0][k], ends[1][k]
        b = (v2 - v1) / (hi - lo) if hi > lo else 0.0
        return v1 - lo * b, b

    return _Lines(start, line(0), line(1), line(2))


def _model_lines(fit: LoggpFit) -> list[_Lines]:
    """The model as lines from size to size: its pieces where every range has them (what
    the model predicts with), else its ranges. The first holds from 0 (every size)."""
    pieces = [p for r in fit.ranges for p in r.pieces]
    if pieces and all(r.pieces for r in fit.ranges):
        return [_piece_lines(p, 0 if i == 0 else p.from_bytes) for i, p in enumerate(pieces)]
    return [_range_lines(r, 0 if i == 0 else r.from_bytes) for i, r in enumerate(fit.ranges)]


def _room(line: tuple[float, float], lo: int, hi: int | None) -> float:
    """The least value of a line over the sizes lo .. hi (None: unbounded), >= 0."""
    a, b = line
    if hi is None:
        return max(a + b * lo, 0.0) if b >= 0 else 0.0
    return max(min(a + b * lo, a + b * hi), 0.0)


def _section(ln: _Lines, lat0_us: float, g0_us: float, eager: bool,
             end: int | None = None) -> _Section:
    """Lines as a section against the platform's latency ``lat0_us`` and per-byte time
    ``g0_us``. An eager section keeps its overheads as SMPI's; in a rendezvous section SMPI
    charges no overhead to a blocking send or receive (measured with SimGrid 3.32: a
    blocking MPI_Send at or above smpi/send-is-detached-thresh sleeps no smpi/os, its
    receive no smpi/or), so there o_s(s) + o_r(s) go into the network time of those sizes
    instead and the overheads are 0, which charges them once."""
    os_, or_, (fixed, per_byte) = ln.os, ln.orecv, ln.net
    if not eager:
        fixed += os_[0] + or_[0]
        per_byte += os_[1] + or_[1]
        os_ = or_ = (0.0, 0.0)
    per_byte = max(per_byte, _G_FLOOR_US)
    # SMPI's network time is lat * f_lat + (s + 16) * G0 / f_bw.
    fixed -= _SMPI_HEADER * per_byte
    if fixed < 0 and eager:
        # A steep network line of a later section is negative at s = 0, which no latency
        # factor can say: the deficit goes into the overheads' offsets (SMPI takes
        # negative offsets), as far as they stay >= 0 over the section's sizes, so that
        # o_s(s) + network(s) + o_r(s) is still the model's one-way time there.
        lo = max(ln.start, 1)
        take = min(-fixed, _room(os_, lo, end))
        os_, fixed = (os_[0] - take, os_[1]), fixed + take
        take = min(-fixed, _room(or_, lo, end))
        or_, fixed = (or_[0] - take, or_[1]), fixed + take
        if fixed < 0:
            # Still below 0: the network line through its value at the section's first
            # size and 0 at s = -16, the rest of its slope into o_s(s); the sum is kept
            # exactly, the split moves towards the send overhead (which then grows
            # across the section instead of the network time).
            at_lo = max(fixed + per_byte * (lo + _SMPI_HEADER), _G_FLOOR_US * lo)
            new_pb = at_lo / (lo + _SMPI_HEADER)
            k = per_byte - new_pb
            os_ = (os_[0] + fixed + _SMPI_HEADER * k, os_[1] + k)
            fixed, per_byte = 0.0, new_pb
    return _Section(
        above=max(ln.start - 1, 0),
        factor_above=0 if ln.start == 0 else ln.start - 1 + _SMPI_HEADER,
        os_offset=os_[0] * 1e-6,
        os_per_byte=os_[1] * 1e-6,
        or_offset=or_[0] * 1e-6,
        or_per_byte=or_[1] * 1e-6,
        lat_factor=max(fixed, 0.0) / lat0_us,
        bw_factor=g0_us / per_byte,
    )


def _link_of(fit: LoggpFit, lines: list[_Lines]) -> tuple[float, float]:
    """The platform link's latency (us) and per-byte time (us/byte): the first range's L
    and the first section's network slope (floored), whatever the switch."""
    return max(fit.ranges[0].L_us, _G_FLOOR_US), max(lines[0].net[1], _G_FLOOR_US)


def _sections(fit: LoggpFit, detached: int | None) -> tuple[float, float, list[_Section]]:
    """The platform's route latency (s) and bandwidth (bytes/s), and the sections: one a
    range (or piece), the one holding ``detached`` (SMPI's send-is-detached-thresh, from
    which a blocking send is synchronous) cut in two there (sizes from it up are charged
    as SMPI charges a synchronous send)."""
    lines = _model_lines(fit)
    lat0, g0 = _link_of(fit, lines)
    cuts: list[tuple[_Lines, bool]] = []
    for i, ln in enumerate(lines):
        eager = detached is None or ln.start < detached
        cuts.append((ln, eager))
        nxt = lines[i + 1].start if i + 1 < len(lines) else None
        if eager and detached is not None and (nxt is None or detached < nxt):
            cuts.append((_Lines(detached, ln.os, ln.orecv, ln.net), False))
    ends = [cuts[i + 1][0].start - 1 if i + 1 < len(cuts) else None for i in range(len(cuts))]
    secs = [_section(ln, lat0, g0, eager, end) for (ln, eager), end in zip(cuts, ends,
                                                                           strict=True)]
    return lat0 * 1e-6, 1e6 / g0, secs


def _piecewise(sections: Sequence[_Section], start: str, *fields: str) -> str:
    return ";".join(
        ":".join([str(getattr(sec, start)), *(_num(getattr(sec, f)) for f in fields)])
        for sec in sections
    )


def smpi_cfg(fit: LoggpFit, rendezvous: int | None) -> list[str]:
    """The ``--cfg=`` arguments that carry the model. Every option was checked against
    SimGrid 3.32: smpirun accepts it (it refuses an unknown key) and the simulated times
    move as the option says (tests/test_export_simgrid.py)."""
    detached = synchronous_at(fit, rendezvous)
    _, _, secs = _sections(fit, detached)
    thresh = rendezvous if rendezvous is not None and rendezvous > 0 else _NO_SWITCH
    sync = detached if detached is not None and detached > 0 else _NO_SWITCH
    overhead = _piecewise(secs, "above", "os_offset", "os_per_byte")
    return [
        "--cfg=network/model:SMPI",
        f"--cfg=smpi/os:{overhead}",
        f"--cfg=smpi/ois:{overhead}",
        f"--cfg=smpi/or:{_piecewise(secs, 'above', 'or_offset', 'or_per_byte')}",
        f"--cfg=smpi/lat-factor:{_piecewise(secs, 'factor_above', 'lat_factor')}",
        f"--cfg=smpi/bw-factor:{_piecewise(secs, 'factor_above', 'bw_factor')}",
        f"--cfg=smpi/async-small-thresh:{min(thresh, _NO_SWITCH)}",
        f"--cfg=smpi/send-is-detached-thresh:{min(sync, _NO_SWITCH)}",
        # The measured times hold whatever the reverse direction cost; SMPI's cross traffic
        # (a share of every message sent back as acknowledgements) would count it twice.
        "--cfg=network/crosstraffic:0",
        # Nor does the measured per-byte time need SimGrid's bound of a TCP window
        # (bandwidth <= TCP-gamma / 2 lat), which on a sub-microsecond loopback would cut
        # it; 0 turns the bound off.
        "--cfg=network/TCP-gamma:0",
        f"--cfg=smpi/host-speed:{_HOST_SPEED}",
    ]


def platform_xml(fit: LoggpFit, *, hosts: int, intra_host: bool) -> str:
    """The platform: one host whose loopback link is the measured path (a model measured
    within one host), or ``hosts`` hosts on one switch whose links are the measured path
    (a network model; the route crosses two links, each half the latency)."""
    lat_us, g_us = _link_of(fit, _model_lines(fit))
    lat_s, bw = lat_us * 1e-6, 1e6 / g_us
    head = (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        # "--" may not appear within an XML comment.
        f"<!-- Written by railgauge's SimGrid export from a "
        f"{fit.transport.replace('-', '_')} model, for SimGrid {SIMGRID_VERSION}. -->\n"
        '<platform version="4.1">\n'
    )
    if intra_host:
        # FATPIPE: every transfer gets the whole bandwidth, as every pair of ranks copies
        # with its own cores over shared memory.
        body = (
            '  <zone id="node" routing="Full">\n'
            f'    <host id="host0" speed="{_HOST_SPEED}" core="{hosts}"/>\n'
            f'    <link id="loopback" bandwidth="{_num(bw)}Bps" latency="{_num(lat_s)}s"'
            ' sharing_policy="FATPIPE"/>\n'
            '    <route src="host0" dst="host0" symmetrical="NO">'
            '<link_ctn id="loopback"/></route>\n'
            "  </zone>\n"
        )
    else:
        body = (
            f'  <cluster id="flat" prefix="host" suffix="" radical="0-{hosts - 1}"'
            f' speed="{_HOST_SPEED}" bw="{_num(bw)}Bps" lat="{_num(lat_s / 2.0)}s"'
            ' sharing_policy="SPLITDUPLEX"/>\n'
        )
    return head + body + "</platform>\n"


def hostfile_text(*, hosts: int, intra_host: bool) -> str:
    """One line a rank: every rank on host0 (intra-host), else one rank a host."""
    names = ["host0"] * hosts if intra_host else [f"host{i}" for i in range(hosts)]
    return "".join(f"{n}\n" for n in names)


def _note(src: ExportSource, fit: LoggpFit, args: list[str], *, hosts: int, intra_host: bool,
          rendezvous: int | None, rendezvous_reason: str) -> str:
    line = shlex.join(["smpirun", "-np", str(hosts), *args, "./your-program"])
    where = src.model_path or src.report_dir or "the model"
    shape = (
        f"one host (host0, {hosts} cores): the model was measured within one host, so the "
        "ranks share it and talk over its loopback link"
        if intra_host
        else f"{hosts} hosts on one switch (a star), one rank a host: the model describes "
        "the links between hosts"
    )
    switch = (
        f"eager below {rendezvous} bytes, rendezvous from {rendezvous} bytes ({rendezvous_reason})"
        if rendezvous is not None
        else f"none ({rendezvous_reason}): every size eager"
    )
    detached = synchronous_at(fit, rendezvous)
    if rendezvous is not None:
        switch += (
            f". A blocking send waits for its data from {detached} bytes "
            "(smpi/send-is-detached-thresh): the model's sends there take as long as their "
            "transfer"
            if detached is not None
            else ". Every send is detached (smpi/send-is-detached-thresh off): above the "
            "switch the model's sends return before their data are through (o_s(s) below "
            f"{SYNC_SHARE:g} of PRTT(1,0,s)/2 - L - o_r(s)), so SMPI charges them o_s(s), "
            "and the data wait for the receive"
        )
    ranges = ", ".join(
        f"{r.from_bytes}.." + ("" if r.to_bytes is None else str(r.to_bytes)) for r in fit.ranges
    )
    return (
        f"SimGrid SMPI export of {where} ({fit.transport}), for SimGrid {SIMGRID_VERSION}.\n\n"
        f"Platform: {PLATFORM_FILE}, {shape}.\n"
        f"Protocol ranges: {ranges} bytes. Eager/rendezvous switch: {switch}.\n\n"
        "Run an MPI program built with smpicc (run from this folder, or give the paths):\n\n"
        f"    {line}\n\n"
        "SMPI has no per-message gap g: a train of messages costs max(o_s(s), o_r(s)) each\n"
        "and they share the links' bandwidth, so back-to-back messages go faster under SMPI\n"
        "than measured where g is larger (docs/export.md, section SimGrid SMPI).\n"
    )


def export_simgrid(
    src: ExportSource,
    out: Path,
    *,
    hosts: int,
    topology: str,
    rendezvous: int | None,
    rendezvous_reason: str,
) -> dict[str, Any]:
    """Writes the platform, the hostfile and a note with the smpirun line into the folder
    ``out`` (nothing is left there on failure) and returns the Contract's object:
    ``{"files": [...], "platform": path, "hostfile": path, "smpirun_args": [...]}``, the
    arguments that go between ``smpirun`` and the program (``-np`` excluded).

    Raises :class:`ExportError` for a model without ranges, ``hosts`` < 1 or an unknown
    ``topology``.
    """
    if isinstance(hosts, bool) or not isinstance(hosts, int) or hosts < 1:
        raise ExportError(f"--hosts: must be an integer >= 1, got {hosts!r}")
    if topology not in TOPOLOGIES:
        raise ExportError(
            f"--topology: unknown topology {topology!r} (known: {', '.join(TOPOLOGIES)})"
        )
    if rendezvous is not None and rendezvous < 1:
        raise ExportError(f"--rendezvous-at: must be a size >= 1 byte, got {rendezvous}")
    fit = _fit_of(src)
    out = Path(out)
    platform, hostfile, note = out / PLATFORM_FILE, out / HOSTFILE, out / NOTE_FILE
    args = [
        "-platform", str(platform), "-hostfile", str(hostfile),
        *smpi_cfg(fit, rendezvous),
    ]
    with staged_dir(out) as tmp:
        (tmp / PLATFORM_FILE).write_text(
            platform_xml(fit, hosts=hosts, intra_host=src.intra_host),
            encoding="utf-8",
        )
        (tmp / HOSTFILE).write_text(
            hostfile_text(hosts=hosts, intra_host=src.intra_host), encoding="utf-8"
        )
        (tmp / NOTE_FILE).write_text(
            _note(src, fit, args, hosts=hosts, intra_host=src.intra_host,
                  rendezvous=rendezvous, rendezvous_reason=rendezvous_reason),
            encoding="utf-8",
        )
    return {
        "files": [str(platform), str(hostfile), str(note)],
        "platform": str(platform),
        "hostfile": str(hostfile),
        "smpirun_args": args,
    }
