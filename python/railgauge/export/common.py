"""The source of an export and the eager/rendezvous switch of its model.

:func:`load_source` reads what ``railgauge export`` is given: a gauge report folder, a
``model-loggp.json`` or a measurements file (railgauge JSON Lines or a Netgauge ``loggp``
table). :func:`rendezvous_at` says which protocol change of the model is the
eager/rendezvous switch (docs/export.md, *The rendezvous switch*).
"""

from __future__ import annotations

import ipaddress
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from railgauge.export.files import ExportError
from railgauge.fit.defs import ModelError
from railgauge.fit.model import LoggpFit, LoggpRange, loggp_from_json
from railgauge.measurements import MeasurementError, Measurements

__all__ = [
    "RENDEZVOUS_MIN_STEP",
    "ExportSource",
    "boundary_steps",
    "load_source",
    "loggp_fit",
    "read_source_measurements",
    "rendezvous_at",
    "synchronous_at",
    "synchronous_from",
]

#: The name of the model file in a gauge report folder.
MODEL_FILE = "model-loggp.json"
#: The name of the measurements file in a gauge report folder.
MEASUREMENTS_FILE = "measurements.jsonl"
#: The least step of the one-way time at a protocol change, relative to the one-way time
#: just below it, that counts as a rendezvous (an added handshake costs a round trip).
RENDEZVOUS_MIN_STEP = 0.05
#: Above a rendezvous switch a blocking send returns once the data are through: the
#: send overhead o_s(s) covers the one-way time but the latency L and the receive
#: overhead, o_s(s) >= SYNC_SHARE (PRTT(1,0,s)/2 - L - o_r(s)), at the first and last
#: size of every range from the switch on (SMPI makes every send above its switch wait).
SYNC_SHARE = 0.9


@dataclass(frozen=True)
class ExportSource:
    """What an export reads.

    ``model`` is the content of a ``model-loggp.json`` (fitted from the measurements where
    the source is a measurements file without one); ``model_path``, ``report_dir`` and
    ``measurements_path`` say where it came from (None where not there). ``transport`` is
    the transport measured; ``intra_host`` is True for a model of the path within one host
    (shm, TCP over loopback, ranks started by railgauge's own launcher, libfabric's shm
    provider), with ``intra_host_reason`` saying which of these decided it.
    """

    model: dict[str, Any]
    model_path: Path | None
    report_dir: Path | None
    measurements_path: Path | None
    transport: str
    intra_host: bool
    intra_host_reason: str = ""


def loggp_fit(src: ExportSource) -> LoggpFit:
    """The source's model as a :class:`LoggpFit` (validated by :func:`load_source`)."""
    return loggp_from_json(src.model, str(src.model_path or "model"))


def read_source_measurements(src: ExportSource) -> Measurements:
    """The source's measurements; ExportError where it has none."""
    from railgauge.netgauge import read_any

    if src.measurements_path is None:
        where = src.model_path or src.report_dir or "the source"
        raise ExportError(
            f"{where}: no measurements to export (give a gauge report folder with "
            f"{MEASUREMENTS_FILE} or a measurements file)"
        )
    try:
        return read_any(src.measurements_path)
    except MeasurementError as exc:
        raise ExportError(str(exc)) from None


def _read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in path, or None where the file is not one JSON document."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ExportError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError:
        raise ExportError(f"{path}: not a text file (a report folder, a {MODEL_FILE} or "
                          "a measurements file)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def _check_model(doc: dict[str, Any], path: Path) -> None:
    if doc.get("model") != "loggp":
        raise ExportError(f"{path}: not a LogGP model (its 'model' is {doc.get('model')!r}, "
                          "not 'loggp')")
    if not doc.get("ranges"):
        why = doc.get("message") or "the fit failed"
        raise ExportError(f"{path}: the model has no ranges to export ({why})")
    try:
        loggp_from_json(doc, str(path))
    except ModelError as exc:
        raise ExportError(str(exc)) from None


def _fit_measurements(path: Path) -> dict[str, Any]:
    """The model of a measurements file: the ``model-loggp.json`` beside it where that was
    fitted from this very file, else a new fit (seed 0, as ``railgauge fit``)."""
    from railgauge.fit.loggp import fit_loggp
    from railgauge.netgauge import read_any

    beside = path.with_name(MODEL_FILE)
    if beside.is_file():
        doc = _read_json_object(beside)
        files = ((doc or {}).get("source") or {}).get("files") or []
        if doc is not None and any(Path(str(f)).resolve() == path.resolve() for f in files):
            _check_model(doc, beside)
            return doc
    try:
        meas = read_any(path)
        result = fit_loggp(meas, seed=0, accuracy=True)
    except (MeasurementError, ValueError) as exc:
        raise ExportError(str(exc)) from None
    doc = result.to_json()
    if not doc.get("ranges"):
        raise ExportError(f"{path}: no LogGP model could be fitted ({doc.get('message')})")
    return dict(doc)


def _records_of(path: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first header record and the last ``placement`` record of a railgauge
    measurements file ({} where none, or not such a file)."""
    header: dict[str, Any] = {}
    placement: dict[str, Any] = {}
    if path is None:
        return header, placement
    try:
        with path.open(encoding="utf-8") as f:
            for raw in f:
                if '"header"' not in raw and '"placement"' not in raw:
                    continue
                rec = json.loads(raw)
                if not isinstance(rec, dict):
                    continue
                if rec.get("type") == "header" and not header:
                    header = rec
                elif rec.get("type") == "placement":
                    placement = rec
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        pass
    return header, placement


def _measured_file(model: dict[str, Any]) -> Path | None:
    """The measurements file a model was fitted from, where it is still there."""
    files = (model.get("source") or {}).get("files") or []
    if len(files) == 1 and Path(str(files[0])).is_file():
        return Path(str(files[0]))
    return None


def _is_loopback(address: str) -> bool:
    host = address.strip().strip("[]").rsplit("%", 1)[0]
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _intra_host(transport: str, header: dict[str, Any], placement: dict[str, Any],
                model: dict[str, Any]) -> tuple[bool, str]:
    """Whether the measurement was within one host, and why it is taken to be: the
    transport (shm), else the ``placement`` record of railgauge gauge / measure (ranks
    started without --hosts, --hostfile or --netns), else what older files say (a TCP
    loopback address, libfabric's shm provider, railgauge's own launcher)."""
    info = header.get("transport_info") or (model.get("source") or {}).get("transport_info")
    info = info if isinstance(info, dict) else {}
    name = transport.split(":", 1)[0]
    if name == "shm":
        return True, "shm: shared memory between ranks of one host"
    if isinstance(placement.get("one_host"), bool):
        launcher = placement.get("launcher") or "local"
        if placement["one_host"]:
            return True, (f"{name}: the ranks were started on one host ({launcher} launcher "
                          "without --hosts, --hostfile or --netns)")
        where = [f"{k} {placement[k]}" for k in ("hosts", "hostfile", "netns")
                 if placement.get(k)]
        return False, f"{name}: the ranks ran apart ({', '.join(where)}): a network path"
    if name == "tcp":
        addr = str(info.get("address", ""))
        if addr and _is_loopback(addr):
            return True, f"tcp over the loopback address {addr}"
        return False, f"tcp over {addr or 'a network address'}: a network path"
    if name == "ofi" and str(info.get("provider", "")) in ("shm", "sm2"):
        return True, f"libfabric's {info.get('provider')} provider: within one host"
    if header.get("bootstrap") == "launcher":
        return True, (f"{name} with ranks started by railgauge's own launcher, which starts "
                      "them on this host")
    return False, (f"{name}: the measurement does not record its ranks on one host, so it "
                   "is taken as a network path")


def load_source(path: str | Path) -> ExportSource:
    """Reads an export's SOURCE: a gauge report folder, a ``model-loggp.json``, or a
    measurements file (railgauge JSON Lines, a Netgauge ``loggp`` table).

    Raises
    ------
    ExportError
        In one line naming the path: nothing there, a folder without a model or
        measurements, a file that is none of these, a model that is not LogGP or has no
        ranges, measurements that cannot be read or fitted.
    """
    p = Path(path)
    model_path: Path | None = None
    report_dir: Path | None = None
    meas_path: Path | None = None
    if p.is_dir():
        report_dir = p
        if (p / MODEL_FILE).is_file():
            model_path = p / MODEL_FILE
        if (p / MEASUREMENTS_FILE).is_file():
            meas_path = p / MEASUREMENTS_FILE
        if model_path is None and meas_path is None:
            raise ExportError(f"{p}: not a gauge report folder (no {MODEL_FILE} and no "
                              f"{MEASUREMENTS_FILE} in it)")
    elif p.is_file():
        doc = _read_json_object(p)
        if doc is not None:
            model_path = p
        else:
            from railgauge.netgauge import detect_format

            try:
                detect_format(p)
            except MeasurementError as exc:
                raise ExportError(
                    f"{exc} (an export reads a gauge report folder, a {MODEL_FILE} or a "
                    "measurements file)"
                ) from None
            meas_path = p
            beside = p.with_name(MODEL_FILE)
            report_dir = p.parent if beside.is_file() else None
    else:
        raise ExportError(f"{p}: no such file or folder")

    if model_path is not None:
        model = _read_json_object(model_path)
        if model is None:
            raise ExportError(f"{model_path}: not a JSON object (a {MODEL_FILE} is one)")
        _check_model(model, model_path)
    else:
        assert meas_path is not None
        model = _fit_measurements(meas_path)
        beside = meas_path.with_name(MODEL_FILE)
        if beside.is_file() and _read_json_object(beside) == model:
            model_path = beside
    header, placement = _records_of(meas_path or _measured_file(model))
    transport = str(header.get("transport") or model.get("transport") or "unknown")
    intra, why = _intra_host(transport, header, placement, model)
    return ExportSource(model=model, model_path=model_path, report_dir=report_dir,
                        measurements_path=meas_path, transport=transport, intra_host=intra,
                        intra_host_reason=why)


# --------------------------------------------------------------------------------------
# The eager/rendezvous switch
# --------------------------------------------------------------------------------------


def _series_at(rng: LoggpRange, s: float, *, first: bool) -> dict[str, float]:
    """PRTT(1,0,s)/2 (``h``), o_s(s), o_r(s) and G_all(s) of a range at s, in us: from the
    range's first (``first``) or last piece where the model has pieces, else from its
    parameters."""
    if rng.pieces:
        piece = rng.pieces[0] if first else rng.pieces[-1]
        at = np.asarray([s], dtype=np.float64)
        return {k: float(piece.at(k, at)[0]) for k in ("h", "os", "or", "gall")}
    glat = rng.Glat_us_per_byte if rng.Glat_us_per_byte is not None else rng.G_us_per_byte
    o_s = rng.value("o_s_us") + (s - 1.0) * rng.value("O_s_us_per_byte")
    o_r = rng.value("o_r_us") + (s - 1.0) * rng.value("O_r_us_per_byte")
    return {"h": rng.L_us + o_s + o_r + (s - 1.0) * glat, "os": o_s, "or": o_r,
            "gall": rng.g_us + (s - 1.0) * rng.G_us_per_byte}


def boundary_steps(fit: LoggpFit) -> list[dict[str, float]]:
    """For every protocol change of the model (the first size of each range but the
    first), the steps at that size of the one-way time PRTT(1,0,s)/2 (``dh_us``), of the
    overheads o_s(s) + o_r(s) (``do_us``) and of G_all(s) (``dgall_us``): the new range's
    value minus the old range's line carried on to that size; ``h_us`` is the larger of the
    two one-way times there, ``score`` = (dh + do) / h where both step up, else 0 (a
    handshake adds to the one-way time and to the overheads: the request and the clear to
    send are handled at both ends)."""
    out: list[dict[str, float]] = []
    for old, new in zip(fit.ranges, fit.ranges[1:], strict=False):
        s = float(new.from_bytes)
        a = _series_at(old, s, first=False)
        b = _series_at(new, s, first=True)
        dh = b["h"] - a["h"]
        do = (b["os"] + b["or"]) - (a["os"] + a["or"])
        # The larger of the two one-way times: the old range's line carried past a short
        # range can fall near 0 or below, which must not make a small step look huge.
        h = max(a["h"], b["h"], 1e-12)
        score = (dh + do) / h if dh > 0.0 and do > 0.0 else 0.0
        out.append({"at_bytes": s, "h_us": h, "dh_us": dh, "do_us": do,
                    "dgall_us": b["gall"] - a["gall"], "score": score})
    return out


def synchronous_from(fit: LoggpFit) -> list[bool]:
    """Per range of the model: whether its sends, and those of every range above it, are
    synchronous (:data:`SYNC_SHARE`): the send returns only once the data are through, as
    SMPI's sends above its switch do, its overhead covering the transfer time. Where
    sending and receiving are all of the one-way time (shared memory) this holds
    trivially, and it costs SMPI nothing there; where the send returns well before the
    data arrive (a copy into a large socket buffer) it does not, and a switch there would
    make SMPI charge each send the whole transfer."""
    sync: list[bool] = []
    for r in fit.ranges:
        last = r.to_bytes if r.to_bytes is not None else r.last_measured_bytes
        ok = True
        for s, first in ((r.from_bytes, True), (last, False)):
            if s is None:
                continue
            v = _series_at(r, float(s), first=first)
            ok = ok and v["os"] >= SYNC_SHARE * (v["h"] - max(r.L_us, 0.0) - v["or"])
        sync.append(ok)
    for i in range(len(sync) - 2, -1, -1):
        sync[i] = sync[i] and sync[i + 1]
    return sync


def rendezvous_at(model: dict[str, Any] | LoggpFit,
                  override: int | None = None) -> tuple[int | None, str]:
    """The size (bytes) from which messages go by rendezvous, and why.

    ``override`` (``--rendezvous-at SIZE``) wins. Otherwise the rule (docs/export.md): a
    rendezvous adds a handshake before the data, so at the switch the one-way time
    PRTT(1,0,s)/2 and the overheads step up, by at least :data:`RENDEZVOUS_MIN_STEP` (5%)
    of the one-way time there. Of the changes that do, the one whose one-way time steps
    up the most in microseconds is the switch: a handshake costs a round trip of control
    messages whatever the size (relative to the one-way time, a small step at small sizes,
    such as Open MPI's end of inline sends at 256 B, would look as large; the overheads'
    lines can step by much more at large sizes, where their fit is loose); the size is the
    first size of the range above it. None where the model has one range, or no change
    steps up that much (all eager).
    """
    if override is not None:
        if override < 1:
            raise ExportError(f"--rendezvous-at: must be a size >= 1 byte, got {override}")
        return override, f"--rendezvous-at {override} B (given)"
    fit = model if isinstance(model, LoggpFit) else loggp_from_json(model)
    if len(fit.ranges) < 2:
        return None, ("the model has one protocol range: no eager/rendezvous switch found "
                      "(all messages eager; name one with --rendezvous-at SIZE)")
    steps = boundary_steps(fit)
    listed = ", ".join(f"{int(st['at_bytes'])} B {100.0 * st['score']:+.0f}%" for st in steps)
    cands = [st for st in steps
             if math.isfinite(st["score"]) and st["score"] >= RENDEZVOUS_MIN_STEP]
    if not cands:
        return None, (
            f"no protocol change steps up the one-way time and overheads by "
            f"{100.0 * RENDEZVOUS_MIN_STEP:.0f}% or more ({listed}): all messages eager "
            "(name the switch with --rendezvous-at SIZE)"
        )
    best = max(cands, key=lambda st: st["dh_us"])
    at = int(best["at_bytes"])
    return at, (
        f"inferred: at the protocol change to {at} B, PRTT(1,0,s)/2 steps by "
        f"{best['dh_us']:+.4g} us and o_s+o_r by {best['do_us']:+.4g} us "
        f"({100.0 * best['score']:+.0f}% of the one-way time {best['h_us']:.4g} us there), "
        f"the largest step up of the one-way time among the model's changes that step up "
        f"both ({listed})"
    )


def synchronous_at(fit: LoggpFit, rendezvous: int | None) -> int | None:
    """The size from which a blocking send waits for its data to go through (SMPI's
    ``smpi/send-is-detached-thresh``): the first size at or above the rendezvous switch
    from which every range is synchronous (:func:`synchronous_from`); None where there is
    no switch or the sends above it return before their data are through (then a send
    there is charged its measured overhead o_s(s), not the whole transfer)."""
    if rendezvous is None or not fit.ranges:
        return None
    sync = synchronous_from(fit)
    for i, r in enumerate(fit.ranges):
        nxt = fit.ranges[i + 1].from_bytes if i + 1 < len(fit.ranges) else None
        if nxt is not None and nxt <= rendezvous:
            continue  # wholly below the switch
        if sync[i]:
            return max(rendezvous, r.from_bytes)
    return None
