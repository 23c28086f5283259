"""Benchmark (issue 27, bounded work): a release at ε = 10⁶ against the same release at ε = 1.

The 400-row table and 8,000-row population of ``tests/release/test_release.py``; ``protect`` with
``--samples 200`` at ε ∈ {1, 10⁶} (δ = 10⁻³, and δ = 10⁻³⁰⁰ at ε = 10⁶), each timed as the
median of 3 runs in one process. Goal: ratio ε = 10⁶ / ε = 1 at most 2 (before issue 27: 140 s
against 10 s, the Gaussian ⊛ Laplace cells refined to 4M points).

Run: ``PYTHONPATH=src:tests/release python benchmarks/bench_extreme_epsilon.py``.
"""

from __future__ import annotations

import json
import statistics
import time
import warnings

from distpriv.release import protect
from test_release import people


def main() -> None:
    data, pop = people(400, 7), people(8000, 9, start=100_000)
    out: dict[str, float] = {}
    for eps, delta in ((1.0, 1e-3), (1e6, 1e-3), (1e6, 1e-300)):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                protect(data, stats=["mean:age"], protect="income=>50K", pairs=[(0.45, 0.55)], epsilon=eps,
                        delta=delta, population=pop, samples=200, seed=1)
            times.append(time.perf_counter() - t)
        out[f"eps={eps:g},delta={delta:g}"] = statistics.median(times)
    base = out["eps=1,delta=0.001"]
    print(json.dumps({"seconds": out, "ratio_vs_eps_1": {k: v / base for k, v in out.items()}}, indent=2))


if __name__ == "__main__":
    main()
