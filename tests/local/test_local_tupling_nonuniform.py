"""Tupling with non-uniform dummies (issue 25): exact δ(ε), ε(δ) and KL against brute-force enumeration.

The tuple law Q#(λ)[ȳ] = 1/(k+1) Π_j ν[y_j] Σ_i A#(λ)[y_i]/ν[y_i] is enumerated here over all
|Y|^(k+1) tuples (Tupling.output_distribution, then the divergences of distpriv.divergences, which do
not use the accountant) and compared with the accountant (local/iid_sums.py). The "Why" figures
of the issue: with dummies that rarely draw some outputs the previous grid gave δ up to 46× the
exact value and KL = ∞ where it is finite (0.0019-0.90 on the cases below).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from distpriv import divergences as dv
from distpriv import local
from distpriv.local import iid_sums


def case(seed: int, floor: float = 1e-9, concentration: float = 0.3):
    """A random instance with dummies ν that put mass down to ``floor`` on some outputs."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 7))
    k = int(rng.integers(1, 5))
    if m ** (k + 1) > 200_000:
        k = 2
    a = rng.dirichlet(np.ones(m) * 0.6, size=3)
    nu = np.maximum(rng.dirichlet(np.ones(m) * concentration), floor)
    nu /= nu.sum()
    return local.Tupling(local.Mechanism(a), k=k, dummy=nu), rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))


def brute_delta(t: local.Tupling, l0, l1, eps: float) -> float:
    p, q = t.output_distribution(l0), t.output_distribution(l1)
    return max(dv.hockey_stick(p, q, math.exp(eps)), dv.hockey_stick(q, p, math.exp(eps)))


@pytest.mark.parametrize("seed", [13, 16, 34, 67])
@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0])
def test_delta_equals_brute_force_where_the_grid_was_46x_off(seed: int, eps: float) -> None:
    # seeds 67 and 13 at ε = 1: the grid claimed δ 46× and 43× the exact value
    t, l0, l1 = case(seed)
    exact = brute_delta(t, l0, l1, eps)
    lo, hi = t.delta_bounds(l0, l1, eps)
    assert lo - 1e-13 <= exact <= hi + 1e-13
    assert hi <= exact * 1.0001 + 1e-15
    assert local.distp_delta(t, l0, l1, eps) == pytest.approx(exact, rel=1e-4, abs=1e-15)


def issue_case(seed: int):
    """The issue's sweep: |Y| in 3..5, k in 1..3, ν floored at 1e-6."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 6))
    k = int(rng.integers(1, 4))
    a = rng.dirichlet(np.ones(m) * 0.6, size=3)
    nu = np.maximum(rng.dirichlet(np.ones(m) * 0.5), 1e-6)
    nu /= nu.sum()
    return local.Tupling(local.Mechanism(a), k=k, dummy=nu), rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))


@pytest.mark.parametrize("seed", [5, 9, 22, 31, 45])
def test_kl_is_finite_and_exact_where_it_was_infinite(seed: int) -> None:
    # the grid returned KL = ∞ for all of these
    t, l0, l1 = issue_case(seed)
    p, q = t.output_distribution(l0), t.output_distribution(l1)
    exact = max(dv.kl(p, q), dv.kl(q, p))
    assert 0.001 < exact < 1.0
    got = local.distp_divergence(t, l0, l1, "kl")
    assert math.isfinite(got) and got == pytest.approx(exact, rel=1e-9)
    lo, hi = t.kl_bounds(l0, l1)
    assert lo - 1e-12 <= dv.kl(p, q) <= hi + 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_epsilon_claim_within_1_percent_of_brute_force(seed: int) -> None:
    t, l0, l1 = case(100 + seed)
    p, q = t.output_distribution(l0), t.output_distribution(l1)
    for delta in (1e-3, 0.02):
        exact = dv.symmetric_approx_max_divergence(p, q, delta)
        g = t.guarantee(l0, l1, delta)
        assert g.epsilon >= exact - 1e-9
        assert g.epsilon <= exact * 1.01 + 1e-6


def test_split_mode_agrees_with_enumeration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond EXACT_LIMIT multisets the rare atoms are enumerated and the bulk is gridded: same values."""
    rng = np.random.default_rng(3)
    m, k = 10, 4
    a = rng.dirichlet(np.ones(m) * 0.6, size=4)
    nu = np.maximum(rng.dirichlet(np.ones(m) * 0.3), 1e-9)
    nu /= nu.sum()
    t = local.Tupling(local.Mechanism(a), k=k, dummy=nu)
    l0, l1 = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    exact_d = t.delta_bounds(l0, l1, 0.3)
    exact_kl = t.kl_bounds(l0, l1)
    assert exact_d[0] == pytest.approx(exact_d[1], rel=1e-12)  # enumeration: no bracket
    monkeypatch.setattr(iid_sums, "EXACT_LIMIT", 0)
    t2 = local.Tupling(local.Mechanism(a), k=k, dummy=nu)
    lo, hi = t2.delta_bounds(l0, l1, 0.3)
    assert lo <= exact_d[1] * (1 + 1e-12) and hi >= exact_d[0] * (1 - 1e-12)
    assert hi <= exact_d[1] * 1.0001
    klo, khi = t2.kl_bounds(l0, l1)
    assert klo <= exact_kl[1] * (1 + 1e-12) and khi >= exact_kl[0] * (1 - 1e-12)
    assert khi <= exact_kl[1] * 1.01


def test_monte_carlo_agrees_beyond_enumeration() -> None:
    """|Y| = 30, k = 6 (30^7 tuples): the certified δ bracket contains the Monte Carlo estimate (5 s.e.)."""
    rng = np.random.default_rng(8)
    m = 30
    a = rng.dirichlet(np.ones(m) * 0.5, size=5)
    nu = np.maximum(rng.dirichlet(np.ones(m) * 0.4), 1e-7)
    nu /= nu.sum()
    t = local.Tupling(local.Mechanism(a), k=6, dummy=nu)
    l0, l1 = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
    lo, hi = t.delta_bounds(l0, l1, 0.2, rtol=1e-4)
    est, se = t.monte_carlo_delta(l0, l1, 0.2, n_samples=100_000, rng=1)
    assert hi - lo <= 1e-4 * hi
    assert abs(est - 0.5 * (lo + hi)) <= 5 * se + (hi - lo)
