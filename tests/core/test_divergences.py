"""Exact divergences between finite distributions (distpriv.divergences)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from distpriv import divergences as dv
from distpriv.errors import InvalidParameterError, InvalidTypeError, UnknownLabelError


def brute_force_approx_max(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    """max over all subsets R with p[R] > δ of ln((p[R] − δ)/q[R]) (Definition 5)."""
    best = -math.inf
    n = p.size
    for r in range(1, n + 1):
        for sub in itertools.combinations(range(n), r):
            pr, qr = p[list(sub)].sum(), q[list(sub)].sum()
            if pr > delta:
                best = max(best, math.inf if qr == 0 else math.log((pr - delta) / qr))
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("delta", [0.0, 0.01, 0.2])
def test_approx_max_divergence_matches_subset_enumeration(seed: int, delta: float) -> None:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(7) * 0.7)
    q = rng.dirichlet(np.ones(7) * 0.7)
    assert dv.approx_max_divergence(p, q, delta) == pytest.approx(brute_force_approx_max(p, q, delta), abs=1e-12)


def test_approx_max_is_least_epsilon_for_hockey_stick() -> None:
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(9)), rng.dirichlet(np.ones(9))
    eps = dv.approx_max_divergence(p, q, 0.05)
    assert dv.hockey_stick(p, q, math.exp(eps)) == pytest.approx(0.05, abs=1e-12)
    assert dv.hockey_stick(p, q, math.exp(eps - 1e-6)) > 0.05


def test_hockey_stick_worked_example() -> None:
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    # e^ε = 2: max(0, 0.5-0.4) = 0.1
    assert dv.hockey_stick(p, q, 2.0) == pytest.approx(0.1)
    assert dv.hockey_stick(p, q, 1.0) == pytest.approx(dv.total_variation(p, q)) == pytest.approx(0.3)
    np.testing.assert_allclose(dv.hockey_stick_profile(p, q, [0.0, math.log(2)]), [0.3, 0.1])


def test_max_divergence_closed_form_and_infinite() -> None:
    assert dv.max_divergence([0.5, 0.5], [0.25, 0.75]) == pytest.approx(math.log(2))
    assert dv.max_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    # δ covers the unmatched mass: finite
    assert dv.approx_max_divergence([0.5, 0.5], [1.0, 0.0], 0.5) == pytest.approx(math.log(0.5))
    assert dv.symmetric_approx_max_divergence([0.5, 0.5], [0.5, 0.5], 0.1) == 0.0


def test_f_divergences_closed_forms() -> None:
    p, q = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    kl = 0.5 * math.log(2) + 0.5 * math.log(2 / 3)
    assert dv.kl(p, q) == pytest.approx(kl)
    assert dv.reverse_kl(p, q) == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5))
    assert dv.total_variation(p, q) == pytest.approx(0.25)
    assert dv.chi_square(p, q) == pytest.approx(0.25**2 / 0.25 + 0.25**2 / 0.75)
    assert dv.hellinger(p, q) == pytest.approx(1 - (math.sqrt(0.125) + math.sqrt(0.375)))
    # generic f reproduces the named ones
    assert dv.f_divergence(p, q, lambda t: t * np.log(t)) == pytest.approx(kl)
    assert dv.f_divergence(p, q, lambda t: (t - 1) ** 2) == pytest.approx(dv.chi_square(p, q))
    assert dv.divergence("hellinger", p, q) == pytest.approx(dv.hellinger(p, q))
    assert dv.divergence("approx-max", p, q, delta=0.1) == pytest.approx(dv.approx_max_divergence(p, q, 0.1))


def test_absolute_continuity_conventions() -> None:
    p, q = [0.5, 0.5], [1.0, 0.0]
    assert dv.kl(p, q) == math.inf
    assert dv.chi_square(p, q) == math.inf
    assert dv.total_variation(p, q) == pytest.approx(0.5)
    assert dv.hellinger(p, q) == pytest.approx(1 - math.sqrt(0.5))
    assert dv.kl(q, p) == pytest.approx(math.log(2))
    assert dv.f_divergence(p, q, lambda t: 0.5 * np.abs(t - 1), slope_at_infinity=0.5) == pytest.approx(0.5)


def test_bad_input_errors() -> None:
    with pytest.raises(InvalidParameterError, match="sum to 1"):
        dv.kl([0.5, 0.6], [0.5, 0.5])
    with pytest.raises(InvalidParameterError, match=">= 0"):
        dv.kl([1.5, -0.5], [0.5, 0.5])
    with pytest.raises(InvalidTypeError, match="same length"):
        dv.kl([1.0], [0.5, 0.5])
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\)"):
        dv.approx_max_divergence([0.5, 0.5], [0.5, 0.5], 1.0)
    with pytest.raises(UnknownLabelError):
        dv.divergence("renyi", [1.0], [1.0])
