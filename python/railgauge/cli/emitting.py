"""The options and the output shared by the commands that write a stack's settings
(`rails emit`, `rails bench --emit`, `tune rxwin --emit`; docs/transports.md, docs/rxwin.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from railgauge.cli.common import UserError
from railgauge.terminal import Terminal

STACK_VERSION_OPTION = click.option(
    "--stack-version", default=None, metavar="V",
    help="The stack's release the settings are for (default: the installed one, from "
         "ompi_info, mpichversion, ucx_info -v or libucp, mpiname).")
OUT_OPTION = click.option(
    "--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Write the stack's file here (default: its text on stdout).")


@contextmanager
def export_errors() -> Iterator[None]:
    """ExportError (bad input, an unwritable --out) as a UserError: exit 2, one line."""
    from railgauge.export.files import ExportError

    try:
        yield
    except ExportError as exc:
        raise UserError(str(exc)) from None


def check_out(out: Path | None) -> None:
    """Refuses, before any work, an --out that cannot be written (emit.check_out; UserError:
    exit 2, one line)."""
    from railgauge.emit import check_out as check

    with export_errors():
        check(out)


def finish(term: Terminal, em: Any, out: Path | None, as_json: bool,
           extra: dict[str, Any] | None = None) -> int:
    """Writes --out, prints the warnings on stderr, and the file's text (no --out), the
    contract's JSON object (--json) or where the file went."""
    from railgauge.emit import write_emitted

    with export_errors():
        write_emitted(em, out)
    for w in em.warnings:
        term.warn(w)
    if as_json:
        doc = em.to_json(str(out) if out is not None else None)
        doc.update(extra or {})
        click.echo(json.dumps(doc))
    elif out is None:
        click.echo(em.text, nl=False)
    else:
        term.result(f"{em.stack} {em.version}: {len(em.settings)} settings written to {out}")
    return 0
