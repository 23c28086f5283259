"""The +∞-loss mass of a PLD product (review32, F2): Π(m_k + i_k) − Π m_k cancelled to 0 once the i_k fell below the
product's rounding, and a deterministic quantizer claimed δ = 0 where its true δ is 1.2e-25."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import distpriv as dp
from distpriv.accounting.pld import _excess


def test_excess_keeps_masses_far_below_the_rounding_of_the_product() -> None:
    m, i = np.array([1.0 - 1e-3, 0.7, 0.999]), np.array([1e-25, 0.0, 3e-30])
    exact = 0.7 * 0.999 * 1e-25 + (1.0 - 1e-3) * 0.7 * 3e-30 + 0.7 * 1e-25 * 3e-30  # expanded by hand
    assert float(np.prod(m + i) - np.prod(m)) == 0.0  # the old form
    assert exact <= _excess(m, i) <= exact * (1 + 1e-12)
    assert _excess(np.array([0.0, 0.5]), np.array([0.2, 0.1])) == pytest.approx(0.2 * 0.6, rel=1e-14)
    assert _excess(np.ones(3), np.zeros(3)) == 0.0


def _quantizer_true_delta(q, model, eps: float) -> float:  # noqa: ANN001
    """δ(ε) of the quantizer's bin masses along the shifted coordinate, both orders, in log space (the other
    coordinate has identical laws): independent of the accounting."""
    w, c, s = q.basis, q.centre, q.width
    m0, m1 = w.T @ model.mean(0), w.T @ model.mean(1)
    k = int(np.argmax(np.abs(m1 - m0)))
    j = np.arange(math.floor((m0[k] - 40 - c[k]) / s), math.floor((m1[k] + 40 - c[k]) / s) + 2)
    lo, hi = c[k] + (j - 0.5) * s, c[k] + (j + 0.5) * s

    def logmass(mu: float) -> np.ndarray:
        a = np.where(lo > mu, norm.logsf(lo, mu), norm.logcdf(hi, mu))
        b = np.where(lo > mu, norm.logsf(hi, mu), norm.logcdf(lo, mu))
        return a + np.log1p(-np.exp(b - a))

    lp, lq = logmass(m0[k]), logmass(m1[k])
    return max(float(np.sum(np.exp(x) * -np.expm1(np.minimum(eps - (x - y), 0.0)))) for x, y in ((lp, lq), (lq, lp)))


def test_quantizer_on_a_small_shift_claims_its_tiny_delta() -> None:
    model = dp.GaussianModel(means={0: [0.0, 0.0], 1: [0.1, 0.0]}, covariances={0: np.eye(2), 1: np.eye(2)})
    q = dp.calibrate("ssp-quantizer", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    truth = _quantizer_true_delta(q, model, 1.0)
    assert 1e-26 < truth < 1e-24
    assert q.guarantee.delta >= truth
