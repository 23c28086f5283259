"""Exception and warning types raised by :mod:`distpriv`.

Every public function validates its inputs at the boundary and raises one of
these. They subclass the matching built-in (``ValueError`` / ``TypeError``) so
callers that already catch those keep working.
"""

from __future__ import annotations


class DistPrivError(Exception):
    """Base class of every error raised by distpriv.

    ``argument`` names the *Python* argument at fault (``"stats"``,
    ``"missing"``, ``"epsilon"``, …) when there is one. The library never
    spells a command-line flag: :mod:`distpriv.cli` alone maps ``argument`` to
    its flag (``stats`` → ``--stat``) when it prints the error. ``str(exc)`` is
    ``"<argument>: <message>"`` when an argument is set, else the message.
    """

    def __init__(self, message: str = "", *args: object, argument: str | None = None) -> None:
        super().__init__(message, *args)
        self.message = message
        self.argument = argument

    def __str__(self) -> str:
        if self.argument and not self.message.startswith(self.argument):
            return f"{self.argument}: {self.message}"
        return super().__str__()


class InvalidParameterError(DistPrivError, ValueError):
    """An argument is outside its allowed range (message names both)."""


class InvalidTypeError(DistPrivError, TypeError):
    """An argument has the wrong type or shape."""


class UnknownLabelError(InvalidParameterError):
    """A θ label, column or mechanism name is not known."""


class DataUnavailableError(DistPrivError, FileNotFoundError):
    """A data set could not be found in any of the configured sources."""


class EngineError(DistPrivError, RuntimeError):
    """A query engine (DuckDB, Polars, Dask, Spark, ...) failed while reading or aggregating a table."""


class AssumptionError(DistPrivError, ValueError):
    """A mechanism's assumptions do not hold and no safe fallback exists."""


class ClassicCalibrationWarning(UserWarning):
    """The classic rule c = sqrt(2 ln(1.25/δ)) is used with ε ≥ 1, where it proves nothing."""


class AssumptionWarning(UserWarning):
    """An assumption of a mechanism is only approximately satisfied."""
