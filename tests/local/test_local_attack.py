"""Bayes-decision-rule attacker and attack success rate (tupling paper Section 7.3)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from distpriv import local


def test_exact_asr_matches_direct_sum() -> None:
    rng = np.random.default_rng(0)
    a = local.Mechanism(rng.dirichlet(np.ones(6), size=4))
    l0, l1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    asr = local.attack_success_rate(a, {"home": l0, "out": l1}, "home")
    p0, p1 = a.lift(l0), a.lift(l1)
    assert asr == pytest.approx(float(p0[p0 >= p1].sum()))
    # Bayes rule is optimal: the two success rates sum to 1 + TV (balanced priors)
    asr_out = local.attack_success_rate(a, {"home": l0, "out": l1}, "out")
    assert asr + asr_out == pytest.approx(1 + 0.5 * np.abs(p0 - p1).sum())


def test_empirical_asr_close_to_exact_for_tuples() -> None:
    rng = np.random.default_rng(1)
    a = rng.dirichlet(np.ones(3) * 0.5, size=3)
    t = local.Tupling(a, k=2)
    l0, l1 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    p0, p1 = t.output_distribution(l0), t.output_distribution(l1)
    exact = float(p0[p0 >= p1].sum())
    att = local.BayesAttacker(t, {0: l0, 1: l1})
    n = 20_000
    emp = att.empirical_success_rate(0, n_samples=n, rng=2)
    assert abs(emp - exact) < 5 * np.sqrt(exact * (1 - exact) / n)
    tuples = np.array(list(itertools.product(range(3), repeat=3)))
    dec = np.array(att.decide(tuples))
    assert float(p0[dec == 0].sum()) == pytest.approx(exact)


def test_dummies_push_asr_towards_half() -> None:
    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 1, size=(30, 2))
    d = local.euclidean_cost(pts)
    base = local.restricted_laplace(d, 5.0, 0.3)
    l0 = rng.dirichlet(np.ones(30) * 0.3)
    l1 = rng.dirichlet(np.ones(30) * 0.3)
    rates = [local.attack_success_rate(local.Tupling(base, k=k), {0: l0, 1: l1}, 0, n_samples=4000, rng=4)
             for k in (1, 30)]
    assert rates[1] < rates[0]
