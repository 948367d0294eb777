"""The fitted LogGP model as data: its ranges, the model document (JSON out and in), and
the predictions of PRTT(n,d,s), G_all(s) and the overheads from it (docs/fit.md, sections
4 and 6).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from railgauge import __version__
from railgauge.fit.defs import (
    _CONTRACT_PARAMS,
    _SPLIT_PARAMS,
    ArrayLike,
    FloatArray,
    ModelError,
)
from railgauge.jsonvalues import finite_json

# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


#: The series of a piece's lines: PRTT(1,0,s)/2, G_all(s), o_s(s), o_r(s), with their keys
#: in the model document (value at the piece's first size, slope per byte).
PIECE_SERIES: dict[str, tuple[str, str]] = {
    "h": ("h_us", "h_us_per_byte"),
    "gall": ("gall_us", "gall_us_per_byte"),
    "os": ("os_us", "os_us_per_byte"),
    "or": ("or_us", "or_us_per_byte"),
}


@dataclass(frozen=True)
class Piece:
    """One piece of the predictive model (docs/fit.md, section 4, *Predictions*): a block
    of the optimal partition, every break kept, bends included. ``lines`` maps each series
    of :data:`PIECE_SERIES` to (value in us at ``from_bytes``, slope in us per byte), the
    piece's own weighted line, anchored at its first measured size and not bounded (a
    prediction inside the piece is an interpolation; its value at s = 1 has no meaning)."""

    from_bytes: int
    to_bytes: int
    lines: dict[str, tuple[float, float]]

    def at(self, key: str, s: FloatArray) -> FloatArray:
        a, b = self.lines[key]
        return np.asarray(a + (s - float(self.from_bytes)) * b, dtype=np.float64)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from_bytes": int(self.from_bytes), "to_bytes": int(self.to_bytes)}
        for key, (k_a, k_b) in PIECE_SERIES.items():
            a, b = self.lines[key]
            out[k_a] = float(a)
            out[k_b] = float(b)
        return out


def _piece_from_json(doc: Any, where: str) -> Piece:
    if not isinstance(doc, Mapping):
        raise ModelError(f"{where}: a piece must be an object")
    fb, tb = doc.get("from_bytes"), doc.get("to_bytes")
    if isinstance(fb, bool) or not isinstance(fb, int) or fb < 0:
        raise ModelError(f"{where}: 'from_bytes' must be an integer >= 0, got {fb!r}")
    if isinstance(tb, bool) or not isinstance(tb, int) or tb < fb:
        raise ModelError(f"{where}: 'to_bytes' must be an integer >= from_bytes, got {tb!r}")
    lines: dict[str, tuple[float, float]] = {}
    for key, (k_a, k_b) in PIECE_SERIES.items():
        # A piece's line is not bounded: its slope may fall (a bend, an overlap), and
        # its value at the piece's first size is a fitted value, not a parameter.
        a = _num(doc, k_a, where, signed=True)
        b = _num(doc, k_b, where, signed=True)
        lines[key] = (float(a or 0.0), float(b or 0.0))
    return Piece(from_bytes=int(fb), to_bytes=int(tb), lines=lines)


@dataclass
class LoggpRange:
    """The LogGP parameters of one protocol range.

    ``from_bytes`` is the first measured size of the range; ``to_bytes`` the last measured
    size, or ``None`` for the last range (it extends to infinity). ``L_us``, ``o_us`` (the
    symmetric LogGP overhead (o_s + o_r)/2), ``o_s_us`` and ``o_r_us`` (the send and receive
    overheads at s=1) are network-wide, the same in every range (fitted over the first
    range, as in the paper's table); ``o_s_us`` / ``o_r_us`` are ``None`` in a model that
    has only ``o_us`` (then both are taken as ``o_us``). ``g_us``, ``G_us_per_byte``, the
    per-byte overheads ``O_s_us_per_byte``, ``O_r_us_per_byte`` (and their mean
    ``O_us_per_byte``) and the latency slope ``Glat_us_per_byte`` are the range's own.
    ``range_overhead`` holds the intercepts at s=1 of the range's own o_s(s) and o_r(s)
    lines (``o_s_us``, ``o_r_us``, ``ci95``): extras, not used for predictions.
    ``o_r_source`` says whether o_r was measured or assumed equal to o_s in this range.
    ``support_from`` is the break support of the change at ``from_bytes`` (the fraction of
    redraws that find it; ``None`` for the first range or where not computed).
    ``ci95`` maps each parameter key to its 95% bootstrap interval. A range is ``reliable``
    unless its g or G, or the network-wide L or o, had to be held at the bound 0 against
    significant evidence or could not be identified; ``warnings`` says why.
    """

    from_bytes: int
    to_bytes: int | None
    L_us: float
    o_us: float
    g_us: float
    G_us_per_byte: float
    O_us_per_byte: float = 0.0
    Glat_us_per_byte: float | None = None
    o_s_us: float | None = None
    o_r_us: float | None = None
    O_s_us_per_byte: float | None = None
    O_r_us_per_byte: float | None = None
    o_r_source: str | None = None
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)
    reliable: bool = True
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    points: int = 0
    last_measured_bytes: int | None = None
    chi2_red: dict[str, float] = field(default_factory=dict)
    range_overhead: dict[str, Any] | None = None
    support_from: float | None = None
    #: The predictive model's pieces in this range (empty in older model files).
    pieces: list[Piece] = field(default_factory=list)
    #: Parameters held at the bound 0, each with its unconstrained estimate and the
    #: reason it may be there (docs/fit.md, section 4, *Bounds*).
    bounds: list[dict[str, Any]] = field(default_factory=list)
    #: How well the range predicts its own held-out points (``points``, ``median_rel``,
    #: ``p90_rel``, ``max_rel``, ``reliable``); None where not cross-validated.
    accuracy: dict[str, Any] | None = None

    def value(self, key: str) -> float:
        """A parameter by its JSON key (``L_us``, ``G_us_per_byte``, ``o_s_us``, ...).

        ``o_s_us`` / ``o_r_us`` (and their slopes) fall back to ``o_us`` (``O_us_per_byte``)
        in a model without them.
        """
        v = getattr(self, key)
        if v is None and key in _SPLIT_PARAMS:
            v = self.o_us if key.startswith("o_") else self.O_us_per_byte
        return float(v) if v is not None else math.nan

    def to_json(self, *, with_support: bool = True) -> dict[str, Any]:
        """The range as a JSON object; ``support_from`` (null where not computed) for every
        range but the first (``with_support=False``)."""
        out: dict[str, Any] = {
            "from_bytes": int(self.from_bytes),
            "to_bytes": None if self.to_bytes is None else int(self.to_bytes),
            "L_us": float(self.L_us),
            "o_us": float(self.o_us),
            "g_us": float(self.g_us),
            "G_us_per_byte": float(self.G_us_per_byte),
            "O_us_per_byte": float(self.O_us_per_byte),
        }
        for key in _SPLIT_PARAMS:
            v = getattr(self, key)
            if v is not None:
                out[key] = float(v)
        if self.o_r_source is not None:
            out["o_r_source"] = self.o_r_source
        if self.Glat_us_per_byte is not None:
            out["Glat_us_per_byte"] = float(self.Glat_us_per_byte)
        out["ci95"] = {k: [float(lo), float(hi)] for k, (lo, hi) in self.ci95.items()}
        if self.range_overhead is not None:
            out["range_overhead"] = finite_json(self.range_overhead)
        if with_support:
            out["support_from"] = None if self.support_from is None else float(self.support_from)
        out["reliable"] = bool(self.reliable)
        out["warnings"] = list(self.warnings)
        out["notes"] = list(self.notes)
        out["points"] = int(self.points)
        if self.last_measured_bytes is not None:
            out["last_measured_bytes"] = int(self.last_measured_bytes)
        if self.chi2_red:
            out["chi2_red"] = {
                k: (float(v) if math.isfinite(v) else None) for k, v in self.chi2_red.items()
            }
        out["bounds"] = finite_json(self.bounds)
        if self.accuracy is not None:
            out["accuracy"] = finite_json(self.accuracy)
        if self.pieces:
            out["pieces"] = [p.to_json() for p in self.pieces]
        return out


@dataclass
class LoggpFit:
    """The result of :func:`fit_loggp`: ranges, fit diagnostics and provenance.

    Like ``scipy.optimize`` results it carries ``success`` and ``message``; a failed fit has
    no ranges. ``o_r_source`` says where the receive overhead came from: ``"measured"``,
    ``"assumed equal to o_s"`` (no receive-overhead records: the paper's assumption), or a
    sentence when only some sizes had it. ``bends`` lists the breaks of the optimal
    partition that were merged away for too little support (``between_bytes``,
    ``support``). ``network`` describes the network-wide L, o_s,
    o_r and o (values, CIs, the range they were fitted over, warnings). :meth:`to_json`
    gives the fitted-model document other tools read.
    """

    ranges: list[LoggpRange]
    success: bool
    message: str
    transport: str = "unknown"
    n: int | None = None
    criterion: dict[str, Any] = field(default_factory=dict)
    residuals: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    method: dict[str, Any] = field(default_factory=dict)
    o_r_source: str | None = None
    network: dict[str, Any] = field(default_factory=dict)
    bends: list[dict[str, Any]] = field(default_factory=list)
    #: The model's predictive accuracy (:func:`railgauge.fit.accuracy.attach_accuracy`):
    #: held-out errors by k-fold cross-validation over sizes, by decade, and the run's own
    #: noise beside them; None where not computed.
    accuracy: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The fitted-model document (``model`` = ``loggp``); non-finite numbers become null."""
        return finite_json(
            {
                "model": "loggp",
                "version": __version__,
                "success": bool(self.success),
                "message": self.message,
                "transport": self.transport,
                "o_r_source": self.o_r_source,
                "network": self.network,
                "ranges": [r.to_json(with_support=i > 0) for i, r in enumerate(self.ranges)],
                "bends": [dict(b) for b in self.bends],
                **({"accuracy": self.accuracy} if self.accuracy is not None else {}),
                "criterion": self.criterion,
                "method": self.method,
                "residuals": self.residuals,
                "n": self.n,
                "source": self.source,
            }
        )

    @property
    def reliable(self) -> bool:
        return self.success and all(r.reliable for r in self.ranges)

    def range_for(self, s: float) -> LoggpRange:
        """The range that applies to size s (see :func:`range_index`)."""
        return self.ranges[int(range_index(self, s))]


# --------------------------------------------------------------------------------------
# Loading and predicting
# --------------------------------------------------------------------------------------


def _num(
    doc: Mapping[str, Any], key: str, where: str, *, required: bool = True, signed: bool = False
) -> float | None:
    if key not in doc or doc[key] is None:
        if required:
            raise ModelError(f"{where}: missing '{key}'")
        return None
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        raise ModelError(f"{where}: '{key}' must be a finite number, got {v!r}")
    if float(v) < 0.0 and not signed:
        raise ModelError(f"{where}: '{key}' must be >= 0, got {v!r}")
    return float(v)


def _range_from_json(doc: Any, where: str) -> LoggpRange:
    if not isinstance(doc, Mapping):
        raise ModelError(f"{where}: a range must be an object")
    fb = doc.get("from_bytes")
    if isinstance(fb, bool) or not isinstance(fb, int) or fb < 0:
        raise ModelError(f"{where}: 'from_bytes' must be an integer >= 0, got {fb!r}")
    tb = doc.get("to_bytes")
    if tb is not None and (isinstance(tb, bool) or not isinstance(tb, int) or tb < fb):
        raise ModelError(f"{where}: 'to_bytes' must be null or an integer >= from_bytes")
    vals = {k: _num(doc, k, where) for k in _CONTRACT_PARAMS}
    big_o = _num(doc, "O_us_per_byte", where, required=False)
    glat = _num(doc, "Glat_us_per_byte", where, required=False)
    split = {k: _num(doc, k, where, required=False) for k in _SPLIT_PARAMS}
    src = doc.get("o_r_source")
    ci: dict[str, tuple[float, float]] = {}
    raw_ci = doc.get("ci95", {})
    if not isinstance(raw_ci, Mapping):
        raise ModelError(f"{where}: 'ci95' must be an object")
    for k, v in raw_ci.items():
        if (
            not isinstance(v, list | tuple)
            or len(v) != 2
            or not all(isinstance(t, int | float) and not isinstance(t, bool) for t in v)
        ):
            raise ModelError(f"{where}: ci95['{k}'] must be [lo, hi]")
        ci[str(k)] = (float(v[0]), float(v[1]))
    own = doc.get("range_overhead")
    if own is not None:
        if not isinstance(own, Mapping):
            raise ModelError(f"{where}: 'range_overhead' must be an object")
        for k in ("o_s_us", "o_r_us"):
            _num(own, k, f"{where}: range_overhead", required=False)
    return LoggpRange(
        from_bytes=int(fb),
        to_bytes=None if tb is None else int(tb),
        L_us=float(vals["L_us"] or 0.0),
        o_us=float(vals["o_us"] or 0.0),
        g_us=float(vals["g_us"] or 0.0),
        G_us_per_byte=float(vals["G_us_per_byte"] or 0.0),
        O_us_per_byte=float(big_o or 0.0),
        Glat_us_per_byte=glat,
        o_r_source=str(src) if src is not None else None,
        ci95=ci,
        reliable=bool(doc.get("reliable", True)),
        warnings=[str(w) for w in doc.get("warnings", [])],
        notes=[str(w) for w in doc.get("notes", [])],
        points=int(doc.get("points", 0) or 0),
        last_measured_bytes=doc.get("last_measured_bytes"),
        o_s_us=split["o_s_us"],
        o_r_us=split["o_r_us"],
        O_s_us_per_byte=split["O_s_us_per_byte"],
        O_r_us_per_byte=split["O_r_us_per_byte"],
        range_overhead=dict(own) if own is not None else None,
        support_from=_support_of(doc, where),
        pieces=_pieces_of(doc, where),
        bounds=[dict(b) for b in doc.get("bounds", []) if isinstance(b, Mapping)],
        accuracy=dict(doc["accuracy"]) if isinstance(doc.get("accuracy"), Mapping) else None,
    )


def _pieces_of(doc: Mapping[str, Any], where: str) -> list[Piece]:
    raw = doc.get("pieces")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ModelError(f"{where}: 'pieces' must be a list")
    pieces = [_piece_from_json(p, f"{where}: pieces[{i}]") for i, p in enumerate(raw)]
    for i in range(1, len(pieces)):
        if pieces[i].from_bytes <= pieces[i - 1].from_bytes:
            raise ModelError(f"{where}: pieces must be sorted by increasing from_bytes")
    return pieces


def _support_of(doc: Mapping[str, Any], where: str) -> float | None:
    v = doc.get("support_from")
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 <= float(v) <= 1.0:
        raise ModelError(f"{where}: 'support_from' must be null or a number in [0, 1], got {v!r}")
    return float(v)


def _bends_of(doc: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    raw = doc.get("bends") or []
    if not isinstance(raw, list):
        raise ModelError(f"{where}: 'bends' must be a list")
    out: list[dict[str, Any]] = []
    for i, b in enumerate(raw):
        ok = isinstance(b, Mapping)
        between = b.get("between_bytes") if ok else None
        sup = b.get("support") if ok else None
        if not (
            isinstance(between, list)
            and len(between) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in between)
            and (sup is None or (isinstance(sup, int | float) and not isinstance(sup, bool)))
        ):
            raise ModelError(
                f"{where}: bends[{i}] must be {{'between_bytes': [a, b], 'support': x}}"
            )
        out.append({"between_bytes": [int(between[0]), int(between[1])], "support": sup})
    return out


def loggp_from_json(doc: Mapping[str, Any], where: str = "model") -> LoggpFit:
    """Validates a fitted-model document and returns it as a :class:`LoggpFit`."""
    if not isinstance(doc, Mapping):
        raise ModelError(f"{where}: a model document must be a JSON object")
    model = doc.get("model")
    if model != "loggp":
        raise ModelError(f"{where}: not a loggp model (model = {model!r})")
    raw_ranges = doc.get("ranges")
    if not isinstance(raw_ranges, list) or not raw_ranges:
        raise ModelError(f"{where}: 'ranges' must be a non-empty list")
    ranges = [_range_from_json(r, f"{where}: ranges[{i}]") for i, r in enumerate(raw_ranges)]
    for i in range(1, len(ranges)):
        if ranges[i].from_bytes <= ranges[i - 1].from_bytes:
            raise ModelError(f"{where}: ranges must be sorted by increasing from_bytes")
    n = doc.get("n")
    return LoggpFit(
        ranges=ranges,
        success=bool(doc.get("success", True)),
        message=str(doc.get("message", "")),
        transport=str(doc.get("transport", "unknown")),
        n=int(n) if isinstance(n, int) and not isinstance(n, bool) else None,
        criterion=dict(doc.get("criterion") or {}),
        residuals=dict(doc.get("residuals") or {}),
        source=dict(doc.get("source") or {}),
        method=dict(doc.get("method") or {}),
        o_r_source=str(doc["o_r_source"]) if doc.get("o_r_source") is not None else None,
        network=dict(doc.get("network") or {}),
        bends=_bends_of(doc, where),
        accuracy=dict(doc["accuracy"]) if isinstance(doc.get("accuracy"), Mapping) else None,
    )


def load_loggp_model(path: str | Path) -> LoggpFit:
    """Reads a fitted LogGP model (the JSON of :meth:`LoggpFit.to_json`) and validates it.

    Raises :class:`ModelError` (a ``ValueError``) naming the file when it cannot be read,
    is not JSON, or is not a valid ``loggp`` model.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{p}: cannot read model file: {exc.strerror}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{p}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    return loggp_from_json(doc, str(p))


def _as_fit(model: LoggpFit | Mapping[str, Any] | str | Path) -> LoggpFit:
    if isinstance(model, LoggpFit):
        if not model.ranges:
            raise ModelError("the model has no ranges (the fit failed)")
        return model
    if isinstance(model, str | Path):
        return load_loggp_model(model)
    return loggp_from_json(model)


def range_index(model: LoggpFit | Mapping[str, Any] | str | Path, s: ArrayLike) -> Any:
    """Index of the range that applies to size s: the last range whose from_bytes <= s.

    Sizes below the first range use the first range; sizes in the unmeasured gap between
    ranges use the lower range.
    """
    fit = _as_fit(model)
    starts = np.array([r.from_bytes for r in fit.ranges], dtype=np.float64)
    idx = np.searchsorted(starts, np.asarray(s, dtype=np.float64), side="right") - 1
    return np.clip(idx, 0, len(starts) - 1)


#: Columns of _params_at.
_P_L, _P_G_GAP, _P_GBIG, _P_GLAT, _P_OS, _P_OSB, _P_OR, _P_ORB, _P_O, _P_OB = range(10)


def _params_at(fit: LoggpFit, s: FloatArray) -> FloatArray:
    idx = range_index(fit, s)
    table = np.array(
        [
            [
                r.L_us,
                r.g_us,
                r.G_us_per_byte,
                r.Glat_us_per_byte if r.Glat_us_per_byte is not None else r.G_us_per_byte,
                r.value("o_s_us"),
                r.value("O_s_us_per_byte"),
                r.value("o_r_us"),
                r.value("O_r_us_per_byte"),
                r.o_us,
                r.O_us_per_byte,
            ]
            for r in fit.ranges
        ]
    )
    return np.asarray(table[idx])


def _ret(v: FloatArray, scalar: bool) -> Any:
    return float(v) if scalar else v


def _all_pieces(fit: LoggpFit) -> list[Piece] | None:
    """Every range's pieces in order, or None where a range has none (an older model:
    predicted from the range parameters)."""
    if not fit.ranges or any(not r.pieces for r in fit.ranges):
        return None
    return [p for r in fit.ranges for p in r.pieces]


def _piece_series(pieces: list[Piece], key: str, s: FloatArray) -> FloatArray:
    """The series ``key`` of the piece of each size (the last piece whose from_bytes <= s;
    sizes below the first use the first), held at >= 0 (a line extrapolated past its
    piece may fall below 0, which no time can)."""
    starts = np.array([p.from_bytes for p in pieces], dtype=np.float64)
    idx = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(pieces) - 1)
    a = np.array([p.lines[key][0] for p in pieces])[idx]
    b = np.array([p.lines[key][1] for p in pieces])[idx]
    return np.asarray(np.maximum(a + (s - starts[idx]) * b, 0.0), dtype=np.float64)


def g_all(model: LoggpFit | Mapping[str, Any] | str | Path, s: ArrayLike) -> Any:
    """G_all(s) = g + (s-1) G of the range of s, in us."""
    fit = _as_fit(model)
    sa = np.asarray(s, dtype=np.float64)
    pieces = _all_pieces(fit)
    if pieces is not None:
        return _ret(_piece_series(pieces, "gall", sa), sa.ndim == 0)
    p = _params_at(fit, sa)
    return _ret(p[..., _P_G_GAP] + (sa - 1.0) * p[..., _P_GBIG], sa.ndim == 0)


def overhead(
    model: LoggpFit | Mapping[str, Any] | str | Path,
    s: ArrayLike,
    side: Literal["both", "send", "recv"] = "both",
) -> Any:
    """The overhead at size s of the range of s, in us: the network-wide overhead at s=1
    plus the range's per-byte slope times (s-1).

    ``side="both"``: the symmetric o(s) = o + (s-1) O = (o_s(s) + o_r(s))/2;
    ``"send"``: o_s(s) = o_s + (s-1) O_s; ``"recv"``: o_r(s) = o_r + (s-1) O_r (both equal
    to o(s) in a model without them).
    """
    fit = _as_fit(model)
    sa = np.asarray(s, dtype=np.float64)
    cols = {"both": (_P_O, _P_OB), "send": (_P_OS, _P_OSB), "recv": (_P_OR, _P_ORB)}
    if side not in cols:
        raise ValueError(f"side must be 'both', 'send' or 'recv', got {side!r}")
    pieces = _all_pieces(fit)
    if pieces is not None:
        o_s = _piece_series(pieces, "os", sa)
        o_r = _piece_series(pieces, "or", sa)
        v = o_s if side == "send" else o_r if side == "recv" else 0.5 * (o_s + o_r)
        return _ret(v, sa.ndim == 0)
    p = _params_at(fit, sa)
    a, b = cols[side]
    return _ret(p[..., a] + (sa - 1.0) * p[..., b], sa.ndim == 0)


def prtt(
    model: LoggpFit | Mapping[str, Any] | str | Path,
    n: ArrayLike,
    d: ArrayLike,
    s: ArrayLike,
) -> Any:
    """The model's PRTT(n, d, s) in us (scalars or broadcast arrays).

    With r the range of s: PRTT(1,0,s) = 2 (L + o_s(s) + o_r(s) + (s-1) G_lat,r), where
    o_s(s) = o_s + (s-1) O_s,r and o_r(s) = o_r + (s-1) O_r,r with the network-wide L, o_s,
    o_r (the same in every range of a fitted model) and the range's per-byte slopes, and
    G_lat,r the range's latency slope (G_r where a model has none); PRTT(n,d,s) =
    PRTT(1,0,s) + (n-1) max(o_s(s) + d, G_all(s)) with G_all(s) = g_r + (s-1) G_r (d = 0:
    PRTT(n,0,s) = PRTT(1,0,s) + (n-1) G_all(s)). A model with only the symmetric o has
    o_s = o_r = o: the paper's formulas. The values are read from each range as stored, so
    a model whose ranges hold different L or o (older files) is predicted as it says.

    A fitted model has pieces (:class:`Piece`): then the same formulas take PRTT(1,0,s)/2,
    G_all(s) and o_s(s) from the lines of the piece of s, which follow the bends within a
    range and the overlap of sending and receiving that the range's parameters cannot
    (docs/fit.md, section 4).
    """
    fit = _as_fit(model)
    sa, na, da = np.broadcast_arrays(
        np.asarray(s, dtype=np.float64),
        np.asarray(n, dtype=np.float64),
        np.asarray(d, dtype=np.float64),
    )
    pieces = _all_pieces(fit)
    if pieces is not None:
        h = _piece_series(pieces, "h", sa)
        gp = _piece_series(pieces, "gall", sa)
        osp = _piece_series(pieces, "os", sa)
        perp = np.where(da > 0.0, np.maximum(osp + da, gp), gp)
        return _ret(2.0 * h + (na - 1.0) * perp, sa.ndim == 0)
    p = _params_at(fit, sa)
    x = sa - 1.0
    o_s = p[..., _P_OS] + x * p[..., _P_OSB]
    o_r = p[..., _P_OR] + x * p[..., _P_ORB]
    gall = p[..., _P_G_GAP] + x * p[..., _P_GBIG]
    p1 = 2.0 * (p[..., _P_L] + o_s + o_r + x * p[..., _P_GLAT])
    per = np.where(da > 0.0, np.maximum(o_s + da, gall), gall)
    out = p1 + (na - 1.0) * per
    return _ret(out, sa.ndim == 0)
