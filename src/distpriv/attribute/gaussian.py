"""Attribute-Private Gaussian Mechanism (Zhang, Ohrimenko & Cummings, Section 4): the former single module.

Kept so that ``distpriv.attribute.gaussian`` imports keep working; the code lives in

* :mod:`.apgm` — finite Θ (Algorithm 1, Theorems 1–2), the mechanism type, Algorithm 1's arithmetic;
* :mod:`.apgm_box` — Θ a box of model parameters (suprema over the box, exact δ for unequal variances);
* :mod:`.record_model` — Section 4.2's record models (:class:`ClassConditionalColumn`, :class:`GaussianRecordModel`).
"""

from __future__ import annotations

from .apgm import (
    EQUAL_VAR,
    GAUSSIAN_COND,
    MOMENTS_TRUE,
    SAMPLED,
    THEOREM,
    AttributeGaussianMechanism,
    apgm,
    apgm_accuracy,
    apgm_noise_variance,
    gaussian_pair_delta,
    moments_from_samples,
)
from .apgm_box import (
    ScalarMoments,
    apgm_box,
    box_min_variance,
    box_sensitivity,
    box_variance_gap,
    exact_delta_box,
    worst_delta_box,
)
from .record_model import ClassConditionalColumn, GaussianRecordModel

__all__ = [
    "EQUAL_VAR",
    "GAUSSIAN_COND",
    "MOMENTS_TRUE",
    "SAMPLED",
    "THEOREM",
    "AttributeGaussianMechanism",
    "ClassConditionalColumn",
    "GaussianRecordModel",
    "ScalarMoments",
    "apgm",
    "apgm_accuracy",
    "apgm_box",
    "apgm_noise_variance",
    "box_min_variance",
    "box_sensitivity",
    "box_variance_gap",
    "exact_delta_box",
    "worst_delta_box",
    "gaussian_pair_delta",
    "moments_from_samples",
]
