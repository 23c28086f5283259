"""Tests for distpriv.relaxed.gaps: the sample estimators of the Theorem 5.6/5.7 gaps (Section 5.4)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

import distpriv as dp
from distpriv import relaxed as R
from distpriv.errors import InvalidParameterError


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


def test_validation():
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
