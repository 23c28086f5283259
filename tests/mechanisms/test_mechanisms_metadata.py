"""The mechanism metadata table is the single source: it agrees with what calibrate() does."""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv.errors import DistPrivError, InvalidParameterError
from distpriv.mechanisms import LABELS, MECHANISMS, exact, registry
from distpriv.mechanisms.metadata import CANDIDATES, METADATA, NOISELESS, info, names_where
from distpriv.mechanisms.registry import options_of
from distpriv.release import selection

COV = [[22.0, -6.0], [-6.0, 13.0]]
MODEL = dp.GaussianModel(means={1: [100.0, 101.0], 2: [99.0, 102.0]}, covariances={1: COV, 2: COV})
#: The minimal options each mechanism needs on MODEL (the baselines need per-record sensitivities and n).
OPTIONS: dict[str, dict[str, object]] = {
    "wasserstein": {"w_infinity": 1.0},
    "groupdp-laplace": {"sensitivities": np.array([0.01, 0.01]), "n": 100},
    "groupdp-gauss": {"sensitivities": np.array([0.01, 0.01]), "n": 100},
    "dp-laplace": {"sensitivities": np.array([0.01, 0.01])},
    "dp-gauss": {"sensitivities": np.array([0.01, 0.01])},
}


def test_one_table_in_registry_order():
    assert tuple(METADATA) == MECHANISMS == tuple(registry._BUILDERS)
    assert all(m.name == name for name, m in METADATA.items())
    assert LABELS == {name: m.label for name, m in METADATA.items()}
    assert tuple(CANDIDATES) == ("none", *MECHANISMS)
    assert info("none") is NOISELESS and NOISELESS.label == "None (Thm 5.4)"
    with pytest.raises(DistPrivError, match="name"):
        info("laplace")


def test_release_selection_reads_the_metadata():
    assert selection.CANDIDATES == tuple(CANDIDATES)
    assert selection.REQUIREMENTS == {name: m.assumptions for name, m in CANDIDATES.items()}
    assert selection.REQUIREMENTS["eigm"] == ("gaussian",)
    assert selection.REQUIREMENTS["dirm-laplace"] == ("translation",)
    assert selection.REQUIREMENTS["groupdp-gauss"] == ("bounded",)
    assert selection.REQUIREMENTS["dp-gauss"] == ()
    assert selection._EXACT_GAUSSIAN == ("none", "eigm", "daum")
    assert exact.GAUSSIAN_MODEL_NAMES == ("expm-gauss", "dirm-gauss", "eigm", "daum")
    assert exact.FIT_NAMES == ("eigm", "daum")


def test_names_where():
    assert names_where(noise="gaussian") == ("expm-gauss", "dirm-gauss", "eigm", "daum", "optm", "groupdp-gauss",
                                             "dp-gauss")
    # Approximate Wasserstein adds Laplace noise but its (W, δ)-closeness needs δ.
    assert names_where(noise="laplace", needs_delta=True) == ("approx-wasserstein",)
    assert names_where(needs_pairs=False) == ("groupdp-laplace", "groupdp-gauss", "dp-laplace", "dp-gauss")
    assert set(names_where(needs_delta=True)) | set(names_where(needs_delta=False)) == set(MECHANISMS)


@pytest.mark.parametrize("name", MECHANISMS)
def test_needs_delta_is_what_calibrate_enforces(name):
    opts = OPTIONS.get(name, {})
    if METADATA[name].needs_delta:
        with pytest.raises(InvalidParameterError, match="delta"):
            dp.calibrate(name, MODEL, [(1, 2)], epsilon=0.5, delta=None, **opts)
    else:
        mech = dp.calibrate(name, MODEL, [(1, 2)], epsilon=0.5, delta=None, **opts)
        assert mech.guarantee.delta == 0.0


@pytest.mark.parametrize("name", MECHANISMS)
def test_noise_family_is_the_noise_added(name):
    mech = dp.calibrate(name, MODEL, [(1, 2)], epsilon=0.5, delta=1e-3, **OPTIONS.get(name, {}))
    assert mech.kind == METADATA[name].noise


@pytest.mark.parametrize("name", MECHANISMS)
def test_needs_pairs_is_what_calibrate_enforces(name):
    opts = OPTIONS.get(name, {})
    if METADATA[name].needs_pairs:
        with pytest.raises(InvalidParameterError, match="pairs"):
            dp.calibrate(name, MODEL, None, epsilon=0.5, delta=1e-3, **opts)
    else:
        assert dp.calibrate(name, MODEL, None, epsilon=0.5, delta=1e-3, **opts).guarantee.epsilon == pytest.approx(0.5)


def test_options_of():
    assert options_of("expm-gauss") == ()
    assert options_of("dirm-gauss") == ("direction", "rank_tol")
    assert options_of("eigm") == ("eigenvectors", "eig_tol")
    assert options_of("daum") == ("direction",)
    assert options_of("wasserstein") == ("w_infinity",)
    assert options_of("approx-wasserstein") == ("method", "c", "closeness", "gamma")
    assert options_of("groupdp-laplace") == ("sensitivities", "group_size", "n")
    with pytest.raises(DistPrivError, match="name"):
        options_of("eigM")
    with pytest.raises(InvalidParameterError, match=r"rank_tol: not an option of mechanism 'eigm'.*eigenvectors"):
        dp.calibrate("eigm", MODEL, [(1, 2)], epsilon=0.5, delta=1e-3, rank_tol=1e-6)
