"""``distpriv ARGS`` run in the test's own process, for tests where a fresh process is not what is checked."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path


def run_in_process(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``distpriv ARGS`` through :func:`distpriv.cli.main` (the console script's entry point) in this process, in
    ``cwd``: stdout, stderr and the exit status captured as :func:`subprocess.run` would. It saves the ~1.5-3 s CPU
    of a process importing numpy, pandas, scipy, DuckDB and matplotlib; the console script itself is still run as a
    subprocess by tests/release/test_release.py and the tests that check its one-line errors end to end."""
    from distpriv.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    code: int | str | None = 0
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(args)
    except SystemExit as exc:
        code = exc.code
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["distpriv", *args], code if isinstance(code, int) else 1, out.getvalue(),
                                       err.getvalue())
