"""Audits: the empirical lower bound on ε from attack accuracy (distpriv.release.audit) and ``distpriv audit``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import distpriv as dp
from distpriv import attacks
from distpriv.errors import InvalidParameterError
from distpriv.release import clopper_pearson_lower, epsilon_lower_bound, run_audit
from test_release import BASE, run


def test_clopper_pearson_lower_matches_beta_quantile() -> None:
    assert clopper_pearson_lower(900, 1000, 0.95) == pytest.approx(stats.beta.ppf(0.05, 900, 101))
    assert clopper_pearson_lower(0, 10, 0.95) == 0.0
    # exact coverage at the boundary: P(Binom(n, a_lo) >= k) = 1 − confidence
    a = clopper_pearson_lower(70, 100, 0.9)
    assert stats.binom.sf(69, 100, a) == pytest.approx(0.1, rel=1e-6)
    with pytest.raises(InvalidParameterError):
        clopper_pearson_lower(11, 10, 0.95)
    with pytest.raises(InvalidParameterError):
        clopper_pearson_lower(1, 10, 1.0)


def test_epsilon_lower_bound_formula() -> None:
    a = clopper_pearson_lower(900, 1000, 0.95)
    assert epsilon_lower_bound(900, 1000, 0.0, 0.95) == pytest.approx(math.log(a / (1 - a)))
    assert epsilon_lower_bound(900, 1000, 1e-3, 0.95) == pytest.approx(math.log((a - 1e-3) / (1 - a)))
    assert epsilon_lower_bound(500, 1000, 1e-3) == 0.0  # chance accuracy proves nothing
    assert epsilon_lower_bound(1000, 1000, 0.0) > 5.0
    # the bound inverts a <= (e^ε + δ)/(1 + e^ε): at the claimed ε's maximal accuracy, huge samples give ≈ ε
    eps, delta, trials = 1.0, 1e-3, 10**8
    acc = (math.exp(eps) + delta) / (1 + math.exp(eps))
    assert epsilon_lower_bound(round(acc * trials), trials, delta) == pytest.approx(eps, abs=2e-3)


def _setup(shift: float) -> tuple[dp.GaussianModel, attacks.Sampler]:
    cov = np.array([[1.0, 0.3], [0.3, 1.0]])
    means = {0.45: np.zeros(2), 0.55: np.array([shift, 0.0])}
    return dp.GaussianModel(means, {0.45: cov, 0.55: cov}), attacks.gaussian_sampler(means, cov)


def test_audit_refutes_noiseless_and_accepts_calibrated_mechanism() -> None:
    model, sampler = _setup(4.0)
    none = _Zero()
    res = run_audit(sampler, none, [(0.45, 0.55)], gaussian_model=model, claimed_epsilon=0.5, claimed_delta=1e-3,
                    reps=5, n_shadow=100, n_test=200, rng=0)
    assert res.best.accuracy > 0.95 and not res.consistent  # no noise: the claim of ε = 0.5 is refuted
    assert res.empirical_epsilon > 0.5
    lr = next(r for r in res.rows if r.attack == "likelihood-ratio")
    assert lr.trials == 1000 and lr.correct == round(lr.accuracy * 1000)

    mech = dp.calibrate("expm-gauss", model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    res = run_audit(sampler, mech, [(0.45, 0.55)], gaussian_model=model, claimed_epsilon=1.0, claimed_delta=1e-3,
                    reps=5, n_shadow=100, n_test=200, rng=1)
    assert res.consistent and res.empirical_epsilon <= 1.0
    # exact Bayes accuracy Φ(D/2) of the likelihood-ratio attacker is within the claim
    assert attacks.gaussian_lr_accuracy(model.mean(0.45), model.mean(0.55), model.covariance(0.45),
                                        mech.noise_covariance) <= res.max_accuracy_allowed
    assert res.to_dict()["setting"]["bonferroni_tests"] == 3
    with pytest.raises(InvalidParameterError, match="even"):
        run_audit(sampler, mech, [(0.45, 0.55)], gaussian_model=model, claimed_epsilon=1.0, claimed_delta=1e-3,
                  reps=1, n_test=201)


class _Zero:
    """A 'mechanism' that adds no noise."""

    noise_covariance = np.zeros((2, 2))

    def release_batch(self, xs: np.ndarray, rng: object = None) -> np.ndarray:
        return np.asarray(xs, dtype=float)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("audit")
    r = np.random.default_rng(0)
    flag = np.repeat([1, 0], 150)
    import pandas as pd

    pd.DataFrame({"income": np.where(flag == 1, ">50K", "<=50K"), "age": np.round(r.normal(40, 10, 300) + 8 * flag),
                  "hours": np.round(r.normal(40, 5, 300))}).to_csv(d / "t.csv", index=False)
    return d


def test_audit_cli(table: Path) -> None:
    res = run(["audit", "t.csv", "--stat", "mean:age", "--stat", "mean:hours", *BASE, "--samples", "200",
               "--model-from-data", "--mechanism", "expm-laplace", "--reps", "4", "--datasets", "100",
               "--format", "json", "--out", "audit_out"], table)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["mechanism"] == "expm-laplace"
    assert doc["claimed"]["epsilon"] == 1.0
    assert {r["attack"] for r in doc["attacks"]} == {"meta-classifier", "adaptive", "likelihood-ratio"}
    assert 0.0 <= doc["empirical_epsilon"] <= 1.0 and doc["consistent"]
    assert doc["best_attack"] in {"meta-classifier", "adaptive", "likelihood-ratio"}
    for r in doc["attacks"]:
        assert r["trials"] == 400 and r["accuracy_undefended"] >= r["accuracy"] - 0.1
    assert (table / "audit_out" / "report.html").is_file() and (table / "audit_out" / "audit.json").is_file()
    assert "statistics" not in doc  # an audit releases nothing
    assert "tests the noise" in doc["scope"] and "side-channel" in doc["scope"]
    side = doc["side_channel"]
    assert side["passed"] and side["differences"] == [] and not side["markdown_compared"]
    assert "statistics[].noise_std" in side["data_dependent_differences"]  # model-from-data: declared, not hidden
    md = (table / "audit_out" / "report.md").read_text()
    assert "## Scope" in md and "## Side-channel check" in md


def test_side_channel_check_catches_a_data_derived_field(table: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload that leaks a count of the private table (the bug issue 10 found) fails the check;
    the unmodified payload passes. The population makes every other field a function of public inputs."""
    import pandas as pd

    from distpriv.release import (
        ReleaseSpec,
        prepare,
        public,
        select,
        side_channel_check,
        sidechannel,
    )

    r = np.random.default_rng(5)
    flag = r.random(4000) < 0.5
    pd.DataFrame({"income": np.where(flag, ">50K", "<=50K"), "age": np.round(r.normal(40, 10, 4000) + 8 * flag),
                  "hours": np.round(r.normal(40, 5, 4000))}).to_csv(table / "pop.csv", index=False)
    spec = ReleaseSpec(data=table / "t.csv", stats=("mean:age",), protect="income=>50K", pairs=((0.45, 0.55),),
                       epsilon=1.0, delta=1e-3, population=table / "pop.csv", samples=60, mechanism="expm-laplace")
    prep = prepare(spec)
    sel = select(prep)
    clean = side_channel_check(prep, sel)
    assert clean.passed and clean.markdown_compared and clean.data_dependent_differences == ()
    original = public.public_payload

    def leaky(result: object) -> dict:
        doc = original(result)  # type: ignore[arg-type]
        doc["protected_records"] = int(result.prepared.predicate.mask(result.prepared.data.frame).sum())  # type: ignore[attr-defined]
        return doc

    monkeypatch.setattr(public, "public_payload", leaky)
    monkeypatch.setattr(sidechannel, "public_context", lambda res: public.PublicContext(
        leaky(res), None, None, None, res.prepared.spec.pairs, 1.0, 1e-3, "exact", res.prepared.spec.names, 0))
    bad = side_channel_check(prep, sel)
    assert not bad.passed and bad.differences == ("protected_records",)
