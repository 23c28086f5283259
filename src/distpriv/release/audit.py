"""Auditing a mechanism: run property-inference attacks and turn the best one into a lower bound on ε.

**The bound.** Let an attacker see one release M(Data) with Data drawn from θ₁ or
θ₂ (equal priors) and guess which. Write α = Pr(guess θ₂ | θ₁) and
β = Pr(guess θ₁ | θ₂). If M is (ε, δ)-distribution private for (θ₁, θ₂)
(Chen & Ohrimenko Definition 3.2), applying the definition to the attacker's
rejection region S and to its complement gives

    1 − α <= e^ε β + δ     and     1 − β <= e^ε α + δ,

so TPR = 1 − β obeys ε >= ln((TPR − δ)/FPR) (and symmetrically). Adding the two
inequalities, with accuracy a = 1 − (α + β)/2 on a balanced test,

    a <= (e^ε + δ)/(1 + e^ε)    ⟺    ε >= ln((a − δ)/(1 − a)).

**Confidence.** Over T balanced test releases the number of correct guesses C
is a sum of independent Bernoulli trials (one classifier per repetition; given
it, test releases are independent). A one-sided Clopper–Pearson lower bound
a_lo on the mean success rate at confidence 1 − γ is valid for such
Poisson-binomial sums too (Hoeffding 1956: their tails are dominated by the
binomial's). Then ε_lo = ln((a_lo − δ)/(1 − a_lo)) (0 when a_lo <= (1 + δ)/2) is a
lower bound on the true ε with confidence 1 − γ. Choosing the best of k attacks
(and pairs) after the fact is paid for by Bonferroni: each bound is computed at
γ/k.

A lower bound above the claimed ε refutes the claim (up to the 1 − γ
confidence); one below it is consistent with the claim but does not prove it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .. import attacks
from .._validation import RngLike, as_rng, check_delta, check_int
from ..errors import InvalidParameterError

__all__ = ["AuditRow", "AuditResult", "clopper_pearson_lower", "epsilon_lower_bound", "run_audit"]

ATTACKS = ("meta-classifier", "adaptive", "likelihood-ratio")


def clopper_pearson_lower(successes: int, trials: int, confidence: float) -> float:
    """One-sided Clopper–Pearson lower confidence bound on a success probability."""
    k = check_int(successes, "successes", minimum=0)
    n = check_int(trials, "trials", minimum=1)
    if k > n:
        raise InvalidParameterError(f"successes: must be <= trials ({n}), got {k}")
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise InvalidParameterError(f"confidence: must be in (0, 1), got {confidence}")
    if k == 0:
        return 0.0
    return float(stats.beta.ppf(1.0 - c, k, n - k + 1))


def epsilon_lower_bound(successes: int, trials: int, delta: float, confidence: float = 0.95) -> float:
    """ε_lo = ln((a_lo − δ)/(1 − a_lo)) from a balanced test's correct-guess count (see the module docstring).

    Returns 0 when the lower accuracy bound a_lo does not exceed (1 + δ)/2 and ``inf``
    when a_lo = 1 (no finite ε explains it).
    """
    d = check_delta(delta, "delta", allow_zero=True)
    a = clopper_pearson_lower(successes, trials, confidence)
    if a >= 1.0:
        return math.inf
    ratio = (a - d) / (1.0 - a)
    return max(0.0, math.log(ratio)) if ratio > 0 else 0.0


@dataclass(frozen=True)
class AuditRow:
    """One attack on one pair: accuracy with and without the mechanism, and the ε lower bound."""

    attack: str
    pair: tuple[float, float]
    accuracy: float
    ci: tuple[float, float]
    accuracy_undefended: float
    correct: int
    trials: int
    epsilon_lower_bound: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "pair": list(self.pair),
            "accuracy": self.accuracy,
            "ci_low": self.ci[0],
            "ci_high": self.ci[1],
            "accuracy_undefended": self.accuracy_undefended,
            "correct": self.correct,
            "trials": self.trials,
            "epsilon_lower_bound": self.epsilon_lower_bound,
        }


@dataclass(frozen=True)
class AuditResult:
    """All attacks, the best one and its empirical lower bound next to the claim."""

    rows: tuple[AuditRow, ...]
    claimed_epsilon: float
    claimed_delta: float
    confidence: float
    reps: int
    n_shadow: int
    n_test: int

    @property
    def best(self) -> AuditRow:
        return max(self.rows, key=lambda r: (r.epsilon_lower_bound, r.accuracy))

    @property
    def empirical_epsilon(self) -> float:
        return self.best.epsilon_lower_bound

    @property
    def max_accuracy_allowed(self) -> float:
        """(e^ε + δ)/(1 + e^ε): the highest balanced accuracy the claim allows."""
        e = math.exp(self.claimed_epsilon)
        return (e + self.claimed_delta) / (1.0 + e)

    @property
    def consistent(self) -> bool:
        return self.empirical_epsilon <= self.claimed_epsilon

    def to_dict(self) -> dict[str, Any]:
        return {
            "claimed": {"epsilon": self.claimed_epsilon, "delta": self.claimed_delta,
                        "max_accuracy": self.max_accuracy_allowed},
            "empirical_epsilon": self.empirical_epsilon,
            "confidence": self.confidence,
            "best_attack": self.best.attack,
            "consistent": self.consistent,
            "attacks": [r.to_dict() for r in self.rows],
            "setting": {"reps": self.reps, "n_shadow": self.n_shadow, "n_test": self.n_test,
                        "bonferroni_tests": len(self.rows)},
        }


def run_audit(
    sampler: Any,
    mechanism: Any,
    pairs: Sequence[tuple[float, float]],
    *,
    gaussian_model: Any,
    claimed_epsilon: float,
    claimed_delta: float,
    reps: int = 20,
    n_shadow: int = 200,
    n_test: int = 200,
    confidence: float = 0.95,
    rng: RngLike = 0,
) -> AuditResult:
    """Run the paper's meta-classifier, the adaptive and the likelihood-ratio attackers on every pair.

    ``sampler(p, size, rng)`` draws query values F(Data) of fresh datasets with property
    value p (shadow and test sets are drawn independently); ``mechanism`` has
    ``release_batch`` and ``noise_covariance``; ``gaussian_model`` (a
    :class:`~distpriv.GaussianModel` keyed by θ) is the likelihood-ratio attacker's model.
    """
    g = as_rng(rng)
    r = check_int(reps, "reps", minimum=1)
    nt = check_int(n_test, "n_test", minimum=2)
    if nt % 2:
        raise InvalidParameterError(f"n_test: must be even (a balanced test), got {nt}")
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise InvalidParameterError(f"--confidence: must be in (0, 1), got {confidence}")
    k = len(ATTACKS) * len(pairs)
    per_test = 1.0 - (1.0 - c) / k
    rows: list[AuditRow] = []
    for a, b in pairs:
        data = attacks.sample_attack_data(sampler, a, b, n_shadow=n_shadow, n_test=nt, reps=r, rng=g)
        sub = _GaussianPair(gaussian_model, a, b)
        results = {
            "meta-classifier": (attacks.meta_classifier_attack(data, mechanism, rng=g),
                                attacks.meta_classifier_attack(data, None, rng=g)),
            "adaptive": (attacks.adaptive_attack(data, mechanism, rng=g), None),
            "likelihood-ratio": (attacks.likelihood_ratio_attack(data, mechanism, means=sub, rng=g),
                                 attacks.likelihood_ratio_attack(data, None, means=sub, rng=g)),
        }
        for name in ATTACKS:
            res, clean = results[name]
            if clean is None:
                clean = results["meta-classifier"][1]
            assert clean is not None  # the meta-classifier always has a noiseless baseline
            correct = int(np.rint(res.accuracies * data.n_test).sum())
            trials = int(res.reps * data.n_test)
            rows.append(AuditRow(name, (float(a), float(b)), res.accuracy, res.ci, clean.accuracy, correct, trials,
                                 epsilon_lower_bound(correct, trials, claimed_delta, per_test)))
    return AuditResult(tuple(rows), float(claimed_epsilon), float(claimed_delta), c, r, int(n_shadow), nt)


class _GaussianPair:
    """Adapter: a model with ``mean(p)``/``covariance(p)`` (the attacks look these up by p1, p2)."""

    def __init__(self, model: Any, a: float, b: float) -> None:
        self._model, self._labels = model, {float(a): a, float(b): b}

    def mean(self, p: float) -> Any:
        return self._model.mean(self._labels.get(float(p), p))

    def covariance(self, p: float) -> Any:
        return self._model.covariance(self._labels.get(float(p), p))
