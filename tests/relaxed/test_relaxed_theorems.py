"""Tests for distpriv.relaxed.theorems: Theorems 5.6/5.7 and the Theorem 5.7 budget split (Section 5.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import distpriv as dp
from distpriv import divergences as V
from distpriv import relaxed as R
from distpriv.errors import InvalidParameterError, InvalidTypeError


# --------------------------------------------------------------------------- Theorem 5.6
def test_theorem_5_6_formula():
    loss = R.theorem_5_6(1.0, 1e-5, 1e-6, 0.1)
    assert loss.epsilon == pytest.approx(1.2, rel=1e-15)
    assert loss.delta == pytest.approx((1 + math.exp(1.1)) * 1e-6 + math.exp(0.1) * 1e-5, rel=1e-14)
    eps, delta = R.theorem_5_6(0.5, 0.0, 0.0, 0.0)
    assert (eps, delta) == (0.5, 0.0)
    eps, delta = R.theorem_5_6(2.0, 1e-3, 0.01, 0.25)
    assert eps == 2.5
    assert delta == pytest.approx((1 + math.exp(2.25)) * 0.01 + math.exp(0.25) * 1e-3, rel=1e-14)


def test_theorem_5_6_bound_holds_on_a_finite_example():
    """A translation-calibrated mechanism run on non-translated f_θ stays within (ε′, δ′)."""
    z = np.arange(-60, 61)
    noise = np.exp(-0.5 * np.abs(z))
    noise /= noise.sum()  # two-sided geometric noise: M(F) = F + Z on the integers

    def out(f: np.ndarray) -> np.ndarray:
        return np.convolve(f, noise)

    base = np.array([0.05, 0.2, 0.4, 0.2, 0.1, 0.05, 0.0, 0.0])
    f_hat_i, f_hat_j = base, np.roll(base, 1)  # approximations: exact translates
    rng = np.random.default_rng(1)
    f_i = f_hat_i * (1 + 0.2 * rng.random(8))
    f_j = f_hat_j * (1 + 0.2 * rng.random(8))
    f_i, f_j = f_i / f_i.sum(), f_j / f_j.sum()
    delta, eta = 1e-3, 0.01
    eps = V.symmetric_approx_max_divergence(
        out(f_hat_i), out(f_hat_j), delta
    )  # exact (ε, δ) for the f̂
    lam = max(
        V.symmetric_approx_max_divergence(f_hat_i, f_i, eta),
        V.symmetric_approx_max_divergence(f_hat_j, f_j, eta),
    )
    assert 0 < lam < 0.2
    eps2, delta2 = R.theorem_5_6(eps, delta, eta, lam)
    for a, b in ((f_i, f_j), (f_j, f_i)):
        assert V.hockey_stick(out(a), out(b), math.exp(eps2)) <= delta2


def test_apply_theorem_5_6_to_guarantee():
    g = dp.Guarantee(
        epsilon=1.0, delta=1e-5, mechanism="expm-gauss", theorem="Chen & Ohrimenko Thm 5.4"
    )
    g2 = R.apply_theorem_5_6(g, eta=1e-6, lam=0.1)
    assert g2.epsilon == pytest.approx(1.2)
    assert g2.delta == pytest.approx(R.theorem_5_6(1.0, 1e-5, 1e-6, 0.1).delta)
    assert "Thm 5.6" in g2.theorem and "Thm 5.4" in g2.theorem
    assert any("λ = 0.1" in a for a in g2.assumptions)
    with pytest.raises(InvalidTypeError, match="guarantee"):
        R.apply_theorem_5_6((1.0, 1e-5), 1e-6, 0.1)
    # a δ′ above 1 says nothing and is stated as δ = 1; divergence claims are refused
    assert R.apply_theorem_5_6(g, eta=0.3, lam=0.1).delta == 1.0
    kl = dp.Guarantee(epsilon=0.1, delta=0.0, mechanism="coupling", divergence="kl")
    with pytest.raises(InvalidParameterError, match="Theorem 5.6 applies to"):
        R.apply_theorem_5_6(kl, eta=1e-6, lam=0.1)


# --------------------------------------------------------------------------- Theorem 5.7
def test_theorem_5_7_formula():
    t = R.theorem_5_7(1.0, 1e-5, W=0.3, lam=0.1, dim=4)
    assert t.extra_laplace_scale == pytest.approx(3.0)
    assert t.epsilon == pytest.approx(1.2)
    assert t.delta == pytest.approx(math.exp(0.1) * 1e-5)
    assert t.extra_l1_error == pytest.approx(12.0)
    assert t.extra_std == pytest.approx(3.0 * math.sqrt(2))
    z = t.sample(np.random.default_rng(0))
    assert z.shape == (4,) and np.all(z != 0)
    assert np.array_equal(t.sample(5), t.sample(5))
    t0 = R.theorem_5_7(1.0, 1e-5, W=0.0, lam=0.0, dim=2)
    assert t0.extra_laplace_scale == 0.0 and t0.epsilon == 1.0 and t0.delta == 1e-5
    assert np.array_equal(t0.sample(0), np.zeros(2))
    with pytest.raises(InvalidParameterError, match="lam"):
        R.theorem_5_7(1.0, 1e-5, W=0.3, lam=0.0)


def test_split_budget_laplace_closed_form_minimises_variance():
    et, dt, w, sens = 1.0, 1e-5, 0.2, 1.5
    s = R.split_budget_theorem_5_7(et, dt, w, sensitivity=sens)
    assert s.target.epsilon == pytest.approx(et, rel=1e-12)
    assert s.target.delta == pytest.approx(dt, rel=1e-12)
    assert s.extra_laplace_scale == pytest.approx(w / s.lam)
    grid = np.linspace(1e-4, et / 2 - 1e-4, 200_001)
    var = 2 * (sens / (et - 2 * grid)) ** 2 + 2 * (w / grid) ** 2
    assert s.lam == pytest.approx(grid[np.argmin(var)], abs=1e-5)
    assert s.total_std == pytest.approx(math.sqrt(var.min()), rel=1e-8)
    # the numerical rule on the same Laplace base agrees with the closed form
    n = R.split_budget_theorem_5_7(et, dt, w, base_std=lambda e, d: math.sqrt(2) * sens / e)
    assert n.lam == pytest.approx(s.lam, rel=1e-6)
    assert n.total_std == pytest.approx(s.total_std, rel=1e-9)
    # simple rule and W = 0
    simple = R.split_budget_theorem_5_7(2.0, 1e-4, 0.5)
    assert (simple.lam, simple.base_epsilon) == (0.5, 1.0)
    assert simple.base_delta == pytest.approx(1e-4 * math.exp(-0.5))
    assert simple.extra_laplace_scale == 1.0
    none = R.split_budget_theorem_5_7(2.0, 1e-4, 0.0, sensitivity=1.0)
    assert (none.lam, none.base_epsilon, none.base_delta, none.extra_laplace_scale) == (
        0.0,
        2.0,
        1e-4,
        0.0,
    )
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        R.split_budget_theorem_5_7(1.0, 1e-5, 0.1, sensitivity=1.0, base_std=lambda e, d: 1.0)


def test_validation():
    with pytest.raises(InvalidParameterError, match="eta"):
        R.theorem_5_6(1.0, 1e-5, 1.0, 0.1)
    with pytest.raises(InvalidParameterError, match="lam"):
        R.theorem_5_6(1.0, 1e-5, 1e-6, -0.1)
    with pytest.raises(InvalidParameterError, match="delta"):
        R.theorem_5_7(1.0, 1.5, 0.1, 0.1)
    with pytest.raises(InvalidParameterError, match="W"):
        R.theorem_5_7(1.0, 1e-5, -0.1, 0.1)
    with pytest.raises(InvalidParameterError, match="epsilon_target"):
        R.split_budget_theorem_5_7(0.0, 1e-5, 0.1)
