"""distpriv.noise.NoiseLaw: the one owner of a mechanism's noise (issue 24 item 1)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import special

import distpriv as dp
from distpriv.errors import InvalidTypeError
from distpriv.guarantees import Guarantee
from distpriv.mechanisms import Mechanism
from distpriv.noise import NoiseLaw

N = 200_000
SRC = Path(__file__).resolve().parents[2] / "src" / "distpriv"


def _model() -> dp.GaussianModel:
    s = np.array([[0.2, 0.05], [0.05, 0.3]])
    return dp.GaussianModel(means={0: np.array([1.0, 2.0]), 1: np.array([1.3, 2.4])}, covariances={0: s, 1: s})


def test_gaussian_samples_have_the_law_covariance() -> None:
    cov = np.array([[2.0, 0.6], [0.6, 0.5]])
    z = NoiseLaw.gaussian(cov).sample(np.random.default_rng(1), N)
    emp = np.cov(z.T)
    # sd of a sample covariance entry: sqrt((s_ij² + s_ii s_jj)/N); 5 sd
    sd = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / N)
    assert np.all(np.abs(emp - cov) <= 5 * sd)


def test_laplace_covariance_and_marginals_closed_form() -> None:
    v = np.array([[0.6], [0.8]])
    law = NoiseLaw.laplace(v, [1.5])
    np.testing.assert_allclose(law.covariance_matrix, 2 * 1.5**2 * (v @ v.T), rtol=1e-15)
    np.testing.assert_allclose(law.marginal_std(), np.sqrt(2) * 1.5 * np.array([0.6, 0.8]), rtol=1e-15)
    assert law.laplace_scale == 1.5 and law.expected_squared_error == pytest.approx(2 * 1.5**2, rel=1e-15)


@pytest.mark.parametrize("law, closed", [
    (NoiseLaw.gaussian(4.0 * np.eye(3)), 2.0 * math.sqrt(2) * math.exp(special.gammaln(2) - special.gammaln(1.5))),
    (NoiseLaw.laplace(np.eye(1), [0.7]), 0.7),
    (NoiseLaw.none(4), 0.0),
])
def test_expected_l2_closed_forms_match_draws(law: NoiseLaw, closed: float) -> None:
    value, method = law.expected_l2()
    assert method is None and value == pytest.approx(closed, rel=1e-12)
    if closed > 0:
        norms = np.linalg.norm(law.sample(np.random.default_rng(2), N), axis=1)
        assert abs(norms.mean() - closed) <= 5 * norms.std() / math.sqrt(N)


def test_expected_l2_monte_carlo_is_pure_and_agrees_with_independent_draws() -> None:
    law = NoiseLaw.gaussian(np.diag([1.0, 4.0, 0.25]))
    value, method = law.expected_l2()
    assert method is not None and "monte-carlo" in method
    assert law.expected_l2() == (value, method)  # a pure function of the law
    norms = np.linalg.norm(np.random.default_rng(3).standard_normal((N, 3)) * np.array([1.0, 2.0, 0.5]), axis=1)
    assert abs(value - norms.mean()) <= 6 * norms.std() / math.sqrt(N)  # two independent estimates


def test_selection_expected_l2_does_not_mutate_the_mechanism() -> None:
    from distpriv.release.selection import expected_l2

    mech = dp.calibrate("eigm", _model(), [(0, 1)], epsilon=1.0, delta=1e-3)
    mech.l2_estimate = None
    value = expected_l2(mech)
    assert mech.l2_estimate is None and value == mech.noise.expected_l2()[0] == mech.expected_l2_error


def test_coordinates_rebuild_the_covariance() -> None:
    for law in (NoiseLaw.gaussian(np.array([[2.0, 0.6], [0.6, 0.5]])), NoiseLaw.laplace(np.array([[0.6], [0.8]]), [2.0]),
                NoiseLaw.gaussian(np.diag([1.0, 3.0])), NoiseLaw.none(2)):
        c = law.coordinates()
        np.testing.assert_allclose((c.basis * c.stds**2) @ c.basis.T, law.covariance_matrix, atol=1e-12)
        np.testing.assert_allclose(c.basis.T @ c.basis, np.eye(2), atol=1e-12)


def test_sum_with_theorem_5_7_noise_draws_base_then_extra() -> None:
    base = NoiseLaw.gaussian(np.diag([1.0, 2.0]))
    law = base.plus_laplace(0.3)
    z = law.sample(np.random.default_rng(4), 5)
    g = np.random.default_rng(4)
    expect = base.sample(g, 5) + g.laplace(0.0, 0.3, size=(5, 2))
    np.testing.assert_array_equal(z, expect)
    np.testing.assert_allclose(law.covariance_matrix, np.diag([1.0, 2.0]) + 2 * 0.09 * np.eye(2), rtol=1e-15)
    assert law.label == "gaussian+laplace" and law.base.extra_laplace == 0.0


def test_mechanism_views_delegate_to_its_noise() -> None:
    mech = dp.calibrate("expm-laplace", _model(), [(0, 1)], epsilon=1.0, delta=0.0)
    assert mech.kind == mech.noise.kind == "laplace" and mech.laplace_scale == mech.noise.laplace_scale
    np.testing.assert_array_equal(mech.noise_covariance, mech.noise.covariance_matrix)
    np.testing.assert_array_equal(mech.sample_noise(3, np.random.default_rng(5)), mech.noise.sample(np.random.default_rng(5), 3))
    with pytest.raises(InvalidTypeError):
        Mechanism("x", "X", 2, "gaussian", Guarantee(1.0, 0.0, "x"))  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        Mechanism("x", "X", 3, NoiseLaw.none(2), Guarantee(1.0, 0.0, "x"))


def test_match_is_the_family_dispatch() -> None:
    calls = [law.match(gaussian=lambda c: "g", laplace=lambda b, s: "l", none=lambda: "n")
             for law in (NoiseLaw.gaussian(np.eye(1)), NoiseLaw.laplace(np.eye(1), [1.0]), NoiseLaw.none(1))]
    assert calls == ["g", "l", "n"]
    assert NoiseLaw.none(2).match(gaussian=lambda c: float(np.abs(c).sum()), laplace=lambda b, s: -1.0) == 0.0


def test_no_noise_kind_switch_outside_the_noise_module() -> None:
    pattern = re.compile(r'kind ?(==|!=) ?"(gaussian|laplace|none)"|kind in \([^)]*"(gaussian|laplace|none)"')
    hits = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py") if p.name != "noise.py" or p.parent != SRC
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []
