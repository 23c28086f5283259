"""Time of a 10-pair ``--range`` release against a one-pair release on Adult (issue 21 goal: <= 3×).

Usage::

    python benchmarks/bench_range.py [--reps 3] [--samples 1000] [--profile]

The data are the first 2,000 rows of UCI Adult, the population the other 43,222 rows; two statistics
(``mean:age``, ``count:sex=Female``), ``--protect income=>50K``, ε = 1, δ = 1e-3. Both releases are run
in one process through :func:`distpriv.release.protect` (imports and the first-call caches warmed up by
one untimed run of each; the accounting memos are emptied before every run, so no run replays the previous
one's results), interleaved, ``--reps`` times; the medians of the process CPU time (the machine
may be shared; wall time would measure the neighbours) and their ratio are printed, with the time of each
stage (modelling f_θ, choosing the mechanism, the k-gap profile, the last again alone from empty memos) of the
last run:

* one pair: Ψ = grid(0.25, 0.30, 0.05) — one adjacent pair of the public grid;
* ten pairs: Ψ = grid(0.10, 0.60, 0.05) — 11 grid points, 10 adjacent pairs, the same gap.

What keeps the ten-pair release near the one-pair one: the reference batches of all θ come from one set of keys
per group (:func:`distpriv.release.data.shared_weighted_draws`), and a k-gap row searches only the pairs whose
certified one-split bound can reach the row's worst (:func:`distpriv.release.grid.gap_profiles`).

``--profile`` prints the 25 most expensive functions (cumulative) of one ten-pair release.
Nothing is asserted: the numbers are for the issue notes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv.datasets.adult import load_adult  # noqa: E402
from distpriv.release import grid  # noqa: E402
from distpriv.release.core import gap_profile, prepare, release, select  # noqa: E402
from distpriv.release.spec import ReleaseSpec  # noqa: E402

CASES = {"one pair": (0.25, 0.30, 0.05), "ten pairs": (0.10, 0.60, 0.05)}


def _spec(work: Path, case: str, samples: int) -> ReleaseSpec:
    return ReleaseSpec(data=work / "data.csv", stats=("mean:age", "count:sex=Female"), protect="income=>50K",
                       pairs=grid(*CASES[case]), epsilon=1.0, delta=1e-3, population=work / "pop.csv",
                       samples=samples, seed=0)


def clear_memos() -> int:
    """Empty the accounting memos keyed on a release's inputs (``functools.lru_cache`` functions of
    ``distpriv.accounting`` and ``distpriv.mechanisms``), so a repeated release is timed as a new one.
    Returns how many were cleared."""
    n = 0
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith(("distpriv.accounting", "distpriv.mechanisms")):
            continue
        for obj in list(vars(mod).values()):
            if callable(getattr(obj, "cache_clear", None)) and getattr(obj, "__module__", None) == name:
                obj.cache_clear()
                n += 1
    return n


def _run(work: Path, case: str, samples: int) -> dict[str, float]:
    """One release, timed per stage (the same calls as :func:`distpriv.release.protect`), in CPU seconds."""
    clear_memos()  # every timed release starts without the memos of the previous one (same inputs)
    clock = time.process_time  # the machine may be shared: CPU time of this process, not wall time
    t0 = clock()
    prep = prepare(_spec(work, case, samples))
    t1 = clock()
    sel = select(prep)
    t2 = clock()
    res = release(prep, sel)  # includes the k-gap profile (timed separately below)
    t3 = clock()
    clear_memos()  # timed as in the release, not replayed from the memos the release just filled
    t3 = clock()
    gap_profile(prep, sel, res.guarantee)
    t4 = clock()
    return {"total": t3 - t0, "model f_θ": t1 - t0, "choose": t2 - t1, "noise + k-gap profile": t3 - t2,
            "k-gap profile alone": t4 - t3}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench_range_"))
    try:
        df = load_adult()
        df.iloc[:2000].to_csv(work / "data.csv", index=False)
        df.iloc[2000:].to_csv(work / "pop.csv", index=False)
        for case in CASES:  # warm-up: imports, first-call caches
            _run(work, case, args.samples)
        times: dict[str, list[float]] = {case: [] for case in CASES}
        last: dict[str, dict[str, float]] = {}
        for _ in range(args.reps):
            for case in CASES:
                last[case] = _run(work, case, args.samples)
                times[case].append(last[case]["total"])
        med = {case: statistics.median(ts) for case, ts in times.items()}
        for case in CASES:
            stages = ", ".join(f"{k} {v:.2f} s" for k, v in last[case].items() if k != "total")
            print(f"{case:9s}: {med[case]:.2f} s CPU (median of {args.reps}; last run: {stages})")
        print(f"ratio ten pairs / one pair: {med['ten pairs'] / med['one pair']:.2f}× (goal <= 3×)")
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            _run(work, "ten pairs", args.samples)
            prof.disable()
            stats: Any = pstats.Stats(prof)
            stats.sort_stats("cumulative").print_stats(25)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
