"""`railgauge export`: the measured model in the simulators people already run (SimGrid SMPI,
LogGOPSim / ATLAHS, CODES and Netgauge's scripts); docs/export.md."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from railgauge.cli.common import UserError
from railgauge.terminal import Terminal

TARGETS = ("simgrid", "loggopsim", "netgauge")


def _size(text: str | None, option: str) -> int | None:
    from railgauge.units import parse_size

    if text is None:
        return None
    try:
        value = parse_size(text)
    except ValueError as exc:
        raise UserError(f"{option}: {exc}") from None
    if value < 1:
        raise UserError(f"{option}: a size >= 1 byte, got {text!r}")
    return value


def _check_applies(to: str, given: dict[str, Any]) -> None:
    """Options of one target given with another --to are an error, not silently ignored."""
    belongs = {"--size": "loggopsim", "--max-rows": "netgauge", "--hosts": "simgrid",
               "--topology": "simgrid"}
    wrong = [opt for opt, val in given.items() if val is not None and belongs[opt] != to]
    if wrong:
        names = ", ".join(f"{opt} (--to {belongs[opt]})" for opt in wrong)
        raise UserError(f"{names}: not an option of --to {to}")


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--to", "to", type=click.Choice(TARGETS), required=True,
              help="The simulator or format: simgrid (SMPI platform and configuration), "
                   "loggopsim (LogGOPSim's / ATLAHS's flags), netgauge (Netgauge's loggp "
                   "table, which CODES' LogGP model-net reads).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="simgrid: the folder to write (default railgauge-simgrid-<time>); "
                   "netgauge: the table file (default railgauge-netgauge-<time>.txt); "
                   "loggopsim: a file for the flags line (default: print it only).")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: what was written and the values chosen.")
@click.option("--rendezvous-at", "rendezvous_at", default=None, metavar="SIZE",
              help="Messages of SIZE bytes and more go by rendezvous (default: inferred "
                   "from the model's protocol changes, docs/export.md).")
@click.option("--size", "size", default=None, metavar="SIZE|LO-HI",
              help="loggopsim: the message size or size span whose protocol range gives "
                   "the flags (default: every size; the first range, with a note where "
                   "there are several).")
@click.option("--max-rows", "max_rows", type=int, default=None,
              help="netgauge: at most this many rows (default 100, what CODES holds); the "
                   "sizes at protocol changes are kept.")
@click.option("--hosts", "hosts", type=int, default=None,
              help="simgrid: hosts of the platform (default 2).")
@click.option("--topology", "topology", default=None,
              help="simgrid: the platform's shape (default flat: a star of hosts on one "
                   "switch).")
def export(source: Path, to: str, out: Path | None, as_json: bool, rendezvous_at: str | None,
           size: str | None, max_rows: int | None, hosts: int | None,
           topology: str | None) -> int:
    """Export a gauge report folder, a model-loggp.json or measurements (a
    measurements.jsonl; netgauge needs measurements) to SimGrid SMPI, LogGOPSim or
    Netgauge's loggp table."""
    from railgauge.export.common import load_source
    from railgauge.export.common import rendezvous_at as infer_rendezvous
    from railgauge.export.files import ExportError

    term = Terminal()
    _check_applies(to, {"--size": size, "--max-rows": max_rows, "--hosts": hosts,
                        "--topology": topology})
    override = _size(rendezvous_at, "--rendezvous-at")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        if to == "simgrid" and hosts is not None and hosts < 1:
            raise ExportError(f"--hosts: a platform needs at least 1 host, got {hosts}")
        if to == "netgauge" and max_rows is not None and max_rows < 2:
            raise ExportError(f"--max-rows: at least 2 rows, got {max_rows}")
        src = load_source(source)
        rdv, why = infer_rendezvous(src.model, override)
        if to == "loggopsim":
            from railgauge.export.loggopsim import export_loggopsim, parse_size_span

            span = parse_size_span(size) if size is not None else None
            doc = export_loggopsim(src, span=span, rendezvous=rdv, rendezvous_reason=why)
            if out is not None:
                from railgauge.export.files import write_file_atomic

                if out.is_dir():
                    raise ExportError(f"{out}: is a folder; --out for loggopsim names a file")
                write_file_atomic(out, " ".join(doc["flags"]) + "\n")
                doc["file"] = str(out)
        elif to == "netgauge":
            from railgauge.export.netgauge import CODES_MAX_ROWS, export_netgauge

            dest = out if out is not None else Path(f"railgauge-netgauge-{stamp}.txt")
            doc = export_netgauge(src, dest, max_rows=max_rows or CODES_MAX_ROWS)
        else:
            from railgauge.export.simgrid import export_simgrid

            dest = out if out is not None else Path(f"railgauge-simgrid-{stamp}")
            doc = export_simgrid(src, dest, hosts=hosts if hosts is not None else 2,
                                 topology=topology or "flat", rendezvous=rdv,
                                 rendezvous_reason=why)
    except ExportError as exc:
        raise UserError(str(exc)) from None
    if as_json:
        term.result(json.dumps(doc))
        return 0
    _show(term, to, doc, why)
    return 0


def _show(term: Terminal, to: str, doc: dict[str, Any], why: str) -> None:
    if to == "loggopsim":
        term.result(" ".join(doc["flags"]))
        term.info(f"units: {doc['units']}; -S {doc['S_bytes']}: {why}")
        for note in doc.get("notes", []):
            term.warn(note)
        if "file" in doc:
            term.info(f"written: {doc['file']}")
    elif to == "netgauge":
        term.result(f"{doc['file']}: {doc['rows']} rows of {doc['sizes']} sizes")
    else:
        for path in doc.get("files", []):
            term.result(str(path))
        if doc.get("smpirun_args"):
            term.info("smpirun " + " ".join(str(a) for a in doc["smpirun_args"])
                      + " -np N PROGRAM")
        term.info(f"rendezvous: {why}")
