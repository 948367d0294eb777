"""Performance models that ``railgauge compare-models`` fits and ranks, one module each.

Each module holds one ``MODEL`` object with ``name``, ``title``, ``params``,
``description`` and ``fit(train, data)`` (see :mod:`railgauge.models.base`); a new model is
one more module and one more line in :data:`MODELS`. What each model predicts for a PRTT
point and for an onen point is stated in its module docstring and in ``docs/lop.md``.
"""

from __future__ import annotations

from railgauge.models import bsp, loggp, logp, lop, pram
from railgauge.models.base import Dataset, Fitted, Model, NotApplicable, Point

__all__ = ["MODELS", "Dataset", "Fitted", "Model", "NotApplicable", "Point"]

#: The models in the order of the paper's comparison (simplest first).
MODELS: dict[str, Model] = {
    m.name: m for m in (pram.MODEL, bsp.MODEL, logp.MODEL, loggp.MODEL, lop.MODEL)
}
