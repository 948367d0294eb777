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
    "coll": {"base", "boot", "xport", "proto"},
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
