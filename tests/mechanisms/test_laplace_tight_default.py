"""Issue 25: the Laplace mechanisms' ``tight=None`` default ("auto") certifies 2-D Gaussian-model claims on the
Gauss ⊛ Laplace grid (the least scale, the smallest δ′), keeps the coupling bound elsewhere (3-D: opt-in), and
``tight=False`` still gives the coupling bound. Claims are checked against the independent oracle
(tests/profile_oracle.py), which imports nothing from distpriv."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distpriv as dp
import profile_oracle as po
from distpriv.mechanisms.expected_value import TIGHT_BY_DEFAULT_DIMS, tight_by_default


def unequal_model(seed: int, dim: int = 2) -> dp.GaussianModel:
    """The auditor's family (benchmarks/bench_laplace_tight.py, in ``dim`` dimensions): Σ₁ = Σ₀ + 0.4 CCᵀ/2."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(dim, dim))
    cov = a @ a.T / 2 + 0.5 * np.eye(dim)
    c = rng.normal(size=(dim, dim))
    return dp.GaussianModel(means={0: 10 + rng.normal(size=dim), 1: 10 + rng.normal(size=dim)},
                            covariances={0: cov, 1: cov + 0.4 * c @ c.T / 2})


def _calibrate(name: str, model: dp.GaussianModel, delta: float | None, **options: object) -> dp.Mechanism:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the δ′ claim without a target warns (AssumptionWarning)
        return dp.calibrate(name, model, [(0, 1)], epsilon=1.0, delta=delta, **options)


def _oracle_delta(model: dp.GaussianModel, mech: dp.Mechanism) -> po.Profile:
    return po.output_delta(model.mean(0), model.covariance(0), model.mean(1), model.covariance(1),
                           po.noise_law(mech), 1.0)


@pytest.fixture(scope="module")
def model_2d() -> dp.GaussianModel:
    return unequal_model(0)


def test_auto_rule_is_one_constant() -> None:
    assert TIGHT_BY_DEFAULT_DIMS == frozenset({2})
    assert tight_by_default(unequal_model(0)) and not tight_by_default(unequal_model(0, dim=3))
    one = dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[1.0]], 1: [[1.5]]})
    assert not tight_by_default(one)
    # an EmpiricalModel's accounting never uses the grid: auto is False there, whatever the dimension
    rng = np.random.default_rng(0)
    emp = dp.EmpiricalModel({0: rng.normal(size=(50, 2)), 1: 1 + 1.5 * rng.normal(size=(50, 2))})
    assert not tight_by_default(emp)


@pytest.mark.parametrize("name", ["expm-laplace", "dirm-laplace"])
def test_2d_default_is_the_tight_scale_and_its_claim_holds(model_2d, name) -> None:
    """At (1, 1e-3) on the auditor's seed-0 model: default == tight=True <= tight=False, and the oracle's δ at the
    returned noise is within the claim (before issue 25's default, ExpM (L) got the coupling bound's 2.1347; the
    oracle's least scale is 1.4832, tests/accounting/test_laplace_nd.py)."""
    auto = _calibrate(name, model_2d, 1e-3)
    tight = _calibrate(name, model_2d, 1e-3, tight=True)
    loose = _calibrate(name, model_2d, 1e-3, tight=False)
    assert auto.details["tight"] is True and loose.details["tight"] is False
    assert np.allclose(auto.scales, tight.scales) and np.allclose(auto.basis, tight.basis)
    assert float(np.max(auto.scales)) <= float(np.max(loose.scales))
    assert auto.guarantee.delta == 1e-3
    o = _oracle_delta(model_2d, auto)
    assert not o.violates(auto.guarantee.delta)
    noted = [any(n.startswith(t) for n in m.guarantee.notes) for t, m in (
        ("tight=True (the default for a 2-D model)", auto), ("tight=False: δ from the Gaussian-coupling bound", loose))]
    if name == "expm-laplace":  # the grid's gain on this model (coupling 2.1347, tight 1.4913: 1.43×)
        assert auto.laplace_scale < loose.laplace_scale / 1.3
        assert noted == [True, True]
    else:  # one pair: DirM's noise has one direction, which no grid covers; the coupling bound stands either way
        assert auto.laplace_scale == loose.laplace_scale and auto.guarantee.notes == tight.guarantee.notes
        assert noted == [False, False]


def test_2d_default_claims_a_smaller_delta_without_a_target(model_2d) -> None:
    """Without a δ target the papers' ExpM (L) scale is kept and a δ′ is claimed: the default certifies it on the
    grid (coupling bound 0.1025, oracle 0.00888 on this model); it stays >= the oracle's δ."""
    auto = _calibrate("expm-laplace", model_2d, None)
    loose = _calibrate("expm-laplace", model_2d, None, tight=False)
    assert auto.laplace_scale == loose.laplace_scale  # the papers' scale, no top-up
    o = _oracle_delta(model_2d, auto)
    assert not o.violates(auto.guarantee.delta)
    assert not o.violates(loose.guarantee.delta)
    assert auto.guarantee.delta < loose.guarantee.delta / 5  # measured 0.00932 vs 0.1025
    assert auto.guarantee.delta <= 1.1 * o.delta + o.tol  # the grid's claim is near the true δ


def test_3d_default_is_the_coupling_bound() -> None:
    """3-D stays opt-in (the 3-D grid costs seconds): the default equals tight=False exactly."""
    model = unequal_model(1, dim=3)
    auto = _calibrate("expm-laplace", model, 1e-3)
    loose = _calibrate("expm-laplace", model, 1e-3, tight=False)
    assert auto.details["tight"] is False
    assert auto.laplace_scale == loose.laplace_scale and auto.guarantee.delta == loose.guarantee.delta
    assert auto.guarantee.notes == loose.guarantee.notes


def test_tight_accepts_none_true_false_and_nothing_else() -> None:
    model = dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[1.0]], 1: [[1.5]]})
    for value in (None, True, False, np.bool_(True)):
        mech = _calibrate("dirm-laplace", model, 1e-3, tight=value)
        assert mech.details["tight"] is (bool(value) if value is not None else False)  # 1-D: auto is False
    for value in ("yes", 1, 0, "auto"):
        with pytest.raises(dp.errors.InvalidTypeError, match=r"^tight: expected True, False or None \(auto\), got"):
            _calibrate("expm-laplace", model, 1e-3, tight=value)


def test_release_selection_keeps_the_coupling_bound() -> None:
    """`distpriv release` passes tight=False: its ranking bounds a candidate's error by the papers' noise, which the
    grid's downward search could undercut. A 2-D EmpiricalModel with unequal covariances is calibrated on its
    Gaussian fit with the target δ, where the default would have used the grid."""
    from distpriv.release import diagnose_assumptions
    from distpriv.release.selection import evaluate_candidate

    rng = np.random.default_rng(0)
    emp = dp.EmpiricalModel({0.45: rng.multivariate_normal([0, 0], [[4, 1], [1, 2]], 800),
                             0.55: rng.multivariate_normal([1, 0.5], [[6, 0.5], [0.5, 2]], 800)}, claim_scope="release")
    pairs = [(0.45, 0.55)]
    diag = diagnose_assumptions(emp, pairs, epsilon=1.0, delta=1e-3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cand = evaluate_candidate("expm-laplace", emp, pairs, diag, epsilon=1.0, delta=1e-3)
        fit = emp.to_gaussian()
        loose = dp.calibrate("expm-laplace", fit, pairs, epsilon=1.0, delta=1e-3, tight=False)
        auto = dp.calibrate("expm-laplace", fit, pairs, epsilon=1.0, delta=1e-3)
    assert cand.kept and cand.base is not None and cand.base.details["tight"] is False
    assert cand.base.laplace_scale == loose.laplace_scale
    assert auto.details["tight"] is True and auto.laplace_scale < loose.laplace_scale  # what release forgoes


def test_tight_true_on_an_empirical_model_warns_and_records_false() -> None:
    """review30a: ``tight=True`` on an EmpiricalModel was recorded True and silently unused; it now says so."""
    rng = np.random.default_rng(0)
    emp = dp.EmpiricalModel({0: rng.normal(size=(50, 2)), 1: 1 + 1.5 * rng.normal(size=(50, 2))})
    with pytest.warns(UserWarning, match="tight=True serves a GaussianModel"):
        m = dp.calibrate("expm-laplace", emp, [(0, 1)], epsilon=1.0, delta=1e-3, tight=True)
    assert m.details["tight"] is False
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        d = dp.calibrate("expm-laplace", emp, [(0, 1)], epsilon=1.0, delta=1e-3)  # the default: no such warning
    assert not [w for w in seen if "tight=True" in str(w.message)]
    assert d.details["tight"] is False and d.laplace_scale == m.laplace_scale
