"""`railgauge predict`: one quantity from a fitted model file (LoP or LogGP)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from railgauge.cli.common import UserError, no_file, size_option
from railgauge.terminal import Terminal

#: Quantities and the models that have them.
QUANTITIES: dict[str, tuple[str, ...]] = {
    "rtt": ("lop", "loggp"),
    "rtt-total": ("lop", "loggp"),
    "L": ("lop", "loggp"),
    "1:n": ("lop",),
    "o_s": ("lop", "loggp"),
    "o_r": ("lop", "loggp"),
    "prtt": ("loggp",),
    "g_all": ("loggp",),
}

_HELP = """Predict QUANTITY from a fitted model (model-lop.json or model-loggp.json), in us.

\b
LoP model (railgauge fit --model lop):
  rtt -p P        RTT(P)/P, the per-peer round-trip time the LoP RTT function describes
  rtt-total -p P  the whole 1:n round, P * RTT(P)/P
  L -p P          L(P) = RTT(P)/2 - (o_s(P) + o_s(1))   (--list: L_list)
  1:n -p N        t_1:n = o(N) + N L(N)                  (--list: t_1:n^list)
  o_s -p P, o_r -p P   send / receive overhead per request
\b
LogGP model (railgauge fit):
  rtt -s S [-p P] (PRTT(1,0,S) + (P-1) max(G_all(S), o_s(S)))/P, the slides' LogP
                  prediction per peer (P = 1: PRTT(1,0,S))
  rtt-total, prtt -n N -d D -s S, L, o_s, o_r, g_all -s S
"""


def _kind_of(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read model file: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a JSON model file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("model") not in ("lop", "loggp"):
        got = doc.get("model") if isinstance(doc, dict) else None
        raise UserError(f"{path}: not a lop or loggp model (model = {got!r})")
    return str(doc["model"]), doc


@click.command(help=_HELP)
@click.option("--model", "model_path", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="A fitted model file (model-lop.json, model-loggp.json).")
@click.argument("quantity", type=click.Choice(list(QUANTITIES)))
@click.option("-p", "p", type=click.IntRange(min=1), default=None,
              help="Peers addressed at once (n of t_1:n), >= 1.")
@click.option("-s", "s", default=None, callback=size_option,
              help="Message size (units allowed: 64KiB); LogGP default 1 B.")
@click.option("-n", "n", type=click.IntRange(min=1), default=1, show_default=True,
              help="prtt: messages in the train.")
@click.option("-d", "d", type=click.FloatRange(min=0.0), default=0.0, show_default=True,
              help="prtt: busy delay between the sends (us).")
@click.option("--list", "as_list", is_flag=True,
              help="L and 1:n: the list-posting variant (L_list, t_1:n^list).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead.")
def predict(model_path: Path, quantity: str, p: int | None, s: int | None, n: int, d: float,
            as_list: bool, as_json: bool) -> int:
    term = Terminal()
    if not model_path.is_file():
        raise UserError(no_file(model_path))
    kind, doc = _kind_of(model_path)
    if kind not in QUANTITIES[quantity]:
        raise UserError(f"{quantity} is not a quantity of a {kind} model "
                        f"(it has: {', '.join(q for q, k in QUANTITIES.items() if kind in k)})")
    if as_list and (quantity not in ("L", "1:n") or kind != "lop"):
        raise UserError("--list applies to L and 1:n of a LoP model only")
    try:
        out = (_lop(term, doc, model_path, quantity, p, s, as_list) if kind == "lop"
               else _loggp(doc, model_path, quantity, p, s, n, d))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    value = next(iter(out.values()))
    if not math.isfinite(value):
        raise UserError(f"the model gives no finite {quantity} here ({value})")
    if value < 0.0:
        term.warn(f"{quantity} is negative here: the model's posting overheads exceed half its "
                  "round trip (the LoP formulas assume they do not)")
    if as_json:
        term.result(json.dumps(out))
    else:
        term.result(f"{value:.6g}")
    return 0


def _lop(term: Terminal, doc: dict[str, Any], path: Path, quantity: str, p: int | None,
         s: int | None, as_list: bool) -> dict[str, Any]:
    from railgauge.fit.lop import lop_from_json

    model = lop_from_json(doc, str(path))
    if p is None:
        raise UserError(f"{quantity} of a LoP model needs -p: the number of peers addressed")
    if s is not None and model.s is not None and s != model.s:
        term.warn(f"the LoP model was fitted at s = {model.s} B only; -s {s} is ignored")
    if model.p_range is not None and not model.p_range[0] <= p <= model.p_range[1]:
        term.warn(f"p = {p} is outside the fitted range {model.p_range[0]}..{model.p_range[1]}: "
                  "extrapolated")
    if quantity == "rtt":
        v = float(model.rtt(p))
        return {"rtt_us": v, "rtt_total_us": v * p, "p": p}
    if quantity == "rtt-total":
        return {"rtt_total_us": float(model.rtt_total(p)), "p": p}
    if quantity == "L":
        if as_list:
            return {"L_list_us": float(model.latency_list(p)), "p": p}
        return {"L_us": float(model.latency(p)), "p": p}
    if quantity == "1:n":
        if as_list:
            return {"t_1n_list_us": float(model.t_1n_list(p)), "n": p}
        return {"t_1n_us": float(model.t_1n(p)), "n": p}
    if quantity == "o_s":
        return {"o_s_us": float(model.overhead_send(p)), "p": p}
    return {"o_r_us": float(model.overhead_recv(p)), "p": p}


def _loggp(doc: dict[str, Any], path: Path, quantity: str, p: int | None, s: int | None,
           n: int, d: float) -> dict[str, Any]:
    from railgauge.fit.loggp import g_all, loggp_from_json, overhead, prtt, range_index

    fit = loggp_from_json(doc, str(path))
    if not fit.ranges:
        raise UserError(f"{path}: the model has no ranges (the fit failed)")
    size = 1 if s is None else s
    sf = float(max(size, 1))
    pp = 1 if p is None else p
    if quantity in ("rtt", "rtt-total"):
        gap = max(float(g_all(fit, sf)), float(overhead(fit, sf, "send")))
        per = (float(prtt(fit, 1, 0.0, sf)) + (pp - 1) * gap) / pp
        if quantity == "rtt":
            return {"rtt_us": per, "rtt_total_us": per * pp, "p": pp, "s": size}
        return {"rtt_total_us": per * pp, "p": pp, "s": size}
    if quantity == "prtt":
        return {"prtt_us": float(prtt(fit, n, d, sf)), "n": n, "d_us": d, "s": size}
    if quantity == "L":
        return {"L_us": float(fit.ranges[int(range_index(fit, sf))].L_us), "s": size}
    if quantity == "o_s":
        return {"o_s_us": float(overhead(fit, sf, "send")), "s": size}
    if quantity == "o_r":
        return {"o_r_us": float(overhead(fit, sf, "recv")), "s": size}
    return {"g_all_us": float(g_all(fit, sf)), "s": size}
