"""Sizes with units, as users type them: 64KiB, 1m, 4096."""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str) -> int:
    """Bytes from '4096', '64k', '64KiB', '1MiB' (binary units).

    >>> parse_size("1MiB")
    1048576
    """
    m = _SIZE_RE.match(text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"'{text}' is not a size (examples: 4096, 64KiB, 1MiB)")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def format_size(n: int | None) -> str:
    """'512 B', '64 KiB', '1 MiB', '12289 B' (exact: no rounding)."""
    if n is None:
        return "inf"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"
