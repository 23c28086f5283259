"""APGM with Θ a box (distpriv.attribute.apgm_box): the hospital setting and unequal conditional variances."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from distpriv.attribute import (
    ClassConditionalColumn,
    Interval,
    apgm_box,
    dataset_attribute_privacy,
    gaussian_pair_delta,
)
from distpriv.attribute import examples as ex
from distpriv.calibration import classic_c
from distpriv.errors import ClassicCalibrationWarning


def test_hospital_box_apgm_and_exact_heteroscedastic_guarantee() -> None:
    fw = ex.hospital_framework(50)
    models = ex.hospital_models(50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicCalibrationWarning)
        bp = apgm_box(fw, {"gender": models["blood_pressure"]}, ex.HOSPITAL_THETA["blood_pressure"],
                      epsilon=1.0, delta=1e-3, calibration="classic")
    info = bp.details["attributes"]["gender"]
    assert info["sensitivity"] == pytest.approx(10 * 0.48) and info["sensitivity_attained"]
    assert info["min_conditional_variance"] == pytest.approx(100 / 50)
    assert bp.noise_variance == pytest.approx((classic_c(1e-3) * 4.8) ** 2 - 2.0)
    w = apgm_box(fw, {"gender": models["weight"]}, ex.HOSPITAL_THETA["weight"], epsilon=1.0, delta=1e-3)
    wi = w.details["attributes"]["gender"]
    assert wi["sensitivity"] == pytest.approx(3.5 * 7 * 0.48) and not wi["sensitivity_attained"]
    assert wi["min_conditional_variance"] == pytest.approx((9 * (0.74 * 9 + 0.26 * 64) + 225) / 50)
    assert w.details["sigma2"] > w.details["sigma2_algorithm1"]  # unequal variances: exact top-up
    # independent check at random interior θ and all lattice secret pairs
    rng = np.random.default_rng(5)
    s2 = w.noise_variance
    worst = 0.0
    for _ in range(40):
        th = {"k1": rng.uniform(3, 3.5), "k2": rng.uniform(80, 90), "mu_F": rng.uniform(64, 66),
              "mu_O": rng.uniform(69, 71), "sd_height_F": 3.0, "sd_height_O": 8.0, "sd_weight": 15.0}
        for a in np.arange(13, 25) / 50:
            for b in (0.52, 0.6, 0.74):
                mdl = models["weight"]
                d = gaussian_pair_delta(mdl.mean(th, a), mdl.variance(th, a) + s2, mdl.mean(th, b), mdl.variance(th, b) + s2, 1.0)
                worst = max(worst, d)
    assert worst <= 1e-3


def test_box_apgm_classic_unequal_variances_meets_exact_delta() -> None:
    col = ClassConditionalColumn(lambda t: (t["m1"], 0.0), lambda t: (0.01, 4.0), 1)
    fw = dataset_attribute_privacy(["g", "y"], [(("g", (0.0,)), ("g", (1.0,)))])
    box = {"m1": Interval.closed(0.0, 0.2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicCalibrationWarning)
        mech = apgm_box(fw, {"g": col}, box, epsilon=0.5, delta=1e-5, calibration="classic")
    s2 = mech.noise_variance
    worst = max(max(gaussian_pair_delta(m1 * a, col.variance({}, a) + s2, m1 * b, col.variance({}, b) + s2, 0.5)
                    for a, b in ((0.0, 1.0), (1.0, 0.0)))
                for m1 in np.linspace(0.0, 0.2, 21))
    assert worst <= 1e-5 * (1 + 1e-6)
