"""Tupling mechanism: exact convolution accounting vs brute force, Theorem 3/7, loss, sampler."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from distpriv import divergences as dv
from distpriv import local
from distpriv.errors import InvalidParameterError


def small_case(seed: int, m: int = 4, n: int = 3, k: int = 3, dummy: np.ndarray | None = None):
    rng = np.random.default_rng(seed)
    a = rng.dirichlet(np.ones(m) * 0.6, size=n)
    t = local.Tupling(base=local.Mechanism(a), k=k, dummy=dummy)
    return t, rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))


def test_tuple_probabilities_sum_to_one_and_match_algorithm() -> None:
    t, l0, _ = small_case(0, m=3, n=2, k=2)
    p = t.output_distribution(l0)
    assert p.sum() == pytest.approx(1.0)
    # hand formula for ȳ = (0, 1, 1): (a[0] ν1 ν1 + a[1] ν0 ν1 + a[1] ν0 ν1)/3 with ν = 1/3
    a = t.lift(l0)
    assert t.tuple_probability(l0, [[0, 1, 1]])[0] == pytest.approx((a[0] + 2 * a[1]) / 9 / 3)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("delta", [0.0, 0.001, 0.02, 0.1])
def test_exact_epsilon_equals_brute_force_enumeration(seed: int, delta: float) -> None:
    t, l0, l1 = small_case(seed)
    p, q = t.output_distribution(l0), t.output_distribution(l1)
    brute = dv.symmetric_approx_max_divergence(p, q, delta)
    res = t.epsilon_bounds(l0, l1, delta, tol=1e-7)
    assert res.lower - 1e-12 <= brute <= res.upper + 1e-12
    assert res.upper - res.lower <= 1e-7
    assert local.distp_epsilon(t, l0, l1, delta) == pytest.approx(brute, abs=2e-5)


def test_exact_with_nonuniform_full_support_dummies() -> None:
    nu = np.array([0.1, 0.2, 0.3, 0.4])
    t, l0, l1 = small_case(11, dummy=nu)
    p, q = t.output_distribution(l0), t.output_distribution(l1)
    assert p.sum() == pytest.approx(1.0)
    brute = dv.symmetric_approx_max_divergence(p, q, 0.01)
    res = t.epsilon_bounds(l0, l1, 0.01, tol=1e-7)
    assert res.lower - 1e-12 <= brute <= res.upper + 1e-12


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.3])
def test_exact_delta_and_kl_equal_brute_force(eps: float) -> None:
    t, l0, l1 = small_case(21, m=5, k=3)
    p, q = t.output_distribution(l0), t.output_distribution(l1)
    brute = max(dv.hockey_stick(p, q, math.exp(eps)), dv.hockey_stick(q, p, math.exp(eps)))
    lo, hi = t.delta_bounds(l0, l1, eps)
    assert lo - 1e-13 <= brute <= hi + 1e-13
    klo, khi = t.kl_bounds(l0, l1)
    assert klo - 1e-13 <= dv.kl(p, q) <= khi + 1e-13
    assert khi - klo < 1e-4
    assert t.distp_divergence(l0, l1, "kl") == pytest.approx(max(dv.kl(p, q), dv.kl(q, p)), abs=1e-4)


def test_zero_support_gives_infinite_or_finite_epsilon_correctly() -> None:
    # A#(λ1) misses output 0: D∞ is infinite but δ covers the tuples λ1 never yields
    a = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    t = local.Tupling(a, k=2)
    l0, l1 = np.array([0.5, 0.5]), np.array([0.0, 1.0])
    p, q = t.output_distribution(l0), t.output_distribution(l1)
    for delta in (0.001, 0.05):
        brute = dv.symmetric_approx_max_divergence(p, q, delta)
        res = t.epsilon_bounds(l0, l1, delta, tol=1e-7)
        if math.isinf(brute):
            assert math.isinf(res.upper)
        else:
            assert res.lower - 1e-12 <= brute <= res.upper + 1e-12
    assert t.distp_epsilon(l0, l1, 0.0) == math.inf


def test_monte_carlo_agrees_with_exact_mid_size() -> None:
    rng = np.random.default_rng(8)
    pts = rng.uniform(0, 1, size=(40, 2))
    d = local.euclidean_cost(pts[:30], pts)
    t = local.Tupling(local.restricted_laplace(d, 8.0, 0.4), k=4)
    l0, l1 = rng.dirichlet(np.ones(30) * 0.5), rng.dirichlet(np.ones(30) * 0.5)
    eps = 0.2
    lo, hi = t.delta_bounds(l0, l1, eps)
    est, se = t.monte_carlo_delta(l0, l1, eps, n_samples=40_000, rng=3)
    # both orders are estimated and the max taken: allow 4 standard errors + the max-of-two bias
    assert abs(est - 0.5 * (lo + hi)) < 4 * se + 1e-4
    e_exact = t.distp_epsilon(l0, l1, 0.01)
    e_mc = t.monte_carlo_epsilon(l0, l1, 0.01, n_samples=40_000, rng=4)
    assert e_mc == pytest.approx(e_exact, rel=0.1)
    kl_mc, kl_se = t.monte_carlo_divergence(l0, l1, "kl", n_samples=40_000, rng=5)
    klo, khi = t.kl_bounds(l0, l1)
    assert abs(kl_mc - 0.5 * (klo + khi)) < 4 * kl_se


def test_theorem3_bound_never_below_exact() -> None:
    rng = np.random.default_rng(12)
    pts = rng.uniform(0, 1, size=(60, 2))
    d = local.euclidean_cost(pts, pts)
    for eps_a, k in ((1.0, 30), (3.0, 40), (0.5, 20)):
        t = local.Tupling(local.planar_laplace(d, eps_a), k=k)
        l0, l1 = rng.dirichlet(np.ones(60) * 2), rng.dirichlet(np.ones(60) * 2)
        for delta in (0.01, 0.1):
            b = t.theorem3(l0, l1, delta)
            exact = t.distp_epsilon(l0, l1, delta)
            assert b.epsilon >= exact
            if math.isfinite(b.epsilon):
                # the optimised α meets δ_α = δ and lies in (0, k/|Y|)
                assert b.delta == pytest.approx(delta) and 0 < b.alpha < k / 60
                assert t.in_lambda(l0, b.beta, b.eta) and t.in_lambda(l1, b.beta, b.eta)
        assert t.theorem7(l0, l1) >= t.distp_divergence(l0, l1, "kl") - 1e-12


def test_theorem3_formula() -> None:
    t = local.Tupling(local.randomized_response(10, 1.0), k=5)
    eps, dl = t.theorem3_params(0.2, 0.1, 0.0)
    assert eps == pytest.approx(math.log((5 + 0.3 * 10) / (5 - 0.2 * 10)))
    assert dl == pytest.approx(2 * math.exp(-2 * 0.04 / (5 * 0.01)))
    with pytest.raises(InvalidParameterError, match="alpha"):
        t.theorem3_params(0.6, 0.1, 0.0)


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


def test_epsilon_bounds_when_finer_grid_loosens_upper_bound() -> None:
    # regression: the FFT round-off allowance grows with the grid, so upper(hi) at a finer
    # grid can exceed δ although hi was certified on a coarser grid; Brent then got no
    # sign change and raised ValueError instead of returning the certified bracket
    a0 = np.array([0.94920504, 0.05079496, 0.0])
    a1 = np.array([0.98943567, 0.01056433, 0.0])
    nu = np.array([0.77715416, 0.0726052, 0.15024064])
    t = local.Tupling(local.Mechanism(np.array([a0, a1])), k=7, dummy=nu / nu.sum())
    l0, l1 = [1.0, 0.0], [0.0, 1.0]
    brute = dv.symmetric_approx_max_divergence(t.output_distribution(l0), t.output_distribution(l1), 1e-6)
    res = t.epsilon_bounds(l0, l1, 1e-6, tol=1e-7)
    assert res.lower - 1e-12 <= brute <= res.upper + 1e-12
    assert res.upper - res.lower < 1e-4


def test_monte_carlo_epsilon_infinite_when_unseen_tuples_exceed_delta() -> None:
    # λ1 never yields output 0, so tuples made only of 0s (mass 0.5/9 under λ0) have
    # infinite privacy loss: for δ below that mass ε is infinite (exact method agrees)
    t = local.Tupling(np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]), k=2)
    l0, l1 = [0.5, 0.5], [0.0, 1.0]
    assert math.isinf(t.distp_epsilon(l0, l1, 0.01))
    assert math.isinf(t.monte_carlo_epsilon(l0, l1, 0.01, n_samples=20_000, rng=0))
    exact = t.distp_epsilon(l0, l1, 0.1)
    assert t.monte_carlo_epsilon(l0, l1, 0.1, n_samples=20_000, rng=0) == pytest.approx(exact, rel=0.05)
