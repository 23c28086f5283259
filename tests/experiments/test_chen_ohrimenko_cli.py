"""The command line of the reproduction (:mod:`distpriv.cli.chen_ohrimenko`) (``distpriv reproduce chen-ohrimenko``, Chen & Ohrimenko Section 6).

Runs use tiny repetition counts and grids so the file stays well under a
minute; the statistical checks use tolerances derived from those sizes.
"""

from __future__ import annotations

import json

import pytest

from distpriv.cli import chen_ohrimenko as cli_co
from distpriv.cli.arguments import render_error
from distpriv.errors import DistPrivError


@pytest.fixture(scope="module")
def runner_app():
    import typer
    from typer.testing import CliRunner

    root = typer.Typer()
    reproduce = typer.Typer()
    root.add_typer(reproduce, name="reproduce")
    cli_co.add_chen_ohrimenko_commands(reproduce)
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
    assert match in render_error(res.exception)  # what the CLI prints: flags, not Python names
