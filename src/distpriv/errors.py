"""Exception and warning types raised by :mod:`distpriv`.

Every public function validates its inputs at the boundary and raises one of
these. They subclass the matching built-in (``ValueError`` / ``TypeError``) so
callers that already catch those keep working.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: A reference to another argument inside a message: ``{arg:n}`` (see :func:`arg`).
_ARG_REF = re.compile(r"\{arg:([A-Za-z_][A-Za-z0-9_]*)\}")


def arg(name: str) -> str:
    """A reference to the Python argument ``name`` inside an error message: ``"{arg:name}"``.

    Messages that point the user to *another* argument ("declare it public with n") write
    ``f"declare it public with {arg('n')}"``. ``str(exc)`` spells the reference the Python way
    (``n=``); the command line (:func:`distpriv.cli.arguments.render_error`) spells it as the flag
    (``--n``). So the library never writes a flag, and both audiences read their own spelling.
    """
    return "{arg:" + name + "}"


def python_spelling(name: str) -> str:
    """How ``str(exc)`` spells a referenced argument: ``name=`` (a keyword argument)."""
    return f"{name}="


def render_references(text: str, spell: Callable[[str], str] = python_spelling) -> str:
    """``text`` with every ``{arg:name}`` replaced by ``spell(name)``.

    Error messages and the curator's notes (``ReleaseResult.curator_notes``) may both refer to
    arguments this way; the CLI renders both with its flags, Python callers with ``name=``.
    """
    return _ARG_REF.sub(lambda m: spell(m.group(1)), text)


class DistPrivError(Exception):
    """Base class of every error raised by distpriv.

    ``argument`` names the *Python* argument at fault (``"stats"``,
    ``"missing"``, ``"epsilon"``, …) when there is one. The library never
    spells a command-line flag: :mod:`distpriv.cli` alone maps ``argument`` to
    its flag (``stats`` → ``--stat``) when it prints the error. ``str(exc)`` is
    ``"<argument>: <message>"`` when an argument is set, else the message.

    Other arguments named inside the message are written ``{arg:name}`` (build
    them with :func:`arg`); :meth:`render` replaces each with a spelling chosen
    by the caller: ``name=`` for ``str(exc)``, ``--flag`` for the CLI.
    ``message`` keeps the template; ``exc.related`` lists the referenced names.
    """

    def __init__(self, message: str = "", *args: object, argument: str | None = None) -> None:
        super().__init__(message, *args)
        self.message = message
        self.argument = argument

    @property
    def related(self) -> tuple[str, ...]:
        """The Python names of the other arguments the message refers to (``{arg:name}``), in order."""
        return tuple(m.group(1) for m in _ARG_REF.finditer(self.message if isinstance(self.message, str) else ""))

    def render(self, spell: Callable[[str], str] = python_spelling) -> str:
        """The message with ``argument`` as prefix and every ``{arg:name}`` spelled by ``spell(name)``.

        ``spell`` turns a Python argument name into the audience's spelling; the prefix uses it too
        unless it is the default (the prefix is the bare name in ``str(exc)``: ``"stats: …"``).
        """
        if not isinstance(self.message, str) or not self.message:
            return super().__str__()
        text = render_references(self.message, spell)
        if self.argument and not self.message.startswith(self.argument + ":"):
            head = self.argument if spell is python_spelling else spell(self.argument)
            return f"{head}: {text}"
        return text

    def __str__(self) -> str:
        return self.render()


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
