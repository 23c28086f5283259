"""Cost of float-safe noise: the exact grid sampler against numpy's float noise, and fingerprinting rows.

Usage::

    PYTHONPATH=src python benchmarks/bench_release_noise.py [--draws 2000] [--rows 1000000]

Prints, within one run:

* microseconds per coordinate of :func:`distpriv.release.sampler.sample_rounded_many` (Gaussian and
  Laplace, grid σ/1024) and of ``Generator.normal`` / ``Generator.laplace`` one value at a time, and the
  ratio exact/float (a release draws m values once, so the absolute time is what matters);
* the share of draws that needed more than the first 64 bits or a precision increase (expected ≈ 0);
* keyed fingerprints of a table of ``--rows`` rows (6 columns) against ``pandas.util.hash_pandas_object``
  of the same frame (ratio), the cost of the canonical serialisation that makes CSV and Parquet agree.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

try:
    import distpriv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from distpriv.release.fingerprints import new_key, row_fingerprints  # noqa: E402
from distpriv.release.sampler import SeededBits, sample_rounded_many  # noqa: E402


class CountingBits(SeededBits):
    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.calls = 0

    def bits(self, k: int) -> int:
        self.calls += 1
        return super().bits(k)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    n = args.draws
    rng = np.random.default_rng(0)
    for law in ("gaussian", "laplace"):
        bits = CountingBits(1)
        t0 = time.perf_counter()
        sample_rounded_many([0.3] * n, 2.0**-10, [law] * n, [1.0] * n, bits)
        exact = (time.perf_counter() - t0) / n
        draw = rng.normal if law == "gaussian" else rng.laplace
        t0 = time.perf_counter()
        for _ in range(n):
            0.3 + draw(0.0, 1.0)
        flt = (time.perf_counter() - t0) / n
        print(f"{law:8s} exact {exact * 1e6:8.1f} µs/value   float {flt * 1e6:6.2f} µs/value   "
              f"ratio {exact / flt:6.0f}x   draws needing more bits: {(bits.calls - n) / n:.4f}")
    r = np.random.default_rng(2)
    m = args.rows
    df = pd.DataFrame({"id": np.arange(m), "age": r.integers(17, 90, m).astype(float), "hours": r.normal(40, 8, m),
                       "sex": r.choice(["Female", "Male"], m), "income": r.choice(["<=50K", ">50K"], m),
                       "married": r.random(m) < 0.4})
    key = new_key()
    t0 = time.perf_counter()
    row_fingerprints(df, key)
    fp = time.perf_counter() - t0
    t0 = time.perf_counter()
    pd.util.hash_pandas_object(df, index=False)
    hp = time.perf_counter() - t0
    print(f"fingerprints of {m:,} rows: {fp:.2f} s   hash_pandas_object: {hp:.2f} s   ratio {fp / hp:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
