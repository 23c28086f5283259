"""distpriv: distribution privacy for global properties of datasets.

Implements Chen & Ohrimenko (distribution privacy), Zhang, Ohrimenko & Cummings
(attribute privacy) and Kawamoto & Murakami (local and divergence distribution
privacy). See ``distpriv.calibrate`` for the central mechanisms and
``distpriv.local`` for finite-domain obfuscation.
"""

from __future__ import annotations

from . import calibration, distances
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

__version__ = "0.1.0"

__all__ = [
    "MECHANISMS",
    "AssumptionError",
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
    "QueryModel",
    "UnknownLabelError",
    "calibrate",
    "calibration",
    "compose",
    "distances",
    "normalize_pairs",
    "pair_stats",
    "pairs_from_grid",
]
