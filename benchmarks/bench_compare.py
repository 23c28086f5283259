"""``distpriv reproduce compare`` in CPU seconds: a fresh run, then runs on the calibration cache (issue 25 goal).

Usage::

    python benchmarks/bench_compare.py [--quick]

Three child processes of ``python -m distpriv.cli reproduce compare --format json`` (full run unless
``--quick``), each child's user + system CPU time from ``os.wait4``:

* ``cold``: ``--no-cache`` (every mechanism calibrated, every audit run);
* ``fill``: ``--cache`` on an empty cache folder (``XDG_CACHE_HOME`` pointed at a temporary folder, with
  the Adult cache copied in so only the comparison's cache starts empty);
* ``warm``: ``--cache`` again: calibrations, audits and Kantorovich's proven δ read back
  (:mod:`distpriv.experiments.compare_cache`).

Prints the CPU seconds and the ratios warm/cold and fill/cold, and checks that the three JSON outputs
have identical rows (the cache changes no number). Nothing about time is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _child(args: list[str], env: dict[str, str]) -> tuple[float, dict[str, object]]:
    """(user + system CPU seconds, parsed JSON stdout) of one CLI run."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "distpriv.cli", *args], stdout=out, stderr=subprocess.DEVNULL,
                                env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"distpriv {' '.join(args)} failed")
        out.seek(0)
        return usage.ru_utime + usage.ru_stime, json.loads(out.read())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="income only, fewer datasets and audit trials")
    opts = ap.parse_args()
    base = ["reproduce", "compare", "--format", "json", *(["--quick"] if opts.quick else [])]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        from distpriv.datasets.adult import cache_dir

        adult = cache_dir() / "adult"
        if adult.is_dir():
            shutil.copytree(adult, Path(tmp) / "distpriv" / "adult")
        cold, r_cold = _child([*base, "--no-cache"], env)
        env["XDG_CACHE_HOME"] = tmp
        fill, r_fill = _child([*base, "--cache"], env)
        warm, r_warm = _child([*base, "--cache"], env)
    same = r_cold["rows"] == r_fill["rows"] == r_warm["rows"]
    print(f"reproduce compare{' --quick' if opts.quick else ''}: CPU seconds cold {cold:.2f}, fill {fill:.2f}, "
          f"warm {warm:.2f}; warm/cold = {warm / cold:.3f}, fill/cold = {fill / cold:.3f}; rows identical: {same}")
    if not same:
        raise SystemExit("the cache changed the rows")


if __name__ == "__main__":
    main()
