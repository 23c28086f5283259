"""Python argument names → command-line flags, for printing library errors.

The library raises :class:`~distpriv.errors.DistPrivError` with ``argument``
set to the Python name (``protect(stats=…)`` → ``"stats"``); only the CLI knows
that the flag is ``--stat``. :func:`render_error` is the one place that turns
an error into the line ``distpriv: error: …`` prints.
"""

from __future__ import annotations

from ..errors import DistPrivError

#: Python argument name → CLI flag, where the two differ beyond ``_`` → ``-``.
FLAGS: dict[str, str] = {
    "stats": "--stat",
}


def flag_for(argument: str) -> str:
    """The flag that sets ``argument``: :data:`FLAGS`, else ``--`` + the name with ``_`` → ``-``."""
    return FLAGS.get(argument, "--" + argument.replace("_", "-"))


def render_error(exc: DistPrivError) -> str:
    """One line for the terminal: ``"<flag>: <message>"`` when the error names an argument."""
    argument = getattr(exc, "argument", None)
    message = getattr(exc, "message", None)
    if argument and isinstance(message, str) and message and not message.startswith("--"):
        text = f"{flag_for(argument)}: {message}"
    else:
        text = str(exc)
    return " ".join(text.split())
