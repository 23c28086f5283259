"""Issue 24 item 2: one library function runs a release for protect() and ``distpriv release``."""

from __future__ import annotations

import json

import pytest

from _cli import run_in_process
from distpriv.cli.arguments import render_error
from distpriv.errors import InvalidParameterError
from distpriv.release import protect
from distpriv.release.run import check_run, run_release
from distpriv.release.spec import ReleaseSpec
from test_input_files import KNOWN, PROTECT, ROWS, _write


def _spec(tmp_path, **kw):  # noqa: ANN001, ANN202
    data = _write(tmp_path / "d.csv", ROWS)
    pop = _write(tmp_path / "pop.csv", ROWS * 5)
    base = dict(data=data, stats=("mean:body_mass_g",), protect=PROTECT, pairs=((0.3, 0.4),), epsilon=1.0,
                delta=1e-3, population=pop, missing="drop", n=len(KNOWN), samples=40, seed=3)
    base.update(kw)
    return ReleaseSpec(**base)


def test_protect_and_the_cli_write_the_same_release(tmp_path) -> None:  # noqa: ANN001
    spec = _spec(tmp_path)
    res = protect(str(spec.data), stats=list(spec.stats), protect=PROTECT, pairs=[(0.3, 0.4)], epsilon=1.0,
                  delta=1e-3, population=str(spec.population), missing="drop", n=len(KNOWN), samples=40, seed=3,
                  out=tmp_path / "lib")
    assert sorted(p.name for p in (tmp_path / "lib").iterdir()) == ["figures", "private", "release.json",
                                                                    "report.html", "report.md"]
    # the CLI through its entry point in-process (the console script's own process: tests/release/test_release.py;
    # a process here added only its imports, issue 26)
    cli = run_in_process(["release", str(spec.data), "--stat", "mean:body_mass_g", "--protect", PROTECT, "--pairs",
                          "0.3,0.4", "--epsilon", "1", "--delta", "1e-3", "--population", str(spec.population),
                          "--missing", "drop", "--n", str(len(KNOWN)), "--samples", "40", "--seed", "3", "--out",
                          str(tmp_path / "cli"), "--format", "json"], tmp_path)
    assert cli.returncode == 0, cli.stderr
    lib_doc, cli_doc = (json.loads((tmp_path / d / "release.json").read_text()) for d in ("lib", "cli"))
    for doc in (lib_doc, cli_doc):  # fields that differ between any two releases (MAY_DIFFER)
        doc["provenance"].pop("time"), doc["provenance"].pop("release_id")
    assert lib_doc == cli_doc  # same spec, same seed, same function: the same public file
    assert res.to_json()["statistics"][0]["value"] == json.loads(cli.stdout)["statistics"][0]["value"]


def test_policy_lives_in_the_library(tmp_path) -> None:  # noqa: ANN001
    spec = _spec(tmp_path, population=None, n=None, model_from_data=True)
    with pytest.raises(InvalidParameterError) as err:
        check_run(spec, audit=True)
    assert err.value.argument == "audit" and err.value.related == ("model_from_data",)
    assert render_error(err.value).startswith("--audit: not with --model-from-data")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("keep")
    with pytest.raises(InvalidParameterError, match="^out: .* exists and is not empty; give force= "):
        run_release(_spec(tmp_path), out=tmp_path / "busy")
    assert (tmp_path / "busy" / "x").read_text() == "keep"


def test_a_refused_release_leaves_no_folder(tmp_path) -> None:  # noqa: ANN001
    spec = _spec(tmp_path, n=None)  # missing='drop' without n: refused after reading the data
    with pytest.raises(InvalidParameterError, match="^missing: drop: 4 rows were dropped"):
        run_release(spec, out=tmp_path / "never")
    assert not (tmp_path / "never").exists()
