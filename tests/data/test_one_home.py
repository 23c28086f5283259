"""Issue 24 item 3: one ``Table``, one ``Prepared``, one ``prepare`` in the library (different ideas, different names)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import distpriv

SRC = Path(distpriv.__file__).resolve().parent


def _top_level_names() -> Counter[str]:
    names: Counter[str] = Counter()
    for path in SRC.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names[node.name] += 1
    return names


def test_one_table_one_prepared_one_prepare():
    names = _top_level_names()
    assert (names["Table"], names["Prepared"], names["prepare"]) == (1, 1, 1)
    # the renamed ideas exist where they live
    assert names["SummarizedTable"] == 1 and names["ContributionFrame"] == 1 and names["contribution_frame"] == 1
