"""Benchmark: exact (ε, δ)-DistP of the tupling mechanism at |Y| = 276, k = 10.

Reports the time of the exact convolution method and, as the in-process
baseline, of brute-force enumeration of all |Y|^(k+1) tuples on small cases
(|Y| = 4..7, k = 3..5), where the two are compared directly; the brute-force
cost at |Y| = 276, k = 10 (276^11 ≈ 7e26 tuples) is extrapolated from the
measured time per tuple. With non-uniform dummies (issue 25) it reports, over the issue's family
(|Y| 3..5, k 1..3, ν floored at 1e-6; 40 instances), the largest ratio of each claim (δ at ε ∈ {0.1, 0.5, 1},
KL, TV, χ², Hellinger) to the brute-force value of the enumerated tuple laws, and at |Y| = 276, k = 10 with
rare dummies the KL claim (Laplace-transform quadrature, certified bracket) against a Monte Carlo estimate
and the base channel's KL (the claim before issue 25's last round).
Run: ``PYTHONPATH=src python benchmarks/bench_tupling.py``.
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
    report["nonuniform"] = nonuniform()
    return report


def nonuniform() -> dict:
    """Claims with non-uniform dummies against enumeration (issue 25's "Why" figures: δ 25×, KL ∞)."""
    import math

    worst: dict[str, float] = {}
    infinite_kl = 0
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        m, k = int(rng.integers(3, 6)), int(rng.integers(1, 4))
        a = rng.dirichlet(np.ones(m) * 0.6, size=3)
        nu = np.maximum(rng.dirichlet(np.ones(m) * 0.5), 1e-6)
        t = local.Tupling(local.Mechanism(a), k=k, dummy=nu / nu.sum())
        l0, l1 = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
        p, q = t.output_distribution(l0), t.output_distribution(l1)
        for eps in (0.1, 0.5, 1.0):
            exact = max(dv.hockey_stick(p, q, math.exp(eps)), dv.hockey_stick(q, p, math.exp(eps)))
            if exact > 1e-12:
                worst["delta"] = max(worst.get("delta", 0.0), local.distp_delta(t, l0, l1, eps) / exact)
        for name in ("kl", "tv", "chi2", "hellinger"):
            exact = max(dv.divergence(name, p, q), dv.divergence(name, q, p))
            got = local.distp_divergence(t, l0, l1, name)
            if name == "kl" and math.isinf(got) and math.isfinite(exact):
                infinite_kl += 1
            if 0 < exact < math.inf:
                worst[name] = max(worst.get(name, 0.0), got / exact)
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 0.11, size=(276, 2))
    cost = local.euclidean_cost(pts[:228], pts)
    nu = np.maximum(rng.dirichlet(np.ones(276) * 0.5), 1e-7)
    big = local.Tupling(local.restricted_laplace(cost, 100.0, 0.02), k=10, dummy=nu / nu.sum())
    l0, l1 = rng.dirichlet(np.ones(228) * 0.5), rng.dirichlet(np.ones(228) * 0.5)
    t0 = time.perf_counter()
    kl = local.distp_divergence(big, l0, l1, "kl")
    t_kl = time.perf_counter() - t0
    brackets = [big.kl_bounds(l0, l1), big.kl_bounds(l1, l0)]  # certified (lower, upper), both orders
    est, se = big.monte_carlo_divergence(l0, l1, "kl", n_samples=100_000, rng=1)
    a0, a1 = big.lift(l0), big.lift(l1)
    return {"max_claim_over_exact": worst, "kl_infinite_where_finite": infinite_kl,
            "Y276_k10_rare_dummies": {"kl_claim": kl, "kl_claim_seconds": t_kl, "kl_brackets": brackets,
                                      "kl_claim_over_certified_lower": kl / max(b[0] for b in brackets),
                                      "kl_monte_carlo": [est, se],
                                      "base_kl": max(dv.kl(a0, a1), dv.kl(a1, a0)),
                                      "seconds": time.perf_counter() - t0}}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
