"""Model fits of railgauge measurements.

:mod:`railgauge.fit.loggp` fits LogGP by PRTT (Hoefler, Lichei, Rehm 2007) with automatic
protocol ranges found by :mod:`railgauge.fit.segment`.
"""

from railgauge.fit.loggp import (
    DerivedSeries,
    LoggpFit,
    LoggpRange,
    ModelError,
    derive_series,
    fit_loggp,
    fit_loggp_arrays,
    g_all,
    load_loggp_model,
    loggp_from_json,
    overhead,
    prtt,
    range_index,
)
from railgauge.fit.segment import Segmentation, bic_penalty, segment

__all__ = [
    "DerivedSeries",
    "LoggpFit",
    "LoggpRange",
    "ModelError",
    "Segmentation",
    "bic_penalty",
    "derive_series",
    "fit_loggp",
    "fit_loggp_arrays",
    "g_all",
    "load_loggp_model",
    "loggp_from_json",
    "overhead",
    "prtt",
    "range_index",
    "segment",
]
