"""Local distribution privacy (Kawamoto & Murakami) on finite domains.

A local mechanism is a row-stochastic matrix ``A[x, y]``; its lifting maps an
input distribution λ to ``A#(λ) = λ A``; distribution privacy of a pair
(λ0, λ1) is a divergence between the two lifted distributions, computed
exactly here. See:

* :class:`LocalMechanism` (alias ``Mechanism``), compositions :func:`sequential_shared` (⊙),
  :func:`sequential_independent` (•) and :meth:`Mechanism.post_process`;
* point mechanisms :func:`randomized_response`, :func:`planar_laplace`,
  :func:`planar_gaussian`, :func:`restricted_laplace`;
* accounting :func:`distp_epsilon`, :func:`distp_delta`,
  :func:`distp_divergence`, :func:`xdistp_epsilon`, :func:`distp_epsilon_pairs`;
* the tupling mechanism :class:`Tupling` (Algorithm 1; law, sampler, expected quality
  loss) and its accountant :class:`TuplingAccountant` (exact ε(δ), δ(ε) and KL by
  convolution, Theorem 3/7 bounds), to which Tupling's accounting methods delegate;
* the Bayes attacker :class:`BayesAttacker` / :func:`attack_success_rate`;
* coupling mechanisms :class:`CouplingMechanism` (divergence paper Section VI);
* regions for the location experiments :func:`build_regions`.
"""

from .accounting import (
    distp_delta,
    distp_divergence,
    distp_epsilon,
    distp_epsilon_pairs,
    distp_guarantee,
    dp_epsilon,
    privacy_profile,
    xdistp_epsilon,
)
from .attack import BayesAttacker, attack_success_rate
from .coupling import CouplingMechanism, coupling_theorem3, north_west_corner, optimal_coupling
from .mechanism import (
    LocalMechanism,
    Mechanism,
    check_stochastic_matrix,
    point_distribution,
    sequential_independent,
    sequential_shared,
)
from .point import (
    euclidean_cost,
    exponential_mechanism,
    planar_gaussian,
    planar_laplace,
    randomized_response,
    restricted_laplace,
)
from .regions import Regions, build_regions
from .tupling import EpsilonResult, Theorem3Bound, Tupling
from .tupling_accounting import TuplingAccountant

__all__ = [
    "BayesAttacker",
    "CouplingMechanism",
    "EpsilonResult",
    "LocalMechanism",
    "Mechanism",
    "Regions",
    "Theorem3Bound",
    "Tupling",
    "TuplingAccountant",
    "attack_success_rate",
    "build_regions",
    "check_stochastic_matrix",
    "coupling_theorem3",
    "distp_delta",
    "distp_divergence",
    "distp_epsilon",
    "distp_epsilon_pairs",
    "distp_guarantee",
    "privacy_profile",
    "dp_epsilon",
    "euclidean_cost",
    "exponential_mechanism",
    "north_west_corner",
    "optimal_coupling",
    "planar_gaussian",
    "planar_laplace",
    "point_distribution",
    "randomized_response",
    "restricted_laplace",
    "sequential_independent",
    "sequential_shared",
    "xdistp_epsilon",
]
