"""Trace one ``distpriv release`` of the demo data in-process: how many library files and functions it runs,
and how deep its calls nest inside distpriv (issue 24: "a trace of one distpriv release").

    PYTHONPATH=src python tools/trace_release.py [--json] [--chain] [--src DIR]

The demo data is the one of docs/index.md ("One command"): a public population of 10 500 rows and a private
table of 500 of them; the release is that page's command (``--samples 200``), seeded so that two traces run the
same code. The CLI is imported first, then :func:`sys.setprofile` records every Python call during the
release itself (``distpriv.cli.main``, what the console script runs, called in this process):

* ``files``: library files (under the ``distpriv`` package, ``cli/`` included) in which a function ran
  (module and class bodies run by lazy imports, and whatever they call, are not counted: that is loading,
  not the release's code path);
* ``functions``: distinct (file, first line) of those functions (nested functions and lambdas included);
* ``depth``: the largest number of distpriv function frames on the stack at once; ``chain``: that stack.

``--src DIR`` traces the ``distpriv`` package found in ``DIR`` (e.g. an export of an earlier commit), so the
numbers before and after a change are measured by the same tool.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any


def demo_tables(folder: Path) -> tuple[Path, Path]:
    """docs/index.md's population.csv (public) and people.csv (the private table)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    rich = rng.random(10_500) < 0.5
    pd.DataFrame({
        "age": np.round(rng.normal(40, 10, 10_500) + 5 * rich),
        "sex": np.where(rng.random(10_500) < 0.4, "Female", "Male"),
        "income": np.where(rich, ">50K", "<=50K"),
    }).to_csv(folder / "population.csv", index=False)
    pd.read_csv(folder / "population.csv").sample(500, random_state=1).to_csv(folder / "people.csv", index=False)
    return folder / "population.csv", folder / "people.csv"


class Tracer:
    """A :func:`sys.setprofile` hook counting the distpriv functions that run and their nesting."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.functions: set[tuple[str, int, str]] = set()
        self.depth_of: dict[int, tuple[int, bool]] = {}
        self.max_depth = 0
        self.chain: list[str] = []
        #: per library file: the deepest stack on which one of its functions ran
        self.deepest: dict[str, tuple[int, list[str]]] = {}

    def _library(self, frame: FrameType) -> bool:
        return frame.f_code.co_filename.startswith(self.root)

    def _ours(self, frame: FrameType) -> bool:
        """A library *function* frame (not a module or class body: those lack CO_OPTIMIZED)."""
        return self._library(frame) and bool(frame.f_code.co_flags & inspect.CO_OPTIMIZED)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            parent = frame.f_back
            base, loading = self.depth_of.get(id(parent), (0, False)) if parent is not None else (0, False)
            # a library module body running (a lazy import) and everything it calls is loading, not the release
            loading = loading or (self._library(frame) and frame.f_code.co_name == "<module>")
            ours = self._ours(frame) and not loading
            depth = base + 1 if ours else base
            self.depth_of[id(frame)] = (depth, loading)
            if ours:
                code = frame.f_code
                self.functions.add((code.co_filename, code.co_firstlineno, code.co_qualname))
                if depth > self.max_depth:
                    self.max_depth = depth
                    self.chain = self._stack(frame)
                if depth > self.deepest.get(code.co_filename, (0, []))[0]:
                    self.deepest[code.co_filename] = (depth, self._stack(frame))
        elif event == "return":
            self.depth_of.pop(id(frame), None)

    def _stack(self, frame: FrameType | None) -> list[str]:
        out = []
        while frame is not None:
            if self._ours(frame):
                rel = Path(frame.f_code.co_filename).relative_to(self.root).as_posix()
                out.append(f"{rel}:{frame.f_code.co_qualname}")
            frame = frame.f_back
        return out[::-1]

    def summary(self) -> dict[str, Any]:
        files = sorted({Path(f).relative_to(self.root).as_posix() for f, _, _ in self.functions})
        by_file: dict[str, list[str]] = {f: [] for f in files}
        for f, line, name in sorted(self.functions):
            by_file[Path(f).relative_to(self.root).as_posix()].append(f"{name}:{line}")
        return {"files": len(files), "functions": len(self.functions), "depth": self.max_depth,
                "file_list": files, "chain": self.chain, "functions_by_file": by_file,
                "deepest_by_file": {Path(f).relative_to(self.root).as_posix(): {"depth": d, "chain": c}
                                    for f, (d, c) in sorted(self.deepest.items(), key=lambda kv: -kv[1][0])}}


def trace(folder: Path) -> dict[str, Any]:
    """Run the demo release under the tracer; the counts of :class:`Tracer`."""
    import distpriv
    from distpriv.cli import main  # imported before tracing: loading is not the release

    root = Path(distpriv.__file__).resolve().parent
    pop, people = demo_tables(folder)
    args = ["release", str(people), "--population", str(pop), "--stat", "mean:age", "--stat", "count:sex=Female",
            "--protect", "income=>50K", "--pairs", "0.45,0.55", "--epsilon", "1", "--delta", "1e-3",
            "--samples", "200", "--seed", "1", "--format", "json"]
    tracer = Tracer(root)
    out, err = io.StringIO(), io.StringIO()
    threading.setprofile(tracer)
    sys.setprofile(tracer)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(args)  # what the `distpriv` console script runs
            except SystemExit as exc:
                if exc.code:
                    raise RuntimeError(f"the release failed: {err.getvalue()}") from None
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    payload = json.loads(out.getvalue())
    result = tracer.summary()
    result["mechanism"] = payload["mechanism"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print the whole summary as JSON")
    parser.add_argument("--chain", action="store_true", help="also print the deepest call chain")
    parser.add_argument("--src", type=Path, help="trace the distpriv package in this folder")
    opts = parser.parse_args()
    if opts.src is not None:
        sys.path.insert(0, str(opts.src.resolve()))
    with tempfile.TemporaryDirectory(prefix="distpriv-trace-") as tmp:
        res = trace(Path(tmp))
    if opts.json:
        print(json.dumps(res, indent=1))
        return
    print(f"files {res['files']}  functions {res['functions']}  depth {res['depth']}  (mechanism {res['mechanism']})")
    if opts.chain:
        print("\n".join(f"{i + 1:3d} {c}" for i, c in enumerate(res["chain"])))


if __name__ == "__main__":
    main()
