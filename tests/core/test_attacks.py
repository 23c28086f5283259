"""Property inference attacks (Chen & Ohrimenko Section 6.3) on synthetic Gaussian samplers.

Tolerances: a pooled accuracy over N = reps × n_test independent test decisions
(given the fitted classifiers) has standard deviation <= sqrt(a(1 − a)/N);
checks use 4 such standard deviations (two-sided false alarm < 1e-4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

import distpriv as dp
from distpriv.attacks import (
    AttackData,
    AttackResult,
    FreshSplits,
    MetaClassifierAttack,
    adaptive_attack,
    gaussian_lr_accuracy,
    gaussian_sampler,
    likelihood_ratio_attack,
    mahalanobis_distance,
    meta_classifier_attack,
    sample_attack_data,
)
from distpriv.errors import InvalidParameterError, InvalidTypeError

P1, P2 = 0.45, 0.55


def _tol(acc: float, n: int, k: float = 4.0) -> float:
    return k * math.sqrt(max(acc * (1 - acc), 1e-4) / n)


def _shifted(d: float, m: int = 3, cov: np.ndarray | None = None):
    """Two Gaussians at Mahalanobis distance ``d`` (identity covariance unless given)."""
    s = np.eye(m) if cov is None else cov
    mu1 = np.zeros(m)
    direction = np.linalg.cholesky(s) @ np.eye(m)[0]  # unit Mahalanobis length
    mu2 = mu1 + d * direction
    return mu1, mu2, s


class _GaussianDefence:
    """A defence adding N(0, Σ_Z): exposes release_batch and noise_covariance like a Mechanism."""

    def __init__(self, cov: np.ndarray) -> None:
        self.noise_covariance = np.asarray(cov, float)

    def release_batch(self, xs, rng=None):
        g = np.random.default_rng(rng)
        return xs + g.multivariate_normal(np.zeros(xs.shape[1]), self.noise_covariance, size=xs.shape[0])


# --------------------------------------------------------------------------- sampling
def test_sampling_is_vectorised_and_shaped():
    calls = []
    base = gaussian_sampler({P1: np.zeros(2), P2: np.ones(2)}, np.eye(2))

    def sampler(p, size, rng):
        calls.append((p, size))
        return base(p, size, rng)

    data = sample_attack_data(sampler, P1, P2, n_shadow=20, n_test=10, reps=7, rng=0)
    assert len(calls) == 4  # one call per (role, p) for all repetitions
    assert data.shadow_x.shape == (7, 20, 2) and data.test_x.shape == (7, 10, 2)
    assert (data.shadow_y.sum(axis=1) == 10).all() and (data.test_y.sum(axis=1) == 5).all()
    # labels match the sampled distributions: mean of class 1 near (1, 1)
    x1 = data.shadow_x[data.shadow_y == 1]
    assert np.allclose(x1.mean(axis=0), 1.0, atol=4 / math.sqrt(x1.shape[0]))


def test_same_seed_same_result():
    mu1, mu2, s = _shifted(1.0)
    smp = gaussian_sampler({P1: mu1, P2: mu2}, s)
    a = meta_classifier_attack(sample_attack_data(smp, P1, P2, reps=5, rng=3), rng=1)
    b = meta_classifier_attack(sample_attack_data(smp, P1, P2, reps=5, rng=3), rng=1)
    assert np.array_equal(a.accuracies, b.accuracies)


def test_fresh_splits_calls_factory_every_repetition():
    mu1, mu2, s = _shifted(1.0)
    made = []

    def factory(rng):
        made.append(1)
        smp = gaussian_sampler({P1: mu1, P2: mu2}, s)
        return smp, smp

    data = sample_attack_data(FreshSplits(factory), P1, P2, n_shadow=10, n_test=10, reps=6, rng=0)
    assert len(made) == 6 and data.reps == 6


# --------------------------------------------------------------------------- meta-classifier
@pytest.mark.parametrize("attack", ["meta", "adaptive", "likelihood-ratio"])
def test_accuracy_is_chance_when_p1_equals_p2(attack):
    mu = np.array([1.0, -2.0, 0.5])
    smp = gaussian_sampler({0.5: mu}, np.diag([1.0, 2.0, 3.0]))
    data = sample_attack_data(smp, 0.5, 0.5, reps=50, rng=11)
    defence = _GaussianDefence(np.diag([1.0, 0.0, 4.0]))
    if attack == "meta":
        res = meta_classifier_attack(data, rng=0)
    elif attack == "adaptive":
        res = adaptive_attack(data, defence, rng=0)
    else:
        res = likelihood_ratio_attack(data, defence, rng=0)
    n = data.reps * data.n_test
    assert abs(res.accuracy - 0.5) <= _tol(0.5, n)
    lo, hi = res.ci
    assert lo <= res.accuracy <= hi


def test_accuracy_is_high_when_property_shifts_strongly():
    mu1, mu2, s = _shifted(6.0)
    data = sample_attack_data(gaussian_sampler({P1: mu1, P2: mu2}, s), P1, P2, reps=20, rng=5)
    res = meta_classifier_attack(data, rng=0)
    best = special.ndtr(3.0)  # Φ(D/2) = 0.99865
    assert res.accuracy >= best - _tol(best, data.reps * data.n_test) - 0.005


def test_meta_classifier_matches_bayes_rate_on_equal_covariances():
    mu1, mu2, s = _shifted(1.5, cov=np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 1.5]]))
    data = sample_attack_data(gaussian_sampler({P1: mu1, P2: mu2}, s), P1, P2, reps=50, rng=2)
    res = meta_classifier_attack(data, rng=0)
    best = gaussian_lr_accuracy(mu1, mu2, s)
    n = data.reps * data.n_test
    # a linear rule learnt from 200 samples: at most the Bayes rate, and close to it
    assert res.accuracy <= best + _tol(best, n)
    assert res.accuracy >= best - _tol(best, n) - 0.02


def test_batched_logistic_regression_equals_sklearn_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    mu1, mu2, s = _shifted(1.0, m=4)
    smp = gaussian_sampler({P1: mu1 * 50 + 10, P2: mu2 * 50 + 10}, s * 2500)  # unscaled features
    data = sample_attack_data(smp, P1, P2, reps=8, rng=4)
    fast = MetaClassifierAttack().fit(data)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(tol=1e-12, max_iter=10_000))
    slow = MetaClassifierAttack(pipe).fit(data)
    mean, std, w = fast._fitted
    for r, fitted in enumerate(slow._fitted):
        lr = fitted[-1]
        np.testing.assert_allclose(w[r, :-1], lr.coef_[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w[r, -1], lr.intercept_[0], rtol=1e-5, atol=1e-6)
    agree = (fast.predict(data.test_x) == slow.predict(data.test_x)).mean()
    assert agree >= 0.999


def test_any_sklearn_classifier_can_be_plugged_in():
    from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis

    # equal means, different spread: invisible to a linear rule, visible to QDA
    m = 3
    smp = gaussian_sampler({P1: np.zeros(m), P2: np.zeros(m)}, {P1: np.eye(m), P2: 6.0 * np.eye(m)})
    data = sample_attack_data(smp, P1, P2, reps=10, rng=8)
    n = data.reps * data.n_test
    linear = meta_classifier_attack(data, rng=0)
    qda = meta_classifier_attack(data, classifier=QuadraticDiscriminantAnalysis(), rng=0)
    assert abs(linear.accuracy - 0.5) <= _tol(0.5, n) + 0.03
    assert qda.accuracy > 0.75


def test_paper_attacker_is_tested_on_protected_releases():
    mu1, mu2, s = _shifted(3.0, m=2)
    data = sample_attack_data(gaussian_sampler({P1: mu1, P2: mu2}, s), P1, P2, reps=20, rng=9)
    clean = meta_classifier_attack(data, rng=0)
    noisy = meta_classifier_attack(data, _GaussianDefence(400.0 * np.eye(2)), rng=0)
    n = data.reps * data.n_test
    expected = gaussian_lr_accuracy(mu1, mu2, s, 400.0 * np.eye(2))  # ≈ 0.53: the noise hides the shift
    assert clean.accuracy > 0.9
    assert noisy.accuracy <= expected + _tol(expected, n)


def test_adaptive_attacker_beats_naive_on_anisotropic_noise():
    # The shift is split over two components; the defence drowns the second one.
    mu1, mu2 = np.zeros(2), np.array([0.6, 0.6])
    smp = gaussian_sampler({P1: mu1, P2: mu2}, np.eye(2))
    defence = _GaussianDefence(np.diag([0.0, 100.0]))
    data = sample_attack_data(smp, P1, P2, reps=50, rng=21)
    naive = meta_classifier_attack(data, defence, rng=1)
    adaptive = adaptive_attack(data, defence, rng=1)
    # paired over repetitions (same test datasets and noise): adaptive >= naive, significantly
    diff = adaptive.accuracies - naive.accuracies
    t = diff.mean() / (diff.std(ddof=1) / math.sqrt(diff.size))
    assert t > stats.t.ppf(0.999, diff.size - 1)
    best = gaussian_lr_accuracy(mu1, mu2, np.eye(2), defence.noise_covariance)
    n = data.reps * data.n_test
    assert adaptive.accuracy <= best + _tol(best, n)
    assert adaptive.accuracy >= best - _tol(best, n) - 0.02


def test_adaptive_attack_with_calibrated_mechanism():
    mu1, mu2, s = _shifted(2.0, m=3)
    model = dp.GaussianModel(means={P1: mu1, P2: mu2}, covariances={P1: s, P2: s})
    mech = dp.calibrate("daum", model, [(P1, P2)], epsilon=1.0, delta=1e-3, calibration="exact")
    data = sample_attack_data(gaussian_sampler({P1: mu1, P2: mu2}, s), P1, P2, reps=40, rng=3)
    adaptive = adaptive_attack(data, mech, rng=0)
    naive = meta_classifier_attack(data, mech, rng=0)
    best = gaussian_lr_accuracy(mu1, mu2, s, mech.noise_covariance)
    n = data.reps * data.n_test
    assert adaptive.accuracy >= naive.accuracy - 2 * _tol(0.5, n)
    assert adaptive.accuracy <= best + _tol(best, n)


# --------------------------------------------------------------------------- likelihood ratio
@pytest.mark.parametrize("d", [0.0, 0.5, 1.0, 2.5])
def test_likelihood_ratio_matches_closed_form(d):
    cov = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.3], [0.0, 0.3, 1.0]])
    mu1, mu2, s = _shifted(d, cov=cov)
    data = sample_attack_data(gaussian_sampler({P1: mu1, P2: mu2}, s), P1, P2, n_test=400, reps=50, rng=int(d * 10))
    res = likelihood_ratio_attack(data, means=[mu1, mu2], covariances=s)
    closed = special.ndtr(d / 2)
    assert res.details["closed_form"] == pytest.approx(closed, abs=1e-12)
    assert abs(res.accuracy - closed) <= _tol(closed, data.reps * data.n_test)


def test_likelihood_ratio_with_mechanism_noise_matches_closed_form():
    mu1, mu2, s = _shifted(3.0, m=4)
    model = dp.GaussianModel(means={P1: mu1, P2: mu2}, covariances={P1: s, P2: s})
    mech = dp.calibrate("expm-gauss", model, [(P1, P2)], epsilon=2.0, delta=1e-3, calibration="exact")
    data = sample_attack_data(gaussian_sampler({P1: mu1, P2: mu2}, s), P1, P2, n_test=400, reps=50, rng=7)
    res = likelihood_ratio_attack(data, mech, means=model, rng=0)
    closed = gaussian_lr_accuracy(mu1, mu2, s, mech.noise_covariance)
    d = mahalanobis_distance(mu1, mu2, s, mech.noise_covariance)
    assert closed == pytest.approx(special.ndtr(d / 2))
    assert res.details["closed_form"] == pytest.approx(closed)
    assert abs(res.accuracy - closed) <= _tol(closed, data.reps * data.n_test)
    # the guarantee caps any attacker: accuracy <= (e^ε + δ)/(1 + e^ε) for equal priors
    eps, delta = 2.0, 1e-3
    assert closed <= (math.exp(eps) + delta) / (1 + math.exp(eps)) + 1e-12


def test_plug_in_likelihood_ratio_close_to_bayes_rate():
    mu1, mu2, s = _shifted(1.5, m=3)
    data = sample_attack_data(gaussian_sampler({P1: mu1, P2: mu2}, s), P1, P2, reps=50, rng=12)
    res = likelihood_ratio_attack(data)
    best = special.ndtr(0.75)
    n = data.reps * data.n_test
    assert res.details["model"].startswith("plug-in")
    assert best - _tol(best, n) - 0.03 <= res.accuracy <= best + _tol(best, n)


def test_likelihood_ratio_uses_unequal_covariances():
    m = 3
    smp = gaussian_sampler({P1: np.zeros(m), P2: np.zeros(m)}, {P1: np.eye(m), P2: 6.0 * np.eye(m)})
    data = sample_attack_data(smp, P1, P2, reps=10, rng=13)
    res = likelihood_ratio_attack(data, means=[np.zeros(m), np.zeros(m)], covariances=[np.eye(m), 6 * np.eye(m)])
    assert "closed_form" not in res.details
    assert res.accuracy > 0.75


def test_gaussian_lr_accuracy_basics():
    assert gaussian_lr_accuracy([0, 0], [0, 0], np.eye(2)) == 0.5
    assert gaussian_lr_accuracy([0.0], [2.0], [[1.0]]) == pytest.approx(special.ndtr(1.0))
    # noise adds to the covariance: D = 2/sqrt(1 + 3) = 1
    assert mahalanobis_distance([0.0], [2.0], [[1.0]], [[3.0]]) == pytest.approx(1.0)


# --------------------------------------------------------------------------- results and errors
def test_attack_result_interval_and_dict():
    res = AttackResult("meta-classifier", P1, P2, np.array([0.5, 0.6, 0.55, 0.65]), 200)
    lo, hi = res.ci
    half = stats.t.ppf(0.975, 3) * np.std([0.5, 0.6, 0.55, 0.65], ddof=1) / 2
    assert (lo, hi) == pytest.approx((0.575 - half, 0.575 + half))
    d = res.to_dict()
    assert d["accuracy"] == pytest.approx(0.575) and d["reps"] == 4
    single = AttackResult("meta-classifier", P1, P2, np.array([0.6]), 200)
    lo1, hi1 = single.ci  # Wilson interval of 120/200
    assert lo1 < 0.6 < hi1 and hi1 - lo1 == pytest.approx(0.1345, abs=2e-3)


def test_bad_inputs():
    smp = gaussian_sampler({P1: np.zeros(2), P2: np.ones(2)}, np.eye(2))
    with pytest.raises(InvalidParameterError, match="reps"):
        sample_attack_data(smp, P1, P2, reps=0)
    with pytest.raises(InvalidParameterError, match="n_shadow"):
        sample_attack_data(smp, P1, P2, n_shadow=1)
    with pytest.raises(InvalidTypeError, match="sampler"):
        sample_attack_data(lambda p, size, rng: np.zeros((size + 1, 2)), P1, P2, reps=2)
    with pytest.raises(InvalidParameterError, match="NaN"):
        sample_attack_data(lambda p, size, rng: np.full((size, 2), np.nan), P1, P2, reps=2)
    with pytest.raises(InvalidTypeError, match="samplers"):
        sample_attack_data(42, P1, P2)
    with pytest.raises(InvalidParameterError, match="p"):
        sample_attack_data(smp, P1, 0.7, reps=2)
    data = sample_attack_data(smp, P1, P2, reps=2, n_shadow=10, n_test=10, rng=0)
    with pytest.raises(InvalidParameterError, match="fit"):
        MetaClassifierAttack().evaluate(data)
    with pytest.raises(InvalidTypeError, match="classifier"):
        MetaClassifierAttack(classifier=object())
    with pytest.raises(InvalidTypeError, match="defence"):
        meta_classifier_attack(data, defence=42)
    with pytest.raises(InvalidTypeError, match="shape"):
        meta_classifier_attack(data, defence=lambda xs, rng: xs[:, :1])
    with pytest.raises(InvalidParameterError, match="noise_covariance"):
        likelihood_ratio_attack(data, lambda xs, rng: xs)
    with pytest.raises(InvalidParameterError, match="positive semi-definite"):
        likelihood_ratio_attack(data, means=[[0, 0], [1, 1]], covariances=[[1, 0], [0, -1]])
    with pytest.raises(InvalidTypeError):
        AttackData.from_arrays(P1, P2, np.zeros((4, 2)), [0, 0, 1, 1], np.zeros((4, 3)), [0, 0, 1, 1])
    with pytest.raises(InvalidParameterError, match="labels"):
        AttackData.from_arrays(P1, P2, np.zeros((4, 2)), [0, 2, 1, 1], np.zeros((4, 2)), [0, 0, 1, 1])


def test_from_arrays_single_repetition():
    rng = np.random.default_rng(0)
    x0, x1 = rng.normal(0, 1, (100, 2)), rng.normal(3, 1, (100, 2))
    x = np.concatenate([x0, x1])
    y = np.repeat([0, 1], 100)
    data = AttackData.from_arrays(P1, P2, x, y, x, y)
    res = meta_classifier_attack(data)
    assert res.reps == 1 and res.accuracy > 0.95
