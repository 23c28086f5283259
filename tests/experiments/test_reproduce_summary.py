"""The README's generated reproduction section (``benchmarks/bench_reproduce.py --readme``)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from distpriv.datasets.checkins import synthetic_checkins
from distpriv.errors import DataUnavailableError, InvalidParameterError
from distpriv.experiments import kawamoto_coupling, kawamoto_tupling
from distpriv.experiments import zhang_attribute as z

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))  # dev tooling, outside the package
import reproduce_summary as sm  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"


def _t3_rows(values: dict[tuple[str, float], tuple[float, float, float]]) -> dict:
    """A Table 3 result from {(mechanism, ε): (l2_error, paper, l2_error_expected)}; 95% interval ±10%."""
    rows = [{"mechanism": m, "epsilon": e, "l2_error": v, "paper": p, "l2_error_expected": x,
             "ci_low": 0.9 * v, "ci_high": 1.1 * v} for (m, e), (v, p, x) in values.items()]
    return {"rows": rows, "settings": {"reps": 50}, "notes": []}


def test_table3_deviations_and_claim():
    res = _t3_rows({("A", 0.2): (10.5, 10.0, 10.0), ("A", 1.0): (8.0, 10.0, 9.0), ("A", 5.0): (13.0, 10.0, 10.0),
                    ("B", 1.0): (1.0, 1.0, 1.0)})
    dev = sm.table3_deviations(res)
    assert dev["A"]["relative"] == pytest.approx([0.05, -0.2, 0.3])
    assert dev["A"]["expected_relative"] == pytest.approx([0.0, -0.1, 0.0])
    assert dev["A"]["paper_in_ci"] == [True, False, False]
    assert (dev["A"]["min"], dev["A"]["max"], dev["A"]["max_abs"]) == pytest.approx((-0.2, 0.3, 0.3))
    assert sm.table3_claim(res) == "2 of 4 rows within ±10% of the paper; beyond: A −20% to +30% (ε = 1/5)"
    one = _t3_rows({("G", 0.2): (85.5, 100.0, 99.0), ("G", 1.0): (20.0, 20.0, 20.0)})
    assert sm.table3_claim(one) == "1 of 2 rows within ±10% of the paper; beyond: G −14.5% at ε = 0.2"
    detail = sm.table3_detail(res, res)
    assert "| A | +5.0% / +0.0% | −20.0% * / −10.0% | +30.0% * / +0.0% | same |" in detail


def test_dirm_z_uses_laplace_standard_error():
    res = _t3_rows({("DirM (L)", 1.0): (7.5, 7.0, 7.2)})
    ((eps, rel, zval),) = sm.dirm_paper_z(res)
    assert eps == 1.0 and rel == pytest.approx(7.5 / 7.0 - 1)
    # |Y| ~ Exp(b): mean b, sd b; two independent 50-draw means
    assert zval == pytest.approx((7.5 - 7.0) / (7.2 * math.sqrt(2 / 50)))


def test_table4_deviation_picks_largest_gap():
    rows = [{"mechanism": "None", "epsilon": None, "delta": None, "attack_accuracy": 0.76, "paper": 0.75},
            {"mechanism": "X", "epsilon": 1.0, "delta": 1e-3, "attack_accuracy": 0.52, "paper": 0.50},
            {"mechanism": "Y", "epsilon": 5.0, "delta": 1e-2, "attack_accuracy": 0.70, "paper": 0.73}]
    d = sm.table4_deviation({"rows": rows})
    assert d["max_abs"] == pytest.approx(0.03) and d["mechanism"] == "Y" and d["difference"] == pytest.approx(-0.03)
    assert d["rows"] == 2 and d["none"] == 0.76 and d["none_paper"] == 0.75


def test_replace_section():
    text = f"intro\n{sm.BEGIN}\nold\n{sm.END}\nrest\n"
    new = sm.replace_section(text, f"{sm.BEGIN}\nnew\n{sm.END}\n")
    assert new == f"intro\n{sm.BEGIN}\nnew\n{sm.END}\nrest\n"
    with pytest.raises(InvalidParameterError, match="markers"):
        sm.replace_section("no markers", f"{sm.BEGIN}\n{sm.END}")
    with pytest.raises(InvalidParameterError, match="markers"):
        sm.replace_section(text + text, f"{sm.BEGIN}\n{sm.END}")
    with pytest.raises(InvalidParameterError, match="section"):
        sm.replace_section(text, "unmarked")


def test_readme_section_is_generated_from_every_command():
    text = README.read_text(encoding="utf-8")
    assert text.count(sm.BEGIN) == 1 and text.count(sm.END) == 1
    section = text[text.index(sm.BEGIN):text.index(sm.END)]
    for cmd in sm.COMMANDS:
        assert f"`{cmd.display()}`" in section
    assert "cores" in section and "load average" in section and sm.REGENERATE in section


@pytest.fixture(scope="module")
def small_outputs(adult_files, tmp_path_factory):
    from distpriv.experiments import chen_ohrimenko as co
    try:
        co.get_context(0, model_samples=300)
    except DataUnavailableError as exc:  # pragma: no cover - depends on the machine
        pytest.skip(f"Adult data unavailable: {exc}")
    kw = {"reps": 3, "model_samples": 300}
    t3 = co.table3(**kw)
    data = synthetic_checkins(400, 20, rng=1)
    sweeps = {"k_values": (10,), "eps_a_values": (10.0,), "radii": (0.02,), "asr_eps_a": (10.0,), "rr_eps": (2.0,),
              "pl_eps": (50.0,), "pg_sigma": (0.01,)}
    return {
        "table3": t3,
        "table3_paper": co.table3(**kw, paper_settings=True),
        "table4": co.table4(reps=2, n_shadow=20, n_test=20, model_samples=300),
        "all": {"results": [t3, co.figure3(**kw, delta_ps=(0.1, 0.2))]},
        "zhang": z.run_zhang_attribute(runs=5),
        "zhang_paper": z.run_zhang_attribute(runs=5, paper_settings=True),
        "tupling": kawamoto_tupling.run_kawamoto_tupling(data=data, show_progress=False, out=tmp_path_factory.mktemp("t"), **sweeps),
        "coupling": kawamoto_coupling.run_kawamoto_coupling(data=data, sizes=(50,), repeats=1, show_progress=False),
    }


def test_render_section_from_real_outputs(small_outputs):
    timings = {c.key: {"wall": 2.0, "cpu": 1.5} for c in sm.COMMANDS}
    machine = {"cores": 2, "cpu": "test cpu", "load_before": 1.25, "load_after": 1.5, "python": "3.x",
               "date": "2000-01-01", "commit": "abc"}
    text = sm.render_section(small_outputs, timings, machine)
    assert text.startswith(sm.BEGIN) and text.rstrip().endswith(sm.END)
    assert "2 cores (test cpu), load average 1.25 before, 1.50 after" in text
    assert "2.0 s (1.5 s CPU)" in text and "about 16 s here" in text
    # the claims are those of the outputs
    assert sm.table3_claim(small_outputs["table3"]) in text
    zp = {r["statistic"]: r for r in small_outputs["zhang_paper"]["rows"]}
    assert f"{zp['weight']['expected_abs_error']:.2f} / {zp['blood_pressure']['expected_abs_error']:.2f}" in text
    dev4 = sm.table4_deviation(small_outputs["table4"])
    assert f"within {dev4['max_abs']:.3f} of the paper" in text
    assert small_outputs["tupling"]["data"]["regions_note"] in text
    readme = f"head\n{sm.BEGIN}\n{sm.END}\ntail\n"
    assert sm.replace_section(readme, text).startswith("head\n" + sm.BEGIN)
    with pytest.raises(InvalidParameterError, match="missing"):
        sm.render_section({k: v for k, v in small_outputs.items() if k != "coupling"}, timings, machine)
