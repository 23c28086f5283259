"""``distpriv reproduce compare`` in CPU seconds: a fresh run, then runs on the calibration cache (issue 25 goal).

Usage::

    python benchmarks/bench_compare.py [--quick] [--before REV]

Three child processes of ``python -m distpriv.cli reproduce compare --format json`` (full run unless
``--quick``), each child's user + system CPU time from ``os.wait4``:

* ``cold``: ``--no-cache`` (every mechanism calibrated, every audit run);
* ``fill``: ``--cache`` on an empty cache folder (``XDG_CACHE_HOME`` pointed at a temporary folder, with
  the Adult cache copied in so only the comparison's cache starts empty);
* ``warm``: ``--cache`` again: calibrations, audits and Kantorovich's proven δ read back
  (:mod:`distpriv.experiments.compare_cache`).

Prints the CPU seconds and the ratios warm/cold and fill/cold, and checks that the three JSON outputs
have identical rows (the cache changes no number). Nothing about time is asserted.

``--before REV`` (e.g. the commit before issue 25's speed-up of the fresh run, ``01e4189``) runs instead the
fresh (``--no-cache``) comparison of that commit's ``src`` (``git archive``) and of this tree's in one run,
alternating, and prints both CPU times, their ratio and every number of the rows that differs
(absolute and relative change), so a speed-up shows what, if anything, it moved.
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


def _export(rev: str, into: Path) -> Path:
    """``src`` of commit ``rev`` of this repository, extracted under ``into``; returns that ``src`` folder."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _moved(before: list[dict[str, object]], after: list[dict[str, object]]) -> list[str]:
    """One line per field that differs between two row lists (same order): old, new, relative change."""
    lines = []
    if len(before) != len(after):
        return [f"row count {len(before)} -> {len(after)}"]
    for old, new in zip(before, after, strict=True):
        for k in sorted(set(old) | set(new)):
            a, b = old.get(k), new.get(k)
            if a == b:
                continue
            what = f"{old.get('property')} / {old.get('mechanism')} / ε = {old.get('epsilon')}: {k}"
            if isinstance(a, float) and isinstance(b, float) and a != 0:
                lines.append(f"{what}: {a!r} -> {b!r} (relative {(b - a) / abs(a):+.3g})")
            else:
                lines.append(f"{what}: {a!r} -> {b!r}")
    return lines


def compare_before(rev: str, base: list[str], env: dict[str, str], repeat: int) -> None:
    """Fresh runs of commit ``rev`` and of this tree, alternating; CPU seconds, ratio, moved numbers."""
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(rev, Path(tmp))
        env_old = dict(env)
        env_old["PYTHONPATH"] = str(old_src) + os.pathsep + os.environ.get("PYTHONPATH", "")
        t_old, t_new = [], []
        for _ in range(repeat):
            cpu, r_old = _child([*base, "--no-cache"], env_old)
            t_old.append(cpu)
            cpu, r_new = _child([*base, "--no-cache"], env)
            t_new.append(cpu)
    old, new = min(t_old), min(t_new)
    print(f"fresh run CPU seconds (least of {repeat}): {rev} {old:.2f}, this tree {new:.2f}; "
          f"this/{rev} = {new / old:.3f} ({old / new:.2f}x faster)")
    moved = _moved(r_old["rows"], r_new["rows"])  # type: ignore[arg-type]
    print(f"numbers that moved: {len(moved)}" + "".join(f"\n  {line}" for line in moved))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="income only, fewer datasets and audit trials")
    ap.add_argument("--before", metavar="REV", help="also time the fresh run of this commit's src (git archive)")
    ap.add_argument("--repeat", type=int, default=1, help="fresh runs of each tree with --before (least CPU kept)")
    opts = ap.parse_args()
    base = ["reproduce", "compare", "--format", "json", *(["--quick"] if opts.quick else [])]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    if opts.before:
        compare_before(opts.before, base, env, max(1, opts.repeat))
        return
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
