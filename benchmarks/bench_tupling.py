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
Beyond enumeration (``beyond_enumeration``): χ², Hellinger and KL claims (certified quadrature,
``local/tupling_laplace.divergence_brackets``) over claim/exact, exact from an extended-precision binomial
sum at |Y| = 2, k = 10..1e7 (inputs off 1 by up to 5e-9, as ``check_distribution`` accepts) and from
enumerating the 81,003 multisets at |Y| = 3, k = 400; at |Y| = 276, k = 10 the χ² / Hellinger claims
against the base-channel cap they replace and a Monte Carlo estimate; CPU seconds per call.
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
    report["beyond_enumeration"] = beyond_enumeration()
    return report


def _rare_dummy_case():
    """Issue 25's |Y| = 276, k = 10 case with rare dummies (ν down to 1e-7), seed 0: (mechanism, λ0, λ1)."""
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 0.11, size=(276, 2))
    cost = local.euclidean_cost(pts[:228], pts)
    nu = np.maximum(rng.dirichlet(np.ones(276) * 0.5), 1e-7)
    big = local.Tupling(local.restricted_laplace(cost, 100.0, 0.02), k=10, dummy=nu / nu.sum())
    return big, rng.dirichlet(np.ones(228) * 0.5), rng.dirichlet(np.ones(228) * 0.5)


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
    big, l0, l1 = _rare_dummy_case()
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


def _binary_exact(a0, a1, nu, k: int) -> dict[str, float]:
    """Divergences of the tuple laws at |Y| = 2: binomial count, extended precision, ±14 s.d. (mass outside < 1e-40)."""
    import math

    ld = np.longdouble
    a0, a1, nv = (np.asarray(x, dtype=ld) for x in (a0, a1, nu))
    a0, a1, nv = a0 / a0.sum(), a1 / a1.sum(), nv / nv.sum()
    kk, p = k + 1, nv[0]
    sd = math.sqrt(kk * float(p) * (1 - float(p)))
    lo, hi = max(0, int(kk * float(p) - 14 * sd) - 2), min(kk, int(kk * float(p) + 14 * sd) + 2)
    c = np.arange(lo, hi + 1, dtype=ld)
    b = np.concatenate([np.ones(1, dtype=ld), np.cumprod((kk - c[:-1]) / (c[:-1] + 1) * (p / (1 - p)))])
    b = b / b.max()
    b = b / b.sum()
    s0, s1 = c * a0[0] / nv[0] + (kk - c) * a0[1] / nv[1], c * a1[0] / nv[0] + (kk - c) * a1[1] / nv[1]
    dd = s0 - s1
    return {"kl": float(np.sum(b * (s0 * np.log1p(dd / s1) - dd)) / kk),
            "chi2": float(np.sum(b * dd * dd / s1) / kk),
            "hellinger": float(np.sum(b * dd * dd / (np.sqrt(s0) + np.sqrt(s1)) ** 2) / (2 * kk))}


def _cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def beyond_enumeration() -> dict:
    """χ² / Hellinger / KL claims beyond the accountant's enumeration over the exact values (issue 25)."""
    import math

    from distpriv.local.tupling_laplace import divergence_brackets

    names = ("chi2", "hellinger", "kl")
    worst = dict.fromkeys(names, 1.0)
    below = 0
    cpu: list[float] = []
    rng = np.random.default_rng(2025)
    for k in (10, 1000, 10**5, 10**6, 10**7):
        for _ in range(4):
            a0, a1 = rng.dirichlet([0.7, 0.7]), rng.dirichlet([0.7, 0.7])
            nu = np.maximum(rng.dirichlet([0.5, 0.5]), 1e-4)
            a0, a1, nu = (x * (1 + rng.uniform(-5e-9, 5e-9)) for x in (a0, a1, nu))
            ex = _binary_exact(a0, a1, nu, k)
            sec, br = _cpu(lambda a0=a0, a1=a1, nu=nu, k=k: divergence_brackets(a0, a1, nu, k, names))
            cpu.append(sec)
            for n in names:
                below += int(br[n][1] < ex[n])
                worst[n] = max(worst[n], br[n][1] / ex[n])
    # |Y| = 3, k = 400: 81,003 multisets, beyond the accountant's enumeration limit; exact by enumeration here
    a = rng.dirichlet(np.ones(3), size=2)
    nu3 = np.array([0.02, 0.3, 0.68])
    t3 = local.Tupling(local.Mechanism(a), k=400, dummy=nu3)
    kk = 401
    c0, c1 = np.meshgrid(np.arange(kk + 1), np.arange(kk + 1), indexing="ij")
    ok = c0 + c1 <= kk
    cnt = np.stack([c0[ok], c1[ok], kk - c0[ok] - c1[ok]], axis=1).astype(float)
    from scipy import special

    bw = np.exp(special.gammaln(kk + 1) - special.gammaln(cnt + 1).sum(axis=1) + cnt @ np.log(nu3)) / kk
    s0, s1 = cnt @ (a[0] / nu3), cnt @ (a[1] / nu3)
    dd = s0 - s1
    ex3 = {"chi2": max(np.sum(bw * dd**2 / s1), np.sum(bw * dd**2 / s0)),
           "hellinger": np.sum(bw * dd**2 / (np.sqrt(s0) + np.sqrt(s1)) ** 2) / 2,
           "kl": max(np.sum(bw * (s0 * np.log(s0 / s1) - dd)), np.sum(bw * (s1 * np.log(s1 / s0) + dd)))}
    e0, e1 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    for n in names:
        got = local.distp_divergence(t3, e0, e1, n)
        below += int(got < ex3[n] * (1 - 1e-12))
        worst[n] = max(worst[n], got / float(ex3[n]))
    # |Y| = 276, k = 10, rare dummies: the claims that replace the base-channel cap
    big, l0, l1 = _rare_dummy_case()
    a0, a1 = big.lift(l0), big.lift(l1)
    large = {}
    for n in ("chi2", "hellinger"):
        sec, claim = _cpu(lambda n=n: local.distp_divergence(big, l0, l1, n))
        est, se = big.monte_carlo_divergence(l0, l1, n, n_samples=100_000, rng=1)
        large[n] = {"claim": claim, "cpu_seconds": sec,
                    "bracket_lam0_lam1": big.accountant.f_divergence_bounds(l0, l1, n),
                    "old_cap_base_channel": max(dv.divergence(n, a0, a1), dv.divergence(n, a1, a0)),
                    "monte_carlo_lam0_lam1": [est, se]}
        large[n]["old_cap_over_claim"] = large[n]["old_cap_base_channel"] / claim
    return {"max_claim_over_exact": worst, "claims_below_exact": below,
            "cpu_seconds_per_bracket_Y2": [min(cpu), max(cpu)], "exact_by_enumeration_Y3_k400": {
                n: float(v) for n, v in ex3.items()}, "Y276_k10_rare_dummies": large,
            "finite": all(math.isfinite(v) for v in worst.values())}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
