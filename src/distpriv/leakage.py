"""Distribution-inference risk in Suri & Evans' terms: n_leaked, and the cap a distribution-privacy claim puts on it.

Suri & Evans ("Formalizing and Estimating Distribution Inference Risks", PETS 2022; public code
``iamgroot42/FormEstDistRisks``, ``get_n_effective``) measure a distribution-inference attack that tells
D_0 from D_1 — here: datasets whose records satisfy a property with probability p_0 or p_1 — by the number
of records an ideal adversary would need to see to be as accurate. Seeing n records (each satisfies the
property with probability p, independently) the Bayes-optimal accuracy for a uniform prior on the pair is
at most (their bound, through the Bhattacharyya coefficient of the per-record laws)

    acc_n <= ½ + ½ √(1 − ρⁿ),   ρ = max(p_min / p_max, (1 − p_max) / (1 − p_min)),

and n_leaked is the n at which an attack's accuracy meets it:

    n_leaked(acc) = ln(1 − (2 acc − 1)²) / ln ρ.

Since the curve bounds the ideal accuracy from above, an ideal adversary needs at least n_leaked(acc) records
to be as accurate as the attack (the exact Bayes accuracy with n records, ½(1 + TV(Bin(n, p_0), Bin(n, p_1))),
is checked against the curve in tests/core/test_leakage.py). An attack at chance (acc <= ½) leaks 0 records;
acc = 1 leaks ∞.

Distribution privacy caps every attack at once. If the release M is (ε, δ)-indistinguishable on the pair
(Chen & Ohrimenko Def. 3.2 / Kawamoto & Murakami's DistP: P(M ∈ S | θ_0) <= e^ε P(M ∈ S | θ_1) + δ and the
same with θ_0, θ_1 swapped), any test S has, under a uniform prior, accuracy ½(P_0(S) + P_1(Sᶜ)) with
a = P_0(S), c = P_1(Sᶜ) bound by a + e^ε c <= e^ε + δ and c + e^ε a <= e^ε + δ; adding the two,

    acc <= (e^ε + δ) / (1 + e^ε)    (:func:`accuracy_cap`),

so n_leaked(acc) <= n_leaked((e^ε + δ) / (1 + e^ε)) for every attacker (:func:`n_leaked_cap`): a claimed
guarantee read in Suri & Evans' unit.
"""

from __future__ import annotations

import math

from ._validation import check_delta, check_epsilon, check_real
from .errors import InvalidParameterError


def _rho(p0: float, p1: float) -> float:
    """ρ = max(p_min/p_max, (1 − p_max)/(1 − p_min)) of the module notes (1 when p0 = p1, 0 when the laws are disjoint)."""
    lo, hi = min(p0, p1), max(p0, p1)
    a = lo / hi if hi > 0 else 1.0
    b = (1.0 - hi) / (1.0 - lo) if lo < 1 else 1.0
    return max(a, b)


def _check_pair(p0: float, p1: float) -> tuple[float, float]:
    """The two shares, each a probability in [0, 1]."""
    out = []
    for value, name in ((p0, "p0"), (p1, "p1")):
        p = check_real(value, name)
        if not 0.0 <= p <= 1.0:
            raise InvalidParameterError(f"must lie in [0, 1], got {p}", argument=name)
        out.append(p)
    return out[0], out[1]


def optimal_accuracy(n: float, p0: float, p1: float) -> float:
    """Suri & Evans' bound ½ + ½ √(1 − ρⁿ) on the accuracy of an ideal adversary that sees ``n`` >= 0 records
    (module notes); ½ when p0 = p1, 1 when the per-record laws are disjoint (n > 0)."""
    p0, p1 = _check_pair(p0, p1)
    n = check_real(n, "n")
    if n < 0:
        raise InvalidParameterError(f"must be >= 0, got {n}", argument="n")
    rho = _rho(p0, p1)
    if n == 0 or rho >= 1.0:
        return 0.5
    if rho <= 0.0:
        return 1.0
    return 0.5 + 0.5 * math.sqrt(max(0.0, -math.expm1(n * math.log(rho))))


def n_leaked(accuracy: float, p0: float, p1: float) -> float:
    """Suri & Evans' n_leaked = ln(1 − (2 acc − 1)²) / ln ρ: the records an ideal adversary needs to match
    ``accuracy``. 0 at or below chance; ∞ at accuracy 1, and for any accuracy above chance when p0 = p1 (no
    number of records tells equal laws apart); 0 (the formula's limit) when the per-record laws are disjoint."""
    acc = check_real(accuracy, "accuracy")
    if not 0.0 <= acc <= 1.0:
        raise InvalidParameterError(f"must lie in [0, 1], got {acc}", argument="accuracy")
    p0, p1 = _check_pair(p0, p1)
    if acc <= 0.5:
        return 0.0
    rho = _rho(p0, p1)
    if rho >= 1.0 or acc >= 1.0:
        return math.inf
    if rho <= 0.0:
        return 0.0
    return math.log1p(-((2.0 * acc - 1.0) ** 2)) / math.log(rho)


def accuracy_cap(epsilon: float, delta: float) -> float:
    """(e^ε + δ)/(1 + e^ε), at most 1: the highest accuracy of any test of an (ε, δ)-indistinguishable pair under a
    uniform prior (module notes)."""
    eps, d = check_epsilon(epsilon), check_delta(delta, allow_zero=True)
    # (e^ε + δ)/(1 + e^ε) = 1 − (1 − δ)/(1 + e^ε), written to stay exact for large ε
    return min(1.0, 1.0 - (1.0 - d) / (1.0 + math.exp(min(eps, 700.0))))


def n_leaked_cap(epsilon: float, delta: float, p0: float, p1: float) -> float:
    """n_leaked(accuracy_cap(ε, δ)): the most records' worth any attacker can learn from an (ε, δ)-indistinguishable
    release of the pair (module notes)."""
    return n_leaked(accuracy_cap(epsilon, delta), p0, p1)
