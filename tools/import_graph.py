"""The import graph of ``src/distpriv`` from the source (``ast``), lazy (function-level) imports included.

``python tools/import_graph.py`` prints the import cycles between modules and the library modules that import
``distpriv.experiments`` or ``distpriv.cli`` (issue 24 item 5: both lists should be empty); exit status 1 when
either is not. ``tests/test_import_graph.py`` asserts the same.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src" / "distpriv"


def module_name(path: Path, root: Path = ROOT) -> str:
    """``src/distpriv/release/core.py`` -> ``distpriv.release.core`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the distpriv modules it imports anywhere in its body (``TYPE_CHECKING`` blocks excluded).

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module, else ``pkg``. Imports of a
    package's own ``__init__`` from inside it are kept (they are real edges)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    out: dict[str, set[str]] = {}
    for mod, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip: set[int] = set()
        for node in ast.walk(tree):  # `if TYPE_CHECKING:` imports never run
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skip.update(id(n) for b in node.body for n in ast.walk(b))
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("distpriv"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("distpriv"):
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    deps.add(sub if sub in files else target)
        deps.discard(mod)
        out[mod] = {d for d in deps if d in files}
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def is_package_edge(a: str, b: str) -> bool:
    """``a`` is a package that re-exports from its own submodule ``b`` (or the reverse): the usual
    ``__init__`` pattern, not a cycle between implementation modules."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def module_cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Cycles between modules once each package ``__init__``'s edges to its own submodules are dropped."""
    h = {a: {b for b in bs if not is_package_edge(a, b)} for a, bs in g.items()}
    return cycles(h)


def forbidden(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(library module, experiments/cli module) edges: the library must not import either."""
    def tooling(m: str) -> bool:
        return m.startswith(("distpriv.experiments", "distpriv.cli"))

    return sorted((a, b) for a, bs in g.items() if not tooling(a) for b in bs if tooling(b))


def main() -> int:
    g = graph()
    cyc, bad = module_cycles(g), forbidden(g)
    for c in cyc:
        print("cycle:", " <-> ".join(c))
    for a, b in bad:
        print(f"library imports tooling: {a} -> {b}")
    print(f"{len(g)} modules, {sum(map(len, g.values()))} edges, {len(cyc)} cycles, {len(bad)} library->tooling imports")
    return 1 if cyc or bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
