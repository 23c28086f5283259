"""Issue 24 item 5: one name per idea — no public function or class name is defined at module level in two
modules of the package (``Interval``, ``applies``, ``grid_for``, ``privacy_profile``, ``register``, ``run`` and
``to_markdown`` were; each now has one home or a descriptive name of its own)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import distpriv

PACKAGE = Path(distpriv.__file__).resolve().parent


def defined_twice(root: Path) -> dict[str, list[str]]:
    """Public (no leading underscore) module-level ``def``/``class`` names defined in more than one module."""
    homes: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                homes[node.name].append(path.relative_to(root).as_posix())
    return {name: where for name, where in homes.items() if len(where) > 1}


def test_the_checker_finds_a_name_defined_twice(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("def run():\n    pass\n\nclass Interval:\n    pass\n\ndef _private():\n    pass\n")
    (tmp_path / "sub" / "b.py").write_text("def run():\n    pass\n\ndef _private():\n    pass\n\n"
                                          "class C:\n    def Interval(self):\n        pass\n")
    assert defined_twice(tmp_path) == {"run": ["a.py", "sub/b.py"]}  # methods and private names do not count


def test_no_public_name_is_defined_twice_in_the_package() -> None:
    assert defined_twice(PACKAGE) == {}
