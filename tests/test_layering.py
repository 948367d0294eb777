"""Each native layer includes only itself and the layers below it (STYLE.md, 2).

The layers: base; boot over base; xport (the transports) over boot; proto (the runtime,
over any transport) and rails (the rails transport, stacked on xport's transports) over
xport, side by side; coll over base only; exec over proto and coll; sim over base and
coll. The rails transport is opened by name like any other because the tools register it
with xport (rg_rails_register -> rg_xport_register), so xport never names it."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "native" / "src"

#: What each layer may include, besides itself.
ALLOWED = {
    "base": set(),
    "boot": {"base"},
    "xport": {"base", "boot"},
    # Over any transport: rails is one of them, registered from above, and
    # proto never names it.
    "proto": {"base", "boot", "xport"},
    # The rails transport stacks on xport's transports (one instance per rail)
    # and registers itself with xport (rg_xport_register); xport, proto, exec
    # and sim never include it.
    "rails": {"base", "boot", "xport"},
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


def test_xport_does_not_know_rails() -> None:
    # Not by include (checked above) and not by name: its ops and settings come to
    # xport's registry from above.
    bad = []
    for f in sorted((SRC / "xport").rglob("*.[ch]")):
        text = f.read_text()
        bad += [f"{f.relative_to(SRC)} names {w}" for w in ("rg_rails_", "rails_ops",
                                                             "rails_config") if w in text]
    assert not bad, "\n".join(bad)


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
