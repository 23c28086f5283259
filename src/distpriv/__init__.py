"""distpriv: distribution privacy for global properties of datasets.

Implements Chen & Ohrimenko (distribution privacy), Zhang, Ohrimenko & Cummings
(attribute privacy) and Kawamoto & Murakami (local and divergence distribution
privacy). See ``distpriv.calibrate`` for the central mechanisms and
``distpriv.local`` for finite-domain obfuscation.

Every name is imported on first use (PEP 562), so ``import distpriv`` and the
``distpriv`` command line stay fast; ``import distpriv as dp; dp.calibrate(...)``
and ``from distpriv import GaussianModel`` work as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> sub-module holding it
_ATTRIBUTES: dict[str, str] = {
    "AuditReport": "auditing",
    "audit": "auditing",
    "AssumptionError": "errors",
    "AssumptionWarning": "errors",
    "ClassicCalibrationWarning": "errors",
    "DataUnavailableError": "errors",
    "DistPrivError": "errors",
    "InvalidParameterError": "errors",
    "InvalidTypeError": "errors",
    "UnknownLabelError": "errors",
    "Guarantee": "guarantees",
    "compose": "guarantees",
    "MECHANISMS": "mechanisms",
    "AdditiveNoiseMechanism": "mechanisms",
    "Mechanism": "mechanisms",
    "calibrate": "mechanisms",
    "EmpiricalModel": "models",
    "GaussianModel": "models",
    "QueryModel": "models",
    "normalize_pairs": "models",
    "pair_stats": "models",
    "pairs_from_grid": "models",
    "PropertyModel": "property",
    "ADULT_QUERY": "queries",
    "Predicate": "queries",
    "Query": "queries",
    "Statistic": "queries",
}
_SUBMODULES = ("accounting", "attacks", "attribute", "auditing", "calibration", "data", "datasets", "distances",
               "divergences", "guarantees", "leakage", "local", "mechanisms", "models", "moments", "protocol", "queries",
               "relaxed", "release")

if TYPE_CHECKING:
    from . import accounting as accounting
    from . import attacks as attacks
    from . import attribute as attribute
    from . import auditing as auditing
    from . import calibration as calibration
    from . import data as data
    from . import datasets as datasets
    from . import distances as distances
    from . import divergences as divergences
    from . import guarantees as guarantees
    from . import leakage as leakage
    from . import local as local
    from . import mechanisms as mechanisms
    from . import models as models
    from . import moments as moments
    from . import protocol as protocol
    from . import queries as queries
    from . import relaxed as relaxed
    from . import release as release
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
    from .mechanisms import MECHANISMS, AdditiveNoiseMechanism, Mechanism, calibrate
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


def __getattr__(name: str) -> Any:
    """Import a public name (``dp.calibrate``) or sub-package (``dp.local``) on first use."""
    if name in _ATTRIBUTES:
        value = getattr(importlib.import_module(f".{_ATTRIBUTES[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'distpriv' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ATTRIBUTES, *_SUBMODULES})


__all__ = [
    "ADULT_QUERY",
    "MECHANISMS",
    "AdditiveNoiseMechanism",
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
