"""Writing an export's output so that a failure leaves nothing half-written: the files go into
a hidden folder beside the target, which takes the target's name only once every file is in."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


class ExportError(Exception):
    """Bad input or an output that cannot be written: the CLI prints it in one line and exits 2."""


@contextlib.contextmanager
def staged_dir(out: Path) -> Iterator[Path]:
    """A folder to write into; on success it becomes ``out`` (which must not exist, or be an
    empty folder), on any exception it is removed and ``out`` is left as it was."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out}: exists and is not an empty folder; give another --out")
    parent = out.parent if str(out.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    except OSError as exc:
        raise ExportError(f"{out}: cannot create the output folder: {exc.strerror}") from exc
    try:
        yield tmp
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_file_atomic(path: Path, text: str) -> None:
    """Writes text to path through a temporary file beside it, renamed at the end."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=parent)
    except OSError as exc:
        raise ExportError(f"{path}: cannot write: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
