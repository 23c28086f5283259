"""``distpriv reproduce compare`` in wall and CPU seconds: a fresh run, then runs on the calibration cache (issue 25).

Usage::

    python benchmarks/bench_compare.py [--quick] [--before REV] [--repeat N]

Child processes of ``python -m distpriv.cli reproduce compare --format json`` (full run unless ``--quick``),
each timed in wall seconds (start to exit) and CPU seconds: user + system time of the child *and of every
process it started* — the run's worker processes are forked by a forkserver that outlives the CLI by a
moment, so this process makes itself the child subreaper (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), and
orphaned descendants are re-parented to it and reaped with ``os.wait4``, their CPU time added (elsewhere
only the CLI's own and its waited-for children's time is counted, and the line says so):

* ``cold``: ``--no-cache`` (every mechanism calibrated, every audit run);
* ``fill``: ``--cache`` on an empty cache folder (``XDG_CACHE_HOME`` pointed at a temporary folder, with
  the Adult cache copied in so only the comparison's cache starts empty);
* ``warm``: ``--cache`` again: calibrations, audits and Kantorovich's proven δ read back
  (:mod:`distpriv.experiments.compare_cache`).

Every tree's ``src`` is byte-compiled first (``compileall``; the children may write bytecode even where
``PYTHONDONTWRITEBYTECODE`` is set), as an installed package is: otherwise each process of a run compiles the
modules it imports (~1 s of CPU for the worker processes' imports alone).

Prints the seconds and the ratios warm/cold and fill/cold, and checks that the three JSON outputs
have identical rows (the cache changes no number). Nothing about time is asserted.

``--before REV`` (e.g. the commit before issue 25's speed-up of the fresh run, ``01e4189``) runs instead the
fresh (``--no-cache``) comparison of that commit's ``src`` (``git archive``) and of this tree's, with its
default worker processes and with ``--jobs 1``, in one run, alternating; prints the wall and CPU seconds of
each (least of ``--repeat``), their ratios, and every number of the rows that differs from ``REV``'s
(absolute and relative change), so a speed-up shows what, if anything, it moved; the rows of ``--jobs 1``
and of the default must be identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _subreaper() -> bool:
    """Make this process the child subreaper (Linux): orphaned descendants are re-parented here, so their CPU
    time can be collected. False where it is unavailable (only the CLI's waited-for descendants count then)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(36, 1, 0, 0, 0)) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


SUBREAPER = _subreaper()


def _child(args: list[str], env: dict[str, str]) -> tuple[float, float, dict[str, object]]:
    """(wall seconds, CPU seconds of the CLI and all its descendants, parsed JSON stdout) of one CLI run."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "distpriv.cli", *args], stdout=out, stderr=subprocess.DEVNULL,
                                env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"distpriv {' '.join(args)} failed")
        cpu = usage.ru_utime + usage.ru_stime
        while SUBREAPER:  # the forkserver and any worker left over: re-parented here on the CLI's exit
            try:
                _, _, usage = os.wait4(-1, 0)
            except ChildProcessError:
                break
            cpu += usage.ru_utime + usage.ru_stime
        out.seek(0)
        return wall, cpu, json.loads(out.read())


def _compile(src: Path) -> None:
    """Byte-compile every module under ``src`` (``__pycache__``, git-ignored), as an installed package is."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})


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
    """Fresh runs of commit ``rev``, of this tree (default jobs) and of this tree with ``--jobs 1``, alternating."""
    runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": [], "after1": []}
    rows: dict[str, object] = {}
    task_cpu = None
    with tempfile.TemporaryDirectory() as tmp:
        old_src = _export(rev, Path(tmp))
        _compile(old_src)
        env_old = dict(env)
        env_old["PYTHONPATH"] = str(old_src) + os.pathsep + os.environ.get("PYTHONPATH", "")
        for _ in range(repeat):
            for name, args, e in (("before", [*base, "--no-cache"], env_old), ("after", [*base, "--no-cache"], env),
                                  ("after1", [*base, "--no-cache", "--jobs", "1"], env)):
                wall, cpu, res = _child(args, e)
                runs[name].append((wall, cpu))
                rows[name] = res["rows"]
                if name == "after":
                    task_cpu = res.get("task_cpu")
    best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in runs.items()}
    (w0, c0), (w2, c2), (w1, c1) = best["before"], best["after"], best["after1"]
    jobs = min(2, os.cpu_count() or 1)
    print(f"fresh run (least of {repeat}; CPU = the CLI and all its worker processes"
          f"{'' if SUBREAPER else ', subreaper unavailable: waited-for children only'}):")
    print(f"  {rev}: wall {w0:.2f} s, CPU {c0:.2f} s")
    print(f"  this tree, --jobs {jobs} (default): wall {w2:.2f} s, CPU {c2:.2f} s; "
          f"wall {w2 / w0:.3f}x, CPU {c2 / c0:.3f}x of {rev}; tasks' CPU per worker {task_cpu}")
    print(f"  this tree, --jobs 1: wall {w1:.2f} s, CPU {c1:.2f} s; wall {w1 / w0:.3f}x, CPU {c1 / c0:.3f}x of {rev}")
    moved = _moved(rows["before"], rows["after"])  # type: ignore[arg-type]
    print(f"numbers that moved from {rev}: {len(moved)}" + "".join(f"\n  {line}" for line in moved))
    print(f"rows of --jobs 1 and --jobs {jobs} identical: {rows['after'] == rows['after1']}")
    if rows["after"] != rows["after1"]:
        raise SystemExit("the number of worker processes changed the rows")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="income only, fewer datasets and audit trials")
    ap.add_argument("--before", metavar="REV", help="also time the fresh run of this commit's src (git archive)")
    ap.add_argument("--repeat", type=int, default=1, help="fresh runs of each tree with --before (least kept)")
    opts = ap.parse_args()
    base = ["reproduce", "compare", "--format", "json", *(["--quick"] if opts.quick else [])]
    _compile(ROOT / "src")
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
        w_cold, cold, r_cold = _child([*base, "--no-cache"], env)
        env["XDG_CACHE_HOME"] = tmp
        w_fill, fill, r_fill = _child([*base, "--cache"], env)
        w_warm, warm, r_warm = _child([*base, "--cache"], env)
    same = r_cold["rows"] == r_fill["rows"] == r_warm["rows"]
    print(f"reproduce compare{' --quick' if opts.quick else ''}: CPU seconds cold {cold:.2f}, fill {fill:.2f}, "
          f"warm {warm:.2f}; warm/cold = {warm / cold:.3f}, fill/cold = {fill / cold:.3f}; wall seconds cold "
          f"{w_cold:.2f}, fill {w_fill:.2f}, warm {w_warm:.2f}; rows identical: {same}")
    if not same:
        raise SystemExit("the cache changed the rows")


if __name__ == "__main__":
    main()
