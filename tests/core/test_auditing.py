"""dp.audit: lower bounds on ε from the attacker's trade-off curve (issue 15).

Numbers checked: Clopper–Pearson bounds against scipy's beta quantiles and their
exact coverage; the ε formula on hand-computed counts; the smallest useful audit
from its closed form; every exact scorer against an independent computation of the
same log-likelihood ratio; and the audit's three goals at test sizes — a tight
mechanism is confirmed far above the accuracy bound's ceiling, an overclaiming one
is refuted, honest ones are refuted at most at the nominal rate (exact binomial test).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

import distpriv as dp
from distpriv import auditing as au
from distpriv import local
from distpriv.calibration import gaussian_max_distance
from distpriv.errors import (
    AssumptionError,
    DistPrivError,
    InvalidParameterError,
    InvalidTypeError,
    UnknownLabelError,
)


def _unit_model(var: float = 1.0) -> dp.GaussianModel:
    return dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[var]], 1: [[var]]})


@pytest.fixture(scope="module")
def tight() -> tuple[dp.Mechanism, dp.GaussianModel]:
    """EigM calibrated exactly at (1, 1e-3) on N(0, 1) vs N(1, 1): its claim is exactly tight."""
    model = _unit_model()
    return dp.calibrate("eigm", model, [(0, 1)], epsilon=1.0, delta=1e-3), model


# --------------------------------------------------------------------------- bounds
@pytest.mark.parametrize(("k", "n", "c"), [(0, 10, 0.95), (3, 10, 0.95), (10, 10, 0.9), (57, 1000, 0.99), (1, 1, 0.5)])
def test_clopper_pearson_matches_beta_quantiles(k: int, n: int, c: float) -> None:
    lo = au.clopper_pearson_lower(k, n, c)
    hi = au.clopper_pearson_upper(k, n, c)
    assert lo == (0.0 if k == 0 else pytest.approx(stats.beta.ppf(1 - c, k, n - k + 1), rel=1e-12))
    assert hi == (1.0 if k == n else pytest.approx(stats.beta.ppf(c, k + 1, n - k), rel=1e-12))
    # closed forms at the ends: k = 0 gives 1 − (1 − c)^{1/n} above, k = n gives (1 − c)^{1/n} below
    if k == 0:
        assert hi == pytest.approx(1 - (1 - c) ** (1 / n), rel=1e-10)
    if k == n:
        assert lo == pytest.approx((1 - c) ** (1 / n), rel=1e-10)
    # vectorised form agrees
    arr = au.clopper_pearson_lower(np.array([k, k]), np.array([n, n]), c)
    assert np.allclose(arr, lo)


def test_clopper_pearson_exact_coverage() -> None:
    """Pr_p(bound misses p) summed exactly over the binomial pmf stays <= 1 − c for every p on a grid."""
    n, c = 60, 0.9
    ks = np.arange(n + 1)
    lo = au.clopper_pearson_lower(ks, n, c)
    hi = au.clopper_pearson_upper(ks, n, c)
    for p in np.linspace(0.001, 0.999, 400):
        pmf = stats.binom.pmf(ks, n, p)
        assert pmf[lo > p].sum() <= 1 - c + 1e-12
        assert pmf[hi < p].sum() <= 1 - c + 1e-12


def test_epsilon_formula_on_hand_computed_counts() -> None:
    # 0 of 100 false positives, 100 of 100 true positives, each bound at 97.5%:
    # TPR_lo = 0.025^(1/100) = exp(−3.688879/100) = 0.963783, FPR_hi = 1 − 0.963783 = 0.036217
    # ε = ln((0.963783 − 0.001)/0.036217) = ln(26.5840) = 3.28031
    a = 0.025 ** 0.01
    assert a == pytest.approx(0.963783, abs=1e-6)
    eps = au.epsilon_from_counts(0, 100, 100, 100, 1e-3, 0.975)
    assert eps == pytest.approx(math.log((a - 1e-3) / (1 - a)), rel=1e-10)
    assert eps == pytest.approx(3.28031, abs=1e-5)
    # general counts against scipy directly: 12/1000 false, 80/1000 true positives
    hi = stats.beta.ppf(0.975, 13, 988)
    lo = stats.beta.ppf(0.025, 80, 921)
    assert au.epsilon_from_counts(12, 1000, 80, 1000, 1e-3, 0.975) == pytest.approx(
        math.log((lo - 1e-3) / hi), rel=1e-10)
    # TPR_lo <= δ gives 0, a ratio below 1 gives 0
    assert au.epsilon_from_rates(0.0009, 0.01, 1e-3) == 0.0
    assert au.epsilon_from_rates(0.2, 0.5, 0.0) == 0.0
    assert au.epsilon_from_rates(0.5, 0.1, 0.0) == pytest.approx(math.log(5.0))


def test_min_evaluation_size_closed_form() -> None:
    # ε = 1, δ = 1e-3, c = 0.95, one test: α = 0.05/2 = 0.025, a* = (e + 1e-3)/(1 + e) = 0.731330,
    # ln α / ln a* = −3.688879 / −0.312893 = 11.79 -> n_min = 12
    n = au.min_evaluation_size(1.0, 1e-3, 0.95)
    assert n == 12
    alpha = 0.025
    for nn, above in ((n, True), (n - 1, False)):
        best = au.epsilon_from_rates(alpha ** (1 / nn), 1 - alpha ** (1 / nn), 1e-3)
        assert (best > 1.0) is above
    # more tests (smaller α) and larger ε need more releases; ε = inf asks only for a positive bound
    assert au.min_evaluation_size(1.0, 1e-3, 0.95, tests=4) > n
    assert au.min_evaluation_size(3.0, 1e-3, 0.95) > n
    assert au.min_evaluation_size(math.inf, 1e-3, 0.95) == au.min_evaluation_size(0.0, 1e-3, 0.95)
    # trials: evaluation is 80% of the releases (exact scorers)
    t = au.minimum_trials(1.0, 1e-3, 0.95)
    assert au._split(t, False)[2] >= 12 > au._split(t - 1, False)[2]


# --------------------------------------------------------------------------- scorers
def test_gaussian_scorer_matches_scipy_with_unequal_covariances() -> None:
    rng = np.random.default_rng(3)
    mu0, mu1 = np.array([0.0, 1.0]), np.array([0.5, -0.2])
    s0 = np.array([[1.0, 0.3], [0.3, 0.5]])
    s1 = np.array([[0.7, -0.1], [-0.1, 1.2]])
    score = au._gaussian_scorer(mu0, s0, mu1, s1)
    y = rng.normal(size=(50, 2))
    ref = stats.multivariate_normal(mu1, s1).logpdf(y) - stats.multivariate_normal(mu0, s0).logpdf(y)
    assert np.allclose(score(y), ref, rtol=1e-10, atol=1e-10)


def test_gaussian_scorer_degenerate_supports() -> None:
    # point masses at different places: perfectly separated by the side of the mid-point
    z = np.zeros((2, 2))
    score = au._gaussian_scorer(np.zeros(2), z, np.array([1.0, 0.0]), z)
    assert list(score(np.array([[0.0, 0.0], [1.0, 0.0]]))) == [-np.inf, np.inf]
    # noise on one axis only, means differing along it: the 1-D LR on that axis
    s = np.diag([2.0, 0.0])
    score = au._gaussian_scorer(np.zeros(2), s, np.array([1.0, 0.0]), s)
    y = np.array([[0.3, 0.0], [-1.0, 0.0]])
    assert np.allclose(score(y), (y[:, 0] - 0.5) / 2.0)
    # supports of different dimension: no exact LR (None -> classifier)
    assert au._gaussian_scorer(np.zeros(2), np.diag([1.0, 0.0]), np.zeros(2), np.diag([1.0, 1.0])) is None


@pytest.mark.parametrize(("sigma", "b"), [(0.5, 1.0), (2.0, 0.3), (0.05, 1.0), (0.0, 0.7)])
def test_gaussian_laplace_density_matches_numerical_convolution(sigma: float, b: float) -> None:
    for z in (-2.0, -0.3, 0.0, 0.8, 3.0):
        got = float(np.exp(au._log_gauss_laplace(np.array([z]), sigma, b))[0])
        if sigma == 0:
            ref = math.exp(-abs(z) / b) / (2 * b)
        else:
            ref, _ = integrate.quad(lambda x, z=z: stats.norm.pdf(x, 0, sigma) * math.exp(-abs(z - x) / b) / (2 * b),
                                    -12 * sigma, 12 * sigma, points=[z], limit=200)
        assert got == pytest.approx(ref, rel=1e-7)
    if sigma > 0:
        total, _ = integrate.quad(lambda z: math.exp(au._log_gauss_laplace(np.array([z]), sigma, b)[0]), -np.inf, np.inf)
        assert total == pytest.approx(1.0, rel=1e-8)


def test_mixture_scorers_match_direct_sums() -> None:
    rng = np.random.default_rng(5)
    r0, r1 = rng.normal(size=(30, 2)), rng.normal(0.5, 1.0, size=(40, 2))
    y = rng.normal(size=(25, 2))
    cov = np.array([[0.5, 0.1], [0.1, 0.3]])
    mech = type("M", (), {"kind": "gaussian", "noise_covariance": cov})()
    t, metric = au._noise_transform(mech, 2)
    got = au._mixture_scorer(r0, r1, t, metric)(y)
    mvn = stats.multivariate_normal(np.zeros(2), cov)
    ref = (np.log([mvn.pdf(v - r1).mean() for v in y]) - np.log([mvn.pdf(v - r0).mean() for v in y]))
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-9)
    # Laplace along an invertible basis B with scales b: z = B L
    basis = np.array([[1.0, 0.5], [0.0, 1.0]])
    scales = np.array([0.4, 0.9])
    lap = type("M", (), {"kind": "laplace", "basis": basis, "scales": scales})()
    t, metric = au._noise_transform(lap, 2)
    got = au._mixture_scorer(r0, r1, t, metric)(y)
    inv = np.linalg.inv(basis)

    def dens(v: np.ndarray, rows: np.ndarray) -> float:
        ell = (v - rows) @ inv.T
        return float(np.mean(np.exp(-np.abs(ell / scales).sum(axis=1))))

    ref = np.log([dens(v, r1) for v in y]) - np.log([dens(v, r0) for v in y])
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------- goals
def test_tight_mechanism_confirmed_far_above_the_accuracy_bound(tight) -> None:
    """EigM exact at (1, 1e-3): the exact ε is 1; at 50,000 trials the audit confirms most of it.

    Target: the bound (2) with the ideal threshold and the expected counts at the
    evaluation size n_e = 40,000 (oracle, ≈ 0.74), minus 0.3 for the threshold
    chosen on 10,000 selection releases and the evaluation counts' spread (the
    bound's standard deviation is ≈ sqrt(1/k_F + 1/k_T) ≈ 0.06 at this size). The
    accuracy bound can never exceed ln((Φ(D/2) − δ)/(1 − Φ(D/2))) ≈ 0.31 here.
    """
    mech, model = tight
    r = dp.audit(mech, model, (0, 1), trials=50_000, confidence=0.95, rng=np.random.default_rng(0))
    assert r.scorer == "exact-gaussian"
    assert r.exact_epsilon == pytest.approx(1.0, abs=1e-8)
    assert (r.n_selection, r.n_evaluation) == (10_000, 40_000)
    d = gaussian_max_distance(1.0, 1e-3)
    acc = stats.norm.cdf(d / 2)
    ceiling = math.log((acc - 1e-3) / (1 - acc))
    assert ceiling == pytest.approx(0.31, abs=0.01)
    ne, level = 40_000, 1 - 0.05 / 2
    t = np.linspace(0.0, 5.0, 2001)
    oracle = np.max(au.epsilon_from_rates(au.clopper_pearson_lower(stats.norm.sf(t - d) * ne, ne, level),
                                          au.clopper_pearson_upper(stats.norm.sf(t) * ne, ne, level), 1e-3))
    assert 0.7 < oracle < 0.8
    assert oracle - 0.3 > ceiling + 0.1
    assert r.epsilon_lower >= oracle - 0.3
    assert not r.refuted and r.epsilon_lower <= r.exact_epsilon
    best = r.best
    assert best.epsilon == r.epsilon_lower
    assert best.fpr_upper == pytest.approx(au.clopper_pearson_upper(best.false_positives, ne, level))
    assert best.tpr_lower == pytest.approx(au.clopper_pearson_lower(best.true_positives, ne, level))
    assert r.epsilon_lower == pytest.approx(math.log((best.tpr_lower - 1e-3) / best.fpr_upper))


def test_overclaiming_mechanism_refuted() -> None:
    """Calibrated on variance 4, audited against the true variance 0.04: the true ε at 1e-3 is 1.72."""
    mech = dp.calibrate("eigm", _unit_model(4.0), [(0, 1)], epsilon=1.0, delta=1e-3)
    truth = _unit_model(0.04)
    r = dp.audit(mech, truth, (0, 1), trials=50_000, rng=np.random.default_rng(1))
    assert r.exact_epsilon == pytest.approx(1.7246, abs=1e-3)
    assert r.refuted
    assert 1.0 < r.epsilon_lower <= r.exact_epsilon
    # the same mechanism audited against its own calibration model is consistent with its claim
    r_own = dp.audit(mech, _unit_model(4.0), (0, 1), trials=50_000, rng=np.random.default_rng(1))
    assert not r_own.refuted


def test_honest_mechanisms_refuted_at_most_at_the_nominal_rate(tight) -> None:
    """200 audits of exactly tight claims: refutation counts vs the nominal 1 − confidence (exact binomial test).

    At confidence 0.5 (nominal false-refutation rate 50%) a one-sided binomial test of
    "rate > 0.5" must not reject at the 1% level, for EigM and for a tight local claim.
    Negative control showing the test has power: choosing the threshold on the
    evaluation releases themselves (no selection split) refutes far more often and is
    rejected by the same test.
    """
    mech, model = tight
    g = np.random.default_rng(11)
    k = sum(dp.audit(mech, model, (0, 1), trials=1_000, confidence=0.5, rng=g).refuted for _ in range(200))
    assert stats.binomtest(k, 200, 0.5, alternative="greater").pvalue > 0.01
    setting = au._central_setting(mech, model, (0, 1))
    naive = 0
    for _ in range(200):
        s0, s1 = (au._round_scores(setting.scorer(setting.draw(i, 1_000, g))) for i in (0, 1))
        naive += au._select(s0, s1, 1e-3, 0.75, 1)[0][2] > 1.0
    assert stats.binomtest(naive, 200, 0.5, alternative="greater").pvalue < 0.01
    rr = local.randomized_response(4, 1.0)
    lam = {"a": np.array([0.7, 0.1, 0.1, 0.1]), "b": np.array([0.1, 0.7, 0.1, 0.1])}
    eps = local.distp_epsilon(rr, lam["a"], lam["b"], 0.0)
    k = sum(dp.audit(rr, lam, ("a", "b"), trials=300, confidence=0.5, rng=g, claim=(eps, 0.0)).refuted
            for _ in range(200))
    assert stats.binomtest(k, 200, 0.5, alternative="greater").pvalue > 0.01


# --------------------------------------------------------------------------- local mechanisms
def test_local_randomized_response_exact_and_empirical() -> None:
    rr = local.randomized_response(4, 1.0)
    lam = {"a": np.array([0.7, 0.1, 0.1, 0.1]), "b": np.array([0.1, 0.7, 0.1, 0.1])}
    exact = local.distp_epsilon(rr, lam["a"], lam["b"], 0.0)
    # closed form: outputs 0 and 1 carry the extreme ratios (0.7p + 0.3q)/(0.1p + 0.9q) with p = e/(e+3), q = 1/(e+3)
    p, q = math.e / (math.e + 3), 1 / (math.e + 3)
    assert exact == pytest.approx(math.log((0.7 * p + 0.3 * q) / (0.1 * p + 0.9 * q)), rel=1e-10)
    r = dp.audit(rr, lam, ("a", "b"), trials=20_000, rng=np.random.default_rng(2), claim=(exact, 0.0))
    assert r.scorer == "exact-finite"
    assert r.exact_epsilon == pytest.approx(exact)
    assert not r.refuted
    # the best test is one output value: its count bound is within a few CP widths of the exact ratio
    assert exact - 0.15 < r.epsilon_lower <= exact
    # a claim of half the true ε is refuted
    r_half = dp.audit(rr, lam, ("a", "b"), trials=20_000, rng=np.random.default_rng(2), claim=(exact / 2, 0.0))
    assert r_half.refuted


def test_local_tupling_scores_are_exact_log_likelihood_ratios() -> None:
    rng = np.random.default_rng(4)
    base = local.Mechanism(rng.dirichlet(np.ones(5), size=3))
    tup = local.Tupling(base, k=2)
    lam = {"x": np.array([0.6, 0.3, 0.1]), "y": np.array([0.2, 0.2, 0.6])}
    eps = local.distp_epsilon(tup, lam["x"], lam["y"], 0.01)
    r = dp.audit(tup, lam, ("x", "y"), trials=5_000, rng=np.random.default_rng(0), claim=(eps, 0.01))
    assert r.scorer == "exact-finite"
    assert r.exact_epsilon == pytest.approx(eps)
    assert r.epsilon_lower <= eps and not r.refuted
    # the scorer against brute-force tuple probabilities
    setting = au._local_setting(tup, lam, ("x", "y"))
    tuples = setting.draw(0, 50, np.random.default_rng(1))
    ref = np.log(tup.tuple_probability(lam["y"], tuples)) - np.log(tup.tuple_probability(lam["x"], tuples))
    assert np.allclose(setting.scorer(tuples), ref, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- other central settings
def test_round_scores_restores_ties() -> None:
    s = np.array([0.9999999999999998, 1.0000000000000002, -np.inf, np.inf, 0.0, 123.456789012345, -2.5e-7])
    out = au._round_scores(s)
    assert out[0] == out[1] == 1.0
    assert list(out[2:5]) == [-np.inf, np.inf, 0.0]
    assert out[5] == pytest.approx(123.456789, abs=1e-9) and out[6] == -2.5e-7


def test_gaussian_laplace_closed_form_path() -> None:
    """ExpM (L) on a near-translation 1-D model: true ε <= 1 (Laplace, sensitivity 1); the audit approaches it.

    Regression: the exact ratio is constant (= 1) for y >= 1 up to a few ulps; without
    rounding the scores, a threshold between those ulps selected releases by their last
    mantissa bit — which float addition biases for one secret — and "refuted" the claim.
    """
    model = _unit_model(1e-4)
    mech = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0)
    r = dp.audit(mech, model, (0, 1), trials=20_000, rng=np.random.default_rng(0))
    assert r.scorer == "exact-gaussian-laplace"
    assert r.delta == 0.0
    assert 0.8 <= r.epsilon_lower <= 1.0 and not r.refuted


def test_empirical_without_noise_is_refuted_by_exact_atoms() -> None:
    """EigM adds no noise when the fitted variance suffices; the truth is the rows themselves (not Gaussian)."""
    rng = np.random.default_rng(7)
    # claim_scope="release": the Gaussian-fit claim (accounted on the samples' law, the noise is topped up, issue 27)
    emp = dp.EmpiricalModel({0: rng.normal(0.0, 1.0, 400), 1: rng.normal(0.1, 1.0, 400)}, claim_scope="release")
    mech = dp.calibrate("eigm", emp, [(0, 1)], epsilon=1.0, delta=1e-3)
    assert not np.any(mech.noise_covariance)
    r = dp.audit(mech, emp, (0, 1), trials=2_000, rng=np.random.default_rng(0))
    assert r.scorer == "exact-atoms"
    assert r.exact_epsilon == math.inf
    # every release is one row of one secret only: no false positives, all true positives
    best = r.best
    assert best.false_positives == 0 and best.true_positives == best.positives
    assert r.epsilon_lower == pytest.approx(au._best_case(r.n_evaluation, 0.025, 1e-3))
    assert r.refuted


def test_empirical_with_noise_uses_exact_mixture_and_classifier_fallback() -> None:
    rng = np.random.default_rng(8)
    # claim_scope="release" keeps DirM (G)'s rank-one noise (on the samples' law it is topped up isotropically)
    emp = dp.EmpiricalModel({0: rng.normal(0.0, 1.0, (200, 2)), 1: rng.normal(0.3, 1.0, (200, 2))}, claim_scope="release")
    mech = dp.calibrate("expm-gauss", emp, [(0, 1)], epsilon=1.0, delta=1e-3)
    r = dp.audit(mech, emp, (0, 1), trials=3_000, rng=np.random.default_rng(0))
    assert r.scorer == "exact-mixture" and r.n_train == 0
    # rank-one noise (DirM) has no density in R^2: the classifier scores, trained on its own split
    dirm = dp.calibrate("dirm-gauss", emp, [(0, 1)], epsilon=1.0, delta=1e-3)
    r = dp.audit(dirm, emp, (0, 1), trials=3_000, rng=np.random.default_rng(0))
    assert r.scorer == "classifier"
    assert (r.n_train, r.n_selection, r.n_evaluation) == (750, 450, 1800)
    assert r.epsilon_lower >= 0.0


def test_classifier_on_laplace_noise_in_two_dimensions() -> None:
    """ExpM (L) on a 2-D Gaussian translation model: claim ε = 1 holds; the classifier finds a positive bound."""
    model = dp.GaussianModel(means={0: [0.0, 0.0], 1: [1.0, 0.5]}, covariances={0: np.eye(2) * 0.01, 1: np.eye(2) * 0.01})
    mech = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=1.0)
    r = dp.audit(mech, model, (0, 1), trials=20_000, rng=np.random.default_rng(0))
    assert r.scorer == "classifier"
    assert 0.3 < r.epsilon_lower <= 1.0 and not r.refuted


def test_generic_sampler_model_and_several_tests(tight) -> None:
    mech, model = tight

    class Sampler:
        labels = (0, 1)

        def sample(self, label, size, rng):
            return rng.normal(float(label), 1.0, size)

    r = dp.audit(mech, Sampler(), (0, 1), trials=4_000, rng=np.random.default_rng(0), tests=3)
    assert r.scorer == "classifier"
    assert len(r.tests) == 3
    level = 1 - 0.05 / 6
    for t in r.tests:
        assert t.fpr_upper == pytest.approx(au.clopper_pearson_upper(t.false_positives, t.negatives, level))
        assert t.tpr_lower == pytest.approx(au.clopper_pearson_lower(t.true_positives, t.positives, level))
    assert r.epsilon_lower == max(t.epsilon for t in r.tests)


def test_same_seed_same_report_and_serialisation(tight) -> None:
    mech, model = tight
    a = dp.audit(mech, model, (0, 1), trials=3_000, rng=np.random.default_rng(9))
    b = dp.audit(mech, model, (0, 1), trials=3_000, rng=np.random.default_rng(9))
    assert a.epsilon_lower == b.epsilon_lower and a.tests == b.tests
    doc = json.loads(json.dumps(a.to_dict()))
    assert doc["claimed"]["epsilon"] == 1.0 and doc["refuted"] is False
    assert doc["split"] == {"train": 0, "selection": 600, "evaluation": 2400}
    fpr, tpr = a.roc
    assert np.all(np.diff(fpr) >= 0) and np.all((fpr >= 0) & (fpr <= 1) & (tpr >= 0) & (tpr <= 1))
    for f, t in (a.roc, a.roc_mirrored):  # both curves run from (0, 0) to (1, 1), TPR non-decreasing in FPR
        assert (f[0], t[0], f[-1], t[-1]) == (0.0, 0.0, 1.0, 1.0)
        assert np.all(np.diff(t) >= 0)


def test_plot_has_log_axes_region_and_bound(tight) -> None:
    mech, model = tight
    r = dp.audit(mech, model, (0, 1), trials=3_000, rng=np.random.default_rng(0))
    fig = r.plot()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("claimed region" in s for s in labels) and any("audit bound" in s for s in labels)


# --------------------------------------------------------------------------- bad input
def test_too_few_trials_names_the_minimum(tight) -> None:
    mech, model = tight
    need = au.minimum_trials(1.0, 1e-3, 0.95)
    with pytest.raises(InvalidParameterError, match=rf"trials: .*need trials >= {need}"):
        dp.audit(mech, model, (0, 1), trials=need - 1, rng=0)
    assert dp.audit(mech, model, (0, 1), trials=need, rng=0).min_trials == need


def test_bad_input_errors(tight) -> None:
    mech, model = tight
    with pytest.raises(UnknownLabelError, match="pair"):
        dp.audit(mech, model, (0, 2), trials=1_000)
    with pytest.raises(InvalidParameterError, match="pair"):
        dp.audit(mech, model, (0, 0), trials=1_000)
    for c in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(InvalidParameterError, match=r"confidence: must be in \(0, 1\)"):
            dp.audit(mech, model, (0, 1), trials=1_000, confidence=c)
    with pytest.raises(InvalidTypeError, match="mechanism"):
        dp.audit(object(), model, (0, 1), trials=1_000)

    class NoClaim:
        def release_batch(self, xs, rng=None):
            return xs

    with pytest.raises(InvalidTypeError, match="mechanism: NoClaim has no guarantee"):
        dp.audit(NoClaim(), model, (0, 1), trials=1_000)
    rr = local.randomized_response(2, 1.0)
    with pytest.raises(InvalidParameterError, match="claim: a local mechanism carries no guarantee"):
        dp.audit(rr, {"a": [0.5, 0.5], "b": [0.9, 0.1]}, ("a", "b"), trials=1_000)
    with pytest.raises(UnknownLabelError, match="pair"):
        dp.audit(rr, {"a": [0.5, 0.5], "b": [0.9, 0.1]}, ("a", "c"), trials=1_000, claim=(1.0, 0.0))
    with pytest.raises(InvalidTypeError, match="model"):
        dp.audit(rr, model, (0, 1), trials=1_000, claim=(1.0, 0.0))
    three = dp.GaussianModel(means={0: [0.0], 1: [1.0], 2: [2.0]}, covariances={k: [[1.0]] for k in range(3)})
    with pytest.raises(InvalidParameterError, match="pair: .* not a secret pair of the claim"):
        dp.audit(mech, three, (0, 2), trials=1_000)
    kl = dp.Guarantee(epsilon=0.5, delta=0.0, mechanism="m", divergence="kl")
    with pytest.raises(AssumptionError, match="divergence claim"):
        dp.audit(mech, model, (0, 1), trials=1_000, claim=kl)
    with pytest.raises(InvalidTypeError, match="trials"):
        dp.audit(mech, model, (0, 1), trials=1.5)
    for exc in (UnknownLabelError, InvalidParameterError, InvalidTypeError, AssumptionError):
        assert issubclass(exc, DistPrivError)


def test_special_functions_used_are_consistent() -> None:
    # log_ndtr-based density equals the erfc form of the Gaussian ⊛ Laplace density at moderate arguments
    z, s, b = 0.4, 0.8, 0.5
    erfc_form = (math.exp(s * s / (2 * b * b)) / (4 * b)) * (
        math.exp(-z / b) * special.erfc((s / b - z / s) / math.sqrt(2))
        + math.exp(z / b) * special.erfc((s / b + z / s) / math.sqrt(2)))
    assert math.exp(au._log_gauss_laplace(np.array([z]), s, b)[0]) == pytest.approx(erfc_form, rel=1e-12)


def test_progress_reports_monotone_fractions_and_leaves_the_result_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    model = dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[1.0]], 1: [[1.0]]})
    mech = dp.calibrate("eigm", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    plain = dp.audit(mech, model, (0, 1), trials=3_000, rng=7)
    monkeypatch.setattr(au, "SCORE_CHUNK", 500)  # scoring in chunks must not change a score
    seen: list[float] = []
    chunked = dp.audit(mech, model, (0, 1), trials=3_000, rng=7, progress=seen.append)
    assert chunked.epsilon_lower == plain.epsilon_lower and chunked.best == plain.best
    assert seen[0] == 0.0 and seen[-1] == 1.0 and bool(np.all(np.diff(seen) >= 0))
    assert len(seen) >= 2 + 2 * 5  # draws, then 5 chunks of 500 evaluation+selection releases per secret
