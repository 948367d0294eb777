"""What every export reads: the source of an export (a gauge report folder, a
``model-loggp.json`` or a ``measurements.jsonl``) as one value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ExportSource:
    """The source of an export: ``model`` is the content of ``model-loggp.json`` (may be
    empty where only measurements were given), the paths say where it came from (None where
    absent), ``transport`` the transport it was measured over and ``intra_host`` whether it
    was measured within one host (shm, or MPI on one node)."""

    model: dict[str, Any]
    model_path: Path | None
    report_dir: Path | None
    measurements_path: Path | None
    transport: str
    intra_host: bool
