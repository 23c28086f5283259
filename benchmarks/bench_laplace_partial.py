"""Benchmark: DirM (L) on Chen & Ohrimenko's Adult workload with the bounds of :mod:`distpriv.accounting.laplace_partial`
against the coupling bound alone (issue 25, dirml32).

DirM (L) adds Laplace noise along one direction of the 5-D statistics (compare's income model, Δp = 0.1). With
``tight=False`` (the release path's setting) its δ is the loss-splitting coupling bound of
:func:`distpriv.accounting.release._composition_bound`; with ``tight=True`` (the default of ``dp.calibrate`` on a
GaussianModel) the least of that, the chain rule with the conditional common factor and the joint-law bound. Per ε it
prints the δ′ claimed at the papers' scale by each, an exact-density Monte Carlo of the true δ (both orders, the
larger; closed-form line-Laplace ⊛ Gaussian density), and the CPU seconds of each claim; then the scale calibrated
at (ε, 1e-3) by each and its CPU seconds. CPU seconds are process time of this process (run with
``OMP_NUM_THREADS=1``; the machine may be shared: compare the columns of one run).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_laplace_partial.py [--draws N]``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy.special import log_ndtr

import distpriv as dp
from distpriv.experiments.compare import DELTA_P, PROPERTIES, QUICK, pair_for
from distpriv.experiments.compare_work import property_inputs


def log_density(y: np.ndarray, mu: np.ndarray, cov: np.ndarray, v: np.ndarray, b: float) -> np.ndarray:
    """ln ∫ N(y − vt; μ, Σ) e^{−|t|/b}/(2b) dt (completing the square on each half-line of t)."""
    inv = np.linalg.inv(cov)
    r = y - mu
    a = float(v @ inv @ v)
    c = r @ inv @ v
    base = (-0.5 * np.einsum("ij,jk,ik->i", r, inv, r) - 0.5 * mu.size * math.log(2 * math.pi)
            - 0.5 * np.linalg.slogdet(cov)[1] - math.log(2 * b))
    mp, mn = (c - 1 / b) / a, (c + 1 / b) / a
    half = 0.5 * math.log(2 * math.pi / a)
    return base + np.logaddexp(half + 0.5 * a * mp ** 2 + log_ndtr(mp * math.sqrt(a)),
                               half + 0.5 * a * mn ** 2 + log_ndtr(-mn * math.sqrt(a)))


def mc_delta(gm: dp.GaussianModel, pair: tuple, v: np.ndarray, b: float, eps: float, n: int) -> float:
    rng = np.random.default_rng(0)
    out = 0.0
    for p, q in (pair, pair[::-1]):
        y = rng.multivariate_normal(gm.mean(p), gm.covariance(p), n) + np.outer(rng.laplace(0.0, b, n), v)
        loss = log_density(y, gm.mean(p), gm.covariance(p), v, b) - log_density(y, gm.mean(q), gm.covariance(q), v, b)
        out = max(out, float((-np.expm1(np.minimum(eps - loss, 0.0))).mean()))
    return out


def timed(fn, *args, **kw):  # type: ignore[no-untyped-def]
    t = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*args, **kw)
    return out, time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=100_000)
    args = ap.parse_args()
    pair = pair_for(DELTA_P)
    gm = property_inputs(0, "income", PROPERTIES["income"], pair, tuple(QUICK.items())).gm
    print("eps   coupling δ′ (cpu)     tight δ′ (cpu)        MC truth   coupling/tight  tight/truth  cpu ratio")
    for eps in (0.2, 1.0, 5.0):
        loose, c0 = timed(dp.calibrate, "dirm-laplace", gm, [pair], epsilon=eps, tight=False)
        tight, c1 = timed(dp.calibrate, "dirm-laplace", gm, [pair], epsilon=eps, tight=True)
        v, b = np.asarray(tight.basis)[:, 0], float(np.asarray(tight.scales)[0])
        truth = mc_delta(gm, pair, v, b, eps, args.draws)
        d0, d1 = loose.guarantee.delta, tight.guarantee.delta
        print(f"{eps:<5g} {d0:.4g} ({c0:.2f} s)   {d1:.4g} ({c1:.2f} s)   {truth:.3g}   {d0 / d1:8.2f}   "
              f"{d1 / truth:8.2f}   {c1 / max(c0, 1e-9):6.1f}")
    print("eps   delta  coupling scale (cpu)   tight scale (cpu)   tight/coupling  cpu ratio")
    for eps in (1.0, 5.0):
        loose, c0 = timed(dp.calibrate, "dirm-laplace", gm, [pair], epsilon=eps, delta=1e-3, tight=False)
        tight, c1 = timed(dp.calibrate, "dirm-laplace", gm, [pair], epsilon=eps, delta=1e-3, tight=True)
        s0, s1 = float(np.max(loose.scales)), float(np.max(tight.scales))
        print(f"{eps:<5g} 1e-3   {s0:.4g} ({c0:.2f} s)        {s1:.4g} ({c1:.2f} s)      {s1 / s0:.3f}   "
              f"{c1 / max(c0, 1e-9):6.1f}")


if __name__ == "__main__":
    main()
