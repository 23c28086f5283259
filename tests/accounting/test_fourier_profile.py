"""The Fourier-inversion core of the Gaussian accounting (issue 26 item 2) against independent values.

* pure shifts (a_i = 0): the loss is N(μ, σ²) and δ has the analytic Gaussian closed form, evaluated
  here with mpmath at 50 digits;
* central quadratic forms a·χ²_k + c: δ = Q(k/2, t₀/2) − e^{ε−c}(1 + 2a)^{−k/2} Q(k/2, (1 + 2a)t₀/2)
  (regularised upper incomplete gamma, mpmath), t₀ = (ε − c)/a;
* two coordinates: a semi-analytic integral (closed-form inner δ, adaptive quadrature outside);
* random 3-5-D pairs with unequal covariances: the FFT bracket of :mod:`distpriv.accounting.pld`
  (an independent certified computation) must intersect it, and the 2-D oracle of
  ``tests/profile_oracle.py`` must agree within its tolerance.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from distpriv.accounting import fourier, pld
from distpriv.accounting.gaussian import (
    GaussCoord,
    gaussian_pair_profile,
    marginal_lower_bound,
    reduce_pair,
)
from distpriv.accounting.profile import FOURIER, PLD
from profile_oracle import gaussian_outputs


def _shift_truth(mu: float, var: float, eps: float) -> float:
    """E[(1 − e^{ε−L})_+] for L ~ N(μ, σ²), at 50 digits: Φ((μ−ε)/σ) − e^{ε−μ+σ²/2} Φ((μ−ε)/σ − σ)."""
    with mpmath.workdps(50):
        s = mpmath.sqrt(var)
        x = (mpmath.mpf(mu) - eps) / s
        return float(mpmath.ncdf(x) - mpmath.exp(eps - mu + var / 2) * mpmath.ncdf(x - s))


def _chi2_truth(a: float, k: int, c: float, eps: float) -> float:
    """E[(1 − e^{ε−L})_+] for L = a·χ²_k + c, a > 0, at 50 digits."""
    with mpmath.workdps(50):
        t0 = max((mpmath.mpf(eps) - c) / a, 0)
        h = mpmath.mpf(k) / 2
        q1 = mpmath.gammainc(h, t0 / 2, mpmath.inf, regularized=True)
        q2 = mpmath.gammainc(h, (1 + 2 * mpmath.mpf(a)) * t0 / 2, mpmath.inf, regularized=True)
        return float(q1 - mpmath.exp(eps - c) * (1 + 2 * mpmath.mpf(a)) ** (-h) * q2)


def _inside(br: fourier.FourierBracket | None, truth: float, rtol: float, atol: float) -> None:
    assert br is not None
    assert br.lower * (1 - 1e-12) <= truth <= br.upper * (1 + 1e-12) + 1e-300, (br, truth)
    assert br.upper - br.lower <= rtol * br.upper + atol, (br, truth)


@pytest.mark.parametrize("eps", [0.0, 0.3, 2.0, 9.0])
@pytest.mark.parametrize("bs", [(0.8, 0.0), (0.3, 0.5, 0.2), (1.5, 2.0, 0.1, 0.7, 0.4)])
def test_linear_losses_match_the_analytic_gaussian(eps: float, bs: tuple[float, ...]) -> None:
    """Σ b_i u_i + c_i with Σ c_i = D²/2 is the Gaussian shift: the bracket holds the 50-digit value."""
    var = sum(b * b for b in bs)
    quads = [(0.0, b, 0.5 * b * b) for b in bs]
    truth = _shift_truth(0.5 * var, var, eps)
    _inside(fourier.fourier_bracket(quads, eps, rtol=1e-6, atol=1e-300), truth, 1e-6, 1e-300)


@pytest.mark.parametrize("a,k,c", [(0.3, 4, -0.2), (0.05, 2, 0.01), (1.2, 5, -1.0)])
@pytest.mark.parametrize("eps", [0.05, 1.0, 4.0])
def test_central_quadratic_forms_match_the_incomplete_gamma(a: float, k: int, c: float, eps: float) -> None:
    """Pure quadratic coordinates (the slowest-decaying integrands): exact incomplete-gamma value inside."""
    quads = [(a, 0.0, c / k)] * k
    truth = _chi2_truth(a, k, c, eps)
    _inside(fourier.fourier_bracket(quads, eps, rtol=1e-4, atol=1e-15), truth, 1e-4, 1e-15)


def _semi_analytic_2d(c1: GaussCoord, c2: GaussCoord, eps: float) -> float:
    a, b, c = c2.quad

    def f(u: float) -> float:
        return float(stats.norm.pdf(u) * c1.delta(eps - (a * u * u + b * u + c)))

    pts = [-b / (2 * a)] if a else None
    return float(integrate.quad(f, -12, 12, epsabs=0, epsrel=1e-11, limit=800, points=pts)[0])


@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0, 8.0])
def test_two_coordinates_contain_the_semi_analytic_value(eps: float) -> None:
    coords = [GaussCoord(0.4, 0.3, 0.7), GaussCoord(-0.2, 0.6, 0.4)]
    truth = _semi_analytic_2d(coords[0], coords[1], eps)
    _inside(fourier.fourier_bracket([c.quad for c in coords], eps, rtol=1e-5, atol=1e-16), truth, 1e-5, 1e-16)
    # and through the public profile, in both orders
    mu_a = np.array([c.m for c in coords])
    prof = gaussian_pair_profile(mu_a, np.diag([c.alpha for c in coords]), np.zeros(2),
                                 np.diag([c.beta for c in coords]), eps)
    assert prof.method == FOURIER
    assert prof.delta_lower * (1 - 1e-12) <= truth <= prof.delta_upper * (1 + 1e-12)
    rev = [c.reverse() for c in coords]
    truth_rev = _semi_analytic_2d(rev[0], rev[1], eps)
    _inside(fourier.fourier_bracket([c.quad for c in rev], eps, rtol=1e-5, atol=1e-16), truth_rev, 1e-5, 1e-16)


def _random_pair(rng: np.random.Generator, m: int, spread: float) -> tuple[np.ndarray, ...]:
    a = rng.normal(size=(m, m))
    cov_a = a @ a.T / m + 0.5 * np.eye(m)
    c = rng.normal(size=(m, m))
    cov_b = cov_a + spread * c @ c.T / m
    return rng.normal(size=m) * 0.5, cov_a, np.zeros(m), cov_b


@pytest.mark.parametrize("seed", range(6))
def test_fourier_and_fft_brackets_agree_on_random_pairs(seed: int) -> None:
    """Two independent certified computations of the same δ must intersect; the Fourier one is the tighter."""
    rng = np.random.default_rng(100 + seed)
    m = 3 + seed % 3
    red = reduce_pair(*_random_pair(rng, m, spread=0.2 + 0.3 * seed))
    assert red.status == "ok"
    for reverse in (False, True):
        coords = [GaussCoord(float(x), float(y), float(z)) for x, y, z in zip(red.m, red.alpha, red.beta, strict=True)]
        if reverse:
            coords = [c.reverse() for c in coords]
        for eps in (0.2, 1.5):
            fb = fourier.fourier_bracket([c.quad for c in coords], eps, rtol=1e-3, atol=1e-14)
            pb = pld.pld_bracket(coords, eps, rtol=1e-2)
            assert fb is not None
            assert fb.lower <= pb.upper * (1 + 1e-12) and pb.lower <= fb.upper * (1 + 1e-12), (fb, pb)
            assert fb.upper - fb.lower <= 1e-3 * fb.upper + 1e-14
            assert fb.upper - fb.lower <= pb.upper - pb.lower + 1e-14


@pytest.mark.parametrize("seed", range(4))
def test_profiles_agree_with_the_independent_oracle_in_2d(seed: int) -> None:
    """Random 2-D pairs with unequal covariances: |library − oracle| within the oracle's tolerance + the bracket."""
    rng = np.random.default_rng(7 + seed)
    mu_a, cov_a, mu_b, cov_b = _random_pair(rng, 2, spread=0.6)
    for eps in (0.1, 1.0):
        truth = gaussian_outputs(mu_a, cov_a, mu_b, cov_b, eps)
        fwd = gaussian_pair_profile(mu_a, cov_a, mu_b, cov_b, eps)
        bwd = gaussian_pair_profile(mu_b, cov_b, mu_a, cov_a, eps)
        assert fwd.method == FOURIER and bwd.method == FOURIER
        assert fwd.delta_lower - truth.tol <= truth.forward <= fwd.delta_upper + truth.tol, (fwd, truth)
        assert bwd.delta_lower - truth.tol <= truth.backward <= bwd.delta_upper + truth.tol, (bwd, truth)


def test_narrow_strip_falls_back_to_the_fft_grid() -> None:
    """When the trapezoid would need more than max_terms terms the core says so; the profile then uses the grid."""
    coords = [GaussCoord(0.3, 0.999, 0.001), GaussCoord(-0.2, 0.5, 0.5), GaussCoord(0.1, 0.2, 0.8)]
    assert fourier.fourier_bracket([c.quad for c in coords], 1.0, max_terms=10) is None
    saved = fourier.MAX_TERMS
    try:
        fourier.MAX_TERMS = 10
        mu_a = np.array([c.m for c in coords])
        prof = gaussian_pair_profile(mu_a, np.diag([c.alpha for c in coords]), np.zeros(3),
                                     np.diag([c.beta for c in coords]), 1.0 + 1e-9)
    finally:
        fourier.MAX_TERMS = saved
    assert prof.method == PLD
    full = fourier.fourier_bracket([c.quad for c in coords], 1.0 + 1e-9)
    assert full is not None and full.lower <= prof.delta_upper and prof.delta_lower <= full.upper


def test_tiny_delta_stays_certified() -> None:
    """Far in the tail (δ ~ 1e-40) the bracket is still relative, and a huge ε gives a positive valid upper end."""
    quads = [(0.0, 1.0, 0.5), (0.0, 0.5, 0.125)]
    truth = _shift_truth(0.625, 1.25, 12.0)
    assert truth < 1e-20
    _inside(fourier.fourier_bracket(quads, 12.0, rtol=1e-3, atol=0.0), truth, 1e-3, 0.0)
    far = fourier.fourier_bracket(quads, 1e6)
    assert far is not None and far.lower == 0.0 and 0.0 < far.upper <= 1e-300
    assert math.isfinite(far.c)


@pytest.mark.parametrize("seed", range(4))
def test_marginal_lower_bound_is_below_the_certified_bracket(seed: int) -> None:
    """The one-coordinate lower bound never exceeds the Fourier upper end (both orders), and is positive."""
    rng = np.random.default_rng(300 + seed)
    red = reduce_pair(*_random_pair(rng, 4, spread=0.8))
    for reverse in (False, True):
        coords = [GaussCoord(float(x), float(y), float(z)) for x, y, z in zip(red.m, red.alpha, red.beta, strict=True)]
        if reverse:
            coords = [c.reverse() for c in coords]
        for eps in (0.0, 0.5, 2.0):
            lb = marginal_lower_bound(red, eps, reverse=reverse)
            fb = fourier.fourier_bracket([c.quad for c in coords], eps, rtol=1e-6, atol=1e-300)
            assert fb is not None and 0.0 <= lb <= fb.upper
            assert lb == pytest.approx(max(c.delta(eps) for c in coords), rel=1e-11, abs=1e-300)
            if eps == 0.0:
                assert lb > 0.0
            if fb.upper <= 1e-300:
                # δ = 0 exactly: every a_i < 0 and the loss is bounded above by Σ max_u ℓ_i(u) <= ε
                quads = [c.quad for c in coords]
                assert all(a < 0 for a, _, _ in quads)
                assert sum(cc - b * b / (4 * a) for a, b, cc in quads) <= eps
