"""Time ``distpriv reproduce chen-ohrimenko`` at the paper's settings (Tables 3 and 4; optionally --all),
or regenerate the README's reproduction section from a run of every ``reproduce`` command.

Usage::

    PYTHONPATH=src python benchmarks/bench_reproduce.py            # Tables 3 + 4
    PYTHONPATH=src python benchmarks/bench_reproduce.py --all      # + Figures 2-5
    python benchmarks/bench_reproduce.py --readme [README.md]      # = make reproduce-readme

``--readme`` runs each command of ``tools/reproduce_summary.py``'s ``COMMANDS``
in a fresh process (``python -m distpriv.cli ... --format json``), records its
wall-clock and CPU seconds and the machine (cores, CPU model, load average
before and after), computes the deviations from the papers' printed values
from the JSON outputs and rewrites the README between the
``reproduce:begin`` / ``reproduce:end`` markers. Nothing is typed in: rerun it
after any change that moves the numbers.

Settings: n = 100, 1,000 datasets per θ for the Gaussian fits, 50 repetitions,
200 shadow and 200 test datasets per repetition with fresh splits (Section 6).
Besides wall-clock seconds, the script reports a ratio against a baseline run
in the same process: the Table 4 attack with scikit-learn's
``make_pipeline(StandardScaler(), LogisticRegression())`` fitted once per
repetition and mechanism, versus the vectorised batched Newton fit used by
:mod:`distpriv.attacks` (identical objective).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _baseline_attack_seconds(reps: int = 50) -> tuple[float, float]:
    """Seconds per Table 4 row of the meta-classifier fits: batched Newton vs sklearn per repetition."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from distpriv.attacks import MetaClassifierAttack
    from distpriv.experiments import chen_ohrimenko as co

    ctx = co.get_context(0)
    pair = co.pair_for(0.1)
    data = ctx.attack_data("income", *pair, reps, n_shadow=co.N_SHADOW, n_test=co.N_TEST, fresh_splits=True)
    rounds = 3  # per-row cost; Table 4 has 27 defended rows
    start = time.perf_counter()
    for i in range(rounds):
        MetaClassifierAttack().fit(data, rng=i).evaluate(data)
    fast = (time.perf_counter() - start) / rounds
    start = time.perf_counter()
    for i in range(rounds):
        clf = make_pipeline(StandardScaler(), LogisticRegression())
        MetaClassifierAttack(clf).fit(data, rng=i).evaluate(data)
    slow = (time.perf_counter() - start) / rounds
    return fast, slow


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return out.stdout.strip() + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_command(args: tuple[str, ...], scratch: Path) -> tuple[Any, dict[str, float]]:
    """Run ``distpriv <args>`` in a fresh process; returns its parsed JSON and wall/CPU seconds."""
    argv = [sys.executable, "-m", "distpriv.cli", *(str(scratch) if a == "{out}" else a for a in args)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"bench_reproduce: `{' '.join(argv[3:])}` failed ({proc.returncode}): {proc.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(proc.stdout), {"wall": wall, "cpu": cpu}


def readme(path: Path) -> None:
    """Run every reproduce command, then rewrite the README section between the markers."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # dev tooling, outside the package
    import reproduce_summary as summary

    text = path.read_text(encoding="utf-8")
    summary.replace_section(text, summary.BEGIN + "\n" + summary.END)  # fail early without markers
    outputs: dict[str, Any] = {}
    timings: dict[str, dict[str, float]] = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="distpriv-repro-") as tmp:
        for cmd in summary.COMMANDS:
            scratch = Path(tmp) / cmd.key
            outputs[cmd.key], timings[cmd.key] = run_command(cmd.args, scratch)
            t = timings[cmd.key]
            print(f"{cmd.display():<75} {t['wall']:7.1f} s wall {t['cpu']:7.1f} s CPU", flush=True)
    machine = {
        "cores": os.cpu_count(), "cpu": _cpu_model(), "load_before": load_before, "load_after": os.getloadavg()[0],
        "python": platform.python_version(), "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
        "commit": _commit(),
    }
    section = summary.render_section(outputs, timings, machine)
    path.write_text(summary.replace_section(text, section), encoding="utf-8")
    print(f"rewrote the reproduction section of {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also time Figures 2-5")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--readme", nargs="?", const=str(ROOT / "README.md"), default=None, metavar="PATH",
                        help="run every reproduce command and rewrite PATH's reproduction section")
    args = parser.parse_args()
    if args.readme is not None:
        readme(Path(args.readme))
        return

    from distpriv.experiments import chen_ohrimenko as co

    timings: dict[str, float] = {}
    start = time.perf_counter()
    co.get_context(args.seed)
    timings["load Adult + split"] = time.perf_counter() - start
    for name, func in (("table 3", co.table3), ("table 4", co.table4)):
        start = time.perf_counter()
        func(reps=args.reps, seed=args.seed)
        timings[name] = time.perf_counter() - start
    if args.all:
        for fig, func in co.FIGURES.items():
            start = time.perf_counter()
            func(seed=args.seed) if fig == 5 else func(reps=args.reps, seed=args.seed)
            timings[f"figure {fig}"] = time.perf_counter() - start
    fast, slow = _baseline_attack_seconds(args.reps)

    width = max(map(len, timings))
    for k, v in timings.items():
        print(f"{k:<{width}}  {v:7.2f} s")
    t34 = timings["load Adult + split"] + timings["table 3"] + timings["table 4"]
    print(f"{'tables 3 + 4 (incl. load)':<{width}}  {t34:7.2f} s")
    if args.all:
        print(f"{'--all (incl. load)':<{width}}  {float(np.sum(list(timings.values()))):7.2f} s")
    print(
        f"meta-classifier fit+test of one Table 4 row ({args.reps} reps): batched {fast * 1e3:.1f} ms, "
        f"sklearn pipeline per rep {slow * 1e3:.0f} ms (ratio {slow / fast:.0f}x)"
    )


if __name__ == "__main__":
    main()
