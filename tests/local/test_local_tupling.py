"""Tupling mechanism (:mod:`distpriv.local.tupling`): output law, sampler, expected loss, inputs, delegation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from _tupling_cases import small_case
from distpriv import local
from distpriv.errors import InvalidParameterError


def test_tuple_probabilities_sum_to_one_and_match_algorithm() -> None:
    t, l0, _ = small_case(0, m=3, n=2, k=2)
    p = t.output_distribution(l0)
    assert p.sum() == pytest.approx(1.0)
    # hand formula for ȳ = (0, 1, 1): (a[0] ν1 ν1 + a[1] ν0 ν1 + a[1] ν0 ν1)/3 with ν = 1/3
    a = t.lift(l0)
    assert t.tuple_probability(l0, [[0, 1, 1]])[0] == pytest.approx((a[0] + 2 * a[1]) / 9 / 3)


def test_expected_loss_equals_enumeration() -> None:
    rng = np.random.default_rng(2)
    pts = rng.uniform(0, 1, size=(5, 2))
    d = local.euclidean_cost(pts[:3], pts)
    nu = rng.dirichlet(np.ones(5))
    t = local.Tupling(local.restricted_laplace(d, 2.0, 0.7), k=2, dummy=nu)
    lam = np.array([0.2, 0.5, 0.3])
    brute = 0.0
    for x in range(3):
        for yb in itertools.product(range(5), repeat=3):
            brute += lam[x] * t.tuple_probability(np.eye(3)[x], [yb])[0] * min(d[x, y] for y in yb)
    assert t.expected_loss(lam, d) == pytest.approx(brute, rel=1e-12)
    # more dummies never hurt the loss (Definition 11 discussion)
    t5 = local.Tupling(t.base, k=5, dummy=nu)
    assert t5.expected_loss(lam, d) <= t.expected_loss(lam, d)


def test_sampler_matches_tuple_probabilities() -> None:
    t, l0, _ = small_case(1, m=2, n=2, k=2)
    gen = np.random.default_rng(0)
    xs = gen.choice(2, size=60_000, p=l0)
    tup = t.sample(xs, gen)
    codes = tup @ np.array([4, 2, 1])
    freq = np.bincount(codes, minlength=8) / codes.size
    p = t.output_distribution(l0)
    # per-cell binomial standard error at n = 60000, 5σ
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / codes.size) + 1e-12)


def test_bad_inputs() -> None:
    a = local.randomized_response(3, 1.0)
    with pytest.raises(InvalidParameterError, match="k"):
        local.Tupling(a, k=0)
    t = local.Tupling(a, k=2)
    with pytest.raises(InvalidParameterError, match="delta"):
        t.distp_epsilon([1, 0, 0], [0, 1, 0], 1.5)
    with pytest.raises(InvalidParameterError, match="distribution over 3"):
        t.distp_epsilon([1, 0], [0, 1], 0.1)
    with pytest.raises(InvalidParameterError, match="max_outcomes"):
        local.Tupling(local.randomized_response(50, 1.0), k=10).output_distribution(np.eye(50)[0])


def test_accounting_methods_delegate_to_the_accountant() -> None:
    """Tupling's accounting methods return exactly what its TuplingAccountant computes."""
    from distpriv.local.tupling_accounting import TuplingAccountant

    t, l0, l1 = small_case(3)
    acc = t.accountant
    assert isinstance(acc, TuplingAccountant) and acc.mechanism is t and t.accountant is acc
    assert t.distp_epsilon(l0, l1, 0.01) == acc.distp_epsilon(l0, l1, 0.01)
    assert t.epsilon_bounds(l0, l1, 0.01) == acc.epsilon_bounds(l0, l1, 0.01)
    assert t.delta_bounds(l0, l1, 0.5) == acc.delta_bounds(l0, l1, 0.5)
    assert t.kl_bounds(l0, l1) == acc.kl_bounds(l0, l1)
    assert t.theorem3(l0, l1, 0.1) == acc.theorem3(l0, l1, 0.1)
    assert t.monte_carlo_delta(l0, l1, 0.5, n_samples=500, rng=1) == acc.monte_carlo_delta(l0, l1, 0.5, n_samples=500, rng=1)
    assert local.distp_epsilon is not None and local.EpsilonResult is local.tupling.EpsilonResult
