"""Issue 25: certified δ(ε) of 2-D Gauss ⊛ Laplace outputs when the noise basis does not diagonalise the covariances."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distpriv as dp
import profile_oracle as po
from distpriv.accounting import laplace_nd as nd
from distpriv.accounting import release
from distpriv.accounting.release import NoiseLaw, proven_delta

MP, MQ = np.array([0.0, 0.0]), np.array([1.0, 0.3])
CP = np.array([[1.0, 0.3], [0.3, 0.8]])
CQ = np.array([[1.4, -0.2], [-0.2, 0.9]])
B, SC = np.eye(2), np.array([1.2, 0.9])
LAW = NoiseLaw.laplace(B, SC)


@pytest.fixture(scope="module")
def oracle_eps1() -> po.Profile:
    return po.output_delta(MP, CP, MQ, CQ, LAW, 1.0)


@pytest.mark.parametrize("kappa", [0.05, 0.02])
def test_bracket_contains_the_oracle(kappa, oracle_eps1):
    br = nd.delta_bracket_2d(MP, CP, MQ, CQ, B, SC, 1.0, kappa=kappa)
    # oracle (independent 2-D numerical convolution): forward 0.01635, backward 0.00190
    for (lo, up), true in ((br.forward, oracle_eps1.forward), (br.backward, oracle_eps1.backward)):
        assert lo - oracle_eps1.tol <= true <= up + oracle_eps1.tol
    assert br.forward[1] <= 2.5 * oracle_eps1.forward  # not only valid: tight (0.034 at κ = 0.05, 0.024 at 0.02)


def test_bracket_contains_monte_carlo():
    br = nd.delta_bracket_2d(MP, CP, MQ, CQ, B, SC, 0.5, kappa=0.05)
    est, se = po.monte_carlo_delta(MP, CP, MQ, CQ, LAW, 0.5, 20_000, np.random.default_rng(3))
    assert br.forward[0] - 4 * se <= est <= br.forward[1] + 4 * se


def test_rotated_basis_agrees_with_the_oracle():
    th = 0.6
    rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    law = NoiseLaw.laplace(rot, SC)
    o = po.output_delta(MP, CP, MQ, CQ, law, 0.7)
    br = nd.delta_bracket_2d(MP, CP, MQ, CQ, rot, SC, 0.7, kappa=0.05)
    assert br.forward[0] - o.tol <= o.forward <= br.forward[1] + o.tol
    assert br.backward[0] - o.tol <= o.backward <= br.backward[1] + o.tol


def test_proven_delta_uses_the_grid_and_beats_the_coupling_bound(oracle_eps1, monkeypatch):
    monkeypatch.setattr(release, "TIGHT_2D", True)  # opt-in
    model = dp.GaussianModel(means={0: MP, 1: MQ}, covariances={0: CP, 1: CQ})
    prof = proven_delta(model, [(0, 1)], LAW, 1.0, rtol=1e-2)
    assert prof.method == nd.METHOD
    assert prof.delta_lower - oracle_eps1.tol <= oracle_eps1.delta <= prof.delta_upper + oracle_eps1.tol
    # the coupling bound alone proved 0.368 here
    assert prof.delta_upper < 0.03


def test_not_applicable_falls_back():
    assert not nd.applies(3, np.eye(3), np.eye(3), np.eye(3))
    assert not nd.applies(2, np.array([[1.0], [0.0]]), np.eye(2), np.eye(2))
    assert nd.applies(2, np.eye(2), CP, CQ)


@pytest.mark.slow
def test_calibrated_scale_is_certified_and_below_the_coupling_scale(monkeypatch):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 2))
    cov = a @ a.T / 2 + 0.5 * np.eye(2)
    c = rng.normal(size=(2, 2))
    model = dp.GaussianModel(means={0: 10 + rng.normal(size=2), 1: 10 + rng.normal(size=2)},
                             covariances={0: cov, 1: cov + 0.4 * c @ c.T / 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loose = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3)  # default: coupling bound
        monkeypatch.setattr(release, "TIGHT_2D", True)
        tight = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    assert tight.guarantee.delta == 1e-3
    assert tight.laplace_scale < loose.laplace_scale / 1.3  # 1.5715 against 2.1347 (oracle least: 1.4832)
    o = po.output_delta(model.mean(0), model.covariance(0), model.mean(1), model.covariance(1), NoiseLaw.of(tight), 1.0)
    assert o.delta <= 1e-3 + o.tol


def test_concave_table_brackets_the_exact_log_density():
    # the table's interpolation is a lower bound of ln g, within err above it (concave chord, issue 25 speed-up)
    from distpriv.accounting.laplace import gl_logpdf

    t = np.random.default_rng(1).uniform(-30.0, 30.0, size=(40, 50))
    for s, b, kappa in ((0.7, 1.3, 0.05), (0.05, 2.0, 0.02), (3.0, 0.4, 0.2)):
        lg, err = nd._concave_table(t, s, b, kappa)
        exact = gl_logpdf(t, 0.0, s, b)
        assert np.all(lg <= exact + 1e-9)
        assert np.all(exact <= lg + err + 1e-9)
        assert err <= kappa / nd.TABLE_FINE + 1e-9  # the resolution asked for


def test_chord_upper_bounds_a_concave_function_to_second_order():
    # f concave with a kink; non-uniform grid (geometric widths like the tails); the bound must hold at every
    # point of every interior cell and be tighter than the Lipschitz bound (max corner + r) on smooth parts
    def f(u1, u2):
        return -0.5 * (u1 ** 2 + 0.6 * u1 * u2 + u2 ** 2) - np.abs(u1 - 0.3)

    x = np.cumsum(np.r_[-3.0, 0.2 * 1.08 ** np.arange(30)])
    y = np.cumsum(np.r_[-2.5, 0.15 * np.ones(35)])
    vals = f(x[:, None], y[None, :])
    c_lo = np.minimum(np.minimum(vals[:-1, :-1], vals[1:, :-1]), np.minimum(vals[:-1, 1:], vals[1:, 1:]))
    bound = nd._chord_upper(vals, c_lo, np.diff(x), np.diff(y))
    rng = np.random.default_rng(0)
    a, c = rng.uniform(size=(2, 400))
    for i in range(len(x) - 1):
        for j in range(len(y) - 1):
            pts = f(x[i] + a * (x[i + 1] - x[i]), y[j] + c * (y[j + 1] - y[j]))
            assert pts.max() <= bound[i, j] + 1e-12
    hmax = np.maximum(np.maximum(vals[:-1, :-1], vals[1:, :-1]), np.maximum(vals[:-1, 1:], vals[1:, 1:]))
    inner = bound[1:-1, 1:-1] - hmax[1:-1, 1:-1]
    assert np.median(inner) < 0.05  # a Lipschitz bound would add r = (w₁ + w₂)·max|∇f| ≈ 1 here
