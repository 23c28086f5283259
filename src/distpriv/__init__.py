"""distpriv: distribution privacy for global properties of datasets.

Implements Chen & Ohrimenko (distribution privacy), Zhang, Ohrimenko & Cummings
(attribute privacy) and Kawamoto & Murakami (local and divergence distribution
privacy). See ``distpriv.calibrate`` for the central mechanisms and
``distpriv.local`` for finite-domain obfuscation.
"""

from __future__ import annotations

from . import calibration, distances
from .auditing import AuditReport, audit
from .errors import (
    AssumptionError,
    AssumptionWarning,
    ClassicCalibrationWarning,
    DataUnavailableError,
    DistPrivError,
    InvalidParameterError,
    InvalidTypeError,
    UnknownLabelError,
)
from .guarantees import Guarantee, compose
from .mechanisms import MECHANISMS, Mechanism, calibrate
from .models import (
    EmpiricalModel,
    GaussianModel,
    QueryModel,
    normalize_pairs,
    pair_stats,
    pairs_from_grid,
)
from .property import PropertyModel
from .queries import ADULT_QUERY, Predicate, Query, Statistic

__version__ = "0.1.0"

_LAZY = ("accounting", "attacks", "attribute", "datasets", "divergences", "local", "relaxed")


def __getattr__(name: str):
    """Import the heavier sub-packages (``dp.local``, ``dp.attribute``, ...) on first use."""
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'distpriv' has no attribute {name!r}")


__all__ = [
    "ADULT_QUERY",
    "MECHANISMS",
    "AssumptionError",
    "AuditReport",
    "AssumptionWarning",
    "ClassicCalibrationWarning",
    "DataUnavailableError",
    "DistPrivError",
    "EmpiricalModel",
    "GaussianModel",
    "Guarantee",
    "InvalidParameterError",
    "InvalidTypeError",
    "Mechanism",
    "Predicate",
    "PropertyModel",
    "Query",
    "QueryModel",
    "Statistic",
    "UnknownLabelError",
    "audit",
    "calibrate",
    "calibration",
    "compose",
    "distances",
    "normalize_pairs",
    "pair_stats",
    "pairs_from_grid",
]
