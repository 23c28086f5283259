"""Every guarantee derived from one privacy profile; typed assumption and reason codes (issue 24 item 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

import distpriv as dp
from distpriv import local
from distpriv.guarantees import Assumption, AssumptionCode
from distpriv.protocol import ProfiledMechanism


def _model() -> dp.GaussianModel:
    s = np.array([[0.2, 0.05], [0.05, 0.3]])
    return dp.GaussianModel(means={0: np.array([1.0, 2.0]), 1: np.array([1.3, 2.4])}, covariances={0: s, 1: s})


def _analytic_epsilon(dist: float, delta: float) -> float:
    """Least ε with Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D) <= δ (Balle & Wang 2018), solved independently."""
    def excess(e: float) -> float:
        return float(stats.norm.cdf(dist / 2 - e / dist) - math.exp(e) * stats.norm.cdf(-dist / 2 - e / dist)) - delta
    return float(optimize.brentq(excess, 0.0, 50.0, xtol=1e-12))


def test_central_calibrated_profile_reproduces_the_guarantee() -> None:
    mech = dp.calibrate("expm-gauss", _model(), [(0, 1)], epsilon=1.0, delta=1e-3)
    prof = mech.privacy_profile()
    g = mech.guarantee
    assert prof.guarantee(g.delta) == g
    assert prof.epsilon(1e-2) == g.epsilon and math.isinf(prof.epsilon(1e-5))  # monotone in δ; nothing below δ₀


@pytest.mark.parametrize("name", ["expm-gauss", "expm-laplace", "eigm", "daum", "dirm-gauss", "wasserstein", "optm"])
def test_central_guarantee_is_read_from_the_profile(name: str) -> None:
    """``mech.guarantee`` is the profile's answer at δ₀ (issue 24): the same object the profile gives, and a claim
    tightened after calibration (a new guarantee set) changes the profile it is read from."""
    import pickle
    from dataclasses import replace

    from distpriv.mechanisms.base import calibrated_profile

    mech = dp.calibrate(name, _model(), [(0, 1)], epsilon=1.0, delta=1e-3)
    g = mech.guarantee
    assert mech.privacy_profile().guarantee(g.delta) == g == calibrated_profile(g).guarantee(g.delta)
    assert pickle.loads(pickle.dumps(mech)).guarantee == g  # the profile pickles with the mechanism
    mech.guarantee = replace(g, delta=g.delta / 2 if g.delta else 0.0, notes=(*g.notes, "tightened"))
    prof = mech.privacy_profile()
    assert prof.epsilon(g.delta / 2) == g.epsilon and mech.guarantee.notes[-1] == "tightened"
    assert math.isinf(prof.epsilon(g.delta / 4)) if g.delta else prof.epsilon(0.0) == g.epsilon
    kl = replace(g, delta=0.0, divergence="kl", epsilon=0.25)
    mech.guarantee = kl
    assert mech.guarantee == kl and mech.privacy_profile().guarantee(divergence="kl").epsilon == 0.25
    with pytest.raises(dp.DistPrivError):
        mech.privacy_profile().epsilon(1e-3)  # a divergence claim proves no (ε, δ)


def test_central_exact_profile_matches_the_analytic_gaussian() -> None:
    model = _model()
    mech = dp.calibrate("expm-gauss", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    prof = mech.privacy_profile(model)
    d = model.mean(1) - model.mean(0)
    dist = float(math.sqrt(d @ np.linalg.solve(model.covariance(0) + mech.noise_covariance, d)))
    for delta in (1e-2, 1e-3, 1e-5):
        assert prof.epsilon(delta) == pytest.approx(_analytic_epsilon(dist, delta), rel=3e-3)
    g = prof.guarantee(1e-3)
    assert g.epsilon <= 1.0 * (1 + 3e-3) and AssumptionCode.MODEL_IS_TRUTH in g.assumption_codes


def test_local_guarantee_is_the_profile_and_matches_closed_forms() -> None:
    eps = 0.8
    rr = local.randomized_response(3, eps)
    lams = {"a": np.array([1.0, 0.0, 0.0]), "b": np.array([0.0, 1.0, 0.0])}
    prof = local.privacy_profile(rr, lams)
    # point masses: DistP ε = the DP ε of randomized response (tupling paper Theorem 6)
    assert prof.epsilon(0.0) == pytest.approx(eps, rel=1e-9)
    assert local.distp_guarantee(rr, lams, delta=0.0) == prof.guarantee(0.0)
    p, q = lams["a"] @ rr.matrix, lams["b"] @ rr.matrix
    kl = max(float(np.sum(p * np.log(p / q))), float(np.sum(q * np.log(q / p))))
    assert prof.guarantee(divergence="kl").epsilon == pytest.approx(kl, rel=1e-9)
    assert prof.guarantee(0.0).assumption_codes == (AssumptionCode.INPUT_LAWS,)


def test_tupling_and_coupling_guarantees_are_their_profiles() -> None:
    t = local.Tupling(base=local.randomized_response(4, 1.0), k=2)
    l0, l1 = np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    assert t.guarantee(l0, l1, 1e-3) == t.privacy_profile(l0, l1).guarantee(1e-3)
    assert set(t.guarantee(l0, l1, 1e-3).assumption_codes) == {AssumptionCode.INPUT_LAWS, AssumptionCode.DUMMIES}
    cost = np.abs(np.subtract.outer(np.arange(3), np.arange(3))).astype(float)
    c = local.CouplingMechanism.optimal(inputs={"s": np.array([0.5, 0.3, 0.2]), "t": np.array([0.2, 0.3, 0.5])},
                                        target=np.array([1 / 3, 1 / 3, 1 / 3]), cost=cost)
    for div in ("max", "kl"):
        g = c.guarantee(0.1, div)
        pg = c.privacy_profile(0.1).guarantee(0.0) if div == "max" else c.privacy_profile(0.1).guarantee(divergence=div)
        assert g == pg
    assert isinstance(t, ProfiledMechanism)
    assert isinstance(dp.calibrate("expm-gauss", _model(), [(0, 1)], epsilon=1.0, delta=1e-3), ProfiledMechanism)


def test_assumptions_carry_typed_codes_and_stay_strings() -> None:
    mech = dp.calibrate("expm-laplace", _model(), [(0, 1)], epsilon=1.0, delta=0.0)
    codes = mech.guarantee.assumption_codes
    assert AssumptionCode.MODEL_IS_TRUTH in codes and AssumptionCode.GAUSSIAN in codes
    a = Assumption("x holds", AssumptionCode.TRANSLATION)
    assert a == "x holds" and isinstance(a, str) and mech.guarantee.with_assumptions("plain").assumption_codes[-1] \
        == AssumptionCode.OTHER


def test_candidate_and_test_codes_replace_prose_prefixes() -> None:
    from distpriv.release.declared import declared_diagnostics
    from distpriv.release.selection import Candidate

    diag = declared_diagnostics(_model(), [(0, 1)], epsilon=1.0, delta=1e-3)
    assert {t.code for t in diag.tests.values()} == {"declared"}
    assert Candidate("expm-gauss", "ExpM (G)", True, "any sentence", 2).code == "kept"
    assert Candidate("expm-gauss", "ExpM (G)", False, "not evaluated: …", 2, code="not-evaluated").code == "not-evaluated"
    assert Candidate("expm-gauss", "ExpM (G)", False, "not evaluated: …", 2).code == "rejected"  # prose is not read
