"""Suri & Evans' n_leaked and the accuracy cap of an (ε, δ) claim (:mod:`distpriv.leakage`; issue 25, the peers'
distribution-inference setting): closed forms, the inverse pair, and the cap against brute force over every test of
discrete pairs whose exact privacy profile is computed here."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from distpriv.errors import DistPrivError
from distpriv.leakage import accuracy_cap, n_leaked, n_leaked_cap, optimal_accuracy


def test_n_leaked_closed_form_and_their_ratio_choice() -> None:
    # ρ = max(0.4/0.5, 0.5/0.6) = 5/6 (the second ratio wins): n = ln(1 − 0.5²)/ln(5/6)
    assert n_leaked(0.75, 0.5, 0.4) == pytest.approx(math.log(0.75) / math.log(5 / 6), rel=1e-14)
    assert n_leaked(0.75, 0.4, 0.5) == n_leaked(0.75, 0.5, 0.4)  # symmetric in the pair
    # ρ = max(0.1/0.2, 0.8/0.9) = 8/9: the larger ratio (their code's min of the two accuracy bounds)
    assert n_leaked(0.6, 0.1, 0.2) == pytest.approx(math.log(1 - 0.04) / math.log(8 / 9), rel=1e-14)


@pytest.mark.parametrize("pair", [(0.45, 0.55), (0.5, 0.2), (0.01, 0.02), (0.3, 0.31)])
def test_n_leaked_inverts_the_optimal_accuracy(pair: tuple[float, float]) -> None:
    for n in (0.0, 0.25, 1.0, 3.0, 40.0, 1000.0):
        acc = optimal_accuracy(n, *pair)
        assert 0.5 <= acc <= 1.0
        if acc < 1.0:  # 1 − (2 acc − 1)² = ρⁿ loses digits as it nears 0: the tolerance follows
            slack = 1e-9 + 1e-14 / (1.0 - (2.0 * acc - 1.0) ** 2)
            assert n_leaked(acc, *pair) == pytest.approx(n, rel=slack, abs=1e-12)
    accs = [optimal_accuracy(n, *pair) for n in np.linspace(0, 50, 101)]
    assert all(b >= a for a, b in itertools.pairwise(accs))


def test_their_curve_bounds_the_exact_bayes_accuracy_of_n_records() -> None:
    """½(1 + TV(Bin(n, p0), Bin(n, p1))) — the best accuracy from n records' labels — never exceeds the curve, so
    n_leaked(acc) is a lower bound on the records an ideal adversary needs for acc."""
    from scipy import stats

    for p0, p1 in [(0.45, 0.55), (0.5, 0.2), (0.01, 0.02), (0.3, 0.31), (0.1, 0.9), (0.05, 0.5)]:
        for n in (1, 2, 3, 5, 10, 30, 100, 300):
            k = np.arange(n + 1)
            exact = 0.5 * (1 + 0.5 * float(np.abs(stats.binom.pmf(k, n, p0) - stats.binom.pmf(k, n, p1)).sum()))
            assert exact <= optimal_accuracy(n, p0, p1) + 1e-12, (p0, p1, n)


def test_edges() -> None:
    assert n_leaked(0.5, 0.45, 0.55) == 0.0 and n_leaked(0.3, 0.45, 0.55) == 0.0
    assert n_leaked(1.0, 0.45, 0.55) == math.inf
    assert n_leaked(0.6, 0.5, 0.5) == math.inf and optimal_accuracy(10, 0.5, 0.5) == 0.5
    assert n_leaked(0.9, 0.0, 1.0) == 0.0 and optimal_accuracy(1, 0.0, 1.0) == 1.0
    assert accuracy_cap(1e6, 0.0) == 1.0 and accuracy_cap(1e-12, 0.0) == pytest.approx(0.5)
    for call, arg in ((lambda: n_leaked(1.5, 0.4, 0.5), "accuracy"), (lambda: n_leaked(0.6, 1.2, 0.5), "p0"),
                      (lambda: optimal_accuracy(-1, 0.4, 0.5), "n"), (lambda: accuracy_cap(0.0, 0.1), "epsilon"),
                      (lambda: accuracy_cap(1.0, 1.0), "delta"), (lambda: n_leaked_cap(1, 0.1, 0.4, "x"), "p1")):
        with pytest.raises(DistPrivError) as info:
            call()
        assert str(info.value).startswith(arg + ":")


def _profile(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """δ(ε) of the pair, both orders: max(Σ(p − e^ε q)_+, Σ(q − e^ε p)_+)."""
    return max(float(np.clip(p - math.exp(eps) * q, 0, None).sum()), float(np.clip(q - math.exp(eps) * p, 0, None).sum()))


def _best_accuracy(p: np.ndarray, q: np.ndarray) -> float:
    """The best test by brute force over every subset S: ½(P(S) + Q(Sᶜ))."""
    k = p.size
    best = 0.0
    for mask in itertools.product([0, 1], repeat=k):
        s = np.array(mask, dtype=bool)
        best = max(best, 0.5 * (p[s].sum() + q[~s].sum()))
    return best


@pytest.mark.parametrize(("eps", "delta"), [(0.2, 1e-3), (1.0, 0.0), (1.0, 0.05), (5.0, 1e-3)])
def test_cap_is_reached_by_the_canonical_pair(eps: float, delta: float) -> None:
    """(ε, δ)-randomised response (Kairouz, Oh & Viswanath): its exact profile is δ at ε, and its best test
    reaches the cap, so the cap cannot be lowered."""
    a, b = (1 - delta) * math.exp(eps) / (1 + math.exp(eps)), (1 - delta) / (1 + math.exp(eps))
    p, q = np.array([delta, a, b, 0.0]), np.array([0.0, b, a, delta])
    assert _profile(p, q, eps) == pytest.approx(delta, abs=1e-15)
    assert _best_accuracy(p, q) == pytest.approx(accuracy_cap(eps, delta), rel=1e-12)


def test_cap_bounds_every_test_of_random_pairs() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(2, 7))
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.05, 4.0))
        delta = _profile(p, q, eps)
        if delta >= 1.0:
            continue
        assert _best_accuracy(p, q) <= accuracy_cap(eps, delta) * (1 + 1e-12)
