"""Speed of the W∞ / closeness computations in distpriv.distances.

Run:  python benchmarks/bench_distances.py [--budget SECONDS] [--json]

1. W∞ (L1) between two empirical samples of 2,000 points in R^5 (exact
   bottleneck assignment: binary search over pairwise distances, integer
   max-flow per threshold), also N ≠ K and the (W, 0.05)-closeness radius.
   Baseline in the same process: POT's exact W1 (``ot.emd2``) on the same cost.
2. One dimension: the quantile fast path at 10^5 points, and the general
   algorithm on growing sizes until one run exceeds ``--budget`` seconds
   (default 10; its memory is O(N^2)); both are timed at the largest size the
   general algorithm handled and the ratio is reported.
3. Real-weight oracle (HiGHS max-flow LP) vs the integer oracle on the same
   instance (uniform weights, forced through the LP path).
4. 1-D W∞ at n = 10^6 against the sort formula max_i |x_(i) − y_(i)| (CPU
   time), for equal sizes and for N ≠ K, and the former ``np.unique`` merge of
   the cumulative weights against today's stable-sort merge (issue 26).
   ``--sort-only`` runs just this part.
5. 2-D and 5-D Gaussian mixtures (two samples of 1,500 points, three components): W∞ and the
   (W, 0.05)-closeness radius by the warm-started matching search against a plain
   threshold-bisection max-flow baseline (every distinct pairwise distance sorted, bisection
   over all of them, the graph rebuilt and scipy's max-flow restarted at each threshold) and
   against the max-flow bisection from the lower bound (the previous implementation), CPU time
   on the same cost matrix (issue 26). ``--mixtures-only`` runs just this part.

Times are the best of ``--repeat`` runs (wall clock, single process).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv import distances as D  # noqa: E402


def best_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def bench_multivariate(repeat: int) -> dict[str, Any]:
    import ot

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 5))
    y = rng.normal(size=(2000, 5)) + 0.1
    out: dict[str, Any] = {}
    t, w = best_time(lambda: D.w_infinity_samples(x, y), repeat)
    out["winf_2000x2000_R5"] = {"seconds": t, "value": w}
    t2, w2 = best_time(lambda: D.w_infinity_samples(x, y[:1500]), repeat)
    out["winf_2000x1500_R5"] = {"seconds": t2, "value": w2}
    t3, w3 = best_time(lambda: D.closeness_radius_samples(x, y, 0.05), repeat)
    out["closeness_0.05_2000x2000_R5"] = {"seconds": t3, "value": w3}
    cost = D.cost_matrix(x, y)
    u = np.full(2000, 1 / 2000)
    tb, wb = best_time(lambda: ot.emd2(u, u, cost, numItermax=10_000_000), repeat)
    out["baseline_pot_emd2_W1_2000x2000_R5"] = {"seconds": tb, "value": float(wb)}
    out["ratio_winf_over_emd2"] = t / tb
    return out


def bench_one_dimensional(repeat: int, budget: float) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    big = 100_000
    xb, yb = rng.normal(size=big), rng.standard_t(5, size=big)
    t_fast_big, w_fast_big = best_time(lambda: D.w_infinity_samples(xb, yb), repeat)
    out: dict[str, Any] = {"fast_path_100000": {"seconds": t_fast_big, "value": w_fast_big}}
    general: list[dict[str, Any]] = []
    largest = None
    for n in (1000, 2000, 3000, 4000, 6000, 8000, 10000, 12000):
        x, y = rng.normal(size=n), rng.standard_t(5, size=n)
        t0 = time.perf_counter()
        wg = D.w_infinity_samples(x, y, method="general")
        tg = time.perf_counter() - t0
        tf, wf = best_time(lambda x=x, y=y: D.w_infinity_samples(x, y), repeat)
        assert wf == wg, (n, wf, wg)
        general.append(
            {"n": n, "general_seconds": tg, "fast_seconds": tf, "ratio": tg / tf, "value": wg}
        )
        largest = general[-1]
        if tg > budget:
            break
    out["general_vs_fast"] = general
    out["largest_general"] = largest
    # real weights (not a common denominator): general algorithm uses the LP oracle
    n = 300
    x, y = rng.normal(size=n), rng.normal(size=n)
    p, q = rng.random(n) + 0.1, rng.random(n) + 0.1
    p, q = p / p.sum(), q / q.sum()
    tl, wl = best_time(lambda: D.w_infinity(x, p, y, q, method="general"), 1)
    tq, wq = best_time(lambda: D.w_infinity(x, p, y, q), repeat)
    assert wl == wq
    out["real_weights_300"] = {"general_lp_seconds": tl, "fast_seconds": tq, "ratio": tl / tq}
    return out


def bench_oracles(repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(2)
    n = 200
    x, y = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    u = np.full(n, 1 / n)
    t_int, w_int = best_time(lambda: D.w_infinity(x, u, y, u), repeat)
    saved = D._integer_weights
    D._integer_weights = lambda p, q, tol: None  # force the real-weight LP oracle
    try:
        t_lp, w_lp = best_time(lambda: D.w_infinity(x, u, y, u), 1)
    finally:
        D._integer_weights = saved
    assert w_int == w_lp
    return {
        "n": n,
        "integer_flow_seconds": t_int,
        "lp_seconds": t_lp,
        "ratio_lp_over_integer": t_lp / t_int,
    }


def cpu_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best CPU time (process_time) of ``repeat`` runs."""
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        value = fn()
        best = min(best, time.process_time() - t0)
    return best, value


def bench_sort_formula(repeat: int, n: int = 1_000_000) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=n), rng.standard_t(5, size=n)
    t_w, w = cpu_time(lambda: D.w_infinity_samples(x[:, None], y[:, None]), repeat)
    t_s, s = cpu_time(lambda: float(np.abs(np.sort(x) - np.sort(y)).max()), repeat)
    assert w == s, (w, s)
    k = (7 * n) // 10  # N != K: the quantile pieces of the union of the cumulative weights
    t_u, wu = cpu_time(lambda: D.w_infinity_samples(x[:, None], y[:k, None]), repeat)
    saved = D._sorted_union
    D._sorted_union = lambda a, b: np.unique(np.concatenate([a, b]))  # the former merge
    try:
        t_old, wold = cpu_time(lambda: D.w_infinity_samples(x[:, None], y[:k, None]), repeat)
    finally:
        D._sorted_union = saved
    assert wu == wold, (wu, wold)
    return {"n": n, "winf_equal_cpu_seconds": t_w, "sort_formula_cpu_seconds": t_s, "ratio_winf_over_sort": t_w / t_s,
            "unequal_k": k, "winf_unequal_cpu_seconds": t_u, "unequal_np_unique_cpu_seconds": t_old,
            "ratio_np_unique_over_sort_merge": t_old / t_u, "value": w}


def _plain_bisection(cost: np.ndarray, delta: float) -> float:
    """Baseline: bisection over all distinct pairwise distances, a fresh max-flow per threshold."""
    n, k = cost.shape
    ok = D._flow_oracle(np.full(n, 1.0 / n), np.full(k, 1.0 / k), D.DEFAULT_TOL)
    vals = np.unique(cost)
    lo, hi = -1, vals.size - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(cost <= vals[mid], 1.0 - delta):
            hi = mid
        else:
            lo = mid
    return float(vals[hi])


def bench_mixtures(repeat: int, n: int = 1500) -> dict[str, Any]:
    rng = np.random.default_rng(4)
    out: dict[str, Any] = {"n": n}
    for dim in (2, 5):
        centers = np.zeros((3, dim))
        centers[1, 0] = centers[2, 1] = 3.0
        x = centers[rng.integers(0, 3, n)] + rng.normal(size=(n, dim))
        y = centers[rng.integers(0, 3, n)] + rng.normal(size=(n, dim)) + 0.2
        cost = D.cost_matrix(x, y)
        u = np.full(n, 1.0 / n)
        for delta in (0.0, 0.05):
            t_new, w_new = cpu_time(lambda c=cost, d=delta, w=u: D._bottleneck(c, w, w, d, D.DEFAULT_TOL), repeat)
            t_plain, w_plain = cpu_time(lambda c=cost, d=delta: _plain_bisection(c, d), 1)
            t_prev, w_prev = cpu_time(lambda c=cost, d=delta, w=u: D._bottleneck_maxflow(c, w, w, d, D.DEFAULT_TOL), 1)
            assert w_new == w_plain == w_prev, (dim, delta, w_new, w_plain, w_prev)
            out[f"{dim}d_delta{delta:g}"] = {"value": w_new, "warm_cpu_seconds": t_new, "plain_cpu_seconds": t_plain,
                                             "previous_cpu_seconds": t_prev, "ratio_plain_over_warm": t_plain / t_new,
                                             "ratio_previous_over_warm": t_prev / t_new}
    return out


def print_mixtures(mx: dict[str, Any]) -> None:
    print(f"Gaussian mixtures, {mx['n']} x {mx['n']} samples (CPU, same cost matrix)")
    for key, row in mx.items():
        if key == "n":
            continue
        print(f"  {key:14s} warm {row['warm_cpu_seconds']:.3f} s, plain bisection {row['plain_cpu_seconds']:.3f} s "
              f"(x{row['ratio_plain_over_warm']:.1f}), previous {row['previous_cpu_seconds']:.3f} s "
              f"(x{row['ratio_previous_over_warm']:.1f}), value {row['value']:.6g}")


def print_sort(sf: dict[str, Any]) -> None:
    print(f"1-D W∞ at n = {sf['n']} (CPU): {sf['winf_equal_cpu_seconds']:.4f} s vs the sort formula "
          f"{sf['sort_formula_cpu_seconds']:.4f} s, ratio {sf['ratio_winf_over_sort']:.2f}")
    print(f"  N = {sf['n']}, K = {sf['unequal_k']}: {sf['winf_unequal_cpu_seconds']:.4f} s (stable-sort merge) vs "
          f"{sf['unequal_np_unique_cpu_seconds']:.4f} s (np.unique), ratio {sf['ratio_np_unique_over_sort_merge']:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--budget",
        type=float,
        default=10.0,
        help="stop growing the 1-D general size after a run this long (s)",
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a text summary")
    ap.add_argument("--sort-only", action="store_true", help="only part 4: 1-D W∞ against the sort formula")
    ap.add_argument("--mixtures-only", action="store_true", help="only part 5: 2-D/5-D mixtures against max-flow bisection")
    args = ap.parse_args(argv)
    if args.mixtures_only:
        mx = bench_mixtures(args.repeat)
        if args.json:
            print(json.dumps(mx, indent=2))
        else:
            print_mixtures(mx)
        return 0
    if args.sort_only:
        sf = bench_sort_formula(args.repeat)
        if args.json:
            print(json.dumps(sf, indent=2))
        else:
            print_sort(sf)
        return 0

    res = {
        "multivariate": bench_multivariate(args.repeat),
        "one_dimensional": bench_one_dimensional(args.repeat, args.budget),
        "oracles": bench_oracles(args.repeat),
        "sort_formula": bench_sort_formula(args.repeat),
        "mixtures": bench_mixtures(args.repeat),
    }
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    mv = res["multivariate"]
    print("W∞ (L1) between empirical samples in R^5")
    print(
        f"  2000 x 2000           {mv['winf_2000x2000_R5']['seconds']:8.3f} s   W∞ = {mv['winf_2000x2000_R5']['value']:.6g}"
    )
    print(
        f"  2000 x 1500           {mv['winf_2000x1500_R5']['seconds']:8.3f} s   W∞ = {mv['winf_2000x1500_R5']['value']:.6g}"
    )
    print(
        f"  closeness δ=0.05      {mv['closeness_0.05_2000x2000_R5']['seconds']:8.3f} s   W = {mv['closeness_0.05_2000x2000_R5']['value']:.6g}"
    )
    print(
        f"  baseline ot.emd2 (W1) {mv['baseline_pot_emd2_W1_2000x2000_R5']['seconds']:8.3f} s   ratio W∞/emd2 = {mv['ratio_winf_over_emd2']:.2f}"
    )
    od = res["one_dimensional"]
    print("One dimension: quantile fast path vs general bottleneck algorithm")
    print(f"  fast path, N = 100000 {od['fast_path_100000']['seconds']:8.4f} s")
    for row in od["general_vs_fast"]:
        print(
            f"  N = {row['n']:6d}: general {row['general_seconds']:8.3f} s, fast {row['fast_seconds']:8.5f} s, ratio {row['ratio']:10.0f}"
        )
    rw = od["real_weights_300"]
    print(
        f"  real weights N = 300: general (LP oracle) {rw['general_lp_seconds']:.3f} s, fast {rw['fast_seconds']:.5f} s, ratio {rw['ratio']:.0f}"
    )
    orc = res["oracles"]
    print(
        f"Oracles, N = {orc['n']} in R^3: integer max-flow {orc['integer_flow_seconds']:.3f} s, "
        f"HiGHS LP {orc['lp_seconds']:.3f} s, ratio {orc['ratio_lp_over_integer']:.1f}"
    )
    print_sort(res["sort_formula"])
    print_mixtures(res["mixtures"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
