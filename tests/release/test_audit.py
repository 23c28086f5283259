"""``distpriv audit`` / ``audit-local`` / ``release --audit`` on dp.audit, and the side-channel check.

The commands run through the console script's entry point in this process (:func:`_cli.run_in_process`: a fresh
process only added its imports, ~2 s CPU each; the side-channel check still runs its synthetic releases as fresh
processes); ``test_audit_trials_error_names_the_minimum`` runs the console script itself, so its one-line error and
exit status are checked end to end."""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from _cli import run_in_process
from distpriv.auditing import min_evaluation_size
from distpriv.calibration import gaussian_epsilon
from distpriv.errors import InvalidParameterError
from distpriv.release.audit import (
    EXIT_REFUTED,
    auditable_mechanism,
    check_audit_options,
    local_inputs,
    local_mechanism,
)
from distpriv.release.audit_report import audit_figures, audit_progress
from test_release import BASE, run

DECL = ["--stat", "mean:age", *BASE]


def _model_file(path: Path, variance: float, pairs: tuple[str, ...] = ("0.45", "0.55")) -> Path:
    theta = {p: {"mean": [float(i)], "covariance": [[variance]]} for i, p in enumerate(pairs)}
    path.write_text(json.dumps({"statistics": ["mean:age"], "theta": theta}))
    return path


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("audit")
    r = np.random.default_rng(0)
    flag = np.repeat([1, 0], 150)
    pd.DataFrame({"income": np.where(flag == 1, ">50K", "<=50K"), "age": np.round(r.normal(40, 10, 300) + 8 * flag),
                  "hours": np.round(r.normal(40, 5, 300))}).to_csv(d / "t.csv", index=False)
    _model_file(d / "loose.json", 4.0)   # the curator's declared f_θ: variance 4
    _model_file(d / "truth.json", 0.04)  # the auditor's truth: variance 0.04
    return d


def test_audit_cli_model_from_data(table: Path) -> None:
    res = run_in_process(["audit", "t.csv", "--stat", "mean:age", "--stat", "mean:hours", *BASE, "--samples", "100",
                          "--model-from-data", "--mechanism", "expm-laplace", "--trials", "1000", "--format", "json",
                          "--side-channel-runs", "1", "--out", "audit_out"], table,
                         fresh_warnings=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""  # no progress bar when stderr is not a terminal
    doc = json.loads(res.stdout)
    assert doc["mechanism"] == "expm-laplace" and doc["claimed"] == {"epsilon": 1.0, "delta": 1e-3}  # Laplace topped up to a proven (ε, δ): covariances differ
    assert doc["refuted"] is False and doc["trials"] == 1000 and doc["confidence"] == 0.95
    [pair] = doc["pairs"]
    assert pair["pair"] == [0.45, 0.55] and pair["scorer"] == "exact-mixture"  # empirical model + Laplace noise
    assert 0.0 <= pair["epsilon_lower"] <= 1.0 and pair["epsilon_lower"] == doc["epsilon_lower"]
    assert pair["split"] == {"train": 0, "selection": 200, "evaluation": 800}
    best = pair["best_test"]
    assert best["negatives"] == best["positives"] == 800
    assert "statistics" not in doc  # an audit releases nothing
    side = doc["side_channel"]
    assert side["passed"] and side["differences"] == [] and side["runs"] == 1, side
    # the noise scale is modelled from each synthetic table: a data-dependent difference, derived from the diff and
    # declared by the payload (data_dependent_fields), so reported and not failed
    assert "stdout: statistics[].noise_std" in side["data_dependent_differences"]
    assert "release.json: statistics[].noise_std" in side["data_dependent_differences"]
    out = table / "audit_out"
    assert json.loads((out / "audit.json").read_text())["pairs"][0]["epsilon_lower"] == pair["epsilon_lower"]
    md = (out / "report.md").read_text()
    assert "## Scope" in md and "## Side-channel check" in md and "figures/audit_roc_1.png" in md
    assert "TPR ≤ min(e^ε FPR + δ, 1 − e^−ε (1 − δ − FPR))" in md  # the claimed region, stated
    assert (out / "figures" / "audit_roc_1.png").read_bytes().startswith(b"\x89PNG")
    assert 'id="fig-audit_roc_1"' in (out / "report.html").read_text()


def test_audit_cli_refutes_an_overclaiming_declared_model(table: Path) -> None:
    """EigM calibrated on variance 4, audited against the true variance 0.04: true ε = 1.72 > 1, refuted (exit 3);
    audited against its own model the claim is exactly tight and stands (exit 0)."""
    args = ["audit", "t.csv", *DECL, "--model", "loose.json", "--mechanism", "eigm", "--side-channel-runs", "1",
            "--trials", "50000", "--format", "json"]
    bad = run_in_process([*args, "--audit-model", "truth.json"], table, fresh_warnings=True)
    assert bad.returncode == EXIT_REFUTED == 3, bad.stderr
    assert bad.stderr.count("\n") == 1 and "the claim is refuted" in bad.stderr
    doc = json.loads(bad.stdout)
    [pair] = doc["pairs"]
    assert doc["refuted"] and pair["refuted"] and 1.0 < pair["epsilon_lower"] <= pair["exact_epsilon"]
    assert "audit model file" in doc["auditor_model"] and "truth.json" not in bad.stdout  # no user path published
    # cross-check the exact ε: the output is N(μ_θ, 0.04 + σ_Z²) with σ_Z from the mechanism calibrated on variance 4
    loose = dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[4.0]], 1: [[4.0]]})
    sz2 = float(dp.calibrate("eigm", loose, [(0, 1)], epsilon=1.0, delta=1e-3).noise_covariance[0, 0])
    assert pair["exact_epsilon"] == pytest.approx(gaussian_epsilon(1.0 / math.sqrt(0.04 + sz2), 1e-3), rel=1e-9)
    assert pair["exact_epsilon"] == pytest.approx(1.72, abs=0.01)

    ok = run_in_process([*args[:-2], "--trials", "3000", "--format", "json"], table, fresh_warnings=True)
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert not doc["refuted"] and doc["pairs"][0]["exact_epsilon"] == pytest.approx(1.0, abs=1e-6)
    assert doc["auditor_model"] == "the model the release uses"


@pytest.mark.parametrize(("extra", "message"), [
    (["--trials", "5"], "--trials: 5 per secret is too few"),
    (["--trials", "0"], "--trials: must be an integer >= 1"),
    (["--confidence", "1.5"], "--confidence: must be in (0, 1)"),
    (["--audit-model", "other.json"], "--audit-model: other.json: no θ = 0.55 declared"),
])
def test_audit_cli_bad_input(table: Path, extra: list[str], message: str) -> None:
    """In-process (the refusal comes before any computing; the console script's own one-line error and exit
    status are checked by test_audit_trials_error_names_the_minimum)."""
    _model_file(table / "other.json", 1.0, ("0.45", "0.6"))
    res = run_in_process(["audit", "t.csv", *DECL, "--model", "loose.json", "--mechanism", "eigm", *extra,
                          "--out", "bad_out"], table)
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert not (table / "bad_out").exists()


def test_audit_trials_error_names_the_minimum(table: Path) -> None:
    res = run(["audit", "t.csv", *DECL, "--model", "loose.json", "--mechanism", "eigm", "--trials", "14"], table)
    assert res.returncode == 2
    need = min_evaluation_size(1.0, 1e-3, 0.95)
    assert need == 12 and "need trials >= 15" in res.stderr and f"needs >= {need} releases" in res.stderr


def test_release_with_audit_section(table: Path) -> None:
    res = run_in_process(["release", "t.csv", *DECL, "--model", "loose.json", "--mechanism", "eigm", "--seed", "1",
                          "--audit", "--trials", "2000", "--format", "json", "--out", "rel_out"], table,
                         fresh_warnings=True)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["audit"]["pairs"][0]["trials"] == 2000 and not doc["audit"]["refuted"]
    assert doc["audit"]["claimed"]["epsilon"] == doc["guarantee"]["epsilon"]
    md = (table / "rel_out" / "report.md").read_text()
    assert "## Audit" in md and "figures/audit_roc_1.png" in md and (table / "rel_out" / "figures" / "audit_roc_1.png").is_file()
    assert "audit" not in json.loads((table / "rel_out" / "release.json").read_text())
    # the audit would put the private rows into a public report: refused, nothing written
    bad = run_in_process(["release", "t.csv", *DECL, "--model-from-data", "--samples", "50", "--audit", "--out",
                          "rel_bad"], table, fresh_warnings=True)
    assert bad.returncode == 2 and "--audit: not with --model-from-data" in bad.stderr
    assert not (table / "rel_bad").exists()


def test_audit_local_cli(tmp_path: Path) -> None:
    lam = ["--lambda0", "0.7,0.1,0.1,0.1", "--lambda1", "0.1,0.7,0.1,0.1"]
    res = run_in_process(["audit-local", "--randomized-response", "4,1", *lam, "--trials", "20000", "--format", "json",
                          "--out", "loc"], tmp_path, fresh_warnings=True)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    # exact ε of RR(4, ε=1) on this pair at δ = 0: max over outputs of |ln(A#λ1[y]/A#λ0[y])|
    e = math.e
    p0 = np.array([0.7 * e + 0.3, 0.1 * e + 0.9, 0.1 * e + 0.9, 0.1 * e + 0.9]) / (e + 3)
    p1 = p0[[1, 0, 2, 3]]
    exact = float(np.max(np.abs(np.log(p1 / p0))))
    assert doc["exact_epsilon"] == pytest.approx(exact, rel=1e-9) and doc["claimed"]["epsilon"] == pytest.approx(exact)
    assert doc["scorer"] == "exact-finite" and 0.3 < doc["epsilon_lower"] <= exact and not doc["refuted"]
    md = (tmp_path / "loc" / "report.md").read_text()
    assert "exact ε at δ = 0" in md and "figures/audit_roc_1.png" in md

    over = tmp_path / "m.json"
    over.write_text(json.dumps({"matrix": [[0.9, 0.1], [0.1, 0.9]]}))
    res = run_in_process(["audit-local", "--matrix", "m.json", "--lambda0", "1,0", "--lambda1", "0,1", "--epsilon", "1",
                          "--trials", "2000", "--format", "json"], tmp_path, fresh_warnings=True)
    assert res.returncode == 3 and "refuted" in res.stderr  # true ε = ln 9 ≈ 2.2 > 1
    assert json.loads(res.stdout)["exact_epsilon"] == pytest.approx(math.log(9.0))

    bad = run_in_process(["audit-local", "--matrix", "m.json", "--lambda0", "1,0,0", "--lambda1", "0,1"], tmp_path,
                         fresh_warnings=True)
    assert bad.returncode == 2 and "--lambda0: expected 2 probabilities" in bad.stderr


def test_local_cli_helpers_reject_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="exactly one"):
        local_mechanism(None, None, None)
    with pytest.raises(InvalidParameterError, match="^randomized_response: "):
        local_mechanism(None, "1,2", None)
    bad = tmp_path / "bad.json"
    bad.write_text("[[0.5, 0.6], [0.5, 0.5]]")
    with pytest.raises(InvalidParameterError, match="^matrix: "):
        local_mechanism(bad, None, None)
    mech, desc = local_mechanism(None, "3,0.5", 2)
    assert "tupled with 2" in desc and mech.n_inputs == 3
    with pytest.raises(InvalidParameterError, match="must differ"):
        local_inputs(mech, "0.2,0.3,0.5", "0.2,0.3,0.5")
    with pytest.raises(InvalidParameterError, match="^confidence: "):
        check_audit_options(100, float("nan"))
    with pytest.raises(InvalidParameterError, match="^trials: "):
        check_audit_options(True, 0.9)


def test_auditable_mechanism_uses_the_exact_scorer_where_it_can() -> None:
    model = dp.GaussianModel(means={0.45: [0.0], 0.55: [1.0]}, covariances={0.45: [[1.0]], 0.55: [[1.0]]})
    from distpriv.release.declared import declared_diagnostics
    from distpriv.release.selection import select_mechanism

    diag = declared_diagnostics(model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    sel = select_mechanism(model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3, mechanism="eigm", diagnostics=diag)
    mech, claim = auditable_mechanism(sel.chosen)
    assert mech is sel.chosen.base and claim is sel.chosen.guarantee
    r = dp.audit(mech, model, (0.45, 0.55), trials=2000, rng=0, claim=claim)
    assert r.scorer == "exact-gaussian" and r.exact_epsilon == pytest.approx(1.0, abs=1e-6)


def test_audit_figure_shows_log_roc_region_and_bound() -> None:
    model = dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[1.0]], 1: [[1.0]]})
    mech = dp.calibrate("eigm", model, [(0, 1)], epsilon=1.0, delta=1e-3)
    r = dp.audit(mech, model, (0, 1), trials=2000, rng=0)
    [fig] = audit_figures([r])
    ax = fig.image.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "false-positive rate" and ax.get_ylabel() == "true-positive rate"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lab.startswith("claimed region (ε = 1") for lab in labels)
    assert any(lab.startswith("audit bound ε ≥") for lab in labels)
    # the bound line passes through e^{ε_lower}·x + δ
    line = next(ln for ln in ax.get_lines() if ln.get_linestyle() == "--")
    x, y = line.get_data()
    k = len(x) // 2
    assert y[k] == pytest.approx(math.exp(r.epsilon_lower) * x[k] + 1e-3, rel=1e-9)


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quiet)
    with audit_progress("auditing") as tick:
        tick(0.5)
        tick(1.0)
    assert quiet.getvalue() == ""
    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.delenv("TERM", raising=False)
    with audit_progress("auditing") as tick:
        tick(0.5)
        tick(1.0)
    assert "auditing" in tty.getvalue()
