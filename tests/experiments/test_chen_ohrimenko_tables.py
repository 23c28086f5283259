"""Tables 3 and 4: :mod:`distpriv.experiments.chen_ohrimenko.tables` (``distpriv reproduce chen-ohrimenko``, Chen & Ohrimenko Section 6).

Runs use tiny repetition counts and grids so the file stays well under a
minute; the statistical checks use tolerances derived from those sizes.
"""

from __future__ import annotations

import json
import math

import pytest

from distpriv.errors import InvalidParameterError
from distpriv.experiments import chen_ohrimenko as co

LABELS3 = ["ExpM (L)", "DirM (L)", "ExpM (G)", "EigM (G)", "DauM (G)", "GDP (L)", "GDP (G)"]


@pytest.fixture(scope="module")
def t3(adult_ok):
    return co.table3(reps=6, model_samples=300)


@pytest.fixture(scope="module")
def t4(adult_ok):
    return co.table4(reps=4, n_shadow=60, n_test=100, model_samples=300)


# --------------------------------------------------------------------------- Table 3
def test_table3_shape(t3):
    assert t3["study"] == "chen-ohrimenko" and t3["table"] == 3
    rows = t3["rows"]
    assert [r["mechanism"] for r in rows] == [lab for lab in LABELS3 for _ in co.EPSILONS]
    assert [r["epsilon"] for r in rows[:3]] == [0.2, 1.0, 5.0]
    for r in rows:
        assert {"mechanism", "epsilon", "l2_error", "paper", "difference", "l2_error_classic", "l2_error_exact"} <= set(r)
        assert r["l2_error"] >= 0 and math.isfinite(r["l2_error"])
        assert r["paper"] == co.PAPER_TABLE3[(r["mechanism"], r["epsilon"])]
        assert r["difference"] == pytest.approx(r["l2_error"] - r["paper"])
        assert r["l2_error"] == r["l2_error_classic"]  # default calibration is the paper's
    json.loads(co.dumps(t3))  # JSON-serialisable


def test_table3_relations(t3):
    by = {(r["mechanism"], r["epsilon"]): r for r in t3["rows"]}
    for eps in co.EPSILONS:
        # Laplace noise has one calibration rule
        for lab in ("ExpM (L)", "DirM (L)", "GDP (L)"):
            assert by[lab, eps]["l2_error_exact"] == by[lab, eps]["l2_error_classic"]
        # Section 6.2: group DP is at least an order of magnitude noisier than the EVM variants
        assert by["GDP (L)", eps]["l2_error_expected"] > 10 * by["ExpM (L)", eps]["l2_error_expected"]
        assert by["GDP (G)", eps]["l2_error_expected"] > 10 * by["ExpM (G)", eps]["l2_error_expected"]
        # Section 6.4: the directional variants add the least noise
        assert by["DirM (L)", eps]["l2_error_expected"] < by["ExpM (L)", eps]["l2_error_expected"]
        assert by["DauM (G)", eps]["l2_error_expected"] < by["ExpM (G)", eps]["l2_error_expected"]
    # ε < 1: the classic rule is valid and conservative, the exact one adds less noise
    for lab in ("ExpM (G)", "EigM (G)", "DauM (G)", "GDP (G)"):
        assert by[lab, 0.2]["l2_error_exact"] < by[lab, 0.2]["l2_error_classic"]
        assert 0 < by[lab, 0.2]["exact_saving"] < 1


def test_table3_expected_error_scales_as_one_over_epsilon(t3):
    by = {(r["mechanism"], r["epsilon"]): r for r in t3["rows"]}
    for lab in ("ExpM (L)", "DirM (L)", "ExpM (G)", "GDP (L)", "GDP (G)"):
        assert by[lab, 0.2]["l2_error_expected"] == pytest.approx(5 * by[lab, 1.0]["l2_error_expected"], rel=0.02)


def test_table3_mean_error_within_sampling_error_of_expectation(t3):
    # ||Z||_2 has a coefficient of variation below 0.8 for these noise laws, so the mean of 6 draws has a
    # relative standard deviation below 0.8/sqrt(6) ≈ 0.33. With k = 2.5 standard deviations (Cantelli:
    # each side fails with probability <= 1/(1 + k²) ≈ 0.14 per row) the ratio must lie in (0.18, 1.82):
    # both sides can fail (a bound of 4 standard deviations, 1.3 > 1, could not fail below).
    tol = 2.5 * 0.8 / math.sqrt(6)
    assert tol < 1
    ratios = [r["l2_error"] / r["l2_error_expected"] for r in t3["rows"] if r["l2_error_expected"] > 0]
    assert ratios
    for ratio in ratios:
        assert 1 - tol < ratio < 1 + tol


def test_table3_is_deterministic_and_ignores_paper_values(table3_eps1, monkeypatch):
    a = table3_eps1  # computed once for the run (maybe by the other xdist worker), b here again
    monkeypatch.setattr(co.tables, "PAPER_TABLE3", {k: 0.0 for k in co.PAPER_TABLE3})
    b = co.table3(reps=3, model_samples=300, epsilons=(1.0,))
    assert [r["l2_error"] for r in a["rows"]] == [r["l2_error"] for r in b["rows"]]
    assert all(r["paper"] == 0.0 for r in b["rows"])


def test_table3_exact_calibration_columns(adult_ok):
    res = co.table3(reps=3, model_samples=300, epsilons=(0.2,), calibration="exact")
    for r in res["rows"]:
        assert r["l2_error"] == r["l2_error_exact"]


# --------------------------------------------------------------------------- Table 4
def test_table4_shape(t4):
    assert t4["study"] == "chen-ohrimenko" and t4["table"] == 4
    rows = t4["rows"]
    assert len(rows) == 1 + 3 * 3 * 3
    assert rows[0]["mechanism"] == "None" and rows[0]["epsilon"] is None and rows[0]["delta"] is None
    assert {r["mechanism"] for r in rows[1:]} == {"ExpM (G)", "EigM (G)", "DauM (G)"}
    assert {r["delta"] for r in rows[1:]} == {1e-4, 1e-3, 1e-2}
    for r in rows:
        assert {"mechanism", "epsilon", "delta", "attack_accuracy"} <= set(r)
        assert 0 <= r["attack_accuracy"] <= 1
        assert r["ci_low"] <= r["attack_accuracy"] <= r["ci_high"]
        if r["mechanism"] != "None":
            assert r["paper"] == co.PAPER_TABLE4[(r["mechanism"], r["epsilon"], r["delta"])]
            assert 0 <= r["attack_accuracy_exact"] <= 1
            assert 0.5 <= r["bayes_optimal_accuracy"] <= 1
    json.loads(co.dumps(t4))


def test_table4_statistics(t4):
    rows = t4["rows"]
    n = t4["settings"]["reps"] * t4["settings"]["n_test"]
    tol = 4 * math.sqrt(0.25 / n)
    none = rows[0]
    # undefended: the income property leaks (paper: 75%)
    assert none["attack_accuracy"] > 0.5 + tol
    # ε = 0.2: every mechanism brings the paper's attacker to chance
    for r in rows[1:]:
        if r["epsilon"] == 0.2:
            assert abs(r["attack_accuracy"] - 0.5) <= tol + 0.03
    # the Bayes-optimal accuracy grows with ε and with δ (less noise)
    by = {(r["mechanism"], r["epsilon"], r["delta"]): r["bayes_optimal_accuracy"] for r in rows[1:]}
    for lab in ("ExpM (G)", "EigM (G)", "DauM (G)"):
        assert by[lab, 0.2, 1e-3] <= by[lab, 1.0, 1e-3] <= by[lab, 5.0, 1e-3] + 1e-12
        assert by[lab, 1.0, 1e-4] <= by[lab, 1.0, 1e-2] + 1e-12
    # under classic calibration at ε = 0.2 < 1 the (ε, δ) guarantee caps any attacker
    # at (e^ε + δ)/(1 + e^ε) when the fitted Gaussian model is the truth
    for (_lab, eps, dl), acc in by.items():
        if eps < 1:
            assert acc <= (math.exp(eps) + dl) / (1 + math.exp(eps)) + 1e-9


def test_function_bad_input():
    with pytest.raises(InvalidParameterError, match="reps"):
        co.table3(reps=1)
    with pytest.raises(InvalidParameterError, match="calibration"):
        co.table4(calibration="tight")
    with pytest.raises(InvalidParameterError, match="^table: "):
        co.run_chen_ohrimenko(tables=(5,))
