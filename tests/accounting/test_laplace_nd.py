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


@pytest.mark.parametrize("kappa", [0.1, 0.05])
def test_bracket_contains_the_oracle(kappa, oracle_eps1):
    br = nd.delta_bracket_2d(MP, CP, MQ, CQ, B, SC, 1.0, kappa=kappa)
    # oracle (independent 2-D numerical convolution): forward 0.01635, backward 0.00190
    for (lo, up), true in ((br.forward, oracle_eps1.forward), (br.backward, oracle_eps1.backward)):
        assert lo - oracle_eps1.tol <= true <= up + oracle_eps1.tol
        # second-order bounds: 0.0166 (κ = 0.05) and 0.0173 (κ = 0.1) against 0.01635; the first-order grid of
        # issue 25's first round gave 0.024 at κ = 0.02
        assert up <= (1.0 + 1.2 * kappa) * true + oracle_eps1.tol
        assert lo >= (1.0 - 1.2 * kappa) * true - oracle_eps1.tol


def test_bracket_contains_monte_carlo():
    br = nd.delta_bracket_2d(MP, CP, MQ, CQ, B, SC, 0.5, kappa=0.1)
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


def test_proven_delta_uses_the_grid_and_beats_the_coupling_bound(oracle_eps1):
    model = dp.GaussianModel(means={0: MP, 1: MQ}, covariances={0: CP, 1: CQ})
    assert release.grid_applies(model, [(0, 1)], LAW)
    prof = proven_delta(model, [(0, 1)], LAW, 1.0, rtol=1e-2, tight=True)  # per call (issue 25)
    assert prof.method == nd.METHOD
    assert proven_delta(model, [(0, 1)], LAW, 1.0, rtol=1e-2).method.startswith(release.COUPLING)  # the default
    assert prof.delta_lower - oracle_eps1.tol <= oracle_eps1.delta <= prof.delta_upper + oracle_eps1.tol
    # the coupling bound alone proved 0.368 here; the grid is within 6 % of the oracle's 0.01635
    assert prof.delta_upper <= 1.06 * oracle_eps1.delta + oracle_eps1.tol


def test_not_applicable_falls_back():
    assert not nd.applies(3, np.eye(3), np.eye(3), np.eye(3))
    assert not nd.applies(2, np.array([[1.0], [0.0]]), np.eye(2), np.eye(2))
    assert nd.applies(2, np.eye(2), CP, CQ)


def unequal_model(seed: int) -> dp.GaussianModel:
    """The auditor's 2-D family (benchmarks/bench_laplace_tight.py): Σ₁ = Σ₀ + 0.4 CCᵀ/2, means 10 + N(0, I)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(2, 2))
    cov = a @ a.T / 2 + 0.5 * np.eye(2)
    c = rng.normal(size=(2, 2))
    return dp.GaussianModel(means={0: 10 + rng.normal(size=2), 1: 10 + rng.normal(size=2)},
                            covariances={0: cov, 1: cov + 0.4 * c @ c.T / 2})


@pytest.mark.parametrize("seed", [0, 3])
def test_calibrated_scale_is_certified_and_within_1_1_of_the_least(seed):
    """Issue 25 goal: the calibrated 2-D Laplace scale is certified (oracle δ <= target) and within 1.1× the least.

    The least scale k* has oracle δ(k*) = target; δ decreases in the scale (Lap(kb) is Lap(b) plus independent
    noise for k >= 1: its characteristic function ratio is the mixture 1/k² + (1 − 1/k²)/(1 + k²b²t²)), so an
    oracle δ above the target at scale/1.1 (beyond its tolerance) proves scale < 1.1 k*. Measured (oracle least
    by bisection): seed 0: 1.4905 against 1.4832 (coupling bound: 2.1347); seed 3: 4.7666 against 4.7387 (5.627).
    """
    model = unequal_model(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loose = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3, tight=False)  # coupling bound
        tight = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3, tight=True)
    assert tight.guarantee.delta == 1e-3
    assert tight.laplace_scale < loose.laplace_scale / 1.15
    law = NoiseLaw.of(tight)
    o = po.output_delta(model.mean(0), model.covariance(0), model.mean(1), model.covariance(1), law, 1.0)
    assert o.delta <= 1e-3 + o.tol
    assert law.basis is not None and law.scales is not None
    below = po.output_delta(model.mean(0), model.covariance(0), model.mean(1), model.covariance(1),
                            NoiseLaw.laplace(law.basis, law.scales / 1.1), 1.0)
    assert below.delta - below.tol > 1e-3


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


def _bilinear(v, a, c, i, j):
    return (1 - a) * (1 - c) * v[i, j] + a * (1 - c) * v[i + 1, j] + (1 - a) * c * v[i, j + 1] + a * c * v[i + 1, j + 1]


def test_secant_excess_bounds_a_concave_function_above_its_bilinear_interpolant():
    # f concave with kinks; non-uniform grid (geometric widths like the tails); node brackets of width 1e-3: the
    # bound must hold at every point of every cell, and be second order (small) where f is smooth
    def f(u1, u2):
        return -0.5 * (u1 ** 2 + 0.6 * u1 * u2 + u2 ** 2) - np.abs(u1 - 0.3) - 0.7 * np.abs(u2 + 0.2)

    x = np.cumsum(np.r_[-3.0, 0.2 * 1.08 ** np.arange(30)])
    y = np.cumsum(np.r_[-2.5, 0.15 * np.ones(35)])
    v = f(x[:, None], y[None, :])
    e = nd._secant_excess(v - 1e-3, v, np.diff(x), np.diff(y))
    a, c = np.random.default_rng(0).uniform(size=(2, 300))
    for i in range(len(x) - 1):
        for j in range(len(y) - 1):
            pts = f(x[i] + a * (x[i + 1] - x[i]), y[j] + c * (y[j + 1] - y[j]))
            assert np.max(pts - _bilinear(v, a, c, i, j)) <= e[i, j] + 1e-12
    # second order: on f = −|u|²/2 (w = 0.1) f − I peaks at (w² + w²)/8 = 0.0025 at the centres; the secant bound
    # is w² per axis (a tangent extrapolated over one cell): 0.02, 8× but O(w²)
    xs = np.linspace(-1.0, 1.0, 21)
    q = -0.5 * (xs[:, None] ** 2 + xs[None, :] ** 2)
    es = nd._secant_excess(q, q, np.diff(xs), np.diff(xs))
    np.testing.assert_allclose(es, 0.02, rtol=1e-9)


def test_interp_excess_is_attained_by_a_quadratic():
    # ln p = −uᵀAu/2 has ∇² = −A = −S⁻¹; the bilinear interpolant interpolates the cross term exactly, so the
    # error at a cell centre is (w₁² A₁₁ + w₂² A₂₂)/8, the bound itself (b = 0.1: |∇ ln p| <= 1/b here, and the
    # Lipschitz bound Σ w_k/(2 b_k) is the larger)
    s = np.array([[1.0, 0.4], [0.4, 0.5]])
    amat = np.linalg.inv(s)
    x, y = np.linspace(-2.0, 2.0, 17), np.linspace(-1.0, 1.5, 11)
    v = -0.5 * (amat[0, 0] * x[:, None] ** 2 + 2 * amat[0, 1] * x[:, None] * y[None, :] + amat[1, 1] * y[None, :] ** 2)
    e = nd._interp_excess(s, np.array([0.1, 0.1]), np.diff(x), np.diff(y))
    xc, yc = 0.5 * (x[:-1] + x[1:]), 0.5 * (y[:-1] + y[1:])
    fc = -0.5 * (amat[0, 0] * xc[:, None] ** 2 + 2 * amat[0, 1] * xc[:, None] * yc[None, :] + amat[1, 1] * yc[None, :] ** 2)
    gap = fc - _bilinear(v, 0.5, 0.5, np.arange(16)[:, None], np.arange(10)[None, :])
    np.testing.assert_allclose(gap, e, rtol=1e-9)


def test_restricted_moments_match_scipy_truncnorm():
    from scipy import stats

    za = np.array([-10.0, -3.0, -0.2, 0.0, 2.5, 9.9])
    zb = np.array([-9.95, -1.0, 0.1, 0.05, 2.6, 10.0])
    w, mean, var = nd._restricted_moments(za, zb)
    ref = np.where(za >= 0, stats.norm.sf(za) - stats.norm.sf(zb), stats.norm.cdf(zb) - stats.norm.cdf(za))
    np.testing.assert_allclose(w, ref, rtol=1e-9)
    np.testing.assert_allclose(mean, stats.truncnorm.mean(za, zb), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var, stats.truncnorm.var(za, zb), rtol=1e-5, atol=2e-9)


def test_density_bracket_contains_a_direct_double_integral():
    # p(u) = ∫∫ φ_S(u − m − y) Lap(y₁; b₁) Lap(y₂; b₂) dy by scipy dblquad (per quadrant: the kinks at 0), written
    # apart from the conditioning and quadrature of _density_bracket; the bracket must hold and be <= 1e-3 wide
    from scipy import integrate

    m, s, b = np.array([0.3, -0.2]), CP, SC
    si, det = np.linalg.inv(s), float(np.linalg.det(s))

    def ref(u):
        def f(y2, y1):
            d = u - m - np.array([y1, y2])
            return (np.exp(-0.5 * d @ si @ d) / (2 * np.pi * np.sqrt(det))
                    * np.exp(-abs(y1) / b[0] - abs(y2) / b[1]) / (4 * b[0] * b[1]))
        quads = ((-np.inf, 0.0), (0.0, np.inf))
        return sum(integrate.dblquad(f, a1, c1, a2, c2, epsabs=0, epsrel=1e-8)[0] for a1, c1 in quads for a2, c2 in quads)

    u1, u2 = np.array([-2.0, 0.4, 3.1]), np.array([-1.5, 0.0, 2.2])
    lo, hi = nd._density_bracket(u1, u2, m, s, b, 0.05)
    for k in range(3):
        p = ref(np.array([u1[k], u2[k]]))
        assert lo[k, k] <= p * (1 + 1e-7) and p <= hi[k, k] * (1 + 1e-7)
        assert hi[k, k] / lo[k, k] < 1.001  # measured 4.5e-4


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_random_models_rotated_bases_the_bracket_holds(seed):
    """Random 2-D pair, rotated basis, scales from 0.1 to 5 (Laplace far below and far above the Gaussian spread):
    the certified bracket (κ = 0.1) contains the independent oracle in both orders, and is narrow."""
    rng = np.random.default_rng(seed)
    a, c = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    cp = a @ a.T / 2 + 0.1 * np.eye(2)
    cq = cp + rng.uniform(0.05, 1.0) * c @ c.T / 2
    mp = rng.normal(size=2)
    mq = mp + rng.normal(size=2) * rng.uniform(0.2, 2.0)
    th = rng.uniform(0.0, np.pi)
    rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    b = np.exp(rng.uniform(np.log(0.1), np.log(5.0), size=2))
    o = po.output_delta(mp, cp, mq, cq, NoiseLaw.laplace(rot, b), 1.0)
    br = nd.delta_bracket_2d(mp, cp, mq, cq, rot, b, 1.0, kappa=0.1)
    for (lo, up), true in ((br.forward, o.forward), (br.backward, o.backward)):
        assert lo - o.tol <= true <= up + o.tol
        assert up - lo <= 0.15 * up + 1e-15


@pytest.fixture(scope="module")
def kept_model_calibration():
    """Seed 1 of the auditor's family: the papers' ExpM (L) scale (0.5887) already meets δ = 1e-3 by the grid, and
    before issue 25's downward search it was kept: 1.109× the least scale (benchmarks/bench_laplace_tight.py)."""
    model = unequal_model(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3, tight=True)
    return model, mech


def test_tight_calibration_searches_below_the_papers_scale(kept_model_calibration):
    """Regression (issue 25 goal, 1.1×): the returned scale meets δ by the independent oracle, and the oracle's δ at
    scale/1.1 exceeds the target, so the scale is below 1.1× the least (δ decreases in the scale, see above). Measured:
    scale 0.5414 (papers' 0.5887, factor 0.920); oracle δ 9.05e-4 at it, 1.037e-3 at /1.03, 1.366e-3 at /1.1 (tol 5e-6):
    within 1.03× the least (after the coarse-then-fine search of issue 25's second round: 0.5398, 1.017× the least)."""
    from distpriv.mechanisms.registry import papers_noise

    model, mech = kept_model_calibration
    papers = papers_noise("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    assert papers.scales is not None and mech.accounting is not None and mech.accounting.profile is not None
    k = mech.accounting.topup_factor
    assert 0.85 < k < 0.97  # below the papers' scale
    np.testing.assert_allclose(mech.scales, papers.scales * k, rtol=1e-12)
    # the claim is certified at the returned scale (the grid's full bracket, recomputed there) and says so
    assert mech.guarantee.delta == 1e-3
    assert mech.accounting.profile.method == nd.METHOD
    assert mech.accounting.profile.delta_upper <= 1e-3
    assert any(n.startswith("least noise: the mechanism's Laplace scales multiplied by") for n in mech.guarantee.notes)
    # the proof is the grid, not the papers' theorem (whose scale the noise is now below)
    assert mech.guarantee.theorem.startswith("certified 2-D Gauss ⊛ Laplace profile, at a scale below ")
    law = po.noise_law(mech)
    args = (model.mean(0), model.covariance(0), model.mean(1), model.covariance(1))
    at = po.output_delta(*args, law, 1.0)
    assert not at.violates(1e-3)
    for f in (1.1, 1.03):
        below = po.output_delta(*args, po.NoiseLaw("laplace", law.covariance / f ** 2, law.basis, law.scales / f), 1.0)
        assert below.delta - below.tol > 1e-3, f


def test_downward_search_brackets_from_a_known_point():
    """topup._search with ``known``: the guess below a verified point fails, so the bracket is [guess, known] at once
    (nothing above the known point is evaluated) and the least verified point is found to the relative tolerance."""
    from distpriv.accounting.profile import Profile
    from distpriv.accounting.topup import _search

    least = 0.8731
    asked: list[float] = []

    def ok(k: float) -> tuple[bool, Profile]:
        asked.append(k)
        d = 1e-3 * (least / k) ** 6  # a δ decreasing in the scale, = target at the least scale
        return d <= 1e-3, Profile(1.0, d, 0.0, "synthetic", (0, 1))

    known = ok(1.0)[1]
    asked.clear()
    k, prof, steps = _search(ok, 0.8, 0.0, value=lambda p: p.delta_upper, goal=1e-3, known=(1.0, known), tight=0.0)
    assert asked[0] == 0.8 and max(asked) < 1.0
    assert least <= k <= least * (1 + 2e-3) and prof.delta_upper <= 1e-3
    assert steps == len(asked)
    # a guess that already succeeds: quartered down until it fails, then the same refinement
    k2, _, _ = _search(ok, 0.95, 0.0, value=lambda p: p.delta_upper, goal=1e-3, known=(1.0, known), tight=0.0)
    assert least <= k2 <= least * (1 + 2e-3)


def test_tight_is_a_per_call_option_of_the_laplace_mechanisms():
    from distpriv.mechanisms.registry import options_of

    assert "tight" in options_of("expm-laplace") and "tight" in options_of("dirm-laplace")
    model = dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[1.0]], 1: [[1.5]]})
    with pytest.raises(dp.errors.InvalidTypeError, match="^tight: expected True, False or None"):
        dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3, tight="yes")
    with pytest.raises(dp.errors.InvalidParameterError, match="^tight: not an option of mechanism 'expm-gauss'"):
        dp.calibrate("expm-gauss", model, [(0, 1)], epsilon=1.0, delta=1e-3, tight=True)
    # 1-D (a product of Gaussian ⊛ Laplace coordinates, accounted exactly): the grid has nothing to add
    plain = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    tight = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0, delta=1e-3, tight=True)
    assert not release.grid_applies(model, [(0, 1)], NoiseLaw.of(plain))
    assert tight.laplace_scale == plain.laplace_scale and tight.details["tight"] and not plain.details["tight"]
