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
