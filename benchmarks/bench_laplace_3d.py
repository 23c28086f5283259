"""Benchmark: Laplace scale calibrated at (ε, δ) = (1, 1e-3) on 3-D models with unequal covariances (issue 25).

ExpM (L) adds Lap(b) noise on the standard basis, which does not diagonalise unequal covariances. In 3-D its δ was
proven only by the Gaussian-coupling bound (:mod:`distpriv.accounting.laplace`); with ``tight=True`` the certified 3-D
grid of :mod:`distpriv.accounting.laplace_3d` is used as well. For each random model (Σ₀ = AAᵀ/2 + 0.5 I,
Σ₁ = Σ₀ + 0.4 CCᵀ/2, means 10 + N(0, I), as in benchmarks/bench_laplace_tight.py but in 3-D) it prints

* ``coupling``: the scale of ``dp.calibrate("expm-laplace", ...)`` (the coupling bound, default),
* ``tight``: the scale of ``dp.calibrate("expm-laplace", ..., tight=True)``,
* ``floor``: a certified lower bound on the least scale: the largest scale (bisection to 1 %) at which the grid's
  *lower* end of δ(1) (κ = the finest of the ladder, both orders) still exceeds 1e-3 — so the least scale lies in
  [floor, tight] and ``tight_over_floor`` bounds tight/least from above (no independent 3-D oracle exists),

with the CPU seconds of each calibration (the grids' memo is cleared between models; the machine may be shared, so
compare the columns of one run).

Run: ``PYTHONPATH=src python benchmarks/bench_laplace_3d.py [--models N]``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

import distpriv as dp
from distpriv.accounting import laplace_3d as l3d

EPS, DELTA = 1.0, 1e-3


def unequal_model(seed: int) -> dp.GaussianModel:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T / 2 + 0.5 * np.eye(3)
    c = rng.normal(size=(3, 3))
    return dp.GaussianModel(means={0: 10 + rng.normal(size=3), 1: 10 + rng.normal(size=3)},
                            covariances={0: cov, 1: cov + 0.4 * c @ c.T / 2})


def floor_scale(model: dp.GaussianModel, basis: np.ndarray, direction: np.ndarray, hi: float) -> float:
    """Largest k (to 1 %) below ``hi`` with the grid's lower end of δ(ε) > δ for noise k·direction (0 if none found)."""
    def above(k: float) -> bool:
        br = l3d.delta_bracket_3d(model.mean(0), model.covariance(0), model.mean(1), model.covariance(1), basis,
                                  k * direction, EPS, kappa=l3d.LADDER[-1])
        return br.lower > DELTA

    lo = hi / 1.5
    while not above(lo):
        hi, lo = lo, lo / 1.5
        if lo < 1e-3 * hi:
            return 0.0
    while hi / lo > 1.01:
        mid = float(np.sqrt(lo * hi))
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return lo


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=4)
    args = ap.parse_args()
    rows = []
    warnings.simplefilter("ignore")
    for seed in range(args.models):
        model = unequal_model(seed)
        l3d._CACHE.clear()
        t0 = time.process_time()
        old = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=EPS, delta=DELTA)
        t1 = time.process_time()
        new = dp.calibrate("expm-laplace", model, [(0, 1)], epsilon=EPS, delta=DELTA, tight=True)
        t2 = time.process_time()
        assert new.scales is not None and new.basis is not None
        tight = float(new.laplace_scale)
        floor = floor_scale(model, np.asarray(new.basis), np.asarray(new.scales) / tight, tight)
        row = {"seed": seed, "coupling": float(old.laplace_scale), "tight": tight, "floor": floor,
               "coupling_over_tight": float(old.laplace_scale) / tight,
               "tight_over_floor": tight / floor if floor > 0 else float("inf"),
               "cpu_coupling_s": t1 - t0, "cpu_tight_s": t2 - t1}
        rows.append(row)
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    ct = [r["coupling_over_tight"] for r in rows]
    tf = [r["tight_over_floor"] for r in rows]
    print(json.dumps({"models": len(rows),
                      "median_cpu_s": {k: float(np.median([r[k] for r in rows])) for k in ("cpu_coupling_s", "cpu_tight_s")},
                      "max_cpu_tight_s": max(r["cpu_tight_s"] for r in rows),
                      "coupling_over_tight_median": float(np.median(ct)), "coupling_over_tight_max": max(ct),
                      "tight_over_floor_median": float(np.median(tf)), "tight_over_floor_max": max(tf)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
