"""``distpriv reproduce compare`` (issue 25 item 4): a fast smoke run on the Table 3 workload.

One property, one ε, the cheap mechanisms and a small audit: the rows must carry every column,
every claim must meet the common target, and no audit may refute a claim.
"""

from __future__ import annotations

import json

import pytest

from distpriv.errors import InvalidParameterError
from distpriv.experiments import compare

CHEAP = ["eigm", "ssp-quantizer", "ding-laplace", "kantorovich"]


@pytest.fixture(scope="module")
def smoke(adult_ok, tmp_path_factory):  # noqa: ANN001, ANN201
    out = tmp_path_factory.mktemp("compare")
    return compare.run_compare(quick=True, properties=["income"], epsilons=[5.0], mechanisms=CHEAP, audit=False, out=out), out


def test_compare_rows_meet_the_common_guarantee(smoke) -> None:  # noqa: ANN001
    res, _ = smoke
    rows = [r for r in res["rows"] if r["mechanism"] != "None"]
    assert [r["mechanism"] for r in rows] == ["EigM (G)", "SSP quantizer", "Ding (L)", "Kantorovich"]
    for r in rows:
        assert r["claimed_delta"] <= 1e-3 * (1 + 1e-9), r
        assert r["l2_error"] > 0 and r["expected_l2_error"] > 0
        assert 0.0 <= r["meta_classifier_accuracy"] <= 1.0 and 0.0 <= r["likelihood_ratio_accuracy"] <= 1.0
    kant = rows[-1]
    assert kant["claimed_delta"] == 0.0 and kant["exact_delta"] is not None and kant["exact_delta"] <= 1.0
    # the quantizer's own notion is the Bayes-optimal accuracy: the meta-classifier cannot beat it by more
    # than its sampling error (5 repetitions × 100 test datasets: standard error <= 0.5/sqrt(500) ≈ 0.022)
    ssp = rows[1]
    pi = float(ssp["own_notion"].split("Π = ")[1].split()[0])
    assert ssp["meta_classifier_accuracy"] <= pi + 4 * 0.5 / 500**0.5


@pytest.mark.slow
def test_compare_audits_never_refute_the_claims(adult_ok) -> None:  # noqa: ANN001
    res = compare.run_compare(quick=True, properties=["income"], epsilons=[1.0], mechanisms=["ssp-quantizer", "ding-laplace"])
    rows = [r for r in res["rows"] if r["mechanism"] != "None"]
    assert len(rows) == 2 and all(r["audit_epsilon_lower"] <= r["epsilon"] for r in rows), rows


def test_compare_writes_table_json_and_figure(smoke) -> None:  # noqa: ANN001
    res, out = smoke
    assert json.loads((out / "compare.json").read_text())["study"] == "compare"
    md = (out / "compare.md").read_text()
    assert "| income | SSP quantizer | 5 |" in md
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_rejects_unknown_names() -> None:
    with pytest.raises(InvalidParameterError, match="properties: unknown property"):
        compare.run_compare(properties=["age"])
    with pytest.raises(InvalidParameterError, match="mechanisms: unknown mechanism"):
        compare.run_compare(mechanisms=["nope"])
