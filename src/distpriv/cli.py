"""The ``distpriv`` command line: demo, reproduce, release, audit.

Errors raised as :class:`distpriv.DistPrivError` are printed as one line on
stderr (never a traceback) and the command exits with status 2.
"""

from __future__ import annotations

import importlib
import sys

import click
import typer

from .errors import DistPrivError

app = typer.Typer(
    name="distpriv",
    help="Distribution privacy for global properties of datasets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
reproduce_app = typer.Typer(help="Reproduce the papers' tables and figures.", no_args_is_help=True)
app.add_typer(reproduce_app, name="reproduce")

# Each module exposes ``register(reproduce_app)`` adding its own ``reproduce`` sub-command.
_EXPERIMENT_MODULES = (
    "distpriv.experiments.chen_ohrimenko",
    "distpriv.experiments.zhang_attribute",
    "distpriv.experiments.kawamoto_tupling",
    "distpriv.experiments.kawamoto_coupling",
)
# Modules exposing ``register(app)`` adding top-level commands (release, audit, demo).
_COMMAND_MODULES = ("distpriv.demo", "distpriv.release")


def _register() -> None:
    for name in _EXPERIMENT_MODULES:
        importlib.import_module(name).register(reproduce_app)
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``distpriv`` console script."""
    _register()
    try:
        app(args=argv, standalone_mode=False)
    except DistPrivError as exc:
        print(f"distpriv: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except click.exceptions.Abort:
        print("distpriv: aborted", file=sys.stderr)
        raise SystemExit(130) from None
    except click.exceptions.ClickException as exc:
        msg = exc.format_message().replace("\n", " ")
        print(f"distpriv: error: {msg}", file=sys.stderr)
        raise SystemExit(exc.exit_code if exc.exit_code else 2) from None
    except click.exceptions.Exit as exc:
        raise SystemExit(exc.exit_code) from None


if __name__ == "__main__":  # pragma: no cover
    main()
