"""Speed and memory of ``distpriv release`` on Adult, as ratios to importing numpy/pandas/scipy in the same run.

Usage::

    python benchmarks/bench_release.py [--reps 3] [--many 1000] [--skip-many]

Prints, within one run (commands interleaved, medians of ``--reps`` repetitions):

* ``baseline``: ``python -c "import numpy, pandas, scipy.stats"``;
* ``json``: ``distpriv release`` on a 2,000-row Adult table, the other 43,222 rows as ``--population``,
  two statistics, ``--format json`` (issue 11 target: <= 4× baseline);
* ``report``: the same with ``--out`` (report.md/.html, figures, ledger; target <= 8× baseline);
* ``many``: ``--many`` statistics (``count:age>a & hours_per_week>h``) with ``--out``: wall time and the
  child's peak resident memory (``ru_maxrss``), which the capped f_θ figure keeps bounded.

Nothing is asserted: the numbers are for the issue notes.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv.datasets.adult import load_adult  # noqa: E402

COMMON = ["--protect", "income=>50K", "--pairs", "0.2,0.3", "--epsilon", "1", "--delta", "1e-3"]


def _exe() -> list[str]:
    return [sys.executable, "-m", "distpriv.cli"]


def _wait4(cmd: list[str], cwd: Path) -> tuple[float, int]:
    """Wall time and peak RSS (KiB, Linux ru_maxrss) of one child, via os.wait4."""
    import os

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd[:6])} …")
    return wall, int(usage.ru_maxrss)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--many", type=int, default=1000)
    parser.add_argument("--skip-many", action="store_true")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench_release_"))
    try:
        df = load_adult()
        df.iloc[:2000].to_csv(work / "data.csv", index=False)
        df.iloc[2000:].to_csv(work / "pop.csv", index=False)
        release = [*_exe(), "release", "data.csv", "--stat", "mean:age", "--stat", "count:sex=Female", *COMMON,
                   "--population", "pop.csv", "--format", "json"]
        cmds = {
            "baseline": [sys.executable, "-c", "import numpy, pandas, scipy.stats"],
            "json": release,
            "report": [*release, "--out", "out", "--force"],
        }
        times: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(args.reps):
            for k, cmd in cmds.items():
                times[k].append(_wait4(cmd, work)[0])
        base = statistics.median(times["baseline"])
        print(f"baseline (import numpy, pandas, scipy.stats): {base:.2f} s (median of {args.reps})")
        for k in ("json", "report"):
            med = statistics.median(times[k])
            print(f"release {k:6s}: {med:.2f} s = {med / base:.1f}× baseline  (target {'4' if k == 'json' else '8'}×)")
        if not args.skip_many:
            stats = [f"count:age>{a} & hours_per_week>{h}" for a in range(20, 120) for h in range(20, 80, 2)]
            stats = stats[: args.many]
            cmd = [*_exe(), "release", "data.csv", *[x for s in stats for x in ("--stat", s)], *COMMON,
                   "--population", "pop.csv", "--format", "json", "--out", "many", "--force"]
            wall, rss = _wait4(cmd, work)
            print(f"release with {len(stats)} --stat and --out: {wall:.1f} s = {wall / base:.0f}× baseline, "
                  f"peak RSS {rss / 1024:.0f} MiB")
        print(f"(children's total CPU: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime:.1f} s user)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
