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
