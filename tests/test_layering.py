"""Each native layer includes only itself and the layers below it (STYLE.md, 2)."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "native" / "src"

#: What each layer may include, besides itself.
ALLOWED = {
    "base": set(),
    "boot": {"base"},
    "xport": {"base", "boot"},
    "proto": {"base", "boot", "xport"},
    # The schedule generator and the flag engine: data and shared memory, no transport.
    "coll": {"base"},
    # The runtime's executor of coll's schedules, above the runtime.
    "exec": {"base", "boot", "xport", "proto", "coll"},
    "sim": {"base", "coll"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.MULTILINE)


def test_layers_include_only_downwards() -> None:
    bad = []
    for layer_dir in sorted(p for p in SRC.iterdir() if p.is_dir()):
        layer = layer_dir.name
        assert layer in ALLOWED, f"native/src/{layer} is not a known layer; add it to ALLOWED"
        for f in sorted(layer_dir.rglob("*.[ch]")):
            for dep in INCLUDE.findall(f.read_text()):
                if dep != layer and dep not in ALLOWED[layer]:
                    bad.append(f"{f.relative_to(SRC)} includes {dep}/")
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_the_check_sees_includes() -> None:
    # The check would pass vacuously if the pattern never matched.
    text = (SRC / "xport" / "xport.h").read_text()
    assert set(INCLUDE.findall(text)) >= {"base", "boot"}


PY = Path(__file__).resolve().parent.parent / "python" / "railgauge"
PY_IMPORT = re.compile(r"^\s*(?:from|import)\s+(railgauge(?:\.[a-z_]+)*)", re.MULTILINE)


def test_report_depends_on_data_not_on_the_gauge() -> None:
    """The report package renders data (railgauge.parts, the fits, the measurements): it
    imports neither the modules that measure (gauge_*, measure, launcher) nor the CLI."""
    bad = []
    for f in sorted((PY / "report").rglob("*.py")):
        for mod in PY_IMPORT.findall(f.read_text()):
            top = mod.split(".")[1] if "." in mod else ""
            if top.startswith("gauge_") or top in ("cli", "measure", "launcher", "mpilaunch"):
                bad.append(f"{f.relative_to(PY)} imports {mod}")
    assert not bad, "\n".join(bad)
    assert PY_IMPORT.findall((PY / "report" / "lop.py").read_text())  # the pattern matches
