"""Finite-Θ APGM (distpriv.attribute.apgm): Algorithm 1's arithmetic, Theorem 2 accuracy, exact privacy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from distpriv.attribute import (
    GaussianRecordModel,
    apgm,
    apgm_accuracy,
    apgm_noise_variance,
    dataset_attribute_privacy,
    gaussian_pair_delta,
    moments_from_samples,
)
from distpriv.calibration import classic_c, gaussian_delta, gaussian_max_distance
from distpriv.errors import ClassicCalibrationWarning
from test_attribute_record_model import (  # the record model supplies analytic moments
    COV,
    MU,
    _model,
)


def test_classic_rule_is_the_papers_formula() -> None:
    delta, eps, sens, v = 1e-3, 0.5, 6.125, 4.5
    assert apgm_noise_variance(sens, v, eps, delta, "classic") == pytest.approx((classic_c(delta) * sens / eps) ** 2 - v)
    assert apgm_noise_variance(0.075, 0.08, 1.0, delta, "exact") == 0.0  # exact at ε = 1: no noise
    with pytest.warns(ClassicCalibrationWarning):
        apgm_noise_variance(1.0, 0.0, 1.0, delta, "classic")
    d_star = gaussian_max_distance(eps, delta)
    assert apgm_noise_variance(sens, v, eps, delta, "exact") == pytest.approx((sens / d_star) ** 2 - v)


def test_accuracy_theorem2_empirical() -> None:
    s2, beta = 4.0, 0.1
    alpha = apgm_accuracy(s2, beta)
    assert alpha == pytest.approx(2.0 * stats.norm.ppf(0.95))
    z = np.random.default_rng(4).normal(0, 2.0, 200_000)
    assert np.mean(np.abs(z) > alpha) == pytest.approx(beta, abs=5 * math.sqrt(beta * (1 - beta) / z.size))


@pytest.mark.parametrize("m1, v1, m2, v2, eps", [(0.0, 1.0, 1.0, 2.0, 0.5), (0.0, 3.0, 0.5, 1.0, 1.0),
                                                 (1.0, 1.0, 0.0, 1.0, 0.7), (0.0, 1.0, 0.0, 4.0, 0.2)])
def test_gaussian_pair_delta_vs_quadrature(m1: float, v1: float, m2: float, v2: float, eps: float) -> None:
    def integrand(x: float) -> float:
        return max(0.0, stats.norm.pdf(x, m1, math.sqrt(v1)) - math.exp(eps) * stats.norm.pdf(x, m2, math.sqrt(v2)))

    ref = integrate.quad(integrand, -40, 40, limit=400, points=[m1, m2])[0]
    assert gaussian_pair_delta(m1, v1, m2, v2, eps) == pytest.approx(ref, abs=1e-9)


def test_equal_variance_pair_delta_is_the_analytic_profile() -> None:
    assert gaussian_pair_delta(0.0, 2.0, 1.5, 2.0, 0.8) == pytest.approx(float(gaussian_delta(1.5 / math.sqrt(2), 0.8)))


def test_vector_apgm_via_eigm() -> None:
    fw = dataset_attribute_privacy(["x", "y", "z"], [(("x", (0.0,)), ("x", (1.0,)))], thetas=("t",))
    m = _model(20)

    def mom(theta: str, attr: str, a: float):  # noqa: ANN202
        return m.conditional_moments(MU, COV, attr, ["y", "z"], a)

    mech = apgm(fw, mom, epsilon=1.0, delta=1e-3)
    dm = mech.details["d_max"]
    ma, va = mom("t", "x", 0.0)
    mb, _ = mom("t", "x", 1.0)
    diff = ma - mb
    total = va + mech.noise_covariance
    assert float(np.sqrt(diff @ np.linalg.solve(total, diff))) <= dm * (1 + 1e-9)
    assert np.linalg.eigvalsh(total)[0] >= (np.linalg.norm(diff) / dm) ** 2 * (1 - 1e-9)
    assert mech.accuracy(0.05) > 0
    vec = m.apgm(fw, ["y", "z"], epsilon=1.0, delta=1e-3)
    assert vec.dim == 2 and np.allclose(vec.noise_covariance, vec.noise_variance * np.eye(2))


def test_apgm_from_samples_matches_analytic() -> None:
    fw = dataset_attribute_privacy(["x", "y"], [(("x", (0.0,)), ("x", (1.0,)))], thetas=("t",))
    m = GaussianRecordModel(["x", "y"], {"x": 0.0, "y": 0.0}, {("x", "x"): 1.0, ("y", "y"): 1.0, ("x", "y"): 0.6}, 10)
    rng = np.random.default_rng(6)
    samples = {}
    for a in (0.0, 1.0):
        mu, var = m.conditional_moments({"x": 0.0, "y": 0.0}, {("x", "x"): 1.0, ("y", "y"): 1.0, ("x", "y"): 0.6}, "x", ["y"], a)
        samples[("t", "x", a)] = rng.normal(mu[0], math.sqrt(var[0, 0]), 40000)
    mech = apgm(fw, moments_from_samples(samples), epsilon=1.0, delta=1e-3, from_samples=True)
    exact = m.apgm(fw, "y", epsilon=1.0, delta=1e-3)
    assert mech.noise_variance == pytest.approx(exact.noise_variance, rel=0.05)
    assert any("estimated from samples" in s for s in mech.guarantee.assumptions)


def test_finite_apgm_unequal_variances_meets_exact_delta() -> None:
    """Var(F | a) ≠ Var(F | b): Algorithm 1's σ² alone gives δ ≈ 0.03 > 1e-5; the claim must hold exactly."""
    fw = dataset_attribute_privacy(["x", "y"], [(("x", (0.0,)), ("x", (1.0,)))], thetas=("t",))
    mom = {("t", "x", 0.0): ([0.0], [[0.05]]), ("t", "x", 1.0): ([0.3], [[2.0]])}
    mech = apgm(fw, mom, epsilon=0.5, delta=1e-5)
    s2 = mech.noise_variance
    d = max(gaussian_pair_delta(0.0, 0.05 + s2, 0.3, 2.0 + s2, 0.5), gaussian_pair_delta(0.3, 2.0 + s2, 0.0, 0.05 + s2, 0.5))
    assert d <= 1e-5 * (1 + 1e-6)
