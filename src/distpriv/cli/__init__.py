"""The ``distpriv`` command line: demo, reproduce, release, audit.

Errors raised as :class:`distpriv.DistPrivError` are printed as one line on
stderr (never a traceback) and the command exits with status 2.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

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

# One module per command; module ``name`` exposes ``add_<name>_commands(app)`` (:func:`_add_commands`). Heavy imports happen inside the commands,
# so ``distpriv --help`` loads none of pandas, scipy.stats, matplotlib, sklearn or networkx.
_REPRODUCE_MODULES = ("chen_ohrimenko", "zhang_attribute", "kawamoto_tupling", "kawamoto_coupling", "compare")
_COMMAND_MODULES = ("demo", "release")


#: Top-level commands whose module is the only one a run of them needs (``release``, ``audit``, ``audit-local``).
_ONLY_MODULE = {"release": "release", "audit": "release", "audit-local": "release"}


def _register(argv: list[str] | None = None) -> None:
    """Register the commands: all of them, or, when ``argv`` runs one of :data:`_ONLY_MODULE`, that command's
    module alone (``distpriv release`` then loads no other command's module; ``distpriv --help`` lists all).

    Each call starts from the apps as imported, so :func:`main` called again in one process (the tests' in-process
    runs, :mod:`tests._cli`) builds the same commands as a fresh process: appending to the previous call's
    registrations made every later call build every earlier call's commands again (the n-th in-process run cost
    ~n × 4 ms of typer introspection: 0.8 s per run after 200 runs)."""
    app.registered_commands.clear()
    reproduce_app.registered_commands.clear()
    args = sys.argv[1:] if argv is None else argv
    only = _ONLY_MODULE.get(args[0]) if args else None
    if only is not None:
        _add_commands(only, app)
        return
    for name in _REPRODUCE_MODULES:
        _add_commands(name, reproduce_app)
    for name in _COMMAND_MODULES:
        _add_commands(name, app)


def _add_commands(name: str, to: typer.Typer) -> None:
    """Import the command module ``name`` and add its commands to ``to`` (its ``add_<name>_commands``)."""
    getattr(importlib.import_module(f"{__name__}.{name}"), f"add_{name}_commands")(to)


#: Metavars shown by ``--help`` for options whose value has a shape (others: their type, :func:`_metavars`).
METAVARS = {
    "--stat": "KIND:TARGET", "--protect": "PREDICATE", "--pairs": "P1,P2", "--around": "P", "--gap": "DP",
    "--epsilon": "EPS", "--delta": "DELTA", "--mechanism": "NAME", "--population": "TABLE", "--model": "FILE",
    "--config": "FILE", "--format": "json|md", "--out": "FOLDER", "--n": "N", "--samples": "N",
    "--calibration": "exact|classic", "--missing": "error|drop", "--sep": "CHAR", "--encoding": "NAME",
    "--seed": "INT", "--previous": "FOLDER", "--trials": "N", "--confidence": "LEVEL", "--audit-model": "FILE",
    "--matrix": "FILE", "--randomized-response": "K,EPS", "--tupling": "K", "--lambda0": "P1,P2,...",
    "--lambda1": "P1,P2,...",
}
_TYPE_METAVARS = {"int": "INT", "float": "NUMBER", "str": "TEXT", "path": "PATH", "bool": "BOOL"}


def _type_metavar(param: Any) -> str:
    """``INT``, ``NUMBER``, ``TEXT``, ``PATH`` from the option's type (``list[...]``: its element type)."""
    try:
        label = str(param.display_type(None)).strip("<>")
    except Exception:  # another typer version: fall back to click's type name
        label = str(getattr(getattr(param, "type", None), "name", "text"))
    inner = label[5:-1] if label.startswith("list[") else label
    return _TYPE_METAVARS.get(inner.lower(), inner.upper())


def _metavars(command: Any) -> None:
    """Give every option a metavar a person can read (``KIND:TARGET``, ``FILE``, ``N``) instead of typer's
    ``<list[str]>`` / ``<bool>``; flags show none. Recurses into groups."""
    for sub in getattr(command, "commands", {}).values():
        _metavars(sub)
    for param in getattr(command, "params", []):
        kind = getattr(param, "param_type_name", "")  # typer bundles its own click: no isinstance
        if kind == "option":
            if param.is_flag:
                param.metavar = ""
            elif param.metavar is None:
                long = next((o for o in param.opts if o.startswith("--")), param.opts[0])
                param.metavar = METAVARS.get(long) or _type_metavar(param)
        elif kind == "argument":
            shown = _type_metavar(param)
            if param.metavar is None and param.name:
                param.metavar = param.name.upper()
            param.display_type_rich = lambda ctx, _shown=shown: _shown  # typer ignores an argument's metavar here
    if getattr(command, "add_help_option", False) and getattr(command, "_help_option", True) is None:
        try:  # typer's --help flag is created on demand with a '<bool>' type: create it now without one
            from typer._click.decorators import help_option

            help_option(["--help"])(command)
            command._help_option = command.params.pop()
            command._help_option.metavar = ""
        except Exception:  # pragma: no cover - another typer version: keep its own help option
            pass


def _show_warnings_once() -> None:
    """Print distpriv's warnings (:class:`~distpriv.errors.AssumptionWarning`, ...) as one ``distpriv: warning:``
    line each, once per message, instead of Python's ``file:line: Category: ...`` pointing at the CLI
    framework's frame (the first frame outside distpriv); other libraries' warnings keep Python's format."""
    import warnings

    if getattr(warnings.showwarning, "_distpriv", False):  # already installed (main() called in-process again)
        return
    seen: set[str] = set()
    default = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        if not category.__module__.startswith("distpriv"):
            default(message, category, filename, lineno, file, line)
            return
        text = " ".join(str(message).split())
        if text not in seen:
            seen.add(text)
            print(f"distpriv: warning: {text}", file=sys.stderr)

    show._distpriv = True  # type: ignore[attr-defined]
    warnings.showwarning = show
    warnings.filterwarnings("always", module="typer")  # dedup happens above, by message, not by location


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``distpriv`` console script.

    Usage errors are reported by the CLI framework (exit status 2); a
    :class:`DistPrivError` from any command becomes one line on stderr and exit status 2.
    """
    try:
        _register(argv)
        _show_warnings_once()
        command = typer.main.get_command(app)
        _metavars(command)
        from .coercion import install

        install(command)  # plain values converted without importing pydantic (issue 26)
        command(args=argv, prog_name="distpriv")
    except DistPrivError as exc:
        from ..release.public import curator_lines
        from .arguments import flag_for, render_error

        for line in curator_lines(list(getattr(exc, "curator_notes", ()) or ()), flag_for):  # private: stderr only
            print(line, file=sys.stderr)
        print(f"distpriv: error: {render_error(exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("distpriv: interrupted", file=sys.stderr)
        raise SystemExit(130) from None

