"""Tests for distpriv.relaxed: Theorems 5.6/5.7 and the assumption diagnostics (Section 5.4)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

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


# --------------------------------------------------------------------------- estimators
def test_translation_gap_zero_for_exact_translates_and_large_for_skew():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    c = np.array([0.5, -1.0, 2.0])
    assert R.translation_gap(x, x + c) == pytest.approx(0.0, abs=1e-12)
    assert R.translation_gap(x[:, 0], x[:, 0] - 4.0) == pytest.approx(0.0, abs=1e-12)
    # two Gaussian samples with equal covariance vs. two differently skewed samples
    g = R.translation_gap(rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + 0.5)
    s = R.translation_gap(
        rng.lognormal(0, 1.0, size=(300, 2)), 3 * rng.lognormal(0, 0.3, size=(300, 2))
    )
    assert g < 2.0 < 8.0 < s
    # closeness version ignores the extreme 5% and is smaller
    gc = R.translation_gap(x, rng.normal(size=(300, 3)), delta=0.05)
    assert gc < R.translation_gap(x, rng.normal(size=(300, 3)))


def test_gaussian_w_infinity_gap_exact_quantiles_and_skew():
    n = 200
    q = 1.5 + 2.0 * ndtri((np.arange(1, n + 1) - 0.5) / n)  # exactly the Gaussian quantile sample
    assert R.gaussian_w_infinity_gap(q, [1.5], [[4.0]]) == pytest.approx(0.0, abs=1e-12)
    shifted = R.gaussian_w_infinity_gap(q + 0.3, [1.5], [[4.0]])
    assert shifted == pytest.approx(0.3, abs=1e-12)
    rng = np.random.default_rng(2)
    gauss = R.gaussian_w_infinity_gap(rng.normal(size=500))
    skew = R.gaussian_w_infinity_gap(rng.lognormal(0, 1.0, size=500))
    assert gauss < 1.0 and skew > 5.0
    assert R.gaussian_w_infinity_gap(rng.lognormal(0, 1.0, size=500), delta=0.05) < skew
    # multivariate: seeded Gaussian draw, deterministic per seed
    x = rng.normal(size=(200, 2))
    assert R.gaussian_w_infinity_gap(x, rng=3) == R.gaussian_w_infinity_gap(x, rng=3)


def test_approx_max_divergence_gap_exact_cells_and_definition():
    # samples at the Gaussian quantiles fill the b equal-mass cells exactly: divergence 0
    n, b = 400, 8
    q = -1.0 + 0.5 * ndtri((np.arange(1, n + 1) - 0.5) / n)
    assert R.approx_max_divergence_gap(q, [-1.0], [[0.25]], 0.0, bins=b) == pytest.approx(
        0.0, abs=1e-12
    )
    # an exponential sample against its Gaussian fit, 4 cells: compare with Definition 5.1 by brute force
    rng = np.random.default_rng(4)
    x = rng.exponential(size=2000)
    mu, sd = x.mean(), x.std(ddof=1)
    edges = mu + sd * ndtri(np.arange(1, 4) / 4)
    emp = np.bincount(np.searchsorted(edges, x, side="right"), minlength=4) / x.size
    gauss = np.diff(np.concatenate([[0.0], ndtr((edges - mu) / sd), [1.0]]))
    assert np.allclose(gauss, 0.25)
    eta = 0.02

    def definition_5_1(a: np.ndarray, c: np.ndarray) -> float:
        best = -math.inf
        for r in range(1, 5):
            for s in itertools.combinations(range(4), r):
                pa, pc = a[list(s)].sum(), c[list(s)].sum()
                if pa >= eta and pa - eta > 0:
                    best = max(best, math.log((pa - eta) / pc))
        return best

    ref = max(0.0, definition_5_1(emp, gauss), definition_5_1(gauss, emp))
    got = R.approx_max_divergence_gap(x, None, None, eta, bins=4)
    assert got == pytest.approx(ref, rel=1e-9)
    assert got > 0.2


def test_equal_covariance_gap():
    s = np.array([[2.0, 0.5], [0.5, 1.0]])
    assert R.equal_covariance_gap(s, s) == 0.0
    assert R.equal_covariance_gap(s, 2 * s) == pytest.approx(0.5)
    assert R.equal_covariance_gap(2 * s, s) == pytest.approx(0.5)
    assert R.equal_covariance_gap(np.zeros((2, 2)), np.zeros((2, 2))) == 0.0
    assert R.equal_covariance_gap([[1.0]], [[3.0]]) == pytest.approx(2 / 3)
    model = dp.GaussianModel(
        means={0: [0.0, 0.0], 1: [1.0, 0.0], 2: [2.0, 0.0]},
        covariances={0: s, 1: s, 2: 4 * s},
    )
    assert R.max_equal_covariance_gap(model, [(0, 1)]) == 0.0
    assert R.max_equal_covariance_gap(model, [(0, 1), (1, 2)]) == pytest.approx(0.75)
    with pytest.raises(InvalidParameterError, match="cov_j"):
        R.equal_covariance_gap(s, [[1.0, 2.0], [2.0, 1.0]])  # not PSD


# --------------------------------------------------------------------------- diagnose
def _model(kind: str, n: int = 500) -> dp.EmpiricalModel:
    rng = np.random.default_rng(7)
    if kind == "gauss":
        cov = np.array([[1.0, 0.3], [0.3, 0.5]])
        return dp.EmpiricalModel(
            samples={
                0.45: rng.multivariate_normal([0.0, 0.0], cov, size=n),
                0.55: rng.multivariate_normal([0.4, 0.2], cov, size=n),
            }
        )
    return dp.EmpiricalModel(
        samples={
            0.45: rng.lognormal(0.0, 1.0, size=(n, 2)),
            0.55: 3.0 * rng.lognormal(0.0, 0.3, size=(n, 2)),
        }
    )


def test_diagnose_small_on_gaussians_large_on_skewed_data():
    kw = {"epsilon": 1.0, "delta": 1e-3, "eta": 0.02, "closeness_delta": 0.02}
    g = R.diagnose(_model("gauss"), [(0.45, 0.55)], **kw)
    s = R.diagnose(_model("skew"), [(0.45, 0.55)], **kw)
    assert g["max_covariance_gap"] < 0.2 < 0.5 < s["max_covariance_gap"]
    assert g["max_divergence_gap"] < 0.6 < 1.0 < s["max_divergence_gap"]
    assert g["max_translation_gap"] < 1.5 < 5.0 < s["max_translation_gap"]
    assert g["max_translation_closeness_gap"] < g["max_translation_gap"]
    assert g["max_gaussian_w_infinity_gap"] < 1.5 < 5.0 < s["max_gaussian_w_infinity_gap"]
    assert g["max_gaussian_closeness_gap"] < 1.0 < 2.0 < s["max_gaussian_closeness_gap"]
    # the reported corrections are the theorems at the measured gaps
    lam = g["max_divergence_gap"]
    t56 = R.theorem_5_6(1.0, 1e-3, 0.02, lam)
    assert g["theorem_5_6"] == {"lam": lam, "eta": 0.02, "epsilon": t56.epsilon, "delta": t56.delta}
    t57 = g["theorem_5_7"]["translation"]
    assert t57["W"] == g["max_translation_gap"]
    assert t57["extra_laplace_scale"] == pytest.approx(g["max_translation_gap"] / 0.25)
    assert (t57["epsilon"], t57["delta"]) == (1.5, pytest.approx(math.exp(0.25) * 1e-3))
    assert t57["target_split"]["base_epsilon"] == 0.5
    # per-pair and per-θ rows
    (row,) = g["pairs"]
    assert row["pair"] == (0.45, 0.55)
    assert row["mean_l1"] == pytest.approx(0.6, abs=0.25)
    assert set(g["thetas"]) == {0.45, 0.55}
    assert g["thetas"][0.45]["n_samples"] == 500
    # deterministic for a seed
    assert R.diagnose(_model("gauss"), [(0.45, 0.55)], **kw) == g


def test_diagnose_gaussian_gaps_are_to_equal_covariance_approximations():
    # Exactly Gaussian f_θ with very different covariances: per-θ fits N(μ̂_θ, Σ̂_θ) are close, but
    # they are not approximations any Section 5.3 mechanism accepts (equal covariances within a pair).
    # Theorems 5.6/5.7 must pay for the distance to N(μ̂_θ, Σ̄) instead.
    rng = np.random.default_rng(0)
    model = dp.EmpiricalModel({0.45: rng.normal(0.0, 1.0, size=(800, 1)),
                               0.55: rng.normal(0.5, 3.0, size=(800, 1))})
    d = R.diagnose(model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3, eta=0.02)
    per_theta_fit = R.approx_max_divergence_gap(model.samples(0.45), None, None, 0.02)
    assert per_theta_fit < 0.5
    assert d["max_divergence_gap"] > 1.0 and d["theorem_5_6"]["epsilon"] > 3.0
    assert d["max_gaussian_w_infinity_gap"] > 3.0


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
    with pytest.raises(InvalidParameterError, match="samples_j"):
        R.translation_gap(np.zeros((5, 2)), np.zeros((5, 3)))
    with pytest.raises(InvalidParameterError, match="samples"):
        R.gaussian_w_infinity_gap(np.array([1.0, np.nan, 2.0]))
    with pytest.raises(InvalidParameterError, match="cov"):
        R.approx_max_divergence_gap(np.ones((10, 2)), None, None, 0.01)  # singular covariance
    with pytest.raises(InvalidParameterError, match="mean"):
        R.approx_max_divergence_gap(
            np.random.default_rng(0).normal(size=(50, 2)), [0.0], None, 0.01
        )
    with pytest.raises(InvalidTypeError, match="model"):
        R.diagnose(dp.GaussianModel({0: [0.0]}, {0: [[1.0]]}), [(0, 1)])
