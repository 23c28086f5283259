"""Attribute privacy (Zhang, Ohrimenko & Cummings): Pufferfish secrets, APGM and APMQM.

* :mod:`.pufferfish` — dataset / distributional attribute privacy (Definitions 4–5) as
  Pufferfish (S, Q, Θ), and the conversion to distribution-privacy pairs (Chen & Ohrimenko Thm 3.1).
* :mod:`.apgm` — Attribute-Private Gaussian Mechanism for a finite Θ (Algorithm 1, Theorems 1–2);
  :mod:`.apgm_box` — the APGM with Θ a box of model parameters; :mod:`.record_model` — the
  Gaussian-record moment models of Section 4.2 (:mod:`.gaussian` re-exports all three).
* :mod:`.bayesnet`, :mod:`.markov_quilt` — Bayesian networks over attribute parameters, max-influence
  (Definition 7), Markov quilts and the Attribute-Private Markov Quilt Mechanism (Algorithm 2, Theorems 3–4).
* :mod:`.examples` — the synthetic hospital (Section 4.2) and school (Example 1) settings.
"""

from __future__ import annotations

from .apgm import (
    AttributeGaussianMechanism,
    apgm,
    apgm_accuracy,
    apgm_noise_variance,
    gaussian_pair_delta,
    moments_from_samples,
)
from .apgm_box import apgm_box, exact_delta_box
from .bayesnet import Influence, ParameterNetwork, max_influence, random_network
from .markov_quilt import (
    ColumnSensitivity,
    MarkovQuilt,
    QuiltMechanism,
    apmqm,
    d_connected,
    enumerate_quilts,
    is_markov_quilt,
    quilt_for,
)
from .optimize import Extremum, box_extremum
from .pufferfish import (
    DistributionPufferfish,
    Interval,
    Lattice,
    Mixture,
    PufferfishFramework,
    Secret,
    SecretPair,
    dataset_attribute_privacy,
    distributional_attribute_privacy,
    from_distribution_privacy,
    to_distribution_privacy,
)
from .record_model import ClassConditionalColumn, GaussianRecordModel

__all__ = [
    "AttributeGaussianMechanism",
    "ClassConditionalColumn",
    "ColumnSensitivity",
    "DistributionPufferfish",
    "Extremum",
    "GaussianRecordModel",
    "Influence",
    "Interval",
    "Lattice",
    "MarkovQuilt",
    "Mixture",
    "ParameterNetwork",
    "PufferfishFramework",
    "QuiltMechanism",
    "Secret",
    "SecretPair",
    "apgm",
    "apgm_accuracy",
    "apgm_box",
    "apgm_noise_variance",
    "apmqm",
    "box_extremum",
    "d_connected",
    "dataset_attribute_privacy",
    "distributional_attribute_privacy",
    "enumerate_quilts",
    "exact_delta_box",
    "from_distribution_privacy",
    "gaussian_pair_delta",
    "is_markov_quilt",
    "max_influence",
    "moments_from_samples",
    "quilt_for",
    "random_network",
    "to_distribution_privacy",
]
