"""Assumption tests of the release (distpriv.release.assumptions): Box's M, the gaps, the histogram guard."""

from __future__ import annotations

import math

import numpy as np
import pytest

import distpriv as dp
from distpriv.release import selection
from distpriv.release.assumptions import (
    MIN_BINS,
    box_m_test,
    diagnose_assumptions,
    eta_for,
    histogram_bins,
)

PAIRS = [(0.45, 0.55)]


def test_box_m_detects_unequal_covariances() -> None:
    r = np.random.default_rng(0)
    a = r.normal(size=(500, 2))
    assert box_m_test(a, r.normal(size=(500, 2))) > 0.01
    assert box_m_test(a, 2.0 * r.normal(size=(500, 2))) < 1e-6


def test_diagnostics_gaps_are_zero_for_exact_translates() -> None:
    r = np.random.default_rng(3)
    x = r.normal(size=(300, 2))
    model = dp.EmpiricalModel({0.45: x, 0.55: x + np.array([1.0, -0.5])})
    diag = diagnose_assumptions(model, PAIRS, epsilon=1.0, delta=1e-3)
    assert diag.translation_w == pytest.approx(0.0, abs=1e-9)
    assert diag.tests["translation"].p_value == 1.0
    assert diag.tests["equal_covariance"].holds


def test_divergence_gap_needs_a_fine_enough_histogram():
    """Theorem 5.6's λ is estimated only with >= MIN_BINS cells per axis (coarser grids under-estimate D^η∞)."""
    rng = np.random.default_rng(4)
    for dim, finite in ((1, True), (5, False)):
        x0 = rng.normal(size=(1000, dim))
        model = dp.EmpiricalModel(samples={0.4: x0, 0.5: rng.normal(size=(1000, dim)) + 0.1})
        diag = selection.diagnose_assumptions(model, [(0.4, 0.5)], epsilon=1.0, delta=1e-3)
        assert math.isfinite(diag.divergence_lambda) is finite
    assert histogram_bins(1000, 5) < MIN_BINS <= histogram_bins(1000, 1)


def test_assumption_tests_have_one_home():
    """selection.py holds selection; the assumption tests live in assumptions.py only (issue 24: one home per idea)."""
    assert selection.diagnose_assumptions is diagnose_assumptions
    assert selection.MIN_BINS == MIN_BINS == 3
    for name in ("box_m_test", "histogram_bins", "eta_for"):
        assert not hasattr(selection, name)
    assert box_m_test.__module__ == "distpriv.release.assumptions" and histogram_bins.__module__ == "distpriv.relaxed.gaps"
    assert eta_for(1.0, 1e-3) == pytest.approx(1e-3 / (2 * (1 + math.e)), rel=1e-12)
