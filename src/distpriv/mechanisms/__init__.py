"""Central distribution-privacy mechanisms and the :func:`calibrate` factory."""

from __future__ import annotations

from .base import AdditiveNoiseMechanism, Mechanism
from .registry import LABELS, MECHANISMS, calibrate, check_noiseless

__all__ = ["LABELS", "AdditiveNoiseMechanism", "MECHANISMS", "Mechanism", "calibrate", "check_noiseless"]
