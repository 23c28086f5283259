"""The CLI's pydantic-free value conversion (distpriv.cli.coercion, issue 26) against typer's own converter.

For every option of every command, each sample value is converted both ways: the results (value and type) or
the errors (type and message) must be equal. A fresh interpreter parsing a full ``release`` command line must
not import pydantic.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
import typer
from typer._click import Context
from typer._coercion import build_runtime_param

from distpriv import cli
from distpriv.cli import coercion

NUMBERS = ["0", "1", "-1", "+1", "007", "-0", "1_000", " 1 ", "1.0", "1e3", "1E-3", ".5", "5.", "-.5e-3", "0.1",
           "123456789.123456789e-5", "2.5e-308", "4.9e-324", "1e-400", "1e308", "1e400", "inf", "-inf", "nan", "0x10",
           "1e", "e3", "--1", "abc", "", " ", "１", "12345678901234567890", "999999999999999999", "3.0000000000000001"]
TEXTS = ["", "a", "mean:age", "income=>50K", "ü é", "--x", " padded "]


def _commands() -> list[tuple[str, Any]]:
    """(name, click command) of every distpriv command, built on a fresh app as ``distpriv.cli.main`` builds it."""
    app = typer.Typer()
    sub = typer.Typer()
    app.add_typer(sub, name="reproduce")
    for name in cli._REPRODUCE_MODULES:
        cli._add_commands(name, sub)
    for name in cli._COMMAND_MODULES:
        cli._add_commands(name, app)
    group = typer.main.get_command(app)
    cli._metavars(group)
    coercion.install(group)
    out: list[tuple[str, Any]] = []

    def walk(prefix: str, cmd: Any) -> None:
        out.append((prefix, cmd))
        for n, c in getattr(cmd, "commands", {}).items():
            walk(f"{prefix} {n}".strip(), c)

    walk("", group)
    return out


def _samples(annotation: Any, tmp: Path) -> list[Any]:
    if annotation is bool:
        return [True, False]
    if annotation in (int, float):
        return [*NUMBERS, 3, 2.5, True, -7]
    if annotation is str:
        return [*TEXTS, 5]
    if annotation is Path:
        return [str(tmp / "data.csv"), str(tmp / "missing.csv"), str(tmp), str(tmp / "sub" / ".." / "data.csv"),
                "-", "", "data.csv", tmp / "data.csv", Path("nowhere.csv")]
    args = get_args(annotation)
    if args:
        leaf = _samples(args[0], tmp)
        return [tuple(leaf[:3]), list(leaf[-3:]), (), leaf[0]]
    return []


def _run(rp: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any, str]:
    try:
        got = rp.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # the error itself is compared
        return ("error", type(exc).__name__, str(getattr(exc, "message", exc)))
    return ("value", repr(got), type(got).__name__)  # repr: nan equals nan, -0.0 differs from 0.0


def test_fast_conversion_equals_typers_for_every_option(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a\n1\n")
    (tmp_path / "sub").mkdir()
    checked = 0
    kinds: set[str] = set()
    for name, cmd in _commands():
        ctx = Context(cmd)
        params = [*cmd.params, getattr(cmd, "_help_option", None)]
        for param in params:
            fast = getattr(param, "_runtime_param", None)
            if fast is None or not hasattr(fast, "convert"):
                continue
            slow = build_runtime_param(param.type_descriptor)
            kinds.add(repr(param.type_descriptor.annotation))
            for value in [None, *_samples(param.type_descriptor.annotation, tmp_path)]:
                assert _run(fast, value, param, ctx) == _run(slow, value, param, ctx), (name, param.name, value)
                checked += 1
    assert {"<class 'str'>", "<class 'int'>", "<class 'float'>", "<class 'pathlib.Path'>", "<class 'bool'>",
            "list[str]"} <= kinds, kinds
    assert checked > 1000


def test_the_fast_converter_decides_plain_values_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain values never reach typer's converter (which is what imports pydantic)."""
    called: list[Any] = []
    monkeypatch.setattr(coercion, "_NO", object())  # a new sentinel: any fallback would be visible below
    f = coercion._leaf(float, None)
    i = coercion._leaf(int, None)
    assert [f(v, None, None) for v in ("1", "-1.5", ".5", "1e-3", 2.0)] == [1.0, -1.5, 0.5, 0.001, 2.0]
    assert [i(v, None, None) for v in ("007", "-3", 4)] == [7, -3, 4]
    for v in ("1_000", " 1", "inf", "1e400", True):
        called.append(f(v, None, None))
    assert all(c is coercion._NO for c in called)


def test_parsing_a_release_command_line_imports_no_pydantic(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("age,sex,income\n30,Female,>50K\n")
    code = (
        "import sys, typer\n"
        "from distpriv import cli\n"
        "from distpriv.cli.coercion import install\n"
        "cli._register(['release'])\n"
        "cmd = typer.main.get_command(cli.app)\n"
        "cli._metavars(cmd)\n"
        "install(cmd)\n"
        "ctx = cmd.commands['release'].make_context('release', ['data.csv', '--stat', 'mean:age', '--stat', "
        "'count:sex=Female', '--protect', 'income=>50K', '--pairs', '0.2,0.3', '--epsilon', '1', '--delta', '1e-3', "
        "'--population', 'data.csv', '--format', 'json', '--seed', '3'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')), "
        "ctx.params['epsilon'], ctx.params['seed'], type(ctx.params['data']).__name__)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["[]", "1.0", "3", "PosixPath"]
