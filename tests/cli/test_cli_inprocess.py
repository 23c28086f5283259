"""``distpriv.cli.main`` called again in one process builds the same commands as the first call (the tests run the
CLI in-process, tests/_cli.py): registrations do not pile up from one call to the next."""

from __future__ import annotations

from pathlib import Path

import distpriv.cli as cli
from _cli import run_in_process


def _names() -> tuple[list[str | None], list[str | None]]:
    return ([c.name for c in cli.app.registered_commands], [c.name for c in cli.reproduce_app.registered_commands])


def test_repeated_in_process_runs_register_each_command_once(tmp_path: Path) -> None:
    first = run_in_process(["--help"], tmp_path)
    assert first.returncode == 0
    full = _names()
    assert len(full[0]) == len(set(full[0])) and len(full[1]) == len(set(full[1])), full
    assert {"release", "audit", "audit-local", "demo"} <= set(full[0]) and full[1]
    run_in_process(["release", "--help"], tmp_path)
    only = _names()
    assert sorted(n for n in only[0] if n) == ["audit", "audit-local", "release"] and only[1] == []  # release alone
    for _ in range(3):
        again = run_in_process(["--help"], tmp_path)
        assert _names() == full  # the same registrations, in the same order, as the first full run
        assert (again.returncode, again.stdout, again.stderr) == (first.returncode, first.stdout, first.stderr)
