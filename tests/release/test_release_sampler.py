"""The float-safe noise of a release: the exact discrete sampler and the noise plan built on it.

Laws are checked against CDFs computed independently (scipy, or mpmath at 400 bits), at fixed seeds; the
chi-square / KS p-value thresholds (1e-3) make a false failure a 1-in-1000 event at each fixed seed.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import distpriv as dp
from distpriv.release.noise import exact_rotate, noise_grid, plan_noise
from distpriv.release.sampler import SeededBits, bit_source, sample_rounded, sample_rounded_many
from distpriv.release.selection import Candidate, Relaxation


class PrefixBits:
    """Uniform bits whose stream starts with ``count`` copies of ``bit`` (conditions U on a tail)."""

    seeded = True

    def __init__(self, count: int, bit: int, seed: int) -> None:
        self.left, self.bit, self.rng = count, bit, random.Random(seed)

    def bits(self, k: int) -> int:
        fixed = min(self.left, k)
        self.left -= fixed
        free = k - fixed
        head = ((1 << fixed) - 1) if self.bit else 0
        return (head << free) | self.rng.getrandbits(free)


class Recording:
    """Wraps a bit source and remembers every bit drawn (to rebuild U's final dyadic interval)."""

    seeded = True

    def __init__(self, inner: object) -> None:
        self.inner, self.a, self.b = inner, 0, 0

    def bits(self, k: int) -> int:
        v = self.inner.bits(k)  # type: ignore[attr-defined]
        self.a, self.b = (self.a << k) | v, self.b + k
        return v


def _cdf(law: str, t: np.ndarray) -> np.ndarray:
    return stats.norm.cdf(t) if law == "gaussian" else stats.laplace.cdf(t)


def _cells(law: str, y: float, g: float, s: float, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed counts and expected probabilities of K = k, with both tails pooled to >= 5 expected counts."""
    n = ks.size
    lo, hi = int(ks.min()) - 50, int(ks.max()) + 50
    grid = np.arange(lo, hi + 1)
    p = _cdf(law, ((grid + 0.5) * g - y) / s) - _cdf(law, ((grid - 0.5) * g - y) / s)
    p[0] += _cdf(law, ((lo - 0.5) * g - y) / s)
    p[-1] += 1 - _cdf(law, ((hi + 0.5) * g - y) / s)
    obs = np.bincount(ks - lo, minlength=grid.size).astype(float)
    # pool from each side until every cell expects >= 5
    keep_lo = int(np.argmax(np.cumsum(p) * n >= 5))
    keep_hi = grid.size - 1 - int(np.argmax(np.cumsum(p[::-1]) * n >= 5))
    pe = np.concatenate([[p[: keep_lo + 1].sum()], p[keep_lo + 1: keep_hi], [p[keep_hi:].sum()]])
    oe = np.concatenate([[obs[: keep_lo + 1].sum()], obs[keep_lo + 1: keep_hi], [obs[keep_hi:].sum()]])
    return oe, pe


@pytest.mark.parametrize(("law", "y", "g", "s", "seed"), [
    ("gaussian", 0.3, 0.25, 1.0, 11),
    ("laplace", -1.7, 0.5, 2.0, 12),
    ("gaussian", 1e6 + 0.1, 2.0**-3, 0.7, 13),  # large |y|: the argument is exact, not cancelled in floats
])
def test_sampler_law_chi_square_and_ks(law: str, y: float, g: float, s: float, seed: int) -> None:
    n = 3000
    ks = np.array(sample_rounded_many([y] * n, g, [law] * n, [s] * n, SeededBits(seed)))
    obs, p = _cells(law, y, g, s, ks)
    assert p.sum() == pytest.approx(1.0, abs=1e-9) and obs.sum() == n
    chi = stats.chisquare(obs, p * n)
    assert chi.pvalue > 1e-3, chi
    # randomised probability integral transform: G(K-1) + V (G(K) - G(K-1)) is exactly Uniform(0, 1)
    v = np.random.default_rng(seed).random(n)
    lo = _cdf(law, ((ks - 0.5) * g - y) / s)
    hi = _cdf(law, ((ks + 0.5) * g - y) / s)
    ks_test = stats.kstest(lo + v * (hi - lo), "uniform")
    assert ks_test.pvalue > 1e-3, ks_test


@pytest.mark.parametrize(("law", "bit", "depth"), [("gaussian", 0, 40), ("gaussian", 1, 40), ("laplace", 0, 60)])
def test_sampler_tails_follow_the_conditional_law(law: str, bit: int, depth: int) -> None:
    """U conditioned on its first ``depth`` bits all equal to ``bit``: the far lower (upper) tail of the law."""
    y, g, s, n = 0.3, 0.25, 1.0, 600
    ks = np.array([sample_rounded(y, g, law, s, PrefixBits(depth, bit, seed=i)) for i in range(n)])
    grid = np.arange(int(ks.min()) - 30, int(ks.max()) + 31)
    t_hi, t_lo = ((grid + 0.5) * g - y) / s, ((grid - 0.5) * g - y) / s
    dist = stats.norm if law == "gaussian" else stats.laplace
    cap = -depth * math.log(2)
    if bit == 0:  # P(K = k | U < 2^-d) = (min(G(k), 2^-d) − min(G(k−1), 2^-d)) 2^d, in log space
        p = np.exp(np.minimum(dist.logcdf(t_hi), cap) - cap) - np.exp(np.minimum(dist.logcdf(t_lo), cap) - cap)
    else:  # U > 1 − 2^-d: the same with survival functions
        p = np.exp(np.minimum(dist.logsf(t_lo), cap) - cap) - np.exp(np.minimum(dist.logsf(t_hi), cap) - cap)
    assert p.sum() == pytest.approx(1.0, abs=1e-6)
    assert ks.min() >= grid[0] + 30 and ks.max() <= grid[-1] - 30
    z = ks * g - y
    assert (np.all(z < -6.5 * s) if bit == 0 else np.all(z > 6.5 * s))  # really in the tail
    obs = np.bincount(ks - grid[0], minlength=grid.size).astype(float)
    keep = p * n >= 5
    oe = np.concatenate([obs[keep], [obs[~keep].sum()]])
    pe = np.concatenate([p[keep], [p[~keep].sum()]])
    assert stats.chisquare(oe, pe * n / pe.sum()).pvalue > 1e-3


def test_every_decision_is_exact_against_400_bit_cdf() -> None:
    """After sampling, U's final dyadic interval lies inside (G(K−1), G(K)] by a 400-bit computation.

    The prefixes force deep tails (U < 2^-150: 16σ), where the sampler must raise its working precision.
    """
    ctx = mpmath.MPContext()
    ctx.prec = 400
    y, g, s = Fraction(3, 10), Fraction(1, 4), Fraction(1)
    for law in ("gaussian", "laplace"):
        for depth, bit in ((0, 0), (40, 0), (150, 0), (40, 1)):
            for seed in range(12):
                rec = Recording(PrefixBits(depth, bit, seed))
                k = sample_rounded(y, g, law, s, rec)

                def cdf(kk: int, law: str = law) -> mpmath.mpf:
                    t = ctx.mpf(((kk + Fraction(1, 2)) * g - y) / s)
                    return ctx.ncdf(t) if law == "gaussian" else (
                        ctx.exp(t) / 2 if t < 0 else 1 - ctx.exp(-t) / 2)

                lo = ctx.mpf(rec.a) / ctx.mpf(2) ** rec.b
                hi = ctx.mpf(rec.a + 1) / ctx.mpf(2) ** rec.b
                assert cdf(k - 1) <= lo and hi <= cdf(k), (law, depth, seed, k)
                if depth == 150:
                    assert rec.b > 150  # the deep tail needed more bits than the prefix


def test_grid_choice_is_a_power_of_two_below_min_std_over_1024() -> None:
    assert noise_grid([1.0]) == 2.0**-10
    assert noise_grid([3.0, 100.0]) == 2.0**-9  # 3/1024 = 0.0029 -> 2^-9 = 0.00195
    assert noise_grid([0.0, 2.0]) == 2.0**-9
    assert noise_grid([1e-20, 1.0]) == 2.0**-10  # negligible coordinates do not set the grid
    assert noise_grid([0.0]) is None and noise_grid([]) is None
    assert noise_grid([1024.0]) == 1.0


def test_float_leak_regression_neighbouring_inputs_share_the_lattice() -> None:
    """Mironov's attack distinguishes x from its float neighbour by the low bits of x + Z; here both give
    outputs on the same lattice gℤ with the same law (their K laws differ by < 1e-15 in every cell)."""
    x0 = 0.1
    x1 = float(np.nextafter(0.1, 1.0))
    assert x0 != x1
    g, s, n = 2.0**-10, 1.0, 1500
    k0 = np.array(sample_rounded_many([x0] * n, g, ["laplace"] * n, [s] * n, SeededBits(1)))
    k1 = np.array(sample_rounded_many([x1] * n, g, ["laplace"] * n, [s] * n, SeededBits(2)))
    for ks in (k0, k1):
        vals = ks * g
        assert np.all(vals / g == np.round(vals / g))  # exactly on the grid
    # identical supports in law: the two rounded laws agree to 1e-15 on every cell
    cells = np.arange(-5000, 5001)
    p0 = _cdf("laplace", ((cells + 0.5) * g - x0) / s) - _cdf("laplace", ((cells - 0.5) * g - x0) / s)
    p1 = _cdf("laplace", ((cells + 0.5) * g - x1) / s) - _cdf("laplace", ((cells - 0.5) * g - x1) / s)
    assert np.max(np.abs(p0 - p1)) < 1e-15
    assert np.all(p0 > 0) and np.all(p1 > 0)


def test_seeded_bits_reproduce_and_os_bits_do_not() -> None:
    a = sample_rounded_many([0.0] * 20, 2.0**-10, ["gaussian"] * 20, [1.0] * 20, bit_source(5))
    b = sample_rounded_many([0.0] * 20, 2.0**-10, ["gaussian"] * 20, [1.0] * 20, bit_source(5))
    c = sample_rounded_many([0.0] * 20, 2.0**-10, ["gaussian"] * 20, [1.0] * 20, bit_source(None))
    assert a == b and a != c
    assert bit_source(None).seeded is False and bit_source(5).seeded is True
    assert sample_rounded(2.4, 1.0, "none", 0.0, bit_source(None)) == 2  # no noise: deterministic rounding
    assert sample_rounded(2.5, 1.0, "gaussian", 0.0, bit_source(None)) == 3


# --------------------------------------------------------------------------- noise plans
def _model() -> dp.GaussianModel:
    cov = np.array([[22.0, -6.0], [-6.0, 13.0]])
    return dp.GaussianModel(means={0.45: [100.0, 101.0], 0.55: [99.0, 102.0]}, covariances={0.45: cov, 0.55: cov})


def _candidate(mech: dp.mechanisms.Mechanism, extra: float = 0.0, relaxation: Relaxation | None = None) -> Candidate:
    return Candidate(mech.name, mech.label, True, "test", mech.dim, mech, extra, None, mech.guarantee,
                     mech.expected_l2_error, relaxation)


def test_gaussian_plan_rotates_into_the_eigenbasis_and_keeps_the_covariance() -> None:
    mech = dp.calibrate("eigm", _model(), [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    plan = plan_noise(_candidate(mech))
    assert plan.rotated and plan.kind == "gaussian"
    np.testing.assert_allclose(plan.basis.T @ plan.basis, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(plan.noise_covariance, mech.noise_covariance, rtol=1e-10, atol=1e-12)
    assert plan.grid == noise_grid(plan.scales)
    x = np.array([100.2, 101.3])
    draws = np.array([plan.apply(x, SeededBits(i)) for i in range(600)])
    assert np.all(draws / plan.grid == np.round(draws / plan.grid))  # published on the grid
    # empirical covariance within sampling error: Var(s_ij) <= (Σ_ii Σ_jj + Σ_ij²)/N (Gaussian), 5 SE
    emp = np.cov(draws, rowvar=False)
    s = mech.noise_covariance
    se = np.sqrt((np.outer(np.diag(s), np.diag(s)) + s**2) / len(draws))
    assert np.all(np.abs(emp - s) < 5 * se + 2 * plan.grid)
    assert np.all(np.abs(draws.mean(axis=0) - x) < 5 * np.sqrt(np.diag(s) / len(draws)))
    assert any("exactly from the ideal law" in a for a in plan.guarantee.assumptions)
    assert plan.guarantee.epsilon == mech.guarantee.epsilon and plan.guarantee.delta == mech.guarantee.delta


def test_directional_laplace_is_completed_to_an_orthonormal_basis() -> None:
    mech = dp.calibrate("dirm-laplace", _model(), [(0.45, 0.55)], epsilon=1.0)
    plan = plan_noise(_candidate(mech))
    assert plan.laws == ("laplace", "none")
    np.testing.assert_allclose(plan.basis.T @ plan.basis, np.eye(2), atol=1e-12)
    v = mech.basis[:, 0]
    assert abs(abs(plan.basis[:, 0] @ v) - 1) < 1e-12
    np.testing.assert_allclose(plan.noise_covariance, mech.noise_covariance, rtol=1e-10, atol=1e-12)
    # no noise across the direction: the released vector moves along v only (up to the grid)
    x = np.array([100.2, 101.3])
    w = plan.basis[:, 1]
    for i in range(30):
        out = plan.apply(x, SeededBits(i))
        assert abs((out - x) @ w) <= 2 * plan.grid
    assert noise_grid([math.sqrt(2) * mech.scales[0]]) == plan.grid


def test_theorem_5_7_noise_pays_for_the_stage_one_grid() -> None:
    mech = dp.calibrate("expm-laplace", _model(), [(0.45, 0.55)], epsilon=0.8)
    w, lam = 0.37, 0.1
    cand = _candidate(mech, extra=w / lam, relaxation=Relaxation(lam, w=w))
    plan = plan_noise(cand)
    g = plan.grid
    assert g == noise_grid([math.sqrt(2) * mech.scales[0], math.sqrt(2) * mech.scales[1], math.sqrt(2) * w / lam])
    assert plan.extra_laplace_scale == pytest.approx((w + 2 * g) / lam, rel=1e-15)
    assert plan.ideal_extra_laplace_scale == pytest.approx(w / lam)
    assert plan.theorem_5_7["W_with_grid"] == pytest.approx(w + 2 * g)
    assert any("W + m·g" in a for a in plan.guarantee.assumptions)
    out = plan.apply(np.array([100.0, 101.0]), SeededBits(3))
    assert np.all(out / g == np.round(out / g))
    # without stage-1 noise (Thm 5.4 + 5.7) nothing is rounded before the Laplace stage: no correction
    none = Candidate("none", "None (Thm 5.4)", True, "t", 2, None, w / lam, "c", mech.guarantee, 0.0,
                     {"W": w, "lambda": lam})
    p2 = plan_noise(none)
    assert p2.extra_laplace_scale == w / lam and not p2.has_stage1 and p2.kind == "laplace"
    # a Thm 5.7 candidate without its W and λ cannot be accounted for
    with pytest.raises(dp.AssumptionError, match="W and λ"):
        plan_noise(_candidate(mech, extra=1.0))


def test_noiseless_plan_publishes_the_statistics() -> None:
    cand = Candidate("none", "None (Thm 5.4)", True, "t", 2, None, 0.0, None,
                     dp.Guarantee(1.0, 1e-3, "none"), 0.0)
    plan = plan_noise(cand)
    assert plan.noiseless and plan.grid is None and plan.kind == "none"
    x = np.array([1.25, 3.5])
    np.testing.assert_array_equal(plan.apply(x, SeededBits(0)), x)


def test_exact_rotation_matches_rational_arithmetic() -> None:
    r = np.random.default_rng(0)
    q, _ = np.linalg.qr(r.normal(size=(7, 7)))
    x = r.normal(size=7) * 10.0 ** r.integers(-12, 12, 7)
    x[2] = 0.0
    x[3] = 5e-324  # subnormal
    want = [sum((Fraction(float(q[j, k])) * Fraction(float(x[j])) for j in range(7)), Fraction(0)) for k in range(7)]
    assert exact_rotate(q, x) == want
    assert exact_rotate(np.eye(3), np.array([0.1, -2.5, 1e300])) == [Fraction(0.1), Fraction(-2.5), Fraction(1e300)]
