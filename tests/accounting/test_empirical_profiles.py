"""Issue 27: claims of ``dp.calibrate`` on an EmpiricalModel cover the samples' law, checked by the oracle.

The oracle (``tests/profile_oracle.py``, :func:`mixture_delta`) integrates the output mixtures
Σ_i w_i f_Z(y − x_i) of the samples' law on its own grids, sharing no code with
``distpriv.accounting.empirical``. Every (mechanism, model, ε, δ) must either refuse with
AssumptionError or claim a δ at least the true one (zero violations).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import distpriv as dp
from distpriv.accounting import empirical as emp
from distpriv.errors import AssumptionError
from profile_oracle import claim, mixture_delta, mixture_pure_epsilon_1d_laplace, noise_law

GAUSS = ("expm-gauss", "dirm-gauss", "eigm", "daum", "optm")
LAPLACE = ("expm-laplace", "dirm-laplace")


def _models() -> dict[str, dict[str, np.ndarray]]:
    r = np.random.default_rng(27)
    return {
        "poisson-1d": {"a": r.poisson(10, 80).astype(float), "b": r.poisson(14, 80).astype(float)},
        "lognormal-1d": {"a": r.lognormal(0.0, 1.0, 60), "b": r.lognormal(0.4, 1.0, 60)},
        "lattice-2d": {"a": r.integers(0, 4, (40, 2)).astype(float),
                       "b": r.integers(0, 4, (40, 2)).astype(float) + np.array([1.0, 0.0])},
        "lognormal-2d": {"a": r.lognormal(0.0, 0.5, (25, 2)), "b": r.lognormal(0.3, 0.5, (25, 2))},
    }


MODELS = _models()


def _calibrate(name: str, samples: dict, epsilon: float, delta: float | None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dp.calibrate(name, dp.EmpiricalModel(samples), [tuple(samples)], epsilon=epsilon, delta=delta)


CASES = [(m, n, e, d) for m in MODELS for n in GAUSS + LAPLACE for e, d in ((1.0, 1e-5), (0.5, 1e-3))]
CASES += [(m, n, 1.0, None) for m in ("poisson-1d", "lognormal-1d", "lattice-2d") for n in LAPLACE]


@pytest.mark.parametrize(("model", "name", "epsilon", "delta"), CASES)
def test_oracle_finds_no_violation(model: str, name: str, epsilon: float, delta: float | None) -> None:
    s = MODELS[model]
    try:
        mech = _calibrate(name, s, epsilon, delta)
    except AssumptionError as exc:
        assert str(exc).startswith("model: ") and "\n" not in str(exc)
        return
    eps, dl = claim(mech)
    assert eps == epsilon and dl == (delta or 0.0)
    assert any("empirical law of the supplied samples" in a for a in mech.guarantee.assumptions)
    prof = mixture_delta(s["a"], s["b"], noise_law(mech), eps, k=8 if model.endswith("2d") else 16)
    assert not prof.violates(dl), (model, name, prof, dl)


def test_poisson_expm_laplace_pure_claim_was_wrong_and_is_topped_up() -> None:
    r = np.random.default_rng(0)
    s = {10: r.poisson(10, 1000).astype(float), 14: r.poisson(14, 1000).astype(float)}
    b_paper = abs(s[10].mean() - s[14].mean()) / 1.0  # Thm 5.1's scale Δ_E,1/ε
    before = mixture_pure_epsilon_1d_laplace(s[10], s[14], b_paper)
    assert before > 1.1  # the papers' claim (1, 0) is false on the samples' law (issue 27: 1.13-1.15)
    assert emp.laplace_1d_pure(emp.atoms(s[10]), emp.atoms(s[14]), b_paper) == pytest.approx(before, rel=1e-6)
    mech = dp.calibrate("expm-laplace", dp.EmpiricalModel(s), [(10, 14)], epsilon=1.0)
    b = float(mech.scales[0])
    assert b > b_paper and mech.guarantee.delta == 0.0
    after = mixture_pure_epsilon_1d_laplace(s[10], s[14], b)
    assert 0.99 < after <= 1.0 + 1e-9  # met, and not much more noise than needed
    assert any(n.startswith("top-up: on the samples' law") for n in mech.guarantee.notes)


@pytest.mark.parametrize("name", ["eigm", "daum", "expm-gauss", "dirm-gauss", "optm"])
def test_lognormal_gaussian_mechanisms_meet_delta(name: str) -> None:
    r = np.random.default_rng(1)
    s = {1: r.lognormal(0.0, 1.0, 300), 2: r.lognormal(0.3, 1.0, 300)}
    mech = _calibrate(name, s, 1.0, 1e-5)
    prof = mixture_delta(s[1], s[2], noise_law(mech), 1.0)
    assert not prof.violates(1e-5) and mech.guarantee.delta == 1e-5
    # the Gaussian fit's noise (what was claimed before) is too little on the samples' law
    fitted = dp.calibrate(name, dp.EmpiricalModel(s, claim_scope="release"), [(1, 2)], epsilon=1.0, delta=1e-5)
    assert mixture_delta(s[1], s[2], noise_law(fitted), 1.0).delta > 1e-5


def test_exact_laplace_and_gaussian_quadrature_against_oracle() -> None:
    s = MODELS["lognormal-1d"]
    pa, pb = emp.atoms(s["a"]), emp.atoms(s["b"])
    for b, eps in ((0.5, 0.3), (2.0, 1.0)):
        got = emp.laplace_1d_delta(pa, pb, b, eps), emp.laplace_1d_delta(pb, pa, b, eps)
        ref = mixture_delta(s["a"], s["b"], _lap1(b), eps)
        assert got[0] == pytest.approx(ref.forward, abs=ref.tol + 1e-12)
        assert got[1] == pytest.approx(ref.backward, abs=ref.tol + 1e-12)
    for sd, eps in ((0.3, 0.5), (1.0, 1.0)):
        lo, up = emp.gaussian_1d_refined(pa, pb, sd, eps, rtol=1e-3)
        ref = mixture_delta(s["a"], s["b"], _gauss1(sd), eps)
        assert lo - ref.tol <= ref.forward <= up + ref.tol and up - lo <= 2e-2 * up + 1e-9


def _lap1(b: float):
    from profile_oracle import NoiseLaw

    return NoiseLaw("laplace", np.array([[2 * b * b]]), np.eye(1), np.array([b]))


def _gauss1(sd: float):
    from profile_oracle import NoiseLaw

    return NoiseLaw("gaussian", np.array([[sd * sd]]))


def test_rank_deficient_noise_is_topped_up_or_refused() -> None:
    r = np.random.default_rng(3)
    # the samples differ on both coordinates; noise along one direction only gives δ = 1 on the other
    s = {"a": r.normal(0, 1, (60, 2)), "b": r.normal(0, 1, (60, 2)) + np.array([1.0, 0.0])}
    with pytest.raises(AssumptionError, match="^model: dirm-laplace"):
        _calibrate("dirm-laplace", s, 1.0, 1e-5)
    mech = _calibrate("dirm-gauss", s, 1.0, 1e-5)
    assert np.linalg.matrix_rank(mech.noise_covariance) == 2  # isotropic noise added
    assert mech.accounting is not None and mech.accounting.delta_before_topup == pytest.approx(1.0)
    assert not mixture_delta(s["a"], s["b"], noise_law(mech), 1.0).violates(1e-5)


def test_release_models_keep_their_treatment() -> None:
    r = np.random.default_rng(4)
    s = {1: r.normal(0, 1, 200), 2: r.normal(0.5, 1, 200)}
    a = dp.calibrate("expm-laplace", dp.EmpiricalModel(s, claim_scope="release"), [(1, 2)], epsilon=1.0)
    assert a.details.get("accounted_on") is None and float(a.scales[0]) == pytest.approx(abs(s[1].mean() - s[2].mean()))
    with pytest.raises(dp.errors.InvalidParameterError, match="^claim_scope: "):
        dp.EmpiricalModel(s, claim_scope="nobody")


def test_group_dp_sensitivities_contradicted_by_the_model_are_refused() -> None:
    m = dp.GaussianModel(means={0: [0.0], 1: [3.0]}, covariances={0: [[1.0]], 1: [[2.25]]})
    for name in ("groupdp-laplace", "groupdp-gauss"):
        with pytest.raises(AssumptionError, match=r"^sensitivities: the model contradicts them.*differ by 3 "):
            dp.calibrate(name, m, [(0, 1)], epsilon=1.0, delta=1e-5, sensitivities=[1e-4], n=100)
        ok = dp.calibrate(name, m, [(0, 1)], epsilon=1.0, delta=1e-5, sensitivities=[0.03], n=100)
        assert ok.guarantee.framework == "distribution-privacy"
    # plain group DP (k < n) makes no claim about the pair's laws: nothing to contradict
    dp.calibrate("groupdp-laplace", m, [(0, 1)], epsilon=1.0, sensitivities=[1e-4], group_size=5, n=100)


def test_coupling_bound_is_joint_convexity_of_point_shifts() -> None:
    # two atoms each, Gaussian noise σ = 1: the bound of the identity coupling is the mean of the two shifts' δ
    p = emp.Atoms(np.array([[0.0], [1.0]]), np.array([0.5, 0.5]))
    q = emp.Atoms(np.array([[0.5], [3.0]]), np.array([0.5, 0.5]))
    from distpriv.accounting.release import NoiseLaw

    metric = emp.Metric.of(NoiseLaw.gaussian(np.eye(1)))
    c = emp.Coupling(np.array([0, 1]), np.array([0, 1]), np.array([0.5, 0.5]))
    want = 0.5 * (dp.calibration.gaussian_delta(0.5, 1.0) + dp.calibration.gaussian_delta(2.0, 1.0))
    assert emp.coupling_bound(p, q, c, metric, 1.0) == pytest.approx(want, abs=1e-13)
    exact = emp.gaussian_1d_refined(p, q, 1.0, 1.0, rtol=1e-4)
    assert exact[1] <= want + 1e-9  # the bound holds (and is loose here)
    assert math.isfinite(exact[0])
