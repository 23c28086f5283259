"""Tests for distpriv.relaxed.diagnose: one diagnosis of the Expected Value assumptions at an explicit η (Section 5.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import distpriv as dp
from distpriv import relaxed as R
from distpriv.errors import InvalidParameterError, InvalidTypeError


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
    with pytest.raises(InvalidTypeError, match="model"):
        R.diagnose(dp.GaussianModel({0: [0.0]}, {0: [[1.0]]}), [(0, 1)])
    with pytest.raises(InvalidTypeError, match="model"):
        R.estimate_gaps(dp.GaussianModel({0: [0.0]}, {0: [[1.0]]}), [(0, 1)], eta=1e-4)
    with pytest.raises(InvalidParameterError, match="bins"):
        R.estimate_gaps(_model("gauss"), [(0.45, 0.55)], eta=1e-4, bins=1)
    with pytest.raises(InvalidParameterError, match="bins"):
        R.estimate_gaps(_model("gauss"), [(0.45, 0.55)], eta=1e-4, bins=3000)  # 3000² cells


# --------------------------------------------------------------------------- one diagnosis, explicit η
def test_eta_rules():
    """Research default η = δ/10; the release's η = δ/(2(1 + e^ε)), i.e. (1 + e^ε)η = δ/2, finite at huge ε."""
    assert R.research_eta(1e-3) == pytest.approx(1e-4, rel=1e-15)
    assert R.half_budget_eta(1.0, 1e-3) == pytest.approx(1e-3 / (2 * (1 + math.e)), rel=1e-12)
    assert R.half_budget_eta(0.0, 0.2) == pytest.approx(0.05, rel=1e-12)
    assert R.half_budget_eta(1e6, 1e-3) == 0.0  # e^{-1e6} underflows to 0, no overflow error
    assert R.half_budget_eta(50.0, 1e-3) == pytest.approx(0.5e-3 * math.exp(-50.0), rel=1e-9)


def test_unified_diagnose_gives_the_release_eta_and_the_research_default():
    """One computation (estimate_gaps): relaxed.diagnose at the release's η reproduces the release's gaps."""
    from distpriv.release.assumptions import diagnose_assumptions, eta_for

    r = np.random.default_rng(11)
    model = dp.EmpiricalModel({0.45: r.normal(0.0, 1.0, size=(600, 1)), 0.55: r.gumbel(0.4, 1.0, size=(600, 1))})
    pairs = [(0.45, 0.55)]
    eps, delta = 1.0, 1e-3
    research = R.diagnose(model, pairs, epsilon=eps, delta=delta)
    assert research["eta"] == research["theorem_5_6"]["eta"] == pytest.approx(1e-4, rel=1e-15)
    release_eta = eta_for(eps, delta)
    assert release_eta == R.half_budget_eta(eps, delta) == pytest.approx(1e-3 / (2 * (1 + math.e)), rel=1e-12)
    at_release = R.diagnose(model, pairs, epsilon=eps, delta=delta, eta=release_eta)
    diag = diagnose_assumptions(model, pairs, epsilon=eps, delta=delta)
    assert diag.eta == at_release["eta"] == release_eta
    # the same gaps, bit for bit (1-D: the Gaussian reference sample is the quantile grid)
    assert diag.divergence_lambda == at_release["max_divergence_gap"]
    assert diag.gaussian_w == at_release["max_gaussian_w_infinity_gap"]
    assert diag.translation_w == at_release["reference_translation_gap"]
    assert diag.wasserstein_w == at_release["wasserstein_delta_W"] == pytest.approx(
        dp.distances.w_infinity_samples(model.samples(0.45), model.samples(0.55), norm=1), rel=1e-12)
    assert diag.reference == at_release["reference_theta"] == 0.45
    # at ε = 1 the release's η (δ/7.44) exceeds δ/10, and a larger η can only lower D^η∞ (more mass may be ignored)
    assert release_eta > research["eta"]
    assert 0.0 < at_release["max_divergence_gap"] <= research["max_divergence_gap"]


def test_estimate_gaps_values_and_guards():
    r = np.random.default_rng(5)
    x = r.normal(size=(400, 1))
    model = dp.EmpiricalModel({0: x, 1: x + 2.0, 2: x - 1.0})
    g = R.estimate_gaps(model, [(0, 1), (1, 2)], eta=1e-3)
    assert g.reference == 0
    assert g.translation_w == pytest.approx(0.0, abs=1e-9)  # exact translates of θ₀
    assert g.wasserstein_w == pytest.approx(3.0, rel=1e-12)  # W∞(f_1, f_2) = |2 − (−1)|
    np.testing.assert_allclose(g.pooled_covariance, R.pooled_covariance(model, [0, 1, 2]), rtol=0, atol=0)
    assert g.pooled_covariance[0, 0] == pytest.approx(float(np.var(x, ddof=1)), rel=1e-12)
    assert set(g.gaussian_w) == set(g.divergence) == {0, 1, 2}
    assert g.divergence_lambda == max(g.divergence.values())
    # too coarse a histogram (1000/20 = 50 < 3^5 cells): λ is not estimated (inf), not under-estimated
    m5 = dp.EmpiricalModel({0: r.normal(size=(1000, 5)), 1: r.normal(size=(1000, 5))})
    assert math.isinf(R.estimate_gaps(m5, [(0, 1)], eta=1e-3, min_bins=3).divergence_lambda)
    assert math.isfinite(R.estimate_gaps(m5, [(0, 1)], eta=1e-3).divergence_lambda)
    # singular Σ̄: no density comparison, λ = inf
    line = np.c_[np.arange(50.0), np.arange(50.0)]
    sing = dp.EmpiricalModel({0: line, 1: line + 1.0})
    assert math.isinf(R.estimate_gaps(sing, [(0, 1)], eta=1e-3).divergence_lambda)
