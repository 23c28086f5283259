"""Issue 24 item 5: no import cycle between library modules (lazy imports included), no library import of
``distpriv.experiments`` or ``distpriv.cli`` (``tools/import_graph.py`` builds the graph with ``ast``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))  # dev tooling, outside the package
import import_graph as ig  # noqa: E402


def test_the_checker_finds_cycles_and_lazy_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "distpriv"
    (pkg / "experiments").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("def f():\n    from .b import g\n    return g\n")  # a lazy import
    (pkg / "b.py").write_text("from .a import f\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n")
    (pkg / "d.py").write_text("from distpriv.experiments import x\n")
    (pkg / "experiments" / "__init__.py").write_text("")
    (pkg / "experiments" / "x.py").write_text("from .. import c\n")
    g = ig.graph(pkg)
    assert g["distpriv.a"] == {"distpriv.b"} and g["distpriv.c"] == set()  # TYPE_CHECKING never runs
    assert g["distpriv.d"] == {"distpriv.experiments.x"}
    assert ig.module_cycles(g) == [["distpriv.a", "distpriv.b"]]
    assert ig.forbidden(g) == [("distpriv.d", "distpriv.experiments.x")]


def test_the_library_has_no_cycles_and_does_not_import_tooling() -> None:
    g = ig.graph()
    assert len(g) > 100 and "distpriv.release.core" in g
    assert ig.module_cycles(g) == []
    assert ig.forbidden(g) == []
