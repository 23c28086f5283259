"""Progress of ``distpriv release`` / ``distpriv audit`` on stderr: a rich status line on a terminal only.

When stderr is not a terminal (pipes, files, tests) nothing is printed and rich is not even imported,
so JSON on stdout and the one-line errors stay clean.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any


class Stages:
    """``with Stages("release") as s: s.step("modelling f_θ") …`` — a spinner naming the current stage."""

    def __init__(self, title: str, *, enabled: bool | None = None) -> None:
        self.title = title
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._status: Any = None
        self._t0 = time.perf_counter()

    def __enter__(self) -> Stages:
        if self.enabled:
            from rich.console import Console

            self._status = Console(stderr=True).status(f"[bold]{self.title}[/bold]")
            self._status.start()
        return self

    def step(self, text: str) -> None:
        """Show the stage now running (with the elapsed time)."""
        if self._status is not None:
            from rich.markup import escape

            el = time.perf_counter() - self._t0
            self._status.update(f"[bold]{self.title}[/bold]: {escape(text)} ({el:.0f} s)")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
