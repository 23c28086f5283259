"""Privacy under relaxed assumptions (Chen & Ohrimenko Section 5.4, appendix C.4).

The Expected Value mechanisms assume that the query distributions f_θ are
translations of one another, or Gaussian with equal covariances (Sections
5.1-5.3). In practice the mechanism is calibrated on approximations f̂_θ of the
true f_θ. Two theorems bound what is then lost:

* **Theorem 5.6** — if max(D^η_∞(f̂_θ ‖ f_θ), D^η_∞(f_θ ‖ f̂_θ)) <= λ for every θ
  (Definition 5.1, δ-approximate max-divergence), an (ε, δ) mechanism run on
  the approximations is (ε′, δ′)-distribution private with
  ε′ = ε + 2λ and δ′ = (1 + e^{ε+λ}) η + e^λ δ.
* **Theorem 5.7** — if W = sup_θ W∞(f_θ, f̂_θ) (L1 ground norm, Definition 4.1),
  adding extra noise Z′_k ~ Lap(W/λ) to every component restores
  (ε′, δ′) = (ε + 2λ, e^λ δ).

This package evaluates both theorems (:mod:`.theorems`), splits a target budget between the base
mechanism and the extra Laplace noise, and *estimates* from samples (:mod:`.gaps`) how far
the empirical f_θ are from the approximations the mechanisms use
(translations, equal covariances, Gaussians). The estimators work on finite
samples and are estimates, not certificates: a finite sample cannot prove a
bound on a divergence or a distance of the underlying distributions.
Both come together in one diagnosis, :func:`~distpriv.relaxed.diagnose.diagnose`.
"""

from __future__ import annotations

from .diagnose import (
    Gaps,
    diagnose,
    divergence_gaps,
    estimate_gaps,
    half_budget_eta,
    pooled_covariance,
    research_eta,
    wasserstein_gap,
)
from .gaps import (
    approx_max_divergence_gap,
    equal_covariance_gap,
    gaussian_w_infinity_gap,
    histogram_bins,
    max_equal_covariance_gap,
    translation_gap,
)
from .theorems import (
    BudgetSplit,
    PrivacyLoss,
    Theorem57,
    apply_theorem_5_6,
    split_budget_theorem_5_7,
    theorem_5_6,
    theorem_5_7,
)

__all__ = [
    "Gaps",
    "BudgetSplit",
    "PrivacyLoss",
    "Theorem57",
    "apply_theorem_5_6",
    "approx_max_divergence_gap",
    "diagnose",
    "equal_covariance_gap",
    "divergence_gaps",
    "estimate_gaps",
    "wasserstein_gap",
    "gaussian_w_infinity_gap",
    "half_budget_eta",
    "histogram_bins",
    "max_equal_covariance_gap",
    "pooled_covariance",
    "research_eta",
    "split_budget_theorem_5_7",
    "theorem_5_6",
    "theorem_5_7",
    "translation_gap",
]
