"""Smoke and shape tests of ``distpriv reproduce chen-ohrimenko`` (Chen & Ohrimenko Section 6).

Runs use tiny repetition counts and grids so the file stays well under a
minute; the statistical checks use tolerances derived from those sizes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from distpriv.cli import chen_ohrimenko as cli_co
from distpriv.errors import DataUnavailableError, DistPrivError, InvalidParameterError
from distpriv.experiments import chen_ohrimenko as co

LABELS3 = ["ExpM (L)", "DirM (L)", "ExpM (G)", "EigM (G)", "DauM (G)", "GDP (L)", "GDP (G)"]


@pytest.fixture(scope="module")
def adult_ok():
    try:
        co.get_context(0, model_samples=300)
    except DataUnavailableError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"Adult data unavailable: {exc}")
    return True


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


def test_table3_is_deterministic_and_ignores_paper_values(adult_ok, monkeypatch):
    a = co.table3(reps=3, model_samples=300, epsilons=(1.0,))
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


# --------------------------------------------------------------------------- Figures
def test_figure2_smoke(adult_ok):
    res = co.figure2(reps=3, model_samples=300, epsilons={"a": (0.5, 2.0), "b": (1.0, 4.0), "c": (0.3,)})
    assert res["figure"] == 2 and set(res["panels"]) == {"a", "b", "c"}
    a = res["panels"]["a"]
    assert a["property"] == "income" and res["panels"]["b"]["property"] == "workclass"
    assert set(a["series"]) == {"ExpM (L)", "DirM (L)", "ExpM (G)", "EigM (G)", "DauM (G)"}
    for s in a["series"].values():
        assert len(s["l2_error"]) == 2 and len(s["l2_error_exact"]) == 2
        assert s["l2_error"][0] >= s["l2_error"][1]  # common random numbers: error falls with ε


def test_figure3_smoke(adult_ok):
    res = co.figure3(reps=3, model_samples=300, delta_ps=(0.1, 0.3))
    assert res["figure"] == 3 and set(res["panels"]) == {"a", "b"}
    s = res["panels"]["a"]["series"]
    assert set(s) == {"ExpM (G)", "EigM (G)", "DauM (G)", "DP (L)", "DP (G)"}
    # DP baselines do not depend on Δp (same noise stream for both points)
    assert s["DP (G)"]["l2_error"][0] == pytest.approx(s["DP (G)"]["l2_error"][1])
    assert res["panels"]["a"]["paper_crossover"] == 0.12


def test_figure4_smoke(adult_ok):
    res = co.figure4(reps=2, model_samples=300, delta_ps=(0.04, 0.4), epsilons=(0.5, 5.0), n_shadow=40, n_test=60)
    a = res["panels"]["a"]["series"]
    assert set(a) == {"income", "workclass"} and len(a["income"]["attack_accuracy"]) == 2
    n = 2 * 60
    assert a["income"]["attack_accuracy"][1] > 0.5 + 4 * math.sqrt(0.25 / n)  # Δp = 0.4 leaks
    for panel in ("b", "c"):
        s = res["panels"][panel]["series"]
        assert set(s) == {"ExpM (G)", "EigM (G)", "DauM (G)", "GDP (L)", "GDP (G)"}
        assert all(0 <= v <= 1 for v in s["GDP (G)"]["attack_accuracy"])


def test_figure5_smoke(adult_ok):
    res = co.figure5(model_samples=300)
    assert res["figure"] == 5 and len(res["components"]) == 5
    for c in res["components"]:
        assert set(c["fits"]) == {"0.45", "0.55"}
        for fit in c["fits"].values():
            assert sum(fit["histogram"]) == 300 and fit["variance"] > 0
    assert res["paper_comparison"]["var_female_0.45"]["paper"] == 18.31


def _legend_texts(fig) -> list[str]:
    out = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    for ax in fig.axes:
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return out


def test_figure2_panels_have_distinct_titles_legend_and_zero_marks(adult_ok):
    import matplotlib.pyplot as plt

    res = co.figure2(reps=3, model_samples=300, epsilons={"a": (0.5, 10.0), "b": (1.0, 10.0), "c": (0.1, 10.0)})
    titles = [res["panels"][p]["title"] for p in "abc"]
    assert len(set(titles)) == 3 and [t[:3] for t in titles] == ["(a)", "(b)", "(c)"]
    assert "ε ∈ [1, 10]" in titles[1] and "ε ∈ [0.1, 10]" in titles[2]
    fig = co.build_figure(res)
    try:
        assert [ax.get_title() for ax in fig.axes] == titles
        legend = _legend_texts(fig)
        assert {"ExpM (L)", "DirM (L)", "ExpM (G)", "EigM (G)", "DauM (G)"} <= set(legend)
        zero_points = sum(
            int(np.sum(np.asarray(v) == 0)) for p in res["panels"].values() for s in p["series"].values()
            for k, v in s.items() if k.startswith("l2_error")
        )
        triangles = sum(len(line.get_xdata()) for ax in fig.axes for line in ax.get_lines()
                        if line.get_marker() == "v")
        assert zero_points > 0  # DauM (G) needs no noise at ε = 10 (Thm 5.4)
        assert triangles == zero_points  # every zero-error point is drawn on the bottom edge
        assert any("zero error" in t for t in legend)
        assert any(co.ZERO_NOTE in t.get_text() for t in fig.texts)
    finally:
        plt.close(fig)


def test_mark_zeros_draws_one_triangle_per_zero():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        assert not co.render._mark_zeros(ax, [1, 2, 3], [1.0, 0.5, 0.2], "k", True)
        assert co.render._mark_zeros(ax, [1, 2, 3], [1.0, 0.0, 0.0], "k", True)
        (line,) = ax.get_lines()
        assert list(line.get_xdata()) == [2.0, 3.0] and line.get_marker() == "v"
    finally:
        plt.close(fig)


def test_every_figure_has_title_panel_labels_and_legend(adult_ok):
    import matplotlib.pyplot as plt

    results = [
        co.figure3(reps=2, model_samples=300, delta_ps=(0.02, 0.3)),
        co.figure4(reps=2, model_samples=300, delta_ps=(0.1,), epsilons=(1.0,), n_shadow=20, n_test=20),
        co.figure5(model_samples=300),
    ]
    for res in results:
        fig = co.build_figure(res)
        try:
            assert fig._suptitle is not None and f"Figure {res['figure']}" in fig._suptitle.get_text()
            titles = [ax.get_title() for ax in fig.axes]
            assert len(set(titles)) == len(titles)
            assert [t[:3] for t in titles] == [f"({chr(ord('a') + i)})" for i in range(len(titles))]
            assert _legend_texts(fig)
        finally:
            plt.close(fig)


def test_write_report(adult_ok, tmp_path):
    res = [co.figure5(model_samples=300), co.table3(reps=3, model_samples=300, epsilons=(1.0,))]
    files = co.write_report(res, tmp_path, {"figure 5": 0.1})
    names = {p.name for p in files}
    assert {"chen_ohrimenko_figure5.png", "chen_ohrimenko.md", "chen_ohrimenko.json"} <= names
    assert (tmp_path / "chen_ohrimenko_figure5.png").read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "chen_ohrimenko.md").read_text()
    assert "Table 3" in md and "Figure 5" in md


# --------------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def runner_app():
    import typer
    from typer.testing import CliRunner

    root = typer.Typer()
    reproduce = typer.Typer()
    root.add_typer(reproduce, name="reproduce")
    cli_co.register(reproduce)
    return CliRunner(), root


def test_cli_table3_json(adult_ok, runner_app):
    runner, app = runner_app
    res = runner.invoke(app, ["reproduce", "chen-ohrimenko", "--table", "3", "--format", "json", "--reps", "2"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["study"] == "chen-ohrimenko" and payload["table"] == 3
    assert {"mechanism", "epsilon", "l2_error"} <= set(payload["rows"][0])


def test_cli_figure_writes_png(adult_ok, runner_app, tmp_path):
    runner, app = runner_app
    res = runner.invoke(app, ["reproduce", "chen-ohrimenko", "--figure", "5", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "chen_ohrimenko_figure5.png").is_file()
    assert "Figure 5" in res.stdout


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--table", "7"], "--table"),
        (["--figure", "9"], "--figure"),
        (["--table", "3", "--figure", "2"], "exactly one"),
        ([], "exactly one"),
        (["--table", "3", "--calibration", "loose"], "calibration"),
        (["--table", "3", "--format", "xml"], "--format"),
        (["--table", "3", "--reps", "1"], "reps"),
        (["--table", "3", "--seed", "-1"], "seed"),
    ],
)
def test_cli_bad_input(runner_app, args, match):
    runner, app = runner_app
    res = runner.invoke(app, ["reproduce", "chen-ohrimenko", *args])
    assert res.exit_code != 0
    assert isinstance(res.exception, DistPrivError)
    assert match in str(res.exception)


def test_function_bad_input():
    with pytest.raises(InvalidParameterError, match="reps"):
        co.table3(reps=1)
    with pytest.raises(InvalidParameterError, match="calibration"):
        co.table4(calibration="tight")
    with pytest.raises(InvalidParameterError, match="--table"):
        co.run(tables=(5,))


def test_reference_data_is_complete():
    assert len(co.PAPER_TABLE3) == 21 and len(co.PAPER_TABLE4) == 27
    assert np.isclose(co.PAPER_TABLE4[("DauM (G)", 5.0, 1e-2)], 0.744)
    assert co.pair_for(0.1) == (0.45, 0.55)


def test_context_cache_is_bounded(adult_ok):
    ctx = co.get_context(0, model_samples=300)
    assert co.get_context(0, model_samples=300) is ctx  # cached
    assert co.context._build_context.cache_info().maxsize == co.CONTEXT_CACHE_SIZE
    for seed in range(1, co.CONTEXT_CACHE_SIZE + 1):  # evicts the least recently used context
        co.get_context(seed, model_samples=300)
    assert co.context._build_context.cache_info().currsize == co.CONTEXT_CACHE_SIZE
    assert co.get_context(0, model_samples=300) is not ctx


def test_mechanism_rows_come_from_the_metadata():
    """The baseline rows are read from distpriv.mechanisms.metadata, in the paper's order."""
    from distpriv.experiments.chen_ohrimenko import settings

    assert [n for n, _ in co.TABLE3_MECHANISMS] == ["expm-laplace", "dirm-laplace", "expm-gauss", "eigm", "daum",
                                                   "groupdp-laplace", "groupdp-gauss"]
    assert [n for n, _ in co.GAUSSIAN_EVM] == ["expm-gauss", "eigm", "daum"]
    assert settings.GROUP_DP == ("groupdp-laplace", "groupdp-gauss")
    assert settings.PLAIN_DP == ("dp-laplace", "dp-gauss")
    assert [lab for _, lab in co.DP_MECHANISMS] == ["DP (L)", "DP (G)"]
