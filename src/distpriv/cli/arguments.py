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
    "statistic": "--stat",  # one statistic's column check (data.sources.check_columns purpose)
    "psi": "--pairs/--around/--range",  # a fact about Ψ's property values, whichever option gave them
    "data": "data",  # the positional argument DATA
    "audit_model": "--audit-model",
}


def flag_for(argument: str) -> str:
    """The flag that sets ``argument``: :data:`FLAGS`, else ``--`` + the name with ``_`` → ``-``.

    An argument with a qualifier (``"population (x.csv)"``: one file of an input) keeps the qualifier.
    """
    head, sep, rest = argument.partition(" ")
    if not head.isidentifier():
        return argument
    return FLAGS.get(head, "--" + head.replace("_", "-")) + sep + rest


def render_error(exc: DistPrivError) -> str:
    """One line for the terminal: ``"<flag>: <message>"`` when the error names an argument.

    References to other arguments inside the message (``{arg:n}``, see :func:`distpriv.errors.arg`)
    are printed as their flags too (``--n``).
    """
    text = exc.render(flag_for) if isinstance(exc, DistPrivError) else str(exc)
    return " ".join(text.split())
