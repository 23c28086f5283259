"""Tupling accountant (:mod:`distpriv.local.tupling_accounting`): exact convolution accounting vs brute force,
Monte Carlo, Theorem 3/7."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _tupling_cases import small_case
from distpriv import divergences as dv
from distpriv import local
from distpriv.errors import AssumptionError, InvalidParameterError


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
                assert b.delta == pytest.approx(delta) and b.delta <= delta and 0 < b.alpha < k / 60
                assert t.in_lambda(l0, b.beta, b.eta) and t.in_lambda(l1, b.beta, b.eta)
        assert t.theorem7(l0, l1) >= t.distp_divergence(l0, l1, "kl") - 1e-12


def test_theorem3_formula() -> None:
    t = local.Tupling(local.randomized_response(10, 1.0), k=5)
    eps, dl = t.theorem3_params(0.2, 0.1, 0.0)
    assert eps == pytest.approx(math.log((5 + 0.3 * 10) / (5 - 0.2 * 10)))
    assert dl == pytest.approx(2 * math.exp(-2 * 0.04 / (5 * 0.01)))
    # a Hoeffding range r > β replaces β in δ_α only
    eps2, dl2 = t.theorem3_params(0.2, 0.1, 0.05, hoeffding_range=0.3)
    assert eps2 == eps
    assert dl2 == pytest.approx(2 * math.exp(-2 * 0.04 / (5 * 0.09)) + 0.05)
    with pytest.raises(InvalidParameterError, match="alpha"):
        t.theorem3_params(0.6, 0.1, 0.0)
    with pytest.raises(InvalidParameterError, match="hoeffding_range"):
        t.theorem3_params(0.2, 0.1, 0.0, hoeffding_range=0.05)


def issue9_case() -> tuple[local.Tupling, np.ndarray, np.ndarray]:
    """Issue 9: |Y| = 20, identity base, k = 3, λ0/λ1 put 0.5 on outputs 0/1 and spread the rest evenly."""
    m = 20
    l0 = np.full(m, 0.5 / (m - 1))
    l1 = l0.copy()
    l0[0], l1[1] = 0.5, 0.5
    return local.Tupling(local.Mechanism(np.eye(m)), k=3), l0, l1


def test_theorem3_issue9_counterexample() -> None:
    t, l0, l1 = issue9_case()
    m, k, delta = 20, 3, 0.1
    exact = t.epsilon_bounds(l0, l1, delta, tol=1e-7)
    assert exact.lower == pytest.approx(1.5415, abs=1e-4)
    # cross-check by enumerating all 20^4 tuples
    brute = dv.symmetric_approx_max_divergence(t.output_distribution(l0), t.output_distribution(l1), delta)
    assert exact.lower - 1e-12 <= brute <= exact.upper + 1e-12
    # the old reading of η (y uniform): β = 0.5/19 leaves one output of 20 above β, η = 0.05, and the
    # paper's formula then gives 0.9947 < 1.5415 — a claim the mechanism does not satisfy
    beta = float(np.sort(t.lift(l0))[-2])  # = 0.5/19 up to round-off
    assert beta == pytest.approx(0.5 / 19)
    alpha = beta * math.sqrt(k * math.log(2 / (delta - 0.05)) / 2)
    old = math.log((k + (alpha + beta) * m) / (k - alpha * m))
    assert old == pytest.approx(0.9947, abs=1e-4) and old < exact.lower
    # η as A#(λ)-mass: the spike of 0.5 lies above β, so β must be 0.5 and no α < k/|Y| is admissible
    assert t.lambda_eta(l0, beta) == pytest.approx(0.5)
    assert not t.in_lambda(l0, beta, 0.05)
    assert t.lambda_eta(l0, float(t.lift(l0).max())) == 0.0
    b = t.theorem3(l0, l1, delta)
    assert b.epsilon == math.inf
    assert t.theorem3(l0, l1, delta, beta=beta).epsilon == math.inf
    assert t.theorem7(l0, l1) >= t.distp_divergence(l0, l1, "kl")


def test_theorem3_closed_form_when_eta_is_zero() -> None:
    # β = max_y A#(λ_b)[y] gives η = 0 and r = β: the paper's formula holds as stated
    t = local.Tupling(local.randomized_response(4, 0.5), k=40)
    l0, l1 = np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    top = float(max(t.lift(l0).max(), t.lift(l1).max()))
    b = t.theorem3(l0, l1, 0.05, beta=top)
    alpha = top * math.sqrt(40 * math.log(2 / 0.05) / 2)
    assert b.eta == 0.0 and b.hoeffding_range == top and b.alpha == pytest.approx(alpha, rel=1e-12)
    assert b.epsilon == pytest.approx(math.log((40 + (alpha + top) * 4) / (40 - alpha * 4)), rel=1e-12)
    assert t.theorem3(l0, l1, 0.05).epsilon <= b.epsilon


def sweep_instances(seed: int, count: int):
    """Small random tupling instances (|Y|^(k+1) <= 4096): random, randomized-response and identity
    bases; Dirichlet input pairs, and 'spike' pairs as in issue 9 (λ0, λ1 put a large mass on
    different inputs and spread the rest evenly), where reading η under a uniform y overclaims."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        m = int(rng.integers(2, 9))
        k = int(rng.integers(1, 12))
        if m ** (k + 1) > 4096:
            continue
        kind = made % 3
        if kind == 0:
            n = int(rng.integers(2, 5))
            base = local.Mechanism(rng.dirichlet(np.full(m, rng.uniform(0.3, 3.0)), size=n))
        elif kind == 1:
            n, base = m, local.randomized_response(m, float(rng.uniform(0.5, 4.0)))
        else:
            n, base = m, local.Mechanism(np.eye(m))
        if made % 2:
            spike = rng.uniform(0.2, 0.9)
            l0, l1 = np.full(n, (1 - spike) / n), np.full(n, (1 - spike) / n)
            i, j = rng.choice(n, size=2, replace=False)
            l0[i] += spike
            l1[j] += spike
        else:
            conc = rng.uniform(0.3, 5.0)
            l0, l1 = rng.dirichlet(np.full(n, conc)), rng.dirichlet(np.full(n, conc))
        made += 1
        yield local.Tupling(base, k=k), l0, l1


def test_theorem3_and_7_never_below_brute_force() -> None:
    """Theorems 3 and 7 against enumeration of all |Y|^(k+1) tuples, both orders."""
    finite = total = 0
    for t, l0, l1 in sweep_instances(2024, 150):
        p, q = t.output_distribution(l0), t.output_distribution(l1)
        for delta in (0.01, 0.05, 0.2, 0.3):
            exact = dv.symmetric_approx_max_divergence(p, q, delta)
            b = t.theorem3(l0, l1, delta)
            total += 1
            assert b.epsilon >= exact, (t, l0, l1, delta)
            if math.isfinite(b.epsilon):
                finite += 1
                assert b.epsilon >= t.epsilon_bounds(l0, l1, delta).upper
                assert b.delta <= delta
                assert t.in_lambda(l0, b.beta, b.eta) and t.in_lambda(l1, b.beta, b.eta)
                # every β, not just the optimised one, gives a valid bound
                for beta in np.unique(np.concatenate([t.lift(l0), t.lift(l1)]))[::2]:
                    if beta > 0:
                        assert t.theorem3(l0, l1, delta, beta=float(beta)).epsilon >= exact
        kl = max(dv.kl(p, q), dv.kl(q, p))
        assert t.theorem7(l0, l1) >= kl
    # the sweep exercises the bound: a good share of the cases give a finite ε
    assert finite >= total // 4


def test_theorems_need_uniform_dummies() -> None:
    t, l0, l1 = small_case(3, dummy=np.array([0.4, 0.3, 0.2, 0.1]))
    with pytest.raises(AssumptionError, match="uniform dummies"):
        t.theorem3(l0, l1, 0.1)
    with pytest.raises(AssumptionError, match="uniform dummies"):
        t.theorem7(l0, l1)
    assert t.guarantee(l0, l1, 0.1).epsilon == pytest.approx(t.distp_epsilon(l0, l1, 0.1))


def test_theorem7_refuses_too_small_epsilon_a() -> None:
    t = local.Tupling(local.randomized_response(4, 1.0), k=30)
    l0, l1 = np.array([0.7, 0.1, 0.1, 0.1]), np.array([0.1, 0.1, 0.1, 0.7])
    e_pair = dv.symmetric_approx_max_divergence(t.lift(l0), t.lift(l1), 0.0)
    assert t.theorem7(l0, l1, epsilon_a=1.0) >= t.theorem7(l0, l1)  # ε_A = 1 >= D∞ of the pair
    with pytest.raises(AssumptionError, match="epsilon_a"):
        t.theorem7(l0, l1, epsilon_a=0.5 * e_pair)


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
