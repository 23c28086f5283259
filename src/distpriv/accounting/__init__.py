"""Privacy accounting: certified privacy profiles of what mechanisms output under a Gaussian f_θ model.

* :mod:`.gaussian` — two Gaussians, equal or unequal covariances (closed forms, Fourier inversion, discretised PLD);
* :mod:`.fourier` — certified δ(ε) of a generalised chi-square loss by Fourier inversion (unequal covariances);
* :mod:`.laplace` — Gaussian query values plus Laplace noise (1-D exact, products, coupling bound);
* :mod:`.pld` — discretised privacy-loss distributions with a certified bracket;
* :mod:`.release` — what a release proves over Ψ for a noise law (:func:`proven_delta`);
* :mod:`.topup` — calibration by top-up (adding noise is post-processing);
* :mod:`.radius` — proven high-probability ℓ1 radii (Approximate Wasserstein).
"""

from __future__ import annotations

from .gaussian import gaussian_1d_delta, gaussian_pair_profile, reduce_pair
from .profile import EpsilonBound, Profile
from .radius import gaussian_l1_radius, sample_l1_radius
from .release import NoiseLaw, proven_delta, proven_epsilon, pure_epsilon
from .topup import TopUp, topup_gaussian, topup_laplace, topup_pure

__all__ = [
    "EpsilonBound",
    "NoiseLaw",
    "Profile",
    "TopUp",
    "gaussian_1d_delta",
    "gaussian_l1_radius",
    "gaussian_pair_profile",
    "proven_delta",
    "proven_epsilon",
    "pure_epsilon",
    "reduce_pair",
    "sample_l1_radius",
    "topup_gaussian",
    "topup_laplace",
    "topup_pure",
]
