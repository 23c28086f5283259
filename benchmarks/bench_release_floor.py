"""A release's fixed cost against its floor, in CPU seconds of child processes in one run (issue 26 goal: <= 3×).

Usage::

    python benchmarks/bench_release_floor.py [--reps 3]

Data: the first 1,000 rows of UCI Adult released, the next 2,000 the ``--population`` (CSV).

* ``floor``: ``python -c`` importing numpy and DuckDB, one DuckDB GROUP BY of the table (count, Σ age and
  Σ [sex = Female] per income group) and reading the population table;
* ``release``: ``distpriv release data.csv --stat mean:age --stat count:sex=Female --protect income=>50K
  --pairs 0.2,0.3 --epsilon 1 --delta 1e-3 --population pop.csv --format json``.

Each child's user + system CPU time comes from ``os.wait4``; the commands are interleaved, the medians of
``--reps`` runs and their ratio are printed. Nothing is asserted.

``--imports`` also runs the release once under ``python -X importtime`` and lists the packages it imports
with their cumulative import time (wall milliseconds as ``-X importtime`` reports them, itself inflated by the
tracing: for orientation, not for the ratio).

Bytecode: the children run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed from their
environment) after one untimed warm-up run of each command, as an installed package runs (pip compiles the
``.pyc`` files at install time). With ``--no-bytecode-cache`` the inherited environment is kept: with
``PYTHONDONTWRITEBYTECODE=1`` and a source checkout every release then recompiles the library's ~300 modules
(about 1 s of CPU time, which says nothing about the release itself).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv.datasets.adult import load_adult  # noqa: E402

#: Packages listed on their own by ``--imports`` (a leading underscore is dropped: ``_duckdb`` is duckdb's).
_PACKAGES = ("numpy", "scipy", "duckdb", "narwhals", "typer", "pydantic", "pydantic_core", "annotated_types", "mpmath",
             "pandas", "pyarrow", "distpriv")

FLOOR = """
import numpy, duckdb
con = duckdb.connect()
con.sql("SELECT income, count(*), sum(age), sum(CASE WHEN sex = 'Female' THEN 1 ELSE 0 END) "
        "FROM read_csv('data.csv') GROUP BY income").fetchall()
con.sql("SELECT * FROM read_csv('pop.csv')").fetchnumpy()
"""


def _cpu(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """User + system CPU seconds of one child (os.wait4)."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd[:6])} …")
    return float(usage.ru_utime + usage.ru_stime)


def _import_costs(cmd: list[str], cwd: Path, env: dict[str, str] | None) -> list[tuple[str, float]]:
    """(package, ms) of the imports a run of ``cmd`` makes, from ``-X importtime``, largest first: the self times
    of a package's modules summed (so the packages partition the import time; Python's own modules: ``stdlib``)."""
    res = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=cwd, env=env, capture_output=True, text=True)
    totals: dict[str, float] = {}
    for line in res.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            own, _, name = line.split(":", 1)[1].split("|")
            root = name.strip().split(".")[0].lstrip("_")
            root = root if root in _PACKAGES else "stdlib"
            totals[root] = totals.get(root, 0.0) + int(own) / 1000
    return sorted(totals.items(), key=lambda kv: -kv[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep the inherited environment (PYTHONDONTWRITEBYTECODE) and skip the warm-up runs")
    parser.add_argument("--imports", action="store_true",
                        help="also list the release's imports by package (python -X importtime, one run)")
    args = parser.parse_args(argv)
    env = None if args.no_bytecode_cache else {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    work = Path(tempfile.mkdtemp(prefix="bench_floor_"))
    try:
        df = load_adult()
        df.iloc[:1000].to_csv(work / "data.csv", index=False)
        df.iloc[1000:3000].to_csv(work / "pop.csv", index=False)
        cmds = {
            "floor": [sys.executable, "-c", FLOOR],
            "release": [sys.executable, "-m", "distpriv.cli", "release", "data.csv", "--stat", "mean:age", "--stat",
                        "count:sex=Female", "--protect", "income=>50K", "--pairs", "0.2,0.3", "--epsilon", "1",
                        "--delta", "1e-3", "--population", "pop.csv", "--format", "json"],
        }
        times: dict[str, list[float]] = {k: [] for k in cmds}
        if not args.no_bytecode_cache:
            for cmd in cmds.values():  # warm-up: writes the bytecode caches
                _cpu(cmd, work, env)
        for _ in range(args.reps):
            for k, cmd in cmds.items():
                times[k].append(_cpu(cmd, work, env))
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in med.items():
            print(f"{k:8s}: {v:.2f} s CPU (median of {args.reps})")
        print(f"ratio release / floor: {med['release'] / med['floor']:.2f}× (goal <= 3×)")
        if args.imports:
            costs = _import_costs(cmds["release"], work, env)
            print("release imports (ms of self time under -X importtime): "
                  + ", ".join(f"{name} {ms:.0f}" for name, ms in costs))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
