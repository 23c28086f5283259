"""Calibration: exact analytic Gaussian vs an independent integration of the privacy-loss distribution."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from conftest import profile_by_integration
from distpriv import calibration as cal
from distpriv.errors import ClassicCalibrationWarning, InvalidParameterError, UnknownLabelError


@pytest.mark.parametrize("distance", [0.05, 0.3, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 3.0, 8.0])
def test_profile_matches_integration(distance, epsilon):
    ref = profile_by_integration(distance, epsilon)
    got = cal.gaussian_delta(distance, epsilon)
    if ref > 1e-280:
        assert got == pytest.approx(ref, rel=1e-6, abs=1e-300)
    else:
        # the quadrature underflows; δ(ε) <= P(L > ε) = Φ(D/2 − ε/D) (drop the e^ε term), checked in logs
        log_tail = stats.norm.logsf(epsilon / distance - distance / 2)
        assert log_tail < math.log(1e-250)
        assert got >= 0.0
        assert got == 0.0 or math.log(got) <= log_tail + 1e-9


@pytest.mark.parametrize("epsilon,delta", [(0.2, 1e-3), (1.0, 1e-5), (5.0, 1e-3), (10.0, 1e-2), (0.01, 0.3)])
def test_max_distance_is_the_root(epsilon, delta):
    d_star = cal.gaussian_max_distance(epsilon, delta)
    assert profile_by_integration(d_star, epsilon) == pytest.approx(delta, rel=1e-6)
    # strictly monotone: slightly larger shifts violate δ
    assert profile_by_integration(d_star * 1.001, epsilon) > delta


@pytest.mark.parametrize("distance,delta", [(0.4, 1e-3), (1.0, 1e-5), (3.0, 1e-2)])
def test_epsilon_inverts_max_distance(distance, delta):
    eps = cal.gaussian_epsilon(distance, delta)
    assert cal.gaussian_max_distance(eps, delta) == pytest.approx(distance, rel=1e-9)
    assert cal.gaussian_epsilon(1e-6, 0.5) == 0.0


@pytest.mark.parametrize("epsilon", [0.05, 0.2, 0.5, 0.9])
@pytest.mark.parametrize("delta", [1e-2, 1e-3, 1e-5])
def test_classic_rule_is_valid_and_exact_is_tighter_for_small_eps(epsilon, delta):
    classic = cal.max_distance(epsilon, delta, "classic")
    exact = cal.max_distance(epsilon, delta, "exact")
    assert classic == pytest.approx(epsilon / math.sqrt(2 * math.log(1.25 / delta)))
    assert profile_by_integration(classic, epsilon) <= delta  # the classic theorem holds for ε < 1
    assert exact >= classic


def test_classic_sigma_matches_paper_example_and_warns():
    # (c·√2/ε)² ≈ 28.52 at ε = 1, δ = 1e-3 (Chen & Ohrimenko Sec. 5.3)
    with pytest.warns(ClassicCalibrationWarning):
        sigma = cal.gaussian_sigma(math.sqrt(2), 1.0, 1e-3, "classic")
    assert sigma**2 == pytest.approx(28.52, abs=0.005)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cal.gaussian_sigma(1.0, 0.5, 1e-3, "classic")  # no warning below 1


def test_laplace_scale_and_loss():
    assert cal.laplace_scale(2.0, 0.5) == 4.0
    assert cal.laplace_privacy_loss(2.0, 4.0) == 0.5


@pytest.mark.parametrize(
    "call",
    [
        lambda: cal.gaussian_max_distance(0.0, 1e-3),
        lambda: cal.gaussian_max_distance(-1.0, 1e-3),
        lambda: cal.gaussian_max_distance(1.0, 0.0),
        lambda: cal.gaussian_max_distance(1.0, 1.0),
        lambda: cal.gaussian_max_distance(float("nan"), 1e-3),
        lambda: cal.laplace_scale(-1.0, 1.0),
    ],
)
def test_bad_input(call):
    with pytest.raises(InvalidParameterError) as info:
        call()
    assert any(w in str(info.value) for w in ("epsilon", "delta", "sensitivity"))


def test_unknown_calibration():
    with pytest.raises(UnknownLabelError, match="calibration"):
        cal.max_distance(1.0, 1e-3, "fancy")


def test_vectorised_profile():
    d = np.array([0.5, 1.0, 2.0])
    out = cal.gaussian_delta(d, 1.0)
    assert out.shape == (3,)
    assert np.all(np.diff(out) > 0)
