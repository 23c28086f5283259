"""Benchmark: exact (ε, δ)-DistP of the tupling mechanism at |Y| = 276, k = 10.

Reports the time of the exact convolution method and, as the in-process
baseline, of brute-force enumeration of all |Y|^(k+1) tuples on small cases
(|Y| = 4..7, k = 3..5), where the two are compared directly; the brute-force
cost at |Y| = 276, k = 10 (276^11 ≈ 7e26 tuples) is extrapolated from the
measured time per tuple. Run: ``PYTHONPATH=src python benchmarks/bench_tupling.py``.
"""

from __future__ import annotations

import json
import time

import numpy as np

from distpriv import divergences as dv
from distpriv import local


def _timeit(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> dict:
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 0.11, size=(276, 2))
    cost = local.euclidean_cost(pts[:228], pts)
    tup = local.Tupling(local.restricted_laplace(cost, 100.0, 0.02), k=10)
    l0 = rng.dirichlet(np.ones(228) * 0.5)
    l1 = rng.dirichlet(np.ones(228) * 0.5)
    report: dict = {"large": []}
    for delta in (0.001, 0.01, 0.1):
        t, res = _timeit(lambda d=delta: tup.epsilon_bounds(l0, l1, d))
        report["large"].append({"delta": delta, "seconds": t, "lower": res.lower, "upper": res.upper, "bins": res.bins})
    t_kl, kl = _timeit(lambda: tup.kl_bounds(l0, l1))
    report["large_kl"] = {"seconds": t_kl, "bounds": kl}
    # brute force baseline on small cases, same process
    small = []
    for m, k in ((4, 3), (5, 4), (6, 5), (7, 5)):
        a = rng.dirichlet(np.ones(m), size=3)
        t_small = local.Tupling(a, k=k)
        p0, p1 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))

        def brute(t_small=t_small, p0=p0, p1=p1):
            p, q = t_small.output_distribution(p0), t_small.output_distribution(p1)
            return dv.symmetric_approx_max_divergence(p, q, 0.01)

        tb, eb = _timeit(brute, 1)
        te, ee = _timeit(lambda t_small=t_small, p0=p0, p1=p1: t_small.epsilon_bounds(p0, p1, 0.01))
        small.append({"Y": m, "k": k, "tuples": m ** (k + 1), "brute_seconds": tb, "exact_seconds": te,
                      "brute_eps": eb, "exact_bracket": [ee.lower, ee.upper], "ratio_brute_over_exact": tb / te})
    report["small"] = small
    per_tuple = small[-1]["brute_seconds"] / small[-1]["tuples"]
    report["extrapolated_brute_seconds_Y276_k10"] = per_tuple * 276.0**11
    report["extrapolated_ratio"] = report["extrapolated_brute_seconds_Y276_k10"] / report["large"][0]["seconds"]
    return report


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
