"""JSON-ready copies of values: every model, report and comparison file is written with
``json.dumps(finite_json(value))``, so NaN and infinity (not JSON) become null and numpy
scalars and arrays become plain numbers and lists."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["finite_json"]


def finite_json(v: Any) -> Any:
    """A copy of a JSON-like value with numpy scalars and arrays made plain, mapping keys
    made strings and NaN/inf made None."""
    if isinstance(v, Mapping):
        return {str(k): finite_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [finite_json(x) for x in v]
    if isinstance(v, np.ndarray):
        return [finite_json(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
