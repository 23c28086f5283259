"""Throughput of the vectorised f_θ sampler against one ``DataFrame.sample`` per dataset.

Usage::

    PYTHONPATH=src python benchmarks/bench_sampler.py [--datasets 1000] [--n 100] [--repeats 5]

Both samplers draw ``--datasets`` datasets of ``--n`` Adult records with a
share p = 0.45 of income > 50K (Chen & Ohrimenko Section 6.1) from the model
part of the paper's split and evaluate the Table 1 query on each. They run side
by side in one process; the ratio (reference seconds / vectorised seconds) is
the figure to report (target >= 200x). The vectorised time is the median of
``--repeats`` runs after one warm-up; the reference is run once.

Also prints the two without-replacement strategies of
:func:`distpriv.moments.sample_without_replacement` on a few (pool, k) shapes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv.datasets import load_adult, split_adult  # noqa: E402
from distpriv.moments import _argpartition_sampler, _redraw_sampler  # noqa: E402
from distpriv.property import PropertyModel  # noqa: E402
from distpriv.queries import ADULT_QUERY  # noqa: E402


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000, help="datasets per run (default 1000)")
    parser.add_argument("--n", type=int, default=100, help="records per dataset (default 100)")
    parser.add_argument("--p", type=float, default=0.45, help="property value (default 0.45)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of the vectorised sampler")
    args = parser.parse_args(argv)

    split = split_adult(load_adult(), rng=0)
    pm = PropertyModel(split.model, "income=>50K", ADULT_QUERY, args.n)
    rng = np.random.default_rng(0)

    fast = _median_seconds(lambda: pm.sample_query(args.p, args.datasets, rng), args.repeats)
    start = time.perf_counter()
    ref = pm.sample_query_reference(args.p, args.datasets, rng)
    slow = time.perf_counter() - start
    vec = pm.sample_query(args.p, args.datasets, rng)

    print(f"f_θ sampler: {args.datasets} datasets of n = {args.n}, p = {args.p}, "
          f"population {len(split.model)} ({pm.satisfying.size} satisfying income=>50K)")
    print(f"  vectorised  (index matrices + gathers): {fast * 1e3:9.2f} ms  (median of {args.repeats})")
    print(f"  reference   (DataFrame.sample each)  : {slow * 1e3:9.2f} ms")
    print(f"  speed-up: {slow / fast:,.0f}x  (target >= 200x)")
    print("  sample means  vectorised:", np.round(vec.mean(axis=0), 3))
    print("                reference :", np.round(ref.mean(axis=0), 3))

    print("without-replacement strategies, 1000 rows (ms, median of 3):")
    gen = np.random.default_rng(1)
    for pool, k in [(6280, 45), (18942, 55), (2000, 100), (400, 100), (200, 150)]:
        redraw = _median_seconds(lambda pool=pool, k=k: _redraw_sampler(pool, k, 1000, gen), 3)
        part = _median_seconds(lambda pool=pool, k=k: _argpartition_sampler(pool, k, 1000, gen), 3)
        chosen = "redraw" if k <= 0.25 * pool else "argpartition"
        print(f"  pool {pool:6d}, k {k:4d}: redraw {redraw * 1e3:8.2f}   argpartition {part * 1e3:8.2f}"
              f"   (used: {chosen})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
