"""Time ``distpriv reproduce chen-ohrimenko`` at the paper's settings (Tables 3 and 4; optionally --all).

Usage::

    PYTHONPATH=src python benchmarks/bench_reproduce.py            # Tables 3 + 4
    PYTHONPATH=src python benchmarks/bench_reproduce.py --all      # + Figures 2-5

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
import time

import numpy as np


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also time Figures 2-5")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

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
