"""``reproduce zhang-attribute``: the hospital rows and the school releases."""

from __future__ import annotations

import json
import math

import pytest
import typer
from typer.testing import CliRunner

from distpriv.calibration import classic_c
from distpriv.cli import zhang_attribute as cli_z
from distpriv.experiments import zhang_attribute as z


@pytest.fixture(scope="module")
def result() -> dict:
    return z.run_zhang_attribute(seed=0, runs=400, calibration="exact")


def test_hospital_rows(result: dict) -> None:
    rows = result["rows"]
    assert [(r["statistic"], r["calibration"]) for r in rows] == [
        (s, c) for c in ("classic", "exact") for s in ("weight", "blood_pressure", "temperature")]
    for r in rows:
        for key in ("statistic", "sensitivity", "conditional_variance", "noise_variance", "true_value", "mean_abs_error"):
            assert key in r
        # mean |Z| over runs vs σ·sqrt(2/π): standard error sd|Z|/sqrt(runs) with sd|Z| = σ sqrt(1 − 2/π)
        se = math.sqrt(r["noise_variance"] * (1 - 2 / math.pi) / 400)
        assert abs(r["mean_abs_error"] - r["expected_abs_error"]) < 5 * se + 1e-12
        assert r["exact_delta_at_epsilon"] <= 1e-3 * (1 + 1e-6)
    by = {(r["statistic"], r["calibration"]): r for r in rows}
    bp = by[("blood_pressure", "classic")]
    assert bp["sensitivity"] == pytest.approx(4.8) and bp["conditional_variance"] == pytest.approx(2.0)
    assert bp["noise_variance"] == pytest.approx((classic_c(1e-3) * 4.8) ** 2 - 2.0)
    assert by[("weight", "classic")]["sensitivity"] == pytest.approx(11.76)
    assert by[("temperature", "exact")]["noise_variance"] < by[("temperature", "classic")]["noise_variance"]
    assert by[("blood_pressure", "exact")]["exact_delta_at_epsilon"] == pytest.approx(1e-3, rel=1e-6)
    # paper's numbers are printed beside, untouched
    assert by[("weight", "classic")]["paper_mean_abs_error"] == 18.90
    assert result["hospital"]["dataset"]["n"] == 50


def test_school_releases(result: dict) -> None:
    first, second = result["school"]["releases"]
    assert first["noise_free"] and first["released"] == first["true_value"] and first["laplace_scale"] == 0
    assert first["paper_quilt"]["nearby"] == ["income", "sat"]
    assert second["paper_quilt_scale"] == pytest.approx(200 / (1 - second["paper_quilt_max_influence"]))
    assert second["laplace_scale"] == pytest.approx(min(second["fallback_scale"], second["paper_quilt_scale"]))


def test_same_seed_same_result() -> None:
    a = z.run_zhang_attribute(seed=3, runs=5)
    b = z.run_zhang_attribute(seed=3, runs=5)
    assert json.dumps(a, default=str) == json.dumps(b, default=str)
    assert [r["calibration"] for r in a["rows"]] == ["classic"] * 3


def test_cli_json_and_md() -> None:
    app = typer.Typer()
    cli_z.add_zhang_attribute_commands(app)

    @app.callback()
    def _main() -> None:
        pass

    runner = CliRunner()
    res = runner.invoke(app, ["zhang-attribute", "--format", "json", "--runs", "5", "--seed", "1"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["study"] == "zhang-attribute" and len(data["rows"]) == 3
    md = runner.invoke(app, ["zhang-attribute", "--runs", "5"])
    assert md.exit_code == 0 and "| statistic |" in md.stdout and "School" in md.stdout
    bad = runner.invoke(app, ["zhang-attribute", "--format", "xml"])
    assert bad.exit_code != 0
