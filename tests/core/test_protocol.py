"""One mechanism protocol: central, attribute and local mechanisms satisfy it (isinstance here, mypy in test_typing)."""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv import local
from distpriv.attribute import (
    ColumnSensitivity,
    GaussianRecordModel,
    Interval,
    apmqm,
    dataset_attribute_privacy,
)
from distpriv.attribute import examples as ex
from distpriv.mechanisms import AdditiveNoiseMechanism
from distpriv.protocol import CalibratedMechanism, PrivacyMechanism

COV = [[22.0, -6.0], [-6.0, 13.0]]
MODEL = dp.GaussianModel(means={1: [100.0, 101.0], 2: [99.0, 102.0]}, covariances={1: COV, 2: COV})


def test_old_names_are_aliases():
    assert dp.Mechanism is AdditiveNoiseMechanism is dp.AdditiveNoiseMechanism
    assert local.Mechanism is local.LocalMechanism
    assert dp.Mechanism is not local.Mechanism


def _central():
    return dp.calibrate("eigm", MODEL, [(1, 2)], epsilon=1.0, delta=1e-3)


def _attribute_gaussian():
    box_cov = {("x", "x"): Interval.closed(1.5, 2.5), ("y", "y"): Interval.closed(2.5, 3.5),
               ("x", "y"): Interval.closed(0.8, 1.4), ("z", "z"): 1.0}
    m = GaussianRecordModel(["x", "y", "z"], {"x": 0.0, "y": 0.0, "z": 0.0}, box_cov, 8)
    fw = dataset_attribute_privacy(["x", "y", "z"], [(("x", Interval.closed(-1, 0)), ("x", Interval.closed(0.5, 2)))])
    return m.apgm(fw, "y", epsilon=1.0, delta=1e-4)


def _attribute_quilt():
    nets = ex.school_networks()
    return apmqm(ex.school_framework(), nets, ["sat"], ColumnSensitivity.count(200, ["sat"]), epsilon=1.0)


@pytest.mark.parametrize("build", [_central, _attribute_gaussian, _attribute_quilt])
def test_central_and_attribute_mechanisms_are_calibrated_mechanisms(build):
    mech = build()
    assert isinstance(mech, CalibratedMechanism) and isinstance(mech, PrivacyMechanism)
    assert isinstance(mech.guarantee, dp.Guarantee) and mech.guarantee.epsilon <= 1.0 + 1e-12
    dim = mech.dim
    one = mech.release(np.zeros(dim), rng=0)
    many = mech.release_batch(np.zeros((5, dim)), rng=0)
    assert one.shape == (dim,) and many.shape == (5, dim)
    # release adds the mechanism's noise: same seed, same draw as sample_noise
    np.testing.assert_allclose(mech.release(np.ones(dim), rng=7) - 1.0, mech.sample_noise(1, rng=7)[0])


def test_local_mechanisms_satisfy_the_release_protocol_not_the_calibrated_one():
    rr = local.randomized_response(3, 1.0)
    tp = local.Tupling(base=rr, k=2)
    assert isinstance(rr, PrivacyMechanism) and isinstance(tp, PrivacyMechanism)
    # a channel's guarantee depends on (λ0, λ1): local.distp_guarantee, not an attribute. (Tupling.guarantee
    # is a method taking the pair; runtime isinstance sees only that the name exists, mypy tells them apart.)
    assert not isinstance(rr, CalibratedMechanism)
    x = np.array([0, 1, 2, 2])
    np.testing.assert_array_equal(rr.release(x, rng=5), rr.sample(x, rng=5))
    np.testing.assert_array_equal(rr.release_batch(x, rng=5), rr.sample(x, rng=5))
    assert tp.release(x, rng=5).shape == (4, 3)
    np.testing.assert_array_equal(tp.release_batch(x, rng=5), tp.sample(x, rng=5))


def test_non_mechanisms_are_not_mechanisms():
    assert not isinstance(MODEL, PrivacyMechanism)
    assert not isinstance(np.zeros(3), PrivacyMechanism)


def test_tupling_is_recognised_by_type_not_by_its_methods():
    class Impostor:
        def distp_epsilon(self, lam0, lam1, delta=0.0):  # the old duck-typed hook
            return 0.0

    with pytest.raises(dp.InvalidTypeError, match="mech: expected a local.Mechanism or local.Tupling"):
        local.distp_epsilon(Impostor(), np.array([1.0, 0.0]), np.array([0.0, 1.0]))  # type: ignore[arg-type]
    rr = local.randomized_response(2, 1.0)
    tp = local.Tupling(base=rr, k=1)
    lam0, lam1 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    # dispatch by type: a Tupling uses its exact convolution accounting, never more than the base's ε
    assert local.distp_epsilon(tp, lam0, lam1) == pytest.approx(tp.distp_epsilon(lam0, lam1))
    assert local.distp_epsilon(tp, lam0, lam1) <= local.distp_epsilon(rr, lam0, lam1) + 1e-12
    assert local.distp_epsilon(rr, lam0, lam1) == pytest.approx(1.0)
