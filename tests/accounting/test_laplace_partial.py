"""Issue 25: the common-Gaussian-factor bound for Laplace noise on fewer directions than the dimension
(:mod:`distpriv.accounting.laplace_partial`), on Chen & Ohrimenko's Adult Table 3 workload (DirM (L), one noise
direction in 5-D: the issue's "Why" example) and on small random models.

The independent truth is a Monte Carlo of δ(ε) = E_P[(1 − e^{ε − L})_+] with the exact output densities: a
Gaussian plus Laplace noise along one unit vector v has the closed-form density
p(y) = ∫ N(y − vt; μ, Σ) e^{−|t|/b}/(2b) dt = N-part × Σ_± √(2π/a) e^{a m±²/2} Φ(±m± √a)/(2b),
a = vᵀΣ⁻¹v, c = (y − μ)ᵀΣ⁻¹v, m± = (c ∓ 1/b)/a (completing the square on each half-line of t). Written here, not
imported; the tolerance is 4 standard errors of the estimate.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr

import distpriv as dp
from distpriv.accounting import gaussian as gauss
from distpriv.accounting import laplace as lap
from distpriv.accounting import laplace_partial as lp
from distpriv.accounting.release import proven_delta
from distpriv.experiments.compare import DELTA_P, PROPERTIES, QUICK, pair_for
from distpriv.experiments.compare_work import property_inputs


def _log_density(y: np.ndarray, mu: np.ndarray, cov: np.ndarray, v: np.ndarray, b: float) -> np.ndarray:
    inv = np.linalg.inv(cov)
    r = y - mu
    a = float(v @ inv @ v)
    c = r @ inv @ v
    q0 = np.einsum("ij,jk,ik->i", r, inv, r)
    _, logdet = np.linalg.slogdet(cov)
    base = -0.5 * q0 - 0.5 * mu.size * math.log(2 * math.pi) - 0.5 * logdet - math.log(2 * b)
    mp, mn = (c - 1 / b) / a, (c + 1 / b) / a
    half = 0.5 * math.log(2 * math.pi / a)
    tp = half + 0.5 * a * mp ** 2 + log_ndtr(mp * math.sqrt(a))
    tn = half + 0.5 * a * mn ** 2 + log_ndtr(-mn * math.sqrt(a))
    return base + np.logaddexp(tp, tn)


def mc_delta(mp: np.ndarray, cp: np.ndarray, mq: np.ndarray, cq: np.ndarray, v: np.ndarray, b: float, eps: float,
             n: int, seed: int) -> tuple[float, float]:
    """(estimate, standard error) of δ_{P‖Q}(ε) for F + vL, L ~ Lap(b), by exact-density Monte Carlo."""
    rng = np.random.default_rng(seed)
    y = rng.multivariate_normal(mp, cp, n) + np.outer(rng.laplace(0.0, b, n), v)
    loss = _log_density(y, mp, cp, v, b) - _log_density(y, mq, cq, v, b)
    w = -np.expm1(np.minimum(eps - loss, 0.0))
    return float(w.mean()), float(w.std() / math.sqrt(n))


def test_line_density_integrates_to_the_quadrature() -> None:
    """The closed form against a direct quadrature over t at a few points (the MC's density is right)."""
    from scipy import integrate
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + 0.5 * np.eye(3)
    mu = rng.normal(size=3)
    v = np.array([0.6, 0.0, 0.8])
    b = 0.7
    inv, det = np.linalg.inv(cov), np.linalg.det(cov)
    for y in rng.normal(size=(3, 3)):
        def f(t: float, y: np.ndarray = y) -> float:
            r = y - v * t - mu
            return float(np.exp(-0.5 * r @ inv @ r) / math.sqrt((2 * math.pi) ** 3 * det) * math.exp(-abs(t) / b) / (2 * b))
        quad = integrate.quad(f, -np.inf, 0)[0] + integrate.quad(f, 0, np.inf)[0]
        assert math.exp(float(_log_density(y[None, :], mu, cov, v, b)[0])) == pytest.approx(quad, rel=1e-8)


@pytest.fixture(scope="module")
def adult() -> tuple[dp.GaussianModel, tuple[float, float]]:
    pair = pair_for(DELTA_P)
    return property_inputs(0, "income", PROPERTIES["income"], pair, tuple(QUICK.items())).gm, pair


def _dirm(gm: dp.GaussianModel, pair: tuple[float, float], eps: float, **kw: object) -> dp.Mechanism:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dp.calibrate("dirm-laplace", gm, [pair], epsilon=eps, **kw)


#: The issue's "Why" figure (DirM (L) δ′ on Adult, compare's income model): (ε, coupling claim of tight=False,
#: tight=True claim, Monte Carlo truth of the review (4e5 draws per order), least factor coupling/tight asserted).
#: The chain rule with the conditional common factor alone gave 0.0520 and 0.00424; the joint-law bound 0.0314 and
#: 0.00141 (laplace_partial.joint_law_delta).
WHY = ((1.0, 0.0601, 0.0314, 0.0141, 1.9), (5.0, 0.1164, 0.00141, 5.5e-4, 80.0))


@pytest.mark.parametrize("eps,coupling,claim,truth,factor", WHY)
def test_adult_dirm_laplace_delta(adult: tuple[dp.GaussianModel, tuple[float, float]], eps: float, coupling: float,
                                  claim: float, truth: float, factor: float) -> None:
    """Regression of the Why figure: the tight claim (method laplace_partial.METHOD) at its value, a stated factor below
    the coupling claim, and above the exact-density Monte Carlo truth of both orders of the pair."""
    gm, pair = adult
    loose = _dirm(gm, pair, eps, tight=False)
    assert loose.guarantee.delta == pytest.approx(coupling, rel=2e-3)
    mech = _dirm(gm, pair, eps)  # tight=True: the default for a 5-D GaussianModel
    d = mech.guarantee.delta
    assert d == pytest.approx(claim, rel=2e-2)
    assert loose.guarantee.delta >= factor * d
    assert any(lp.JOINT_METHOD in n for n in mech.guarantee.notes)
    v, b = np.asarray(mech.basis)[:, 0], float(np.asarray(mech.scales)[0])
    ests = [mc_delta(gm.mean(p), gm.covariance(p), gm.mean(q), gm.covariance(q), v, b, eps, 40_000, 10 + k)
            for k, (p, q) in enumerate((pair, pair[::-1]))]
    for est, se in ests:
        assert d >= est - 4 * se
    est, se = max(ests)
    assert est == pytest.approx(truth, abs=4 * se + 0.05 * truth)  # the review's truth (the worse order)


@pytest.mark.slow
def test_conditional_bound_above_truth_on_random_models() -> None:
    """chain_bound and joint_bound (both orders) above the exact-density Monte Carlo on random 3-D models with noise on
    one direction, unequal covariances and means."""
    rng = np.random.default_rng(7)
    for _ in range(3):
        a1, a2 = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
        ca, cb = a1 @ a1.T + 0.3 * np.eye(3), a2 @ a2.T + 0.3 * np.eye(3)
        ma, mb = rng.normal(size=3), rng.normal(size=3)
        v = rng.normal(size=3)
        v /= np.linalg.norm(v)
        basis = v[:, None]
        b = float(rng.uniform(0.3, 2.0))
        eps = float(rng.choice([0.5, 1.0, 3.0]))
        comp = lap.complete_basis(basis)
        for k, (mp, cp, mq, cq) in enumerate(((ma, ca, mb, cb), (mb, cb, ma, ca))):
            red = gauss.reduce_pair(comp.T @ mp, comp.T @ cp @ comp, comp.T @ mq, comp.T @ cq @ comp)
            val, split = lp.chain_bound(red, mp, cp, mq, cq, basis, [b], eps)
            assert 0.0 <= split <= eps
            est, se = mc_delta(mp, cp, mq, cq, v, b, eps, 20_000, 100 + k)
            assert val >= est - 4 * se
            assert lp.joint_bound(mp, cp, mq, cq, basis, [b], eps) >= est - 4 * se


def test_conditional_term_is_the_coupling_argument_plus_a_factor() -> None:
    """Without a Gaussian factor (c = 0) the mixture bound is the coupling bound's own argument applied to the same D:
    the conditional law with Σ − BCBᵀ at C = 0 is lap.conditional_shift's, and a positive C lowers the bound where
    the conditional spread is large against the Laplace scale."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 3))
    cov_a = a @ a.T + 2.0 * np.eye(3)
    cov_b = cov_a + 0.2 * np.diag([1.0, 0.5, 0.0])
    v = np.array([[1.0], [0.0], [0.0]])
    ma, mb = np.zeros(3), np.array([1.0, 0.0, 0.0])
    mean, cov = lap.conditional_shift(ma, cov_a, mb, cov_b, v)
    coupling = lap.coupling_delta_bound(mean, cov, [0.4], 2.0)
    with_factor = lp.conditional_common_delta(ma, cov_a, mb, cov_b, v, [0.4], 2.0)
    assert with_factor < 0.5 * coupling


@pytest.mark.slow
def test_calibrate_at_a_delta_target_uses_less_noise(adult: tuple[dp.GaussianModel, tuple[float, float]]) -> None:
    """dirm-laplace at (5, 1e-3): tight=True's scale below tight=False's, the engine certifies it, and the Monte Carlo
    truth at it is within the target."""
    gm, pair = adult
    loose = _dirm(gm, pair, 5.0, delta=1e-3, tight=False)
    tight = _dirm(gm, pair, 5.0, delta=1e-3)
    s_loose, s_tight = float(np.asarray(loose.scales)[0]), float(np.asarray(tight.scales)[0])
    assert s_tight <= 0.8 * s_loose  # measured 0.953 against 1.248 (the review's least by Monte Carlo: ~0.84)
    assert proven_delta(gm, [pair], tight.noise, 5.0, tight=True).delta_upper <= 1e-3
    v = np.asarray(tight.basis)[:, 0]
    for k, (p, q) in enumerate((pair, pair[::-1])):
        est, se = mc_delta(gm.mean(p), gm.covariance(p), gm.mean(q), gm.covariance(q), v, s_tight, 5.0, 40_000, 30 + k)
        assert est - 4 * se <= 1e-3
