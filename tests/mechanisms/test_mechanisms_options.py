"""``options_of`` for every mechanism name, the typed metadata fields, and the typed accounting results."""

from __future__ import annotations

import math

import numpy as np
import pytest

import distpriv as dp
from distpriv.accounting.release import NoiseLaw, proven_delta
from distpriv.errors import InvalidParameterError
from distpriv.mechanisms import MECHANISMS, exact
from distpriv.mechanisms.base import Accounting
from distpriv.mechanisms.metadata import METADATA, names_where
from distpriv.mechanisms.registry import options_of

COV = [[22.0, -6.0], [-6.0, 13.0]]
MODEL = dp.GaussianModel(means={1: [100.0, 101.0], 2: [99.0, 102.0]}, covariances={1: COV, 2: COV})
ADULT = dp.GaussianModel(means={0.45: [28.05], 0.55: [25.50]}, covariances={0.45: [[18.31]], 0.55: [[18.03]]})
SENS = np.array([0.01, 0.03])

#: Every registered name and its keyword options (beyond model, Ψ, ε, δ, calibration).
OPTIONS = {
    "wasserstein": ("w_infinity",),
    "approx-wasserstein": ("method", "c", "closeness", "gamma"),
    "expm-laplace": ("tight",),
    "expm-gauss": (),
    "dirm-laplace": ("direction", "rank_tol", "tight"),
    "dirm-gauss": ("direction", "rank_tol"),
    "eigm": ("eigenvectors", "eig_tol"),
    "daum": ("direction",),
    "optm": ("weights",),
    "groupdp-laplace": ("sensitivities", "group_size", "n"),
    "groupdp-gauss": ("sensitivities", "group_size", "n"),
    "dp-laplace": ("sensitivities", "group_size", "n"),
    "dp-gauss": ("sensitivities", "group_size", "n"),
}


def test_options_of_every_registered_name() -> None:
    assert tuple(OPTIONS) == MECHANISMS
    assert {name: options_of(name) for name in MECHANISMS} == OPTIONS


@pytest.mark.parametrize("name", ["dp-laplace", "dp-gauss", "groupdp-laplace", "groupdp-gauss"])
def test_baselines_take_name_and_label_from_the_metadata_not_from_options(name: str) -> None:
    mech = dp.calibrate(name, MODEL, None, epsilon=0.5, delta=1e-3, sensitivities=SENS, n=100)
    assert (mech.name, mech.label) == (name, METADATA[name].label)
    with pytest.raises(InvalidParameterError, match=rf"label: not an option of mechanism '{name}'"):
        dp.calibrate(name, MODEL, None, epsilon=0.5, delta=1e-3, sensitivities=SENS, n=100, label="x")


def test_baseline_noise_scales() -> None:
    # Laplace: b = k ||s||_1 / ε = 3 · 0.04 / 0.5 = 0.24; group DP with k = n = 100: b = 8
    lap = dp.calibrate("dp-laplace", MODEL, None, epsilon=0.5, sensitivities=SENS, group_size=3)
    assert lap.laplace_scale == pytest.approx(0.24)
    gdp = dp.calibrate("groupdp-laplace", MODEL, None, epsilon=0.5, sensitivities=SENS, n=100)
    assert gdp.laplace_scale == pytest.approx(8.0) and gdp.guarantee.framework == "distribution-privacy"
    # Gaussian (classic): σ = k ||s||_2 / D_max, D_max = ε / sqrt(2 ln(1.25/δ))
    g = dp.calibrate("dp-gauss", MODEL, None, epsilon=0.5, delta=1e-3, calibration="classic", sensitivities=SENS)
    d_max = 0.5 / math.sqrt(2 * math.log(1.25 / 1e-3))
    assert g.noise_std[0] == pytest.approx(math.sqrt(0.01**2 + 0.03**2) / d_max)
    assert g.guarantee.framework == "differential-privacy"


def test_metadata_baseline_and_exact_model_fields() -> None:
    assert names_where(baseline="dp") == ("dp-laplace", "dp-gauss")
    assert names_where(baseline="groupdp") == ("groupdp-laplace", "groupdp-gauss")
    assert names_where(exact_gaussian_model=True) == (
        "expm-laplace", "expm-gauss", "dirm-laplace", "dirm-gauss", "eigm", "daum")
    assert exact.LAPLACE_MODEL_NAMES == ("expm-laplace", "dirm-laplace")
    assert names_where(baseline=None) == MECHANISMS  # None: no filter
    assert [n for n in MECHANISMS if METADATA[n].baseline is None] == list(MECHANISMS[:9])


@pytest.mark.parametrize("name", ["eigm", "daum"])
def test_typed_accounting_of_a_topped_up_gaussian_mechanism(name: str) -> None:
    mech = dp.calibrate(name, ADULT, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    acc = mech.accounting
    assert isinstance(acc, Accounting) and mech.accounted
    assert acc.delta_before_topup == pytest.approx(1.189e-3, abs=5e-7)  # the papers' noise
    assert acc.topup_factor > 1.0 and acc.topup_isotropic == 0.0 and acc.topped_up
    assert acc.covariance_gap == pytest.approx((18.31 - 18.03) / 18.31, rel=1e-6)
    assert acc.profile is not None and acc.profile.delta_upper <= 1e-3
    assert acc.papers_noise_covariance is not None
    assert len({acc, acc}) == 1  # frozen and hashable (the covariance array is not compared)
    assert float(mech.noise_covariance[0, 0]) == pytest.approx(acc.topup_factor**2 * acc.papers_noise_covariance[0, 0])
    # the details view says the same
    d = mech.details
    assert d["accounted"] is True and d["delta_before_topup"] == acc.delta_before_topup
    assert d["topup_factor"] == acc.topup_factor and d["topup_steps"] == acc.topup_steps
    assert d["accounting"] == acc.profile.to_dict()


def test_typed_accounting_of_laplace_and_unaccounted_mechanisms() -> None:
    lap = dp.calibrate("expm-laplace", ADULT, [(0.45, 0.55)], epsilon=1.0)
    assert lap.accounting is not None and lap.accounting.pure_epsilon is not None
    assert lap.accounting.pure_epsilon <= 1.0 + 1e-9 and lap.accounting.topup_factor > 1.0
    assert lap.accounting.topup_isotropic is None and "topup_isotropic" not in lap.details
    assert lap.details["pure_epsilon"] == lap.accounting.pure_epsilon
    w = dp.calibrate("wasserstein", MODEL, [(1, 2)], epsilon=1.0, w_infinity=2.0)
    assert w.accounting is None and not w.accounted and "accounted" not in w.details


def test_typed_l2_estimate() -> None:
    mech = dp.calibrate("eigm", MODEL, [(1, 2)], epsilon=1.0, delta=1e-3, calibration="classic")
    assert mech.l2_estimate is None
    assert np.linalg.eigvalsh(mech.noise_covariance) == pytest.approx([3.52, 18.52], abs=5e-3)
    value = mech.expected_l2_error  # two distinct eigenvalues: Monte Carlo
    assert mech.l2_estimate is not None and mech.l2_estimate.value == value
    assert mech.details["_mc_l2"] == value and mech.details["expected_l2_error_method"] == mech.l2_estimate.method
    assert value == pytest.approx(math.sqrt(mech.expected_squared_error), rel=0.2)


def test_decided_profile_is_typed() -> None:
    model = dp.GaussianModel({0: [0.0, 0.0], 1: [0.4, 0.4]},
                             {0: [[1.0, 0.9], [0.9, 1.0]], 1: [[1.2, -0.5], [-0.5, 0.8]]})
    noise = NoiseLaw.gaussian(0.05 * np.eye(2))
    decided = proven_delta(model, [(0, 1)], noise, 1.0, target=1e-3)
    assert decided.decided_only and decided.decided_above_target == 1e-3
    assert decided.delta_upper == 1.0 and decided.reported_delta == decided.delta_lower > 1e-3
    assert decided.details["decided_above_target"] == 1e-3
    full = proven_delta(model, [(0, 1)], noise, 1.0)
    assert not full.decided_only and full.reported_delta == full.delta_upper
