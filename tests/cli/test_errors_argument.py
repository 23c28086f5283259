"""The error contract: the library names Python arguments, the CLI maps them to flags."""

from __future__ import annotations

from distpriv.cli.arguments import flag_for, render_error
from distpriv.errors import DistPrivError, InvalidParameterError


def test_argument_prefix_in_library_and_flag_in_cli() -> None:
    exc = InvalidParameterError("quantile level must lie in (0, 1), got 1.5", argument="stats")
    assert isinstance(exc, ValueError)
    assert exc.argument == "stats"
    assert str(exc) == "stats: quantile level must lie in (0, 1), got 1.5"
    assert render_error(exc) == "--stat: quantile level must lie in (0, 1), got 1.5"


def test_default_flag_spelling_and_plain_errors() -> None:
    assert flag_for("interval_level") == "--interval-level"
    plain = DistPrivError("something   failed\nbadly")
    assert plain.argument is None
    assert render_error(plain) == "something failed badly"


def test_references_to_other_arguments_spelled_per_audience() -> None:
    """``{arg:name}`` in a message: ``name=`` in Python, the flag on the command line (FLAGS applies)."""
    from distpriv.errors import arg, render_references

    exc = InvalidParameterError(f"drop: 4 rows were dropped; declare it public with {arg('n')} or use "
                                f"{arg('model_from_data')}; one per {arg('stats')}", argument="missing")
    assert exc.related == ("n", "model_from_data", "stats")
    assert str(exc) == ("missing: drop: 4 rows were dropped; declare it public with n= or use model_from_data=; "
                        "one per stats=")
    assert render_error(exc) == ("--missing: drop: 4 rows were dropped; declare it public with --n or use "
                                 "--model-from-data; one per --stat")
    assert exc.message.count("{arg:") == 3  # the template is kept
    assert render_references("see {arg:na_values}", flag_for) == "see --na-values"
    # the prefix test is on "name:", so a message that merely starts with the name's letters keeps its prefix
    assert str(InvalidParameterError("not used with a model", argument="n")) == "n: not used with a model"
    # an input qualified by its file keeps the qualifier; the positional DATA keeps its name
    assert flag_for("population (x.csv)") == "--population (x.csv)" and flag_for("data") == "data"


def test_library_errors_reach_the_cli_with_flags() -> None:
    """A library refusal names the Python argument; the CLI line names the flag, with no Python spelling left."""
    import pytest

    from distpriv.release.spec import ReleaseSpec

    with pytest.raises(InvalidParameterError) as err:
        ReleaseSpec(data=None, stats=("mean:age",), protect="income=>50K", pairs=((0.4, 0.5),), epsilon=1.0,
                    delta=1e-3, population="pop.csv", model_from_data=True)
    assert err.value.argument == "model_from_data"
    assert str(err.value) == "model_from_data: give only one of population=, model= and model_from_data="
    assert render_error(err.value) == "--model-from-data: give only one of --population, --model and --model-from-data"



def test_newcomer_errors_name_real_flags_and_useful_hints() -> None:
    """Review findings on palmerpenguins-like columns: a column check names ``--stat`` (not ``--statistic``); a
    prefix typo gets "did you mean", not a backticks hint; a fact about Ψ names every option that can give Ψ."""
    from distpriv.cli.arguments import render_error
    from distpriv.data.sources import _column_hint
    from distpriv.errors import InvalidParameterError

    assert render_error(InvalidParameterError("unknown column", argument="statistic")) == "--stat: unknown column"
    assert render_error(InvalidParameterError("share 0.7 needs 240", argument="psi")).startswith("--pairs/--around/--range:")
    names = ["species", "body_mass_g", "flipper-length", "sex"]
    assert _column_hint("body_mass", names) == " (did you mean 'body_mass_g'?)"
    assert _column_hint("flipper", names) == " (a name containing operators such as 'flipper-length' needs backticks: `flipper-length`)"
    assert _column_hint("specis", names) == " (did you mean 'species'?)"
    assert _column_hint("zzz", names) == ""
