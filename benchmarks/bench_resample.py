"""Resampling counts for the sampler of f_θ: numpy's multinomial against the Poissonised sampler.

Usage::

    PYTHONPATH=src python benchmarks/bench_resample.py [--s 4000] [--size 1000]

For k/s from 4 to 1,000 (a group of k records resampled from s subsample rows,
``size`` datasets), the best of three times of ``Generator.multinomial`` and of
:func:`distpriv.release.resample.uniform_multinomial` (same law), and their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from distpriv.release.resample import uniform_multinomial


def best(fn, reps: int = 3) -> float:
    out = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--s", type=int, default=4000)
    ap.add_argument("--size", type=int, default=1000)
    a = ap.parse_args()
    g = np.random.default_rng(0)
    pv = np.full(a.s, 1.0 / a.s)
    print(f"s = {a.s}, {a.size} datasets; seconds (best of 3)")
    print(f"{'k/s':>6} {'k':>10} {'multinomial':>12} {'poissonised':>12} {'ratio':>6}")
    for rate in (4, 16, 50, 250, 1000):
        k = rate * a.s
        t_m = best(lambda k=k: g.multinomial(k, pv, size=a.size))
        t_p = best(lambda k=k: uniform_multinomial(k, a.s, a.size, g))
        print(f"{rate:>6} {k:>10} {t_m:>12.3f} {t_p:>12.3f} {t_p / t_m:>6.2f}")


if __name__ == "__main__":
    main()
