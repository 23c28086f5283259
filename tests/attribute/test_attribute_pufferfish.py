"""Pufferfish instantiations of attribute privacy and Chen & Ohrimenko Thm 3.1 conversions."""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv.attribute import (
    Interval,
    Lattice,
    Secret,
    SecretPair,
    apgm,
    dataset_attribute_privacy,
    distributional_attribute_privacy,
    from_distribution_privacy,
    to_distribution_privacy,
)
from distpriv.errors import InvalidParameterError, InvalidTypeError, UnknownLabelError


def test_interval_validation_and_membership() -> None:
    with pytest.raises(InvalidParameterError, match="low must be <= high"):
        Interval(0.6, 0.4)
    with pytest.raises(InvalidParameterError, match="empty"):
        Interval(0.5, 0.5)
    iv = Interval.open(0.25, 0.5)
    assert iv.contains(0.3) and not iv.contains(0.25) and not iv.contains(0.5)
    assert not iv.attained(0.5) and iv.attained(0.3)
    assert Interval.point(2.0).is_point
    with pytest.raises(InvalidParameterError, match="low must be <= high"):
        Lattice(0.1, 1.0, 0.0)


def test_lattice_points_and_separation() -> None:
    lat = Lattice.fractions(50)
    pts = lat.points_in(Interval.open(0.25, 0.5))
    np.testing.assert_allclose(pts, np.arange(13, 25) / 50)
    pair = SecretPair(Secret("g", Interval.open(0.25, 0.5)), Secret("g", Interval.open(0.5, 0.75)))
    sep, att = pair.separation(lat)
    assert sep == pytest.approx(0.48) and att
    sep, att = pair.separation(None)
    assert sep == pytest.approx(0.5) and not att  # supremum over open ranges is not attained
    sep, att = SecretPair(Secret("g", (0.1, 0.2)), Secret("g", (0.9,))).separation()
    assert sep == pytest.approx(0.8) and att


def test_bad_secrets_and_pairs() -> None:
    with pytest.raises(UnknownLabelError, match="does not exist"):
        dataset_attribute_privacy(["a", "b"], [(("zz", (0.1,)), ("zz", (0.2,)))])
    with pytest.raises(InvalidParameterError, match="at least one secret pair"):
        dataset_attribute_privacy(["a", "b"], [])
    with pytest.raises(InvalidParameterError, match="one attribute"):
        dataset_attribute_privacy(["a", "b"], [(("a", (0.1,)), ("b", (0.2,)))])
    with pytest.raises(InvalidParameterError, match="identical"):
        dataset_attribute_privacy(["a"], [(("a", (0.1,)), ("a", (0.1,)))])
    with pytest.raises(InvalidParameterError, match="empty value set"):
        Secret("a", ())
    with pytest.raises(InvalidTypeError):
        dataset_attribute_privacy(["a"], ["not a pair"])
    with pytest.raises(UnknownLabelError):
        dataset_attribute_privacy(["a"], [(("a", (0.1,)), ("a", (0.2,)))], codomains={"q": Lattice.fractions(3)})


def test_framework_properties() -> None:
    fw = dataset_attribute_privacy(
        ["gender", "w", "race"],
        [(("gender", (0.5,)), ("gender", (0.25,))), (("race", (0.1,)), ("race", (0.3, 0.4)))],
        thetas=("t0",),
    )
    assert fw.kind == "dataset" and fw.sensitive == ("gender", "race")
    assert len(fw.secrets) == 4 and len(fw.pairs_for("race")) == 1
    assert sorted(fw.point_pairs()) == [("gender", 0.5, 0.25), ("race", 0.1, 0.3), ("race", 0.1, 0.4)]
    assert fw.describe()["sensitive"] == ["gender", "race"]
    d = distributional_attribute_privacy(["phi"], [(("phi", (0.0,)), ("phi", (1.0,)))])
    assert d.kind == "distributional" and d.secrets[0].label.startswith("φ_phi")


def _linear_moments(theta: float, attr: str, a: float) -> tuple[list[float], list[list[float]]]:
    # F | g = a ~ N(θ·a, 0.3): a toy linear-Gaussian model, θ ∈ {1, 2}
    return [theta * a], [[0.3]]


def test_to_distribution_privacy_feeds_calibrate() -> None:
    fw = dataset_attribute_privacy(["g", "y"], [(("g", (0.2, 0.3)), ("g", (0.7,)))], thetas=(1.0, 2.0))
    model, pairs = to_distribution_privacy(fw, _linear_moments)
    assert set(model.labels) == {(t, "g", a) for t in (1.0, 2.0) for a in (0.2, 0.3, 0.7)}
    assert len(pairs) == 4  # 2 θ × 2 point pairs; no cross-θ pairs (Thm 3.1: same θ on both sides)
    assert all(p[0][0] == p[1][0] for p in pairs)
    eig = dp.calibrate("eigm", model, pairs, epsilon=0.5, delta=1e-5)
    mech = apgm(fw, _linear_moments, epsilon=0.5, delta=1e-5)
    # Δ = 2·|0.2 − 0.7| = 1.0; σ² = (Δ/D*)² − 0.3 for both
    d_star = dp.calibration.gaussian_max_distance(0.5, 1e-5)
    assert mech.noise_variance == pytest.approx((1.0 / d_star) ** 2 - 0.3, rel=1e-9)
    np.testing.assert_allclose(eig.noise_covariance, mech.noise_covariance, rtol=1e-9)
    assert mech.guarantee.framework == "attribute-privacy"
    assert mech.details["attributes"]["g"]["sensitivity"] == pytest.approx(1.0)


def test_zero_probability_secrets_are_skipped() -> None:
    fw = dataset_attribute_privacy(["g"], [(("g", (0.1,)), ("g", (0.9,)))], thetas=("a", "b"))
    table = {("a", "g", 0.1): ([0.0], [[1.0]]), ("a", "g", 0.9): ([1.0], [[1.0]]), ("b", "g", 0.1): ([0.0], [[1.0]])}
    model, pairs = to_distribution_privacy(fw, table)
    assert pairs == ((("a", "g", 0.1), ("a", "g", 0.9)),)
    with pytest.raises(InvalidParameterError, match="positive probability"):
        to_distribution_privacy(fw, {})


def test_from_distribution_privacy_round_trip() -> None:
    labels = [0.45, 0.5, 0.55]
    pairs = [(0.45, 0.5), (0.5, 0.55)]
    pf = from_distribution_privacy(labels, pairs)
    assert pf.secrets == tuple(labels)
    assert [m.prob_secret(0.45) for m in pf.distributions] == [0.5, 0.0]
    labs, back = pf.to_distribution_privacy()
    assert set(labs) == set(labels)
    assert {frozenset(p) for p in back} == {frozenset(p) for p in pairs}
