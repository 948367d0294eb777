"""Where the native tools are: installed beside the railgauge command, on PATH,
or in a development build tree."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


class NativeToolError(RuntimeError):
    """A native tool is missing."""


def find_tool(name: str) -> str:
    """The path of native tool `name` (for example ``railgauge-bench``).

    Looked up in order: ``$RG_NATIVE_DIR``, the directory of the running Python's
    scripts (where ``pip install .`` puts them), ``PATH``, and the build trees
    ``build/native`` of a source checkout."""
    env_dir = os.environ.get("RG_NATIVE_DIR")
    if env_dir:
        cand = Path(env_dir) / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
        raise NativeToolError(f"{name} not found in RG_NATIVE_DIR={env_dir}")
    cand = Path(sys.executable).parent / name
    if cand.is_file() and os.access(cand, os.X_OK):
        return str(cand)
    found = shutil.which(name)
    if found:
        return found
    root = Path(__file__).resolve().parents[2]
    cand = root / "build" / "native" / name
    if cand.is_file() and os.access(cand, os.X_OK):
        return str(cand)
    raise NativeToolError(
        f"{name} not found: install railgauge with `python3 -m pip install .` "
        "or set RG_NATIVE_DIR to the directory that holds it"
    )
