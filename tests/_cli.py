"""``distpriv ARGS`` run in the test's own process, for tests where a fresh process is not what is checked."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, TextIO


def _python_showwarning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                        file: TextIO | None = None, line: str | None = None) -> None:
    """Python's own display of a warning (``file:line: Category: message``), on the current ``sys.stderr``."""
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


def _as_a_fresh_process() -> contextlib.ExitStack:
    """Warnings as a fresh ``distpriv`` process shows them: Python's default filters (nothing the test session
    added: pytest's capture, the suite's ignore of ClassicCalibrationWarning), displayed on stderr, and no message
    hidden because an earlier in-process run already showed it (the CLI prints each message once per process).
    Everything is restored on exit."""
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.resetwarnings()
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
        warnings.simplefilter("ignore", category)  # each goes first: this rebuilds Python's default list
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.showwarning = _python_showwarning  # the CLI installs its one-line display on top of this one
    return stack


def run_in_process(args: list[str], cwd: Path, *, fresh_warnings: bool = False) -> subprocess.CompletedProcess[str]:
    """``distpriv ARGS`` through :func:`distpriv.cli.main` (the console script's entry point) in this process, in
    ``cwd``: stdout, stderr and the exit status captured as :func:`subprocess.run` would. It saves the ~1.5-3 s CPU
    of a process importing numpy, pandas, scipy, DuckDB and matplotlib; the console script itself is still run as a
    subprocess by tests/release/test_release.py and the tests that check its one-line errors end to end.

    ``fresh_warnings=True``: the warnings on stderr are those a fresh process would print (:func:`_as_a_fresh_process`),
    for tests that assert what stderr holds besides the error line; otherwise the test session's warning filters and
    capture apply."""
    from distpriv.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    code: int | str | None = 0
    context: Any = _as_a_fresh_process() if fresh_warnings else contextlib.nullcontext()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), context:
            main(args)
    except SystemExit as exc:
        code = exc.code
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["distpriv", *args], code if isinstance(code, int) else 1, out.getvalue(),
                                       err.getvalue())
