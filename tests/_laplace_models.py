"""The unequal-covariance Gaussian family shared by the Laplace-bound tests (and benchmarks/bench_laplace_common.py's
``unequal_model``, same lines and draws): Σ₀ = AAᵀ/2 + 0.5 I, Σ₁ = Σ₀ + 0.4 CCᵀ/2, means 10 + N(0, I)."""

from __future__ import annotations

import numpy as np


def random_model(seed: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(μ₀, Σ₀, μ₁, Σ₁) of the family at ``seed`` in ``d`` dimensions."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    cov = a @ a.T / 2 + 0.5 * np.eye(d)
    c = rng.normal(size=(d, d))
    return 10 + rng.normal(size=d), cov, 10 + rng.normal(size=d), cov + 0.4 * c @ c.T / 2
