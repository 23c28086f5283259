"""The side-channel check's comparison, grid and timing rules, the declared-model synthetic table and the derived
``data_dependent`` list (fast, in-process; the end-to-end planted leaks are in test_audit_leaks.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from distpriv.cli.command import spec_release_args
from distpriv.errors import InvalidParameterError
from distpriv.release.public import DATA_DEPENDENT, MAY_DIFFER, PUBLIC_FIELDS, data_dependent_fields
from distpriv.release.sidechannel import (
    MIN_TIMING_RUNS,
    TIMING_THRESHOLD,
    PublicRun,
    check_runs,
    compare_runs,
    declared_table,
    off_grid,
    public_stderr,
    timing_difference,
)

G = 2.0**-10


def _payload(value: float, **extra: object) -> dict:
    return {"mechanism": "eigm", "statistics": [{"name": "mean:age", "spec": "mean:age", "value": value,
                                                 "noise_std": 1.5, "grid": G}],
            "provenance": {"time": extra.pop("time", "2026-01-01T00:00:00Z"), "release_id": extra.pop("rid", "r-1")},
            "data_dependent": [], **extra}


def _run(value: float, theta: float, *, md_extra: str = "", png: bytes = b"\x89PNG same", stderr: str = "",
         code: int = 0, payload: dict | None = None, files: dict[str, bytes] | None = None, **extra: object) -> PublicRun:
    doc = payload if payload is not None else _payload(value, **extra)
    md = (f"# report\n\n| mean:age | {value!r} | 1.5 |\n\nReleased {value:.4g} (id {doc['provenance']['release_id']}, "
          f"at {doc['provenance']['time']}); n = 300 records.{md_extra}\n")
    out = {"release.json": json.dumps(doc).encode(), "report.md": md.encode(),
           "report.html": f"<p>{value!r}</p>".encode(), "figures/f_theta.png": png}
    if files is not None:
        out.update(files)
    return PublicRun(theta, code, json.dumps(doc), stderr, out, 1.0)


def test_identical_apart_from_what_may_differ_passes() -> None:
    a = _run(45.625, 0.45, time="2026-01-01T00:00:00Z", rid="aaaa-1111")
    b = _run(39.0009765625, 0.55, time="2026-01-01T00:00:07Z", rid="bbbb-2222")
    assert compare_runs(a, b) == ([], [])


@pytest.mark.parametrize(("change", "named"), [
    ({"md_extra": " True mean 44.1."}, "report.md ("),             # a true value in the text (a caption)
    ({"png": b"\x89PNG other"}, "figures/f_theta.png (bytes"),      # a figure drawn from it
    ({"stderr": "distpriv: warning: high values"}, "stderr ("),    # a warning printed for some values only
    ({"code": 1}, "exit code (0 vs 1)"),
    ({"files": {"figures/extra.png": b"x"}}, "files (only with θ0: [], only with θ1: ['figures/extra.png'])"),
    ({"check": {"mean": 44.1}}, "release.json: check"),           # a true mean added to the JSON
])
def test_each_difference_beyond_may_differ_fails(change: dict, named: str) -> None:
    a = _run(45.625, 0.45)
    b = _run(39.0009765625, 0.55, **change)
    fail, dd = compare_runs(a, b)
    assert dd == [] and any(named in f for f in fail), fail


def test_curator_lines_never_reach_the_comparison() -> None:
    err = "curator: 2 rows dropped for missing values\ndistpriv: warning: public\ncurator: 118 kept\n"
    assert public_stderr(err) == "distpriv: warning: public"
    a = _run(45.625, 0.45, stderr=public_stderr(err))
    b = _run(40.0, 0.55, stderr=public_stderr(err.replace("118", "120").replace("2 rows", "0 rows")))
    assert compare_runs(a, b) == ([], [])


def test_short_display_strings_mask_only_their_own_numbers() -> None:
    """A display "40" must not eat the "40" of "400 records" (a literal replacement would, in one run only)."""
    pa, pb = _payload(40.0), _payload(41.5)
    pa["statistics"][0]["display"], pb["statistics"][0]["display"] = "40", "41.5 (± 2)"
    a = _run(0, 0.45, payload=pa, files={"report.md": b"n = 400 records; shown 40; also 40.0"})
    b = _run(0, 0.55, payload=pb, files={"report.md": b"n = 400 records; shown 41.5; also 41.5"})
    assert compare_runs(a, b) == ([], [])
    c = _run(0, 0.55, payload=pb, files={"report.md": b"n = 401 records; shown 41.5; also 41.5"})
    assert any(f.startswith("report.md (") for f in compare_runs(a, c)[0])


def test_a_rendering_of_a_may_differ_value_is_masked_only_where_it_renders_that_value() -> None:
    a = _run(45.625, 0.45)
    b = _run(39.0009765625, 0.55, md_extra=" 45.625")  # run B shows run A's value: not a rendering of B's own
    fail, _ = compare_runs(a, b)
    assert any(f.startswith("report.md (") for f in fail)


def test_off_grid_values_fail() -> None:
    k = 46720  # 45.625 = 46720 · 2^-10
    assert off_grid(_payload(k * G)) == []
    assert off_grid(_payload(k * G + 1e-9 * 44.1)) == ["statistics[0].value"]
    assert off_grid({"statistics": [{"value": [1.5, 2.0 + 1e-9], "grid": [0.5, 0.25]}]}) == ["statistics[0].value[1]"]
    assert off_grid({"statistics": [{"value": 44.123, "grid": None}]}) == []  # noiseless (Thm 5.4): no grid
    assert off_grid({"statistics": [{"value": 3.0, "grid": 3.0}]}) == ["statistics[0].value"]  # not a power of two
    a = _run(k * G, 0.45)
    b = _run(k * G + 4e-8, 0.55)
    fail, _ = compare_runs(a, b)
    assert "stdout: statistics[0].value off its grid (θ = 0.55)" in fail
    assert "release.json: statistics[0].value off its grid (θ = 0.55)" in fail


def test_timing_rule() -> None:
    # median paired relative difference: pairs (10, 12.5), (10, 12), (12, 13) -> 0.25, 0.2, 1/12 -> 0.2
    t = timing_difference([(10.0, 12.5), (10.0, 12.0), (12.0, 13.0)])
    assert t["median_relative_difference"] == pytest.approx(0.2) and t["flagged"]
    assert t["fastest_relative_difference"] == pytest.approx(0.2)
    # one disturbed pair of five does not move the median, but it moves neither minimum either
    quiet = timing_difference([(10.0, 10.5), (10.2, 10.0), (10.0, 19.0), (10.1, 10.3), (10.4, 10.2)])
    assert quiet["median_relative_difference"] == pytest.approx(0.2 / 10.1) and not quiet["flagged"]
    assert quiet["fastest_relative_difference"] == pytest.approx(0.0)
    # load slows the θ0 runs of two pairs; a leak adding 3 s to every θ1 run still shows both ways
    leak = timing_difference([(20.0, 13.0), (10.0, 13.2), (19.0, 13.1), (10.1, 13.0), (10.0, 13.3)])
    assert leak["median_relative_difference"] == pytest.approx(2.9 / 10.1) and leak["flagged"]
    assert leak["fastest_relative_difference"] == pytest.approx(0.3)
    few = timing_difference([(10.0, 30.0)] * (MIN_TIMING_RUNS - 1))
    assert not few["compared"] and not few["flagged"] and TIMING_THRESHOLD == 0.2


def test_from_data_differences_in_declared_fields_are_reported_not_failed() -> None:
    pa = _payload(45.625, data_dependent=["mechanism", "statistics[].noise_std"])
    pb = _payload(40.0, data_dependent=["mechanism", "statistics[].noise_std"])
    pb["mechanism"] = "daum"
    pb["statistics"][0]["noise_std"] = 2.5
    a, b = _run(0, 0.45, payload=pa), _run(0, 0.55, payload=pb)
    fail, dd = compare_runs(a, b, from_data=True)
    assert fail == [] and {"stdout: mechanism", "stdout: statistics[].noise_std", "release.json: mechanism"} <= set(dd)
    fail, dd = compare_runs(a, b, from_data=False)  # with a public model the same difference fails
    assert "stdout: mechanism" in fail and dd == []
    pb["statistics"][0]["spread"] = 1.0  # not declared: fails even with --model-from-data
    fail, _ = compare_runs(a, _run(0, 0.55, payload=pb), from_data=True)
    assert "stdout: statistics[].spread" in fail


def test_derived_data_dependent_list() -> None:
    doc = {
        "mechanism": "eigm", "mechanism_label": "EigM (G)", "guarantee": {"epsilon": 1.0},
        "statistics": [{"name": "a", "spec": "mean:a", "value": 1.0, "noise_std": 0.1, "grid": G, "interval": [0, 2],
                        "new_field": 3}],
        "noise": {"grid": G}, "randomness": "os", "spec": {"stats": []},
        "report": {"modelling": {"source": "data", "n": 300, "samples_per_theta": 60, "input_sha256": None,
                                 "note": "n = 300"},
                   "chosen": "eigm", "candidates": [{"mechanism": "eigm"}]},
        "data_dependent": [], "warnings": ["outside the guarantee"], "provenance": {"time": "t", "release_id": "r"},
    }
    got = data_dependent_fields(doc)
    assert got == ["mechanism", "mechanism_label", "guarantee", "statistics[].noise_std", "statistics[].grid",
                   "statistics[].new_field", "noise", "report.chosen", "report.candidates"]
    dropped = data_dependent_fields(doc, tuple(f for f in PUBLIC_FIELDS if not f.startswith("report.modelling.n")))
    assert "report.modelling.n" in dropped and "report.modelling.note" in dropped
    assert not any(f in MAY_DIFFER for f in got)


def test_derived_list_covers_the_hand_list_on_a_real_from_data_release(tmp_path: Path) -> None:
    """A --model-from-data --missing drop release: the derived list holds every field of the old hand list and
    the kept count (report.modelling.n / note)."""
    from distpriv.release import protect

    r = np.random.default_rng(1)
    flag = np.repeat([1, 0], 60)
    age = np.round(r.normal(40, 10, 120) + 8 * flag).astype(object)
    age[[3, 70]] = None  # two rows dropped: the kept count is the data's
    pd.DataFrame({"income": np.where(flag == 1, ">50K", "<=50K"), "age": age}).to_csv(tmp_path / "t.csv", index=False)
    res = protect(tmp_path / "t.csv", stats=["mean:age"], protect="income=>50K", pairs=[(0.4, 0.6)], epsilon=1.0,
                  delta=1e-3, model_from_data=True, missing="drop", samples=40, mechanism="expm-laplace", seed=1)
    doc = res.to_json()
    assert doc["report"]["modelling"]["n"] == 118
    dd = doc["data_dependent"]
    assert "report.modelling.n" in dd and "report.modelling.note" in dd
    assert all(any(f == d or f.startswith(d + ".") for d in dd) for f in DATA_DEPENDENT if f != "composition.guarantee")


def test_declared_table_hits_the_drawn_statistics(tmp_path: Path) -> None:
    """A table built from the declared model alone: ⌊θn⌉ protected rows, and mean/count equal to the draw x."""
    from distpriv.release import ReleaseSpec, prepare

    pd.DataFrame({"income": [">50K", "<=50K"] * 20, "age": range(40), "sex": ["F", "M"] * 20}).to_csv(
        tmp_path / "t.csv", index=False)
    theta = {p: {"mean": [40.0 + i, 120.0 - 10 * i], "covariance": [[4.0, 0.0], [0.0, 9.0]]}
             for i, p in enumerate(("0.3", "0.7"))}
    (tmp_path / "m.json").write_text(json.dumps({"statistics": ["mean:age", "count:sex=F"], "theta": theta}))
    spec = ReleaseSpec(data=tmp_path / "t.csv", stats=("mean:age", "count:sex=F"), protect="income=>50K",
                       pairs=((0.3, 0.7),), epsilon=1.0, delta=1e-3, model=tmp_path / "m.json")
    prep = prepare(spec)
    for t, seed in ((0.3, 0), (0.7, 1)):
        df = declared_table(prep, t, np.random.default_rng(seed))
        x = np.random.default_rng(seed).multivariate_normal(prep.declared.model.mean(t),  # type: ignore[union-attr]
                                                            prep.declared.model.covariance(t), method="eigh")  # type: ignore[union-attr]
        n = len(df)
        assert n == 240  # max(200, 2 × the largest declared count 120)
        assert (df["income"] == ">50K").sum() == round(t * n)
        assert df["age"].mean() == pytest.approx(x[0], abs=1e-9)
        assert (df["sex"] == "F").sum() == round(x[1])


def test_release_args_from_a_spec_and_runs_option(tmp_path: Path) -> None:
    from distpriv.release import ReleaseSpec

    (tmp_path / "pop.csv").write_text("income,age\n>50K,40\n")
    spec = ReleaseSpec(data=None, stats=("mean:age",), protect="income=>50K", pairs=((0.45, 0.55),), epsilon=1.0,
                       delta=1e-3, population=tmp_path / "pop.csv", samples=60)
    args = spec_release_args(spec)
    assert args[:6] == ["--stat", "mean:age", "--protect", "income=>50K", "--pairs", "0.45,0.55"]
    assert ["--population", str((tmp_path / "pop.csv").resolve())] == args[args.index("--population"):][:2]
    assert "--samples" in args and "--n" not in args and "--model-from-data" not in args
    with pytest.raises(InvalidParameterError, match="^side_channel_runs: "):
        check_runs(0)
    assert check_runs(5) == 5 and math.isfinite(TIMING_THRESHOLD)


def test_side_channel_section_lists_differences_and_run_times() -> None:
    from distpriv.release.audit_report import side_channel_text

    side = {"passed": False, "description": "Two synthetic tables …", "differences": ["report.md (line 3: 'a`b' vs 'c')"],
            "data_dependent_differences": [], "timing": timing_difference([(10.0, 13.0)] * 3)}
    txt = side_channel_text(side)
    assert "Result: **failed**" in txt and "- ``report.md (line 3: 'a`b' vs 'c')``" in txt
    assert "10.00/13.00, 10.00/13.00, 10.00/13.00" in txt and "+30.0%" in txt and "threshold ±20%" in txt


def _doc(value: float, half: float) -> dict:
    from distpriv.release.intervals import display

    return {"statistics": [{"name": "x", "spec": "mean:x", "value": value, "interval": [value - half, value + half],
                            "interval_level": 0.95, "display": display(value, half)}]}


def test_interval_warning_passages_are_renderings_of_the_values() -> None:
    """A warning the report adds only when the interval is wider than |value| (issue 21) is a rendering of the
    published value: removed in Markdown and HTML before the diff, while any other added text still differs."""
    from distpriv.release.public import MAY_DIFFER
    from distpriv.release.render import _interval_warning_lines, interval_warnings
    from distpriv.release.sidechannel import _renderings, _text_difference
    from distpriv.report import markdown_to_html

    a, b = _doc(0.01, 0.51), _doc(3.0, 0.51)
    assert interval_warnings(a) and not interval_warnings(b)

    def md(doc: dict, extra: str = "") -> str:
        return ("| x | " + doc["statistics"][0]["display"] + " |\n\nEach value is shown as value ± half-width."
                + "".join(_interval_warning_lines(doc)) + extra + "\n\n## Next\n\ntext\n")

    ra, rb = _renderings(a, list(MAY_DIFFER)), _renderings(b, list(MAY_DIFFER))
    assert _text_difference(md(a), md(b), ra, rb) is None
    assert _text_difference(markdown_to_html(md(a)), markdown_to_html(md(b)), ra, rb) is None
    leak = "\n\nThe true mean is high."
    assert _text_difference(md(a, leak), md(b), ra, rb) is not None
    assert _text_difference(markdown_to_html(md(a, leak)), markdown_to_html(md(b)), ra, rb) is not None
