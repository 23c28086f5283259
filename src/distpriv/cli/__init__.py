"""The ``distpriv`` command line: demo, reproduce, release, audit.

Errors raised as :class:`distpriv.DistPrivError` are printed as one line on
stderr (never a traceback) and the command exits with status 2.
"""

from __future__ import annotations

import importlib
import sys

import typer

from ..errors import DistPrivError

app = typer.Typer(
    name="distpriv",
    help="Distribution privacy for global properties of datasets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
reproduce_app = typer.Typer(help="Reproduce the papers' tables and figures.", no_args_is_help=True)
app.add_typer(reproduce_app, name="reproduce")

# One module per command; each exposes ``register(app)``. Heavy imports happen inside the commands,
# so ``distpriv --help`` loads none of pandas, scipy.stats, matplotlib, sklearn or networkx.
_REPRODUCE_MODULES = ("chen_ohrimenko", "zhang_attribute", "kawamoto_tupling", "kawamoto_coupling")
_COMMAND_MODULES = ("demo", "release")


def _register() -> None:
    for name in _REPRODUCE_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(reproduce_app)
    for name in _COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``distpriv`` console script.

    Usage errors are reported by the CLI framework (exit status 2); a
    :class:`DistPrivError` from any command becomes one line on stderr and exit status 2.
    """
    try:
        _register()
        app(args=argv, prog_name="distpriv")
    except DistPrivError as exc:
        from ..release.public import curator_lines

        for line in curator_lines(list(getattr(exc, "curator_notes", ()) or ())):  # private: stderr only
            print(line, file=sys.stderr)
        msg = " ".join(str(exc).split())
        print(f"distpriv: error: {msg}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("distpriv: interrupted", file=sys.stderr)
        raise SystemExit(130) from None

